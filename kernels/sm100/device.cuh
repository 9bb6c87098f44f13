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

// ---- 2-CTA clusters (cta_group 2) ---------------------------------------------------------------
// The pair's leader (cluster rank 0) issues every tcgen05.mma of both CTAs; the barriers its MMA
// thread waits on live in its SMEM and count both CTAs' arrivals (structure.h). PTX ISA
// "tcgen05.mma" (.cta_group::2), "cp.async.bulk.tensor" (.cta_group::2: the mbarrier may be in the
// peer CTA), "mbarrier.arrive" (.shared::cluster); CUTLASS's 2-SM TMA loads and UMMA pipelines
// (include/cute/arch/copy_sm100_tma.hpp, include/cutlass/pipeline/sm100_pipeline.hpp) signal the
// leader's barriers the same way.

/// The <cuda/ptx> tag of tcgen05's .cta_group::N.
template <int kCtaGroup>
inline constexpr cuda::ptx::cta_group_t<kCtaGroup == 1 ? cuda::ptx::dot_cta_group::cta_group_1
                                                       : cuda::ptx::dot_cta_group::cta_group_2>
    kPtxCtaGroup{};

/// The same SMEM object in CTA `rank` of this cluster, as a generic pointer (mapa).
template <class P>
__device__ __forceinline__ P* in_cta(P* p, unsigned rank) {
  return static_cast<P*>(__cluster_map_shared_rank(static_cast<void*>(p), rank));
}

/// This thread's arrival on `bar` of the leader CTA, or on its own CTA's with cta_group 1. The
/// remote arrive keeps mbarrier.arrive's default semantics (release, CTA scope), as CUTLASS's
/// 2-SM pipelines do: what it hands over lives in TMEM and is ordered by tcgen05.fence around the
/// barrier, not by the memory model. A release at cluster scope (cuda::ptx's only form for
/// .shared::cluster) compiles to MEMBAR.ALL.CTA + MEMBAR.ALL.GPU before every arrival (sm_100a
/// SASS, CUDA 13.0), which each softmax and correction thread would pay per KV block.
template <int kCtaGroup>
__device__ __forceinline__ void arrive_leader(uint64_t* bar) {
  if constexpr (kCtaGroup == 1)
    arrive(bar);
  else
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(smem_u32(in_cta(bar, 0))) : "memory");
}

/// tcgen05.commit of everything the MMA thread issued so far: one arrival on `bar` when it
/// completes, in this CTA (cta_group 1) or in both CTAs of the pair (cta_group 2, multicast).
template <int kCtaGroup>
__device__ __forceinline__ void commit_to(uint64_t* bar) {
#if ATTNSIM_HAVE_TCGEN05
  if constexpr (kCtaGroup == 1)
    cuda::ptx::tcgen05_commit(kPtxCtaGroup<1>, bar);
  else
    cuda::ptx::tcgen05_commit_multicast(kPtxCtaGroup<2>, bar, static_cast<uint16_t>(0b11));
#endif
}

/// TMA load of a 4D box into this CTA's `dst`, its bytes completing on `bar` of the leader CTA
/// (cta_group 2: the leader's MMA waits for both halves of B and both CTAs' Q on one barrier) or
/// of this CTA (cta_group 1). Inline PTX for cta_group 2: cuda::ptx's .cta_group::2 form takes a
/// .shared::cta destination; this is the .shared::cluster form with the leader's barrier address,
/// as CUTLASS's 2-SM TMA loads issue it.
template <int kCtaGroup>
__device__ __forceinline__ void tma_load_to_leader(const void* tmap, void* dst, int c0, int c1, int c2, int c3,
                                                   uint64_t* bar) {
  if constexpr (kCtaGroup == 1) {
    tma_load(tmap, dst, c0, c1, c2, c3, bar);
  } else {
#if ATTNSIM_HAVE_TCGEN05
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2"
        " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(smem_u32(dst)),
        "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_u32(in_cta(bar, 0)))
        : "memory");
#endif
  }
}

/// Two floats to a bf16x2 word (round to nearest): lo in the low half (the lower column element).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

}  // namespace attnsim::sm100
