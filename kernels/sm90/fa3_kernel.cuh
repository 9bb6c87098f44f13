// The SM90 attention forward kernel: warpgroup 0 is the producer (TMA loads), warpgroups
// 1..kConsumers the consumers (wgmma + softmax); the warp-to-role map and barrier counts are
// structure.h's. Roles live in load.cuh and consumer.cuh.
#pragma once

#include "consumer.cuh"
#include "device.cuh"
#include "kernel_traits.cuh"
#include "load.cuh"
#include "smem.cuh"

namespace attnsim::sm90 {

/// One CTA of fa3_forward: its tiles through the load warp and the consumer warpgroups. `kAnchor`:
/// write the CTA's clock anchor (Params::cta_clock: clk0, ns0, smid) though T is not traced, as a
/// traced launch's CTAs that record nothing do (fa3_forward).
template <class T, bool kAnchor = false>
__device__ __forceinline__ void fa3_cta(const Params& p, uint8_t* smem_raw) {
#if ATTNSIM_HAVE_WGMMA
  const Smem<T> s(smem_raw);
  // Where it measured better, the warp index is broadcast from lane 0, which ptxas takes as
  // warp-uniform, so the warpgroup's Q descriptors and barrier ids can live in uniform registers.
  // In the traced static 192 x 128 kernels (160 registers per consumer thread) two of the four Q
  // descriptors had spilled and were reloaded from local memory before every QK, in the plain
  // tiles too (cuobjdump -sass; ptxas -v, CUDA 13.0: traced stack 80-96 -> 24 bytes). Measured
  // on an H200 (2026-11-29, the 12 hd64 problems of `attnsim bench`, two runs each): dynamic with
  // pingpong (the base schedule's causal kernels) 0.3-2.7% faster; static without pingpong 1-5%
  // faster and its trace overhead 9-17% -> under 9%; static with pingpong no faster and 1-2 points
  // more trace overhead; dynamic without pingpong 1-7% slower; at head_dim 128 and 256 more
  // spills (plain hd256: 0 -> 4-20 bytes). kernels/sm90/README.md, "A warp-uniform warp index".
  constexpr bool kUniformWarp = T::kHeadDim == 64 && T::kDynamic == T::kPingpong;
  const int warp = kUniformWarp ? __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0)
                                : static_cast<int>(threadIdx.x / 32);
  const int lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    // The load warp's lane 0 (thread 0) issues every TMA load, warp 0 of each consumer
    // warpgroup the O stores: their tensor maps are fetched under the prologue.
    tma_prefetch_descriptor(&p.tm_q);
    tma_prefetch_descriptor(&p.tm_k);
    tma_prefetch_descriptor(&p.tm_v);
    tma_prefetch_descriptor(&p.tm_o);
    cuda::ptx::mbarrier_init(s.q_full, kFullArrivals);
    cuda::ptx::mbarrier_init(s.q_empty, T::kConsumerWarps);
    for (int i = 0; i < T::kKvStage; ++i) {
      cuda::ptx::mbarrier_init(&s.k_full[i], kFullArrivals);
      cuda::ptx::mbarrier_init(&s.v_full[i], kFullArrivals);
      cuda::ptx::mbarrier_init(&s.k_empty[i], T::kConsumerWarps);
      cuda::ptx::mbarrier_init(&s.v_empty[i], T::kConsumerWarps);
    }
    if constexpr (T::kOInV) cuda::ptx::mbarrier_init(s.barrier_o, barrier_o_arrivals(T::kConsumers));
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    if constexpr (T::kTrace || kAnchor) {
      // The CTA's anchor, read before the barrier so that every span starts after it: records
      // carry raw 32-bit clock stamps, which the host places relative to this clk0.
      p.cta_clock[blockIdx.x].clk0 = clock64();
      p.cta_clock[blockIdx.x].ns0 = globaltimer();
      unsigned sm;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      p.cta_clock[blockIdx.x].smid = sm;
    }
  }
  // Traced builds: each warp's recording state (its Cursor) lives in shared memory between the
  // tiles it records; a recorder is resumed from it for each recorded tile only (Consumer::
  // recorded_tile, load_warp), so that the tiles that record nothing run the plain kernel's code
  // with no recorder registers live.
  TraceRecorder<T::kTrace>::open_cursor(p, s.trace, warp, lane);
  __syncthreads();
  int tiles = 0;  // tiles this CTA ran, as the load warp (thread 0) counts them
  // Whether this CTA records tiles (trace sampling; uniform over the CTA): one that does records
  // the tiles records_tile picks and writes the end-of-CTA anchor. (Where fa3_forward sends the
  // CTAs that record nothing through the plain body, this is true here.)
  const bool recording = T::kTrace && cta_records<T::kDynamic>(p);
  // A traced launch (this CTA's T traced, or the plain body run by a traced launch's CTAs that
  // record nothing): its static grid's tile loops follow the sampling rule (static_next_tile).
  constexpr bool kTracedLaunch = T::kTrace || kAnchor;
  if (warp_role(warp) != Role::Consumer) {
    set_registers<T::kRegProducer>(false);
    if (warp_role(warp) == Role::Load && lane == 0) tiles = load_warp<T, kTracedLaunch>(p, s, recording);
  } else {
    set_registers<T::kRegConsumer>(true);
    // ptxas keeps the consumers' 240-register budget only while their branch ends with their
    // tile loop (any code after it there, even one store, made it compile the consumers within
    // the 168 registers of the launch: hundreds of bytes of spills and serialized wgmma).
    TraceRecorder<false> off;
    Consumer<T> c{{}, p, s, off, consumer_group(warp), warp % kWarpsPerWarpgroup, lane};
    c.template run<kTracedLaunch>(recording);
  }
  // The epilogue does not wait for its last TMA store of O from a buffer of its own: the SMEM
  // must have been read before the CTA exits (a no-op in threads that issued no store).
  if constexpr (T::kOwnO) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
  if constexpr (T::kTrace) {
    if (recording) {
      TraceRecorder<true>::close_cursor(p, s.trace, warp, lane);
      __syncthreads();
      if (threadIdx.x == 0) {
        p.cta_clock[blockIdx.x].ns1 = globaltimer();
        p.cta_clock[blockIdx.x].clk1 = clock64();
        if constexpr (!T::kDynamic)  // c, c + grid, ... (static_next_tile)
          tiles = static_tile_count(p.trace_rule, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x),
                                    p.num_tiles);
        p.cta_clock[blockIdx.x].tiles = tiles;
      }
    }
  }
