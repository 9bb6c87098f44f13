// `attnsim calibrate RESULTS... --into configs/hw/X.json`: microbenchmark results -> measured constants.
// `attnsim calibrate softmax_block.json --costs configs/costs/X.json`: the kernel's own compute spans,
// timed alone and beside wgmma -> each block's measured timing in a cost file;
// `attnsim calibrate smem_beside_async.json --costs ...`: the epilogue's O stores while copies land
// -> final_o's slowdown while TMA copies land in shared memory;
// `attnsim calibrate load_warp.json --costs ...`: the kernel's load warp beside the softmax -> the
// cost file's "load_warp" section.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "calibrate/block_timing.hpp"
#include "calibrate/calibrate.hpp"
#include "cli/commands.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"  // load_json_file

namespace attnsim::cli {
namespace {

struct Calibrate : Command {
  std::vector<std::string> results;
  std::string into, costs;
  std::vector<std::string> blocks;  ///< --blocks: the softmax_block result's blocks to write (empty: all)
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
    if (results.size() != 1)
      throw std::invalid_argument("--costs takes one softmax_block, smem_beside_async or load_warp result file");
    const nlohmann::json doc = load_json_file(results[0]);
    const std::string benchmark = doc.is_object() ? doc.value("benchmark", "") : "";
    if (benchmark == "smem_beside_async") return run_copies_landing();
    if (benchmark == "load_warp") return run_load_warp();
    if (benchmark != "softmax_block")
      throw InputError(results[0], "/benchmark",
                       "expected a kernels/microbench softmax_block, smem_beside_async or load_warp result file");
    std::string note;
    auto points = derive_block_timings(results[0], note);
    if (!blocks.empty()) {  // only these blocks: the others keep the timings they have
      for (const auto& b : blocks)
        if (std::none_of(points.begin(), points.end(), [&](const BlockTimingPoint& p) { return p.block == b; }))
          throw InputError(results[0], "/results/shapes",
                           fmt::format("expected a shape timing block '{}' (--blocks)", b));
      std::erase_if(points, [&](const BlockTimingPoint& p) {
        return std::find(blocks.begin(), blocks.end(), p.block) == blocks.end();
      });
    }
    std::cout << fmt::format("measured block timings for {} from {} (beside: the tensor core running the whole "
                             "time, from the duty timed at)\n",
                             costs, note);
    std::cout << fmt::format("  {:<24}{:>9}{:>9}{:>12}{:>12}{:>11}  {}\n", "block", "elements", "alone", "beside SS",
                             "beside RS", "duty SS/RS", "shapes");
    for (const auto& p : points)
      std::cout << fmt::format("  {:<24}{:>9g}{:>9.1f}{:>12.1f}{:>12.1f}  {:.2f}/{:.2f}  {}\n", p.block, p.elements,
                               p.alone, p.beside_ss, p.beside_rs, p.duty_ss, p.duty_rs, fmt::join(p.shapes, "; "));
    if (!dry_run) {
      apply_block_timings(costs, points, note);
      std::cout << fmt::format("wrote {}\n", costs);
    }
    return 0;
  }

  int run_copies_landing() const {
    std::string note;
    const auto points = derive_copies_landing(results[0], note);
    std::cout << fmt::format("final_o while copies land, for {} from {} (time with / without)\n", costs, note);
    std::cout << fmt::format("  {:>9}{:>9}{:>12}{:>12}\n", "elements", "alone", "beside SS", "beside RS");
    for (const auto& p : points)
      std::cout << fmt::format("  {:>9g}{:>9.4f}{:>12.4f}{:>12.4f}\n", p.elements, p.ratio[0], p.ratio[1], p.ratio[2]);
    if (!dry_run) {
      apply_copies_landing(costs, points, note);
      std::cout << fmt::format("wrote {}\n", costs);
    }
    return 0;
  }

  int run_load_warp() const {
    std::string note;
    const auto points = derive_load_warp(results[0], note);
    std::cout << fmt::format("the load warp beside the softmax, for {} from {} (cycles; alone in brackets)\n", costs,
                             note);
    std::cout << fmt::format("  {:<15}{:>18}{:>12}{:>22}{:>16}\n", "instance", "block gaps", "load spans",
                             "tile bookkeeping", "entry extra");
    for (const auto& p : points)
      std::cout << fmt::format("  {:<15}{:>9.0f} ({:>6.0f}){:>12.0f}{:>12.0f} ({:>6.0f}){:>16.0f}\n", p.name,
                               p.block_gaps, p.alone_block_gaps, p.block_load_spans, p.tile_bookkeeping,
                               p.alone_tile_bookkeeping, p.recorded_entry_extra);
    if (!dry_run) {
      apply_load_warp(costs, points, note);
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
                  "cost file to write a softmax_block result's measured block timings (or a smem_beside_async "
                  "result's slowdown of final_o while copies land, or a load_warp result's load warp costs) into, "
                  "e.g. "
                  "configs/costs/sm90_softmax.json");
  sub->add_option("--blocks", c->blocks,
                  "with a softmax_block result: write only these blocks' timings (e.g. pack_p "
                  "softmax_max_conditional); the others keep theirs")
      ->delimiter(',');
  sub->add_flag("--dry-run", c->dry_run, "print what would change, write nothing");
  return c;
}

}  // namespace attnsim::cli
