#include "measure/fidelity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <thread>
#include <time.h>  // clock_gettime (POSIX)
#include <tuple>

#include "lower/schedule.hpp"
#include "model/json_reader.hpp"
#include "sm90/fa3_api.h"  // parse_trace_warps
#include "sm90/trace_sampling.h"

namespace attnsim {

namespace fs = std::filesystem;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

namespace {
/// The predicted op means over the warps case `c`'s traced runs recorded, on tiles `rec`.
std::map<std::string, OpStat> case_op_means(const ValidationCase& c, const Timeline& tl, const RecordedTiles& rec) {
  return c.trace_warps ? op_means_of_warps(tl, c.trace_warps, rec.first, rec.end)
                       : op_means_first_warps(tl, rec.first, rec.end);
}
}  // namespace

Prediction predict_case(const Schedule& schedule, const Hardware& hw, ValidationCase& c, double clock_ghz,
                        bool with_ops) {
  PredictOptions opt;
  opt.clock_ghz = clock_ghz;
  const double t0 = thread_cpu_seconds();
  Prediction p = predict(schedule, hw, c.problem, opt);
  c.predict_cpu_s = thread_cpu_seconds() - t0;
  c.predicted_us = p.time_us;
  c.predicted_cycles = p.cycles;
  c.predicted_clock_ghz = p.clock_ghz;
  c.predicted_clock_inputs = {p.activity, p.grid_cycles, p.hbm_bytes, p.flops, p.power_clocked};
  c.predicted_grid_mode = static_cast<int>(p.mode);
  c.predicted_ops.clear();
  if (!with_ops) return p;
  // The measured spans come from the traced twin: where its code differs in what the model sees,
  // its spans are predicted from it, at this prediction's clock; over the tiles the kernel records.
  if (const auto twin = schedule.traced_twin(hw, c.problem)) {
    PredictOptions at_clock = opt;
    at_clock.clock_ghz = p.clock_ghz;
    const Prediction traced = predict(*twin, hw, c.problem, at_clock);
    const RecordedTiles rec = recorded_tiles(*twin, traced, c.trace_sample);  // its critical CTA's tiles
    c.predicted_ops = case_op_means(c, traced.critical.timeline, rec);
  } else {
    const RecordedTiles rec = recorded_tiles(schedule, p, c.trace_sample);
    c.predicted_ops = case_op_means(c, p.critical.timeline, rec);
  }
  return p;
}

RecordedTiles recorded_tiles(const Schedule& schedule, const Prediction& p, int trace_sample) {
  RecordedTiles r;
  if (trace_sample <= 1 || schedule.family() != "fa3_sm90") return r;
  const int tiles = static_cast<int>(std::min<size_t>(p.total_tiles, std::numeric_limits<int>::max()));
  // The kernel's grid (kernels/sm90/launch.cuh): a static persistent one of the planned CTAs, the
  // dynamic scheduler's of its resident CTAs, one CTA per tile otherwise.
  if (p.mode == GridPlan::Mode::StaticPersistent) {
    r.first = sm90::make_trace_sample_rule(trace_sample, tiles, static_cast<int>(p.cta_count), true, p.resident_ctas)
                  .first_local;
  } else if (p.mode == GridPlan::Mode::DynamicLpt) {
    const sm90::TraceSampleRule rule =
        sm90::make_trace_sample_rule(trace_sample, tiles, std::min(tiles, p.resident_ctas), false, p.resident_ctas);
    r.first = rule.first_local;
    // A CTA takes its tiles in the order: those from dynamic_below on are the end of its list.
    const auto& order = p.critical_tile_order;
    for (size_t i = 0; i < order.size(); ++i)
      if (order[i] >= rule.dynamic_below) {
        r.end = static_cast<int>(i);
        break;
      }
  }
  return r;
}

void share_clock(const Hardware& hw, const std::vector<ValidationCase*>& together) {
  std::vector<Prediction> preds;
  for (const ValidationCase* c : together) {
    if (c->predicted_clock_ghz <= 0) return;  // not predicted
    Prediction p;
    p.activity = c->predicted_clock_inputs.activity;
    p.grid_cycles = c->predicted_clock_inputs.grid_cycles;
    p.hbm_bytes = c->predicted_clock_inputs.hbm_bytes;
    p.flops = c->predicted_clock_inputs.flops;
    p.power_clocked = c->predicted_clock_inputs.power_clocked;
    p.cycles = c->predicted_cycles;
    preds.push_back(std::move(p));
  }
  std::vector<const Prediction*> ptrs;
  for (const auto& p : preds) ptrs.push_back(&p);
  const std::optional<double> ghz = shared_clock_ghz(hw, ptrs);
  if (!ghz) return;
  for (size_t i = 0; i < together.size(); ++i) {
    ValidationCase& c = *together[i];
    set_clock(preds[i], hw, *ghz);
    const double scale = c.predicted_clock_ghz / *ghz;  // the op spans' cycles at the new clock
    for (auto& [op, st] : c.predicted_ops) {
      st.mean_ns *= scale;
      st.total_ns *= scale;
    }
    c.predicted_us = preds[i].time_us;
    c.predicted_cycles = preds[i].cycles;
    c.predicted_clock_ghz = *ghz;
  }
}

void share_clock_by_problem(const Hardware& hw, std::vector<ValidationCase>& cases) {
  std::map<std::string, std::vector<ValidationCase*>> by_problem;
  for (auto& c : cases)
    if (c.measured) by_problem[c.problem.describe()].push_back(&c);
  for (auto& [shape, group] : by_problem) share_clock(hw, group);
}

const std::vector<std::string>& acceptance_compute_ops() {
  static const std::vector<std::string> ops = {"mma_qk", "mma_pv", "softmax_max", "softmax_exp", "rescale_o"};
  return ops;
}

double OpRow::error_pct() const {
  if (!has_measured || measured_ns <= 0) return std::numeric_limits<double>::quiet_NaN();
  return 100.0 * ((has_predicted ? predicted_ns : 0.0) - measured_ns) / measured_ns;
}

namespace {

std::string pct_or_dash(double x) { return std::isnan(x) ? "-" : fmt::format("{:+.1f}%", x); }

std::string where(const std::string& name, const std::string& problem) { return name + " on " + problem; }

OpRule rule_of(const std::string& op) {
  const auto& c = acceptance_compute_ops();
  if (std::find(c.begin(), c.end(), op) != c.end()) return OpRule::Compute;
  if (op.rfind("wait", 0) == 0) return OpRule::Wait;
  return OpRule::None;
}

std::string rule_text(OpRule r) {
  switch (r) {
    case OpRule::Compute:
      return fmt::format("within {:g}%", kComputeOpTolPct);
    case OpRule::Wait:
      return fmt::format("{:g}% or {:g} ns", kWaitTolPct, kWaitTolNs);
    default:
      return "not judged";
  }
}

bool judge(const OpRow& r) {
  switch (r.rule) {
    case OpRule::Compute:
      return r.has_predicted && r.has_measured && r.measured_ns > 0 && std::fabs(r.error_pct()) <= kComputeOpTolPct;
    case OpRule::Wait: {
      const double p = r.has_predicted ? r.predicted_ns : 0, m = r.has_measured ? r.measured_ns : 0;
      return std::fabs(p - m) <= kWaitTolNs || (m > 0 && 100.0 * std::fabs(p - m) / m <= kWaitTolPct);
    }
    default:
      return true;
  }
}

/// Order of the per-op table: the judged compute ops as listed, then unjudged ops, then waits.
int op_order(const std::string& op) {
  const auto& c = acceptance_compute_ops();
  const auto it = std::find(c.begin(), c.end(), op);
  if (it != c.end()) return static_cast<int>(it - c.begin());
  return rule_of(op) == OpRule::Wait ? 200 : 100;
}

/// x with `digits` decimals, as the double nearest to that decimal (prints as written).
double round_to(double x, int digits) { return std::stod(fmt::format("{:.{}f}", x, digits)); }

}  // namespace

FidelityReport fidelity_report(const std::vector<ValidationCase>& cases) {
  FidelityReport r;
  r.stats = validation_stats(cases);
  r.sweep = sweep_ranking(cases);

  // Cycles and clock, where the clock was probed while the case was timed.
  ClockSplit& k = r.clock;
  for (const auto& c : cases) {
    // The clock from inside the kernel where it was read, else the probe's.
    if (!c.has_clock_split()) continue;
    const double ghz = c.run_clock_ghz(), cyc = c.cycles_error_pct(), clk = c.clock_error_pct();
    if (k.cases == 0) {
      k.clock_min_err = k.clock_max_err = clk;
      k.timed_clock_min = k.timed_clock_max = ghz;
    }
    ++k.cases;
    k.in_kernel += c.kernel_clock_ghz > 0;
    k.cycles_mape += std::abs(cyc);
    k.cycles_mean_err += cyc;
    if (std::abs(cyc) > k.cycles_max_abs_err)
      k.cycles_max_abs_err = std::abs(cyc), k.cycles_worst = where(c.name(), c.problem_label);
    k.clock_mean_err += clk;
    k.clock_min_err = std::min(k.clock_min_err, clk);
    k.clock_max_err = std::max(k.clock_max_err, clk);
    k.timed_clock_min = std::min(k.timed_clock_min, ghz);
    k.timed_clock_max = std::max(k.timed_clock_max, ghz);
  }
  if (k.cases > 0) {
    k.cycles_mape /= k.cases;
    k.cycles_mean_err /= k.cases;
    k.clock_mean_err /= k.cases;
  }

  // Per change: each measured variant against the measured base of its schedule on its problem.
  std::map<std::pair<std::string, std::string>, const ValidationCase*> base;
  for (const auto& c : cases)
    if (c.measured && c.variant.empty()) base[{c.schedule, c.problem_label}] = &c;
  double sum_diff = 0;
  size_t judged = 0;
  for (const auto& c : cases) {
    if (!c.measured || c.variant.empty()) continue;
    const auto b = base.find({c.schedule, c.problem_label});
    if (b == base.end()) continue;
    ChangeRow row;
    row.schedule = c.schedule;
    row.variant = c.variant;
    row.problem = c.problem_label;
    row.measured_pct = 100.0 * (c.measured_us / b->second->measured_us - 1);
    row.predicted_pct = 100.0 * (c.predicted_us / b->second->predicted_us - 1);
    // The base's own kernel on the same grid (a variant that only changes the tile scheduler runs
    // the same knob set under another grid: a change, not noise).
    row.same_kernel =
        !c.kernel.empty() && c.kernel == b->second->kernel && c.predicted_grid_mode == b->second->predicted_grid_mode;
    if (row.same_kernel) {
      ++r.same_kernel_changes;
      r.same_kernel_noise_pct = std::max(r.same_kernel_noise_pct, std::fabs(row.measured_pct));
      r.changes.push_back(row);
      continue;
    }
    ++judged;
    row.significant = std::fabs(row.measured_pct) > kSignificantChangePct;
    row.signs_agree = row.measured_pct * row.predicted_pct > 0;
    if (row.significant) {
      ++r.significant_changes;
      if (row.signs_agree) ++r.signs_agree;
    }
    const double d = std::fabs(row.diff_pts());
    sum_diff += d;
    if (d >= r.max_change_diff_pts) {
      r.max_change_diff_pts = d;
      r.max_change = where(c.variant, c.problem_label);
    }
    r.changes.push_back(row);
  }
  if (judged > 0) r.mean_change_diff_pts = sum_diff / static_cast<double>(judged);

  // Per op: every measured case with measured spans.
  for (const auto& c : cases) {
    if (!c.measured || c.measured_ops.empty()) continue;
    ++r.op_cases;
    r.op_cases_clocked += c.measured_clock_ghz > 0;
    const std::map<std::string, OpStat> predicted = c.predicted_ops_at_trace_clock();  // the clock they ran at
    std::set<std::string> keys;
    for (const auto& [k, v] : predicted) keys.insert(k);
    for (const auto& [k, v] : c.measured_ops) keys.insert(k);
    for (const auto& k : keys) {
      OpRow row;
      row.case_name = c.name();
      row.problem = c.problem_label;
      row.op = k;
      if (const auto p = predicted.find(k); p != predicted.end()) {
        row.has_predicted = true;
        row.predicted_ns = p->second.mean_ns;
      }
      if (const auto m = c.measured_ops.find(k); m != c.measured_ops.end()) {
        row.has_measured = true;
        row.measured_ns = m->second.mean_ns;
      }
      row.rule = rule_of(k);
      row.pass = judge(row);
      r.ops.push_back(row);
    }
  }
  std::map<std::string, OpSummary> per;
  std::map<std::string, int> with_error;
  for (const auto& row : r.ops) {
    OpSummary& s = per[row.op];
    s.op = row.op;
    s.rule = row.rule;
    ++s.cases;
    if (row.pass) ++s.passed;
    const double e = row.error_pct();
    if (row.has_predicted && !std::isnan(e)) {
      s.mean_abs_err_pct += std::fabs(e);
      ++with_error[row.op];
      if (std::fabs(e) >= std::fabs(s.worst_err_pct)) {
        s.worst_err_pct = e;
        s.worst_case = where(row.case_name, row.problem);
      }
    }
  }
  bool all = r.op_cases > 0;
  for (auto& [op, s] : per) {
    if (with_error[op]) s.mean_abs_err_pct /= with_error[op];
    if (s.rule != OpRule::None && s.passed < s.cases) all = false;
    r.op_summary.push_back(s);
  }
  // A judged compute op that no case has at all fails too.
  if (r.op_cases > 0)
    for (const auto& op : acceptance_compute_ops())
      if (!per.count(op)) {
        OpSummary s;
        s.op = op;
        s.rule = OpRule::Compute;
        s.cases = r.op_cases;
        r.op_summary.push_back(s);
        all = false;
      }
  std::stable_sort(r.op_summary.begin(), r.op_summary.end(), [](const OpSummary& a, const OpSummary& b) {
    return std::make_pair(op_order(a.op), a.op) < std::make_pair(op_order(b.op), b.op);
  });
  r.ops_accepted = all;
  return r;
}

std::string format_changes(const FidelityReport& r) {
  if (r.changes.empty()) return "\nper change: no variant measured beside its base schedule\n";
  std::string out = fmt::format(
      "\nper change against the base schedule: measured (variant / base - 1) vs predicted; sign judged where "
      "|measured| > {:g}%\n",
      kSignificantChangePct);
  out += fmt::format("{:<30} {:<22} {:>9} {:>10} {:>10}  {}\n", "variant", "problem", "measured", "predicted", "diff",
                     "sign");
  for (const auto& c : r.changes)
    out += fmt::format("{:<30} {:<22} {:>9} {:>10} {:>6.1f} pts  {}\n", c.variant, c.problem, pct_or_dash(c.measured_pct),
                       pct_or_dash(c.predicted_pct), c.diff_pts(),
                       c.same_kernel    ? "same kernel as the base: noise"
                       : !c.significant ? ""
                       : c.signs_agree  ? "agree"
                                        : "DISAGREE");
  out += fmt::format(
      "{} changes: max |diff| {:.1f} pts ({}), mean |diff| {:.1f} pts; signs agree on {} of {} changes with |measured| "
      "> {:g}%\n",
      r.changes.size() - r.same_kernel_changes, r.max_change_diff_pts, r.max_change, r.mean_change_diff_pts,
      r.signs_agree, r.significant_changes, kSignificantChangePct);
  if (r.same_kernel_changes > 0)
    out += fmt::format(
        "{} more variants ran the base's own kernel (not counted above): their measured changes, up to {:.1f}%, are "
        "run-to-run noise\n",
        r.same_kernel_changes, r.same_kernel_noise_pct);
  return out;
}

std::string format_op_acceptance(const FidelityReport& r, bool detail) {
  const std::string rule =
      fmt::format("{} within {:g}% of measured on every case; every wait within {:g}% or {:g} ns",
                  fmt::join(acceptance_compute_ops(), ", "), kComputeOpTolPct, kWaitTolPct, kWaitTolNs);
  if (r.op_cases == 0) return fmt::format("\nper-op acceptance ({}): not judged, no measured spans\n", rule);
  std::string out = fmt::format(
      "\nper op, mean span duration predicted vs measured over {} cases (predicted: critical CTA; measured: every "
      "CTA; {} of them compared at the traced run's clock, the rest at the prediction's)\n",
      r.op_cases, r.op_cases_clocked);
  out +=
      fmt::format("{:<30} {:<15} {:>7} {:>10} {:>10}  {}\n", "op", "rule", "pass", "mean|err|", "worst", "worst case");
  std::vector<std::string> failing;
  for (const auto& s : r.op_summary) {
    out += fmt::format("{:<30} {:<15} {:>7} {:>10} {:>10}  {}\n", s.op, rule_text(s.rule),
                       s.rule == OpRule::None ? "-" : fmt::format("{}/{}", s.passed, s.cases),
                       s.worst_case.empty() ? "-" : fmt::format("{:.1f}%", s.mean_abs_err_pct),
                       s.worst_case.empty() ? "-" : pct_or_dash(s.worst_err_pct), s.worst_case);
    if (s.rule != OpRule::None && s.passed < s.cases)
      failing.push_back(fmt::format("{} fails on {} of {}", s.op, s.cases - s.passed, s.cases));
  }
  if (detail) {
    out += "failing (case, op):\n";
    for (const auto& row : r.ops)
      if (!row.pass)
        out += fmt::format("  {:<48} {:<30} predicted {:>9} ns  measured {:>9} ns  {:>9}\n",
                           where(row.case_name, row.problem), row.op,
                           row.has_predicted ? fmt::format("{:.1f}", row.predicted_ns) : "-",
                           row.has_measured ? fmt::format("{:.1f}", row.measured_ns) : "-", pct_or_dash(row.error_pct()));
  }
  out += fmt::format("per-op acceptance ({}): {}\n", rule,
                     r.ops_accepted ? "PASS" : fmt::format("FAIL: {}", fmt::join(failing, "; ")));
  return out;
}

std::string format_clock_split(const FidelityReport& r) {
  const ClockSplit& k = r.clock;
  if (k.cases == 0) return "";
  return fmt::format(
      "\ntime = cycles / clock, over the {} cases whose SM clock was read as they were timed ({:.3f}-{:.3f} GHz; "
      "{} of them from inside the kernel, the rest by the probe, an idle SM's clock, above what loaded SMs run "
      "at):\n  cycles: predicted against measured time x that clock: MAPE {:.1f}%, mean {:+.1f}%, max |error| "
      "{:.1f}% ({})\n  clock: the prediction's against that one: mean {:+.1f}%, from {:+.1f}% to {:+.1f}%\n",
      k.cases, k.timed_clock_min, k.timed_clock_max, k.in_kernel, k.cycles_mape, k.cycles_mean_err,
      k.cycles_max_abs_err, k.cycles_worst, k.clock_mean_err, k.clock_min_err, k.clock_max_err);
}

std::string format_sweep(const FidelityReport& r) {
  if (r.sweep.candidates == 0) return "";
  std::string out =
      fmt::format("\nsweep candidates ranked by geometric-mean TFLOPS ({} of {} measured on every problem):\n",
                  r.sweep.rows.size(), r.sweep.candidates);
  for (const auto& row : r.sweep.rows)
    out += fmt::format("  {:<70} predicted {:7.1f}  measured {:7.1f}\n", row.candidate, row.predicted_geomean_tflops,
                       row.measured_geomean_tflops);
  if (r.sweep.has_spearman) out += fmt::format("Spearman of the candidate rankings: {:.3f}\n", r.sweep.spearman);
  return out;
}

nlohmann::json fidelity_json(const FidelityReport& r) {
  auto num = [](double x) { return std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x); };
  nlohmann::json j;
  if (r.clock.cases > 0) {
    const ClockSplit& k = r.clock;
    j["clock_split"] = {{"cases", k.cases},
                        {"clocks_from_inside_the_kernel", k.in_kernel},
                        {"cycles_mape_pct", k.cycles_mape},
                        {"cycles_mean_error_pct", k.cycles_mean_err},
                        {"cycles_max_abs_error_pct", k.cycles_max_abs_err},
                        {"cycles_worst", k.cycles_worst},
                        {"clock_mean_error_pct", k.clock_mean_err},
                        {"clock_error_range_pct", {k.clock_min_err, k.clock_max_err}},
                        {"timed_clock_ghz_range", {k.timed_clock_min, k.timed_clock_max}}};
  }
  if (r.sweep.candidates > 0) {
    j["sweep"] = {{"candidates", r.sweep.candidates}, {"ranked", r.sweep.rows.size()}};
    if (r.sweep.has_spearman) j["sweep"]["spearman"] = r.sweep.spearman;
  }
  j["changes"] = nlohmann::json::array();
  for (const auto& c : r.changes)
    j["changes"].push_back({{"schedule", c.schedule},
                            {"variant", c.variant},
                            {"problem", c.problem},
                            {"measured_change_pct", c.measured_pct},
                            {"predicted_change_pct", c.predicted_pct},
                            {"diff_pts", c.diff_pts()},
                            {"significant", c.significant},
                            {"signs_agree", c.signs_agree},
                            {"same_kernel", c.same_kernel}});
  j["changes_summary"] = {{"changes", r.changes.size() - r.same_kernel_changes},
                          {"same_kernel_changes", r.same_kernel_changes},
                          {"same_kernel_noise_pct", r.same_kernel_noise_pct},
                          {"max_abs_diff_pts", r.max_change_diff_pts},
                          {"max_abs_diff_case", r.max_change},
                          {"mean_abs_diff_pts", r.mean_change_diff_pts},
                          {"significant_threshold_pct", kSignificantChangePct},
                          {"significant", r.significant_changes},
                          {"signs_agree", r.signs_agree}};
  j["ops"] = nlohmann::json::array();
  for (const auto& o : r.ops)
    j["ops"].push_back({{"case", o.case_name},
                        {"problem", o.problem},
                        {"op", o.op},
                        {"predicted_ns", o.has_predicted ? nlohmann::json(o.predicted_ns) : nlohmann::json(nullptr)},
                        {"measured_ns", o.has_measured ? nlohmann::json(o.measured_ns) : nlohmann::json(nullptr)},
                        {"error_pct", num(o.error_pct())},
                        {"rule", rule_text(o.rule)},
                        {"pass", o.pass}});
  j["ops_summary"] = nlohmann::json::array();
  for (const auto& s : r.op_summary)
    j["ops_summary"].push_back(
        {{"op", s.op},
         {"rule", rule_text(s.rule)},
         {"cases", s.cases},
         {"passed", s.passed},
         {"mean_abs_error_pct", s.worst_case.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.mean_abs_err_pct)},
         {"worst_error_pct", s.worst_case.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.worst_err_pct)},
         {"worst_case", s.worst_case}});
  j["ops_acceptance"] = {
      {"cases", r.op_cases},
      {"cases_at_trace_clock", r.op_cases_clocked},
      {"judged", r.op_cases > 0},
      {"pass", r.ops_accepted},
      {"rule", fmt::format("{} within {:g}% of measured on every case; every wait within {:g}% or {:g} ns",
                           fmt::join(acceptance_compute_ops(), ", "), kComputeOpTolPct, kWaitTolPct, kWaitTolNs)}};
  return j;
}

