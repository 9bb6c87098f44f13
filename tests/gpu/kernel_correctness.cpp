// attnsim_kernel_tests [--quick] [--family NAME] [--filter TEXT]: every compiled kernel (kernels/sm90, kernels/fa2,
// kernels/sm100, kernels/blackflash) that the GPU at hand can run (kernel_unrunnable: its
// architecture) against a reference; --family (fa3_sm90, fa2_sm80, fa4_sm100, blackflash) keeps
// the kernels of one family, --filter those whose knobs (`attnsim run --list`) contain TEXT. For
// each kernel:
// causal and non-causal x a set of shapes with ragged sequence lengths (not multiples of the
// tile), GQA, sq != sk, rows that see no key, more tiles than SMs, and one large shape checked on
// sampled rows by the GPU reference; each under every tile scheduler it runs with (the dynamic
// one's counter must be back at 0 after each launch, or the next run fails); the instrumented
// build of each kernel on one shape (recorded and plain tiles); and one shape, causal and not, with
// Q scaled by 6 (wide scores: both branches of a conditional rescale). Exits 0 when all
// pass, 1 on a failure, 2 on bad arguments, and 77 (ctest: skipped) with a message when this
// machine has no GPU or none that runs any compiled kernel.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "sm90/fa3_api.h"

using namespace attnsim::sm90;

