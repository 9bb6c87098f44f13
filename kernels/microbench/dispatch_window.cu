// Which phase of a neighbour warp's softmax slows a wgmma dispatch on its SMSP, and how much
// each phase slows while the dispatch, or the tensor work it issued, runs beside it.
//
// Why: `mma_issue_beside` times a dispatch beside the kernel's softmax only as an average over
// the whole softmax loop (hd64: 11 cycles a wgmma alone, 25 beside one neighbour warp, 44 beside
// two) and the neighbours' slowdown only over the whole run (7-12%). A model that prices the
// dispatch per busy neighbour got hd128 and hd256 right and hd64 9% slow: it counts every
// neighbour block the same, where the kernel's dispatch at hd64 looks like one and a half
// neighbours. Here every neighbour warp stamps its phases (the kernel's softmax_max,
// softmax_exp and rescale_o spans, and the loop's own refresh of the scores) and every
// dispatching warp its dispatch and tensor-work windows, so each can be set against the other.
// What it found (kernels/microbench/README.md, `dispatch_window`): timed from the warpgroup's
// last warp, a dispatch beside one softmax warp takes 1.1-1.3x its idle time and beside two
// 1.4-1.75x; a third to two thirds of what each warp's own span adds beside the softmax (as
// `mma_issue_beside` and the traced kernel time it) is its wait for the warpgroup's last warp.
#include <cuda/ptx>
#include <algorithm>
#include <string>

#include "dispatch_window_fit.hpp"
#include "microbench.cuh"
#include "neighbour_work.cuh"
#include "sm90/softmax.cuh"
#include "wgmma_ops.cuh"
#include "wgmma_tiles.cuh"