// ---- committed measurements -------------------------------------------------------------

namespace {

/// CSV records: fields split on commas outside double quotes; "" inside quotes is a quote; a
/// quote inside a quoted field that is not followed by a comma or a line end is kept as text
/// (validate writes its `skipped` messages quoted without escaping).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch != '"') {
        field += ch;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (i + 1 == text.size() || text[i + 1] == ',' || text[i + 1] == '\n' || text[i + 1] == '\r') {
        quoted = false;
      } else {
        field += ch;
      }
      continue;
    }
    if (ch == '"' && field.empty()) {
      quoted = any = true;
    } else if (ch == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      row.clear();
      field.clear();
      any = false;
    } else {
      field += ch;
      any = true;
    }
  }
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

/// Columns of a CSV by header name.
struct Columns {
  std::map<std::string, size_t> index;
  std::string origin;
  explicit Columns(const std::vector<std::string>& header, std::string o) : origin(std::move(o)) {
    for (size_t i = 0; i < header.size(); ++i) index[header[i]] = i;
  }
  void require(const std::vector<std::string>& names) const {
    for (const auto& n : names)
      if (!index.count(n)) throw InputError(origin, "/", fmt::format("CSV header has no column '{}'", n));
  }
  const std::string& get(const std::vector<std::string>& row, const std::string& name) const {
    static const std::string empty;
    const size_t i = index.at(name);
    return i < row.size() ? row[i] : empty;
  }
};

