// How an SMSP's tensor core orders the wgmma instructions of two warps (one per warpgroup) that
// share it, and how many instructions its queue holds before issue stalls.
//
// Why: FA3-style kernels run two consumer warpgroups whose warps pair up on the four SMSPs
// (warps w and w + 4). Whether the tensor core runs a whole group of one warp before the other's
// (first come, first served per group) or interleaves the instructions of groups issued at the
// same time decides whether two warpgroups that wake together drift apart on their own or stay
// in lockstep, which is what pingpong scheduling (named barriers) exists to break.
#include <algorithm>
#include <array>
#include <cmath>
#include <cuda/ptx>
#include <type_traits>

#include "common/wgmma_sync.cuh"
#include "microbench.cuh"
#include "wgmma_ops.cuh"
#include "wgmma_tiles.cuh"

namespace mb {
namespace {

using attnsim::hopper::fence_regs;
using attnsim::hopper::Wgmma;
using attnsim::hopper::wgmma_commit;
using attnsim::hopper::wgmma_fence;
using attnsim::hopper::wgmma_wait;

constexpr int kN = 128;                          // m64n128k16: FA3's hd128 QK / PV instruction
constexpr int kQueueSmem = 8192 + 32768 + 1024;  // A: 4 k-steps 64x16, B: 4 k-steps of up to 256x16, align slack
constexpr int kRecords = 4;                      // per warp and rep: start, issue end, done, probe end

/// Per rep, every warp: bar.sync (all 8 warps), clock64 (start); warpgroup 1 then spins
/// `delay1` cycles (with `late_warp` >= 0: only that warp does, whatever its warpgroup), and if it is active issues K wgmma m64nNk16 SS on the k-step descriptors
/// of one GEMM and commits them, then KRs wgmma m64nNk16 RS (A from registers, a fragment per
/// k-step, into a second accumulator, as FA3's PV after its QK) and commits those, reads clock64
/// (issue end), with kProbe waits on an mbarrier phase that completed before the loop and reads
/// clock64 (probe end: what the kernel's next pipeline wait after a wgmma group costs), waits for
/// both groups (wait_group 0) and reads clock64 (done). Lane 0 of each warp writes
/// out[(rep * 8 + warp) * 4 + {0, 1, 2, 3}] (start, issue end, done, probe end).
template <int K, int KRs = 0, int N = kN, bool kProbe = false>
__global__ void __launch_bounds__(256, 1)
    queue_kernel(int reps, int active_mask, int delay1, int late_warp, int random_data, long long* out, BlockClock* clk,
                 float* sink) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t ready_bar;  // phase 0 completed before the loop: every try_wait.parity(0) succeeds
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(&ready_bar, 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    (void)cuda::ptx::mbarrier_arrive(&ready_bar);
  }
  uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint32_t* fill = reinterpret_cast<uint32_t*>(base);
  // Operands: bf16 in [1, 2) with 7 random mantissa bits (wgmma_issue's), or uniform in [-1, 1)
  // (the wgmma benchmark's).
  for (int i = threadIdx.x; i < (8192 + 32768) / 4; i += blockDim.x) {
    uint32_t v = 0x3f803f80u ^ (hash32(i) & 0x007f007fu);
    if (random_data) {
      const uint32_t lo = __float_as_uint(static_cast<float>(hash32(2 * i) & 0xFFFF) * (1.0f / 32768.0f) - 1.0f);
      const uint32_t hi = __float_as_uint(static_cast<float>(hash32(2 * i + 1) & 0xFFFF) * (1.0f / 32768.0f) - 1.0f);
      v = (lo >> 16) | (hi & 0xFFFF0000u);
    }
    fill[i] = v;
  }
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  __syncthreads();
  // Warp-uniform for ptxas (a shuffle from lane 0, as CUTLASS's canonical warp index), so that
  // the wgmma region below is not a divergent branch.
  const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0), group = warp / 4;
  const bool active = (active_mask >> group) & 1;
  const int delay = (late_warp >= 0 ? warp == late_warp : group == 1) ? delay1 : 0;
  uint64_t da[4], db[4];
  kstep_descs(base, da, db);
  float d[K > 0 ? N / 2 : 1], e[KRs > 0 ? N / 2 : 1];
#pragma unroll
  for (int i = 0; i < (K > 0 ? N / 2 : 1); ++i) d[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < (KRs > 0 ? N / 2 : 1); ++i) e[i] = 0.0f;
  uint32_t a[4][4];  // the RS wgmmas' A fragments, bf16 in [1, 2) as the SMEM tiles
#pragma unroll
  for (int k = 0; k < 4; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) a[k][i] = 0x3f803f80u ^ (hash32(threadIdx.x * 16 + k * 4 + i) & 0x007f007fu);
  __syncthreads();
  block_clock_begin(clk);  // the file's measured SM clock: clock64 over %globaltimer of the whole loop
#pragma unroll 1
  for (int r = 0; r < reps; ++r) {
    __syncthreads();
    // bar.sync compiles to BAR.SYNC.DEFER_BLOCKING: the warp blocks at its next memory access, not
    // at the clock read right after it, so a warp that arrives early would read its start clock
    // before the barrier opens. A volatile shared load first makes every warp read it after.
    uint32_t ignored;
    asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(ignored) : "r"(smem_u32(base)) : "memory");
    const long long t0 = clock64();
    long long t1 = t0, t2 = t0, t3 = t0;
    if (active) {
      while (clock64() - t0 < delay) {}
      fence_regs(d);
      fence_regs(e);
      wgmma_fence();
      if constexpr (K > 0) {
#pragma unroll
        for (int k = 0; k < K; ++k) Wgmma<N>::ss(d, da[k & 3], db[k & 3], 1);
        wgmma_commit();
      }
      if constexpr (KRs > 0) {
#pragma unroll
        for (int k = 0; k < KRs; ++k) Wgmma<N>::rs(e, a[k & 3], db[k & 3], 1);
        wgmma_commit();
      }
      t1 = clock64();
      t3 = t1;
      if constexpr (kProbe) {
        while (!cuda::ptx::mbarrier_try_wait_parity(&ready_bar, 0u)) {}
        t3 = clock64();
      }
      wgmma_wait<0>();
      fence_regs(d);
      fence_regs(e);
      t2 = clock64();
    }
    if (threadIdx.x % 32 == 0) {
      long long* o = out + (static_cast<long long>(r) * 8 + warp) * kRecords;
      o[0] = t0;
      o[1] = t1;
      o[2] = t2;
      o[3] = t3;
    }
  }
  __syncthreads();
  block_clock_end(clk);
  float s = 0;
