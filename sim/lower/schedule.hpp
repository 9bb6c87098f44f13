// A schedule: the JSON description of warp roles, pipelines, TMEM layout and knobs
// (schedules/*.json). The "family" field picks the implementation that understands
// the knobs and lowers them into per-warp programs (Ramulator-style: by name from
// config; the registry is sim/lower/registry.cpp). Families: "fa3_sm90" (sim/lower/fa3),
// "fa4_sm100" (sim/lower/fa4), "fa2_sm80" (sim/lower/fa2), "blackflash"
// (sim/lower/blackflash), "explicit" (programs written out in the JSON; used for
// hand-computable micro-schedules).
#pragma once
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/launch_abi.h"  // TileScheduler
#include "core/program.hpp"
#include "model/hardware.hpp"
#include "model/problem.hpp"
#include "plan/grid_plan.hpp"
#include "sm90/kernel_knobs.h"

namespace attnsim {

/// The real kernel (kernels/) a schedule runs as on a GPU, for one problem: its compile-time
/// knobs, or why there is none.
struct KernelChoice {
  bool supported = false;
  std::string why_not;      ///< when !supported: what the kernels do not implement
  AnyKernelKnobs knobs;     ///< the kernel family and its template parameters
  TileScheduler scheduler = TileScheduler::Lpt;  ///< how the grid covers the tiles (the schedule's tile_scheduler)
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
  /// Tensor-core FLOP the kernel executes for `problem` placed as `plan`: whole tiles, so with the
  /// masked elements of the blocks a causal diagonal crosses and the padded rows and keys of the
  /// last tile and block (what draws power, model/clock_power.hpp). By default flops(problem).
  virtual double executed_mma_flops(const Hardware& hw, const Problem& problem, const GridPlan& plan) const {
    return flops(problem);
  }
  /// Role names in display order.
  virtual std::vector<std::string> roles() const = 0;
  /// Resources one CTA uses for `problem` (for sweep constraints and Pareto fronts):
  /// "smem_bytes", "tmem_columns", "registers" (32-bit, whole CTA), "warps". Empty when unknown.
  virtual std::map<std::string, double> resources(const Hardware& hw, const Problem& problem) const { return {}; }
  /// What the SM's clock runs under with this schedule (Hardware::clock_under): tensor-core work
  /// unless the family's GEMMs run on mma.sync or the CUDA cores.
  virtual Hardware::ClockLoad clock_load() const { return Hardware::ClockLoad::tensor_core; }
  /// The real kernel this schedule resolves to for `problem` on `hw` (the knobs resolved exactly
  /// as for the prediction). Families without a kernel say so in why_not.
  virtual KernelChoice real_kernel(const Hardware& hw, const Problem& problem) const;
  /// The schedule as its instrumented twin (the kernel `run --trace` and `validate` record per-op
  /// spans with) runs it on `problem`, where that kernel's code differs from the plain one's in a
  /// way the model sees; nullptr where both run the same program. The per-op spans a prediction
  /// is compared with come from that kernel, so `validate` and `fidelity` predict them from it.
  virtual std::unique_ptr<Schedule> traced_twin(const Hardware& hw, const Problem& problem) const { return nullptr; }

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
/// `kernels_from_sweep` (optional "kernels_from_sweep" in the file): a sweep file whose build
/// (-DATTNSIM_KERNEL_SWEEPS) compiles the variant's kernels; the default build compiles none for
/// it (attnsim_kernelgen), so that a variant modelled everywhere costs CI no nvcc time.
struct VariantInfo {
  std::string name, description, question, kernels_from_sweep;
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