double to_number(const std::string& s, const std::string& origin, size_t line, const std::string& column) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {}
  throw InputError(origin, fmt::format("row {}, column {}", line, column),
                   fmt::format("expected a number, got '{}'", s));
}

std::string read_text(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "/", "cannot read the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The cases by (schedule, variant, problem label): how ops.csv and results.json rows name them.
using CasesByName = std::map<std::tuple<std::string, std::string, std::string>, ValidationCase*>;
CasesByName cases_by_name(std::vector<ValidationCase>& cases) {
  CasesByName by;
  for (auto& c : cases) by[{c.schedule, c.variant, c.problem_label}] = &c;
  return by;
}
}  // namespace

std::vector<ValidationCase> parse_results_csv(const std::string& text, const std::string& origin) {
  const auto rows = parse_csv(text);
  if (rows.empty()) throw InputError(origin, "/", "empty CSV: expected a header and rows as `attnsim validate` writes");
  const Columns col(rows[0], origin);
  col.require({"schedule", "variant", "problem", "batch", "heads", "kv_heads", "seqlen_q", "seqlen_k", "head_dim",
               "causal", "kernel", "predicted_us", "measured_us"});
  std::vector<ValidationCase> out;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    if (col.get(row, "measured_us").empty()) continue;  // not run (no kernel): nothing to compare
    ValidationCase c;
    c.schedule = col.get(row, "schedule");
    c.variant = col.get(row, "variant");
    c.problem_label = col.get(row, "problem");
    c.kernel = col.get(row, "kernel");
    nlohmann::json p;
    for (const char* k : {"batch", "heads", "kv_heads", "seqlen_q", "seqlen_k", "head_dim"})
      p[k] = static_cast<long long>(to_number(col.get(row, k), origin, i, k));
    p["causal"] = to_number(col.get(row, "causal"), origin, i, "causal") != 0;
    c.problem = problem_from_json(p, origin, fmt::format("row {}", i));
    c.measured = true;
    c.measured_us = to_number(col.get(row, "measured_us"), origin, i, "measured_us");
    c.predicted_us = to_number(col.get(row, "predicted_us"), origin, i, "predicted_us");
    if (col.index.count("runs") && !col.get(row, "runs").empty())
      c.runs = static_cast<int>(to_number(col.get(row, "runs"), origin, i, "runs"));
    if (col.index.count("cudnn_us") && !col.get(row, "cudnn_us").empty())
      c.cudnn_us = to_number(col.get(row, "cudnn_us"), origin, i, "cudnn_us");
    if (col.index.count("timed_clock_ghz") && !col.get(row, "timed_clock_ghz").empty())
      c.timed_clock_ghz = to_number(col.get(row, "timed_clock_ghz"), origin, i, "timed_clock_ghz");
    if (col.index.count("kernel_clock_ghz") && !col.get(row, "kernel_clock_ghz").empty())
      c.kernel_clock_ghz = to_number(col.get(row, "kernel_clock_ghz"), origin, i, "kernel_clock_ghz");
    if (col.index.count("trace_clock_ghz") && !col.get(row, "trace_clock_ghz").empty())
      c.measured_clock_ghz = to_number(col.get(row, "trace_clock_ghz"), origin, i, "trace_clock_ghz");
    if (c.measured_us <= 0)
      throw InputError(origin, fmt::format("row {}, column measured_us", i), "expected a time > 0");
    out.push_back(std::move(c));
  }
  return out;
}

