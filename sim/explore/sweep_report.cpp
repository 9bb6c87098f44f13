#include "explore/sweep_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "report/csv.hpp"

namespace attnsim {

namespace {
std::string short_pointer(const std::string& p) { return p.size() > 1 ? p.substr(1) : p; }
}  // namespace

std::string knob_summary(const SweepEvaluator& ev, size_t index) {
  const auto c = ev.decode(index);
  std::string out;
  for (size_t a = 0; a < c.size(); ++a) {
    const auto& v = ev.spec().axes[a].values[c[a]];
    out += fmt::format("{}{}={}", a ? " " : "", short_pointer(ev.spec().axes[a].pointer),
                       v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

void write_sweep_csv(const SweepEvaluator& ev, const std::vector<Evaluation>& evals, std::ostream& out) {
  const SweepSpec& s = ev.spec();
  out << "rank,index,feasible,reason,objective";
  if (!s.secondary.empty()) out << "," << s.secondary;
  for (const auto& l : s.problem_labels) out << "," << csv_field("tflops:" + l);
  for (const auto& a : s.axes) out << "," << csv_field(a.pointer);
  out << "\n";
  auto row = [&](const Evaluation& e, const std::string& rank) {
    out << rank << "," << e.index << "," << (e.feasible ? "true" : "false") << "," << csv_field(e.reason) << ","
        << (e.feasible ? fmt::format("{:.3f}", e.objective) : "");
    if (!s.secondary.empty()) out << "," << (e.feasible ? fmt::format("{:.0f}", e.secondary) : "");
    for (size_t p = 0; p < s.problems.size(); ++p) out << "," << (e.feasible ? fmt::format("{:.3f}", e.tflops[p]) : "");
    const auto c = ev.decode(e.index);
    for (size_t a = 0; a < c.size(); ++a) out << "," << csv_field(s.axes[a].values[c[a]].dump());
    out << "\n";
  };
  const auto ranked = rank(evals);
  for (size_t i = 0; i < ranked.size(); ++i) row(*ranked[i], std::to_string(i + 1));
  for (const auto& e : evals)
    if (!e.feasible) row(e, "");
}

nlohmann::ordered_json sweep_json(const SweepEvaluator& ev, const std::vector<Evaluation>& evals, size_t admitted,
                                  bool interrupted) {
  const SweepSpec& s = ev.spec();
  nlohmann::ordered_json j;
  j["sweep"] = s.name;
  j["file"] = s.file;
  j["schedule"] = s.schedule_file;
  j["hardware"] = s.hw.name;
  j["objective"] = s.objective;
  if (!s.secondary.empty()) j["secondary"] = s.secondary;
  j["strategy"] = s.search.strategy;
  j["problems"] = s.problem_labels;
  j["grid_size"] = ev.grid_size();
  j["admitted"] = admitted;
  j["evaluated"] = evals.size();
  j["interrupted"] = interrupted;
  const auto ranked = rank(evals);
  j["feasible"] = ranked.size();
  j["rejected"] = rejections(evals);
  auto row = [&](const Evaluation& e) {
    nlohmann::ordered_json r;
    r["index"] = e.index;
    r["objective"] = e.objective;
    if (!s.secondary.empty()) r[s.secondary] = e.secondary;
    r["tflops"] = e.tflops;
    r["time_us"] = e.time_us;
    const auto c = ev.decode(e.index);
    for (size_t a = 0; a < c.size(); ++a) r["knobs"][s.axes[a].pointer] = s.axes[a].values[c[a]];
    return r;
  };
  j["ranked"] = nlohmann::ordered_json::array();
  for (const auto* e : ranked) j["ranked"].push_back(row(*e));
  if (!s.secondary.empty()) {
    j["pareto"] = nlohmann::ordered_json::array();
    for (const auto* e : pareto_front(evals)) j["pareto"].push_back(row(*e));
  }
  return j;
}

std::string format_sweep_table(const SweepEvaluator& ev, const std::vector<Evaluation>& evals, size_t admitted,
                               size_t top) {
  const SweepSpec& s = ev.spec();
  const auto ranked = rank(evals);
  std::string o =
      fmt::format("sweep {} on {}: {} problems, grid {} candidates, {} after constraints, {} evaluated, {} feasible\n",
                  s.name, s.hw.name, s.problems.size(), ev.grid_size(), admitted, evals.size(), ranked.size());
  const auto rej = rejections(evals);
  if (!rej.empty()) {
    o += "rejected before simulation, by reason:\n";
    for (const auto& [reason, n] : rej) o += fmt::format("  {:<24}{:>6}\n", reason, n);
  }
  o += fmt::format("\nrank  {:>9}  {}\n", s.objective == "min_tflops" ? "min TFLOPS" : "geomean TF", "knobs");
  for (size_t i = 0; i < std::min(top, ranked.size()); ++i)
    o += fmt::format("{:>4}  {:>9.1f}  {}{}\n", i + 1, ranked[i]->objective, knob_summary(ev, ranked[i]->index),
                     s.secondary.empty() ? "" : fmt::format("  [{} {:.0f}]", s.secondary, ranked[i]->secondary));
  if (!s.secondary.empty()) {
    o += fmt::format("\nPareto front (higher {}, lower {}):\n", s.objective, s.secondary);
    for (const auto* e : pareto_front(evals))
      o += fmt::format("  {:>9.1f}  {} {:.0f}  {}\n", e->objective, s.secondary, e->secondary,
                       knob_summary(ev, e->index));
  }
  return o;
}

nlohmann::json best_schedule(const SweepEvaluator& ev, const Evaluation& best) {
  nlohmann::json doc = ev.document(best.index);
  doc["name"] = ev.spec().name + "_best";
  doc["description"] = fmt::format("Best candidate ({}) of sweep {} ({}): {:.1f} {} over {} problems. Base: {}",
                                   best.index, ev.spec().name, ev.spec().file, best.objective, ev.spec().objective,
                                   ev.spec().problems.size(), doc.value("description", ""));
  return doc;
}

}  // namespace attnsim
