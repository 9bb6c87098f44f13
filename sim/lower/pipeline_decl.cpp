#include "lower/pipeline_decl.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attnsim {

int arrivals_at_stage(const PipelineDecl& d, const SideDecl& side, int s, const std::map<std::string, RoleDecl>& roles,
                      std::vector<std::string>* terms) {
  int sum = 0;
  for (const auto& [role, per_warp] : side.arrivers) {
    const RoleDecl& rd = roles.at(role);
    if (rd.q_stage >= 0 && d.stages == "q_stage" && rd.q_stage != s) continue;
    sum += static_cast<int>(rd.warps.size()) * per_warp;
    if (terms)
      terms->push_back(
          fmt::format("{} {} warp{} x {}", role, rd.warps.size(), rd.warps.size() > 1 ? "s" : "", per_warp));
  }
  return sum;
}

int pipeline_stages(const PipelineDecl& d, const StageKnobs& knobs) {
  auto it = knobs.find(d.stages);
  return it != knobs.end() ? it->second : std::stoi(d.stages);  // families give knob names or integers only
}

int Pipe::arrive_count(const std::string& role, bool full, bool leader_only) {
  const SideDecl& side = full ? decl->full : decl->empty;
  auto it = side.arrivers.find(role);
  if (!side.present || it == side.arrivers.end())
    throw InputError(*file, (side.present ? side.path : decl->path + (full ? "/full" : "/empty")) + "/arrivers",
                     fmt::format("{} warps arrive on {}.{} with these knobs, but the pipeline definition does not list them",
                                 role, ids.name, full ? "full" : "empty"),
                     "pipeline_counts");
  (full ? used_full : used_empty)[role] = true;
  // The peer CTA of a 2-CTA cluster runs the same program at the same time: its arrivals on a
  // cluster-scoped barrier (which lives in the leader) are mirrored by ours. A leader-only warp
  // multicasts its commit, which counts once.
  return it->second * (decl->cluster && !leader_only ? cta_group : 1);
}

namespace {
Pipe make_pipe(CtaBuilder& cta, const std::string& name, int stages, const PipelineDecl& decl,
               const std::map<std::string, RoleDecl>& roles, int cta_group, const std::string& file) {
  auto expected = [&](const SideDecl& s) {
    if (!s.present) return 1;
    // The declared (or derived) count is per CTA; cluster scope adds the peer's arrivals,
    // leader-only roles excepted.
    const int per_cta = s.count ? *s.count : arrivals_at_stage(decl, s, 0, roles);
    int leader = 0;
    for (const auto& [role, per_warp] : s.arrivers)
      if (roles.at(role).leader_only) leader += static_cast<int>(roles.at(role).warps.size()) * per_warp;
    return (per_cta - leader) * (decl.cluster ? cta_group : 1) + leader;
  };
  Pipe p;
  p.ids = cta.pipeline(name, stages, expected(decl.full), expected(decl.empty));
  p.decl = &decl;
  p.roles = &roles;
  p.cta_group = cta_group;
  p.file = &file;
  return p;
}
}  // namespace

std::map<std::string, Pipe> make_pipes(CtaBuilder& cta, const std::map<std::string, PipelineDecl>& pipelines,
                                       const StageKnobs& knobs, const std::map<std::string, RoleDecl>& roles,
                                       int cta_group, const std::string& file) {
  std::map<std::string, Pipe> pipes;
  for (const auto& [name, d] : pipelines)
    pipes.emplace(name, make_pipe(cta, name, pipeline_stages(d, knobs), d, roles, cta_group, file));
  return pipes;
}

void check_arrivers_used(const std::map<std::string, Pipe>& pipes,
                         const std::function<bool(const std::string&)>& idle) {
  for (const auto& [name, p] : pipes) {
    if (p.used_full.empty() && p.used_empty.empty()) continue;  // the knobs leave this pipeline unused
    for (const auto& [side, decl, seen] :
         {std::tuple{"full", &p.decl->full, &p.used_full}, std::tuple{"empty", &p.decl->empty, &p.used_empty}})
      for (const auto& [role, per_warp] : decl->arrivers)
        if (!seen->count(role) && !idle(role))
          throw InputError(
              *p.file, decl->path + "/arrivers/" + role,
              fmt::format("{} is listed as arriving on {}.{} but no {} warp arrives with these knobs; remove "
                          "it and fix the count",
                          role, name, side, role),
              "pipeline_counts");
  }
}

}  // namespace attnsim
