// `attnsim validate [SCHEDULE...] | --sweep SWEEP.json`: every case (schedule variant x problem)
// predicted by the simulator (hardware config of the GPU found) and measured on the GPU (median
// of --reps repetitions of --launches back-to-back launches, CUDA events; every kernel of a problem
// timed together, in turns of about 5 ms (sm90::time_kernels); the instrumented kernel
// too, for its overhead per case), the error per case, MAPE, max error and
// Spearman rank correlation, per-op mean span durations predicted vs measured, and cuDNN's
// fused attention on the same shapes in the same run (--cudnn). Writes results.csv, ops.csv,
// results.json and a measured/predicted trace pair of the first case into --out.
#include <fmt/format.h>

#include <algorithm>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/kernel_select.hpp"
#include "driver/simulate.hpp"
#include "explore/sweep.hpp"
#include "measure/cudnn.hpp"
#include "measure/fidelity.hpp"
#include "measure/validate.hpp"
#include "model/json_reader.hpp"
#include "report/chrome_trace.hpp"
#include "report/window.hpp"

namespace attnsim::cli {
namespace {

/// A case before it runs: the schedule object and where it came from.
struct Pending {
  ValidationCase c;
  std::shared_ptr<Schedule> schedule;
  std::string file;
  std::string candidate;  ///< sweep candidate label ("" for schedule files)
};

struct Validate : Command {
  std::vector<std::string> schedules;
  std::string variants = "all", problems_file, sweep, out_dir = "validate_out", hw, trace_warps = "first";
  TimingFlags timing{.warmup = 3, .reps = 10};
  unsigned cap = 4096;
  uint32_t trace_sample = kTraceSampleValidate;
  bool cudnn = false, no_ops = false;

  std::vector<Pending> build_cases() const {
    std::vector<Pending> out;
    if (!sweep.empty()) {
      SweepEvaluator ev(load_sweep(sweep));
      const SweepSpec& sp = ev.spec();
      for (size_t i = 0; i < ev.grid_size(); ++i) {
        if (!ev.admitted(i)) continue;
        const std::vector<int> choice = ev.decode(i);
        std::string label;
        for (size_t a = 0; a < sp.axes.size(); ++a)
          label += fmt::format("{}{}={}", a ? " " : "", sp.axes[a].pointer, sp.axes[a].values[choice[a]].dump());
        std::shared_ptr<Schedule> s;
        try {
          s = parse_schedule(ev.document(i), sp.schedule_file);
        } catch (const InputError&) {
          continue;  // infeasible on its face: explore rejects it too
        }
        for (size_t p = 0; p < sp.problems.size(); ++p) {
          Pending x;
          x.c.schedule = label;
          x.c.problem_label = sp.problem_labels[p];
          x.c.problem = sp.problems[p];
          x.schedule = s;
          x.file = sp.schedule_file;
          x.candidate = label;
          out.push_back(std::move(x));
        }
      }
      return out;
    }
    const auto problems = load_problem_set(problems_file.empty()
                                               ? project_root() + "/configs/validation/problems_sm90.json"
                                               : problems_file);
    std::vector<std::string> files = schedules;
    if (files.empty()) files.push_back(project_root() + "/schedules/fa3_sm90.json");
    for (const auto& f : files) {
      std::vector<std::string> names = {""};
      if (variants == "all")
        for (const auto& v : schedule_variants(f)) names.push_back(v.name);
      else if (variants != "base") {
        names.clear();
        std::stringstream ss(variants);
        for (std::string v; std::getline(ss, v, ',');) names.push_back(v == "base" ? "" : v);
      }
      for (const auto& v : names) {
        std::shared_ptr<Schedule> s = load_schedule(f, {}, v);
        for (const auto& [label, p] : problems) {
          Pending x;
          x.c.schedule = s->name();
          x.c.variant = v;
          x.c.problem_label = label;
          x.c.problem = p;
          x.schedule = s;
          x.file = f;
          out.push_back(std::move(x));
        }
      }
    }
    return out;
  }

