// The SM90 kernel's own GEMM dispatch (kernels/sm90/consumer.cuh: Consumer::issue_qk and
// issue_pv, the pingpong turn's named barriers) timed as the traced kernel times its spans: one
// consumer warpgroup alone, the warpgroups handing the tensor cores over in pingpong turns, and
// warpgroup 0's turn beside the others' softmax blocks or bursts of dense FFMAs.
//
// Why: in the traced kernel at hd128 the QK dispatch of a turn takes about 360 cycles (its 8
// HGMMAs about 45 cycles apart, descriptor arithmetic between them) and the PV dispatch after it
// about 220, with the tensor cores idle when the turn starts. The model prices the dispatch from
// the back-to-back wgmma issue cost (wgmma_issue: 13 cycles) and an instruction count, so its QK
// group is queued at once and its PV waits behind it. This times the same code, on the same
// shared-memory layout and register budget, alone and beside what runs beside it in the kernel
// (`attnsim replay` predicts every case with the model).
#include <cuda/ptx>

#include "microbench.cuh"
#include "neighbour_work.cuh"
#include "sm90/consumer.cuh"

namespace mb {
namespace {

namespace sm90 = attnsim::sm90;

/// The base schedule's instances (configs: schedules/fa3_sm90.json): hd64 192 x 128 with three
/// consumer warpgroups, hd128 128 x 128 and hd256 128 x 80, pingpong and intra-warpgroup overlap,
/// static scheduler, O in its own buffer (hd256: in the V ring). Only the GEMM issue code runs.
using Hd64 = sm90::Traits<64, 192, 128, 2, true, true, 160, 32, false, false, true, 8>;
using Hd128 = sm90::Traits<128, 128, 128, 2, true, true, 240, 24, false, false, true, 8>;
using Hd256 = sm90::Traits<256, 128, 80, 2, true, true, 240, 24, false, false, false, 8, 8000, 0, 0, true>;

constexpr int kStamps = 6;  // per warp and rep: rep start, before the turn, after it, after QK, after PV, GEMMs done
constexpr int kRepBarrier = 7;  // named barriers of the consumer warpgroups between reps: 7, 8 (the kernel's use 1..6)
constexpr int kNeighbourSoftmax = 1;  // warpgroups 1.. run a softmax block; kBurst*: an FFMA burst that long
constexpr int kBurstShort = 64, kBurstLong = 256;

/// B FFMAs on 8 independent registers of `s`, unrolled.
template <int B, size_t N>
__device__ __forceinline__ void ffma_burst(float (&s)[N]) {
#pragma unroll
  for (int i = 0; i < B; ++i) s[i % 8] = fmaf(s[i % 8], 0.999f, 0.5f);
}

/// One CTA laid out as the kernel's (Smem<T>: Q, the K and V rings, their mbarriers), Q/K/V
/// filled with bf16 in [1, 2), every full barrier's phase 0 completed before the loop. The load
/// warpgroup idles (its registers given up, as the kernel's producer does); each consumer
/// warpgroup's Consumer<T> runs, per rep: a named barrier over the consumers, a volatile shared
/// load (so that the clock is read after the barrier opens: BAR.SYNC defers its blocking), clock;
/// warpgroup 1 and above spin `delay` cycles (warpgroup 0 spins -delay where it is negative); with
/// `pingpong` the turn's named barrier (Consumer::turn_start; the last warpgroup arrives for
/// warpgroup 0 before the loop, as run() does); issue_qk (its wait on K's full barrier, ready, then
/// the QK wgmma group) and issue_pv (V's ready wait, the PV group, P from registers), turn_end,
/// wait_mma<0>. With `neighbour` (kNeighbourSoftmax, or a burst length kBurst*) warpgroups 1.. run
/// a softmax block or an FFMA burst instead. Warpgroups whose bit in `active` is clear only meet the
/// rep barriers. Lane 0 of each consumer warp writes the raw 32-bit stamps to
/// out[((rep * consumer warps) + consumer warp) * kStamps + k].
template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    gemm_turn_kernel(int reps, int active, int pingpong, int delay, int neighbour, const sm90::Params* params,
                     uint32_t* out, BlockClock* clk) {
  extern __shared__ uint8_t smem_raw[];
  const sm90::Smem<T> s(smem_raw);
  uint32_t* fill = reinterpret_cast<uint32_t*>(s.q);
  for (int i = threadIdx.x; i < (T::kBarOff - T::kQOff) / 4; i += blockDim.x)
    fill[i] = 0x3f803f80u ^ (hash32(i) & 0x007f007fu);
  if (threadIdx.x == 0) {
    for (int i = 0; i < T::kKvStage; ++i) {
      cuda::ptx::mbarrier_init(&s.k_full[i], 1);
      cuda::ptx::mbarrier_init(&s.v_full[i], 1);
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    for (int i = 0; i < T::kKvStage; ++i) {
      (void)cuda::ptx::mbarrier_arrive(&s.k_full[i]);
      (void)cuda::ptx::mbarrier_arrive(&s.v_full[i]);
    }
  }
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  __syncthreads();
  const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0), lane = threadIdx.x % 32;
  if (sm90::warp_role(warp) != sm90::Role::Consumer) {
    sm90::set_registers<T::kRegProducer>(false);
    return;
  }
  sm90::set_registers<T::kRegConsumer>(true);
  const int group = sm90::consumer_group(warp), cw = warp - sm90::kWarpsPerWarpgroup;
  const bool on = (active >> group) & 1;
  constexpr float kScaleLog2 = 0.0883883f * 1.4426950f;
  sm90::RowStats st;
  // delay > 0: warpgroups 1.. start that much later; < 0: warpgroup 0 does.
  const int wait = group > 0 ? (delay > 0 ? delay : 0) : (delay < 0 ? -delay : 0);
  attnsim::TraceRecorder<false> off;
  sm90::Consumer<T> c{{}, *params, s, off, group, warp % sm90::kWarpsPerWarpgroup, lane};
#pragma unroll
  for (int i = 0; i < T::kNBlock / 4; ++i) c.pr[i] = 0x3f803f80u ^ (hash32(threadIdx.x * 64 + i) & 0x007f007fu);
#pragma unroll
  for (int i = 0; i < T::kHeadDim / 2; ++i) c.o[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < T::kNBlock / 2; ++i)
    c.sacc[i] = static_cast<float>(hash32(i * 32 + lane) & 0xFFFF) * (1.0f / 8192.0f);
  if (threadIdx.x == 128) *clk = BlockClock{clock64(), 0, globaltimer(), 0, smid(), 0};
  if (pingpong && group == T::kConsumers - 1) attnsim::named_arrive(sm90::kBarPingpong + 0, sm90::kPingpongThreads);
  constexpr int kConsumerThreads = T::kConsumers * sm90::kThreadsPerWarpgroup;
#pragma unroll 1
  for (int r = 0; r < reps; ++r) {
    asm volatile("bar.sync %0, %1;" ::"n"(kRepBarrier), "n"(kConsumerThreads) : "memory");
    uint32_t ignored;
    asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(ignored) : "r"(smem_u32(s.k_full)) : "memory");
    const uint32_t tb = clock32();
    uint32_t t0 = tb, t1 = tb, t2 = tb, t3 = tb, t4 = tb;
    if (neighbour > 0 && group > 0) {
      while (clock32() - tb < static_cast<uint32_t>(wait)) {}
      t0 = clock32();
      if (neighbour == kNeighbourSoftmax) {
        // A softmax block of the kernel beside warpgroup 0's turn, as the other warpgroup's softmax
        // runs beside a turn in the kernel: row max, exponentials, O rescale and P packed.
        float alpha[2];
        sm90::row_max<T::kNBlock>(c.sacc, st, kScaleLog2, alpha);
        t1 = clock32();
        sm90::exp_scores<T::kNBlock>(c.sacc, st, kScaleLog2, alpha);
        t2 = clock32();
        sm90::rescale<T::kHeadDim>(c.o, alpha);
        sm90::pack_p<T::kNBlock>(c.sacc, c.pr);
        t3 = t4 = clock32();
      } else {
        // A burst of `neighbour` FFMAs in 8 independent chains, straight-line code (FFMA's latency
        // is 4 cycles, so the burst asks for every issue slot of its SMSP), as dense as a
        // softmax's scale and subtract. (A loop of 8 per iteration ran at about 5 cycles per FFMA.)
        if (neighbour == kBurstShort)
          ffma_burst<kBurstShort>(c.sacc);
        else
          ffma_burst<kBurstLong>(c.sacc);
        t1 = t2 = t3 = t4 = clock32();
      }
    } else if (on) {
      while (clock32() - tb < static_cast<uint32_t>(wait)) {}
      t0 = clock32();
      if (pingpong) {
        c.turn_start(0, 0);
        asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(ignored) : "r"(smem_u32(s.k_full)) : "memory");
      }
      t1 = clock32();
      c.issue_qk(0, 0);
      t2 = clock32();
      c.issue_pv(1, 0, true);
      t3 = clock32();
      if (pingpong) c.turn_end();
      c.template wait_mma<0>(0, 0);
      t4 = clock32();
    }
    // Every consumer warpgroup done before the neighbours prepare their next scores: that
    // preparation (about 190 dense instructions) must not run beside warpgroup 0's turn.
    asm volatile("bar.sync %0, %1;" ::"n"(kRepBarrier + 1), "n"(kConsumerThreads) : "memory");
    if (neighbour == kNeighbourSoftmax && group > 0) {
#pragma unroll
      for (int i = 0; i < T::kNBlock / 2; ++i)
        c.sacc[i] = __uint_as_float(c.pr[i / 2] & 0x7FFF7FFFu) * 1e-30f + fmaf(c.sacc[i], 0.5f, 0.25f * (r & 3));
    }
    if (lane == 0) {
      uint32_t* o = out + (static_cast<size_t>(r) * (T::kConsumers * 4) + cw) * kStamps;
      o[0] = tb;
      o[1] = t0;
      o[2] = t1;
      o[3] = t2;
      o[4] = t3;
      o[5] = t4;
      // The GEMMs' results are read, or ptxas drops the wgmmas (nothing else reads them here):
      // one register of each accumulator, whose last wgmma depends on the group's others.
      if (c.sacc[0] + c.o[0] == 1234567.0f) o[1] = 0;
    }
    // The end of the file's clock interval inside the loop: code after the consumers' loop makes
    // ptxas compile them within the launch's register cap, not setmaxnreg's (fa3_kernel.cuh).
    if (r == reps - 1 && threadIdx.x == 128) {
      clk->clk1 = clock64();
      clk->ns1 = globaltimer();
    }
  }
}

