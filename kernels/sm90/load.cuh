// Load role: lane 0 of the load warp (warp 0 of the producer warpgroup) issues the TMA loads of Q
// (once per tile) and of K_j, V_j for j = n-1 .. 0 into the kv_stage-deep rings, each after the
// consumer warps freed the stage. With the dynamic tile scheduler it also picks the CTA's tiles
// (take_next_ticket, as the loads of a tile's third-last block start), hands each to the consumers
// in the tile slot, and from the second tile on loads K_n-1 before Q. With O staged in the V ring
// (T::kOInV) a tile's first V waits for the previous tile's O stores to have read the ring
// (barrier_o). Mirrors sim/lower/fa3/load.cpp.
#pragma once

#include "common/pipeline_state.h"
#include "device.cuh"
#include "kernel_traits.cuh"
#include "smem.cuh"

namespace attnsim::sm90 {

/// Returns the number of tiles the CTA ran. `recording`: the CTA records (cta_records) the tiles
/// records_tile picks, the consumers' tiles; their spans go through the warp's Cursor in shared
/// memory (CursorRecorder), and the other tiles run the plain kernel's code. kTracedLaunch: the
/// launch is a traced one (T traced, or T::Plain run by a traced launch's CTAs that record
/// nothing), whose static grid may hand a recording CTA's tiles on (static_next_tile); the plain
/// kernel's loop stays c, c + grid, ... with no test of the rule.
template <class T, bool kTracedLaunch = T::kTrace>
__device__ __forceinline__ int load_warp(const Params& p, const Smem<T>& s, bool recording) {
  // Write positions: every stage starts free, so the first pass through each ring does not wait.
  PipelineState q_write = PipelineState::producer_start(kQStages), kv_write = PipelineState::producer_start(T::kKvStage);
  int local = 0, next = 0;
  unsigned ticket = 0;  // the dynamic scheduler's: next = gridDim.x + ticket, read after the tile's loads
  // The loads of one tile, recorded by `tr`.
  auto tile_loads = [&](const Tile& c, auto& tr) {
    const int kv_head = c.head / p.group;
    // One K or V tile of block j into ring stage kv_write.index, after the consumers freed it.
    auto load_tile = [&](const CUtensorMap* tmap, uint8_t* dst, uint64_t* full, uint64_t* empty, int wait_on, int op,
                         int j) {
      const int stage = kv_write.index;
      traced_wait(tr, &empty[stage], kv_write.phase, wait_on, stage, j, local);
      tr.start();
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &full[stage], T::kKBytes);
#pragma unroll
      for (int ch = 0; ch < T::kChunks; ++ch)
        tma_load(tmap, dst + ch * T::kNBlock * 128, ch * 64, j * T::kNBlock, kv_head, c.batch, &full[stage]);
      tr.finish(op, j, local);
    };
    // Dynamic scheduler, after the CTA's first tile: K of the first block (j = n-1) goes before Q.
    // Its ring stage is free while the consumers finish the previous tile, whose O holds Q's buffer
    // until its TMA store has read it. (On a CTA's first tile Q goes first: it comes from HBM, K
    // often from L2.)
    const bool k_first = T::kDynamic && local > 0;
    if (k_first)
      load_tile(&p.tm_k, s.k(kv_write.index), s.k_full, s.k_empty, ATTNSIM_WAIT_K_EMPTY, ATTNSIM_OP_LOAD_K,
                c.n_blocks - 1);
    // Q's buffer is free once every consumer warp has finished the previous tile's epilogue.
    traced_wait(tr, &s.q_empty[q_write.index], q_write.phase, ATTNSIM_WAIT_Q_EMPTY, 0, -1, local);
    tr.start();
    if constexpr (T::kDynamic) publish_tile(s.tile, c);  // handed over by the arrive (release) below
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                         s.q_full, T::kQBytes);
#pragma unroll
    for (int ch = 0; ch < T::kChunks; ++ch)
      tma_load(&p.tm_q, s.q + ch * T::kMBlock * 128, ch * 64, c.m * T::kMBlock, c.head, c.batch, s.q_full);
    tr.finish(ATTNSIM_OP_LOAD_Q, -1, local);
    q_write.advance();
    for (int j = c.n_blocks - 1; j >= 0; --j) {
      // The next tile, taken late (kNextTileAtBlock) so that the CTA is bound to it only about
      // next_tile_lead_blocks blocks ahead; the atomic's result is first read after the loop.
      if constexpr (T::kDynamic)
        if (j == (c.n_blocks - 1 < kNextTileAtBlock ? c.n_blocks - 1 : kNextTileAtBlock)) ticket = take_next_ticket(p);
      if (!k_first || j < c.n_blocks - 1)
        load_tile(&p.tm_k, s.k(kv_write.index), s.k_full, s.k_empty, ATTNSIM_WAIT_K_EMPTY, ATTNSIM_OP_LOAD_K, j);
      // Phase local - 1 of barrier_o completes once every consumer warpgroup's store of the
      // previous tile's O has read its V stage.
      if constexpr (T::kOInV)
        if (local > 0 && j == c.n_blocks - 1)
          traced_wait(tr, s.barrier_o, static_cast<uint32_t>(local - 1) & 1u, ATTNSIM_WAIT_BARRIER_O, 0, j, local);
      load_tile(&p.tm_v, s.v(kv_write.index), s.v_full, s.v_empty, ATTNSIM_WAIT_V_EMPTY, ATTNSIM_OP_LOAD_V, j);
      kv_write.advance();  // K and V rings advance together
    }
  };
  const int cta = static_cast<int>(blockIdx.x), grid = static_cast<int>(gridDim.x);
  for (int t = cta; t < p.num_tiles;
       t = T::kDynamic        ? next
           : kTracedLaunch ? static_next_tile(p.trace_rule, cta, grid, p.num_tiles, t)
                           : t + grid,
       ++local) {
    const Tile c = tile_at(p, t, T::kMBlock, T::kNBlock);
    if (T::kTrace && recording && records_tile<T::kDynamic>(p, c, local)) {
      CursorRecorder<T::kTrace> tr = CursorRecorder<T::kTrace>::at(s.trace, kLoadWarp);
      tr.tile(p, kLoadWarp, c.n_blocks, trace_spans_per_tile);
      tile_loads(c, tr);
    } else {
      TraceRecorder<false> off;
      tile_loads(c, off);
    }
    if constexpr (T::kDynamic) {
      next = static_cast<int>(gridDim.x + ticket);
      release_counter(p, next);
    }
  }
  if constexpr (T::kDynamic) {
    // No more tiles: an index past the last one, published like a tile but with no Q bytes.
    wait_parity(&s.q_empty[q_write.index], q_write.phase);
    Tile last{};
    last.index = p.num_tiles;
    publish_tile(s.tile, last);
    arrive(s.q_full);
  }
  return local;
}

}  // namespace attnsim::sm90
