// MMA warp (warp 12 in FA4): one thread issues every tcgen05.mma and commits.
// Per tile with n KV blocks (descending): prologue S_s = Q_s K(n-1)^T for each stage;
// steady state for each next block: PV_0(prev), QK_0(next), PV_1(prev), QK_1(next),
// V released after the last PV, K after the last QK (tcgen05.commit to the empty
// barrier, so the release lands when the MMAs reading the buffer have finished);
// tail: the last PVs, then commit pipeline_o_acc. Each PV first acquires
// pipeline_s_p_o (P's first columns stored and O rescaled); with split P it issues
// the first split_columns/16 K-steps, waits pipeline_p_lastsplit, then the rest.
#include "lower/fa4/fa4_schedule.hpp"

namespace attnsim::fa4 {

void emit_mma(Context& c, WarpBuilder& w) {
  const Resolved& k = c.k;
  const double eb = c.problem.elem_bytes();
  // This SM's share of each MMA: 128 rows (the peer SM computes the other 128 of M = 256).
  const double qk_flops = 2.0 * k.m_block * k.n_block * k.head_dim;
  const double pv_flops = 2.0 * k.m_block * k.head_dim_v * k.n_block;
  // SMEM operand reads per SM: QK reads Q and this CTA's half of K; PV reads this CTA's half of V
  // (P comes from TMEM).
  const double qk_smem = (k.m_block + k.n_block / k.cta_group) * k.head_dim * eb;
  const double pv_smem = (k.n_block / k.cta_group) * k.head_dim_v * eb;
  auto issue = [&](int instructions) { return alu_instructions(instructions * c.hw.mma_issue_instrs); };
  const int commit = 1;
  c.s_p_o.arrive_count("mma", true, true);
  c.kv.arrive_count("mma", false, true);
  c.q.arrive_count("mma", false, true);
  c.o_acc.arrive_count("mma", true, true);
  const bool split = k.split_columns < k.n_block;
  if (split) c.p_lastsplit.arrive_count("mma", false, true);

  PipeState q_wait, kv_wait, kv_release, q_release;
  std::vector<PhaseCounter> spo_empty(k.q_stage), lastsplit(k.q_stage), o_acc_empty(k.q_stage);

  auto qk = [&](int s, int block, int tile) {
    w.tags(s, block, tile);
    w.compute(ATTNSIM_OP_MMA_QK, issue(k.head_dim / 16));
    w.mma(ATTNSIM_OP_MMA_QK, qk_flops, qk_smem);
    w.commit(c.s_p_o.ids.full[s], commit);  // S_s ready for softmax
  };
  auto pv = [&](int s, int block, int tile) {
    w.tags(s, block, tile);
    w.wait(c.s_p_o.ids.empty[s], spo_empty[s].consumer());  // P (first split) stored, O rescaled
    const double first = static_cast<double>(k.split_columns) / k.n_block;
    w.compute(ATTNSIM_OP_MMA_PV, issue(k.split_columns / 16));
    w.mma(ATTNSIM_OP_MMA_PV, pv_flops * first, pv_smem * first);
    if (split) {
      w.wait(c.p_lastsplit.ids.full[s], lastsplit[s].consumer());  // last columns of P stored
      w.compute(ATTNSIM_OP_MMA_PV, issue((k.n_block - k.split_columns) / 16));
      w.mma(ATTNSIM_OP_MMA_PV, pv_flops * (1 - first), pv_smem * (1 - first));
      w.commit(c.p_lastsplit.ids.empty[s], commit);
    }
  };
  auto release_kv = [&]() {
    w.commit(c.kv.ids.empty[kv_release.index], commit);
    kv_release.advance(c.kv.ids.stages);
  };

  for (size_t t = 0; t < c.tiles.size(); ++t) {
    const int tile = static_cast<int>(t), n = c.tiles[t].n_blocks;
    for (int s = 0; s < k.q_stage; ++s) {
      w.tags(s, -1, tile);
      w.consumer_wait(c.q.ids, q_wait);
      q_wait.advance(c.q.ids.stages);
    }
    w.tags(-1, n - 1, tile);
    w.consumer_wait(c.kv.ids, kv_wait);  // K(n-1)
    kv_wait.advance(c.kv.ids.stages);
    for (int s = 0; s < k.q_stage; ++s) qk(s, n - 1, tile);
    release_kv();  // K(n-1)
    for (int j = n - 2; j >= 0; --j) {
      w.tags(-1, j + 1, tile);
      w.consumer_wait(c.kv.ids, kv_wait);  // V(j+1)
      kv_wait.advance(c.kv.ids.stages);
      for (int s = 0; s < k.q_stage; ++s) {
        pv(s, j + 1, tile);
        if (s == k.q_stage - 1) release_kv();  // V(j+1) after the last PV
        if (s == 0) {
          w.tags(-1, j, tile);
          w.consumer_wait(c.kv.ids, kv_wait);  // K(j)
          kv_wait.advance(c.kv.ids.stages);
        }
        qk(s, j, tile);
      }
      release_kv();  // K(j) after the last QK
    }
    for (int s = 0; s < k.q_stage; ++s) {  // Q is free once the last QK has read it
      w.commit(c.q.ids.empty[q_release.index], commit);
      q_release.advance(c.q.ids.stages);
    }
    w.tags(-1, 0, tile);
    w.consumer_wait(c.kv.ids, kv_wait);  // V(0)
    kv_wait.advance(c.kv.ids.stages);
    for (int s = 0; s < k.q_stage; ++s) {
      pv(s, 0, tile);
      w.wait(c.o_acc.ids.empty[s], o_acc_empty[s].producer());
      w.commit(c.o_acc.ids.full[s], commit);  // final O accumulated
    }
    release_kv();  // V(0)
  }
}

}  // namespace attnsim::fa4