namespace {
/// The tile schedulers a kernel runs under: the dynamic one's kernels only under it, blackflash's
/// one CTA per tile only, the others under static persistent and one-tile-per-CTA grids (fa2
/// ignores the choice).
std::vector<TileScheduler> schedulers_of(const CompiledKernel& k) {
  if (std::holds_alternative<attnsim::blackflash::KernelKnobs>(k.knobs)) return {TileScheduler::Lpt};
  const auto* s = std::get_if<KernelKnobs>(&k.knobs);
  if (s && s->dynamic) return {TileScheduler::DynamicLpt};
  return {TileScheduler::StaticPersistent, TileScheduler::Lpt};
}
}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string family, filter;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--family" && i + 1 < argc) {
      family = argv[++i];
    } else if (a == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else {
      std::printf(
          "usage: attnsim_kernel_tests [--quick] [--family fa3_sm90|fa2_sm80|fa4_sm100|blackflash] [--filter TEXT]; "
          "got \"%s\"\n",
          a.c_str());
      return 2;
    }
  }
  const GpuInfo gpu = gpu_info();
  if (gpu.name.empty()) {
    std::printf("SKIPPED: %s\n", gpu.why.c_str());
    return 77;
  }
  // --family and --filter: the kernels this run checks.
  auto wanted = [&](const CompiledKernel& k) {
    return (family.empty() || attnsim::kernel_family(k.knobs) == family) &&
           attnsim::describe(k.knobs).find(filter) != std::string::npos;
  };
  int selected = 0;
  for (const CompiledKernel& k : compiled_kernels()) selected += wanted(k);
  std::printf("GPU: %s (%d SMs); %zu compiled kernels, %d selected%s%s%s%s\n", gpu.name.c_str(), gpu.sm_count,
              compiled_kernels().size(), selected, family.empty() ? "" : " of family ", family.c_str(),
              filter.empty() ? "" : " matching ", filter.c_str());
  if (selected == 0) {
    std::printf("FAIL: no compiled kernel of family \"%s\" matching \"%s\" (`attnsim run --list` shows them)\n",
                family.c_str(), filter.c_str());
    return 1;
  }
  int failures = 0, runs = 0, skipped = 0;
  std::string skip_why;
  for (const CompiledKernel& k : compiled_kernels()) {
    if (!wanted(k)) continue;
    // Each kernel runs on its own architecture only (sm_90a: H100/H200; sm_100a: SM100, e.g. B200).
    if (const std::string why = kernel_unrunnable(k.knobs, gpu); !why.empty()) {
      ++skipped;
      skip_why = why;
      std::printf("skip %-46s %s\n", attnsim::describe(k.knobs).c_str(), why.c_str());
      continue;
    }
    const int d = attnsim::kernel_head_dim(k.knobs);
    // batch, heads, kv_heads, seqlen_q, seqlen_k (causal added below).
    std::vector<Shape> shapes = {
        {1, 2, 2, 1, 1, d, false},       // one row, one key
        {2, 4, 2, 333, 411, d, false},   // ragged tails, GQA 2:1, sq < sk
        {1, 3, 1, 200, 77, d, false},    // MQA, sq > sk: with causal, rows below the diagonal see nothing
        {1, 2, 2, 517, 517, d, false},   // several m-blocks, ragged
        {1, 4, 2, 256, 256, d, false},   // whole tiles only (no tail mask), GQA 2:1
        {8, 16, 4, 700, 650, d, false},  // more tiles than SMs: persistent CTAs run 3-6, GQA 4:1
    };
    // GPU reference, sampled rows: 48 heads of 4100 keys, GQA 2:1, whose K/V (1-4 MiB per KV head)
    // do not fit in one 32 MiB L2 section, so the longest-first orders walk several sections.
    if (!quick) shapes.push_back({3, 16, 8, 4100, 4100, d, false});
    // The instrumented build too, on the shape with several tiles per persistent CTA: recording
    // one tile in 3, so that both its recorded and its plain tiles run, and (uneven static grids)
    // a recording CTA's last tiles run on the CTAs after it (TraceSampleRule::shed); families that
    // record every tile ignore the sample.
    const size_t traced_shape = 5;
    // One run of the kernel on shape s; returns false once the CUDA context is lost.
    auto run_case = [&](const Shape& s, TileScheduler sched, bool traced, float q_scale) {
      ++runs;
      const std::string name = attnsim::describe(k.knobs) + (traced ? " (traced)" : "");
      const std::string what = s.describe() + (q_scale != 1.f ? " q x" + std::to_string(static_cast<int>(q_scale)) : "");
      try {
        DeviceProblem prob(s, 1234 + runs, q_scale);
        const CheckResult r = traced ? check_traced_kernel(k, prob, sched, 3) : check_kernel(k, prob, sched);
        std::printf("%-4s %-55s %-34s %-17s %s rows %lld max|err| %.4f rel-rms %.4f lse %.2e%s%s\n",
                    r.pass ? "ok" : "FAIL", name.c_str(), what.c_str(), attnsim::tile_scheduler_name(sched),
                    r.reference.c_str(), r.rows_checked, r.max_abs_err, r.max_rel_rms, r.max_lse_err,
                    r.pass ? "" : "  ", r.detail.c_str());
        if (!r.pass) ++failures;
      } catch (const std::exception& e) {
        std::printf("FAIL %-55s %-34s error: %s\n", name.c_str(), what.c_str(), e.what());
        ++failures;
        if (std::string(e.what()).find("unspecified launch failure") != std::string::npos ||
            std::string(e.what()).find("illegal") != std::string::npos) {
          std::printf("the CUDA context is lost after this error; stopping\n");
          return false;
        }
      }
      return true;
    };
    for (bool causal : {false, true})
      for (size_t si = 0; si < shapes.size(); ++si) {
        Shape s = shapes[si];
        s.causal = causal;
        for (TileScheduler sched : schedulers_of(k))
          for (bool traced : {false, true}) {
            if (traced && (si != traced_shape || !k.launch_traced)) continue;
            if (!run_case(s, sched, traced, 1.f)) return 1;
          }
      }
    // Q x 6: scores with a standard deviation of about 8.7 in log2 units, so that a row's running
    // max often grows by more than 2^8 between blocks and a conditional rescale
    // (KernelKnobs::rescale_threshold_milli) takes both of its branches; several m-blocks with
    // ragged tails, GQA 2:1.
    for (bool causal : {false, true})
      if (!run_case(Shape{1, 4, 2, 517, 517, d, causal}, schedulers_of(k).front(), false, 6.f)) return 1;
  }
  if (runs == 0) {
    std::printf("SKIPPED: none of the %d compiled kernels runs on this GPU: %s\n", skipped, skip_why.c_str());
    return 77;
  }
  std::printf("%d of %d runs passed (%d kernels skipped: built for another GPU architecture)\n", runs - failures, runs,
              skipped);
  return failures ? 1 : 0;
}
