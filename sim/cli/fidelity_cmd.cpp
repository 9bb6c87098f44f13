// `attnsim fidelity [DIR...] [--update] [--json] [--no-ops]`: the current model against the committed
// measurements. For every measured case of each `validate` output folder (default: every
// configs/validation/<gpu>/<folder>/ with a results.csv and a fidelity.json) it re-predicts the time with
// the prediction `validate` makes (predict_case; hardware config configs/hw/<gpu>.json, schedule
// schedules/<schedule>.json with the case's variant) and prints the case table, MAPE, max |error|,
// Spearman, the per-change table and the per-op table (sim/measure/fidelity.hpp). Then it
// compares the figures with the baseline committed beside the data (fidelity.json) and exits 1
// when MAPE or max |error| grew by more than 0.05 percentage points or Spearman dropped by more
// than 0.005. --update rewrites the baselines from the current model instead; --no-ops leaves out
// the per-op table (and the traced twins' simulations it needs), which the baseline does not hold.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/commands.hpp"
#include "measure/fidelity.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"

namespace attnsim::cli {
namespace {

struct Fidelity : Command {
  std::vector<std::string> dirs;
  std::string hw;
  bool update = false, json = false, detail = false, no_ops = false;
  int threads = 0;

  /// Compares the figures with the baseline; prints the comparison; returns the regressions.
  static std::vector<Regression> check(const FidelityBaseline& b, const FidelityReport& r,
                                       const std::vector<ValidationCase>& cases, const std::string& file,
                                       std::string& text) {
    const auto regs = regressions(b, r);
    auto delta = [](double now, double base, double eps) { return std::fabs(now - base) < eps ? 0.0 : now - base; };
    auto bad = [&](const std::string& fig) {
      return std::any_of(regs.begin(), regs.end(), [&](const Regression& x) { return x.figure == fig; });
    };
    text += fmt::format("\nagainst the baseline {} ({} cases):\n", file, b.cases);
    if (b.cases != r.stats.cases)
      text += fmt::format("  note: the baseline has {} cases, the data now {}\n", b.cases, r.stats.cases);
    text += fmt::format("  {:<22} {:>9.3f}%  baseline {:>9.3f}%  {:>+8.3f} pts  (fails above +{:g} pts)  {}\n", "MAPE",
                        r.stats.mape, b.mape_pct, delta(r.stats.mape, b.mape_pct, 5e-4), kMapeTolPts, bad("MAPE") ? "REGRESSED" : "ok");
    text += fmt::format("  {:<22} {:>9.3f}%  baseline {:>9.3f}%  {:>+8.3f} pts  (fails above +{:g} pts)  {}\n",
                        "max |error|", r.stats.max_abs_err, b.max_abs_error_pct, delta(r.stats.max_abs_err, b.max_abs_error_pct, 5e-4),
                        kMaxErrTolPts, bad("max |error|") ? "REGRESSED" : "ok");
    text += fmt::format("  {:<22} {:>10.4f}  baseline {:>10.4f}  {:>+8.4f}      (fails below -{:g})    {}\n", "Spearman",
                        r.stats.spearman_time, b.spearman, delta(r.stats.spearman_time, b.spearman, 5e-5), kSpearmanTol,
                        bad("Spearman") ? "REGRESSED" : "ok");
    if (b.has_sweep_spearman && r.sweep.has_spearman)
      text += fmt::format("  {:<22} {:>10.4f}  baseline {:>10.4f}  {:>+8.4f}      (fails below -{:g})    {}\n",
                          "sweep Spearman", r.sweep.spearman, b.sweep_spearman,
                          delta(r.sweep.spearman, b.sweep_spearman, 5e-5), kSpearmanTol,
                          bad("sweep Spearman") ? "REGRESSED" : "ok");
    if (b.has_cycles_mape && r.clock.cases > 0)
      text += fmt::format("  {:<22} {:>9.3f}%  baseline {:>9.3f}%  {:>+8.3f} pts  (fails above +{:g} pts)  {}\n",
                          "cycles MAPE", r.clock.cycles_mape, b.cycles_mape_pct,
                          delta(r.clock.cycles_mape, b.cycles_mape_pct, 5e-4), kMapeTolPts,
                          bad("cycles MAPE") ? "REGRESSED" : "ok");
    text += fmt::format("  {:<22} {:>6.1f} pts  baseline {:>6.1f} pts  (not judged)\n", "max per-change diff",
                        r.max_change_diff_pts, b.max_change_diff_pts);
    // Which predictions moved since the baseline, largest first.
    std::vector<std::pair<double, std::string>> moved;
    for (const auto& c : cases) {
      if (!c.measured) continue;
      const auto it = b.predicted_us.find(baseline_key(c));
      if (it == b.predicted_us.end() || it->second <= 0) continue;
      const double d = 100.0 * (c.predicted_us / it->second - 1);
      if (std::fabs(d) >= 0.05)
        moved.emplace_back(d, fmt::format("{}: {:.1f} -> {:.1f} us ({:+.1f}%)", baseline_key(c), it->second,
                                          c.predicted_us, d));
    }
    std::sort(moved.begin(), moved.end(), [](const auto& a, const auto& b) { return std::fabs(a.first) > std::fabs(b.first); });
    if (moved.empty())
      text += "  predictions moved since the baseline: none\n";
    else {
      text += fmt::format("  predictions moved since the baseline: {} cases, largest:\n", moved.size());
      for (size_t i = 0; i < moved.size() && i < 5; ++i) text += "    " + moved[i].second + "\n";
    }
    return regs;
  }