#pragma unroll
  for (int i = 0; i < (K > 0 ? N / 2 : 1); ++i) s += d[i];
#pragma unroll
  for (int i = 0; i < (KRs > 0 ? N / 2 : 1); ++i) s += e[i];
  if (s == 1234567.0f) sink[threadIdx.x] = s;
}

/// Medians over reps (the first 8 dropped) of one configuration, in cycles from the earliest
/// start of the rep's 8 warps: per warpgroup, its warps' latest issue end and latest completion.
struct QueueTimes {
  double issue_end[2] = {0, 0};
  double done[2] = {0, 0};
  double probe_end[2] = {0, 0};  ///< after the ready mbarrier wait (kProbe), else the issue end
};

/// One launch of queue_kernel<K, KRs, N, kProbe> on one SM (`threads`: 256, both warpgroups
/// resident, or 128, warpgroup 0 alone; `late`: the warp that spins `delay` first, -1: warpgroup
/// 1 does). Returns per kept rep (the first 8 dropped) and per warp its kRecords clock64 stamps
/// (start, issue end, done, probe end), in cycles from the rep's earliest warp start.
template <int K, int KRs, int N, bool kProbe>
std::vector<std::vector<std::array<long long, kRecords>>> launch_queue(ClockMeter& clock, int reps, int threads,
                                                                       int active_mask, int delay, int late,
                                                                       int random_data) {
  auto kern = queue_kernel<K, KRs, N, kProbe>;
  allow_smem(kern, kQueueSmem);
  DeviceBuffer<long long> out(static_cast<size_t>(reps) * 8 * kRecords);
  MB_CHECK(cudaMemset(out.get(), 0, out.size() * sizeof(long long)));
  DeviceBuffer<float> sink(256);
  DeviceBuffer<BlockClock> clk(1);
  kern<<<1, threads, kQueueSmem>>>(reps, active_mask, delay, late, random_data, out.get(), clk.get(), sink.get());
  MB_CHECK_LAUNCH("queue_kernel");
  clock.add(clk.to_host(), 5000.0);
  const auto h = out.to_host();
  const int warps = threads / 32;
  std::vector<std::vector<std::array<long long, kRecords>>> kept;
  for (int r = 8; r < reps; ++r) {
    const long long* rec = h.data() + static_cast<size_t>(r) * 8 * kRecords;
    long long start = rec[0];
    for (int w = 1; w < warps; ++w) start = std::min(start, rec[w * kRecords]);
    auto& row = kept.emplace_back(warps);
    for (int w = 0; w < warps; ++w)
      for (int i = 0; i < kRecords; ++i) row[w][i] = rec[w * kRecords + i] - start;
  }
  return kept;
}

