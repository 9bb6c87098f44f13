// `attnsim validate`: predicted against measured times over a set of (schedule variant, problem)
// cases, with the error statistics (MAPE, max error, Spearman rank correlation), the per-op
// comparison of span durations, and the reports (terminal tables, CSV, JSON). GPU-free: the
// measuring happens in sim/cli/validate_cmd.cpp; everything here is testable without a GPU.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "measure/measured_timeline.hpp"
#include "model/clock_power.hpp"
#include "model/problem.hpp"

namespace attnsim {

/// What a case's prediction needs to be turned into time at another clock (Prediction's fields of
/// the same names; predict_case keeps them, share_clock uses them).
struct PredictedClockInputs {
  ChipActivity activity;
  double grid_cycles = 0, hbm_bytes = 0, flops = 0;
  bool power_clocked = false;
};

/// One schedule variant on one problem.
struct ValidationCase {
  std::string schedule;  ///< schedule name ("fa3_sm90") or sweep candidate label
  std::string variant;   ///< "" = base
  std::string problem_label;
  Problem problem;
  std::string kernel;  ///< compiled kernel's knobs ("hd128 m128 n128 kv2 pingpong overlap reg 240/24")
  bool measured = false;
  std::string skipped;  ///< why not measured (not compiled, unsupported)
  double predicted_us = 0;
  double measured_us = 0;  ///< median of the timed runs
  double measured_min_us = 0, measured_max_us = 0;
  int runs = 0;
  std::vector<double> run_us;     ///< each timed run's per-launch time, in the order they ran (results.json)
  double cudnn_us = 0;            ///< cuDNN fused attention on the same shape in the same run; 0 = not timed
  double traced_us = 0;           ///< the instrumented kernel, timed as measured_us is; 0 = not timed
  /// SM clock in the traced run (the launch whose spans measured_ops holds): median over its CTAs
  /// of clock64 / %globaltimer between their anchors; 0 = not read (older data).
  double measured_clock_ghz = 0;
  /// SM clock as measured_us was timed: median over the plain kernel's timed turns of a clock
  /// probe right behind each (sm90::Timing::median_clock_ghz), an idle SM's clock, above what the
  /// loaded SMs ran at; 0 = not probed (older data).
  double timed_clock_ghz = 0;
  /// The clock the SMs ran at in those turns, from inside the kernel: the traced twin's CTA clock
  /// anchors (sm90::Timing::median_kernel_clock_ghz of the traced series); 0 = not measured.
  double kernel_clock_ghz = 0;
  double predicted_cycles = 0;     ///< the prediction in SM cycles (predicted_us x predicted_clock_ghz)
  double predicted_clock_ghz = 0;  ///< the clock the prediction turned its cycles into time at
  PredictedClockInputs predicted_clock_inputs;
  /// How the prediction's grid covered the tiles (GridPlan::Mode as int; -1: not predicted), as
  /// the kernel was launched: the same knob set under another tile scheduler is another run.
  int predicted_grid_mode = -1;
  /// Mean span durations, ns: predicted (the critical CTA's, at predicted_clock_ghz) and measured
  /// (the traced run's recorded CTAs, each at its own clock).
  std::map<std::string, OpStat> predicted_ops, measured_ops;
  /// The --trace-sample N its traced run recorded under, where the kernel's sampling left each
  /// CTA's first tile unrecorded (kernels/sm90/trace_sampling.h, since 2026-11-30; timing.json's
  /// "trace_rule"): the predicted op means then leave it out too (recorded_tiles). 1: every
  /// tile recorded, or a folder measured under an earlier rule.
  int trace_sample = 1;
  /// The warps the traced runs recorded (bit w: warp w, `--trace-warps`; timing.json's
  /// "trace_warps"), whose spans the predicted op means take too. 0: the default, the first warp of
  /// each warpgroup (op_means_first_warps). Which warps record can move the kernel's consumer
  /// warpgroups into another phase (measure/warpgroup_phase.hpp), so the two sides must match.
  uint32_t trace_warps = 0;
  /// CPU seconds the prediction itself took (predict(), on its thread; fidelity's extra
  /// prediction of a traced twin's spans not counted): what `simulate` costs a user for this case.
  double predict_cpu_s = 0;

