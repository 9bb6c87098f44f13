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

  // K/V and Q: waited for at one point, released (tcgen05.commit) at another, so two states each.
  PipelineState q_wait = c.q.ids.consumer_start(), q_release = c.q.ids.consumer_start();
  PipelineState kv_wait = c.kv.ids.consumer_start(), kv_release = c.kv.ids.consumer_start();
  // Per Q stage s: the MMA produces S into stage s of pipeline_s_p_o and, before each PV,
  // acquires the stage back (P stored, O rescaled: the softmax and correction warps' release).
  // The first S needs no acquire, as the stage starts free: the acquire state starts one pass in.
  std::vector<PipelineState> spo = per_stage(k.q_stage, PipelineState::producer_start(1));
  for (PipelineState& st : spo) st.advance();
  std::vector<PipelineState> lastsplit = per_stage(k.q_stage, PipelineState::consumer_start(1));
  std::vector<PipelineState> o_acc = per_stage(k.q_stage, PipelineState::producer_start(1));

  auto qk = [&](int s, int block, int tile) {
    w.tags(s, block, tile);
    w.compute(ATTNSIM_OP_MMA_QK, issue(k.head_dim / 16));
    w.mma(ATTNSIM_OP_MMA_QK, qk_flops, qk_smem);
    w.commit(c.s_p_o.ids.full[s], commit);  // S_s ready for softmax
  };
  auto pv = [&](int s, int block, int tile) {
    w.tags(s, block, tile);
    w.producer_acquire(c.s_p_o.ids.stage(s), spo[s]);  // P (first split) stored, O rescaled
    spo[s].advance();
    const double first = static_cast<double>(k.split_columns) / k.n_block;
    w.compute(ATTNSIM_OP_MMA_PV, issue(k.split_columns / 16));
    w.mma(ATTNSIM_OP_MMA_PV, pv_flops * first, pv_smem * first);
    if (split) {
      w.consumer_wait(c.p_lastsplit.ids.stage(s), lastsplit[s]);  // last columns of P stored
      w.compute(ATTNSIM_OP_MMA_PV, issue((k.n_block - k.split_columns) / 16));
      w.mma(ATTNSIM_OP_MMA_PV, pv_flops * (1 - first), pv_smem * (1 - first));
      w.commit(c.p_lastsplit.ids.empty[s], commit);  // tcgen05.commit: the release lands when the PV is done
      lastsplit[s].advance();
    }
  };
  auto release_kv = [&]() {
    w.commit(c.kv.ids.empty[kv_release.index], commit);
    kv_release.advance();
  };

  for (size_t t = 0; t < c.tiles.size(); ++t) {
    const int tile = static_cast<int>(t), n = c.tiles[t].n_blocks;
    for (int s = 0; s < k.q_stage; ++s) {
      w.tags(s, -1, tile);
      w.consumer_wait(c.q.ids, q_wait);
      q_wait.advance();
    }
    w.tags(-1, n - 1, tile);
    w.consumer_wait(c.kv.ids, kv_wait);  // K(n-1)
    kv_wait.advance();
    for (int s = 0; s < k.q_stage; ++s) qk(s, n - 1, tile);
    release_kv();  // K(n-1)
    for (int j = n - 2; j >= 0; --j) {
      w.tags(-1, j + 1, tile);
      w.consumer_wait(c.kv.ids, kv_wait);  // V(j+1)
      kv_wait.advance();
      for (int s = 0; s < k.q_stage; ++s) {
        pv(s, j + 1, tile);
        if (s == k.q_stage - 1) release_kv();  // V(j+1) after the last PV
        if (s == 0) {
          w.tags(-1, j, tile);
          w.consumer_wait(c.kv.ids, kv_wait);  // K(j)
          kv_wait.advance();
        }
        qk(s, j, tile);
      }
      release_kv();  // K(j) after the last QK
    }
    for (int s = 0; s < k.q_stage; ++s) {  // Q is free once the last QK has read it
      w.commit(c.q.ids.empty[q_release.index], commit);
      q_release.advance();
    }
    w.tags(-1, 0, tile);
    w.consumer_wait(c.kv.ids, kv_wait);  // V(0)
    kv_wait.advance();
    for (int s = 0; s < k.q_stage; ++s) {
      pv(s, 0, tile);
      w.producer_acquire(c.o_acc.ids.stage(s), o_acc[s]);
      w.commit(c.o_acc.ids.full[s], commit);  // final O accumulated
      o_acc[s].advance();
    }
    release_kv();  // V(0)
  }
}

}  // namespace attnsim::fa4
