// Pipelines as a schedule family defines them: which roles arrive on each side (full / empty),
// how many arrivals each warp makes, and the count per phase (the arrivers' sum unless given).
// The families derive them from their fixed structure (kernels/sm90/structure.h for fa3_sm90,
// sim/lower/fa4/pipelines.cpp, sim/lower/blackflash); lowering takes every arrive count from
// them and checks that its warps arrive exactly as listed (arrive_count, check_arrivers_used).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lower/builder.hpp"
#include "model/json_reader.hpp"

namespace attnsim {

/// A role's warps. Roles bound to a Q stage (FA4's softmax0/1) carry it.
struct RoleDecl {
  std::vector<int> warps;
  int q_stage = -1;          ///< -1: serves every stage
  bool leader_only = false;  ///< runs in the leader CTA of a 2-CTA cluster only (FA4's MMA warp)
};

/// One side (full or empty) of a pipeline: which roles arrive, arrivals per warp, count per CTA.
struct SideDecl {
  bool present = false;
  std::map<std::string, int> arrivers;  ///< role -> arrive count per warp
  std::optional<int> count;             ///< arrivals per phase per CTA; unset: the arrivers' sum
  std::string path;                     ///< where it is defined, for errors
};

/// A pipeline (mbarrier ring) as a family defines it.
struct PipelineDecl {
  std::string stages;    ///< a knob name ("q_stage", "kv_stage") or an integer
  bool cluster = false;  ///< barriers live in the leader CTA and count both CTAs' arrivals
  SideDecl full, empty;
  std::string path;
};

/// Arrivals per phase at stage `s` from the declared arrivers (roles bound to another Q stage
/// skipped when the pipeline is staged by "q_stage"); `terms` receives "role N warps x k".
int arrivals_at_stage(const PipelineDecl& d, const SideDecl& side, int s, const std::map<std::string, RoleDecl>& roles,
                      std::vector<std::string>* terms = nullptr);

/// Values of the knobs a "stages" field may name ({"q_stage": 2, "kv_stage": 6}).
using StageKnobs = std::map<std::string, int>;

/// Stages of a pipeline: the named knob's value, or the integer written.
int pipeline_stages(const PipelineDecl& d, const StageKnobs& knobs);

/// A lowered pipeline: its barriers, its declaration, and which roles lowering made arrive.
struct Pipe {
  PipelineIds ids;
  const PipelineDecl* decl = nullptr;
  const std::map<std::string, RoleDecl>* roles = nullptr;
  int cta_group = 1;
  const std::string* file = nullptr;
  std::map<std::string, bool> used_full, used_empty;

  /// Arrive count for one warp of `role` on side full/empty, mirrored for the peer CTA on
  /// cluster-scoped barriers; throws InputError if the declaration does not list the role.
  int arrive_count(const std::string& role, bool full, bool leader_only);
};

/// Declares the barriers of every declared pipeline in `cta`, keyed by pipeline name.
std::map<std::string, Pipe> make_pipes(CtaBuilder& cta, const std::map<std::string, PipelineDecl>& pipelines,
                                       const StageKnobs& knobs, const std::map<std::string, RoleDecl>& roles,
                                       int cta_group, const std::string& file);

/// After lowering: every declared arriver of a used pipeline must have arrived (else the barrier
/// never fills). `idle` says which roles the knobs leave without work.
void check_arrivers_used(const std::map<std::string, Pipe>& pipes, const std::function<bool(const std::string&)>& idle);

}  // namespace attnsim
