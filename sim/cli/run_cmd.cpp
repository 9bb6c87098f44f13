// `attnsim run SCHEDULE [problem]`: runs the real kernel the schedule resolves to (kernels/sm90,
// kernels/fa2 and kernels/blackflash on an H100/H200, kernels/sm100 on an SM100 GPU such as a
// B200) on the GPU at hand: measured time (median per-launch time of back-to-back launches) beside
// the simulator's prediction, optionally a correctness check and a measured Chrome trace with the
// same tracks and span names as `simulate --trace`, with the per-op table of predicted against
// measured mean span durations (as `validate` prints for a case) and the consumer warpgroups'
// phase (measure/warpgroup_phase.hpp). Exits 77 with the reason when
// the GPU at hand cannot run the kernel (none, or another architecture).
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/kernel_select.hpp"
#include "driver/simulate.hpp"
#include "measure/fidelity.hpp"
#include "measure/measured_timeline.hpp"
#include "measure/validate.hpp"
#include "measure/warpgroup_phase.hpp"
#include "report/chrome_trace.hpp"
#include "report/window.hpp"

namespace attnsim::cli {
namespace {

struct Run : Command {
  std::string schedule, variant, hw, trace, predicted_trace, trace_warps = "first";
  std::vector<std::string> sets;
  ProblemFlags pf;
  TimingFlags timing;
  int ctas = 4;
  unsigned cap = 16384;
  uint32_t trace_sample = 1;
  bool check = false, list = false, full_trace = false;

  int list_kernels() const {
#if ATTNSIM_WITH_SM90
    std::cout << fmt::format(
        "{} kernels compiled into this build (kernels/sm90, kernels/fa2, kernels/sm100, kernels/blackflash; from "
        "schedules/*.json):\n",
        sm90::compiled_kernels().size());
    size_t width = 0;
    for (const auto& k : sm90::compiled_kernels()) width = std::max(width, describe(k.knobs).size());
    for (const auto& k : sm90::compiled_kernels())
      std::cout << fmt::format(
          "  {:<{}} needs {:<7} {}{}\n", describe(k.knobs), width, kernel_arch(k.knobs),
          kernel_cc_major(k.knobs) == 10 ? "(an SM100 GPU such as a B200, not yet run on one) " : "", k.origin);
    return 0;
#else
    std::cout << "this attnsim was built without a CUDA compiler: no kernels\n";
    return 0;
#endif
  }

