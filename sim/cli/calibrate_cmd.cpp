// `attnsim calibrate RESULTS... --into configs/hw/X.json`: microbenchmark results -> measured constants.
#include <fmt/format.h>

#include <iostream>

#include "calibrate/calibrate.hpp"
#include "cli/commands.hpp"
#include "model/hardware.hpp"

namespace attnsim::cli {
namespace {

struct Calibrate : Command {
  std::vector<std::string> results;
  std::string into;
  bool dry_run = false;

  int run() override {
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
};

}  // namespace

std::unique_ptr<Command> add_calibrate(CLI::App& app, CLI::App*& sub) {
  auto c = std::make_unique<Calibrate>();
  sub = app.add_subcommand("calibrate", "fold kernels/microbench results into a hardware config (marked measured)");
  sub->add_option("results", c->results, "result JSON files or folders of them")->required();
  sub->add_option("--into", c->into, "hardware config to update, e.g. configs/hw/h100_sxm.json")->required();
  sub->add_flag("--dry-run", c->dry_run, "print what would change, write nothing");
  return c;
}

}  // namespace attnsim::cli
