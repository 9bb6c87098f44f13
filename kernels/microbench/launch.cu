// Launch costs: back-to-back launches of an empty kernel with a full one-CTA-per-SM grid
// (launch_ns), the extra time per additional wave of CTAs (cta_launch_cycles), and the FA3
// prologue from CTA start to the first TMA issue (cta_prologue_cycles).
#include "microbench.cuh"

#include <cuda/ptx>

#include <algorithm>
#include <map>

#include "common/wgmma_sync.cuh"  // ATTNSIM_HAVE_WGMMA: setmaxnreg exists only in the sm_90a pass

namespace mb {
namespace {

constexpr int kThreads = 384;            // FA3: one producer and two consumer warpgroups
constexpr int kSmem = 200 * 1024;        // ~FA3 hd128's dynamic SMEM: one CTA per SM
constexpr int kPrologueBarriers = 10;    // FA3 hd128, 2 KV stages: Q full/empty, K and V full/empty x 2, O

__global__ void __launch_bounds__(kThreads, 1) empty_kernel() {}

/// Thread 0 stamps (clock64, %globaltimer, SM) at CTA start; nothing else.
__global__ void __launch_bounds__(kThreads, 1) stamp_kernel(BlockClock* recs) {
  if (threadIdx.x == 0) {
    const long long c = clock64();
    const unsigned long long n = globaltimer();
    recs[blockIdx.x] = BlockClock{c, c, n, n, smid(), 0};
  }
}

/// Per-CTA record of the prologue: clock64 at entry, after the mbarrier inits + fence, after
/// __syncthreads, after setmaxnreg, after prefetch.tensormap, after the first TMA is issued.
struct PrologueRec {
  long long entry, init, sync, reg, prefetch, issue;
  unsigned smid, pad;
};

/// FA3's prologue: thread 0 initialises the mbarriers and fences them, __syncthreads, the
/// producer warpgroup gives registers back (setmaxnreg.dec 40) and the consumers take them
/// (setmaxnreg.inc 232), the producer thread prefetches the tensor map and issues the first
/// TMA load (a 16 KB box), which is then waited for (outside the measured span). The budgets
/// leave the producer thread room for its timestamps (FA3 itself uses 24 / 240); the early
/// timestamps wait in shared memory so that few registers are live across setmaxnreg.
__global__ void __launch_bounds__(kThreads, 1)
    prologue_kernel(const __grid_constant__ CUtensorMap tmap, PrologueRec* out, int* err) {
  const long long entry = clock64();
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t bars[kPrologueBarriers];
  uint8_t* buf = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  if (threadIdx.x == 0) {
    for (int i = 0; i < kPrologueBarriers; ++i) cuda::ptx::mbarrier_init(&bars[i], (i & 1) ? 8 : 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  __shared__ long long early[2];
  if (threadIdx.x == 0) early[0] = clock64() - entry;
  __syncthreads();
  if (threadIdx.x == 0) early[1] = clock64() - entry;
  const int warp = threadIdx.x / 32;
  if (warp < 4) {
#if ATTNSIM_HAVE_WGMMA
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
#endif
    const long long reg = clock64();
    if (threadIdx.x == 0) {
      asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tmap)) : "memory");
      const long long pf = clock64();
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &bars[0], 16384u);
      const int32_t coords[2] = {0, static_cast<int32_t>(blockIdx.x % 64) * 128};
      cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, buf, &tmap, coords, &bars[0]);
      const long long issue = clock64();
      if (!wait_parity(&bars[0], 0)) atomicExch(err, 1);
      out[blockIdx.x] = PrologueRec{entry, entry + early[0], entry + early[1], reg, pf, issue, smid(), 0};
    }
  } else {
#if ATTNSIM_HAVE_WGMMA
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
#endif
  }
}

/// Median time per launch (ns) of `n` back-to-back launches of `launch` between one event pair,
/// over `trials` trials, after max(3, n / 10) warm-up launches.
template <class F>
double per_launch_ns(F launch, int n, int trials) {
  for (int i = 0; i < std::max(3, n / 10); ++i) launch();
  MB_CHECK_LAUNCH("launch warm-up");
  cudaEvent_t e0, e1;
  MB_CHECK(cudaEventCreate(&e0));
  MB_CHECK(cudaEventCreate(&e1));
  std::vector<double> v;
  for (int t = 0; t < trials; ++t) {
    MB_CHECK(cudaEventRecord(e0));
    for (int i = 0; i < n; ++i) launch();
    MB_CHECK(cudaEventRecord(e1));
    MB_CHECK(cudaEventSynchronize(e1));
    MB_CHECK(cudaGetLastError());
    float ms = 0;
    MB_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    v.push_back(ms * 1e6 / n);
  }
  MB_CHECK(cudaEventDestroy(e0));
  MB_CHECK(cudaEventDestroy(e1));
  return median(v);
}

