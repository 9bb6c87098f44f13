// FlashAttention-3's forward schedule on SM90 (family "fa3_sm90"): a producer warpgroup
// (one warp issues the TMA loads of Q, K, V) and consumer warpgroups of 64 query rows each
// (wgmma with the accumulators in registers, softmax in registers). Knobs: tile ("auto": per
// head_dim as FA3), kv_stage, pingpong (named barriers order the consumer warpgroups'
// GEMMs), intra-warpgroup overlap (softmax of block j under the PV wgmma of block j+1),
// warp specialization (off: consumer warps issue the loads themselves), registers. The warp
// roles, pipelines (arrival counts), named barriers and SMEM layout are the kernel's
// (kernels/sm90/structure.h), not declared in the JSON.
// Facts: the FA3 paper (arXiv 2407.08608) sections 3.1-3.2 and Dao-AILab/flash-attention hopper/.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lower/costs.hpp"
#include "lower/pipeline_decl.hpp"
#include "lower/rescale_model.hpp"
#include "lower/schedule.hpp"

namespace attnsim::fa3 {

/// Longest seqlen_k for which the auto tile takes the narrower of its two K/V block widths (hd64:
/// 128 instead of 176, hd256: 64 instead of 80). Our reading: with few blocks per tile, the tile's
/// first QK and last PV (which nothing overlaps, and which grow with the block's width) and the
/// last block's padding weigh more than the wider blocks' fewer, more efficient steps. Measured on
/// an H100 (kernels/sm90/README.md, "Short sequences"): at seqlen 512 narrower is 2-4% faster; at
/// 1k 1.5-2.6% slower (hd256 causal: 0.5% faster).
inline constexpr int kShortSeqlenK = 512;
/// Padding that makes the narrower K/V blocks the auto tile's choice at any seqlen_k: the wider
/// blocks would read this many times the keys the narrower ones read, or more (the last block's
/// keys past seqlen_k are loaded, multiplied and masked all the same). H100: hd64 seqlen 768,
/// 880 keys in 176-wide blocks against 768 in 128-wide ones (1.146x): narrower 7.4% faster.
inline constexpr double kMaxPaddedKeysRatio = 1.1;

/// Whether the auto tile takes K/V blocks `narrow` wide rather than `wide` for seqlen_k keys
/// (kShortSeqlenK, kMaxPaddedKeysRatio).
inline bool narrower_kv_blocks(int seqlen_k, int wide, int narrow) {
  const auto padded = [&](int n) { return static_cast<double>((seqlen_k + n - 1) / n) * n; };
  return seqlen_k <= kShortSeqlenK || padded(wide) >= kMaxPaddedKeysRatio * padded(narrow);
}

/// Causal head_dim 64 problems of at most this many keys keep 128-row tiles: the 192-row ones
/// (three consumer warpgroups) measured 11-13% slower at seqlen 512-1k causal and 2.4-7.7% faster
/// from 1.5k up (H200, 2026-11-28, configs/validation/h200/fa3_hd64_three_warpgroups).
inline constexpr int kHd64CausalShortSeqlenK = 1024;

/// Knobs as written.
struct Knobs {
  std::optional<std::pair<int, int>> tile;  ///< m_block, n_block; unset = auto
  int kv_stage = 2;
  std::optional<bool> pingpong;  ///< unset = auto (2 consumer warpgroups and head_dim <= 128)
  bool overlap = true;           ///< intra-warpgroup overlap of softmax and PV
  bool warp_specialization = true;
  std::optional<std::pair<int, int>> registers;  ///< consumer, producer; unset = auto
  std::string tile_scheduler = "auto";           ///< auto | static_persistent | lpt | dynamic_lpt
  std::string o_staging = "auto";  ///< auto | q_buffer | own_buffer | v_ring (where O waits for its TMA store)
  int l2_section_mib = 8;                        ///< L2 budget of the longest-first orders' head sections (0: none)
  /// "rescale": {"conditional", "threshold_log2"} (optional; absent: every block rescales O, as
  /// FA3): FA4's conditional rescale, which keeps a warp's running max unless a row's max grew by
  /// more than the threshold (log2 units), and skips that block's O rescale. Unset = "auto".
  std::optional<bool> conditional_rescale = false;
  double rescale_threshold_log2 = 8.0;
  /// "exp2_emulation": "off" (absent: off, as FA3) or {"freq", "res"}: of every `freq` score
  /// elements a consumer thread holds, the last `res` take FA4's polynomial exp2 on the FMA and
  /// ALU pipes instead of MUFU.EX2 (kernels/common/softmax_math.h). freq 0: off.
  int exp2_emu_freq = 0, exp2_emu_res = 0;
  /// "trim_last_block" (optional; absent: false, as FA3): a consumer warpgroup whose keys end in
  /// the first half of its tile's last KV block (the causal diagonal or the seqlen_k tail;
  /// sm90::last_block_half) runs that block's exponentials on its first n_block / 2 keys (the
  /// GEMMs, mask and row max stay whole; P of the rest 0), and the two warpgroups swap rows in
  /// every other tile. Unset = "auto".
  std::optional<bool> trim_last_block = false;
};

/// Knobs resolved for a problem.
struct Resolved {
  int m_block, n_block, consumers, kv_stage, head_dim, head_dim_v;
  bool pingpong, overlap, warp_specialization, tile_auto;
  TileScheduler scheduler;  ///< tile_scheduler resolved (auto: static persistent; causal: dynamic LPT with an own O
                            ///< buffer, else LPT single-tile)
  bool own_o_buffer;        ///< o_staging resolved (auto: own buffer when it fits in SMEM)
  bool o_in_v_ring;         ///< o_staging resolved: O staged in the V ring (sm90::KernelKnobs::o_in_v_ring)
  int l2_section_mib;       ///< as written
  bool conditional_rescale;       ///< resolved (auto: head_dim >= 256)
  double rescale_threshold_log2;  ///< as written (log2 units)
  int exp2_emu_freq, exp2_emu_res;  ///< as written (0, 0: every exp2 on the MUFU)
  double exp2_emu_share;            ///< fraction of a block's score exp2s that are emulated
  /// trim_last_block resolved (auto: on causal problems at head_dim 64; never where n_block / 2
  /// is not a whole number of 16-key k-steps, n_block % 32 != 0, nor with other than two consumer
  /// warpgroups); sm90::last_block_half says which tiles it trims.
  bool trim_last_block;
  long long l2_section;     ///< (batch, head) pairs per L2 section for this problem (0: one section)
  int reg_consumer, reg_producer;
  long long smem_bytes;
  int registers_needed;  ///< live registers a consumer thread needs (accumulators + S/P + bookkeeping)
  /// Where an overlapped KV step waits for its PV GEMM: after the row max where the kernel's SASS
  /// runs most of the max before that wait (the plain kernel's, at hd64/hd128 with O in its own
  /// buffer), else before the softmax as the source has it (and every traced kernel's recorded steps).
  bool pv_wait_under_max;
  std::map<std::string, RoleDecl> pipeline_roles;  ///< "load" and "consumer" warps, for pipeline counts
  std::map<std::string, PipelineDecl> pipelines;   ///< pipeline_q/k/v as structure.h defines them
};

/// The fa3_sm90 family: parses the JSON, resolves "auto" knobs per head_dim, checks SMEM and
/// registers (setmaxnreg budgets), plans the grid and lowers the load and consumer warps.
/// Throws InputError on bad input.
class Fa3Schedule : public Schedule {
 public:
  explicit Fa3Schedule(JsonReader& r);
  void check(const Hardware& hw, const Problem& problem) const override;
  GridPlan plan_grid(const Hardware& hw, const Problem& problem, long long max_tiles) const override;
  /// Per tile of the plan, its KV blocks times a block's QK and PV (2 m_block n_block (head_dim +
  /// head_dim_v)); flops(problem) for a plan that holds no tiles (over budget).
  double executed_mma_flops(const Hardware& hw, const Problem& problem, const GridPlan& plan) const override;
  CtaProgram lower(const Hardware& hw, const Problem& problem, const std::vector<TileWork>& tiles) const override;
  std::vector<std::string> knob_lines(const Hardware& hw, const Problem& problem) const override;
  std::vector<std::string> roles() const override;
  std::map<std::string, double> resources(const Hardware& hw, const Problem& problem) const override;
  KernelChoice real_kernel(const Hardware& hw, const Problem& problem) const override;
  /// The traced kernel, where its code differs from the plain kernel's in what the model sees:
  /// - its load warp records its spans (warp specialization with the cost file's "load_warp"
  ///   figures): per KV block it runs the code around them, and a static grid's recorded tile is
  ///   entered from a plain one (CostModel::load_warp: block_gaps, recorded_entry_extra);
  /// - in every traced instance's recorded KV steps the PV's wgmma.wait_group precedes the whole
  ///   row max (the clock reads around the spans keep it there; `attnsim sass-costs`, "pv wait
  ///   (traced instances)", cuobjdump -sass on an H200, 2026-11-29), while ptxas sinks it below
  ///   most of the max in the plain hd64/hd128 instances with O in its own buffer
  ///   (CostModel::max_before_pv_wait).
  /// nullptr where neither applies.
  std::unique_ptr<Schedule> traced_twin(const Hardware& hw, const Problem& problem) const override;
  Resolved resolve(const Hardware& hw, const Problem& problem) const;

