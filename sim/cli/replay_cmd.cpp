// `attnsim replay RESULT.json [--hw HW] [--costs FILE] [--json]`: a kernels/microbench result
// predicted by the model, case by case, beside what the GPU measured: gemm_turn (the SM90 kernel's
// own GEMM dispatch, alone, in pingpong turns and beside a softmax) and softmax_pair (two of its
// softmax blocks on one SMSP), sim/measure/microbench_replay.hpp. `--baseline FILE`: exit 1 when a
// quantity's mean |error| grew by more than 0.5 points over the committed baseline; `--update FILE`
// writes it.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "lower/costs.hpp"
#include "measure/microbench_replay.hpp"
#include "model/hardware.hpp"

namespace attnsim::cli {
namespace {

struct Replay : Command {
  std::string result, hw = "h200", costs, baseline, update;
  bool json = false;

  int run() override {
    const Hardware hardware = load_hardware(resolve_hardware_path(hw));
    const CostModel cost_model =
        CostModel::load(costs.empty() ? project_root() + "/configs/costs/sm90_softmax.json" : costs);
    const std::vector<ReplayRow> rows = replay_microbench(result, hardware, cost_model);
    const ReplaySummary sum = summarize_replay(rows);
    const std::vector<std::string> regressions =
        baseline.empty() ? std::vector<std::string>{} : replay_regressions(sum, baseline);
    if (!update.empty()) write_replay_baseline(sum, result, hardware.name, update);
    if (json) {
      nlohmann::json out = {{"result", result}, {"hardware", hardware.name}, {"rows", nlohmann::json::array()}};
      for (const auto& r : rows)
        out["rows"].push_back({{"instance", r.instance},
                               {"case", r.case_name},
                               {"warpgroup", r.warpgroup},
                               {"quantity", r.quantity},
                               {"measured_cycles", r.measured},
                               {"predicted_cycles", r.predicted},
                               {"error_pct", r.error_pct()}});
      out["mean_abs_error_pct"] = sum.mean_abs_error_pct;
      out["mean_abs_error_cycles"] = sum.mean_abs_error_cycles;
      if (!baseline.empty()) out["regressions"] = regressions;
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << fmt::format("{} replayed on {} (cycles; measured / predicted, error)\n", result, hardware.name);
      std::cout << fmt::format("  {:<13}{:<30}{:>3}  {:<12}{:>10}{:>11}{:>9}\n", "instance", "case", "wg", "quantity",
                               "measured", "predicted", "error");
      for (const auto& r : rows)
        std::cout << fmt::format("  {:<13}{:<30}{:>3}  {:<12}{:>10.0f}{:>11.0f}{:>+8.1f}%\n", r.instance, r.case_name,
                                 r.warpgroup, r.quantity, r.measured, r.predicted, r.error_pct());
      std::cout << "mean |error| per quantity (rows):\n";
      for (const auto& [q, pct] : sum.mean_abs_error_pct)
        std::cout << fmt::format("  {:<12}{:>7.1f}%{:>8.0f} cycles  ({})\n", q, pct, sum.mean_abs_error_cycles.at(q),
                                 sum.rows.at(q));
      if (!baseline.empty()) {
        if (regressions.empty())
          std::cout << fmt::format("against the baseline {}: no quantity's mean |error| grew by more than {} points\n",
                                   baseline, kReplayTolerancePts);
        for (const auto& r : regressions) std::cout << "REGRESSED " << r << "\n";
      }
      if (!update.empty()) std::cout << fmt::format("wrote {}\n", update);
    }
    return regressions.empty() ? 0 : 1;
  }
};

}  // namespace

std::unique_ptr<Command> add_replay(CLI::App& app, CLI::App*& sub) {
  auto c = std::make_unique<Replay>();
  sub = app.add_subcommand(
      "replay",
      "predict a kernels/microbench result (gemm_turn, softmax_pair) with the model, case by case, beside "
      "what the GPU measured");
  sub->add_option("result", c->result, "result JSON: configs/measured/<gpu>/gemm_turn.json or softmax_pair.json")
      ->required();
  sub->add_option("--hw", c->hw, "hardware config: a path or a name in configs/hw (default: h200)");
  sub->add_option("--costs", c->costs,
                  "cost file of the softmax blocks (default: the project's configs/costs/sm90_softmax.json)");
  sub->add_flag("--json", c->json, "print the rows and the mean |error| per quantity as JSON");
  sub->add_option("--baseline", c->baseline,
                  "compare the mean |error| per quantity with this baseline (e.g. "
                  "configs/measured/h200/gemm_turn.replay.json); exit 1 when one grew by more than 0.5 points");
  sub->add_option("--update", c->update, "write the mean |error| per quantity as the baseline into this file");
  return c;
}

}  // namespace attnsim::cli
