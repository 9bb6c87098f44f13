// Sweeps over schedule knobs (configs/sweeps/*.json): a base schedule, a GPU, a set of
// problems, axes (JSON pointers into the schedule and the values to try), constraints,
// an objective (and optionally a second one for a Pareto front) and a search strategy.
// Every candidate is checked for feasibility (SMEM, TMEM, registers, MMA shapes,
// pipeline counts) before it is simulated; rejections are counted by reason.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "driver/simulate.hpp"
#include "model/hardware.hpp"
#include "model/problem.hpp"

namespace attnsim {

/// One knob and the values to try.
struct Axis {
  std::string pointer;  ///< JSON pointer into the schedule ("/kv_stage")
  std::vector<nlohmann::json> values;
};

/// "when <pointer> is <value>, <pointer> must be one of [...]": prunes redundant combinations
/// (e.g. split_p/first_columns does not matter when split_p is off). Pruned candidates are not
/// evaluated and not counted as rejected.
struct WhenConstraint {
  std::string when_pointer;
  nlohmann::json when_value;
  std::string pointer;
  std::vector<nlohmann::json> allowed;
};

/// "<resource> <= max" on every problem (resources: smem_bytes, tmem_columns, registers, warps).
struct ResourceConstraint {
  std::string resource;
  double max = 0;
};

/// How candidates are chosen.
struct SearchSpec {
  std::string strategy = "grid";  ///< grid | local_search
  int restarts = 8;               ///< local_search: random starting points
  uint64_t seed = 1;              ///< local_search: RNG seed (deterministic)
  double budget = 0.1;            ///< local_search: max evaluations as a fraction of the grid
};

/// A parsed sweep file.
struct SweepSpec {
  std::string name, file, description;
  std::string schedule_file;
  nlohmann::json base;  ///< the schedule document
  Hardware hw;
  std::vector<Problem> problems;
  std::vector<std::string> problem_labels;
  std::vector<Axis> axes;
  std::vector<WhenConstraint> when;
  std::vector<ResourceConstraint> limits;
  std::string objective = "geomean_tflops";  ///< geomean_tflops | min_tflops
  std::string secondary;                     ///< "" or a resource to minimise (Pareto front)
  SearchSpec search;
  /// Budget of each prediction (not read from the file: explore's --max-events and --max-tiles).
  uint64_t max_events = PredictOptions{}.max_events;
  long long max_tiles = PredictOptions{}.max_tiles;
};

/// Reads a sweep file; throws InputError naming the file and JSON path.
SweepSpec load_sweep(const std::string& file);
/// Checks a parsed sweep (`file` names it in errors; its schedule and hardware are read from
/// disk); throws InputError.
SweepSpec sweep_from_json(const nlohmann::json& doc, const std::string& file);

/// The result of evaluating one candidate.
struct Evaluation {
  size_t index = 0;  ///< position in the grid (mixed radix over the axes, first axis slowest)
  bool feasible = false;
  std::string reason;           ///< rejection reason ("smem", "tmem", "registers", "deadlock", ...); "" if feasible
  std::string detail;           ///< the full rejection message
  double objective = 0;         ///< TFLOPS (geometric mean or minimum over the problems)
  double secondary = 0;         ///< the secondary resource (max over problems), when requested
  std::vector<double> tflops;   ///< per problem
  std::vector<double> time_us;  ///< per problem
  std::vector<std::string> bottleneck;  ///< per problem
};

/// Evaluates candidates of a sweep. Thread-safe: evaluate() may run on many threads.
class SweepEvaluator {
 public:
  explicit SweepEvaluator(SweepSpec spec);
  const SweepSpec& spec() const { return spec_; }
  /// Candidates of the grid (the product of the axis sizes; SIZE_MAX when that overflows).
  size_t grid_size() const { return grid_size_; }
  /// Axis value indices of grid candidate `index`.
  std::vector<int> decode(size_t index) const;
  size_t encode(const std::vector<int>& choice) const;
  /// False when a WhenConstraint prunes the candidate.
  bool admitted(size_t index) const;
  /// The schedule document of candidate `index` (base with the axis values applied).
  nlohmann::json document(size_t index) const;
  /// Feasibility checks, then an extrapolated prediction per problem. Never throws for bad
  /// candidates: they come back infeasible with a reason.
  Evaluation evaluate(size_t index) const;

 private:
  SweepSpec spec_;
  size_t grid_size_ = 1;
};

/// Progress callback: (finished, total).
using ProgressFn = std::function<void(size_t, size_t)>;

/// Evaluates `indices` on `threads` threads. Stops taking new candidates once `*stop` is set
/// (Ctrl-C); the evaluations that finished are returned, sorted by index.
std::vector<Evaluation> evaluate_all(const SweepEvaluator& ev, const std::vector<size_t>& indices, int threads,
                                     const std::atomic<bool>* stop, const ProgressFn& progress);

/// Every admitted grid candidate.
std::vector<size_t> grid_candidates(const SweepEvaluator& ev);

/// Random restarts with coordinate-wise hill climbing over the axes, within
/// spec.search.budget x grid size evaluations. Deterministic for a given seed.
std::vector<Evaluation> local_search(const SweepEvaluator& ev, int threads, const std::atomic<bool>* stop,
                                     const ProgressFn& progress);

/// Feasible evaluations ranked by objective (best first), ties by index.
std::vector<const Evaluation*> rank(const std::vector<Evaluation>& evals);
/// Feasible evaluations not dominated in (objective: higher, secondary: lower).
std::vector<const Evaluation*> pareto_front(const std::vector<Evaluation>& evals);
/// Rejections counted by reason.
std::map<std::string, size_t> rejections(const std::vector<Evaluation>& evals);

}  // namespace attnsim
