// `attnsim explain SCHEDULE --hw HW [problem]`: each design choice switched off, one at a time.
#include <iostream>

#include "cli/commands.hpp"
#include "explain/explain.hpp"
#include "model/hardware.hpp"

namespace attnsim::cli {
namespace {

struct Explain : Command {
  std::string schedule, hw = "b200";
  std::vector<std::string> sets;
  bool json = false, no_timeline = false;
  int width = 56;
  ProblemFlags pf;
  BudgetFlags budget;

  int run() override {
    const Hardware hardware = load_hardware(resolve_hardware_path(hw));
    const Problem problem = pf.build();
    const Explanation e = explain(schedule, sets, hardware, problem, budget.apply({}));
    if (json)
      std::cout << explanation_json(e).dump(2) << "\n";
    else
      std::cout << format_explanation(e, width, !no_timeline);
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> add_explain(CLI::App& app, CLI::App*& sub) {
  auto c = std::make_unique<Explain>();
  sub = app.add_subcommand("explain", "switch off each design choice of a schedule and show what it costs");
  sub->add_option("schedule", c->schedule, "schedule JSON whose \"variants\" name the design choices")->required();
  sub->add_option("--hw", c->hw, "hardware config: a path or a name in configs/hw");
  c->pf.add(sub);
  c->budget.add(sub);
  sub->add_option("--set", c->sets, "override a schedule field first: /json/pointer=value (repeatable)");
  sub->add_flag("--json", c->json, "print the table as JSON");
  sub->add_flag("--no-timeline", c->no_timeline, "the table only");
  sub->add_option("--width", c->width, "width of each of the two timelines")->check(CLI::Range(20, 500));
  return c;
}

}  // namespace attnsim::cli