  int run() override {
    const std::vector<std::string> folders = dirs.empty() ? committed_validation_dirs(project_root()) : dirs;
    if (folders.empty())
      throw InputError(project_root() + "/configs/validation", "/",
                       "no <gpu>/<folder> with a results.csv and a fidelity.json to check");
    const int nthreads = threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    bool failed = false;
    std::vector<std::string> verdicts;
    PredictionMemo memo;  // folders that measured the same case again share its prediction
    nlohmann::json out = {{"folders", nlohmann::json::array()}};
    for (const auto& folder : folders) {
      ValidationData d = load_validation_data(folder);
      const std::string hw_name = hw.empty() ? d.gpu : hw;
      const Hardware hardware = load_hardware(resolve_hardware_path(hw_name));
      std::vector<double> recorded;
      for (const auto& c : d.cases) recorded.push_back(c.predicted_us);
      std::vector<std::string> errors;
      const auto t0 = std::chrono::steady_clock::now();
      const size_t hits0 = memo.hits();
      const std::vector<double> secs =
          repredict(d.cases, hardware, project_root() + "/schedules", nthreads, errors, &memo, false, !no_ops);
      const size_t hits1 = memo.hits();  // cases an earlier folder predicted (their own clock)
      // Kernels timed in turns shared the clock their mean activity holds: so do the predictions,
      // simulated again at that clock.
      if (d.timed_together_by_problem) {
        share_clock_by_problem(hardware, d.cases);
        repredict(d.cases, hardware, project_root() + "/schedules", nthreads, errors, &memo, true, !no_ops);
      }
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const FidelityReport r = fidelity_report(d.cases);
      const size_t slow = secs.empty() ? 0 : std::max_element(secs.begin(), secs.end()) - secs.begin();

      std::string text = fmt::format("fidelity: {} ({} measured cases{}, predicted now with {})\n", d.dir,
                                     d.cases.size(), d.has_ops ? ", ops.csv" : "", hardware.name);
      text += format_validation(d.cases, r.stats, -1);
      text += format_clock_split(r);
      text += format_changes(r);
      text += format_sweep(r);
      text += no_ops ? "\nper op: not compared (--no-ops)\n" : format_op_acceptance(r, detail);
      if (!secs.empty())
        text += fmt::format("\nre-predicted {} cases ({} as an earlier folder predicted them) in {:.2f} s on {} "
                            "threads; slowest {} on {} ({:.2f} s of CPU){}\n",
                            d.cases.size(), hits1 - hits0, wall, nthreads, d.cases[slow].name(),
                            d.cases[slow].problem_label, secs[slow], secs[slow] > 1.0 ? ": over 1 s" : "");
      nlohmann::json fj = {{"dir", d.dir},
                           {"hardware_config", hw_name},
                           {"seconds", wall},
                           {"stats",
                            {{"cases", r.stats.cases},
                             {"mape_pct", r.stats.mape},
                             {"max_abs_error_pct", r.stats.max_abs_err},
                             {"worst_case", r.stats.worst},
                             {"spearman_time", r.stats.spearman_time},
                             {"spearman_within_problem", r.stats.spearman_per_problem},
                             {"spearman_within_problem_mean", r.stats.spearman_within_mean}}},
                           {"errors", errors}};
      fj["cases"] = nlohmann::json::array();
      for (size_t i = 0; i < d.cases.size(); ++i) {
        const auto& c = d.cases[i];
        fj["cases"].push_back({{"schedule", c.schedule},
                               {"variant", c.variant},
                               {"problem", c.problem_label},
                               {"predicted_us", c.predicted_us},
                               {"predicted_at_measurement_us", recorded[i]},
                               {"measured_us", c.measured_us},
                               {"error_pct", c.measured ? nlohmann::json(c.error_pct()) : nlohmann::json(nullptr)},
                               {"predict_seconds", secs[i]}});
      }
      fj.update(fidelity_json(r));

      std::string verdict;
      const std::string base_file = d.dir + "/fidelity.json";
      for (const auto& e : errors) {
        text += "error: " + e + "\n";
        std::cerr << "error: " << e << "\n";
      }
      if (!errors.empty()) {
        failed = true;
        verdict = fmt::format("{} cases no longer predict", errors.size());
      }
      if (update) {
        if (errors.empty()) {
          std::ofstream(base_file) << baseline_json(baseline_of(r, d.cases), hw_name).dump(2) << "\n";
          verdict = fmt::format("wrote {} (MAPE {:.2f}%, max |error| {:.2f}%, Spearman {:.4f}, max per-change diff {:.1f} pts)",
                                base_file, r.stats.mape, r.stats.max_abs_err, r.stats.spearman_time,
                                r.max_change_diff_pts);
        } else {
          verdict += "; baseline not written";
        }
      } else if (!std::filesystem::exists(base_file)) {
        failed = true;
        verdict = fmt::format("no baseline {}: run `attnsim fidelity {} --update` and commit it with the data",
                              base_file, d.dir);
        std::cerr << "error: " << verdict << "\n";
      } else {
        const FidelityBaseline b = parse_baseline(load_json_file(base_file), base_file);
        const auto regs = check(b, r, d.cases, base_file, text);
        fj["baseline"] = baseline_json(b, hw_name);
        fj["regressions"] = nlohmann::json::array();
        for (const auto& g : regs) {
          fj["regressions"].push_back({{"figure", g.figure}, {"baseline", g.baseline}, {"now", g.now},
                                       {"tolerance", g.tolerance}, {"message", g.message()}});
          std::cerr << fmt::format("error: {}: {}\n", d.dir, g.message());
        }
        if (!regs.empty()) {
          failed = true;
          verdict = fmt::format("REGRESSION ({} figures worse than the baseline)", regs.size());
        } else if (errors.empty()) {
          verdict = fmt::format("ok (MAPE {:.2f}%, max |error| {:.2f}%, Spearman {:.4f})", r.stats.mape,
                                r.stats.max_abs_err, r.stats.spearman_time);
        }
      }
      fj["verdict"] = verdict;
      out["folders"].push_back(fj);
      verdicts.push_back(fmt::format("{}: {}", d.dir, verdict));
      if (!json) std::cout << text << "\n";
    }
    out["ok"] = !failed;
    if (json)
      std::cout << out.dump(2) << "\n";
    else
      for (const auto& v : verdicts) std::cout << "fidelity " << v << "\n";
    return failed ? 1 : 0;
  }
};

}  // namespace

std::unique_ptr<Command> add_fidelity(CLI::App& app, CLI::App*& sub) {
  auto c = std::make_unique<Fidelity>();
  sub = app.add_subcommand("fidelity",
                           "re-predict the committed validation measurements and check them against their baseline");
  sub->add_option("dirs", c->dirs,
                  "validate output folders (default: every configs/validation/<gpu>/<folder> with a fidelity.json)");
  sub->add_flag("--update", c->update, "rewrite each folder's fidelity.json from the current model");
  sub->add_flag("--json", c->json, "print the figures, per change and per op as JSON");
  sub->add_flag("--detail", c->detail, "list every (case, op) that fails the per-op acceptance");
  sub->add_flag("--no-ops", c->no_ops,
                "skip the per-op comparison and the traced twins it simulates: the end-to-end figures and the "
                "baseline check only (what the regression test judges; about 45% less CPU time)");
  sub->add_option("--hw", c->hw, "hardware config for the predictions (default: the GPU folder's name)");
  sub->add_option("--threads", c->threads, "prediction threads (default: every core)")->check(CLI::Range(1, 1024));
  return c;
}

}  // namespace attnsim::cli
