#include "measure/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>

#include "report/csv.hpp"

namespace attnsim {

namespace {

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * static_cast<double>(i + j) + 1;  // average rank, 1-based
    i = j + 1;
  }
  return r;
}

std::string pct(double x) { return fmt::format("{:+.1f}%", x); }

/// Every op either side has spans for.
std::set<std::string> op_keys(const std::map<std::string, OpStat>& predicted,
                              const std::map<std::string, OpStat>& measured) {
  std::set<std::string> keys;
  for (const auto& [k, v] : predicted) keys.insert(k);
  for (const auto& [k, v] : measured) keys.insert(k);
  return keys;
}
std::set<std::string> op_keys(const ValidationCase& c) { return op_keys(c.predicted_ops, c.measured_ops); }

}  // namespace

std::map<std::string, OpStat> ops_at_clock(const std::map<std::string, OpStat>& ops, double from_ghz, double to_ghz) {
  if (from_ghz <= 0 || to_ghz <= 0) return ops;
  std::map<std::string, OpStat> out = ops;
  for (auto& [op, st] : out) {
    st.mean_ns *= from_ghz / to_ghz;
    st.total_ns *= from_ghz / to_ghz;
  }
  return out;
}

std::map<std::string, OpStat> ValidationCase::predicted_ops_at_trace_clock() const {
  return ops_at_clock(predicted_ops, predicted_clock_ghz, measured_clock_ghz);
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2)
    throw std::invalid_argument(
        fmt::format("spearman: need two series of equal length >= 2, got {} and {}", a.size(), b.size()));
  const auto ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size()), mean = (n + 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

ValidationStats validation_stats(const std::vector<ValidationCase>& cases) {
  ValidationStats st;
  std::vector<double> pred, meas;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> per_problem;
  std::map<std::string, std::set<std::string>> kernels_per_problem;
  double sum = 0;
  for (const auto& c : cases) {
    if (!c.measured) continue;
    ++st.cases;
    const double e = std::fabs(c.error_pct());
    sum += e;
    if (e >= st.max_abs_err) {
      st.max_abs_err = e;
      st.worst = c.name() + " on " + c.problem_label;
    }
    pred.push_back(c.predicted_us);
    meas.push_back(c.measured_us);
    per_problem[c.problem_label].first.push_back(c.predicted_us);
    per_problem[c.problem_label].second.push_back(c.measured_us);
    kernels_per_problem[c.problem_label].insert(c.kernel);
  }
  if (st.cases) st.mape = sum / st.cases;
  if (pred.size() >= 2) st.spearman_time = spearman(pred, meas);
  double within = 0;
  for (const auto& [label, pm] : per_problem)
    if (kernels_per_problem[label].size() >= 3) {
      st.spearman_per_problem[label] = spearman(pm.first, pm.second);
      within += st.spearman_per_problem[label];
    }
  if (!st.spearman_per_problem.empty()) st.spearman_within_mean = within / st.spearman_per_problem.size();
  return st;
}

std::vector<std::string> candidate_overrides(const std::string& label) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 1; i <= label.size(); ++i)
    if (i == label.size() || (label[i] == '/' && label[i - 1] == ' ')) {
      size_t end = i;
      while (end > start && label[end - 1] == ' ') --end;
      if (end > start) out.push_back(label.substr(start, end - start));
      start = i;
    }
  return out;
}

SweepRanking sweep_ranking(const std::vector<ValidationCase>& cases) {
  std::set<std::string> problems;
  std::map<std::string, std::map<std::string, std::pair<double, double>>> per;  // candidate -> problem -> log TFLOPS
  for (const auto& c : cases) {
    if (!is_sweep_candidate(c.schedule)) continue;
    problems.insert(c.problem_label);
    auto& m = per[c.schedule];
    if (c.measured) m[c.problem_label] = {std::log(c.predicted_tflops()), std::log(c.measured_tflops())};
  }
  SweepRanking r;
  r.candidates = per.size();
  std::vector<double> pg, mg;
  for (const auto& [name, m] : per) {
    if (m.size() != problems.size()) continue;  // not measured on every problem
    double p = 0, q = 0;
    for (const auto& [prob, v] : m) p += v.first, q += v.second;
    r.rows.push_back({name, std::exp(p / m.size()), std::exp(q / m.size())});
    pg.push_back(r.rows.back().predicted_geomean_tflops);
    mg.push_back(r.rows.back().measured_geomean_tflops);
  }
  if (pg.size() >= 2) {
    r.has_spearman = true;
    r.spearman = spearman(pg, mg);
  }
  return r;
}

