// Load warp (warp 14 in FA4): TMA loads of Q, K and V. Per tile: K(n-1), Q0, Q1,
// V(n-1), then (K_j, V_j) for j = n-2 .. 0 — KV blocks walked in descending order,
// K and V sharing one ring of kv_stage stages (pipeline_kv). In a 2-CTA cluster each
// CTA loads half of every K/V block (the MMA's B operand is split across the pair).
#include "lower/fa4/fa4_schedule.hpp"

namespace attnsim::fa4 {

void emit_load(Context& c, WarpBuilder& w) {
  const double eb = c.problem.elem_bytes();
  const double q_bytes = c.k.m_block * c.k.head_dim * eb;
  const double k_bytes = (c.k.n_block / c.k.cta_group) * c.k.head_dim * eb;
  const double v_bytes = (c.k.n_block / c.k.cta_group) * c.k.head_dim_v * eb;
  const Work issue = alu_instructions(c.hw.tma_issue_instrs);
  PipelineState q = c.q.ids.producer_start(), kv = c.kv.ids.producer_start();
  auto load_kv = [&](int name, double bytes, int block, int tile) {
    w.tags(-1, block, tile);
    w.producer_acquire(c.kv.ids, kv);
    w.compute(name, issue);
    w.tma_load(name, c.kv.ids.full[kv.index], bytes);
    kv.advance();
  };
  for (size_t t = 0; t < c.tiles.size(); ++t) {
    const int tile = static_cast<int>(t), n = c.tiles[t].n_blocks;
    c.kv.arrive_count("load", true, false);  // the TMA arrive.expect_tx is this role's single arrival
    c.q.arrive_count("load", true, false);
    load_kv(ATTNSIM_OP_LOAD_K, k_bytes, n - 1, tile);
    for (int s = 0; s < c.k.q_stage; ++s) {
      w.tags(s, -1, tile);
      w.producer_acquire(c.q.ids, q);
      w.compute(ATTNSIM_OP_LOAD_Q, issue);
      w.tma_load(ATTNSIM_OP_LOAD_Q, c.q.ids.full[q.index], q_bytes);
      q.advance();
    }
    load_kv(ATTNSIM_OP_LOAD_V, v_bytes, n - 1, tile);
    for (int j = n - 2; j >= 0; --j) {
      load_kv(ATTNSIM_OP_LOAD_K, k_bytes, j, tile);
      load_kv(ATTNSIM_OP_LOAD_V, v_bytes, j, tile);
    }
  }
}

}  // namespace attnsim::fa4
