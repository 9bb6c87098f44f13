// The BlackFlash forward kernel (github.com/fms-zth/BlackFlash, README; docs/sources.md), driven
// by schedules/blackflash.json: one CTA of 288 threads per 64-row Q tile (longest first); warp 0
// is the TMA producer (load.cuh), warps 1-8 the consumers (consumer.cuh, epilogue.cuh). bf16 in
// and out, fp32 accumulation; any seqlen (TMA zero-fills past the end, masks cover the keys),
// GQA/MQA, causal aligned bottom-right. The traced build (BfTraits kTrace) records each op as a
// span with the simulator's op names (kernels/common/trace_recorder.cuh); the plain build has no
// recording code.
#pragma once

#include "blackflash/consumer.cuh"
#include "blackflash/kernel_traits.cuh"
#include "blackflash/load.cuh"
#include "common/mbarrier.cuh"
#include "common/trace_recorder.cuh"

namespace attnsim::blackflash {

/// The forward kernel; T: BfTraits. Registers capped at T::kRegisters (the schedule's
/// registers_per_thread), which decides how many CTAs share an SM.
template <class T>
__global__ void __maxnreg__(T::kRegisters) blackflash_forward(const __grid_constant__ Params p) {
  extern __shared__ uint8_t smem_raw[];
  const Smem<T> s(smem_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const Tile c = cta_tile(p);
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(s.q_full, 1);  // the producer's arrive.expect_tx (+ the TMA bytes)
    for (int i = 0; i < T::kKvStage; ++i) {
      cuda::ptx::mbarrier_init(&s.kv_full[i], 1);
      cuda::ptx::mbarrier_init(&s.kv_empty[i], kConsumerThreads);  // every consumer thread releases
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    if constexpr (T::kTrace) cta_clock_begin(&p.cta_clock[blockIdx.x]);
  }
  TraceRecorder<T::kTrace> tr;
  tr.init(p, s.trace, warp, lane);
  __syncthreads();
  if (warp == kLoadWarp) {
    if (lane == 0) load_warp<T>(p, s, c, tr);
  } else {
    consumer_warp<T>(p, s, c, warp - 1, lane, tr);
  }
  tr.close(p, s.trace, warp, lane);
  if constexpr (T::kTrace) {
    __syncthreads();
    if (threadIdx.x == 0) {
      cta_clock_end(&p.cta_clock[blockIdx.x]);
      p.cta_clock[blockIdx.x].tiles = 1;
    }
  }
}

}  // namespace attnsim::blackflash
