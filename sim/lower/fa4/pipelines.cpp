// The fa4_sm100 family's pipelines, as FA4's kernel (flash_fwd_sm100.py) wires them: which warp
// roles arrive on each mbarrier side and how often per warp. Derived from the roles and knobs,
// not declared: a count can hold only one value (the arrivers' sum), and the arrivers follow
// from what each role does. The lowering checks that its warps arrive exactly as listed here
// (Pipe::arrive_count, check_arrivers_used).
#include <fmt/format.h>

#include "lower/fa4/fa4_schedule.hpp"

namespace attnsim::fa4 {

std::map<std::string, PipelineDecl> derived_pipelines(const std::map<std::string, RoleDecl>& roles,
                                                      const std::map<std::string, RoleId>& ids,
                                                      bool correction_warpgroup) {
  std::map<std::string, int> softmax;  // every softmax warpgroup, one arrival per thread
  for (const auto& [name, id] : ids)
    if (id.role == Role::Softmax) softmax[name] = 32;
  auto with = [](std::map<std::string, int> a, const std::string& role, int per_warp) {
    a[role] = per_warp;
    return a;
  };
  // O's rescale, its final scaling and its hand-off to the epilogue: the correction warpgroup's
  // work, or the softmax warps' own when there is none.
  const std::map<std::string, int> o_owner = correction_warpgroup ? std::map<std::string, int>{{"correction", 32}} : softmax;
  const std::map<std::string, int> p_and_o = correction_warpgroup ? with(softmax, "correction", 32) : softmax;
  std::map<std::string, int> lastsplit;  // lane 0 of each softmax warp
  for (const auto& [name, n] : softmax) lastsplit[name] = 1;

  struct Spec {
    const char* name;
    const char* stages;
    bool cluster;
    std::map<std::string, int> full, empty;  // empty map: side unused
  };
  const std::vector<Spec> specs = {
      // TMA: the load warp's arrive.expect_tx; the MMA's tcgen05.commit frees the buffer.
      {"pipeline_q", "q_stage", false, {{"load", 1}}, {{"mma", 1}}},
      {"pipeline_kv", "kv_stage", false, {{"load", 1}}, {{"mma", 1}}},
      // S ready (MMA commit) / first split of P stored and O rescaled (gates the PV).
      {"pipeline_s_p_o", "q_stage", true, {{"mma", 1}}, p_and_o},
      // Last split of P stored / read by the PV.
      {"pipeline_p_lastsplit", "q_stage", true, lastsplit, {{"mma", 1}}},
      // Final O accumulated (commit after the tile's last PV) / read.
      {"pipeline_o_acc", "q_stage", true, {{"mma", 1}}, o_owner},
      // Only the empty side: correction has read the row stats (they arrive on named barriers).
      {"pipeline_sm_stats", "q_stage", false, {}, {{"correction", 32}}},
      // O stage in SMEM ready for the TMA store / stored.
      {"pipeline_o_epi", "q_stage", false, o_owner, {{"epilogue", 32}}},
  };
  std::map<std::string, PipelineDecl> out;
  for (const Spec& s : specs) {
    PipelineDecl d;
    d.stages = s.stages;
    d.cluster = s.cluster;
    d.path = fmt::format("(sim/lower/fa4/pipelines.cpp) {}", s.name);
    auto side = [&](const std::map<std::string, int>& arrivers, const char* which) {
      SideDecl sd;
      sd.present = !arrivers.empty();
      for (const auto& [role, n] : arrivers)
        if (roles.count(role)) sd.arrivers[role] = n;  // a role the schedule does not have never arrives
      sd.path = d.path + "/" + which;
      return sd;
    };
    d.full = side(s.full, "full");
    d.empty = side(s.empty, "empty");
    out[s.name] = d;
  }
  return out;
}

}  // namespace attnsim::fa4
