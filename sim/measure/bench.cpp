#include "measure/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "report/csv.hpp"

namespace attnsim {

namespace {
/// "8192", or "512/1024" when seqlen_k differs.
std::string seqlen_text(const Problem& p) {
  return p.seqlen_k == p.seqlen_q ? std::to_string(p.seqlen_q) : fmt::format("{}/{}", p.seqlen_q, p.seqlen_k);
}
}  // namespace

std::string BenchRow::remark() const {
  std::vector<std::string> parts;
  if (!ours_error.empty()) parts.push_back("ours: " + ours_error);
  if (!cudnn_error.empty()) parts.push_back("cuDNN: " + cudnn_error);
  if (!note.empty()) parts.push_back(note);
  return fmt::format("{}", fmt::join(parts, "; "));
}

BenchSummary bench_summary(const std::vector<BenchRow>& rows) {
  BenchSummary s;
  s.rows = static_cast<int>(rows.size());
  double log_sum = 0, log_causal = 0;
  for (const auto& r : rows) {
    if (!r.compared()) continue;
    ++s.compared;
    log_sum += std::log(r.ratio());
    if (r.problem.causal) {
      ++s.compared_causal;
      log_causal += std::log(r.ratio());
    }
    s.at_least_095 += r.ratio() >= 0.95;
    s.at_least_1 += r.ratio() >= 1.0;
    if (s.compared == 1 || r.ratio() < s.min) {
      s.min = r.ratio();
      s.min_problem = r.label;
    }
  }
  const int noncausal = s.compared - s.compared_causal;
  if (s.compared) s.geomean = std::exp(log_sum / s.compared);
  if (noncausal) s.geomean_noncausal = std::exp((log_sum - log_causal) / noncausal);
  if (s.compared_causal) s.geomean_causal = std::exp(log_causal / s.compared_causal);
  return s;
}

std::vector<BenchRow> bench_rows(const std::vector<LabeledProblem>& problems) {
  std::vector<BenchRow> rows;
  for (const auto& [label, p] : problems) {
    BenchRow r;
    r.label = label;
    r.problem = p;
    rows.push_back(std::move(r));
  }
  return rows;
}

void apply_cudnn(std::vector<BenchRow>& rows, const CudnnTimes& t) {
  if (t.us.size() != rows.size())
    throw std::invalid_argument(fmt::format("apply_cudnn: {} cuDNN results for {} rows", t.us.size(), rows.size()));
  for (size_t i = 0; i < rows.size(); ++i) {
    BenchRow& r = rows[i];
    r.cudnn_us = t.us[i];
    if (r.cudnn_us > 0) {
      const int kvh = i < t.kv_heads_timed.size() ? t.kv_heads_timed[i] : 0;
      if (kvh > r.problem.kv_heads)
        r.note = fmt::format("cuDNN ran with K/V of {} heads (SDPA's cuDNN backend refused {} KV heads)", kvh,
                             r.problem.kv_heads);
    } else {
      const std::string err = i < t.errors.size() ? t.errors[i] : "";
      r.cudnn_error = !err.empty() ? err : !t.note.empty() ? "not timed (see below)" : "not timed";
    }
  }
}

std::string format_bench_table(const std::vector<BenchRow>& rows, const BenchSummary& s) {
  size_t w = 7;  // "problem"
  for (const auto& r : rows) w = std::max(w, r.label.size());
  std::string out = fmt::format("{:<{}}  {:>5}  {:>8}  {:>11}  {:>8}  {:>6}  {:>9}  {:>11}  {:>9}  {:>12}  {:>10}  {}\n",
                                "problem", w, "batch", "heads/kv", "seqlen", "head_dim", "causal", "ours us",
                                "ours TFLOPS", "cuDNN us", "cuDNN TFLOPS", "ours/cuDNN", "note");
  auto num = [](bool ok, double v) { return ok ? fmt::format("{:.1f}", v) : std::string("-"); };
  for (const auto& r : rows) {
    const Problem& p = r.problem;
    const bool o = r.ours_us > 0, c = r.cudnn_us > 0;
    out += fmt::format("{:<{}}  {:>5}  {:>8}  {:>11}  {:>8}  {:>6}  {:>9}  {:>11}  {:>9}  {:>12}  {:>10}  {}", r.label, w,
                       p.batch, fmt::format("{}/{}", p.heads, p.kv_heads), seqlen_text(p), p.head_dim,
                       p.causal ? "yes" : "no", num(o, r.ours_us), num(o, o ? r.ours_tflops() : 0), num(c, r.cudnn_us),
                       num(c, c ? r.cudnn_tflops() : 0),
                       r.compared() ? fmt::format("{:.3f}x", r.ratio()) : std::string("-"), r.remark());
    while (!out.empty() && out.back() == ' ') out.pop_back();  // an empty note leaves no trailing blanks
    out += "\n";
  }
  if (s.compared == 0) {
    out += fmt::format("ours/cuDNN: no problem timed on both sides (of {})\n", s.rows);
    return out;
  }
  out += fmt::format("geomean ours/cuDNN: {:.3f}x over {} of {} problems timed on both sides (cuDNN time / ours: above 1, "
                     "ours is faster)\n",
                     s.geomean, s.compared, s.rows);
  out += fmt::format("min ours/cuDNN: {:.3f}x ({})\n", s.min, s.min_problem);
  out += fmt::format(
      "non-causal {:.3f}x over {}, causal {:.3f}x over {}; at least 0.95x: {} of {}, at least 1.0x: {} "
      "of {}\n",
      s.geomean_noncausal, s.compared - s.compared_causal, s.geomean_causal, s.compared_causal, s.at_least_095,
      s.compared, s.at_least_1, s.compared);
  return out;
}

std::string bench_csv(const std::vector<BenchRow>& rows, const BenchMeta& meta) {
  std::string out =
      "problem,batch,heads,kv_heads,seqlen,head_dim,causal,ours_us,ours_tflops,cudnn_us,cudnn_tflops,ours_over_cudnn,"
      "note,device,date,method\n";
  auto num = [](bool ok, double v, int decimals) { return ok ? fmt::format("{:.{}f}", v, decimals) : std::string(); };
  for (const auto& r : rows) {
    const Problem& p = r.problem;
    const bool o = r.ours_us > 0, c = r.cudnn_us > 0;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.label), p.batch, p.heads,
                       p.kv_heads, seqlen_text(p), p.head_dim, p.causal ? "true" : "false", num(o, r.ours_us, 3),
                       num(o, o ? r.ours_tflops() : 0, 2), num(c, r.cudnn_us, 3), num(c, c ? r.cudnn_tflops() : 0, 2),
                       num(r.compared(), r.compared() ? r.ratio() : 0, 4), csv_field(r.remark()), csv_field(meta.device),
                       csv_field(meta.date), csv_field(meta.method));
  }
  return out;
}

}  // namespace attnsim