/// Medians over reps (8 dropped) per consumer warpgroup, cycles: of its warps' latest stamp each
/// (a warpgroup's wgmma goes when its last warp issues it), from the rep's earliest start.
struct TurnTimes {
  int groups = 0;
  double start[3] = {}, turn[3] = {}, qk[3] = {}, pv[3] = {}, done[3] = {};  ///< stamps 1..5
};

template <class T>
TurnTimes run_turn(ClockMeter& clock, const sm90::Params* params, int reps, int active, int pingpong, int delay,
                   int neighbour = 0) {
  auto kern = gemm_turn_kernel<T>;
  constexpr int kSmem = T::kSmemBytes + 1024;
  allow_smem(kern, kSmem);
  constexpr int kWarps = T::kConsumers * 4;
  DeviceBuffer<uint32_t> out(static_cast<size_t>(reps) * kWarps * kStamps);
  DeviceBuffer<BlockClock> clk(1);
  kern<<<1, T::kThreads, kSmem>>>(reps, active, pingpong, delay, neighbour, params, out.get(), clk.get());
  MB_CHECK_LAUNCH("gemm_turn_kernel");
  clock.add(clk.to_host(), 2000.0);
  const auto h = out.to_host();
  std::vector<double> v[3][5];
  for (int r = 8; r < reps; ++r) {
    const uint32_t* rec = h.data() + static_cast<size_t>(r) * kWarps * kStamps;
    uint32_t first = rec[0];
    for (int w = 1; w < kWarps; ++w)
      if (static_cast<int32_t>(rec[w * kStamps] - first) < 0) first = rec[w * kStamps];
    for (int g = 0; g < T::kConsumers; ++g)
      for (int k = 0; k < 5; ++k) {
        uint32_t latest = 0;
        for (int w = 4 * g; w < 4 * g + 4; ++w) latest = std::max(latest, rec[w * kStamps + 1 + k] - first);
        v[g][k].push_back(static_cast<double>(latest));
      }
  }
  TurnTimes t;
  t.groups = T::kConsumers;
  for (int g = 0; g < T::kConsumers; ++g) {
    t.start[g] = median(v[g][0]);
    t.turn[g] = median(v[g][1]);
    t.qk[g] = median(v[g][2]);
    t.pv[g] = median(v[g][3]);
    t.done[g] = median(v[g][4]);
  }
  return t;
}