/// `threads`: 256 (both warpgroups resident) or 128 (warpgroup 0 alone in the CTA).
template <int K, int KRs = 0, int N = kN, bool kProbe = false>
QueueTimes run_queue(ClockMeter& clock, int reps, int active_mask, int delay1, int threads = 256, int random_data = 0) {
  std::vector<double> issue[2], done[2], probe[2];
  for (const auto& rec : launch_queue<K, KRs, N, kProbe>(clock, reps, threads, active_mask, delay1, -1, random_data))
    for (size_t g = 0; g < rec.size() / 4; ++g) {
      long long ie = 0, dn = 0, pe = 0;
      for (size_t w = 4 * g; w < 4 * g + 4; ++w) {
        ie = std::max(ie, rec[w][1]);
        dn = std::max(dn, rec[w][2]);
        pe = std::max(pe, rec[w][3]);
      }
      issue[g].push_back(static_cast<double>(ie));
      done[g].push_back(static_cast<double>(dn));
      probe[g].push_back(static_cast<double>(pe));
    }
  QueueTimes t;
  for (int g = 0; g < 2; ++g) {
    t.issue_end[g] = median(issue[g]);
    t.done[g] = median(done[g]);
    t.probe_end[g] = median(probe[g]);
  }
  return t;
}

/// `probe`: the times come from a kProbe run (probe end written too).
Json times_json(const QueueTimes& t, int mask, bool probe = false) {
  Json j = Json::object();
  for (int g = 0; g < 2; ++g)
    if ((mask >> g) & 1) {
      j["wg" + std::to_string(g) + "_issue_end_cycles"] = t.issue_end[g];
      j["wg" + std::to_string(g) + "_done_cycles"] = t.done[g];
      if (probe) j["wg" + std::to_string(g) + "_ready_wait_end_cycles"] = t.probe_end[g];
    }
  return j;
}

/// One warpgroup alone issuing K = 1, 8, 16, 24, 32 wgmmas, SS or RS (kRs).
struct QueueLadder {
  static constexpr const char* kNames[5] = {"k1", "k8", "k16", "k24", "k32"};  ///< K of each entry
  QueueTimes t[5];
};

template <bool kRs>
QueueLadder run_ladder(ClockMeter& clock, int reps) {
  auto one = [&](auto k_tag) {
    constexpr int k = decltype(k_tag)::value;
    return kRs ? run_queue<0, k>(clock, reps, 1, 0) : run_queue<k, 0>(clock, reps, 1, 0);
  };
  return {{one(std::integral_constant<int, 1>{}), one(std::integral_constant<int, 8>{}),
           one(std::integral_constant<int, 16>{}), one(std::integral_constant<int, 24>{}),
           one(std::integral_constant<int, 32>{})}};
}

/// Writes the ladder's times and the line fitted to its issue ends at K = 16..32 into `j`;
/// returns the queue depth that fit gives (see bench_wgmma_share).
double ladder_json(Json& j, const QueueLadder& l) {
  for (int i = 0; i < 5; ++i) j[QueueLadder::kNames[i]] = times_json(l.t[i], 1);
  auto [c, slope] = fit_line({16, 24, 32}, {l.t[2].issue_end[0], l.t[3].issue_end[0], l.t[4].issue_end[0]});
  j["issue_end_fit_intercept_cycles"] = c;
  j["issue_end_fit_slope_cycles_per_wgmma"] = slope;
  return slope > 0 ? (l.t[0].issue_end[0] - c) / slope - 1 : 0.0;
}