/// Median GPU time (ns) of one launch alone between an event pair (synchronised each time, so the
/// host's launch rate does not hide the kernel), over `trials` after 3 warm-up launches.
template <class F>
double single_launch_ns(F launch, int trials) {
  return per_launch_ns(launch, 1, trials);
}

/// Per-launch time (ns) of `per_graph` launches captured in one CUDA graph, replayed `trials`
/// times between an event pair: the GPU-side cost without the host's launch rate.
template <class F>
double graph_launch_ns(F launch, int per_graph, int trials) {
  cudaStream_t s;
  MB_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  MB_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < per_graph; ++i) launch(s);
  MB_CHECK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t ge;
  MB_CHECK(cudaGraphInstantiate(&ge, g, 0));
  MB_CHECK(cudaGraphLaunch(ge, s));
  MB_CHECK(cudaStreamSynchronize(s));
  cudaEvent_t e0, e1;
  MB_CHECK(cudaEventCreate(&e0));
  MB_CHECK(cudaEventCreate(&e1));
  MB_CHECK(cudaEventRecord(e0, s));
  for (int t = 0; t < trials; ++t) MB_CHECK(cudaGraphLaunch(ge, s));
  MB_CHECK(cudaEventRecord(e1, s));
  MB_CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  MB_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  MB_CHECK(cudaEventDestroy(e0));
  MB_CHECK(cudaEventDestroy(e1));
  MB_CHECK(cudaGraphExecDestroy(ge));
  MB_CHECK(cudaGraphDestroy(g));
  MB_CHECK(cudaStreamDestroy(s));
  return ms * 1e6 / (static_cast<double>(per_graph) * trials);
}

