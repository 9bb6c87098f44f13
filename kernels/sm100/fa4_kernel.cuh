// The SM100 FA4-style attention forward kernel: 16 warps in FA4's roles (structure.h warp_role),
// one work tile = q_stage x cta_group x 128 query rows of one (batch, head), run by a cluster of
// cta_group CTAs. Thread 0 initialises the mbarriers, the MMA warp allocates TMEM (tcgen05.alloc,
// the schedule's column count; with cta_group 2 the MMA warps of both CTAs allocate together),
// every warpgroup sets its setmaxnreg budget, then each role runs its loop (load.cuh, mma.cuh,
// softmax.cuh, correction.cuh, epilogue.cuh); at the end the MMA warp frees TMEM. With cta_group 2
// the pair meets at a cluster barrier after the barrier set-up (the peer's loads and arrivals
// target the leader's barriers) and before TMEM is freed and the CTAs exit (the leader's MMAs
// write the peer's TMEM; the peer's last arrivals land in the leader's SMEM).
#pragma once

#include "correction.cuh"
#include "device.cuh"
#include "epilogue.cuh"
#include "kernel_traits.cuh"
#include "load.cuh"
#include "mma.cuh"
#include "smem.cuh"
#include "softmax.cuh"

namespace attnsim::sm100 {

template <class T>
__global__ void __launch_bounds__(kThreads, 1) fa4_forward(const __grid_constant__ Params p) {
#if ATTNSIM_HAVE_TCGEN05
  // 1024-B aligned: the SWIZZLE_128B atoms of TMA and of the UMMA descriptors assume it, and the
  // layout carries no slack to align it (its size is the simulator's SMEM figure).
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const Smem<T> s(smem_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  constexpr int kCg = T::kCtaGroup;
  // Whole-CTA (cta_group 1) or whole-pair (cta_group 2) rendezvous of every thread.
  auto sync_all = [] {
    if constexpr (kCg == 1) {
      __syncthreads();
    } else {
      cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
      cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
    }
  };
  if (threadIdx.x == 0) {
    if (smem_u32(smem_raw) % 1024 != 0) __trap();
    for (int q = 0; q < T::kQStage; ++q) {
      cuda::ptx::mbarrier_init(s.bar(kQFull, q), kTmaArrivals);
      cuda::ptx::mbarrier_init(s.bar(kQEmpty, q), kCommitArrivals);
      cuda::ptx::mbarrier_init(s.bar(kSpoFull, q), kCommitArrivals);
      cuda::ptx::mbarrier_init(s.bar(kSpoEmpty, q), s_p_o_empty_arrivals(T::kCorrectionWg, kCg));
      cuda::ptx::mbarrier_init(s.bar(kLastsplitFull, q), lastsplit_arrivals(kCg));
      cuda::ptx::mbarrier_init(s.bar(kOAccFull, q), kCommitArrivals);
      cuda::ptx::mbarrier_init(s.bar(kOAccEmpty, q), o_acc_empty_arrivals(kCg));
      cuda::ptx::mbarrier_init(s.bar(kSmStatsEmpty, q), kSmStatsArrivals);
      cuda::ptx::mbarrier_init(s.bar(kOEpiFull, q), kOOwnerArrivals);
      cuda::ptx::mbarrier_init(s.bar(kOEpiEmpty, q), kEpilogueArrivals);
    }
    for (int i = 0; i < T::kKvStage; ++i) {
      cuda::ptx::mbarrier_init(s.kv_full(i), kTmaArrivals);
      cuda::ptx::mbarrier_init(s.kv_empty(i), kCommitArrivals);
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    if constexpr (T::kTrace) cta_clock_begin(&p.cta_clock[blockIdx.x]);
  }
  if (warp == kMmaWarp) {  // warp-wide: writes the TMEM base address to SMEM
    cuda::ptx::tcgen05_alloc(kPtxCtaGroup<kCg>, s.tmem_base(), T::kTmemAlloc);
    cuda::ptx::tcgen05_relinquish_alloc_permit(kPtxCtaGroup<kCg>);
  }
  TraceRecorder<T::kTrace> tr;
  tr.init(p, s.trace(), warp, lane);
  cuda::ptx::tcgen05_fence_before_thread_sync();
  sync_all();
  cuda::ptx::tcgen05_fence_after_thread_sync();
  const uint32_t tmem = *s.tmem_base();
  switch (warp_role(warp)) {
    case Role::Softmax:
      set_registers<T::kRegSoftmax, (T::kRegSoftmax > 128)>();
      if (warp / 4 < T::kQStage) softmax_warpgroup<T>(p, s, tr, tmem, warp / 4, warp % 4, lane);
      break;
    case Role::Correction:
      set_registers<T::kRegCorrection, (T::kRegCorrection > 128)>();
      if constexpr (T::kCorrectionWg) correction_warpgroup<T>(p, s, tr, tmem, warp % 4, lane);
      break;
    default:
      set_registers<T::kRegOther, (T::kRegOther > 128)>();
      if (warp == kMmaWarp && lane == 0) mma_warp<T>(p, s, tr, tmem);
      if (warp == kEpilogueWarp) epilogue_warp<T>(p, s, tr, lane);
      if (warp == kLoadWarp && lane == 0) load_warp<T>(p, s, tr);
      break;
  }
  tr.close(p, s.trace(), warp, lane);
  cuda::ptx::tcgen05_fence_before_thread_sync();
  sync_all();
  if (warp == kMmaWarp) {
    cuda::ptx::tcgen05_fence_after_thread_sync();
    cuda::ptx::tcgen05_dealloc(kPtxCtaGroup<kCg>, tmem, T::kTmemAlloc);
  }
  if constexpr (T::kTrace) {
    if (threadIdx.x == 0) {
      cta_clock_end(&p.cta_clock[blockIdx.x]);
      int tiles = 0;
      for (long long t = first_tile(p.tiles, cluster_id<T>()); t < p.num_tiles;
           t = next_tile(p.tiles, t, cluster_count<T>()))
        ++tiles;
      p.cta_clock[blockIdx.x].tiles = tiles;
    }
  }
#endif
}

}  // namespace attnsim::sm100
