// The model's fidelity against measured kernels, in one place for `validate` (the acceptance
// report at the end of a run) and `fidelity` (the regression check over the committed
// measurements in configs/validation/<gpu>/fa3_sm90_validate/):
// - per case: the prediction `validate` makes (predict_case), error, MAPE, max |error|, Spearman
//   (validation_stats);
// - per change: each variant against the base schedule on the same problem, measured change
//   (variant / base - 1) against predicted change, the difference in percentage points and
//   whether the signs agree where the measured change is larger than 3%;
// - per op: mean span duration predicted against measured, with the acceptance rule (the five
//   compute ops within 15%, every wait within 25% or 100 ns);
// - the baseline committed beside the data (fidelity.json) and the regression rule.
// GPU-free; tested in tests/unit/test_fidelity.cpp.
#pragma once
#include <atomic>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "driver/simulate.hpp"
#include "measure/validate.hpp"

namespace attnsim {

/// The prediction `validate` makes of a case: the whole problem, exact mode, simulated and timed
/// at `clock_ghz` (GHz; 0: the clock of its own activity, PredictOptions::clock_ghz). Sets
/// c.predicted_us and c.predicted_ops (the critical CTA's spans; those of the schedule's traced twin
/// at the same clock where it has one, Schedule::traced_twin: the kernel the spans are measured on)
/// and returns the prediction. `with_ops` false: c.predicted_ops stays empty and no traced twin is
/// simulated (what only the end-to-end figures need).
Prediction predict_case(const Schedule& schedule, const Hardware& hw, ValidationCase& c, double clock_ghz = 0,
                        bool with_ops = true);

/// The critical CTA's work tiles (their index among its tiles) that the SM90 kernel's trace
/// sampling records at --trace-sample `trace_sample` in a grid like prediction `p`'s
/// (kernels/sm90/trace_sampling.h, make_trace_sample_rule): [first, end).
struct RecordedTiles {
  int first = 0;  ///< 1 where the sampling leaves every CTA's first tile out (first_local), else 0
  /// The dynamic scheduler's grid: the CTA's first tile of the last 2 x grid of the order
  /// (dynamic_below; Prediction::critical_tile_order), which it does not record, nor any after.
  int end = std::numeric_limits<int>::max();
};
/// RecordedTiles of prediction `p` (every tile: a sample of 1, another family). predict_case
/// leaves the other tiles out of the predicted op means.
RecordedTiles recorded_tiles(const Schedule& schedule, const Prediction& p, int trace_sample);

/// timing.json's "trace_rule" for a folder whose traced runs left each CTA's first tile
/// unrecorded under sampling (ValidationCase::trace_sample).
inline constexpr const char* kTraceRuleNoFirstTile = "no_first_tile";

/// Re-clocks the predictions of cases whose kernels were timed together (validate's turns of one
/// problem) at the clock they share (shared_clock_ghz): predicted_us, predicted_cycles,
/// predicted_clock_ghz and the predicted op means. Leaves them as they are when any of them is not
/// power-clocked.
void share_clock(const Hardware& hw, const std::vector<ValidationCase*>& together);
/// share_clock over each problem's measured cases (by problem shape).
void share_clock_by_problem(const Hardware& hw, std::vector<ValidationCase>& cases);

/// A change counts for the sign check when |measured change| exceeds this (percent).
constexpr double kSignificantChangePct = 3.0;
/// Per-op acceptance: the compute ops within this of measured (percent)...
constexpr double kComputeOpTolPct = 15.0;
/// ...and every wait within this percentage or this many ns.
constexpr double kWaitTolPct = 25.0;
constexpr double kWaitTolNs = 100.0;
/// The ops held to kComputeOpTolPct.
const std::vector<std::string>& acceptance_compute_ops();

/// One variant against the base schedule on one problem (changes in percent: variant / base - 1).
struct ChangeRow {
  std::string schedule, variant, problem;
  double measured_pct = 0, predicted_pct = 0;
  bool significant = false;  ///< |measured_pct| > kSignificantChangePct (never for same_kernel)
  bool signs_agree = false;  ///< predicted and measured change have the same sign
  /// The variant resolved to the base's kernel (same kernel column, e.g. no_pingpong where the
  /// base has no pingpong): its measured change is run-to-run noise, not a schedule change, so
  /// it is reported apart and left out of the per-change figures.
  bool same_kernel = false;
  double diff_pts() const { return predicted_pct - measured_pct; }
};

enum class OpRule { None, Compute, Wait };

/// One op of one case: mean span duration predicted against measured. An op with spans on one
/// side only has 0 ns on the other (a wait that never happens); a compute op missing on either
/// side fails.
struct OpRow {
  std::string case_name, problem, op;
  bool has_predicted = false, has_measured = false;
  double predicted_ns = 0, measured_ns = 0;
  OpRule rule = OpRule::None;
  bool pass = true;  ///< always true for OpRule::None (shown, not judged)
  /// (predicted - measured) / measured in percent; NaN when nothing was measured.
  double error_pct() const;
};

/// One op over every case that has it.
struct OpSummary {
  std::string op;
  OpRule rule = OpRule::None;
  int cases = 0, passed = 0;
  double mean_abs_err_pct = 0;  ///< over the cases where both sides have spans
  double worst_err_pct = 0;     ///< signed, largest |error|
  std::string worst_case;
};

/// The cases whose clock was read while they were timed: time = cycles / clock, so the error
/// splits into the model's cycles against the measured time in cycles (measured_us x clock) and
/// its clock against the measured one. The clock is the kernel's own where it was read inside it
/// (kernel_clock_ghz: the traced twin's CTA anchors in the same turns), else the probe's
/// (timed_clock_ghz), an idle SM's clock 6-13% above what loaded SMs run at (H100,
/// kernels/microbench clock_under_duty), which makes the measured cycles an upper bound.
struct ClockSplit {
  int cases = 0;
  int in_kernel = 0;  ///< of them, clocks read inside the kernel (kernel_clock_ghz); the rest the probe's
  double cycles_mape = 0, cycles_max_abs_err = 0;  ///< |predicted cycles / measured cycles - 1|, %
  double cycles_mean_err = 0;                      ///< signed mean, %
  std::string cycles_worst;
  double clock_mean_err = 0, clock_min_err = 0, clock_max_err = 0;  ///< predicted / timed clock - 1, %
  double timed_clock_min = 0, timed_clock_max = 0;                  ///< GHz
};

struct FidelityReport {
  ValidationStats stats;
  ClockSplit clock;
  std::vector<ChangeRow> changes;
  double max_change_diff_pts = 0, mean_change_diff_pts = 0;
  std::string max_change;  ///< "variant on problem" of the largest |difference|
  int same_kernel_changes = 0;      ///< variants that ran the base's kernel (not in the figures above)
  double same_kernel_noise_pct = 0;  ///< the largest |measured change| among them: the noise floor
  int significant_changes = 0, signs_agree = 0;
  std::vector<OpRow> ops;
  std::vector<OpSummary> op_summary;
  int op_cases = 0;           ///< measured cases with measured spans
  int op_cases_clocked = 0;   ///< of them, compared at their traced run's clock (its clock was read)
  bool ops_accepted = false;  ///< op_cases > 0 and every judged row passes
  SweepRanking sweep;         ///< the candidates' ranking, when the cases are a sweep's (validate --sweep)
};

/// Everything above over the measured cases of `cases` (predicted_us/predicted_ops as set).
FidelityReport fidelity_report(const std::vector<ValidationCase>& cases);
/// The per-change table and its summary line.
std::string format_changes(const FidelityReport& r);
/// Cycles and clock, each against the measured ("" when no case had its clock probed).
std::string format_clock_split(const FidelityReport& r);
/// The sweep candidates' ranking and its Spearman ("" when the cases are not a sweep's).
std::string format_sweep(const FidelityReport& r);
/// The per-op table (every op, its rule, cases passing, mean and worst error) and the verdict;
/// `detail`: also every failing (case, op) row.
std::string format_op_acceptance(const FidelityReport& r, bool detail = false);
/// Per change and per op, with the acceptance verdict (validate's results.json "acceptance").
nlohmann::json fidelity_json(const FidelityReport& r);

// ---- committed measurements -------------------------------------------------------------

/// A `validate` output folder: its measured cases as recorded (predicted_us of the time).
struct ValidationData {
  std::string dir, gpu;  ///< gpu: the name of the folder's parent (configs/validation/<gpu>/...)
  std::vector<ValidationCase> cases;  ///< measured rows only
  bool has_ops = false;               ///< ops.csv was there
  /// DIR/timing.json says the kernels of each problem were timed together, taking turns
  /// ("timed_together": "problem"): they shared one SM clock (share_clock_by_problem).
  bool timed_together_by_problem = false;
};
/// Rows of a results.csv (columns found by header name; quoted fields); measured rows only.
/// Throws InputError naming `origin` and the row.
std::vector<ValidationCase> parse_results_csv(const std::string& text, const std::string& origin);
/// Measured mean span durations of an ops.csv, attached to the cases by (schedule, variant, problem).
void attach_ops_csv(const std::string& text, const std::string& origin, std::vector<ValidationCase>& cases);
/// The traced runs' SM clocks (ValidationCase::measured_clock_ghz) from a results.json as `validate`
/// writes it (cases[i].traced.sm_clock_ghz, GHz), attached by (schedule, variant, problem): for
/// folders whose results.csv predates its trace_clock_ghz column. Throws InputError naming
/// `origin` and the JSON path where a case's fields are malformed.
void attach_trace_clocks(const nlohmann::json& results, const std::string& origin, std::vector<ValidationCase>& cases);
/// Reads DIR/results.csv, DIR/ops.csv and DIR/timing.json (when present). DIR may also be the GPU
/// folder (configs/validation/<gpu>), then its fa3_sm90_validate/ is read. timing.json's
/// "trace_sample", where its "trace_rule" is kTraceRuleNoFirstTile, goes to every case
/// (ValidationCase::trace_sample), and its "trace_warps" (`--trace-warps`; absent: "first") to every
/// case (ValidationCase::trace_warps). Throws InputError naming the file and key on a timing.json
/// whose "timed_together" is neither "problem" nor "kernel", whose "trace_rule" is another, whose
/// "trace_sample" is missing or not 1..2^20 beside that rule, or whose "trace_warps" is not what
/// `--trace-warps` takes.
ValidationData load_validation_data(const std::string& dir);
/// Every configs/validation/<gpu>/<folder> under `root` holding a results.csv (a `validate`
/// output) and its baseline fidelity.json, sorted.
std::vector<std::string> committed_validation_dirs(const std::string& root);

/// Schedule overrides (/json/pointer=value) that pin a knob whose default changed after the
/// measurement to what the measured kernel (a results.csv `kernel` column: sm90 describe())
/// had: fa3_sm90 kernels with " o_in_v" staged O in the V ring, without it or " own_o" in Q's
/// buffer, without " l2 " had no L2
/// sections; each ran the tile its " mM nN" names, with pingpong where it says " pingpong", and
/// trimmed its last KV block where it says " trim_last".
/// Empty for other families. (repredict also runs a causal case whose kernel lacks " dynamic"
/// one CTA per tile where the schedule now resolves to the dynamic scheduler.)
std::vector<std::string> measured_kernel_pins(const std::string& kernel);

/// Predictions shared by the folders of one `fidelity` run. Many folders re-predict the same
/// case (hardware, schedule file, overrides, variant, problem: the same kernel measured again in
/// another campaign), and a prediction is deterministic, so each is simulated once. Thread-safe:
/// a case asked for while another thread simulates it waits for that result.
class PredictionMemo {
 public:
  /// The prediction of `key` (computed by `compute`, which fills a ValidationCase's predicted_*
  /// fields and predict_cpu_s, on the first call; copied into `c` on every call, predict_cpu_s
  /// with them, so that a folder still reports how long its slowest case takes to predict).
  /// `compute`'s exception reaches every caller of that key.
  void get(const std::string& key, ValidationCase& c, const std::function<void(ValidationCase&)>& compute);
  size_t hits() const { return hits_; }      ///< calls answered from an earlier prediction
  size_t misses() const { return misses_; }  ///< predictions simulated