void bench_launch_overhead(Report& rep) {
  rep.set_method(
      "launch_ns: N back-to-back launches of an empty kernel (sm_count CTAs x 384 threads, "
      "200 KB dynamic SMEM: one CTA per SM) in one stream between one cudaEvent pair, / N, "
      "nothing subtracted; median of 5 trials (also 1 CTA x 32 threads without SMEM, and the "
      "full grid without SMEM; beside them the GPU-side cost: 100 launches in a CUDA graph, and "
      "one launch alone between an event pair). cta_launch_cycles: the same empty kernel with W "
      "x sm_count CTAs (W = 1..256 waves), each launch alone between an event pair (median of "
      "50; back-to-back launches are bound by the host's launch rate, ~4 us, until W ~ 16), "
      "GPU time against W; the least-squares slope (ns per wave) x the SM clock measured in the stamping kernel (clock64 / %globaltimer between "
      "the first and last CTA starts on each SM); the in-kernel start-to-start gap of "
      "consecutive CTAs on one SM (clock64) is given beside it. cta_prologue_cycles: FA3's "
      "prologue (thread 0: 10 mbarrier.init + fence.mbarrier_init; __syncthreads; setmaxnreg "
      "dec 40 / inc 232 by warpgroup; prefetch.tensormap; arrive.expect_tx + the first TMA 2D "
      "load issued), clock64 from kernel entry to after the issue in thread 0, one CTA per SM, "
      "median over CTAs of launches 2-5 (launch 1 reported apart: cold instruction cache).");
  const DeviceInfo& dev = rep.dev();
  const bool quick = rep.opt().quick;
  const int grid = dev.sm_count;
  Json& res = rep.results();
  allow_smem(empty_kernel, kSmem);
  allow_smem(stamp_kernel, kSmem);
  allow_smem(prologue_kernel, kSmem);
  const int n = quick ? 200 : 2000, trials = quick ? 2 : 5;

  // --- launch_ns
  Json& jl = res["launch"];
  const double full = per_launch_ns([&] { empty_kernel<<<grid, kThreads, kSmem>>>(); }, n, trials);
  jl["full_grid_384_threads_200kb_ns"] = full;
  jl["full_grid_384_threads_no_smem_ns"] = per_launch_ns([&] { empty_kernel<<<grid, kThreads>>>(); }, n, trials);
  jl["one_cta_32_threads_ns"] = per_launch_ns([&] { empty_kernel<<<1, 32>>>(); }, n, trials);
  jl["launches_per_trial"] = n;
  jl["full_grid_cuda_graph_ns"] = graph_launch_ns(
      [&](cudaStream_t s) { empty_kernel<<<grid, kThreads, kSmem, s>>>(); }, 100, quick ? 2 : 20);
  jl["full_grid_single_launch_event_pair_ns"] =
      single_launch_ns([&] { empty_kernel<<<grid, kThreads, kSmem>>>(); }, quick ? 10 : 50);
  res["launch_ns"] = full;

  // --- waves
  const int max_waves = 256;
  DeviceBuffer<BlockClock> recs(static_cast<size_t>(grid) * max_waves);
  Json& jw = res["waves"];
  std::vector<double> xs, ys, ys_stamp, gaps;
  ClockMeter cm;
  for (int w : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
    const int g = w * grid;
    const int nl = quick ? 20 : 200, single_trials = quick ? 10 : 50;
    const double tb = per_launch_ns([&] { empty_kernel<<<g, kThreads, kSmem>>>(); }, nl, trials);
    const double t = single_launch_ns([&] { empty_kernel<<<g, kThreads, kSmem>>>(); }, single_trials);
    const double ts = single_launch_ns([&] { stamp_kernel<<<g, kThreads, kSmem>>>(recs.get()); }, single_trials);
    // One more stamped launch to read: start-to-start gaps of consecutive CTAs on each SM.
    stamp_kernel<<<g, kThreads, kSmem>>>(recs.get());
    MB_CHECK_LAUNCH("stamp_kernel");
    const auto h = recs.to_host();
    std::map<unsigned, std::vector<std::pair<long long, unsigned long long>>> by_sm;
    for (int i = 0; i < g; ++i) by_sm[h[i].smid].push_back({h[i].clk0, h[i].ns0});
    std::vector<double> wave_gaps;
    std::vector<BlockClock> spans;
    for (auto& [sm, v] : by_sm) {
      std::sort(v.begin(), v.end());
      for (size_t k = 1; k < v.size(); ++k) wave_gaps.push_back(static_cast<double>(v[k].first - v[k - 1].first));
      if (v.size() > 1) spans.push_back(BlockClock{v.front().first, v.back().first, v.front().second, v.back().second, sm, 0});
    }
    cm.add(spans, 2000.0);
    rep.clock().add(spans, 2000.0);
    Json j = Json::object();
    j["waves"] = w;
    j["ctas"] = g;
    j["empty_ns_back_to_back"] = tb;
    j["empty_ns_single_launch"] = t;
    j["stamp_ns_single_launch"] = ts;
    if (!wave_gaps.empty()) {
      j["start_to_start_cycles_same_sm_median"] = median(wave_gaps);
      j["start_to_start_cycles_same_sm_p90"] = percentile(wave_gaps, 90);
      if (w >= 16) gaps.insert(gaps.end(), wave_gaps.begin(), wave_gaps.end());
    }
    jw["w" + std::to_string(w)] = j;
    xs.push_back(w);
    ys.push_back(t);
    ys_stamp.push_back(ts);
  }
  const double ns_per_wave = fit_line(xs, ys).second;
  const double ghz = cm.ghz();
  res["clock_ghz"] = ghz;
  res["ns_per_wave_empty"] = ns_per_wave;
  res["ns_per_wave_stamp"] = fit_line(xs, ys_stamp).second;
  res["in_kernel_start_to_start_cycles"] = median(gaps);
  res["cta_launch_cycles"] = ns_per_wave * ghz;

  // --- FA3 prologue
  {
    DeviceBuffer<uint8_t> src(4u << 20);
    MB_CHECK(cudaMemset(src.get(), 0x3c, src.size()));
    const CUtensorMap m = make_tmap(src.get(), src.size() / 256, 128);
    DeviceBuffer<PrologueRec> out(grid);
    DeviceBuffer<int> err(1);
    err.zero();
    std::vector<double> first, total, init, sync, reg, pf, issue;
    for (int l = 0; l < 5; ++l) {
      prologue_kernel<<<grid, kThreads, kSmem>>>(m, out.get(), err.get());
      MB_CHECK_LAUNCH("prologue_kernel");
      if (err.to_host()[0]) throw std::runtime_error("prologue_kernel: the first TMA load never landed (2 s)");
      for (const PrologueRec& r : out.to_host()) {
        const double t = static_cast<double>(r.issue - r.entry);
        if (l == 0) {
          first.push_back(t);
          continue;
        }
        total.push_back(t);
        init.push_back(static_cast<double>(r.init - r.entry));
        sync.push_back(static_cast<double>(r.sync - r.init));
        reg.push_back(static_cast<double>(r.reg - r.sync));
        pf.push_back(static_cast<double>(r.prefetch - r.reg));
        issue.push_back(static_cast<double>(r.issue - r.prefetch));
      }
    }
    Json& jp = res["prologue"];
    jp["setmaxnreg"] = dev.cc_major == 9 && dev.cc_minor == 0;
    jp["entry_to_first_tma_issued_median"] = median(total);
    jp["entry_to_first_tma_issued_p90"] = percentile(total, 90);
    jp["first_launch_median"] = median(first);
    jp["mbarrier_init_fence_median"] = median(init);
    jp["syncthreads_median"] = median(sync);
    jp["setmaxnreg_median"] = median(reg);
    jp["prefetch_tensormap_median"] = median(pf);
    jp["expect_tx_and_issue_median"] = median(issue);
    res["cta_prologue_cycles"] = median(total);
  }
}

}  // namespace

std::vector<Benchmark> launch_benchmarks() {
  return {
      {"launch_overhead", "back-to-back empty-kernel launches, per-wave CTA launch cost, FA3 prologue",
       bench_launch_overhead},
  };
}

}  // namespace mb
