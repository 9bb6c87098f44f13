// FlashAttention-4's forward schedule on SM100 (family "fa4_sm100"): knobs as read
// from schedules/fa4_sm100.json, their resolution for a problem ("auto" follows FA4's
// own heuristics in flash_attn/cute/interface.py), resource checks, and
// the context the role files (load.cpp, mma.cpp, softmax.cpp, correction.cpp,
// epilogue.cpp) lower from.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lower/builder.hpp"
#include "lower/costs.hpp"
#include "lower/pipeline_decl.hpp"
#include "lower/rescale_model.hpp"
#include "lower/schedule.hpp"

namespace attnsim::fa4 {

/// A TMEM region: [start, start + columns), optionally aliasing another region.
struct TmemRegion {
  int start = 0, columns = 0;
  std::string alias_of;
};

/// What a warp of the FA4 kernel does (flash_fwd_sm100.py's warp roles): the softmax warpgroup
/// of one Q stage, the correction warpgroup, the MMA warp, the epilogue (TMA store) warp, the load
/// (TMA) warp, an idle warp.
enum class Role { Softmax, Correction, Mma, Epilogue, Load, Empty };

/// A role name of the schedule's "warps" object, parsed once: "softmax1" is {Softmax, 1}; the
/// other roles have stage -1.
struct RoleId {
  Role role = Role::Empty;
  int stage = -1;  ///< Q stage of a softmax warpgroup
};

/// Parses "softmax<digit>", "correction", "mma", "epilogue", "load", "empty"; nullopt otherwise.
std::optional<RoleId> parse_role(const std::string& name);

/// The pipelines of the FA4 kernel (pipelines.cpp): stages, scope, and which roles arrive on
/// each side, how often per warp, with the correction warpgroup on or off; every count is the
/// arrivers' sum. `roles` / `ids`: the schedule's roles, by name.
std::map<std::string, PipelineDecl> derived_pipelines(const std::map<std::string, RoleDecl>& roles,
                                                      const std::map<std::string, RoleId>& ids,
                                                      bool correction_warpgroup);

/// Knobs as written (before "auto" is resolved).
struct Knobs {
  int m_block = 128, n_block = 128, q_stage = 2;
  std::optional<int> kv_stage;                          ///< unset = auto
  std::optional<int> cta_group;                         ///< unset = auto
  std::optional<std::map<std::string, int>> registers;  ///< softmax/correction/other; unset = auto
  bool split_p = true;
  int split_p_columns = 96;
  std::optional<std::array<int, 3>> ex2_emu;  ///< freq, res, start_frg; unset = auto; freq 0 = off
  bool conditional_rescale = true;
  double rescale_threshold_log2 = 8.0;
  bool correction_warpgroup = true;
  bool exp_order_barrier = false;
  std::string tile_scheduler = "auto";  ///< auto | static_persistent | lpt
};

/// Knobs resolved for one problem and GPU.
struct Resolved {
  int m_block, n_block, q_stage, kv_stage, cta_group, head_dim, head_dim_v;
  bool kv_stage_auto, cta_group_auto, registers_auto, ex2_auto;
  int reg_softmax, reg_correction, reg_other;
  int split_columns;  ///< PV waits for the last split after this many P columns (n_block = no split)
  int emu_freq, emu_res, emu_start_frg;
  std::vector<double> emu_share_per_fragment;  ///< fraction of each 32-column fragment's exp2 on the FMA pipe
  double emu_share = 0;                        ///< over the whole row
  bool persistent;
  long long smem_bytes;
};

/// The fa4_sm100 family: parses the JSON, resolves "auto" knobs, checks resources, plans the
/// grid and lowers one CTA's tiles into per-warp programs. Throws InputError on bad input.
class Fa4Schedule : public Schedule {
 public:
  explicit Fa4Schedule(JsonReader& r);
  void check(const Hardware& hw, const Problem& problem) const override;
  GridPlan plan_grid(const Hardware& hw, const Problem& problem, long long max_tiles) const override;
  CtaProgram lower(const Hardware& hw, const Problem& problem, const std::vector<TileWork>& tiles) const override;
  std::vector<std::string> knob_lines(const Hardware& hw, const Problem& problem) const override;
  std::vector<std::string> roles() const override;
  std::map<std::string, double> resources(const Hardware& hw, const Problem& problem) const override;
  /// The kernels/sm100 kernel for `problem`: the resolved knobs and TMEM map as template
  /// parameters, or why there is none (cta_group 2 below head_dim 128, head_dim other than 64/128, warp roles other
  /// than FA4's fixed layout, ...).
  KernelChoice real_kernel(const Hardware& hw, const Problem& problem) const override;

