// Device helpers of the SM90 attention kernel: wgmma descriptors and fences, setmaxnreg, bf16
// packing and exp2. The mbarrier waits, named barriers, TMA and the traced mbarrier wait are
// kernels/common/mbarrier.cuh and the trace recorder kernels/common/trace_recorder.cuh, shared
// with kernels/fa2 and kernels/blackflash.
#pragma once

#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/op_names.h"
#include "common/trace_record.h"
#include "common/mbarrier.cuh"  // mbarrier waits, named barriers, TMA, traced_wait (shared with kernels/blackflash)
#include "common/trace_recorder.cuh"  // TraceRecorder, globaltimer, the CTA clock anchors

// wgmma and setmaxnreg exist only on sm_90a; other passes build empty bodies
// (ATTNSIM_HAVE_WGMMA = 0) and the runtime finds no image to run there.
#include "common/wgmma_sync.cuh"
#include "sm90/structure.h"  // consumer_group (barrier_group)
#include "wgmma_ops.cuh"     // generated (kernels/common/gen_wgmma.cmake): Wgmma<N>::ss / rs / rs_tb

namespace attnsim::sm90 {

using hopper::Wgmma;
using hopper::wgmma_commit;
using hopper::wgmma_fence;
using hopper::fence_regs;
using hopper::wgmma_wait;

/// wgmma descriptor of a 128B-swizzled operand (the layout TMA writes with SWIZZLE_128B).
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return hopper::smem_desc(addr, lbo, sbo, 1);
}

/// setmaxnreg: the warpgroup's register budget (sm_90a; needs a register cap at kernel entry).
template <int N>
__device__ __forceinline__ void set_registers(bool increase) {
#if ATTNSIM_HAVE_WGMMA
  if (increase)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
  else
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

/// Two floats to a bf16x2 register (round to nearest): lo in the low half.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

/// exp2 on the MUFU (ex2.approx.ftz.f32), as FA3 does.
__device__ __forceinline__ float exp2_mufu(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// The consumer warpgroup `group` for a named barrier's id, or with kFresh the same read afresh
/// from %tid.x (TraceRecorder::warp_index) where it is needed (Traits::kFreshBarrierIds). Held in a
/// register across the KV loop, ptxas spilled it in the traced head_dim 256 kernels and reloaded
/// it from local memory right before each pingpong and epilogue bar.sync (18 of the 18 barriers
/// with a register id in the static hd256 instance; cuobjdump -sass on an H200, 2026-11-30), so
/// that a recorded barrier wait held the load's latency: at the epilogue 570-630 ns with every
/// warp of the warpgroup arriving within 3 ns (`attnsim run --trace-warps all`).
template <bool kFresh>
__device__ __forceinline__ int barrier_group(int group) {
  if constexpr (kFresh)
    return consumer_group(TraceRecorder<true>::warp_index());
  else
    return group;
}

/// Upper bound of the spans one warp records in a work tile of `n_blocks` KV blocks (consumer:
/// at most 11 per block plus Q wait, epilogue and the overlap prologue; producer: 2 + 4 per block).
__host__ __device__ constexpr uint32_t trace_spans_per_tile(int n_blocks) {
  return 12u * static_cast<uint32_t>(n_blocks) + 16u;
}

}  // namespace attnsim::sm90
