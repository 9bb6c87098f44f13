// Correction warpgroup (warps 8-11 in FA4): warp w serves softmax warp w of every
// Q stage. Per KV block and stage: wait the stats named barrier, read acc_scale and
// vote; if any row of the warp needs it, rescale O in TMEM; release pipeline_s_p_o
// (which gates the next PV) and pipeline_sm_stats. The first block needs no rescale,
// so its pipeline_s_p_o release comes first. Tile end: 1/row_sum, wait the last PV
// (pipeline_o_acc), take an SMEM O stage (pipeline_o_epi), scale, convert, store O.
#include "lower/fa4/fa4_schedule.hpp"

namespace attnsim::fa4 {

std::vector<PipelineState> per_stage(int q_stage, const PipelineState& start) {
  return std::vector<PipelineState>(static_cast<size_t>(q_stage), start);
}

void emit_final_o(Context& c, WarpBuilder& w, const std::string& role, int s, PipelineState& acc, PipelineState& epi) {
  const PipelineIds o_acc = c.o_acc.ids.stage(s), o_epi = c.o_epi.ids.stage(s);
  w.consumer_wait(o_acc, acc);
  w.producer_acquire(o_epi, epi);
  w.compute(ATTNSIM_OP_FINAL_O, c.costs.work("final_o", c.k.head_dim_v), c.costs.latency("final_o"));
  w.producer_commit(o_epi, epi, c.o_epi.arrive_count(role, true, false));
  w.consumer_release(o_acc, acc, c.o_acc.arrive_count(role, false, false));
}

void emit_correction(Context& c, WarpBuilder& w, int warp_in_group) {
  const Resolved& k = c.k;
  const std::string role = "correction";
  const int release_p = c.s_p_o.arrive_count(role, false, false);
  const int release_stats = c.sm_stats.arrive_count(role, false, false);
  const Work vote = c.costs.work("correction_vote", 0);
  const Work rescale = c.costs.work("rescale_o", k.head_dim_v);
  std::vector<PipelineState> acc = per_stage(k.q_stage, PipelineState::consumer_start(1));
  std::vector<PipelineState> epi = per_stage(k.q_stage, PipelineState::producer_start(1));

  for (size_t t = 0; t < c.tiles.size(); ++t) {
    const int tile = static_cast<int>(t), n = c.tiles[t].n_blocks;
    for (int s = 0; s < k.q_stage; ++s) {  // first O needs no scaling
      w.tags(s, n - 1, tile);
      w.arrive(c.s_p_o.ids.empty[s], release_p);
    }
    for (int i = 0; i < n; ++i) {
      for (int s = 0; s < k.q_stage; ++s) {
        w.tags(s, n - 1 - i, tile);
        w.bar_sync(c.stats_bar[s][warp_in_group], 32);
        w.compute(ATTNSIM_OP_CORRECTION_VOTE, vote, c.costs.latency("correction_vote"));
        if (i > 0) {
          if (c.rescale_at(warp_in_group, i)) w.compute(ATTNSIM_OP_RESCALE_O, rescale, c.costs.latency("rescale_o"));
          w.arrive(c.s_p_o.ids.empty[s], release_p);
        }
        w.arrive(c.sm_stats.ids.empty[s], release_stats);
      }
    }
    for (int s = 0; s < k.q_stage; ++s) {
      w.tags(s, -1, tile);
      w.bar_sync(c.stats_bar[s][warp_in_group], 32);  // final row_sum
      w.arrive(c.sm_stats.ids.empty[s], release_stats);
      emit_final_o(c, w, role, s, acc[s], epi[s]);
    }
  }
}

}  // namespace attnsim::fa4