void attach_trace_clocks(const nlohmann::json& results, const std::string& origin, std::vector<ValidationCase>& cases) {
  if (!results.is_object() || !results.contains("cases") || !results["cases"].is_array()) return;
  const CasesByName by = cases_by_name(cases);
  const nlohmann::json& all = results["cases"];
  for (size_t i = 0; i < all.size(); ++i) {
    const nlohmann::json& x = all[i];
    if (!x.is_object() || !x.contains("traced")) continue;
    JsonReader r(x, origin, fmt::format("/cases/{}", i));
    const std::string schedule = r.string("schedule"), variant = r.string_or("variant", ""),
                      problem = r.string("problem");
    JsonReader traced = r.object("traced");
    if (!traced.has("sm_clock_ghz")) continue;
    const auto it = by.find({schedule, variant, problem});
    if (it != by.end()) it->second->measured_clock_ghz = traced.number("sm_clock_ghz", 0.1, 10.0);
  }
}

void attach_ops_csv(const std::string& text, const std::string& origin, std::vector<ValidationCase>& cases) {
  const auto rows = parse_csv(text);
  if (rows.empty()) return;
  const Columns col(rows[0], origin);
  col.require({"schedule", "variant", "problem", "op", "measured_mean_ns", "measured_spans"});
  const CasesByName by = cases_by_name(cases);
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    const std::string& mean = col.get(row, "measured_mean_ns");
    if (mean.empty()) continue;
    const auto it = by.find({col.get(row, "schedule"), col.get(row, "variant"), col.get(row, "problem")});
    if (it == by.end()) continue;  // a case without a measured time
    OpStat s;
    s.mean_ns = to_number(mean, origin, i, "measured_mean_ns");
    const std::string& n = col.get(row, "measured_spans");
    s.count = n.empty() ? 0 : static_cast<long long>(to_number(n, origin, i, "measured_spans"));
    s.total_ns = s.mean_ns * static_cast<double>(s.count);
    it->second->measured_ops[col.get(row, "op")] = s;
  }
}