  int run() override {
    [[maybe_unused]] const uint32_t warps = sm90::parse_trace_warps(trace_warps);
    std::vector<Pending> pending = build_cases();
#if ATTNSIM_WITH_SM90
    const sm90::GpuInfo gpu = sm90::gpu_info();
    if (!gpu.usable) {
      std::cout << fmt::format("SKIPPED: {} cases to validate, but no GPU to run them on: {}\n", pending.size(), gpu.why);
      return kNoGpuExit;
    }
    const Hardware hardware = hardware_for(gpu, hw);
    std::filesystem::create_directories(out_dir);
    std::cerr << fmt::format("attnsim validate: {} cases on {} (predictions with {})\n", pending.size(), gpu.name,
                             hardware.name);
    // Every case's kernel and prediction first; then the kernels of each problem are timed
    // together, taking turns of about 5 ms (sm90::time_kernels), so that a variant's change
    // against its base is measured under the same SM clock.
    struct Selected {
      const sm90::CompiledKernel* kernel = nullptr;
      TileScheduler sched = TileScheduler::Lpt;
    };
    std::vector<Selected> sel(pending.size());
    std::optional<Prediction> first_pred;  // kept for its timeline (trace_predicted.json)
    size_t first_predicted = 0;
    std::vector<std::vector<size_t>> groups;  // indices of measurable cases, one group per problem (its full shape)
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& x = pending[i];
      ValidationCase& c = x.c;
      try {
        sel[i].kernel = &select_kernel(*x.schedule, x.file, c.variant, hardware, c.problem, &sel[i].sched);
      } catch (const InputError& e) {
        c.skipped = e.what();
        continue;
      }
      c.kernel = describe(sel[i].kernel->knobs);
      c.trace_sample = no_ops ? 1 : static_cast<int>(trace_sample);  // its op means: the tiles the kernel records
      Prediction pred = predict_case(*x.schedule, hardware, c);  // the prediction `fidelity` repeats
      if (!first_pred) first_pred = std::move(pred), first_predicted = i;
      const std::string shape = c.problem.describe();
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const auto& gr) { return pending[gr.front()].c.problem.describe() == shape; });
      if (g == groups.end())
        groups.push_back({i});
      else
        g->push_back(i);
    }
    // The kernels of a problem take turns within the power controller's averaging window, so they
    // run at the clock their mean activity holds: their predictions too (as `fidelity` re-predicts
    // them, timing.json saying so).
    // Then they are simulated again at it (the L2 and HBM rates per cycle follow the clock).
    for (const auto& group : groups) {
      std::vector<ValidationCase*> together;
      for (size_t i : group) together.push_back(&pending[i].c);
      share_clock(hardware, together);
      for (size_t i : group) {
        ValidationCase& c = pending[i].c;
        c.trace_warps = trace_warps == "first" ? 0 : warps;  // the predicted op means over the recorded warps
        Prediction pred = predict_case(*pending[i].schedule, hardware, c, c.predicted_clock_ghz);
        if (i == first_predicted && first_pred) first_pred = std::move(pred);
      }
    }
    const sm90::TimingOptions topt{.warmup = timing.warmup,
                                   .reps = timing.reps,
                                   .launches = timing.launches,
                                   .precondition_ms = timing.precondition_ms,
                                   .min_timed_ms = timing.min_timed_ms,
                                   .trace_warps = warps,
                                   .trace_sample = trace_sample};
    int first_measured = -1;
    size_t done = 0;
    for (const auto& group : groups) {
      sm90::DeviceProblem dev(to_shape(pending[group.front()].c.problem), 2026 + group.front());
      std::vector<sm90::TimedKernel> ks;
      for (size_t i : group) ks.push_back({sel[i].kernel, sel[i].sched});
      // Unless --no-ops, the instrumented kernels too, in the same turns as the plain ones: the
      // instrumentation's overhead per case.
      const std::vector<sm90::TimingPair> times = sm90::time_kernels(ks, dev, topt, !no_ops);
      for (size_t g = 0; g < group.size(); ++g) {
        const size_t i = group[g];
        ValidationCase& c = pending[i].c;
        const Selected& k = sel[i];
        const sm90::Timing& t = times[g].plain;
        if (!no_ops) c.traced_us = times[g].traced.median_ms * 1e3;
        c.measured = true;
        c.measured_us = t.median_ms * 1e3;
        c.measured_min_us = t.min_ms * 1e3;
        c.measured_max_us = t.max_ms * 1e3;
        c.timed_clock_ghz = t.median_clock_ghz;
        if (!no_ops) c.kernel_clock_ghz = times[g].traced.median_kernel_clock_ghz;
        c.runs = static_cast<int>(t.ms.size());  // --reps, or more (--min-timed-ms)
        for (double ms : t.ms) c.run_us.push_back(ms * 1e3);
        if (!no_ops) {
          const sm90::MeasuredTrace rec = sm90::trace_kernel(*k.kernel, dev, k.sched, cap, warps, trace_sample);
          std::vector<MeasuredCta> ctas;
          for (int cta = 0; cta < static_cast<int>(rec.ctas.size()); ++cta)
            if (cta_recorded(rec, cta)) ctas.push_back(measured_cta(rec, cta, hardware.clock_ghz));
          std::vector<const Timeline*> tls;
          for (const auto& mc : ctas) tls.push_back(&mc.timeline);
          c.measured_ops = op_means(tls);
          c.measured_clock_ghz = median_cta_clock_ghz(ctas);
          if (first_measured < 0) {
            std::ofstream mt(out_dir + "/trace_measured.json");
            write_measured_trace(rec, default_trace_ctas(rec, 4), false, hardware.clock_ghz, "measured", mt);
            std::ofstream pt(out_dir + "/trace_predicted.json");
            TraceOptions to;
            to.t1_cycles = first_tile_end(first_pred->critical.timeline);
            to.process_name = fmt::format("predicted {} on {} (critical CTA)", c.name(), hardware.name);
            write_chrome_trace(first_pred->critical.timeline, to, pt);
          }
        }
        if (first_measured < 0) first_measured = static_cast<int>(i);
        std::cerr << fmt::format(
            "  [{}/{}] {} on {}: predicted {:.1f} us, measured {:.1f} us ({:+.1f}%), SM clock {:.3f} GHz in the "
            "kernel (traced twin, same turns), {:.3f} probed, {:.3f} in the trace run\n",
            ++done, pending.size(), c.name(), c.problem_label, c.predicted_us, c.measured_us, c.error_pct(),
            c.kernel_clock_ghz, c.timed_clock_ghz, c.measured_clock_ghz);
      }
    }
    std::vector<ValidationCase> cases;
    for (auto& x : pending) cases.push_back(std::move(x.c));
    // How the kernels were timed: in results.json's meta and in timing.json, which fidelity reads.
    nlohmann::json timing_fields;
    timing_fields["timed_runs"] = timing.reps;
    timing_fields["warmup_runs"] = timing.warmup;
    timing_fields["precondition_ms"] = timing.precondition_ms;
    timing_fields["min_timed_ms"] = timing.min_timed_ms;
    timing_fields["launches_per_run"] = timing.launches;
    nlohmann::json meta = {
        {"gpu", gpu.name},
        {"sm_count", gpu.sm_count},
        {"hardware_config", hardware.name},
        {"date", today_utc()},
        {"trace_warps", trace_warps},
        {"trace_sample", trace_sample},
        { "method",
          "measured: median over --reps repetitions (more where they took under --min-timed-ms) of the per-launch "
          "time of --launches back-to-back launches, CUDA events (enqueued without host syncs, after warm-up and "
          "--precondition-ms of untimed load), random N(0,1) bf16 inputs, the same buffers every launch; the kernels "
          "of one problem (every variant, plain and traced) timed together in turns of about 5 ms, so that all see "
          "the same SM clock; traced: the instrumented kernel timed the same way; predicted: attnsim simulate "
          "(exact mode) with the hardware config matching the GPU, calibrated from microbenchmarks only, each "
          "problem's cases at the clock of their mean activity" }};
    meta.update(timing_fields);
    if (cudnn) {
      std::vector<Problem> probs;
      std::vector<std::string> labels;
      for (const auto& c : cases)
        if (c.measured && std::find(labels.begin(), labels.end(), c.problem_label) == labels.end()) {
          labels.push_back(c.problem_label);
          probs.push_back(c.problem);
        }
      const CudnnTimes ct = time_cudnn(
          probs, out_dir, CudnnTiming{.precondition_ms = timing.precondition_ms, .min_timed_ms = timing.min_timed_ms});
      if (!ct.note.empty()) std::cerr << ct.note << "\n";
      meta["cudnn"] = {{"torch", ct.torch_version}, {"note", ct.note},
                       {"method", "PyTorch SDPA, cuDNN backend (scripts/bench_cudnn_sdpa.py), same process run"}};
      for (auto& c : cases)
        for (size_t p = 0; p < labels.size(); ++p)
          if (c.problem_label == labels[p]) c.cudnn_us = ct.us[p];
    }
    const ValidationStats st = validation_stats(cases);
    std::cout << format_validation(cases, st, no_ops ? -1 : first_measured);
    const FidelityReport acceptance = fidelity_report(cases);  // per change, per-op acceptance (as `fidelity`)
    std::cout << format_clock_split(acceptance) << format_changes(acceptance) << format_op_acceptance(acceptance);
    nlohmann::json j = validation_json(cases, st, meta);
    j["acceptance"] = fidelity_json(acceptance);
    if (!sweep.empty()) report_sweep(cases, j);
    std::ofstream(out_dir + "/results.csv") << validation_csv(cases);
    std::ofstream(out_dir + "/ops.csv") << validation_ops_csv(cases);
    std::ofstream(out_dir + "/results.json") << j.dump(2) << "\n";
    nlohmann::json timing_meta = timing_fields;
    timing_meta["description"] =
        "How attnsim validate timed this folder's kernels; `attnsim fidelity` reads timed_together (problem: the "
        "kernels of each problem took turns of about 5 ms, so they shared one SM clock) and trace_rule with "
        "trace_sample (no_first_tile: the traced runs recorded about one work tile in trace_sample and no CTA's "
        "first tile, kernels/sm90/trace_sampling.h; the predicted op means leave it out too) and trace_warps (the "
        "warps that recorded, where not the first of each warpgroup; the predicted op means take the same)";
    timing_meta["timed_together"] = "problem";
    if (!no_ops) {
      timing_meta["trace_sample"] = trace_sample;
      timing_meta["trace_rule"] = kTraceRuleNoFirstTile;
      if (trace_warps != "first") timing_meta["trace_warps"] = trace_warps;
    }
    std::ofstream(out_dir + "/timing.json") << timing_meta.dump(1) << "\n";
    std::cerr << fmt::format("wrote {0}/results.csv, {0}/ops.csv, {0}/results.json, {0}/timing.json{1}\n", out_dir,
                             no_ops ? "" : fmt::format(", {0}/trace_measured.json, {0}/trace_predicted.json", out_dir));
    return 0;
#else
    (void)pending;
    select_kernel(*load_schedule(project_root() + "/schedules/fa3_sm90.json"), "validate", "", Hardware{}, Problem{},
                  nullptr);  // throws: built without CUDA
    return 2;
#endif
  }

  /// Sweep: candidates measured on every problem, ranked by geometric-mean TFLOPS predicted and
  /// measured, and the Spearman correlation of the two rankings.
  static void report_sweep(const std::vector<ValidationCase>& cases, nlohmann::json& j) {
    const SweepRanking r = sweep_ranking(cases);
    std::cout << fmt::format("\nsweep: {} of {} candidates have compiled kernels for every problem\n", r.rows.size(),
                             r.candidates);
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : r.rows) {
      std::cout << fmt::format("  {:<70} predicted {:7.1f}  measured {:7.1f} TFLOPS (geomean)\n", row.candidate,
                               row.predicted_geomean_tflops, row.measured_geomean_tflops);
      rows.push_back({{"candidate", row.candidate},
                      {"predicted_geomean_tflops", row.predicted_geomean_tflops},
                      {"measured_geomean_tflops", row.measured_geomean_tflops}});
    }
    j["sweep"] = {{"candidates", r.candidates}, {"measured_candidates", r.rows.size()}, {"ranking", rows}};
    if (r.has_spearman) {
      std::cout << fmt::format("  Spearman of the candidate rankings (geomean TFLOPS): {:.3f}\n", r.spearman);
      j["sweep"]["spearman"] = r.spearman;
    }
  }
};

}  // namespace

