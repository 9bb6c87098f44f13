// attnsim_kernel_timing_tests: the timing that `run`, `validate` and `bench` report
// (kernels/sm90/runner.cu), on the GPU at hand. Two fa3_sm90 kernels of one head_dim whose SMEM
// differs (so that each timing can be told apart by its launch) are timed on one problem by
// time_kernels, in turns, plain and traced; checked: one pair per kernel, in
// the order given (each pair's launch is its own kernel's, as time_kernel alone reports it);
// `reps` per-launch times in every series asked for and none in a series not asked for; median
// within [min, max]; an SM clock probed behind every turn; the traced kernel timed only where
// asked. Exits 0 when all hold, 1 on a failure, 77 (ctest: skipped) with the reason when no GPU
// runs two such kernels.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "expect.h"
#include "sm90/fa3_api.h"

using namespace attnsim::sm90;
using attnsim::gpu_test::expect;
using attnsim::gpu_test::failures;

namespace {
/// A series' own consistency: reps times, each positive, the median within [min, max]; a clock
/// probe behind each of its turns (at least one per repetition), each an SM clock an H100 / H200 /
/// B200 can run at (0.3-3 GHz), the median among them.
void check_series(const Timing& t, int reps, int launches, const std::string& name) {
  expect(static_cast<int>(t.ms.size()) == reps,
         name + ": " + std::to_string(t.ms.size()) + " repetitions, expected " + std::to_string(reps));
  for (double ms : t.ms) expect(ms > 0, name + ": a repetition took no time");
  expect(t.min_ms <= t.median_ms && t.median_ms <= t.max_ms, name + ": median outside [min, max]");
  expect(t.launches == launches, name + ": launches per repetition");
  expect(
      static_cast<int>(t.clock_ghz.size()) >= reps,
      name + ": " + std::to_string(t.clock_ghz.size()) + " clock probes for " + std::to_string(reps) + " repetitions");
  double lo = 1e9, hi = 0;
  for (double g : t.clock_ghz) {
    expect(g > 0.3 && g < 3.0, name + ": clock probe read " + std::to_string(g) + " GHz");
    lo = std::min(lo, g), hi = std::max(hi, g);
  }
  expect(t.clock_ghz.empty() || (lo <= t.median_clock_ghz && t.median_clock_ghz <= hi),
         name + ": median clock outside the probes' range");
}
}  // namespace

int main() {
  const GpuInfo gpu = gpu_info();
  if (!gpu.usable) {
    std::printf("SKIPPED: %s\n", gpu.why.c_str());
    return 77;
  }
  // Two runnable fa3_sm90 kernels with a traced build, one head_dim, different SMEM.
  std::map<int, std::vector<const CompiledKernel*>> by_dim;
  for (const CompiledKernel& k : compiled_kernels()) {
    const auto* s = std::get_if<KernelKnobs>(&k.knobs);
    if (s && !s->dynamic && k.launch_traced && kernel_unrunnable(k.knobs, gpu).empty())
      by_dim[attnsim::kernel_head_dim(k.knobs)].push_back(&k);
  }
  // Long enough that CTAs run past the 20 us the kernel clock needs (Timing::kernel_clock_ghz: the
  // CTAs with both anchors at least 20 us apart): at seqlen 1000 the 192-row hd64 kernels' CTAs
  // ran one short tile each, and no traced turn had a kernel clock (H200, 2026-11-29).
  const Shape shape{.batch = 2, .heads = 4, .kv_heads = 4, .seqlen_q = 4096, .seqlen_k = 4096, .head_dim = 64};
  DeviceProblem prob(shape, 7);
  std::vector<TimedKernel> ks;
  std::vector<int> smem;
  const TimingOptions o{.warmup = 1, .reps = 6, .launches = 3, .trace_sample = 2};
  for (const auto& [dim, list] : by_dim) {
    if (dim != shape.head_dim) continue;
    for (const CompiledKernel* k : list) {
      const int b = time_kernel(*k, prob, TileScheduler::StaticPersistent, o).launch.smem_bytes;
      if (ks.empty() || b != smem.front()) {
        ks.push_back({k, TileScheduler::StaticPersistent});
        smem.push_back(b);
      }
      if (ks.size() == 2) break;
    }
  }
  if (ks.size() < 2) {
    std::printf("SKIPPED: this build has no two hd%d fa3_sm90 kernels of different SMEM with traced builds\n",
                shape.head_dim);
    return 77;
  }
  std::printf("GPU: %s; timing %s and %s together\n", gpu.name.c_str(), attnsim::describe(ks[0].kernel->knobs).c_str(),
              attnsim::describe(ks[1].kernel->knobs).c_str());
  for (bool traced : {false, true}) {
    const std::vector<TimingPair> t = time_kernels(ks, prob, o, traced);
    const std::string mode = traced ? " (plain and traced)" : " (plain)";
    expect(t.size() == 2, "time_kernels" + mode + ": " + std::to_string(t.size()) + " pairs for 2 kernels");
    if (t.size() != 2) break;
    for (size_t i = 0; i < 2; ++i) {
      const std::string name = "kernel " + std::to_string(i) + mode;
      expect(t[i].plain.launch.smem_bytes == smem[i], name + ": its launch is not its own kernel's (order)");
      check_series(t[i].plain, o.reps, o.launches, name + " plain");
      if (traced) {
        check_series(t[i].traced, o.reps, o.launches, name + " traced");
        // The traced kernel's own clock in each turn (its CTA anchors), an H100 / H200 clock.
        const Timing& tr = t[i].traced;
        expect(tr.kernel_clock_ghz.size() == tr.clock_ghz.size(),
               name + " traced: a clock from inside the kernel for every turn");
        for (double g : tr.kernel_clock_ghz)
          expect(g > 0.3 && g < 3.0, name + " traced: the kernel's clock read " + std::to_string(g) + " GHz");
        expect(t[i].plain.kernel_clock_ghz.empty(), name + " plain: no clock from inside a plain kernel");
      } else
        expect(t[i].traced.ms.empty(), name + ": a traced series that was not asked for");
    }
  }
  std::printf(failures ? "%d check(s) failed\n" : "all timing checks passed\n", failures);
  return failures ? 1 : 0;
}