#endif
}

/// The kernel: one CTA per work tile or a persistent grid (Params, kernel_traits.cuh). In the
/// traced instances of kIdleCtasRunPlain the CTAs that record no tile (cta_records: all but about
/// one in Params::trace_rule.sample) run the plain build's code (T::Plain) and write only their
/// clock anchor: through the traced code they ran slower than the timed kernel even with nothing
/// recorded, most where every CTA runs one tile (H200 2026-11-30, configs/validation/h200/
/// one_tile_overhead; with it hd64 s512 b32 lpt_single_tile 5.4 -> 1.3%, hd64 s512 b64 causal
/// lpt_single_tile 8.5 -> 3.7% and no_pingpong, a dynamic grid, 5.2 -> 1.0%). Both bodies in one
/// function leave ptxas fewer registers for the traced one (hd64 static: spill loads 296 -> 428
/// bytes, `-Xptxas -v`, CUDA 13.0), which cost the other instances more than they gained (static
/// without pingpong: hd64 s2k b8 3.6 -> 10.5%; static hd256: 1.5-5.7 points) or broke them (the
/// dynamic scheduler's at hd128, hd256 and hd64 with three consumer warpgroups: wgmma serialized,
/// C7512).
template <class T>
__global__ void __launch_bounds__(T::kThreads, 1) fa3_forward(const __grid_constant__ Params p) {
  extern __shared__ uint8_t smem_raw[];
  constexpr bool kIdleCtasRunPlain =
      T::kTrace && (T::kDynamic ? T::kHeadDim == 64 && T::kConsumers == 2 : T::kPingpong && T::kHeadDim <= 128);
  if constexpr (kIdleCtasRunPlain) {
    static_assert(T::Plain::kSmemBytes <= T::kSmemBytes && T::Plain::kThreads == T::kThreads,
                  "the plain body fits the traced launch");
    if (!cta_records<T::kDynamic>(p)) {
      fa3_cta<typename T::Plain, true>(p, smem_raw);
      return;
    }
  }
  fa3_cta<T>(p, smem_raw);
}

}  // namespace attnsim::sm90