 private:
  Knobs knobs_;
  CostModel costs_;
  bool traced_ = false;  ///< this is a traced twin: lowered as the instrumented kernel runs
};

/// What the role emitters need.
struct Context {
  const Hardware& hw;
  const Problem& problem;
  const Resolved& k;
  const CostModel& costs;
  const std::vector<TileWork>& tiles;
  Pipe &q, &k_pipe, &v_pipe;
  std::vector<int> pingpong_bar;  ///< [consumer warpgroup]: its turn to issue GEMMs (empty when off)
  std::vector<int> epilogue_bar;  ///< [consumer warpgroup]: O staged in SMEM by all 4 warps
  /// [consumer warpgroup]: it has staged a tile's O, for the next warpgroup to stage its own
  /// (sm90::o_staged_barriers: O in the V ring without pingpong; empty otherwise).
  std::vector<int> o_staged_bar;
  /// Conditional rescale: which (consumer warp, KV iteration) steps rescale O (warps numbered
  /// 4 * group + warp in group, 16 rows each); unused when every block rescales.
  RescaleMask rescale;
  int barrier_o = -1;  ///< O in the V ring: every warpgroup's store of O has read its V stage
  bool traced = false;  ///< lowering the traced kernel (Fa3Schedule::traced_twin)
  /// Whether consumer warp `warp` (4 * group + warp in group) rescales O at KV iteration `it`
  /// (0 = the tile's first block, which has nothing to rescale).
  bool rescale_at(int warp, int it) const { return it > 0 && (!k.conditional_rescale || rescale.at(warp, it)); }
};

/// The load warp's measured costs for instance `k` (CostModel::load_warp, cycles); zeros without
/// warp specialization, where the loader is a consumer warp whose code no benchmark timed (load.cpp).
LoadWarpCost load_warp_cost(const CostModel& costs, const Resolved& k);
/// The load warp's TMA loads (load.cpp).
void emit_load(Context& c, WarpBuilder& w);
/// One TMA load into the stage `s` of `p` once it is free (load.cpp); advances `s`.
void load_stage(Context& c, WarpBuilder& w, Pipe& p, PipelineState& s, int name, double bytes);
/// Warp `warp_in_group` of consumer warpgroup `group` (consumer.cpp). With warp specialization
/// off, warp 0 of group 0 also issues the loads.
void emit_consumer(Context& c, WarpBuilder& w, int group, int warp_in_group);

}  // namespace attnsim::fa3
