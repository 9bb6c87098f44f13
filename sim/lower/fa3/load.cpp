// The load warp (warp 0 of the producer warpgroup; without warp specialization, warp 0 of
// consumer warpgroup 0): TMA loads of K_j, V_j for j = n-1 .. 0 into their rings, each after the
// consumers freed the stage, and of Q (once per tile) before them (with the dynamic tile
// scheduler right after K_n-1 from the CTA's second tile on). With O staged in the V ring, a
// tile's first V waits for the previous tile's O stores (barrier_o). Mirrors kernels/sm90/load.cuh.
#include "lower/fa3/fa3_schedule.hpp"

namespace attnsim::fa3 {

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
  for (Pipe* p : {&c.q, &c.k_pipe, &c.v_pipe}) p->arrive_count("load", true, false);
  PipelineState q = c.q.ids.producer_start(), ks = c.k_pipe.ids.producer_start(), vs = c.v_pipe.ids.producer_start();
  for (size_t t = 0; t < c.tiles.size(); ++t) {
    const int n = c.tiles[t].n_blocks;
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
      if (c.k.o_in_v_ring && t > 0 && j == n - 1) w.wait(c.barrier_o, static_cast<int>((t - 1) % 2));
      load_stage(c, w, c.v_pipe, vs, ATTNSIM_OP_LOAD_V, c.k.n_block * c.k.head_dim_v * eb);
    }
  }
}

}  // namespace attnsim::fa3
