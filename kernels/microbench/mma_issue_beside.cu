// How long one warpgroup takes to issue a group of wgmma while the other warpgroup's warps, on
// the same SMSPs, run the SM90 kernel's softmax code or FFMA chains of a chosen issue density.
//
// Why: in the traced FA3-style kernel a group of QK or PV wgmmas takes about 40 cycles per
// instruction to issue at every N, SS or RS (fidelity spans, H100), where one warpgroup alone
// issues SS wgmmas with k-step descriptors in 21 cycles each (wgmma_issue) and RS ones in 43
// (wgmma_share). In pingpong the other warpgroup runs its softmax while this one issues; tma_issue
// showed a thread's TMA issue 6x slower beside two busy warps on its SMSP. The simulator shares
// the issue slot fairly, so whether the GEMM issue is starved the same way decides how it must
// charge the consumer warps' issue.
#include <cuda/ptx>
#include <map>
#include <numeric>

#include "microbench.cuh"
#include "neighbour_work.cuh"
#include "sm90/softmax.cuh"
#include "wgmma_ops.cuh"
#include "wgmma_tiles.cuh"

namespace mb {
namespace {

using attnsim::hopper::fence_regs;
using attnsim::hopper::wgmma_wait;

constexpr int kGroupWgmmas = 8;       // one QK or PV group at hd128 / n_block 128
constexpr int kIdleGapCycles = 1500;  // after each group: the tensor core drains before the next
constexpr int kDelayCycles = 4000;    // the neighbours' loop is running before the first group

/// What warpgroup 1 (one warp per SMSP, beside warpgroup 0's warps) does meanwhile: nothing, the
/// kernel's softmax (hd128: 64 scores and 64 outputs a thread; kSoftmax64: the hd64 kernel's, 64
/// scores and 32 outputs), or FFMA in kNeighbour > 0 independent chains (ffma_chains_until).
constexpr int kIdle = 0, kSoftmax = -1, kSoftmax64 = -2;

/// Warpgroup 0 issues `groups` groups of kGroupWgmmas wgmma m64n{kN}k16 (kRs: A from registers,
/// else SS on the k-step descriptors), each from an idle tensor core (wait_group 0 and
/// kIdleGapCycles between groups), and adds the cycles from before wgmma.fence to after
/// commit_group into out[warp] (kN = 0: no wgmma, only the clock reads and the gaps, so that
/// the neighbours run alone). Warpgroup 1 meanwhile runs kNeighbour's loop until warpgroup 0
/// is done: the kernel's hd128 softmax (row_max, exp_scores, rescale + pack_p on fresh scores) or
/// kNeighbour FFMA chains; each neighbour warp writes its loop iterations and cycles into
/// busy[warp - 4] (FFMA: kFfmaPerPoll FFMAs per iteration). kThreads 384: warpgroups 1 and 2
/// both run the neighbour's loop, two warps beside each dispatching warp, as in the hd64 kernel's
/// three consumer warpgroups.
template <bool kRs, int kN, int kNeighbour, int kThreads = 256>
__global__ void __launch_bounds__(kThreads, 1)
    issue_beside_kernel(int groups, long long* out, BlockClock* clk, float* sink, longlong2* busy) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ volatile int stop;
  if (threadIdx.x == 0) stop = 0;
  const uint8_t* base = fill_wgmma_tiles(smem_raw);  // ends with __syncthreads
  const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
  const int lane = threadIdx.x % 32;
  if (warp >= 4) {
    const long long b0 = clock64();
    long long iters = 0;
    if constexpr (kNeighbour == kSoftmax || kNeighbour == kSoftmax64) {
      constexpr int kS = 128, kD = kNeighbour == kSoftmax ? 128 : 64;  // per thread-row pair, as at hd128 / hd64
      float s[kS / 2], o[kD / 2];
      uint32_t p[kS / 4];
      softmax_operands<kS, kD>(s, o, lane);
      attnsim::sm90::RowStats st;
      const float scale_log2 = kSoftmaxScaleLog2<kD>;
      for (int it = 0; stop == 0; ++it, ++iters) {
        refresh_scores<kS>(s, it);
        float alpha[2];
        attnsim::sm90::row_max<kS>(s, st, scale_log2, alpha);
        attnsim::sm90::exp_scores<kS>(s, st, scale_log2, alpha);
        attnsim::sm90::rescale<kD>(o, alpha);
        attnsim::sm90::pack_p<kS>(s, p);
        feed_back_p<kS>(s, p);
      }
      float x = st.sum[0] + st.sum[1];
#pragma unroll
      for (int i = 0; i < kD / 2; ++i) x += o[i];
      if (x == 1234567.0f) sink[threadIdx.x] = x;
    } else if constexpr (kNeighbour > 0) {
      iters = ffma_chains_until<kNeighbour>(&stop, &sink[threadIdx.x]);
    }
    if (lane == 0) busy[warp - 4] = make_longlong2(iters, clock64() - b0);
    return;
  }
  uint64_t da[4], db[4];
  kstep_descs(base, da, db);
  uint32_t a[4][4];
  rs_a_fragments(a);
  constexpr int kAcc = kN > 0 ? kN / 2 : 1;  // kN = 0: no wgmma, the neighbour's loop alone
  float d[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) d[i] = 0.0f;
  const long long start = clock64();
  while (clock64() - start < kDelayCycles) {}
  if (threadIdx.x == 0) *clk = BlockClock{clock64(), 0, globaltimer(), 0, smid(), 0};
  long long acc = 0;
#pragma unroll 1
  for (int g = 0; g < groups; ++g) {
    fence_regs(d);
    const uint32_t t0 = clock32();
    issue_wgmma_group<kRs, kN, kGroupWgmmas>(d, a, da, db);
    const uint32_t t1 = clock32();
    acc += t1 - t0;
    wgmma_wait<0>();
    fence_regs(d);
    const long long t2 = clock64();
    while (clock64() - t2 < kIdleGapCycles) {}
  }
  if (threadIdx.x == 0) {
    clk->clk1 = clock64();
    clk->ns1 = globaltimer();
  }
  if (lane == 0) out[warp] = acc;
  __syncwarp();
  if (threadIdx.x == 0) stop = 1;  // warpgroup 0's warps end within a group of each other
  float x = 0;
#pragma unroll
  for (int i = 0; i < kAcc; ++i) x += d[i];
  if (x == 1234567.0f) sink[threadIdx.x] = x;
}

/// One case's result: a group's issue cycles (mean over the groups, median over warpgroup 0's 4
/// warps, then over the launches) and the neighbour warps' cycles per loop iteration (median).
struct GroupIssue {
  double group_cycles = 0;
  double neighbour_cycles_per_iteration = 0;
};

template <bool kRs, int kN, int kNeighbour, int kThreads = 256>
GroupIssue group_issue(ClockMeter& clock, int groups, int launches) {
  auto kern = issue_beside_kernel<kRs, kN, kNeighbour, kThreads>;
  allow_smem(kern, kWgmmaTileSmem);
  DeviceBuffer<long long> out(4);
  DeviceBuffer<BlockClock> clk(1);
  DeviceBuffer<float> sink(kThreads);
  DeviceBuffer<longlong2> busy(kThreads / 32 - 4);  // one per neighbour warp, each writes its own
  std::vector<double> per_launch, per_iteration;
  for (int i = 0; i < launches; ++i) {
    kern<<<1, kThreads, kWgmmaTileSmem>>>(groups, out.get(), clk.get(), sink.get(), busy.get());
    MB_CHECK_LAUNCH("issue_beside_kernel");
    clock.add(clk.to_host(), 5000.0);
    const auto h = out.to_host();
    std::vector<double> v;
    for (int w = 0; w < 4; ++w) v.push_back(static_cast<double>(h[w]) / groups);
    per_launch.push_back(median(v));
    for (const longlong2& b : busy.to_host())
      if (b.x > 0) per_iteration.push_back(static_cast<double>(b.y) / static_cast<double>(b.x));
  }
  return {median(per_launch), per_iteration.empty() ? 0.0 : median(per_iteration)};
}

void bench_mma_issue_beside(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "One CTA of two warpgroups on one SM (warps w and w + 4 share SMSP w). Warpgroup 0 issues "
      "groups of 8 wgmma m64nNk16 bf16, N = 64, 80, 128, 176, 256 (SS on k-step descriptors, or RS "
      "with A from registers) "
      "into one accumulator, each from an idle tensor core (wait_group 0, then 1500 cycles), and "
      "times each group with 32-bit clock reads from before wgmma.fence to after commit_group, as "
      "the traced kernel times its mma_qk / mma_pv spans; mean over the groups, median over its 4 "
      "warps, median over the launches. Warpgroup 1 meanwhile idles, runs kernels/sm90/softmax.cuh's "
      "hd128 row_max, exp_scores, rescale and pack_p on fresh scores in a loop, or issues FFMAs in "
      "1, 2, 4 or 8 independent chains (N = 128 only; 128 FFMAs between polls of a shared-memory stop flag), from "
      "4000 cycles before the first group; no_mma_*: the same neighbours with no wgmma beside them. "
      "*_softmax64: the hd64 kernel's softmax (32 outputs a thread); *_2x_softmax64: warpgroups 1 and 2 (384 threads) "
      "both run it, two neighbour warps per SMSP as in the hd64 kernel's three consumer warpgroups (2026-12-02). "
      "*_cycles_per_wgmma: the group's time / 8; {ss,rs}_dispatch_*: least-squares line of the idle "
      "cycles per wgmma against N (RS without N = 256, where ptxas serialises the HGMMAs); "
      "neighbour_issue_fraction: FFMAs per cycle of a neighbour warp (its loop's iterations x 128 / "
      "its cycles, median over its warps and launches), the share of its SMSP's issue slots it took.");
  const int groups = rep.opt().quick ? 50 : 400, launches = rep.opt().quick ? 1 : 5;
  Json& res = rep.results();
  res["launches"] = launches;
  res["groups"] = groups;
  struct Row {
    std::string name;
    int ffma_chains;  // 0: not an FFMA neighbour
    GroupIssue r;
  };
  std::vector<Row> rows;
  auto both = [&]<int kN>() {  // idle and beside the softmax, at width N
    const std::string n = "n" + std::to_string(kN);
    rows.push_back({"ss_" + n + "_idle", 0, group_issue<false, kN, kIdle>(rep.clock(), groups, launches)});
    rows.push_back({"ss_" + n + "_beside_softmax", 0, group_issue<false, kN, kSoftmax>(rep.clock(), groups, launches)});
    rows.push_back({"rs_" + n + "_idle", 0, group_issue<true, kN, kIdle>(rep.clock(), groups, launches)});
    rows.push_back({"rs_" + n + "_beside_softmax", 0, group_issue<true, kN, kSoftmax>(rep.clock(), groups, launches)});
  };
  both.operator()<64>();
  both.operator()<80>();
  both.operator()<128>();
  both.operator()<176>();
  both.operator()<256>();
  auto ffma = [&]<int kChains>() {  // at N = 128 beside FFMA chains, and the chains alone (N = 0)
    const std::string c = "_beside_ffma" + std::to_string(kChains);
    rows.push_back({"ss_n128" + c, kChains, group_issue<false, 128, kChains>(rep.clock(), groups, launches)});
    rows.push_back({"rs_n128" + c, kChains, group_issue<true, 128, kChains>(rep.clock(), groups, launches)});
    rows.push_back({"no_mma" + c, kChains, group_issue<false, 0, kChains>(rep.clock(), groups, launches)});
  };
  ffma.operator()<1>();
  ffma.operator()<2>();
  ffma.operator()<4>();
  ffma.operator()<8>();
  rows.push_back({"no_mma_beside_softmax", 0, group_issue<false, 0, kSoftmax>(rep.clock(), groups, launches)});
  // The hd64 kernel's case: its softmax beside, on one or two neighbour warpgroups (2026-12-02).
  auto hd64 = [&]<int kN>() {
    const std::string n = "n" + std::to_string(kN);
    rows.push_back({"ss_" + n + "_beside_softmax64", 0, group_issue<false, kN, kSoftmax64>(rep.clock(), groups, launches)});
    rows.push_back({"rs_" + n + "_beside_softmax64", 0, group_issue<true, kN, kSoftmax64>(rep.clock(), groups, launches)});
    rows.push_back({"ss_" + n + "_beside_2x_softmax64", 0,
                    group_issue<false, kN, kSoftmax64, 384>(rep.clock(), groups, launches)});
    rows.push_back({"rs_" + n + "_beside_2x_softmax64", 0,
                    group_issue<true, kN, kSoftmax64, 384>(rep.clock(), groups, launches)});
  };
  hd64.operator()<64>();
  hd64.operator()<128>();
  rows.push_back({"no_mma_beside_softmax64", 0, group_issue<false, 0, kSoftmax64>(rep.clock(), groups, launches)});
  rows.push_back({"no_mma_beside_2x_softmax64", 0, group_issue<false, 0, kSoftmax64, 384>(rep.clock(), groups, launches)});
  std::map<std::string, double> per_wgmma;
  for (const Row& row : rows) {
    if (row.name.rfind("no_mma", 0) != 0) {
      per_wgmma[row.name] = row.r.group_cycles / kGroupWgmmas;
      res["group_cycles"][row.name] = row.r.group_cycles;
      res[row.name + "_cycles_per_wgmma"] = row.r.group_cycles / kGroupWgmmas;
    }
    if (row.r.neighbour_cycles_per_iteration > 0) {
      res["neighbour_cycles_per_iteration"][row.name] = row.r.neighbour_cycles_per_iteration;
      if (row.ffma_chains > 0)
        res["neighbour_issue_fraction"][row.name] = kFfmaPerPoll / row.r.neighbour_cycles_per_iteration;
    }
  }
  // Dispatch cost against N, from an idle tensor core with nothing beside: a + b N cycles per
  // wgmma, least squares. RS leaves out N = 256, where ptxas serialises the wgmmas (each HGMMA
  // waits for the one before: WARPGROUP.ARRIVE and gsb0 on every one in the SASS).
  auto fit = [&](const char* mode, std::initializer_list<int> ns) {
    std::vector<double> x, y;
    for (int n : ns) {
      x.push_back(n);
      y.push_back(per_wgmma.at(std::string(mode) + "_n" + std::to_string(n) + "_idle"));
    }
    const double mx = std::accumulate(x.begin(), x.end(), 0.0) / x.size();
    const double my = std::accumulate(y.begin(), y.end(), 0.0) / y.size();
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      sxy += (x[i] - mx) * (y[i] - my);
      sxx += (x[i] - mx) * (x[i] - mx);
    }
    res[std::string(mode) + "_dispatch_cycles_per_n"] = sxy / sxx;
    res[std::string(mode) + "_dispatch_base_cycles"] = my - sxy / sxx * mx;
  };
  fit("ss", {64, 80, 128, 176, 256});
  fit("rs", {64, 80, 128, 176});
}

}  // namespace

std::vector<Benchmark> mma_issue_beside_benchmarks() {
  return {{"mma_issue_beside",
           "cycles to issue 8 wgmma (SS, RS) while the other warpgroup runs the kernel's softmax or FFMAs",
           bench_mma_issue_beside}};
}

}  // namespace mb
