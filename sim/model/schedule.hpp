// A schedule: the JSON description of warp roles, pipelines, TMEM layout and knobs
// (schedules/*.json). The "family" field picks the implementation that understands
// the knobs and lowers them into per-warp programs (Ramulator-style: by name from
// config). Families: "fa4_sm100" (sim/lower/fa4), "explicit" (programs written
// out in the JSON; used for hand-computable micro-schedules).
#pragma once
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/program.hpp"
#include "model/hardware.hpp"
#include "model/problem.hpp"

namespace attnsim {

/// One work tile of a CTA: a block of query rows of one (batch, head) and its KV range.
struct TileWork {
  int m_block = 0;        ///< index of the CTA tile along seqlen_q
  int rows = 0;           ///< valid query rows per Q stage (tails are masked)
  int n_blocks = 0;       ///< KV blocks processed
  int masked_blocks = 0;  ///< of those, blocks that need causal / seqlen masking
  bool operator==(const TileWork&) const = default;
};

/// How CTAs cover the problem.
struct GridPlan {
  /// Single: one CTA. StaticPersistent: CTAs loop over tiles. LptSingleTile: one CTA per tile,
  /// longest first. PerHead: one CTA per (batch, head) walking its Q tiles (FA2 style).
  enum class Mode { Single, StaticPersistent, LptSingleTile, PerHead } mode = Mode::Single;
  int cta_group = 1;      ///< CTAs per cluster (2 for 2-CTA MMA)
  int resident_ctas = 1;  ///< CTAs running at once on the whole GPU
  int ctas_per_sm = 1;    ///< CTAs sharing one SM at once (simulated together, alike)
  /// CTAs of the first wave per distinct (batch, KV head): how many CTAs stream each K/V tile at
  /// about the same time, which sets how much of their TMA traffic L2 serves (engine).
  double kv_sharing = 1;
  /// Tiles of the whole problem. When they are more than the planner was allowed (max_tiles),
  /// the plan holds only this count: cta_tiles stays empty and `over_budget` is set.
  long long tiles = 1;
  bool over_budget = false;
  /// StaticPersistent: the tile list of each resident CTA (cluster leader), in order.
  /// LptSingleTile: every tile, in launch order (longest first). PerHead: each CTA's tile walk,
  /// in launch order. Single: one entry.
  std::vector<std::vector<TileWork>> cta_tiles;
};

/// A parsed schedule bound to its family implementation.
class Schedule {
 public:
  virtual ~Schedule() = default;
  const std::string& name() const { return name_; }
  const std::string& family() const { return family_; }
  const std::string& arch() const { return arch_; }
  const std::string& file() const { return file_; }
  const std::string& description() const { return description_; }

  /// Rejects the schedule on `hw` for `problem` with InputError naming the file, the JSON path
  /// and the reason: wrong architecture, TMEM / SMEM / register overflow, MMA shape rules,
  /// pipeline arrive counts that do not match the warps that arrive.
  virtual void check(const Hardware& hw, const Problem& problem) const = 0;
  /// Places the problem's tiles on CTAs (tile scheduler). A problem of more than `max_tiles` tiles
  /// is not placed: the plan holds only its tile count, with over_budget set.
  virtual GridPlan plan_grid(const Hardware& hw, const Problem& problem, long long max_tiles) const = 0;
  /// The programs of one CTA that processes `tiles` in order.
  virtual CtaProgram lower(const Hardware& hw, const Problem& problem, const std::vector<TileWork>& tiles) const = 0;
  /// One line per resolved knob ("q_stage 2", "kv_stage 6 (auto)"), for the summary.
  virtual std::vector<std::string> knob_lines(const Hardware& hw, const Problem& problem) const = 0;
  /// Problem-independent FLOP of the work (for TFLOPS); families without a problem return 0.
  virtual double flops(const Problem& problem) const { return problem.flops(); }
  /// Role names in display order.
  virtual std::vector<std::string> roles() const = 0;
  /// Resources one CTA uses for `problem` (for sweep constraints and Pareto fronts):
  /// "smem_bytes", "tmem_columns", "registers" (32-bit, whole CTA), "warps". Empty when unknown.
  virtual std::map<std::string, double> resources(const Hardware& hw, const Problem& problem) const { return {}; }

 protected:
  /// Reads the fields every family has: name, family, arch, description, source.
  void read_header(class JsonReader& r);
  std::string name_, family_, arch_, file_, description_;
};

/// Loads a schedule file, applies a named variant (the file's "variants" object: name ->
/// {"description", "set": {"/json/pointer": value}}) and then "--set /path=value" overrides,
/// and parses it with its family. Throws InputError (file, JSON path, expectation).
std::unique_ptr<Schedule> load_schedule(const std::string& file, const std::vector<std::string>& overrides = {},
                                        const std::string& variant = "");
/// load_schedule on the text of a schedule file (`file` names it in errors).
std::unique_ptr<Schedule> schedule_from_text(const std::string& text, const std::string& file,
                                             const std::vector<std::string>& overrides = {},
                                             const std::string& variant = "");
/// A variant a schedule file declares: one design choice changed, and the question it answers.
struct VariantInfo {
  std::string name, description, question;
};
/// The variants a schedule file declares, in file order.
std::vector<VariantInfo> schedule_variants(const std::string& file);
/// The same from the text of a schedule file.
std::vector<VariantInfo> schedule_variants_from_text(const std::string& text, const std::string& file);
/// The schedule families this build understands (the values of a schedule's "family"), sorted.
std::vector<std::string> schedule_families();
/// Same, from an in-memory document (`file` names it in errors).
std::unique_ptr<Schedule> parse_schedule(const nlohmann::json& doc, const std::string& file);

}  // namespace attnsim
