// Producer warp (warp 0 of the producer warpgroup): TMA loads of Q (once per tile) and of
// K_j, V_j for j = n-1 .. 0 into their rings, each after the consumers freed the stage.
#include "lower/fa3/fa3_schedule.hpp"

namespace attnsim::fa3 {

void emit_producer(Context& c, WarpBuilder& w) {
  const double eb = c.problem.elem_bytes();
  const Work issue = alu_instructions(c.hw.tma_issue_instrs);
  c.q.arrive_count("load", true, false);
  c.k_pipe.arrive_count("load", true, false);
  c.v_pipe.arrive_count("load", true, false);
  PipeState q, ks, vs;
  // Q tiles are read by one CTA only (from HBM); K/V tiles by every m-block of the head (L2 hits).
  auto load = [&](Pipe& p, PipeState& s, int name, double bytes) {
    w.producer_acquire(p.ids, s);
    w.compute(name, issue);
    w.tma_load(name, p.ids.full[s.index], bytes, name == ATTNSIM_OP_LOAD_Q);
    s.advance(p.ids.stages);
  };
  for (size_t t = 0; t < c.tiles.size(); ++t) {
    const int n = c.tiles[t].n_blocks;
    w.tags(-1, -1, static_cast<int>(t));
    load(c.q, q, ATTNSIM_OP_LOAD_Q, c.k.m_block * c.k.head_dim * eb);
    for (int j = n - 1; j >= 0; --j) {
      w.tags(-1, j, static_cast<int>(t));
      load(c.k_pipe, ks, ATTNSIM_OP_LOAD_K, c.k.n_block * c.k.head_dim * eb);
      load(c.v_pipe, vs, ATTNSIM_OP_LOAD_V, c.k.n_block * c.k.head_dim_v * eb);
    }
  }
}

}  // namespace attnsim::fa3
