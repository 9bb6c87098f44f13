// Device helpers of the SM100 kernel: mbarrier waits, named barriers, setmaxnreg, TMA, and the
// tcgen05 pieces (UMMA shared-memory and instruction descriptors, TMEM addresses), through
// <cuda/ptx> where CCCL wraps the instruction (tcgen05.*, mbarrier.*, cp.async.bulk.tensor) and
// inline PTX where it does not (setmaxnreg, bar.sync / bar.arrive). Descriptor bit layouts: PTX
// ISA "tcgen05 matrix descriptors" and "instruction descriptor" (kind::f16), as CUTLASS spells
// them in include/cute/arch/mma_sm100_desc.hpp (SmemDescriptor, InstrDescriptor).
#pragma once

#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/op_names.h"
#include "common/trace_record.h"
#include "common/trace_recorder.cuh"  // TraceRecorder, globaltimer

// tcgen05, TMEM and setmaxnreg exist on sm_100a only; other device passes build empty kernels.
#if defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM101_ALL))
#define ATTNSIM_HAVE_TCGEN05 1
#else
#define ATTNSIM_HAVE_TCGEN05 0
#endif

namespace attnsim::sm100 {

/// A wait that lasts this long is a broken pipeline, not a slow kernel: trap, so the host sees
/// an error instead of a hung GPU.
constexpr unsigned long long kHangNs = 4000000000ull;  // 4 s

/// Shared-memory (CTA window) address of a pointer into shared memory.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Blocks until the phase of `bar` with parity `parity` has completed (the timer is read only
/// after 4096 failed tries).
__device__ __forceinline__ void wait_parity(uint64_t* bar, uint32_t parity) {
  if (cuda::ptx::mbarrier_try_wait_parity(bar, parity)) return;
  unsigned long long t0 = 0;
  for (unsigned k = 1;; ++k) {
    if (cuda::ptx::mbarrier_try_wait_parity(bar, parity)) return;
    if ((k & 4095u) == 0) {
      const unsigned long long now = globaltimer();
      if (t0 == 0) t0 = now;
      else if (now - t0 > kHangNs) __trap();
    }
  }
}

/// mbarrier arrive (release, CTA scope) by the calling thread.
__device__ __forceinline__ void arrive(uint64_t* bar) { (void)cuda::ptx::mbarrier_arrive(bar); }

/// Named barrier `id` over `threads` threads: wait for all of them / count this thread only.
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/// setmaxnreg: this warpgroup's register budget per thread (all 128 threads execute it).
template <int N, bool kIncrease>
__device__ __forceinline__ void set_registers() {
#if ATTNSIM_HAVE_TCGEN05
  if constexpr (kIncrease)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
  else
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

/// TMA: loads a 4D box (64 columns x 128 rows x 1 x 1) at (c0, c1, c2, c3) into `dst`,
/// completing its bytes on `bar`.
__device__ __forceinline__ void tma_load(const void* tmap, void* dst, int c0, int c1, int c2, int c3, uint64_t* bar) {
  const int32_t coords[4] = {c0, c1, c2, c3};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, tmap, coords, bar);
}
/// TMA: stores a 4D box from `src` (rows past the tensor are clipped).
__device__ __forceinline__ void tma_store(const void* tmap, const void* src, int c0, int c1, int c2, int c3) {
  const int32_t coords[4] = {c0, c1, c2, c3};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, tmap, coords, src);
}

/// UMMA shared-memory descriptor of a 128B-swizzled operand at SMEM address `addr`: start
/// address, leading and stride byte offsets (all >> 4), version 1 (SM100), layout SWIZZLE_128B
/// (2 in bits 61-63). K-major: SBO = 1024 (8 rows of 128 B); MN-major: LBO = bytes between
/// 64-element column groups, SBO = 1024 (8 K-rows of 128 B).
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  return static_cast<uint64_t>((addr >> 4) & 0x3FFFu) | (static_cast<uint64_t>((lbo_bytes >> 4) & 0x3FFFu) << 16) |
         (static_cast<uint64_t>((sbo_bytes >> 4) & 0x3FFFu) << 32) | (1ull << 46) | (2ull << 61);
}

/// tcgen05.mma kind::f16 instruction descriptor: fp32 accumulator (bits 4-5 = 1), bf16 A and B
/// (bits 7-9, 10-12 = 1), A K-major, B K-major or MN-major (bit 16), N >> 3 (bits 17-22),
/// M >> 4 (bits 24-28).
__host__ __device__ constexpr uint32_t instr_desc_bf16(int m, int n, bool b_mn_major) {
  return (1u << 4) | (1u << 7) | (1u << 10) | ((b_mn_major ? 1u : 0u) << 16) | (static_cast<uint32_t>(n >> 3) << 17) |
         (static_cast<uint32_t>(m >> 4) << 24);
}

/// TMEM address of lane `lane`, column `column` relative to the allocation's base address
/// (lane in bits 16-31, column in bits 0-15).
__device__ __forceinline__ uint32_t tmem_addr(uint32_t base, int lane, int column) {
  return base + (static_cast<uint32_t>(lane) << 16) + static_cast<uint32_t>(column);
}

/// Two floats to a bf16x2 word (round to nearest): lo in the low half (the lower column element).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

/// Waits on an mbarrier phase, recorded as a WAIT span of `tr`.
template <bool kOn>
__device__ __forceinline__ void traced_wait(TraceRecorder<kOn>& tr, uint64_t* bar, uint32_t parity, int wait_on,
                                            int stage, int block, int tile) {
  const uint32_t t0 = tr.now();
  wait_parity(bar, parity);
  tr.span(ATTNSIM_OP_WAIT, t0, tr.now(), block, tile, wait_on, stage, parity);
}

}  // namespace attnsim::sm100