ValidationData load_validation_data(const std::string& dir_arg) {
  fs::path dir = dir_arg;
  if (!fs::exists(dir / "results.csv") && fs::exists(dir / "fa3_sm90_validate" / "results.csv"))
    dir = dir / "fa3_sm90_validate";
  const fs::path results = dir / "results.csv";
  if (!fs::exists(results))
    throw InputError(dir.string(), "/", "no results.csv here: expected a folder `attnsim validate --out` wrote");
  ValidationData d;
  d.dir = dir.lexically_normal().string();
  while (!d.dir.empty() && d.dir.back() == '/') d.dir.pop_back();
  d.gpu = fs::absolute(fs::path(d.dir)).lexically_normal().parent_path().filename().string();
  d.cases = parse_results_csv(read_text(results.string()), results.string());
  if (fs::exists(dir / "ops.csv")) {
    d.has_ops = true;
    attach_ops_csv(read_text((dir / "ops.csv").string()), (dir / "ops.csv").string(), d.cases);
    // The traced runs' clocks, which the spans ran at: from results.json where results.csv
    // predates its trace_clock_ghz column (2026-11-30), each case's "traced": {"sm_clock_ghz"}.
    const auto clocked = [](const ValidationCase& c) { return c.measured_clock_ghz > 0; };
    if (const fs::path json = dir / "results.json";
        fs::exists(json) && std::none_of(d.cases.begin(), d.cases.end(), clocked))
      attach_trace_clocks(load_json_file(json.string()), json.string(), d.cases);
  }
  if (const fs::path timing = dir / "timing.json"; fs::exists(timing)) {
    const nlohmann::json j = load_json_file(timing.string());
    JsonReader r(j, timing.string());
    // "problem": every kernel of a problem timed in turns; "kernel": each on its own.
    d.timed_together_by_problem = r.choice_or("timed_together", "kernel", {"problem", "kernel"}) == "problem";
    // Traced runs that left each CTA's first tile unrecorded (ValidationCase::trace_sample): the
    // predictions leave it out too.
    if (r.has("trace_rule") && r.choice("trace_rule", {kTraceRuleNoFirstTile}) == kTraceRuleNoFirstTile) {
      const int sample = static_cast<int>(r.integer("trace_sample", 1, 1 << 20));
      for (auto& c : d.cases) c.trace_sample = sample;
    }
    // The warps the traced runs recorded, where not the default first warp of each warpgroup.
    if (r.has("trace_warps")) {
      const std::string warps = r.string("trace_warps");
      uint32_t mask = 0;
      try {
        mask = warps == "first" ? 0 : sm90::parse_trace_warps(warps);
      } catch (const std::invalid_argument& e) {
        throw InputError(timing.string(), "/trace_warps", e.what());
      }
      for (auto& c : d.cases) c.trace_warps = mask;
    }
  }
  return d;
}