  Resolved resolve(const Hardware& hw, const Problem& problem) const;
  const Knobs& knobs() const { return knobs_; }

 private:
  Knobs knobs_;
  std::map<std::string, RoleDecl> roles_;  ///< role name -> its warps (for the pipeline declarations)
  std::map<std::string, RoleId> role_ids_;  ///< role name -> what it does
  std::map<std::string, PipelineDecl> pipelines_;
  std::map<std::string, int> named_threads_;
  std::map<std::string, TmemRegion> tmem_;
  std::string knob_path_;  // for errors about knobs
  CostModel costs_;
};

/// Everything the role files need to emit their programs.
struct Context {
  const Hardware& hw;
  const Problem& problem;
  const Resolved& k;
  const Knobs& knobs;
  const CostModel& costs;
  const std::vector<TileWork>& tiles;
  RescaleMask rescale;                                            ///< per softmax warp (0..3) and KV iteration
  Pipe &q, &kv, &s_p_o, &p_lastsplit, &o_acc, &sm_stats, &o_epi;  ///< entries of the CTA's pipe map
  std::vector<std::vector<int>> stats_bar;  ///< [q_stage][warp in group]: softmax -> correction named barriers
  std::vector<int> order_bar;               ///< [q_stage]: exp-ordering named barriers (empty when off)
  int stats_threads = 64, order_threads = 256;
  const std::map<std::string, RoleDecl>& roles;

  /// Whether softmax warp `w` (0..3) of the tile rescales O at KV iteration `i`.
  bool rescale_at(int w, int i) const;
  /// Role name of the softmax warpgroup serving Q stage s ("softmax0").
  std::string softmax_role(int s) const { return "softmax" + std::to_string(s); }
};

// Role emitters, one file each: append the program of one warp of the role for every tile
// in c.tiles. They throw InputError when the pipeline declarations do not list them as arrivers.
/// TMA loads of Q, K, V (load.cpp).
void emit_load(Context& c, WarpBuilder& w);
/// tcgen05.mma issue and commits (mma.cpp).
void emit_mma(Context& c, WarpBuilder& w);
/// Softmax warp `warp_in_group` (0..3) of Q stage `stage` (softmax.cpp).
void emit_softmax(Context& c, WarpBuilder& w, int stage, int warp_in_group);
/// Correction warp `warp_in_group` (0..3), serving every Q stage (correction.cpp).
void emit_correction(Context& c, WarpBuilder& w, int warp_in_group);
/// TMA store of finished O stages (epilogue.cpp).
void emit_epilogue(Context& c, WarpBuilder& w);

/// One PipelineState per Q stage, for roles that use stage s of a q_stage-deep pipeline only
/// (through PipelineIds::stage(s)): each advances one phase per pass over its stage.
std::vector<PipelineState> per_stage(int q_stage, const PipelineState& start);

/// Final O of Q stage `s` by a warp of `role` (correction.cpp; the softmax warps when there is no
/// correction warpgroup): wait for the last PV (pipeline_o_acc), acquire an SMEM O stage
/// (pipeline_o_epi), scale by 1/row_sum, convert and store it, hand it to the epilogue, release
/// the accumulator. `acc` and `epi` are the warp's states in stage s of those pipelines.
void emit_final_o(Context& c, WarpBuilder& w, const std::string& role, int s, PipelineState& acc, PipelineState& epi);

}  // namespace attnsim::fa4