/// The stamps of each active warpgroup into `j`, and its spans: QK dispatch (after the turn to
/// after issue_qk, its ready K wait included), PV dispatch, GEMMs done after the PV dispatch.
Json turn_json(const TurnTimes& t, int active) {
  Json j = Json::object();
  for (int g = 0; g < t.groups; ++g) {
    if (!((active >> g) & 1)) continue;
    const std::string w = "wg" + std::to_string(g);
    j[w + "_start_cycles"] = t.start[g];
    j[w + "_turn_cycles"] = t.turn[g];
    j[w + "_qk_issued_cycles"] = t.qk[g];
    j[w + "_pv_issued_cycles"] = t.pv[g];
    j[w + "_done_cycles"] = t.done[g];
    j[w + "_qk_dispatch_cycles"] = t.qk[g] - t.turn[g];
    j[w + "_pv_dispatch_cycles"] = t.pv[g] - t.qk[g];
  }
  return j;
}

template <class T>
void instance(Report& rep, Json& j, const sm90::Params* params, int reps) {
  j["head_dim"] = T::kHeadDim;
  j["m_block"] = T::kMBlock;
  j["n_block"] = T::kNBlock;
  j["qk_wgmmas"] = T::kHeadDim / 16;
  j["pv_wgmmas"] = T::kNBlock / 16;
  j["solo"] = turn_json(run_turn<T>(rep.clock(), params, reps, 1, 0, 0), 1);
  const int all = (1 << T::kConsumers) - 1;
  for (int delay : {0, 256, 512, 1024, 2048}) {
    j["pingpong_delay_" + std::to_string(delay)] =
        turn_json(run_turn<T>(rep.clock(), params, reps, all, 1, delay), all);
  }
  // Warpgroup 0's turn alone on the tensor cores while the other consumer warpgroups run one
  // softmax block each, starting D cycles after the rep barrier (D < 0: warpgroup 0's turn -D
  // cycles after it, the softmax first, as in the kernel, where the other warpgroup's softmax has
  // begun when a turn starts).
  for (int delay : {-512, -384, -256, -128, 0, 128, 256, 512}) {
    Json& b = j[delay < 0 ? "beside_softmax_turn_late_" + std::to_string(-delay)
                          : "beside_softmax_delay_" + std::to_string(delay)];
    const TurnTimes t = run_turn<T>(rep.clock(), params, reps, 1, 0, delay, kNeighbourSoftmax);
    b = turn_json(t, 1);
    b["softmax_start_cycles"] = t.start[1];
    b["softmax_max_end_cycles"] = t.turn[1];
    b["softmax_exp_end_cycles"] = t.qk[1];
    b["softmax_end_cycles"] = t.pv[1];
  }
  // Warpgroup 0's turn beside a burst of B dense FFMAs on every other consumer warp, starting with
  // the turn or D cycles into it: what a dense burst alone does to the dispatch.
  for (int burst : {kBurstShort, kBurstLong})
    for (int delay : {0, 128}) {
      Json& b = j["beside_ffma" + std::to_string(burst) + "_delay_" + std::to_string(delay)];
      const TurnTimes t = run_turn<T>(rep.clock(), params, reps, 1, 0, delay, burst);
      b = turn_json(t, 1);
      b["ffma_start_cycles"] = t.start[1];
      b["ffma_end_cycles"] = t.pv[1];
    }
  // The same softmax blocks with warpgroup 0 idle: their time alone.
  {
    const TurnTimes t = run_turn<T>(rep.clock(), params, reps, 0, 0, 0, kNeighbourSoftmax);
    Json& b = j["softmax_alone"];
    b["softmax_start_cycles"] = t.start[1];
    b["softmax_max_end_cycles"] = t.turn[1];
    b["softmax_exp_end_cycles"] = t.qk[1];
    b["softmax_end_cycles"] = t.pv[1];
  }
}