void bench_wgmma_share(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "One CTA of two warpgroups on one SM; warps w and w + 4 share SMSP w's tensor core. Per rep: "
      "bar.sync of all 8 warps, a volatile ld.shared (so that the clock is read after the barrier "
      "opens), clock64; an active warpgroup waits `delay` cycles (warpgroup 1 only), issues K "
      "wgmma.mma_async m64n128k16 f32.bf16 SS (k-step descriptors, 128B swizzle, one accumulator), "
      "commits, reads clock64 (issue end), wait_group 0, clock64 (done). Times are medians over "
      "reps (8 dropped) of each warpgroup's latest warp, from the rep's earliest start. pipe: 64 "
      "cycles per instruction on an SMSP's quarter of the tensor core (2*16*128*16 FLOP at 1024 "
      "FLOP/clk). mma_queue_depth: one warpgroup's issue end at K = 16, 24, 32 (queue full) fitted "
      "as c + slope K; with t1 the issue end at K = 1, depth = (t1 - c) / slope - 1. Solo variants "
      "in a 128-thread CTA and on uniform [-1, 1) operands check that neither changes the times. "
      "one_warpgroup_rs / mma_queue_depth_rs: the same with RS wgmmas (A from registers, one "
      "fragment per k-step); rs_issue_cycles_per_wgmma = (issue end at K = 8 - at K = 1) / 7, "
      "rs_first_issue_extra_cycles = RS - SS issue end at K = 1, rs_done_extra_cycles_k16_32 = RS - SS "
      "completion at K = 16, 24, 32 (mean). issue_by_n: K = 1 and 8, SS and RS, at N = 64, 128, "
      "256. fa3_turn_ss8_rs8: 8 SS then 8 RS wgmmas, one commit group each (an FA3 hd128 QK + PV "
      "turn): alone, both warpgroups at once, warpgroup 1 256 cycles later.");
  const int reps = rep.opt().quick ? 24 : 200;
  Json& res = rep.results();
  constexpr double pipe = 2.0 * 16 * kN * 16 / 1024.0;
  res["pipe_cycles_per_wgmma"] = pipe;

  // Queue depth: one warpgroup, growing K. Once the queue is full, each further instruction
  // is accepted one pipe time later: issue end(K) = c + slope K for K = 16..32, slope ~ pipe. The
  // K-th instruction is accepted when K - 1 - depth have finished executing, and execution
  // starts about when the first is accepted (issue end at K = 1, t1): issue end(K) = t1 +
  // (K - 1 - depth) slope, so depth = (t1 - c) / slope - 1. The same with A from registers (RS,
  // FA3's PV): whether an RS instruction waits in the queue like an SS one.
  const QueueLadder ss = run_ladder<false>(rep.clock(), reps), rs = run_ladder<true>(rep.clock(), reps);
  res["mma_queue_depth"] = ladder_json(res["one_warpgroup"], ss);
  res["mma_queue_depth_rs"] = ladder_json(res["one_warpgroup_rs"], rs);
  const QueueTimes &k1 = ss.t[0], &k8 = ss.t[1], &r1 = rs.t[0], &r8 = rs.t[1];
  // While the queue has room (K = 1 -> 8), the issue cost of one more RS wgmma, and what a lone
  // RS wgmma's issue costs beyond a lone SS one; and how much later an RS group completes than
  // an SS group of the same size once the queue is full (K = 16..32).
  res["rs_issue_cycles_per_wgmma"] = (r8.issue_end[0] - r1.issue_end[0]) / 7.0;
  res["rs_first_issue_extra_cycles"] = r1.issue_end[0] - k1.issue_end[0];
  res["rs_done_extra_cycles_k16_32"] = ((rs.t[2].done[0] - ss.t[2].done[0]) + (rs.t[3].done[0] - ss.t[3].done[0]) +
                                        (rs.t[4].done[0] - ss.t[4].done[0])) /
                                       3.0;

  // The issue cost by instruction width: a lone wgmma and 8 back to back (queue not yet full),
  // SS and RS, at N = 64 (FA3's hd64 PV), 128 and 256 (hd256 PV).
  Json& by_n = res["issue_by_n"];
  auto width = [&](auto n_tag) {
    constexpr int n = decltype(n_tag)::value;
    Json j = Json::object();
    j["ss_k1"] = times_json(run_queue<1, 0, n>(rep.clock(), reps, 1, 0), 1);
    j["ss_k8"] = times_json(run_queue<8, 0, n>(rep.clock(), reps, 1, 0), 1);
    j["rs_k1"] = times_json(run_queue<0, 1, n>(rep.clock(), reps, 1, 0), 1);
    j["rs_k8"] = times_json(run_queue<0, 8, n>(rep.clock(), reps, 1, 0), 1);
    return j;
  };
  by_n["n64"] = width(std::integral_constant<int, 64>{});
  by_n["n128"] = width(std::integral_constant<int, 128>{});
  by_n["n256"] = width(std::integral_constant<int, 256>{});

  // An FA3 hd128 turn of one warpgroup: QK (8 SS k-steps) and PV (8 RS k-steps), one commit
  // group each; alone, both warpgroups at once, and warpgroup 1 starting 256 cycles later.
  Json& turn = res["fa3_turn_ss8_rs8"];
  turn["solo"] = times_json(run_queue<8, 8>(rep.clock(), reps, 1, 0), 1);
  turn["together"] = times_json(run_queue<8, 8>(rep.clock(), reps, 3, 0), 3);
  turn["wg1_delayed_256"] = times_json(run_queue<8, 8>(rep.clock(), reps, 3, 256), 3);

  // Two warpgroups, K = 8 each (an FA3 hd128 group), at the same time and staggered.
  Json& share = res["two_warpgroups_k8"];
  const QueueTimes solo = k8;
  share["solo"] = times_json(solo, 1);
  // The same alone in a 128-thread CTA, and on uniform [-1, 1) operands: what the solo time
  // depends on besides the tensor core.
  share["solo_128_threads"] = times_json(run_queue<8>(rep.clock(), reps, 1, 0, 128), 1);
  share["solo_random_data"] = times_json(run_queue<8>(rep.clock(), reps, 1, 0, 256, 1), 1);
  share["solo_128_threads_random_data"] = times_json(run_queue<8>(rep.clock(), reps, 1, 0, 128, 1), 1);
  share["solo_k1_128_threads_random_data"] = times_json(run_queue<1>(rep.clock(), reps, 1, 0, 128, 1), 1);
  share["together_random_data"] = times_json(run_queue<8>(rep.clock(), reps, 3, 0, 256, 1), 3);
  const QueueTimes both = run_queue<8>(rep.clock(), reps, 3, 0);
  share["together"] = times_json(both, 3);
  for (int delay : {64, 128, 256, 512}) {
    const QueueTimes t = run_queue<8>(rep.clock(), reps, 3, delay);
    share["wg1_delayed_" + std::to_string(delay)] = times_json(t, 3);
  }
  // First come, first served per group: the first warpgroup finishes as if alone, the second
  // one group later. Interleaved instructions: both finish about when two groups are done.
  const double first = std::min(both.done[0], both.done[1]), second = std::max(both.done[0], both.done[1]);
  res["together_first_done_over_solo"] = first / solo.done[0];
  res["together_second_done_over_solo"] = second / solo.done[0];
  res["together_interleaved"] = first / solo.done[0] > 1.5;
}