 private:
  std::mutex mu_;
  using Memoized = std::shared_ptr<const ValidationCase>;
  std::map<std::string, std::shared_future<Memoized>> done_;
  std::atomic<size_t> hits_{0}, misses_{0};
};

/// CPU time of the calling thread, seconds (CLOCK_THREAD_CPUTIME_ID): what a prediction costs,
/// unlike wall time, whatever else runs beside it.
double thread_cpu_seconds();

/// Re-predicts every case with the current model (schedules_dir/<schedule>.json with the case's
/// variant) on `threads` threads. Returns each case's predict_cpu_s: the CPU seconds of its
/// prediction (its thread's, so that cases predicted side by side on a busy machine report what
/// one prediction costs). A case that no longer predicts (bad schedule, deadlock) leaves the
/// statistics (measured = false), takes 0 s and gets its message in `errors`. With `memo`, a
/// case predicted before (same hardware name, schedule file, overrides, variant and problem) is
/// not simulated again; its time is then the seconds its simulation took. `at_case_clock`: each
/// case is simulated and predicted at its predicted_clock_ghz (one that share_clock set), not at
/// the clock of its own activity. `with_ops` false: no op means (predict_case).
std::vector<double> repredict(std::vector<ValidationCase>& cases, const Hardware& hw, const std::string& schedules_dir,
                              int threads, std::vector<std::string>& errors, PredictionMemo* memo = nullptr,
                              bool at_case_clock = false, bool with_ops = true);

// ---- baseline and regression rule ------------------------------------------------------

constexpr double kMapeTolPts = 0.05;    ///< MAPE may grow by this many percentage points
constexpr double kMaxErrTolPts = 0.05;  ///< max |error| likewise
constexpr double kSpearmanTol = 0.005;  ///< Spearman may drop by this much

/// The figures of fidelity.json.
struct FidelityBaseline {
  int cases = 0;
  double mape_pct = 0, max_abs_error_pct = 0, spearman = 0, max_change_diff_pts = 0;
  bool has_sweep_spearman = false;
  double sweep_spearman = 0;  ///< Spearman of the sweep candidates' rankings (sweep folders only)
  bool has_cycles_mape = false;
  double cycles_mape_pct = 0;  ///< ClockSplit::cycles_mape (folders whose clock was probed only)
  std::map<std::string, double> predicted_us;  ///< per case ("fa3_sm90:variant | problem")
};
/// Key of a case in FidelityBaseline::predicted_us.
std::string baseline_key(const ValidationCase& c);
FidelityBaseline baseline_of(const FidelityReport& r, const std::vector<ValidationCase>& cases);
/// fidelity.json: the figures (rounded to 1e-4) and the per-case predictions; deterministic.
nlohmann::json baseline_json(const FidelityBaseline& b, const std::string& gpu);
/// Throws InputError naming `origin` on missing or mistyped figures.
FidelityBaseline parse_baseline(const nlohmann::json& j, const std::string& origin);

struct Regression {
  std::string figure;
  double baseline = 0, now = 0, tolerance = 0;
  std::string message() const;
};
/// The figures that got worse than the baseline by more than their tolerance.
std::vector<Regression> regressions(const FidelityBaseline& base, const FidelityReport& now);

}  // namespace attnsim
