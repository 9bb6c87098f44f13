// attnsim command line. `attnsim simulate SCHEDULE --hw HW [problem]` predicts the
// timeline of a schedule; see README.md. Exit codes: 0 ok, 2 bad input (file, JSON
// path and what was expected on stderr), 3 the schedule deadlocks or breaks a barrier
// rule (report on stderr), 1 anything else.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <optional>

#include "driver/simulate.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"
#include "model/problem.hpp"
#include "model/schedule.hpp"
#include "report/ascii_timeline.hpp"
#include "report/chrome_trace.hpp"
#include "report/summary.hpp"
#include "report/svg_timeline.hpp"
#include "report/window.hpp"

namespace {

using namespace attnsim;

/// Problem flags; each one set overrides the problem file's field.
struct ProblemFlags {
  std::string file;
  std::optional<int> batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim, head_dim_v;
  bool causal = false, non_causal = false;
  std::optional<std::string> dtype;
  std::optional<double> rescale_rate;

  void add(CLI::App* app) {
    app->add_option("--problem", file, "problem JSON (default: configs/problems/default.json)");
    app->add_option("--batch", batch, "batch size");
    app->add_option("--heads", heads, "query heads");
    app->add_option("--kv-heads", kv_heads, "K/V heads (GQA/MQA; divides heads)");
    app->add_option("--seqlen", seqlen_q, "seqlen_q (and seqlen_k unless --seqlen-k)");
    app->add_option("--seqlen-k", seqlen_k, "seqlen_k");
    app->add_option("--head-dim", head_dim, "head_dim (and head_dim_v unless --head-dim-v)");
    app->add_option("--head-dim-v", head_dim_v, "head_dim of V");
    app->add_flag("--causal", causal, "causal mask");
    app->add_flag("--non-causal", non_causal, "no mask");
    app->add_option("--dtype", dtype, "bf16 | fp16");
    app->add_option("--rescale-rate", rescale_rate,
                    "fraction of (warp, KV block) steps that rescale O (default: from random N(0,1) scores)");
  }

  Problem build() const {
    const std::string path = file.empty() ? project_root() + "/configs/problems/default.json" : file;
    nlohmann::json j = load_json_file(path);
    auto set = [&](const char* key, const auto& v) {
      if (v) j[key] = *v;
    };
    set("batch", batch);
    set("heads", heads);
    if (heads && !kv_heads && j.contains("kv_heads")) j.erase("kv_heads");
    set("kv_heads", kv_heads);
    if (seqlen_q) {
      j["seqlen_q"] = *seqlen_q;
      if (!seqlen_k) j.erase("seqlen_k");
    }
    set("seqlen_k", seqlen_k);
    if (head_dim) {
      j["head_dim"] = *head_dim;
      if (!head_dim_v) j.erase("head_dim_v");
    }
    set("head_dim_v", head_dim_v);
    if (causal) j["causal"] = true;
    if (non_causal) j["causal"] = false;
    set("dtype", dtype);
    set("rescale_rate", rescale_rate);
    return problem_from_json(j, path + (batch || heads || seqlen_q || head_dim || causal || non_causal ? " (with flags)" : ""));
  }
};

int run_simulate(const std::string& schedule_file, const std::string& hw_arg, const ProblemFlags& pf,
                 const std::vector<std::string>& sets, const std::string& variant, const std::string& trace,
                 const std::string& svg, bool json, const std::string& window, int width, bool no_timeline,
                 bool full_trace) {
  const Hardware hw = load_hardware(resolve_hardware_path(hw_arg));
  const auto schedule = load_schedule(schedule_file, sets, variant);
  const Problem problem = pf.build();
  const Prediction p = predict(*schedule, hw, problem);
  const Summary s = summarize(p, *schedule, hw, problem);
  const Timeline& tl = p.critical.timeline;
  const auto [t0, t1] = window.empty() ? steady_state_window(tl) : parse_window_us(window, tl);
  if (json) {
    std::cout << summary_json(s).dump(2) << "\n";
  } else {
    std::cout << format_summary(s);
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
    // By default the trace holds the critical CTA's first tile (small enough for Perfetto); --full-trace: all.
    to.t0_cycles = full_trace ? 0 : (window.empty() ? 0 : t0);
    to.t1_cycles = full_trace ? -1 : (window.empty() ? [&] {
      double end = 0;
      for (const auto& w : tl.warps)
        for (const auto& sp : w.spans)
          if (sp.tile == 0) end = std::max(end, sp.end);
      return end > 0 ? end : tl.end_cycles;
    }() : t1);
    to.process_name = fmt::format("{} on {} (critical CTA)", schedule->name(), hw.name);
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnsim: attention-kernel schedule simulator"};
  app.require_subcommand(1);
  CLI::App* sim = app.add_subcommand("simulate", "predict the timeline of a schedule on a GPU for a problem");
  std::string schedule, hw = "b200", trace, svg, window, variant;
  std::vector<std::string> sets;
  bool json = false, no_timeline = false, full_trace = false;
  int width = 100;
  ProblemFlags pf;
  sim->add_option("schedule", schedule, "schedule JSON (schedules/*.json)")->required();
  sim->add_option("--hw", hw, "hardware config: a path or a name in configs/hw (b200, h100_sxm, h200)");
  pf.add(sim);
  sim->add_option("--set", sets, "override a schedule field: /json/pointer=value (repeatable)");
  sim->add_option("--variant", variant, "apply a variant the schedule file declares");
  sim->add_option("--trace", trace, "write a Chrome trace (Perfetto) of the critical CTA's first tile");
  sim->add_flag("--full-trace", full_trace, "with --trace: the whole CTA instead of its first tile");
  sim->add_option("--svg", svg, "write an SVG timeline of the window");
  sim->add_flag("--json", json, "print the summary as JSON");
  sim->add_option("--window", window, "timeline window T0:T1 in microseconds (default: steady state)");
  sim->add_option("--width", width, "ASCII timeline width in characters")->check(CLI::Range(20, 1000));
  sim->add_flag("--no-timeline", no_timeline, "print the summary only");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    if (*sim)
      return run_simulate(schedule, hw, pf, sets, variant, trace, svg, json, window, width, no_timeline, full_trace);
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const DeadlockError& e) {
    std::cerr << "error: " << e.what();
    return 3;
  } catch (const ProgramError& e) {
    std::cerr << "error: the schedule breaks a barrier rule: " << e.what() << "\n";
    return 3;
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
