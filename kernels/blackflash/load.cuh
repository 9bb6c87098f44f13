// Load role: lane 0 of warp 0 issues the TMA loads of the CTA's Q tile (mbar q_full) and of K_j,
// V_j for j = 0 .. n-1 into stage j % kv_stage (one kv_full transaction barrier for both), each
// once every consumer thread has released the stage. Mirrors sim/lower/blackflash/load.cpp.
#pragma once

#include "blackflash/kernel_traits.cuh"
#include "common/mbarrier.cuh"
#include "common/pipeline_state.h"

namespace attnsim::blackflash {

template <class T>
__device__ __forceinline__ void load_warp(const Params& p, const Smem<T>& s, const Tile& c,
                                          TraceRecorder<T::kTrace>& tr) {
  const int kv_head = c.head / p.group;
  tr.tile(p, s.trace, c.n_blocks, trace_spans_per_tile);
  tr.start();
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, s.q_full,
                                       kTileBytes);
  tma_load(&p.tm_q, s.q(), 0, c.m * kTile, c.head, c.batch, s.q_full);
  tr.finish(ATTNSIM_OP_LOAD_Q, -1, 0);
  // Every stage starts free: the first pass through the ring does not wait.
  PipelineState w = PipelineState::producer_start(T::kKvStage);
  for (int j = 0; j < c.n_blocks; ++j) {
    traced_wait(tr, &s.kv_empty[w.index], w.phase, ATTNSIM_WAIT_MBAR_KV_EMPTY, w.index, j, 0);
    tr.start();
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                         &s.kv_full[w.index], 2 * kTileBytes);
    tma_load(&p.tm_k, s.k(w.index), 0, j * kTile, kv_head, c.batch, &s.kv_full[w.index]);
    tma_load(&p.tm_v, s.v(w.index), 0, j * kTile, kv_head, c.batch, &s.kv_full[w.index]);
    tr.finish(ATTNSIM_OP_LOAD_K, j, 0);  // the simulator's one load_k op carries K and V
    w.advance();
  }
}

}  // namespace attnsim::blackflash