  int run() override {
    if (list) return list_kernels();
    if (schedule.empty()) throw std::invalid_argument("run: a SCHEDULE file is required (or --list)");
    [[maybe_unused]] uint32_t warps = sm90::parse_trace_warps(trace_warps);
    const auto s = load_schedule(schedule, sets, variant);
    const Problem problem = pf.build();
#if ATTNSIM_WITH_SM90
    const sm90::GpuInfo gpu = sm90::gpu_info();
    // Resolve and find the kernel first: "not compiled" is reported with or without a GPU.
    // Schedules for SM100 (fa4_sm100) resolve on the B200 config, the others on the H100's.
    const Hardware resolve_hw = load_hardware(resolve_hardware_path(!hw.empty()            ? hw
                                                                    : s->arch() == "sm100" ? "b200"
                                                                                           : "h100_sxm"));
    TileScheduler sched = TileScheduler::Lpt;
    const sm90::CompiledKernel& k = select_kernel(*s, schedule, variant, resolve_hw, problem, &sched);
    // "first" on the SM100 kernel: the first warp of each warpgroup plus the epilogue and load warps.
    if (trace_warps == "first" && std::holds_alternative<sm100::KernelKnobs>(k.knobs)) warps = sm100::kTraceWarpsFirst;
    if (const std::string why = sm90::kernel_unrunnable(k.knobs, gpu); !why.empty()) {
      std::cout << fmt::format("SKIPPED: no GPU to run [{}] on: {}\n", describe(k.knobs), why);
      return kNoGpuExit;
    }
    const Hardware hardware = hardware_for(gpu, hw);
    std::cout << fmt::format("attnsim run: {} on {} ({} SMs) - {}\n  kernel [{}], {} grid\n", s->name(), gpu.name,
                             gpu.sm_count, problem.describe(), describe(k.knobs), tile_scheduler_label(sched));
    sm90::DeviceProblem dev(to_shape(problem), 2026);
    if (check) {
      const sm90::CheckResult r = sm90::check_kernel(k, dev, sched);
      std::cout << fmt::format(
          "  correctness ({} reference, {} rows): {} - max |err| {:.4f}, rel RMS {:.4f}, LSE {:.1e}{}\n", r.reference,
          r.rows_checked, r.pass ? "pass" : "FAIL", r.max_abs_err, r.max_rel_rms, r.max_lse_err,
          r.pass ? "" : " - " + r.detail);
      if (!r.pass) return 1;
    }
    const sm90::TimingOptions topt{.warmup = timing.warmup,
                                   .reps = timing.reps,
                                   .launches = timing.launches,
                                   .precondition_ms = timing.precondition_ms,
                                   .min_timed_ms = timing.min_timed_ms,
                                   .trace_warps = warps,
                                   .trace_sample = trace_sample};
    // With --trace, the plain and the traced kernel are timed together, taking turns of about 5 ms.
    sm90::TimingPair tp;
    if (trace.empty())
      tp.plain = sm90::time_kernel(k, dev, sched, topt);
    else
      tp = sm90::time_plain_and_traced(k, dev, sched, topt);
    const sm90::Timing& t = tp.plain;
    const Prediction pred = predict(*s, hardware, problem);
    const double us = t.median_ms * 1e3;
    std::cout << fmt::format(
        "  measured   {:9.1f} us  {:6.1f} TFLOPS  (median of {} x {} back-to-back launches, min {:.1f} max {:.1f} us; "
        "{} "
        "CTAs)\n",
        us, problem.flops() / (us * 1e6), t.ms.size(), timing.launches, t.min_ms * 1e3, t.max_ms * 1e3, t.launch.grid);
    std::cout << fmt::format("  predicted  {:9.1f} us  {:6.1f} TFLOPS  ({}: {:+.1f}%)\n", pred.time_us, pred.tflops,
                             hardware.name, 100 * (pred.time_us - us) / us);
    if (t.median_clock_ghz > 0) {
      // Time = cycles / clock at the probed clock, an idle SM's: loaded SMs run slower, so the
      // measured cycles are an upper bound (kernels/microbench clock_under_duty).
      const double cycles = us * 1e3 * t.median_clock_ghz;
      std::cout << fmt::format(
          "  SM clock   {:9.3f} GHz as the timed turns ended (median of a 50 us probe behind each; loaded SMs "
          "run slower), the prediction's {:.3f}: measured at most {:.0f} cycles, predicted {:.0f} ({:+.1f}%)\n",
          t.median_clock_ghz, pred.clock_ghz, cycles, pred.cycles, 100 * (pred.cycles - cycles) / cycles);
    }
    if (!trace.empty()) {
      const sm90::Timing& tt = tp.traced;
      const sm90::MeasuredTrace rec = sm90::trace_kernel(k, dev, sched, cap, warps, trace_sample);
      const uint64_t dropped = dropped_spans(rec);
      std::ofstream out(trace);
      if (!out) throw std::runtime_error("cannot write " + trace);
      write_measured_trace(rec, default_trace_ctas(rec, ctas), full_trace, hardware.clock_ghz, "measured", out);
      std::cout << fmt::format(
          "  traced     {:9.1f} us  (instrumentation overhead {:+.1f}%, --trace-warps {}, --trace-sample {}: traced "
          "against plain median, the two timed in turns){}\n",
          tt.median_ms * 1e3, 100 * (tt.median_ms / t.median_ms - 1), trace_warps, trace_sample,
          dropped ? fmt::format("; {} spans past --trace-cap {} per warp dropped", dropped, cap) : "");
      if (tt.median_kernel_clock_ghz > 0) {
        // The traced kernel's own clock in the same turns: the cycles the plain one ran, nearly.
        const double cycles = us * 1e3 * tt.median_kernel_clock_ghz;
        std::cout << fmt::format(
            "  SM clock   {:9.3f} GHz inside the traced kernel in the same turns (CTA clock anchors): measured "
            "{:.0f} cycles, predicted {:.0f} ({:+.1f}%)\n",
            tt.median_kernel_clock_ghz, cycles, pred.cycles, 100 * (pred.cycles - cycles) / cycles);
      }
      // Op by op: the measured spans of every CTA that recorded against the prediction's critical
      // CTA over the same warps (as `validate` compares a case).
      std::vector<MeasuredCta> recorded;
      for (int cta = 0; cta < static_cast<int>(rec.ctas.size()); ++cta)
        if (cta_recorded(rec, cta)) recorded.push_back(measured_cta(rec, cta, hardware.clock_ghz));
      std::vector<const Timeline*> tls;
      for (const auto& mc : recorded) tls.push_back(&mc.timeline);
      // The spans are predicted from the traced kernel's twin where its code differs in what the
      // model sees (Schedule::traced_twin, as `fidelity` compares them), at the plain prediction's
      // clock; over the critical CTA's tiles the kernel's trace sampling would record (under a
      // sample not a CTA's first, nor a dynamic grid's last ones: trace_sampling.h).
      const auto twin = s->traced_twin(hardware, problem);
      PredictOptions at_clock;
      at_clock.clock_ghz = pred.clock_ghz;
      const Prediction traced_pred = twin ? predict(*twin, hardware, problem, at_clock) : pred;
      const RecordedTiles rt = recorded_tiles(twin ? *twin : *s, traced_pred, static_cast<int>(trace_sample));
      const Timeline& predicted_tl = traced_pred.critical.timeline;
      // The predicted spans at the traced run's clock, which the measured ones ran at (ops_at_clock).
      const double trace_ghz = median_cta_clock_ghz(recorded);
      const std::string table = format_op_table(
          ops_at_clock(op_means_of_warps(predicted_tl, warps, rt.first, rt.end), pred.clock_ghz, trace_ghz),
          op_means(tls));
      std::cout << fmt::format(
          "\n  per op, mean span duration (predicted: {}critical CTA, its cycles at the traced run's clock {:.3f} "
          "GHz (predicted {:.3f}); measured: {} CTAs that recorded, each at its own clock)\n{}",
          twin ? "the traced kernel's twin, " : "", trace_ghz, pred.clock_ghz, recorded.size(), table);
      // The consumer warpgroups' phase: the same kernel settles in different phases at the same
      // speed, and its spans differ between them (measure/warpgroup_phase.hpp).
      // The predicted cycles at the traced run's clock, as the table's.
      std::vector<PhaseLink> predicted_phase = warpgroup_phase(predicted_tl, warps);
      if (trace_ghz > 0)
        for (PhaseLink& l : predicted_phase)
          for (double& d : l.d_ns) d *= predicted_tl.clock_ghz / trace_ghz;
      const std::string phase = format_phase_line(warpgroup_phase(tls, warps), predicted_phase);
      if (!phase.empty())
        std::cout << fmt::format(
            "\n  warpgroup phase, from a consumer warpgroup's PV completing to the next one's QK (median over KV "
            "steps, at the traced run's clock; negative: the QK went out while the PV ran): {}\n",
            phase);
      std::cerr << fmt::format("wrote {} ({} CTAs; open in ui.perfetto.dev)\n", trace,
                               default_trace_ctas(rec, ctas).size());
    }
    if (!predicted_trace.empty()) {
      std::ofstream out(predicted_trace);
      if (!out) throw std::runtime_error("cannot write " + predicted_trace);
      TraceOptions to;
      to.t1_cycles = full_trace ? -1 : first_tile_end(pred.critical.timeline);
      to.process_name = fmt::format("predicted {} on {} (critical CTA)", s->name(), hardware.name);
      write_chrome_trace(pred.critical.timeline, to, out);
      std::cerr << fmt::format("wrote {}\n", predicted_trace);
    }
    return 0;
#else
    select_kernel(*s, schedule, variant, Hardware{}, problem, nullptr);  // throws: built without CUDA
    return 2;
#endif
  }
};

}  // namespace

std::unique_ptr<Command> add_run(CLI::App& app, CLI::App*& sub) {
  auto c = std::make_unique<Run>();
  sub = app.add_subcommand("run", "run the real kernel a schedule resolves to (SM90 or SM100), beside its prediction");
  sub->add_option("schedule", c->schedule,
                  "schedule JSON (an fa3_sm90, fa2_sm80, fa4_sm100 or blackflash family schedule)");
  sub->add_option("--variant", c->variant, "apply a variant the schedule file declares");
  sub->add_option("--set", c->sets, "override a schedule field: /json/pointer=value (repeatable)");
  c->pf.add(sub);
  sub->add_option("--hw", c->hw, "hardware config for the prediction (default: the one matching the GPU)");
  c->timing.add(sub);
  sub->add_flag("--check", c->check, "check O and LSE against a reference first");
  sub->add_option("--trace", c->trace, "write the measured per-warp timeline as a Chrome trace");
  sub->add_option("--predicted-trace", c->predicted_trace, "write the simulator's trace of the same problem");
  sub->add_option("--ctas", c->ctas, "CTAs in the measured trace (the critical one first)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--trace-cap", c->cap, "spans recorded per warp at most (0: all)")->check(CLI::Range(0, 1 << 28));
  sub->add_option("--trace-warps", c->trace_warps,
                  "warps that record: first (load warp + first warp of each consumer warpgroup; on SM100 the first "
                  "warp of each warpgroup + epilogue and load warps; default), all, or "
                  "indices \"0,4,5\"");
  sub->add_option("--trace-sample", c->trace_sample,
                  "SM90 kernels record about one work tile in N, where their time is off the grid's critical "
                  "path and not a CTA's first (kernels/sm90/trace_sampling.h), the others run uninstrumented "
                  "(default 1: every tile; validate samples 32)")
      ->check(CLI::Range(1, 1 << 20));
  sub->add_flag("--full-trace", c->full_trace, "traces of whole CTAs instead of their first tile");
  sub->add_flag("--list", c->list, "list the kernels compiled into this build");
  return c;
}

}  // namespace attnsim::cli
