// Load role (warp 14, lane 0): TMA loads of Q into the q_stage slots (pipeline_q) and of K_j, V_j
// into the one kv_stage-deep ring they share (pipeline_kv), in FA4's order: K(n-1), Q0, Q1,
// V(n-1), then K_j, V_j for j = n-2 .. 0 (KV blocks walked in descending order). With cta_group 2
// each CTA of the pair loads its own Q rows and its half of B (K's keys [64 rank, 64 rank + 64)
// of the block, V's head_dim columns [64 rank, 64 rank + 64)) into its own SMEM, and the bytes
// complete on the leader's barrier, where the leader's load warp expects both CTAs' bytes (its
// MMA thread reads both halves); the peer's load warp does not arrive there. Each CTA's load
// warp waits on its own empty barriers (the leader's commits are multicast). Mirrors
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
  const bool leader = cta_rank<T>() == 0;
  int local = 0;
  for (long long t = first_tile(p.tiles, cluster_id<T>()); t < p.num_tiles;
       t = next_tile(p.tiles, t, cluster_count<T>()), ++local) {
    const TileCoord c = tile_at(p.tiles, t);
    const int kv_head = c.head / p.group;
    tr.tile(p, s.trace(), c.n_blocks, trace_spans_per_tile);
    // The leader expects the bytes of every CTA of the pair on its full barrier.
    auto expect = [&](uint64_t* full, int bytes) {
      if (leader)
        cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             full, bytes * T::kCtaGroup);
    };
    // One K or V block (this CTA's part of it) into the ring's next stage, once the MMA has
    // released it.
    auto load_kv = [&](bool is_k, int j) {
      const int st = kv_write.index;
      traced_wait(tr, s.kv_empty(st), kv_write.phase, ATTNSIM_WAIT_KV_EMPTY, st, j, local);
      tr.start();
      expect(s.kv_full(st), T::kKvBytes);
      if (is_k || T::kCtaGroup == 1) {  // K: every column chunk of this CTA's keys; V (cta_group 1): every chunk
        const int row0 = j * kNBlock + (is_k ? cta_rank<T>() * (kNBlock / T::kCtaGroup) : 0);
        const int chunk_bytes = is_k ? T::kKChunkBytes : kNBlock * 128;
#pragma unroll
        for (int ch = 0; ch < T::kChunks; ++ch)
          tma_load_to_leader<T::kCtaGroup>(is_k ? &p.tm_k : &p.tm_v, s.kv(st) + ch * chunk_bytes, ch * 64, row0,
                                           kv_head, c.batch, s.kv_full(st));
      } else {  // V with cta_group 2: this CTA's 64 head_dim columns, all 128 keys
        tma_load_to_leader<T::kCtaGroup>(&p.tm_v, s.kv(st), cta_rank<T>() * 64, j * kNBlock, kv_head, c.batch,
                                         s.kv_full(st));
      }
      tr.finish(is_k ? ATTNSIM_OP_LOAD_K : ATTNSIM_OP_LOAD_V, j, local);
      kv_write.advance();
    };
    load_kv(true, c.n_blocks - 1);
    for (int q = 0; q < T::kQStage; ++q) {
      traced_wait(tr, s.bar(kQEmpty, q), q_write.phase, ATTNSIM_WAIT_Q_EMPTY, q, -1, local);
      tr.start();
      expect(s.bar(kQFull, q), T::kQBytes);
      const int row0 = q_row0(c.m, q, cta_rank<T>(), T::kQStage, T::kCtaGroup);
#pragma unroll
      for (int ch = 0; ch < T::kChunks; ++ch)
        tma_load_to_leader<T::kCtaGroup>(&p.tm_q, s.q(q) + ch * kMBlock * 128, ch * 64, row0, c.head, c.batch,
                                         s.bar(kQFull, q));
      tr.finish(ATTNSIM_OP_LOAD_Q, -1, local);
      q_write.advance();
    }
    load_kv(false, c.n_blocks - 1);
    for (int j = c.n_blocks - 2; j >= 0; --j) {
      load_kv(true, j);
      load_kv(false, j);
    }
  }
  if constexpr (T::kCtaGroup == 2) {
    // Tail: every stage released once more, so the leader's last multicast commits have landed
    // in this CTA's SMEM before it can exit.
    for (int i = 0; i < T::kKvStage; ++i, kv_write.advance()) wait_parity(s.kv_empty(kv_write.index), kv_write.phase);
    for (int i = 0; i < T::kQStage; ++i, q_write.advance()) wait_parity(s.bar(kQEmpty, q_write.index), q_write.phase);
  }
}

}  // namespace attnsim::sm100