std::string format_validation(const std::vector<ValidationCase>& cases, const ValidationStats& st, int ops_case) {
  std::string out;
  const bool cudnn = std::any_of(cases.begin(), cases.end(), [](const auto& c) { return c.cudnn_us > 0; });
  const bool traced = std::any_of(cases.begin(), cases.end(), [](const auto& c) { return c.traced_us > 0; });
  // Where the run's clock was read: the time error split into its cycles and its clock.
  const bool split = std::any_of(cases.begin(), cases.end(), [](const auto& c) { return c.has_clock_split(); });
  out += fmt::format("{:<40} {:<22} {:>11} {:>11} {:>8} {:>8} {:>8}{}{}{}\n", "schedule", "problem", "predicted",
                     "measured", "error", "TFLOPS", "pred TF", split ? "   cycles    clock" : "",
                     traced ? " trace ovh" : "", cudnn ? "   cuDNN TF  ours/cuDNN" : "");
  for (const auto& c : cases) {
    if (!c.measured) {
      out += fmt::format("{:<40} {:<22} {:>11} {}\n", c.name(), c.problem_label, "-", "not run: " + c.skipped);
      continue;
    }
    out += fmt::format("{:<40} {:<22} {:>8.1f} us {:>8.1f} us {:>8} {:>8.1f} {:>8.1f}", c.name(), c.problem_label,
                       c.predicted_us, c.measured_us, pct(c.error_pct()), c.measured_tflops(), c.predicted_tflops());
    if (split)
      out += c.has_clock_split() ? fmt::format(" {:>8} {:>8}", pct(c.cycles_error_pct()), pct(c.clock_error_pct()))
                                 : fmt::format(" {:>8} {:>8}", "-", "-");
    if (traced) out += fmt::format(" {:>9}", c.traced_us > 0 ? pct(c.trace_overhead_pct()) : "-");
    if (c.cudnn_us > 0)
      out += fmt::format(" {:>10.1f} {:>10.2f}x", c.problem.flops() / (c.cudnn_us * 1e6), c.cudnn_us / c.measured_us);
    out += "\n";
  }
  out += fmt::format("\n{} cases measured: MAPE {:.1f}%, max |error| {:.1f}% ({}), Spearman (time, all cases) {:.3f}\n",
                     st.cases, st.mape, st.max_abs_err, st.worst, st.spearman_time);
  if (!st.spearman_per_problem.empty()) {
    out += fmt::format("ranking of the variants within each problem (Spearman, predicted vs measured), mean {:.3f}:\n",
                       st.spearman_within_mean);
    for (const auto& [label, r] : st.spearman_per_problem) out += fmt::format("  {:<22} {:+.3f}\n", label, r);
  }
  if (ops_case >= 0 && static_cast<size_t>(ops_case) < cases.size() && cases[ops_case].measured) {
    const auto& c = cases[ops_case];
    out += fmt::format(
        "\nper op, mean span duration: {} on {} (predicted: critical CTA; measured: every CTA; both at the traced "
        "run's clock)\n",
        c.name(), c.problem_label);
    out += format_op_table(c.predicted_ops_at_trace_clock(), c.measured_ops);
  }
  return out;
}

std::string format_op_table(const std::map<std::string, OpStat>& predicted,
                            const std::map<std::string, OpStat>& measured) {
  std::string out =
      fmt::format("{:<32} {:>12} {:>12} {:>9} {:>10}\n", "op", "predicted ns", "measured ns", "error", "spans meas");
  for (const auto& k : op_keys(predicted, measured)) {
    const auto p = predicted.find(k);
    const auto m = measured.find(k);
    const bool hp = p != predicted.end(), hm = m != measured.end();
    out += fmt::format("{:<32} {:>12} {:>12} {:>9} {:>10}\n", k, hp ? fmt::format("{:.1f}", p->second.mean_ns) : "-",
                       hm ? fmt::format("{:.1f}", m->second.mean_ns) : "-",
                       hp && hm && m->second.mean_ns > 0
                           ? pct(100 * (p->second.mean_ns - m->second.mean_ns) / m->second.mean_ns)
                           : "",
                       hm ? fmt::format("{}", m->second.count) : "-");
  }
  return out;
}

