// Softmax warpgroups (warps 0-3: Q stage 0, warps 4-7: stage 1 in FA4). One thread
// owns one row (128 threads = 128 TMEM lanes). Per KV block: wait S; tcgen05.ld S,
// mask, row max, rescale decision; hand acc_scale to the correction warp (named
// barrier); exp2 in 32-column fragments (MUFU or emulated on the FMA pipe), bf16,
// tcgen05.st P; release pipeline_s_p_o after the first split_columns of P and
// pipeline_p_lastsplit after the rest; row-sum update. sScale (acc_scale, row
// stats) is one slot per stage: the softmax acquires pipeline_sm_stats before it
// writes the slot and the correction warp releases it after reading.
// Without a correction warpgroup the softmax warps rescale O and write the final O
// themselves (the "what actually it is" diagram of the FA4 execution-flow analysis).
#include "lower/fa4/fa4_schedule.hpp"

namespace attnsim::fa4 {

void emit_softmax(Context& c, WarpBuilder& w, int stage, int warp_in_group) {
  const Resolved& k = c.k;
  const std::string role = c.softmax_role(stage);
  const bool corr = c.knobs.correction_warpgroup;
  const bool split = k.split_columns < k.n_block;
  const int release_p = c.s_p_o.arrive_count(role, false, false);
  const int release_last = split ? c.p_lastsplit.arrive_count(role, true, false) : 0;
  const int frags = k.n_block / 32;
  const int split_frag = k.split_columns / 32;  // fragments stored before the first release
  // This warpgroup uses stage `stage` of each q_stage-deep pipeline only.
  const PipelineIds spo = c.s_p_o.ids.stage(stage), stats = c.sm_stats.ids.stage(stage);
  PipelineState s_full = PipelineState::consumer_start(1);  // S in, P out (pipeline_s_p_o)
  PipelineState stats_free = PipelineState::producer_start(1);  // sScale slot (pipeline_sm_stats)
  PipelineState acc = PipelineState::consumer_start(1), epi = PipelineState::producer_start(1);
  const bool ordered = !c.order_bar.empty();
  const int other = 1 - stage;
  if (ordered && stage == 1) w.bar_arrive(c.order_bar[0], 32);  // stage 0 runs its exp first

  Work max_work = c.costs.work("softmax_max", k.n_block);
  max_work += c.costs.work("softmax_stats", 0);
  const Work mask_work = c.costs.work("softmax_mask", k.n_block);
  std::vector<Work> exp_work;
  for (int f = 0; f < frags; ++f) {
    const double emu = k.emu_share_per_fragment[f];
    Work e = c.costs.work("softmax_exp_common", 32);
    e += c.costs.work("exp2_mufu", 32 * (1 - emu), 0);
    e += c.costs.work("exp2_emulated", 32 * emu, 0);
    exp_work.push_back(e);
  }
  const Work sum_work = c.costs.work("softmax_sum", 0);
  const Work rescale_work = c.costs.work("rescale_o", k.head_dim_v);

  for (size_t t = 0; t < c.tiles.size(); ++t) {
    const TileWork& tile = c.tiles[t];
    const int n = tile.n_blocks;
    for (int i = 0; i < n; ++i) {
      const int block = n - 1 - i;
      w.tags(stage, block, static_cast<int>(t));
      w.consumer_wait(spo, s_full);
      Work mw = max_work;
      if (block >= n - tile.masked_blocks) mw += mask_work;  // the last blocks cross the diagonal / tail
      w.compute(ATTNSIM_OP_SOFTMAX_MAX, mw, c.costs.latency("softmax_max"));
      const bool rescale = c.rescale_at(warp_in_group, i);
      if (corr) {  // sScale is reused: write it once the correction warp has read the previous stats
        w.producer_acquire(stats, stats_free);
        stats_free.advance();  // the stats are handed over on a named barrier, not this pipeline
        w.bar_arrive(c.stats_bar[stage][warp_in_group], 32);
      } else if (rescale)
        w.compute(ATTNSIM_OP_RESCALE_O, rescale_work, c.costs.latency("rescale_o"));
      if (ordered) w.bar_sync(c.order_bar[stage], 32);
      for (int f = 0; f < frags; ++f) {
        w.compute(ATTNSIM_OP_SOFTMAX_EXP, exp_work[f]);
        if (split && f + 1 == split_frag)
          w.consumer_release(spo, s_full, release_p);  // tcgen05.wait::st, then release
      }
      if (split)
        w.arrive(c.p_lastsplit.ids.full[stage], release_last);
      else
        w.consumer_release(spo, s_full, release_p);
      if (ordered) w.bar_arrive(c.order_bar[other], 32);
      w.compute(ATTNSIM_OP_SOFTMAX_SUM, sum_work);
    }
    w.tags(stage, -1, static_cast<int>(t));
    if (corr) {
      w.producer_acquire(stats, stats_free);
      stats_free.advance();
      w.compute(ATTNSIM_OP_SOFTMAX_SUM, c.costs.work("softmax_stats", 0));
      w.bar_arrive(c.stats_bar[stage][warp_in_group], 32);  // final row_sum / row_max
    } else {
      emit_final_o(c, w, role, stage, acc, epi);
    }
  }
}

}  // namespace attnsim::fa4
