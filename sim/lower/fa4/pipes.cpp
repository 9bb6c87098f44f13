// Arrive counts from the pipeline declarations, and the lowering entry point that
// wires the pipelines and named barriers and calls each role's emitter.
#include <fmt/format.h>

#include "lower/fa4/fa4_schedule.hpp"
#include "model/json_reader.hpp"

namespace attnsim::fa4 {

int Pipe::arrive_count(const std::string& role, bool full, bool leader_only) const {
  const SideDecl& side = full ? decl->full : decl->empty;
  auto it = side.arrivers.find(role);
  if (!side.present || it == side.arrivers.end())
    throw InputError(*file, (side.present ? side.path : decl->path + (full ? "/full" : "/empty")) + "/arrivers",
                     fmt::format("{} warps arrive on {}.{} with these knobs, but the declaration does not list them", role,
                                 ids.name, full ? "full" : "empty"),
                     "pipeline_counts");
  (full ? *used_full : *used_empty)[role] = true;
  // The peer CTA of a 2-CTA cluster runs the same program at the same time: its arrivals on a
  // cluster-scoped barrier (which lives in the leader) are mirrored by ours. The leader-only MMA
  // warp multicasts its commit, which counts once.
  return it->second * (decl->cluster && !leader_only ? cta_group : 1);
}

bool Context::rescale_at(int w, int i) const {
  if (i == 0) return false;
  if (!knobs.conditional_rescale) return true;
  return rescale.at(w, i);
}

CtaProgram Fa4Schedule::lower(const Hardware& hw, const Problem& p, const std::vector<TileWork>& tiles) const {
  const Resolved k = resolve(hw, p);
  CtaBuilder cta;
  std::map<std::string, std::map<std::string, bool>> used_full, used_empty;
  auto make = [&](const std::string& name) {
    const PipelineDecl& d = pipelines_.at(name);
    const int stages = d.stages == "q_stage" ? k.q_stage : d.stages == "kv_stage" ? k.kv_stage : std::stoi(d.stages);
    const int mult = d.cluster ? k.cta_group : 1;
    auto count = [&](const SideDecl& s) {
      if (!s.present) return 1;
      // The declared count is per CTA; cluster scope adds the peer's arrivals (leader-only roles excepted).
      int leader = 0;
      for (const auto& [role, per_warp] : s.arrivers)
        if (roles_.at(role).leader_only) leader += static_cast<int>(roles_.at(role).warps.size()) * per_warp;
      return (s.count - leader) * mult + leader;
    };
    Pipe pipe;
    pipe.ids = cta.pipeline(name, stages, count(d.full), count(d.empty));
    pipe.decl = &d;
    pipe.cta_group = k.cta_group;
    pipe.file = &file_;
    pipe.used_full = &used_full[name];
    pipe.used_empty = &used_empty[name];
    return pipe;
  };
  const int rows_warps = 4;
  RescaleMask mask;
  const int max_blocks = tiles.empty() ? 1 : std::max_element(tiles.begin(), tiles.end(), [](auto& a, auto& b) {
                                               return a.n_blocks < b.n_blocks;
                                             })->n_blocks;
  if (p.rescale_rate) mask = rescale_from_rate(*p.rescale_rate, rows_warps, max_blocks);
  else if (knobs_.conditional_rescale)
    mask = rescale_from_random_scores(p.head_dim, std::min(p.seqlen_k, max_blocks * k.n_block), k.n_block, rows_warps,
                                      knobs_.rescale_threshold_log2);
  Context c{hw, p, k, knobs_, costs_, tiles, mask,
            make("pipeline_q"), make("pipeline_kv"), make("pipeline_s_p_o"), make("pipeline_p_lastsplit"),
            make("pipeline_o_acc"), make("pipeline_sm_stats"), make("pipeline_o_epi"),
            {}, {}, named_threads_.at("softmax_stats"), named_threads_.at("exp_order"), roles_};
  for (int s = 0; s < k.q_stage; ++s) {
    c.stats_bar.emplace_back();
    for (int w = 0; w < 4; ++w)
      c.stats_bar[s].push_back(cta.barrier(fmt::format("bar.softmax_stats[s{}w{}]", s, w), c.stats_threads, true));
    if (knobs_.exp_order_barrier) c.order_bar.push_back(cta.barrier(fmt::format("bar.exp_order[{}]", s), c.order_threads, true));
  }
  for (const auto& [role, d] : roles_) {
    for (size_t i = 0; i < d.warps.size(); ++i) {
      WarpBuilder w = cta.warp(d.warps[i], role);
      if (role == "load") emit_load(c, w);
      else if (role == "mma") emit_mma(c, w);
      else if (role == "epilogue") emit_epilogue(c, w);
      else if (role == "correction") { if (knobs_.correction_warpgroup) emit_correction(c, w, static_cast<int>(i)); }
      else if (role.rfind("softmax", 0) == 0) { if (d.q_stage < k.q_stage) emit_softmax(c, w, d.q_stage, static_cast<int>(i)); }
    }
  }
  // Every declared arriver must arrive (else the barrier never fills), on pipelines the knobs use.
  for (const auto& [name, d] : pipelines_) {
    const bool used = !used_full[name].empty() || !used_empty[name].empty();
    if (!used) continue;
    for (const auto& [side, decl, seen] : {std::tuple{"full", &d.full, &used_full[name]}, std::tuple{"empty", &d.empty, &used_empty[name]}}) {
      for (const auto& [role, per_warp] : decl->arrivers)
        if (!seen->count(role) && roles_.at(role).q_stage < k.q_stage)  // stage-bound roles past q_stage idle
          throw InputError(file_, decl->path + "/arrivers/" + role,
                           fmt::format("{} is listed as arriving on {}.{} but no {} warp arrives with these knobs; remove it and "
                                       "fix the count", role, name, side, role),
                           "pipeline_counts");
    }
  }
  return cta.take();
}

}  // namespace attnsim::fa4
