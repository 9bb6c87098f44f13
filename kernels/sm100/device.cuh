// Device helpers of the SM100 kernel: setmaxnreg and the tcgen05 pieces (UMMA shared-memory and
// instruction descriptors, TMEM addresses), through <cuda/ptx> where CCCL wraps the instruction
// (tcgen05.*) and inline PTX where it does not (setmaxnreg). mbarrier waits, named barriers, TMA
// copies and traced_wait are the families' shared ones (kernels/common/mbarrier.cuh). Descriptor
// bit layouts: PTX ISA "tcgen05 matrix descriptors" and "instruction descriptor" (kind::f16), as
// CUTLASS spells them in include/cute/arch/mma_sm100_desc.hpp (SmemDescriptor, InstrDescriptor).
#pragma once

#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/op_names.h"
#include "common/trace_record.h"
#include "common/mbarrier.cuh"  // mbarrier waits, named barriers, TMA, traced_wait (shared)
#include "common/trace_recorder.cuh"  // TraceRecorder, globaltimer

// tcgen05, TMEM and setmaxnreg exist on sm_100a only; other device passes build empty kernels.
#if defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM101_ALL))
#define ATTNSIM_HAVE_TCGEN05 1
#else
#define ATTNSIM_HAVE_TCGEN05 0
#endif

namespace attnsim::sm100 {

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

}  // namespace attnsim::sm100