std::vector<std::string> committed_validation_dirs(const std::string& root) {
  std::vector<std::string> out;
  const fs::path base = fs::path(root) / "configs" / "validation";
  if (!fs::is_directory(base)) return out;
  for (const auto& gpu : fs::directory_iterator(base)) {
    if (!gpu.is_directory()) continue;
    for (const auto& e : fs::directory_iterator(gpu.path()))
      if (e.is_directory() && fs::exists(e.path() / "results.csv") && fs::exists(e.path() / "fidelity.json"))
        out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> measured_kernel_pins(const std::string& kernel) {
  std::vector<std::string> pins;
  if (kernel.rfind("fa3_sm90 ", 0) != 0) return pins;
  // fa3_sm90 kernels before own O buffers and L2 sections (2026-11-24) staged O in Q's buffer
  // and walked longest-first tiles heads fastest; sm90::KernelKnobs::describe names both since.
  // (" o_in_v": O staged in the V ring, 2026-11-28.)
  if (kernel.find(" o_in_v") != std::string::npos)
    pins.push_back("/o_staging=v_ring");
  else if (kernel.find(" own_o") == std::string::npos)
    pins.push_back("/o_staging=q_buffer");
  if (kernel.find(" l2 ") == std::string::npos) pins.push_back("/l2_section_mib=0");
  // The tile it ran ("hd64 m192 n128 ..."; hd64's auto tile was 192 x 128 before 2026-11-24)
  // and whether it ran pingpong (auto left hd256 without it before 2026-11-24).
  pins.push_back(kernel.find(" pingpong") == std::string::npos ? "/pingpong=false" : "/pingpong=true");
  int m = 0, n = 0;
  const size_t at = kernel.find(" m");
  if (at != std::string::npos && std::sscanf(kernel.c_str() + at, " m%d n%d", &m, &n) == 2)
    pins.push_back(fmt::format("/tile={{\"m_block\":{},\"n_block\":{}}}", m, n));
  // Whether it rescaled O conditionally, and at which threshold (" rescale>8"; every block
  // before the knob, 2026-11-28).
  double threshold = 0;
  const size_t rs = kernel.find(" rescale>");
  if (rs != std::string::npos && std::sscanf(kernel.c_str() + rs, " rescale>%lf", &threshold) == 1)
    pins.push_back(fmt::format("/rescale={{\"conditional\":true,\"threshold_log2\":{}}}", threshold));
  else
    pins.push_back("/rescale/conditional=false");
  // Whether it trimmed the last KV block (" trim_last"; none did before the knob, 2026-11-29).
  pins.push_back(kernel.find(" trim_last") == std::string::npos ? "/trim_last_block=false" : "/trim_last_block=true");
  return pins;
}

namespace {

/// The predicted_* fields of `from` into `to` (what predict_case writes).
void copy_prediction(const ValidationCase& from, ValidationCase& to) {
  to.predicted_us = from.predicted_us;
  to.predicted_cycles = from.predicted_cycles;
  to.predicted_clock_ghz = from.predicted_clock_ghz;
  to.predicted_clock_inputs = from.predicted_clock_inputs;
  to.predicted_grid_mode = from.predicted_grid_mode;
  to.predicted_ops = from.predicted_ops;
  to.predict_cpu_s = from.predict_cpu_s;
}

/// Everything a prediction depends on besides the model: hardware, schedule file, overrides,
/// variant and every field of the problem.
std::string memo_key(const Hardware& hw, const std::string& file, const std::vector<std::string>& sets,
                     const std::string& variant, const Problem& p) {
  std::string k = fmt::format("{}|{}|{}|b{} h{}/{} sq{} sk{} d{}/{} {} {} r{}", hw.name, file, variant, p.batch,
                              p.heads, p.kv_heads, p.seqlen_q, p.seqlen_k, p.head_dim, p.head_dim_v,
                              p.causal ? "causal" : "full", p.dtype,
                              p.rescale_rate ? fmt::format("{:a}", *p.rescale_rate) : std::string("auto"));
  for (const auto& s : sets) k += "|" + s;
  return k;
}

}  // namespace

void PredictionMemo::get(const std::string& key, ValidationCase& c,
                         const std::function<void(ValidationCase&)>& compute) {
  std::promise<Memoized> mine;
  std::shared_future<Memoized> f;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = done_.try_emplace(key);
    if (inserted) it->second = mine.get_future().share();
    f = it->second;
    first = inserted;
  }
  if (first) {
    ++misses_;
    try {
      auto r = std::make_shared<ValidationCase>(c);
      compute(*r);
      mine.set_value(std::move(r));
    } catch (...) {
      mine.set_exception(std::current_exception());
    }
  } else {
    ++hits_;
  }
  copy_prediction(*f.get(), c);  // get() rethrows compute's exception
}

std::vector<double> repredict(std::vector<ValidationCase>& cases, const Hardware& hw, const std::string& schedules_dir,
                              int threads, std::vector<std::string>& errors, PredictionMemo* memo,
                              bool at_case_clock, bool with_ops) {
  std::vector<double> seconds(cases.size(), 0.0);
  std::vector<std::string> err(cases.size());
  std::atomic<size_t> next{0};
  auto worker = [&]() {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= cases.size()) return;
      ValidationCase& c = cases[i];
      c.predict_cpu_s = 0;
      try {
        // A sweep candidate is its overrides of its family's schedule file (the kernel column's
        // first word: "fa3_sm90 hd128 m128 ..." -> schedules/fa3_sm90.json).
        const bool candidate = is_sweep_candidate(c.schedule);
        const std::string family = c.kernel.substr(0, c.kernel.find(' '));
        if (candidate && family.empty())
          throw std::runtime_error("a sweep candidate without a kernel column: its schedule file is unknown");
        // The knobs of the kernel that ran, where the schedule file's defaults have moved since.
        std::vector<std::string> sets = candidate ? candidate_overrides(c.schedule) : std::vector<std::string>{};
        for (auto& pin : measured_kernel_pins(c.kernel)) sets.push_back(std::move(pin));
        const std::string file = schedules_dir + "/" + (candidate ? family : c.schedule) + ".json";
        const std::string variant = candidate ? "" : c.variant;
        auto s = load_schedule(file, sets, variant);
        // fa3_sm90's auto scheduler ran causal problems one CTA per tile before it took the dynamic
        // one (2026-11-24): a measured kernel without " dynamic" on a causal problem ran so.
        if (c.problem.causal && family == "fa3_sm90" && c.kernel.find(" dynamic") == std::string::npos) {
          const KernelChoice k = s->real_kernel(hw, c.problem);
          if (k.supported && k.scheduler == TileScheduler::DynamicLpt) {
            sets.push_back("/tile_scheduler=lpt");
            s = load_schedule(file, sets, variant);
          }
        }
        const double ghz = at_case_clock ? c.predicted_clock_ghz : 0.0;
        std::string key = memo_key(hw, file, sets, variant, c.problem);
        if (at_case_clock) key += fmt::format("|at {:a} GHz", ghz);
        if (c.trace_sample > 1) key += fmt::format("|trace sample {}", c.trace_sample);  // its op means
        if (c.trace_warps) key += fmt::format("|trace warps {:#x}", c.trace_warps);
        if (!with_ops) key += "|no ops";
        if (memo)  // a prediction an earlier folder made is copied, with the seconds it took then
          memo->get(key, c, [&](ValidationCase& into) { predict_case(*s, hw, into, ghz, with_ops); });
        else
          predict_case(*s, hw, c, ghz, with_ops);
      } catch (const std::exception& e) {
        c.measured = false;  // out of the statistics; the caller reports the error
        c.predicted_us = 0;
        c.predicted_ops.clear();
        err[i] = fmt::format("{} no longer predicts: {}", where(c.name(), c.problem_label), e.what());
      }
      seconds[i] = c.predict_cpu_s;
    }
  };
  const int n = std::max(1, std::min<int>(threads, static_cast<int>(cases.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (auto& e : err)
    if (!e.empty()) errors.push_back(std::move(e));
  return seconds;
}

// ---- baseline and regression rule ------------------------------------------------------

std::string baseline_key(const ValidationCase& c) { return c.name() + " | " + c.problem_label; }

FidelityBaseline baseline_of(const FidelityReport& r, const std::vector<ValidationCase>& cases) {
  FidelityBaseline b;
  b.cases = r.stats.cases;
  b.mape_pct = r.stats.mape;
  b.max_abs_error_pct = r.stats.max_abs_err;
  b.spearman = r.stats.spearman_time;
  b.max_change_diff_pts = r.max_change_diff_pts;
  b.has_sweep_spearman = r.sweep.has_spearman;
  b.sweep_spearman = r.sweep.spearman;
  b.has_cycles_mape = r.clock.cases > 0;
  b.cycles_mape_pct = r.clock.cycles_mape;
  for (const auto& c : cases)
    if (c.measured) b.predicted_us[baseline_key(c)] = c.predicted_us;
  return b;
}

nlohmann::json baseline_json(const FidelityBaseline& b, const std::string& gpu) {
  nlohmann::json j;
  j["description"] = fmt::format(
      "Fidelity of the model on the measured cases of this folder as of this commit (attnsim fidelity --update "
      "writes it). The CTest fidelity.regression fails when MAPE or max |error| (or, where the clock was probed, "
      "the MAPE of the cycles) grows by more than {:g} percentage points or Spearman drops by more than {:g}; a "
      "model change that moves them on purpose rewrites this file in the same commit.",
      kMapeTolPts, kSpearmanTol);
  j["hardware_config"] = gpu;
  j["cases"] = b.cases;
  j["mape_pct"] = round_to(b.mape_pct, 4);
  j["max_abs_error_pct"] = round_to(b.max_abs_error_pct, 4);
  j["spearman_time"] = round_to(b.spearman, 6);
  j["max_change_diff_pts"] = round_to(b.max_change_diff_pts, 4);
  if (b.has_sweep_spearman) j["sweep_spearman"] = round_to(b.sweep_spearman, 6);
  if (b.has_cycles_mape) j["cycles_mape_pct"] = round_to(b.cycles_mape_pct, 4);
  j["predicted_us"] = nlohmann::json::object();
  for (const auto& [k, v] : b.predicted_us) j["predicted_us"][k] = round_to(v, 3);
  return j;
}

FidelityBaseline parse_baseline(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw InputError(origin, "/", "expected an object (attnsim fidelity --update writes it)");
  JsonReader r(j, origin);
  FidelityBaseline b;
  r.string_or("description", "");
  r.string_or("hardware_config", "");
  b.cases = static_cast<int>(r.integer("cases", 0, 1 << 30));
  b.mape_pct = r.number("mape_pct", 0, 1e9);
  b.max_abs_error_pct = r.number("max_abs_error_pct", 0, 1e9);
  b.spearman = r.number("spearman_time", -1, 1);
  b.max_change_diff_pts = r.number_or("max_change_diff_pts", 0, 0, 1e9);
  if (r.optional_raw("sweep_spearman")) {
    b.has_sweep_spearman = true;
    b.sweep_spearman = r.number("sweep_spearman", -1, 1);
  }
  if (r.optional_raw("cycles_mape_pct")) {
    b.has_cycles_mape = true;
    b.cycles_mape_pct = r.number("cycles_mape_pct", 0, 1e9);
  }
  if (const auto* p = r.optional_raw("predicted_us")) {
    if (!p->is_object()) r.fail_at("predicted_us", "expected an object of case -> predicted us");
    for (const auto& [k, v] : p->items()) {
      if (!v.is_number()) r.fail_at("predicted_us", fmt::format("expected a number for '{}'", k));
      b.predicted_us[k] = v.get<double>();
    }
  }
  r.finish();
  return b;
}

std::string Regression::message() const {
  const bool drop = figure == "Spearman" || figure == "sweep Spearman";
  return fmt::format("{} regressed: baseline {:.4f}{}, now {:.4f}{} ({} {:.4f}{}, tolerance {:g}{})", figure, baseline,
                     drop ? "" : "%", now, drop ? "" : "%", drop ? "dropped by" : "grew by",
                     drop ? baseline - now : now - baseline, drop ? "" : " pts", tolerance, drop ? "" : " pts");
}

std::vector<Regression> regressions(const FidelityBaseline& base, const FidelityReport& now) {
  std::vector<Regression> out;
  if (now.stats.mape > base.mape_pct + kMapeTolPts) out.push_back({"MAPE", base.mape_pct, now.stats.mape, kMapeTolPts});
  if (now.stats.max_abs_err > base.max_abs_error_pct + kMaxErrTolPts)
    out.push_back({"max |error|", base.max_abs_error_pct, now.stats.max_abs_err, kMaxErrTolPts});
  if (now.stats.spearman_time < base.spearman - kSpearmanTol)
    out.push_back({"Spearman", base.spearman, now.stats.spearman_time, kSpearmanTol});
  if (base.has_sweep_spearman && now.sweep.has_spearman && now.sweep.spearman < base.sweep_spearman - kSpearmanTol)
    out.push_back({"sweep Spearman", base.sweep_spearman, now.sweep.spearman, kSpearmanTol});
  if (base.has_cycles_mape && now.clock.cases > 0 && now.clock.cycles_mape > base.cycles_mape_pct + kMapeTolPts)
    out.push_back({"cycles MAPE", base.cycles_mape_pct, now.clock.cycles_mape, kMapeTolPts});
  return out;
}

}  // namespace attnsim