/// What a warp's first mbarrier wait after issuing a wgmma group costs (FA3's QK -> wait on V's
/// full barrier -> PV): the clock read right after the commit goes on while the group may still be
/// on its way to the tensor core; a shared-memory instruction after it may not.
void bench_wgmma_issue_hold(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "queue_kernel of wgmma_share with a probe: after the commit and the issue-end clock64, a "
      "full-warp mbarrier.try_wait.parity loop on a phase completed before the loop (ready), then "
      "clock64 (ready wait end), then wait_group 0 and clock64 (done). Medians over reps (8 "
      "dropped) of each warpgroup's latest warp from the rep's earliest start. ready_wait_cycles = "
      "ready wait end - issue end (alone, with no wgmma: mbarrier_ready, about 45). Cases: SS "
      "m64n128k16 at K = 1, 8, 16, 32 (one warpgroup); 8 RS; 8 SS + 8 RS (an FA3 hd128 turn); 8 SS "
      "with both warpgroups at once.");
  const int reps = rep.opt().quick ? 24 : 200;
  Json& res = rep.results();
  Json& c = res["cases"];
  auto add = [&](const char* name, const QueueTimes& t, int mask) {
    Json j = times_json(t, mask, true);
    for (int g = 0; g < 2; ++g)
      if ((mask >> g) & 1) j["wg" + std::to_string(g) + "_ready_wait_cycles"] = t.probe_end[g] - t.issue_end[g];
    c[name] = j;
  };
  add("ss_k1", run_queue<1, 0, kN, true>(rep.clock(), reps, 1, 0), 1);
  add("ss_k8", run_queue<8, 0, kN, true>(rep.clock(), reps, 1, 0), 1);
  add("ss_k16", run_queue<16, 0, kN, true>(rep.clock(), reps, 1, 0), 1);
  add("ss_k32", run_queue<32, 0, kN, true>(rep.clock(), reps, 1, 0), 1);
  add("rs_k8", run_queue<0, 8, kN, true>(rep.clock(), reps, 1, 0), 1);
  add("ss8_rs8", run_queue<8, 8, kN, true>(rep.clock(), reps, 1, 0), 1);
  add("ss_k8_together", run_queue<8, 0, kN, true>(rep.clock(), reps, 3, 0), 3);
  res["ready_wait_after_ss_k8_cycles"] = c["ss_k8"]["wg0_ready_wait_cycles"];
}

}  // namespace

