// The load warp (warp 0 of the producer warpgroup; without warp specialization, warp 0 of
// consumer warpgroup 0): TMA loads of K_j, V_j for j = n-1 .. 0 into their rings, each after the
// consumers freed the stage, and of Q (once per tile) before them (with the dynamic tile
// scheduler right after K_n-1 from the CTA's second tile on). With O staged in the V ring, a
// tile's first V waits for the previous tile's O stores (barrier_o). Mirrors kernels/sm90/load.cuh.
//
// Its own time outside the loads (CostModel::load_warp, kernels/microbench load_warp: the
// kernel's load code beside consumer warps running the softmax on its SMSP, which keep most of its
// issue slots): between tiles, the tile loop and the next tile's coordinates or ticket, before the
// next tile's first wait; in the traced kernel (Context::traced), per KV block, the code around its
// recorded spans, and per tile of a static grid the entry into a recorded tile from a plain one.
// (Its load spans stay the TMA issue's instructions at a fair share of the issue slots, shorter
// than the benchmark's recorded ones beside the softmax: held to those, the load warp's issue moved
// against the consumers' softmax and their spans moved away from the traced kernel's,
// configs/validation/h200/fa3_sm90_trace_clock_cudnn rescale_o within 15% on 100 -> 76 of 168
// cases, mma_pv 97 -> 84, pipeline_v.empty within 25% on 117 -> 108.)
#include <algorithm>

#include "lower/fa3/fa3_schedule.hpp"

namespace attnsim::fa3 {

LoadWarpCost load_warp_cost(const CostModel& costs, const Resolved& k) {
  if (!k.warp_specialization) return {};
  return costs.load_warp(k.head_dim, k.scheduler == TileScheduler::DynamicLpt, k.own_o_buffer, k.n_block);
}

void load_stage(Context& c, WarpBuilder& w, Pipe& p, PipelineState& s, int name, double bytes) {
  w.producer_acquire(p.ids, s);
  w.compute(name, alu_instructions(c.hw.tma_issue_instrs));
  // Q tiles are read by one CTA only (from HBM); K/V tiles by every m-block of the head (L2 hits).
  // The TMA's transaction bytes complete the full barrier (the arrive.expect_tx is its one arrival).
  w.tma_load(name, p.ids.full[s.index], bytes, name == ATTNSIM_OP_LOAD_Q);
  s.advance();
}

void emit_load(Context& c, WarpBuilder& w) {
  const double eb = c.problem.elem_bytes();
  const LoadWarpCost own = load_warp_cost(c.costs, c.k);
  for (Pipe* p : {&c.q, &c.k_pipe, &c.v_pipe}) p->arrive_count("load", true, false);
  PipelineState q = c.q.ids.producer_start(), ks = c.k_pipe.ids.producer_start(), vs = c.v_pipe.ids.producer_start();
  for (size_t t = 0; t < c.tiles.size(); ++t) {
    const int n = c.tiles[t].n_blocks;
    // Between tiles: the tile loop and the next tile's set-up, before its first wait. A static
    // grid's traced kernel records one tile of a CTA, entered from a plain one, which costs more
    // than entering it from a recorded one (load_warp's recorded_after_plain; our reading: its
    // recorded code has not run yet in the launch); the dynamic grid's recording CTAs record
    // their tiles one after another, so only the first is entered so.
    const bool entered_from_plain = c.traced && c.k.scheduler != TileScheduler::DynamicLpt;
    const double between = own.tile_bookkeeping + (entered_from_plain ? std::max(0.0, own.recorded_entry_extra) : 0.0);
    if (t > 0 && between > 0) {
      w.tags(-1, -1, static_cast<int>(t));
      w.compute(ATTNSIM_OP_TILE_CONTROL, Work{}, between);
    }
    // Dynamic scheduler, after the first tile: K of the first block goes before Q (its stage frees
    // while the previous tile's epilogue still holds Q's buffer, its O).
    const bool k_first = c.k.scheduler == TileScheduler::DynamicLpt && t > 0;
    if (k_first) {
      w.tags(-1, n - 1, static_cast<int>(t));
      load_stage(c, w, c.k_pipe, ks, ATTNSIM_OP_LOAD_K, c.k.n_block * c.k.head_dim * eb);
    }
    w.tags(-1, -1, static_cast<int>(t));
    load_stage(c, w, c.q, q, ATTNSIM_OP_LOAD_Q, c.k.m_block * c.k.head_dim * eb);
    for (int j = n - 1; j >= 0; --j) {
      w.tags(-1, j, static_cast<int>(t));
      if (j < n - 1 || !k_first) load_stage(c, w, c.k_pipe, ks, ATTNSIM_OP_LOAD_K, c.k.n_block * c.k.head_dim * eb);
      // The traced kernel's code between this block's waits and loads, charged in one piece before
      // V's wait. (In the kernel it is spread over the block; here the TMA issue of K and V stays
      // right after V's stage frees, where the plain kernel's prediction has it, so that the
      // traced twin's consumers see the load warp's issue as the plain prediction's do.)
      if (c.traced && own.block_gaps > 0) w.compute(ATTNSIM_OP_LOOP_CONTROL, Work{}, own.block_gaps);
      if (c.k.o_in_v_ring && t > 0 && j == n - 1) w.wait(c.barrier_o, static_cast<int>((t - 1) % 2));
      load_stage(c, w, c.v_pipe, vs, ATTNSIM_OP_LOAD_V, c.k.n_block * c.k.head_dim_v * eb);
    }
  }
}

}  // namespace attnsim::fa3
