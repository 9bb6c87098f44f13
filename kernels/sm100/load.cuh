// Load role (warp 14, lane 0): TMA loads of Q into the q_stage slots (pipeline_q) and of K_j, V_j
// into the one kv_stage-deep ring they share (pipeline_kv), in FA4's order: K(n-1), Q0, Q1,
// V(n-1), then K_j, V_j for j = n-2 .. 0 (KV blocks walked in descending order). Mirrors
// sim/lower/fa4/load.cpp.
#pragma once

#include "common/pipeline_state.h"
#include "device.cuh"
#include "kernel_traits.cuh"
#include "smem.cuh"

namespace attnsim::sm100 {

template <class T>
__device__ __forceinline__ void load_warp(const Params& p, const Smem<T>& s, TraceRecorder<T::kTrace>& tr) {
  PipelineState q_write = PipelineState::producer_start(T::kQStage);
  PipelineState kv_write = PipelineState::producer_start(T::kKvStage);
  int local = 0;
  for (long long t = first_tile(p.tiles, blockIdx.x); t < p.num_tiles; t = next_tile(p.tiles, t, gridDim.x), ++local) {
    const TileCoord c = tile_at(p.tiles, t);
    const int kv_head = c.head / p.group;
    tr.tile(p, s.trace(), c.n_blocks, trace_spans_per_tile);
    // One K or V block into the ring's next stage, once the MMA has released it.
    auto load_kv = [&](const CUtensorMap* tmap, int op, int j) {
      const int st = kv_write.index;
      traced_wait(tr, s.kv_empty(st), kv_write.phase, ATTNSIM_WAIT_KV_EMPTY, st, j, local);
      tr.start();
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           s.kv_full(st), T::kKvBytes);
#pragma unroll
      for (int ch = 0; ch < T::kChunks; ++ch)
        tma_load(tmap, s.kv(st) + ch * kNBlock * 128, ch * 64, j * kNBlock, kv_head, c.batch, s.kv_full(st));
      tr.finish(op, j, local);
      kv_write.advance();
    };
    load_kv(&p.tm_k, ATTNSIM_OP_LOAD_K, c.n_blocks - 1);
    for (int q = 0; q < T::kQStage; ++q) {
      traced_wait(tr, s.bar(kQEmpty, q), q_write.phase, ATTNSIM_WAIT_Q_EMPTY, q, -1, local);
      tr.start();
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           s.bar(kQFull, q), T::kQBytes);
      const int row0 = (c.m * T::kQStage + q) * kMBlock;
#pragma unroll
      for (int ch = 0; ch < T::kChunks; ++ch)
        tma_load(&p.tm_q, s.q(q) + ch * kMBlock * 128, ch * 64, row0, c.head, c.batch, s.bar(kQFull, q));
      tr.finish(ATTNSIM_OP_LOAD_Q, -1, local);
      q_write.advance();
    }
    load_kv(&p.tm_v, ATTNSIM_OP_LOAD_V, c.n_blocks - 1);
    for (int j = c.n_blocks - 2; j >= 0; --j) {
      load_kv(&p.tm_k, ATTNSIM_OP_LOAD_K, j);
      load_kv(&p.tm_v, ATTNSIM_OP_LOAD_V, j);
    }
  }
}

}  // namespace attnsim::sm100