/// Medians over reps (8 dropped), cycles from the rep's earliest warp start: warp 0's (on time)
/// and the late warp's issue end and completion.
struct SkewTimes {
  double issue0 = 0, done0 = 0, issue_late = 0, done_late = 0;
};

/// queue_kernel with one warpgroup alone (a 128-thread CTA) issuing 4 SS wgmmas, warp `late`
/// spinning `delay` cycles first: a wgmma is a warpgroup-wide instruction (PTX ISA: all four
/// warps execute it), and whether the warps that come early wait at the issue, only at the
/// completion, or not at all is what an FA3 consumer warpgroup's QK issue costs when its four
/// warps end their softmax apart.
SkewTimes run_skew(ClockMeter& clock, int reps, int late, int delay) {
  std::vector<double> issue0, done0, issue_late, done_late;
  for (const auto& rec : launch_queue<4, 0, kN, false>(clock, reps, 128, 1, delay, late, 0)) {
    issue0.push_back(static_cast<double>(rec[0][1]));
    done0.push_back(static_cast<double>(rec[0][2]));
    issue_late.push_back(static_cast<double>(rec[late][1]));
    done_late.push_back(static_cast<double>(rec[late][2]));
  }
  return {median(issue0), median(done0), median(issue_late), median(done_late)};
}

void bench_wgmma_skew(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "One warpgroup alone on an SM (128-thread CTA). Per rep: bar.sync, a volatile ld.shared, "
      "clock64 (start); warp 3 spins `delay` cycles (0, 128, 512, 2048); every warp issues 4 "
      "wgmma.mma_async m64n128k16 f32.bf16 SS and commits, clock64 (issue end), wait_group 0, "
      "clock64 (done). Medians over reps (8 dropped), from the rep's earliest warp start, of warp 0's "
      "(on time) and warp 3's issue end and completion. warp0_issue_slope_over_delay: how much of "
      "the delay warp 0's issue end takes on (from delay 0 to 2048; 1: the on-time warps wait at the "
      "issue for the late one, 0: they do not); warp0_done_slope_over_delay: the same for its completion.");
  const int reps = rep.opt().quick ? 24 : 200;
  Json& res = rep.results();
  Json& cases = res["cases"];
  const int delays[] = {0, 128, 512, 2048};
  SkewTimes first, last;
  for (int delay : delays) {
    const SkewTimes t = run_skew(rep.clock(), reps, 3, delay);
    Json& j = cases["delay_" + std::to_string(delay)];
    j["delay_cycles"] = delay;
    j["warp0_issue_end_cycles"] = t.issue0;
    j["warp0_done_cycles"] = t.done0;
    j["late_warp_issue_end_cycles"] = t.issue_late;
    j["late_warp_done_cycles"] = t.done_late;
    if (delay == delays[0]) first = t;
    last = t;
  }
  const double span = delays[3] - delays[0];
  res["warp0_issue_slope_over_delay"] = (last.issue0 - first.issue0) / span;
  res["warp0_done_slope_over_delay"] = (last.done0 - first.done0) / span;
}

std::vector<Benchmark> mma_queue_benchmarks() {
  return {
      {"wgmma_share",
       "two warpgroups' wgmma groups on shared SMSP tensor cores: interleaved or one group after the other; "
       "the tensor core queue's depth",
       bench_wgmma_share},
      {"wgmma_issue_hold", "a ready mbarrier wait right after issuing a wgmma group: how long the group holds the warp",
       bench_wgmma_issue_hold},
      {"wgmma_skew", "one warp of a warpgroup late to its wgmma: whether the others wait at the issue or the completion",
       bench_wgmma_skew}};
}

}  // namespace mb
