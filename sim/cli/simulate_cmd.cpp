// `attnsim simulate SCHEDULE --hw HW [problem]`: predicted time, TFLOPS, unit utilisation,
// the bottleneck, per-role stalls, an ASCII timeline of the steady state, and optionally a
// Chrome trace and an SVG; --traced predicts the traced build of the kernel (Schedule::traced_twin).
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "driver/simulate.hpp"
#include "lower/schedule.hpp"
#include "model/hardware.hpp"
#include "report/ascii_timeline.hpp"
#include "report/chrome_trace.hpp"
#include "report/summary.hpp"
#include "report/svg_timeline.hpp"
#include "report/window.hpp"

namespace attnsim::cli {
namespace {

struct Simulate : Command {
  std::string schedule, hw = "b200", trace, svg, window, variant;
  std::vector<std::string> sets;
  bool json = false, no_timeline = false, full_trace = false, traced = false;
  int width = 100;
  ProblemFlags pf;
  BudgetFlags budget;

  int run() override {
    const Hardware hardware = load_hardware(resolve_hardware_path(hw));
    const auto plain = load_schedule(schedule, sets, variant);
    const Problem problem = pf.build();
    // --traced: the kernel `attnsim run --trace` records, where its code differs in what the model
    // sees (Schedule::traced_twin); otherwise the plain kernel.
    std::unique_ptr<Schedule> twin = traced ? plain->traced_twin(hardware, problem) : nullptr;
    if (traced && !twin)
      std::cerr
          << "attnsim simulate: --traced: this schedule's traced kernel runs the plain kernel's ops; predicting that\n";
    const Schedule* s = twin ? twin.get() : plain.get();
    const Prediction p = predict(*s, hardware, problem, budget.apply({}));
    const Summary sum = summarize(p, *s, hardware, problem);
    const Timeline& tl = p.critical.timeline;
    const auto [t0, t1] = window.empty() ? steady_state_window(tl) : parse_window_us(window, tl);
    if (json) {
      std::cout << summary_json(sum).dump(2) << "\n";
    } else {
      std::cout << format_summary(sum);
      if (!no_timeline) {
        std::cout << fmt::format("\ntimeline of the critical CTA, {:.2f}-{:.2f} us{}:\n", tl.to_us(t0), tl.to_us(t1),
                                 window.empty() ? " (steady state of its first tile; --window T0:T1 to move)" : "");
        AsciiOptions ao;
        ao.t0_cycles = t0;
        ao.t1_cycles = t1;
        ao.width = width;
        std::cout << render_ascii(tl, ao);
      }
    }
    if (!trace.empty()) {
      std::ofstream out(trace);
      if (!out) throw std::runtime_error("cannot write " + trace);
      TraceOptions to;
      // By default the critical CTA's first tile, small enough for Perfetto; --full-trace: all of it.
      to.t0_cycles = full_trace || window.empty() ? 0 : t0;
      to.t1_cycles = full_trace ? -1 : window.empty() ? first_tile_end(tl) : t1;
      to.process_name = fmt::format("{} on {} (critical CTA)", s->name(), hardware.name);
      write_chrome_trace(tl, to, out);
      std::cerr << fmt::format("wrote {} (open in ui.perfetto.dev)\n", trace);
    }
    if (!svg.empty()) {
      std::ofstream out(svg);
      if (!out) throw std::runtime_error("cannot write " + svg);
      SvgOptions so;
      so.t0_cycles = t0;
      so.t1_cycles = t1;
      out << render_svg(tl, so);
      std::cerr << fmt::format("wrote {}\n", svg);
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> add_simulate(CLI::App& app, CLI::App*& sub) {
  auto c = std::make_unique<Simulate>();
  sub = app.add_subcommand("simulate", "predict the timeline of a schedule on a GPU for a problem");
  sub->add_option("schedule", c->schedule, "schedule JSON (schedules/*.json)")->required();
  sub->add_option("--hw", c->hw, "hardware config: a path or a name in configs/hw (b200, h100_sxm, h200)");
  c->pf.add(sub);
  c->budget.add(sub);
  sub->add_option("--set", c->sets, "override a schedule field: /json/pointer=value (repeatable)");
  sub->add_option("--variant", c->variant, "apply a variant the schedule file declares");
  sub->add_option("--trace", c->trace, "write a Chrome trace (Perfetto) of the critical CTA's first tile");
  sub->add_flag("--full-trace", c->full_trace, "with --trace: the whole CTA instead of its first tile");
  sub->add_option("--svg", c->svg, "write an SVG timeline of the window");
  sub->add_flag("--json", c->json, "print the summary as JSON");
  sub->add_option("--window", c->window, "timeline window T0:T1 in microseconds (default: steady state)");
  sub->add_option("--width", c->width, "ASCII timeline width in characters")->check(CLI::Range(20, 1000));
  sub->add_flag("--no-timeline", c->no_timeline, "print the summary only");
  sub->add_flag("--traced", c->traced,
                "predict the traced build of the kernel (what `attnsim run --trace` records) where its ops differ from "
                "the plain kernel's");
  return c;
}

}  // namespace attnsim::cli