std::unique_ptr<Command> add_validate(CLI::App& app, CLI::App*& sub) {
  auto c = std::make_unique<Validate>();
  sub = app.add_subcommand("validate", "predicted against measured times of real kernels over schedules x problems");
  sub->add_option("schedules", c->schedules, "schedule files (default: schedules/fa3_sm90.json)");
  sub->add_option("--variants", c->variants, "all | base | comma-separated variant names (\"base\" = no variant)");
  sub->add_option("--problems", c->problems_file,
                  "problem set JSON (default: configs/validation/problems_sm90.json)");
  sub->add_option("--sweep", c->sweep, "a sweep file (configs/sweeps/*.json): its candidates x its problems");
  sub->add_option("--out", c->out_dir, "output folder (results.csv, ops.csv, results.json, traces)");
  sub->add_option("--hw", c->hw, "hardware config for predictions (default: the one matching the GPU)");
  c->timing.add(sub, 10);
  sub->add_option("--trace-cap", c->cap, "spans recorded per warp for the per-op table (0: all)")
      ->check(CLI::Range(0, 1 << 28));
  sub->add_option("--trace-warps", c->trace_warps,
                  "warps that record: first (load warp + first warp of each consumer warpgroup; default), all, or "
                  "indices \"0,4,5\"");
  sub->add_option("--trace-sample", c->trace_sample,
                  "SM90 kernels record about one work tile in N, where their time is off the grid's critical "
                  "path and not a CTA's first (kernels/sm90/trace_sampling.h), the others run uninstrumented "
                  "(default 32; 1: every tile)")
      ->check(CLI::Range(1, 1 << 20));
  sub->add_flag("--cudnn", c->cudnn, "time cuDNN's fused attention on the same shapes (python3 + PyTorch)");
  sub->add_flag("--no-ops", c->no_ops, "skip the traced runs per case (no per-op table, no traces, no overhead)");
  sub->get_option("--sweep")->excludes(sub->get_option("schedules"));
  return c;
}

}  // namespace attnsim::cli