  std::string name() const { return variant.empty() ? schedule : schedule + ":" + variant; }
  /// (predicted - measured) / measured, in percent.
  double error_pct() const { return 100.0 * (predicted_us - measured_us) / measured_us; }
  double measured_tflops() const { return problem.flops() / (measured_us * 1e6); }
  /// Instrumentation overhead: traced / plain median - 1, in percent (when traced_us > 0).
  double trace_overhead_pct() const { return 100.0 * (traced_us / measured_us - 1); }
  double predicted_tflops() const { return problem.flops() / (predicted_us * 1e6); }
  /// The clock the SMs ran at as measured_us was timed: read inside the kernel where it was
  /// (kernel_clock_ghz), else the probe's (timed_clock_ghz); 0 = neither.
  double run_clock_ghz() const { return kernel_clock_ghz > 0 ? kernel_clock_ghz : timed_clock_ghz; }
  /// predicted_ops as measured_ops are to be compared with them: at the traced run's clock where
  /// it was read (measured_clock_ghz; the spans ran at it, 0.9x to 1.33x the timed runs' clock the
  /// prediction is at), each span's cycles kept (as share_clock re-clocks them); else as they are.
  std::map<std::string, OpStat> predicted_ops_at_trace_clock() const;
  /// Whether the time error splits into cycles and clock (a run clock and a prediction in cycles).
  bool has_clock_split() const {
    return measured && run_clock_ghz() > 0 && predicted_cycles > 0 && predicted_clock_ghz > 0;
  }
  /// Predicted cycles against measured time x run clock - 1, in percent (has_clock_split).
  double cycles_error_pct() const { return 100.0 * (predicted_cycles / (measured_us * 1e3 * run_clock_ghz()) - 1); }
  /// Predicted clock against the run clock - 1, in percent (has_clock_split). Time error =
  /// (1 + cycles error) / (1 + clock error) - 1.
  double clock_error_pct() const { return 100.0 * (predicted_clock_ghz / run_clock_ghz() - 1); }
};

/// Op means predicted at `from_ghz` in ns at `to_ghz`, each span's cycles kept (as share_clock
/// re-clocks a prediction): a traced run's spans ran at its own clock. Unchanged where either
/// clock is unknown (<= 0).
std::map<std::string, OpStat> ops_at_clock(const std::map<std::string, OpStat>& ops, double from_ghz, double to_ghz);

/// Spearman rank correlation of a and b (same length >= 2; ties get their average rank).
/// Returns 0 when either side is constant. Throws std::invalid_argument on bad lengths.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

/// Error statistics over the measured cases.
struct ValidationStats {
  int cases = 0;
  double mape = 0;           ///< mean |error| %
  double max_abs_err = 0;    ///< worst |error| %
  std::string worst;         ///< the case with the worst error
  double spearman_time = 0;  ///< predicted vs measured time over every case
  /// Per problem: predicted vs measured ranking of the schedule variants (problems with >= 3
  /// distinct measured cases), and their mean.
  std::map<std::string, double> spearman_per_problem;
  double spearman_within_mean = 0;
};
ValidationStats validation_stats(const std::vector<ValidationCase>& cases);

/// Whether a case's schedule is a sweep candidate's label: its overrides of the sweep's schedule,
/// as `validate --sweep` writes them ("/kv_stage=3 /tile={\"m_block\":128,\"n_block\":176}").
inline bool is_sweep_candidate(const std::string& schedule) { return !schedule.empty() && schedule[0] == '/'; }
/// The "/pointer=value" overrides of a candidate label (split where a space precedes a '/').
std::vector<std::string> candidate_overrides(const std::string& label);

/// Sweep candidates ranked by geometric-mean TFLOPS over the problems, predicted and measured
/// (the sweep's objective): what `validate --sweep` reports and `fidelity` keeps from regressing.
struct SweepRanking {
  struct Row {
    std::string candidate;
    double predicted_geomean_tflops = 0, measured_geomean_tflops = 0;
  };
  size_t candidates = 0;  ///< distinct candidates among the cases
  std::vector<Row> rows;  ///< those measured on every problem of the cases, in label order
  bool has_spearman = false;
  double spearman = 0;  ///< Spearman of the two rankings (has_spearman: at least 2 rows)
};
/// The ranking over the cases whose schedule is a candidate label (none: candidates = 0).
SweepRanking sweep_ranking(const std::vector<ValidationCase>& cases);

/// Per-op table of one run: for each op either side has spans for, the predicted and measured
/// mean span duration (ns), the error, and the measured span count. What `validate` prints for
/// one case and `run --trace` for the run it traced.
std::string format_op_table(const std::map<std::string, OpStat>& predicted,
                            const std::map<std::string, OpStat>& measured);
/// Terminal report: the case table, the statistics, and the per-op table of `ops_case`
/// (index into cases; -1: none).
std::string format_validation(const std::vector<ValidationCase>& cases, const ValidationStats& st, int ops_case);
/// One row per case (CSV with a header).
std::string validation_csv(const std::vector<ValidationCase>& cases);
/// One row per (case, op): predicted and measured mean span durations (CSV with a header).
std::string validation_ops_csv(const std::vector<ValidationCase>& cases);
/// Everything, with `meta` (GPU, date, hardware config) at the top.
nlohmann::json validation_json(const std::vector<ValidationCase>& cases, const ValidationStats& st,
                               const nlohmann::json& meta);

}  // namespace attnsim