void bench_gemm_turn(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "The SM90 kernel's Consumer<T> (kernels/sm90/consumer.cuh) on the kernel's shared-memory layout and register "
      "budget (setmaxnreg), one CTA on one SM, Q/K/V bf16 in [1, 2), every full barrier ready. Per rep: a named "
      "barrier over the consumer warpgroups, a volatile ld.shared, a 32-bit clock read; warpgroups 1.. spin `delay` "
      "cycles (warpgroup 0 spins -delay where it is negative); with pingpong the turn's named barrier (warpgroup 0 "
      "first, then 1, ...), then issue_qk (K's ready "
      "full-barrier wait, the QK wgmma group, commit) and issue_pv (V's ready wait, the PV group with P from "
      "registers, commit), turn_end, wgmma.wait_group 0; clock reads between. Per rep and warpgroup the latest of its "
      "4 warps' stamps from the rep's earliest start; medians over reps (8 dropped). qk_dispatch = after issue_qk - "
      "after the turn; pv_dispatch = after issue_pv - after issue_qk. solo: warpgroup 0 alone, the tensor cores idle "
      "when it starts. pingpong_delay_D: every consumer warpgroup takes its turn, warpgroup 1 and above starting D "
      "cycles after the rep barrier. beside_softmax_delay_D: warpgroup 0's turn (no pingpong) while the other consumer "
      "warpgroups each run one block of the kernel's softmax code (row_max, exp_scores, rescale + pack_p on its "
      "registers, fresh scores each rep) starting D cycles after the rep barrier; beside_softmax_turn_late_D: the same "
      "with warpgroup 0's turn D cycles after it (the softmax first); softmax_alone: those blocks with "
      "warpgroup 0 idle (softmax stamps: the latest warp of warpgroup 1); beside_ffmaB_delay_D: warpgroup 0's turn "
      "while the "
      "other consumer warps each issue B independent FFMAs (8 chains) starting D cycles after the rep barrier. A "
      "second "
      "barrier over the consumers ends each rep before the neighbours prepare their next scores. Instances: the base "
      "schedule's hd64 (192 x 128), hd128 (128 x 128), hd256 (128 x "
      "80).");
  const int reps = rep.opt().quick ? 24 : 200;
  DeviceBuffer<sm90::Params> params(1);
  MB_CHECK(cudaMemset(params.get(), 0, sizeof(sm90::Params)));
  Json& res = rep.results();
  Json& inst = res["instances"];
  instance<Hd64>(rep, inst["hd64"], params.get(), reps);
  instance<Hd128>(rep, inst["hd128"], params.get(), reps);
  instance<Hd256>(rep, inst["hd256"], params.get(), reps);
}

}  // namespace

std::vector<Benchmark> gemm_turn_benchmarks() {
  return {{"gemm_turn",
           "the SM90 kernel's own QK and PV dispatch code, alone and handing the tensor cores over in pingpong turns",
           bench_gemm_turn}};
}

}  // namespace mb
