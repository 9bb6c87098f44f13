// `attnsim calibrate RESULTS... --into configs/hw/X.json`: microbenchmark results -> measured constants.
// `attnsim calibrate softmax_block.json --costs configs/costs/X.json`: the kernel's own compute spans,
// timed alone and beside wgmma -> each block's measured timing in a cost file.
// `attnsim calibrate fa2_block.json --costs configs/costs/fa2_sm80_sharing.json`: the FA2-style
// kernel's GEMM blocks with 1..4 warps per SMSP -> a block-sharing file.
#include <fmt/format.h>

#include <iostream>

#include "calibrate/block_timing.hpp"
#include "calibrate/calibrate.hpp"
#include "cli/commands.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"

namespace attnsim::cli {
namespace {

struct Calibrate : Command {
  std::vector<std::string> results;
  std::string into, costs;
  bool dry_run = false;

  int run() override {
    if (into.empty() == costs.empty())
      throw std::invalid_argument(
          "calibrate needs exactly one of --into (a hardware config) and --costs (a cost file)");
    if (!costs.empty()) return run_costs();
    const Hardware before = load_hardware(into);
    std::string note;
    const auto constants = derive_constants(results, note);
    std::cout << fmt::format("calibrating {} from {} ({} constants)\n", into, note, constants.size());
    std::cout << fmt::format("  {:<26}{:>14}  {:<10}{:>14}  {}\n", "constant", "before", "was", "measured",
                             "benchmark");
    for (const auto& c : constants) {
      const auto& p = before.provenance.at(c.name);
      std::cout << fmt::format("  {:<26}{:>14}  {:<10}{:>14.6g}  {}\n", c.name,
                               fmt::format("{:.6g}", constant_value(before, c.name)), p.kind, c.value, c.benchmark);
    }
    if (!dry_run) {
      apply_calibration(into, constants, note);
      std::cout << fmt::format("wrote {}\n", into);
    }
    return 0;
  }

  int run_costs() const {
    if (results.size() != 1) throw std::invalid_argument("--costs takes one softmax_block or fa2_block result file");
    if (load_json_file(results[0]).value("benchmark", "") == "fa2_block") {
      if (dry_run) throw std::invalid_argument("--dry-run: a fa2_block result replaces its block-sharing file whole");
      for (const auto& line : write_block_sharing(results[0], costs)) std::cout << line << "\n";
      std::cout << fmt::format("wrote {}\n", costs);
      return 0;
    }
    std::string note;
    const auto points = derive_block_timings(results[0], note);
    std::cout << fmt::format("measured block timings for {} from {}\n", costs, note);
    std::cout << fmt::format("  {:<12}{:>9}{:>9}{:>12}{:>12}  {}\n", "block", "elements", "alone", "beside SS",
                             "beside RS", "shapes");
    for (const auto& p : points)
      std::cout << fmt::format("  {:<12}{:>9g}{:>9.1f}{:>12.1f}{:>12.1f}  {}\n", p.block, p.elements, p.alone,
                               p.beside_ss, p.beside_rs, fmt::join(p.shapes, "; "));
    if (!dry_run) {
      apply_block_timings(costs, points, note);
      std::cout << fmt::format("wrote {}\n", costs);
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> add_calibrate(CLI::App& app, CLI::App*& sub) {
  auto c = std::make_unique<Calibrate>();
  sub = app.add_subcommand(
      "calibrate", "fold kernels/microbench results into a hardware config or a cost file (marked measured)");
  sub->add_option("results", c->results, "result JSON files or folders of them")->required();
  sub->add_option("--into", c->into, "hardware config to update, e.g. configs/hw/h100_sxm.json");
  sub->add_option("--costs", c->costs,
                  "cost file to write a softmax_block result's measured block timings into, e.g. "
                  "configs/costs/sm90_softmax.json; or, from a fa2_block result, the block-sharing file to write, "
                  "e.g. configs/costs/fa2_sm80_sharing.json");
  sub->add_flag("--dry-run", c->dry_run, "print what would change, write nothing");
  return c;
}

}  // namespace attnsim::cli
