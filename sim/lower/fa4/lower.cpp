// The lowering entry point of the fa4_sm100 family: wires the pipelines (from their
// declarations, sim/lower/pipeline_decl.hpp) and named barriers and calls each role's emitter.
#include <fmt/format.h>

#include "lower/fa4/fa4_schedule.hpp"
#include "model/json_reader.hpp"

namespace attnsim::fa4 {

bool Context::rescale_at(int w, int i) const {
  if (i == 0) return false;
  if (!knobs.conditional_rescale) return true;
  return rescale.at(w, i);
}

CtaProgram Fa4Schedule::lower(const Hardware& hw, const Problem& p, const std::vector<TileWork>& tiles) const {
  const Resolved k = resolve(hw, p);
  CtaBuilder cta;
  std::map<std::string, Pipe> pipes =
      make_pipes(cta, pipelines_, {{"q_stage", k.q_stage}, {"kv_stage", k.kv_stage}}, roles_, k.cta_group, file_);
  const int rows_warps = 4;
  RescaleMask mask;  // consulted only under the conditional rescale (Context::rescale_at)
  if (knobs_.conditional_rescale)
    mask = conditional_rescale_mask(p.rescale_rate, tiles, p.head_dim, p.seqlen_k, k.n_block, rows_warps,
                                    knobs_.rescale_threshold_log2);
  Context c{hw,
            p,
            k,
            knobs_,
            costs_,
            tiles,
            mask,
            pipes.at("pipeline_q"),
            pipes.at("pipeline_kv"),
            pipes.at("pipeline_s_p_o"),
            pipes.at("pipeline_p_lastsplit"),
            pipes.at("pipeline_o_acc"),
            pipes.at("pipeline_sm_stats"),
            pipes.at("pipeline_o_epi"),
            {},
            {},
            named_threads_.at("softmax_stats"),
            named_threads_.at("exp_order"),
            roles_};
  for (int s = 0; s < k.q_stage; ++s) {
    c.stats_bar.emplace_back();
    for (int w = 0; w < 4; ++w)
      c.stats_bar[s].push_back(cta.barrier(fmt::format("bar.softmax_stats[s{}w{}]", s, w), c.stats_threads, true));
    if (knobs_.exp_order_barrier)
      c.order_bar.push_back(cta.barrier(fmt::format("bar.exp_order[{}]", s), c.order_threads, true));
  }
  for (const auto& [role, d] : roles_) {
    const RoleId id = role_ids_.at(role);
    for (size_t i = 0; i < d.warps.size(); ++i) {
      WarpBuilder w = cta.warp(d.warps[i], role);
      const int in_group = static_cast<int>(i);
      switch (id.role) {
        case Role::Load:
          emit_load(c, w);
          break;
        case Role::Mma:
          emit_mma(c, w);
          break;
        case Role::Epilogue:
          emit_epilogue(c, w);
          break;
        case Role::Correction:
          if (knobs_.correction_warpgroup) emit_correction(c, w, in_group);
          break;
        case Role::Softmax:
          if (id.stage < k.q_stage) emit_softmax(c, w, id.stage, in_group);
          break;
        case Role::Empty:
          break;
      }
    }
  }
  // Every declared arriver must arrive (else the barrier never fills); stage-bound roles past q_stage idle.
  check_arrivers_used(pipes, [&](const std::string& role) { return roles_.at(role).q_stage >= k.q_stage; });
  return cta.take();
}

}  // namespace attnsim::fa4
