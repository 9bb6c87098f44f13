// `attnsim bench [SCHEDULE] [--problems FILE] [--variant V] [--csv OUT.csv]`: our SM90 kernel (the
// one SCHEDULE resolves to for each problem) beside cuDNN's fused attention, both timed in the same
// run over a problem set (default configs/bench/sm90_vs_cudnn.json): ours through sm90::time_kernel,
// cuDNN through time_cudnn (scripts/bench_cudnn_sdpa.py), the same warm-up, repetitions and
// back-to-back launches on both sides, as `validate --cudnn` times them. Prints the table of
// measure/bench.hpp and, with --csv, writes it as CSV. A problem with no compiled kernel, or that
// cuDNN refuses, is listed with the reason. Exits 77 (SKIPPED) without a usable GPU.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/kernel_select.hpp"
#include "driver/simulate.hpp"
#include "measure/bench.hpp"
#include "measure/cudnn.hpp"
#include "model/json_reader.hpp"

namespace attnsim::cli {
namespace {

struct Bench : Command {
  std::string schedule, variant, problems_file, csv, out_dir = "bench_out", hw;
  TimingFlags timing;  // both sides

  int run() override {
    const std::string schedule_file = schedule.empty() ? project_root() + "/schedules/fa3_sm90.json" : schedule;
    const std::string set_file =
        problems_file.empty() ? project_root() + "/configs/bench/sm90_vs_cudnn.json" : problems_file;
    // Inputs first: a bad schedule, variant or problem set exits 2 with or without a GPU.
    [[maybe_unused]] const auto s = load_schedule(schedule_file, {}, variant);
    std::vector<BenchRow> rows = bench_rows(load_problem_set(set_file));
#if ATTNSIM_WITH_SM90
    const sm90::GpuInfo gpu = sm90::gpu_info();
    const std::string no_gpu = gpu.usable ? "" : gpu.why;
#else
    const std::string no_gpu =
        "this attnsim was built without a CUDA compiler, so it has no kernels and no GPU access; install the CUDA "
        "toolkit (nvcc) and reconfigure";
#endif
    if (!no_gpu.empty()) {
      std::cout << fmt::format("SKIPPED: {} problems to benchmark, but no GPU to run them on: {}\n", rows.size(), no_gpu);
      return kNoGpuExit;
    }
#if ATTNSIM_WITH_SM90
    const Hardware hardware = hardware_for(gpu, hw);  // what the schedule resolves its kernel knobs against
    const sm90::TimingOptions topt{.warmup = timing.warmup,
                                   .reps = timing.reps,
                                   .launches = timing.launches,
                                   .precondition_ms = timing.precondition_ms,
                                   .min_timed_ms = timing.min_timed_ms};
    std::cout << fmt::format(
        "attnsim bench: {}{} against cuDNN on {} ({} SMs), {} problems of {}; each side: median of {} repetitions "
        "(more where they would take under {:g} ms) of {} back-to-back launches after {} warm-up launches and {:g} ms "
        "of untimed load\n",
        s->name(), variant.empty() ? "" : ":" + variant, gpu.name, gpu.sm_count, rows.size(), set_file, timing.reps,
        timing.min_timed_ms, timing.launches, timing.warmup, timing.precondition_ms);
    for (size_t i = 0; i < rows.size(); ++i) {
      BenchRow& r = rows[i];
      TileScheduler sched = TileScheduler::Lpt;
      const sm90::CompiledKernel* k = nullptr;
      try {
        k = &select_kernel(*s, schedule_file, variant, hardware, r.problem, &sched);
      } catch (const InputError& e) {
        r.ours_error = e.what();
        std::cerr << fmt::format("  [{}/{}] {}: no kernel\n", i + 1, rows.size(), r.label);
        continue;
      }
      try {
        sm90::DeviceProblem dev(to_shape(r.problem), 2026 + i);
        r.ours_us = sm90::time_kernel(*k, dev, sched, topt).median_ms * 1e3;
      } catch (const std::runtime_error& e) {  // a launch or allocation failure: listed, the others still run
        r.ours_error = fmt::format("failed: {}", e.what());
      }
      std::cerr << fmt::format("  [{}/{}] {}: ours {:.1f} us\n", i + 1, rows.size(), r.label, r.ours_us);
    }
    std::vector<Problem> problems;
    for (const auto& r : rows) problems.push_back(r.problem);
    std::cerr << fmt::format("  cuDNN: {} problems through scripts/bench_cudnn_sdpa.py (log in {}/cudnn_log.txt)\n",
                             problems.size(), out_dir);
    const CudnnTimes ct = time_cudnn(problems, out_dir,
                                     CudnnTiming{.warmup = timing.warmup,
                                                 .reps = timing.reps,
                                                 .launches = timing.launches,
                                                 .precondition_ms = timing.precondition_ms,
                                                 .min_timed_ms = timing.min_timed_ms});
    apply_cudnn(rows, ct);
    std::cout << format_bench_table(rows, bench_summary(rows));
    if (!ct.note.empty()) std::cout << ct.note << "\n";
    if (!csv.empty()) {
      const BenchMeta meta{
          .device = gpu.name,
          .date = today_utc(),
          .method = fmt::format(
              "median over {} repetitions (more where they would take under {:g} ms) of the per-launch time of {} "
              "back-to-back launches between one CUDA event pair, enqueued without host syncs, after {} warm-up "
              "launches and {:g} ms of untimed load (each side its own); random N(0,1) bf16 inputs, the same buffers "
              "every launch; ours: attnsim sm90::time_kernel ({}{}); cuDNN: PyTorch {} SDPA, cuDNN backend "
              "(scripts/bench_cudnn_sdpa.py), same run",
              timing.reps, timing.min_timed_ms, timing.launches, timing.warmup, timing.precondition_ms, s->name(),
              variant.empty() ? "" : ":" + variant, ct.torch_version.empty() ? "(not run)" : ct.torch_version)};
      const auto parent = std::filesystem::path(csv).parent_path();
      if (!parent.empty()) std::filesystem::create_directories(parent);
      std::ofstream f(csv);
      if (!f) throw std::runtime_error("cannot write " + csv);
      f << bench_csv(rows, meta);
      std::cerr << fmt::format("wrote {}\n", csv);
    }
    return 0;
#else
    return kNoGpuExit;  // not reached: a build without CUDA always sets no_gpu
#endif
  }
};

}  // namespace

std::unique_ptr<Command> add_bench(CLI::App& app, CLI::App*& sub) {
  auto c = std::make_unique<Bench>();
  sub = app.add_subcommand("bench", "our SM90 kernel beside cuDNN, timed in the same run, over a problem set");
  sub->add_option("schedule", c->schedule, "schedule file (default: schedules/fa3_sm90.json)");
  sub->add_option("--variant", c->variant, "apply a variant the schedule file declares");
  sub->add_option("--problems", c->problems_file, "problem set JSON (default: configs/bench/sm90_vs_cudnn.json)");
  sub->add_option("--csv", c->csv, "also write the table as CSV, with device, date and method");
  sub->add_option("--out", c->out_dir, "folder for cuDNN's shapes, results and log (default: bench_out)");
  sub->add_option("--hw", c->hw, "hardware config the schedule resolves its kernel against (default: the GPU's)");
  c->timing.add(sub);  // per problem and side
  return c;
}

}  // namespace attnsim::cli