std::string validation_csv(const std::vector<ValidationCase>& cases) {
  std::string out =
      "schedule,variant,problem,batch,heads,kv_heads,seqlen_q,seqlen_k,head_dim,causal,kernel,predicted_us,"
      "measured_us,measured_min_us,measured_max_us,runs,error_pct,measured_tflops,predicted_tflops,cudnn_us,"
      "cudnn_tflops,traced_us,trace_overhead_pct,timed_clock_ghz,kernel_clock_ghz,trace_clock_ghz,skipped\n";
  for (const auto& c : cases) {
    const auto& p = c.problem;
    // A sweep candidate's schedule is its overrides, whose JSON values hold commas and quotes.
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},", csv_field(c.schedule), csv_field(c.variant),
                       csv_field(c.problem_label), p.batch, p.heads, p.kv_heads, p.seqlen_q, p.seqlen_k, p.head_dim,
                       p.causal ? 1 : 0, csv_field(c.kernel));
    if (c.measured)
      out += fmt::format("{:.3f},{:.3f},{:.3f},{:.3f},{},{:.3f},{:.2f},{:.2f},", c.predicted_us, c.measured_us,
                         c.measured_min_us, c.measured_max_us, c.runs, c.error_pct(), c.measured_tflops(),
                         c.predicted_tflops());
    else
      out += ",,,,,,,,";
    if (c.cudnn_us > 0)
      out += fmt::format("{:.3f},{:.2f},", c.cudnn_us, p.flops() / (c.cudnn_us * 1e6));
    else
      out += ",,";
    if (c.measured && c.traced_us > 0)
      out += fmt::format("{:.3f},{:.2f},", c.traced_us, c.trace_overhead_pct());
    else
      out += ",,";
    out += c.measured && c.timed_clock_ghz > 0 ? fmt::format("{:.4f},", c.timed_clock_ghz) : ",";
    out += c.measured && c.kernel_clock_ghz > 0 ? fmt::format("{:.4f},", c.kernel_clock_ghz) : ",";
    out += c.measured && c.measured_clock_ghz > 0 ? fmt::format("{:.4f},", c.measured_clock_ghz) : ",";
    std::string skipped;  // always quoted, inner quotes doubled (RFC 4180)
    for (char ch : c.skipped) skipped += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    out += "\"" + skipped + "\"\n";
  }
  return out;
}

std::string validation_ops_csv(const std::vector<ValidationCase>& cases) {
  std::string out = "schedule,variant,problem,op,predicted_mean_ns,measured_mean_ns,predicted_spans,measured_spans\n";
  for (const auto& c : cases) {
    const std::map<std::string, OpStat> predicted = c.predicted_ops_at_trace_clock();
    for (const auto& k : op_keys(c)) {
      const auto p = predicted.find(k);
      const auto m = c.measured_ops.find(k);
      out += fmt::format("{},{},{},{},", csv_field(c.schedule), csv_field(c.variant), csv_field(c.problem_label), k);
      out += p != predicted.end() ? fmt::format("{:.2f},", p->second.mean_ns) : ",";
      out += m != c.measured_ops.end() ? fmt::format("{:.2f},", m->second.mean_ns) : ",";
      out += p != predicted.end() ? fmt::format("{},", p->second.count) : ",";
      out += m != c.measured_ops.end() ? fmt::format("{}\n", m->second.count) : "\n";
    }
  }
  return out;
}

nlohmann::json validation_json(const std::vector<ValidationCase>& cases, const ValidationStats& st,
                               const nlohmann::json& meta) {
  nlohmann::json j = meta;
  j["stats"] = {{"cases", st.cases},
                {"mape_pct", st.mape},
                {"max_abs_error_pct", st.max_abs_err},
                {"worst_case", st.worst},
                {"spearman_time", st.spearman_time},
                {"spearman_within_problem", st.spearman_per_problem},
                {"spearman_within_problem_mean", st.spearman_within_mean}};
  auto ops = [](const std::map<std::string, OpStat>& m) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [k, v] : m) o[k] = {{"mean_ns", v.mean_ns}, {"spans", v.count}};
    return o;
  };
  j["cases"] = nlohmann::json::array();
  for (const auto& c : cases) {
    nlohmann::json x = {{"schedule", c.schedule},        {"variant", c.variant}, {"problem", c.problem_label},
                        {"shape", c.problem.describe()}, {"kernel", c.kernel},   {"measured", c.measured}};
    if (!c.measured) x["skipped"] = c.skipped;
    if (c.measured) {
      x["predicted_us"] = c.predicted_us;
      x["measured_us"] = {
          {"median", c.measured_us}, {"min", c.measured_min_us}, {"max", c.measured_max_us}, {"runs", c.runs}};
      if (!c.run_us.empty()) x["measured_us"]["each_run"] = c.run_us;
      if (c.timed_clock_ghz > 0) x["measured_us"]["sm_clock_ghz"] = c.timed_clock_ghz;
      if (c.kernel_clock_ghz > 0) x["measured_us"]["kernel_clock_ghz"] = c.kernel_clock_ghz;
      x["error_pct"] = c.error_pct();
      x["measured_tflops"] = c.measured_tflops();
      x["predicted_tflops"] = c.predicted_tflops();
      x["ops"] = {{"predicted", ops(c.predicted_ops_at_trace_clock())}, {"measured", ops(c.measured_ops)}};
    }
    if (c.cudnn_us > 0) x["cudnn"] = {{"us", c.cudnn_us}, {"tflops", c.problem.flops() / (c.cudnn_us * 1e6)}};
    if (c.measured && c.traced_us > 0)
      x["traced"] = {
          {"us", c.traced_us}, {"overhead_pct", c.trace_overhead_pct()}, {"sm_clock_ghz", c.measured_clock_ghz}};
    j["cases"].push_back(x);
  }
  return j;
}

}  // namespace attnsim
