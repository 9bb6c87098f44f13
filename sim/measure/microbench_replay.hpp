// The model against microbenchmarks that time the SM90 kernel's own code (kernels/microbench):
// each case a benchmark timed on the GPU rebuilt as an explicit schedule from the fa3_sm90
// family's own costs (lower/fa3/turn_costs.hpp) and predicted, span by span. Nothing here is
// fitted: a replay checks the model's dispatch, queue and sharing rules on cases small enough to
// read.
// - gemm_turn: the kernel's QK and PV dispatch (Consumer::issue_qk / issue_pv) alone, handing the
//   tensor cores over in pingpong turns, and beside another warpgroup's softmax block or a burst
//   of independent FFMAs.
// - softmax_pair: two softmax blocks of the kernel on one SMSP, the second starting later.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "lower/costs.hpp"
#include "model/hardware.hpp"

namespace attnsim {

/// One quantity of one warpgroup in one case, measured and predicted, in SM cycles.
/// gemm_turn, a warpgroup that issues GEMMs: "turn_wait" (pingpong: from its start, after the
/// case's delay, to its turn), "qk_dispatch" (from its turn to the QK group issued, K's ready wait
/// included), "pv_dispatch" (from there to the PV group issued, V's ready wait included), "done"
/// (from its turn to both groups complete); a warpgroup running a softmax block beside them:
/// "softmax_max", "softmax_exp", "rescale_o" (its spans), or beside them a burst of FFMAs:
/// "ffma_burst" (its duration). softmax_pair: "softmax_max",
/// "softmax_exp" and "block" (the whole block: row max, exponentials, rescale and pack).
struct ReplayRow {
  std::string instance;   ///< gemm_turn: the instance, e.g. "hd128"; softmax_pair: "alone" or "beside_wgmma"
  std::string case_name;  ///< "solo", "pingpong_delay_256", ...; softmax_pair: "leader_warpgroup_1/delay_150"
  int warpgroup = 0;      ///< the benchmark's warpgroup (gemm_turn: consumer warpgroup from 0)
  std::string quantity;
  double measured = 0, predicted = 0;
  /// (predicted - measured) / measured, percent.
  double error_pct() const { return measured != 0 ? 100.0 * (predicted - measured) / measured : 0.0; }
};

/// Replays a gemm_turn or softmax_pair result file (configs/measured/<gpu>/) on `hw` with the
/// softmax blocks of `costs` (configs/costs/sm90_softmax.json): every case, by instance, then
/// case name. Throws InputError naming the file and JSON path when it is neither, or lacks a
/// field a case needs.
std::vector<ReplayRow> replay_microbench(const std::string& result_file, const Hardware& hw, const CostModel& costs);

/// The gemm_turn cases alone (replay_microbench on a gemm_turn file).
std::vector<ReplayRow> replay_gemm_turn(const std::string& result_file, const Hardware& hw, const CostModel& costs);
/// The softmax_pair cases alone (replay_microbench on a softmax_pair file).
std::vector<ReplayRow> replay_softmax_pair(const std::string& result_file, const Hardware& hw, const CostModel& costs);

/// Mean |error| per quantity of a replay's rows: percent and cycles (a short wait's percent says
/// little), and the rows behind each.
struct ReplaySummary {
  std::map<std::string, double> mean_abs_error_pct, mean_abs_error_cycles;
  std::map<std::string, int> rows;
};
ReplaySummary summarize_replay(const std::vector<ReplayRow>& rows);

/// How far a replay may drift from its committed baseline before it counts as a regression:
/// percentage points of a quantity's mean |error|.
inline constexpr double kReplayTolerancePts = 0.5;

/// The quantities whose mean |error| grew by more than kReplayTolerancePts over the baseline in
/// `baseline_file` (write_replay_baseline's format), each as "quantity: baseline X%, now Y%".
/// Quantities the baseline lacks are new, not regressions. Throws InputError (file, JSON path) for a
/// malformed baseline.
std::vector<std::string> replay_regressions(const ReplaySummary& now, const std::string& baseline_file);

/// Writes `now` as the baseline of replaying `result_file` on `hardware` into `baseline_file`.
void write_replay_baseline(const ReplaySummary& now, const std::string& result_file, const std::string& hardware,
                           const std::string& baseline_file);

}  // namespace attnsim