namespace mb {
namespace {

using attnsim::hopper::fence_regs;
using attnsim::hopper::wgmma_wait;

constexpr int kGroupWgmmas = 8;        // one group, as in mma_issue_beside
constexpr int kGapBaseCycles = 1200;   // idle after each group: 1200 + a hash of the group mod 1024,
constexpr int kGapSpreadCycles = 1024; // so that the groups start at every point of the neighbours' loop
constexpr int kDelayCycles = 4000;     // the neighbours' loop is running before the first group
constexpr int kMaxIterations = 4096;   // stamped neighbour iterations per warp (more are run, not kept)
/// The neighbour loop's phases, in loop order: the kernel's three softmax spans and the loop's refresh.
constexpr int kPhases = 4;
const char* const kPhaseNames[kPhases] = {"softmax_max", "softmax_exp", "rescale_o", "refresh"};

/// Warpgroup 0 issues `groups` groups of 8 wgmma m64n{kN}k16 (kRs: A from registers, else SS),
/// each from an idle tensor core, and writes per group {fence, after commit, after wait_group 0}
/// as 32-bit clock stamps into win[(warp * groups + g)] (lane 0). kN = 0: no wgmma (the
/// neighbours alone). The other warpgroups (kThreads / 128 - 1 of them; kD = 0: none run) loop
/// over kernels/sm90/softmax.cuh's row_max, exp_scores, rescale and pack_p at n_block 128 and
/// head_dim kD, and write per iteration the stamps before row_max, after it, after exp_scores
/// and after rescale + pack_p into stamps[(warp - 4) * kMaxIterations + it] (lane 0); their
/// iteration counts into iters[warp - 4].
template <bool kRs, int kN, int kD, int kThreads>
__global__ void __launch_bounds__(kThreads, 1)
    dispatch_window_kernel(int groups, uint4* win, uint4* stamps, int* iters, BlockClock* clk, float* sink) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ volatile int stop;
  if (threadIdx.x == 0) stop = 0;
  const uint8_t* base = fill_wgmma_tiles(smem_raw);  // ends with __syncthreads
  const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
  const int lane = threadIdx.x % 32;
  if (warp >= 4) {
    int it = 0;
    if constexpr (kD > 0) {
      constexpr int kS = 128;
      float s[kS / 2], o[kD / 2];
      uint32_t p[kS / 4];
      softmax_operands<kS, kD>(s, o, lane);
      attnsim::sm90::RowStats st;
      const float scale_log2 = kSoftmaxScaleLog2<kD>;
      uint4* mine = stamps + (warp - 4) * kMaxIterations;
      for (; stop == 0; ++it) {
        refresh_scores<kS>(s, it);
        // Stamped as the traced kernel stamps its spans: clock reads only. Stamped, the loop
        // takes 1292 cycles alone against mma_issue_beside's unstamped 964 (with register fences
        // at the stamps as well, the same).
        const uint32_t t0 = clock32();
        float alpha[2];
        attnsim::sm90::row_max<kS>(s, st, scale_log2, alpha);
        const uint32_t t1 = clock32();
        attnsim::sm90::exp_scores<kS>(s, st, scale_log2, alpha);
        const uint32_t t2 = clock32();
        attnsim::sm90::rescale<kD>(o, alpha);
        attnsim::sm90::pack_p<kS>(s, p);
        const uint32_t t3 = clock32();
        if (lane == 0 && it < kMaxIterations) mine[it] = make_uint4(t0, t1, t2, t3);
        feed_back_p<kS>(s, p);
      }
      float x = st.sum[0] + st.sum[1];
#pragma unroll
      for (int i = 0; i < kD / 2; ++i) x += o[i];
      if (x == 1234567.0f) sink[threadIdx.x] = x;
    }
    if (lane == 0) iters[warp - 4] = it;
    return;
  }
  uint64_t da[4], db[4];
  kstep_descs(base, da, db);
  uint32_t a[4][4];
  rs_a_fragments(a);
  constexpr int kAcc = kN > 0 ? kN / 2 : 1;
  float d[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) d[i] = 0.0f;
  const long long start = clock64();
  while (clock64() - start < kDelayCycles) {}
  if (threadIdx.x == 0) *clk = BlockClock{clock64(), 0, globaltimer(), 0, smid(), 0};
#pragma unroll 1
  for (int g = 0; g < groups; ++g) {
    fence_regs(d);
    const uint32_t t0 = clock32();
    issue_wgmma_group<kRs, kN, kGroupWgmmas>(d, a, da, db);
    const uint32_t t1 = clock32();
    wgmma_wait<0>();
    fence_regs(d);
    const uint32_t t2 = clock32();
    if (lane == 0) win[warp * groups + g] = make_uint4(t0, t1, t2, 0);
    const long long t3 = clock64();
    // The same for the warpgroup's four warps: a wgmma issues only once all four reach it. The
    // group index passes through a volatile asm after the clock read, so that ptxas keeps the
    // hash's dependent chain out of the dispatch window (in the SASS it sits after the spin's
    // first clock read; the window's own descriptor code is another matter, README).
    uint32_t seed;
    asm volatile("mov.u32 %0, %1;" : "=r"(seed) : "r"(static_cast<uint32_t>(g)));
    const long long gap = kGapBaseCycles + (hash32(seed) % kGapSpreadCycles);
    while (clock64() - t3 < gap) {}
  }
  if (threadIdx.x == 0) {
    clk->clk1 = clock64();
    clk->ns1 = globaltimer();
  }
  __syncwarp();
  if (threadIdx.x == 0) stop = 1;
  float x = 0;
#pragma unroll
  for (int i = 0; i < kAcc; ++i) x += d[i];
  if (x == 1234567.0f) sink[threadIdx.x] = x;
}

/// All launches' windows and phases of one case, each launch's stamps made relative to its
/// first dispatch stamp and the launches laid 1e12 cycles apart so that they never overlap.
struct CaseData {
  std::vector<DispatchWindow> windows;
  std::vector<NeighbourPhase> phases;
  double dispatch_median = 0;  ///< median over every window of the dispatch's cycles (from the last warp's fence)
  double own_median = 0;       ///< the same from each warp's own fence (with its wait for the other warps)
  std::vector<double> skew;    ///< per group: the last warp's fence - the first warp's, cycles
  double iteration_median = 0; ///< median cycles of a neighbour loop iteration (kD > 0)
};

template <bool kRs, int kN, int kD, int kThreads>
CaseData run_case(ClockMeter& clock, int groups, int launches) {
  auto kern = dispatch_window_kernel<kRs, kN, kD, kThreads>;
  allow_smem(kern, kWgmmaTileSmem);
  constexpr int kNeighbours = kThreads / 32 - 4;
  DeviceBuffer<uint4> win(4 * groups), stamps(kNeighbours * kMaxIterations);
  DeviceBuffer<int> iters(kNeighbours);
  DeviceBuffer<BlockClock> clk(1);
  DeviceBuffer<float> sink(kThreads);
  CaseData cd;
  std::vector<double> lens, own, its;
  for (int l = 0; l < launches; ++l) {
    kern<<<1, kThreads, kWgmmaTileSmem>>>(groups, win.get(), stamps.get(), iters.get(), clk.get(), sink.get());
    MB_CHECK_LAUNCH("dispatch_window_kernel");
    clock.add(clk.to_host(), 5000.0);
    const auto w = win.to_host();
    const auto st = stamps.to_host();
    const auto n = iters.to_host();
    const uint32_t t_base = w[0].x;
    const double off = 1e12 * l;
    auto rel = [&](uint32_t t) { return off + static_cast<double>(static_cast<int32_t>(t - t_base)); };
    // A wgmma issues once the warpgroup's last warp reaches it (wgmma_skew): each warp's
    // dispatch is timed from the last warp's fence, as the simulator's rendezvous has it.
    if (kN > 0)
      for (int g = 0; g < groups; ++g) {
        double last = rel(w[g].x), first = last;
        for (int wp = 1; wp < 4; ++wp) {
          last = std::max(last, rel(w[wp * groups + g].x));
          first = std::min(first, rel(w[wp * groups + g].x));
        }
        cd.skew.push_back(last - first);
        for (int wp = 0; wp < 4; ++wp) {
          const uint4 s = w[wp * groups + g];
          const double end = std::max(last, rel(s.y));
          cd.windows.push_back({last, end, std::max(end, rel(s.z)), wp});
          lens.push_back(end - last);
          own.push_back(static_cast<double>(s.y - s.x));
        }
      }
    for (int nw = 0; nw < kNeighbours; ++nw) {
      const int kept = std::min(n[nw], kMaxIterations);
      const int smsp = nw % 4;  // neighbour warp nw is warp nw + 4
      for (int i = 0; i < kept; ++i) {
        const uint4 s = st[nw * kMaxIterations + i];
        cd.phases.push_back({rel(s.x), rel(s.y), 0, smsp});
        cd.phases.push_back({rel(s.y), rel(s.z), 1, smsp});
        cd.phases.push_back({rel(s.z), rel(s.w), 2, smsp});
        if (i + 1 < kept) {
          const uint4 nx = st[nw * kMaxIterations + i + 1];
          cd.phases.push_back({rel(s.w), rel(nx.x), 3, smsp});
          its.push_back(static_cast<double>(nx.x - s.x));
        }
      }
    }
  }
  cd.dispatch_median = lens.empty() ? 0.0 : median(lens);
  cd.own_median = own.empty() ? 0.0 : median(own);
  cd.iteration_median = its.empty() ? 0.0 : median(its);
  return cd;
}

void bench_dispatch_window(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "One CTA on one SM; warps w, w + 4 (and w + 8) share SMSP w. Warpgroup 0 issues groups of 8 wgmma "
      "m64nNk16 bf16 (SS on k-step descriptors, or RS), each from an idle tensor core, with 1200 + "
      "(hash of the group mod 1024) idle cycles after each, and stamps with 32-bit clock reads the "
      "dispatch (from the last of its 4 warps' wgmma.fence, where the group issues, to each warp's commit_group; "
      "*_own_fence: from each warp's own fence) and the tensor work after it (to wait_group 0's return). "
      "Warpgroups 1 (and 2: *_2x) loop over kernels/sm90/softmax.cuh's row_max, exp_scores, rescale + "
      "pack_p on fresh scores (n_block 128, head_dim 64 or 128, as mma_issue_beside's softmax "
      "neighbours) and stamp each phase with clock reads only, as the traced kernel does (softmax_max, softmax_exp, rescale_o as the kernel's spans; "
      "refresh: the loop's own score update). dispatch_idle: the dispatch with no neighbour. "
      "stretch[k]: fitted per neighbour warp in phase k, a dispatch of I cycles alone taking L = I (1 + "
      "sum_k stretch_k c_k / L) with c_k the neighbour cycles of phase k inside it, least squares over "
      "every window (stretch_cycles: the c_k summed, how much data fixes each). phase[k]: duration = "
      "alone + per_dispatch x (its cycles inside a dispatch on its SMSP) + per_tensor x (inside that "
      "dispatch's tensor work), least squares over the phase's instances; alone_median: instances "
      "with neither beside; no_mma_*: the neighbours with no wgmma. Cycles at the SM clock.");
  const int groups = rep.opt().quick ? 60 : 300, launches = rep.opt().quick ? 1 : 3;
  Json& res = rep.results();
  res["launches"] = launches;
  res["groups"] = groups;
  Json names = Json::array();
  for (const char* n : kPhaseNames) names.push_back(n);
  res["phases"] = names;
  auto report_phases = [&](const std::string& name, const CaseData& cd) {
    const auto ph = fit_phase_slowdown(cd.windows, cd.phases, kPhases);
    for (int k = 0; k < kPhases; ++k) {
      Json& j = res["phase"][name][kPhaseNames[k]];
      j["alone_median"] = ph[k].alone_median;
      j["instances"] = ph[k].instances;
      if (ph[k].touched >= 3) {
        j["alone"] = ph[k].alone;
        j["per_dispatch"] = ph[k].per_dispatch;
        j["per_tensor"] = ph[k].per_tensor;
        j["touched"] = ph[k].touched;
      }
    }
    if (cd.iteration_median > 0) res["iteration_cycles"][name] = cd.iteration_median;
  };
  auto beside = [&](const std::string& name, const CaseData& cd, double idle) {
    res["dispatch_cycles"][name] = cd.dispatch_median;
    res["dispatch_cycles_own_fence"][name] = cd.own_median;
    res["fence_skew_cycles"][name] = median(cd.skew);
    const StretchFit f = fit_dispatch_stretch(cd.windows, cd.phases, kPhases, idle);
    for (int k = 0; k < kPhases; ++k) {
      res["stretch"][name][kPhaseNames[k]] = f.stretch[k];
      res["stretch_cycles"][name][kPhaseNames[k]] = f.cycles[k];
    }
    res["stretch_rms_cycles"][name] = f.rms_cycles;
    report_phases(name, cd);
  };
  // The hd64 kernel's QK (SS N = 128) and PV (RS N = 64) beside its softmax, one or two neighbour
  // warps per SMSP; the hd128 kernel's QK and PV (SS, RS N = 128) beside its softmax.
  auto& clk = rep.clock();
  auto idle = [&](const std::string& name, const CaseData& cd) {
    res["dispatch_idle"][name] = cd.dispatch_median;
    res["dispatch_idle_own_fence"][name] = cd.own_median;
    res["fence_skew_cycles"][name + "_idle"] = median(cd.skew);
    return cd.dispatch_median;
  };
  const double ss128 = idle("ss_n128", run_case<false, 128, 0, 128>(clk, groups, launches));
  const double rs64 = idle("rs_n64", run_case<true, 64, 0, 128>(clk, groups, launches));
  const double rs128 = idle("rs_n128", run_case<true, 128, 0, 128>(clk, groups, launches));
  beside("ss_n128_beside_softmax64", run_case<false, 128, 64, 256>(clk, groups, launches), ss128);
  beside("ss_n128_beside_2x_softmax64", run_case<false, 128, 64, 384>(clk, groups, launches), ss128);
  beside("rs_n64_beside_softmax64", run_case<true, 64, 64, 256>(clk, groups, launches), rs64);
  beside("rs_n64_beside_2x_softmax64", run_case<true, 64, 64, 384>(clk, groups, launches), rs64);
  beside("ss_n128_beside_softmax128", run_case<false, 128, 128, 256>(clk, groups, launches), ss128);
  beside("rs_n128_beside_softmax128", run_case<true, 128, 128, 256>(clk, groups, launches), rs128);
  report_phases("no_mma_softmax64", run_case<false, 0, 64, 256>(clk, groups, launches));
  report_phases("no_mma_2x_softmax64", run_case<false, 0, 64, 384>(clk, groups, launches));
  report_phases("no_mma_softmax128", run_case<false, 0, 128, 256>(clk, groups, launches));
}

}  // namespace

std::vector<Benchmark> dispatch_window_benchmarks() {
  return {{"dispatch_window",
           "which softmax phase of a neighbour warp slows a wgmma dispatch how much, and the phases' slowdown beside it",
           bench_dispatch_window}};
}

}  // namespace mb
