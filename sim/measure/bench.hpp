// `attnsim bench`: our SM90 kernel beside cuDNN's fused attention, timed in the same run, over a
// problem set (configs/bench/sm90_vs_cudnn.json): the rows, their summary (geometric mean and
// minimum of ours/cuDNN) and the reports (terminal table, CSV). GPU-free: the timing happens in
// sim/cli/bench_cmd.cpp, through the same sm90::time_kernel and time_cudnn that `validate` uses;
// everything here is testable without a GPU.
#pragma once
#include <string>
#include <vector>

#include "measure/cudnn.hpp"
#include "model/problem.hpp"

namespace attnsim {

/// One problem of a bench run: our time and cuDNN's, or why either is missing.
struct BenchRow {
  std::string label;  ///< the problem set's label ("hd128 s8k b4 causal")
  Problem problem;
  double ours_us = 0;       ///< our kernel's median per-launch time, microseconds; 0 = not timed
  double cudnn_us = 0;      ///< cuDNN's, timed the same way in the same run, microseconds; 0 = not timed
  std::string ours_error;   ///< why ours was not timed (no kernel compiled for the problem, ...); "" if timed
  std::string cudnn_error;  ///< why cuDNN was not timed (it refused the shape, the script failed); "" if timed
  std::string note;         ///< a caveat on a timed row (cuDNN ran a GQA problem with K/V of every head)

  /// Both sides timed: the row counts in the geometric mean and the minimum.
  bool compared() const { return ours_us > 0 && cudnn_us > 0; }
  /// Throughput of a side, TFLOPS (Problem::flops: FlashAttention's count, halved when causal).
  double ours_tflops() const { return problem.flops() / (ours_us * 1e6); }
  double cudnn_tflops() const { return problem.flops() / (cudnn_us * 1e6); }
  /// ours/cuDNN: cuDNN's time over ours, i.e. our TFLOPS over cuDNN's (above 1: ours is faster).
  /// Meaningful only when compared().
  double ratio() const { return cudnn_us / ours_us; }
  /// What the table's and the CSV's note column say: the missing sides' reasons and the note,
  /// "ours: <why>; cuDNN: <why>; <note>" with the empty parts left out.
  std::string remark() const;
};

/// The figures under the table, over the rows timed on both sides.
struct BenchSummary {
  int compared = 0;         ///< rows timed on both sides
  int rows = 0;             ///< all rows
  double geomean = 0;       ///< geometric mean of ratio() over compared rows; 0 when none
  double min = 0;           ///< smallest ratio(); 0 when none
  std::string min_problem;  ///< its label (the first such row on a tie)
  int compared_causal = 0;  ///< compared rows with the causal mask
  double geomean_noncausal = 0;  ///< geometric mean of ratio() over compared non-causal rows; 0 when none
  double geomean_causal = 0;     ///< the same over compared causal rows; 0 when none
  int at_least_095 = 0;          ///< compared rows with ratio() >= 0.95 (issue 10's bar per problem)
  int at_least_1 = 0;            ///< compared rows with ratio() >= 1 (ours as fast as cuDNN or faster)
};
BenchSummary bench_summary(const std::vector<BenchRow>& rows);

/// Rows of `problems`, untimed, in order.
std::vector<BenchRow> bench_rows(const std::vector<LabeledProblem>& problems);

/// Fills the cuDNN side of `rows` from time_cudnn's result for the same problems in the same
/// order: cudnn_us, else cudnn_error (the script's error for the shape, or "not timed" when the
/// whole run failed: the caller prints t.note); a GQA row cuDNN ran with K/V of more heads than
/// the problem has gets a note saying so. Throws std::invalid_argument on a size mismatch.
void apply_cudnn(std::vector<BenchRow>& rows, const CudnnTimes& t);

/// The terminal report: one line per row (problem, batch, heads/kv_heads, seqlen, head_dim,
/// causal, ours us, ours TFLOPS, cuDNN us, cuDNN TFLOPS, ours/cuDNN, note; "-" where a side is
/// missing), then the geometric mean and the minimum of ours/cuDNN with its problem, the geometric
/// means over non-causal and causal problems, and how many reach 0.95x and 1.0x.
std::string format_bench_table(const std::vector<BenchRow>& rows, const BenchSummary& s);

/// Where and how a bench run was measured, repeated on every CSV row.
struct BenchMeta {
  std::string device;  ///< GPU name as CUDA reports it
  std::string date;    ///< UTC, YYYY-MM-DD
  std::string method;  ///< how both sides were timed
};
/// The CSV: a header, then one line per row with the table's columns (heads and kv_heads apart;
/// times in microseconds with 3 decimals, TFLOPS with 2, ours/cuDNN with 4; empty where a side is
/// missing) plus device, date and method. Fields are quoted as RFC 4180 says (csv_field).
std::string bench_csv(const std::vector<BenchRow>& rows, const BenchMeta& meta);

}  // namespace attnsim
