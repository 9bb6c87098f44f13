// Two softmax warps on one SMSP, one starting later than the other: which of them the SMSP's
// warp scheduler serves while both run.
//
// Why: an FA3 consumer warpgroup's softmax runs while the other warpgroup's GEMMs run, and the two
// softmaxes overlap where the warpgroups' turns come close. The traced kernel keeps its two
// warpgroups half a period apart (H200, hd128: the turns' offset settles at 0.50 of the period),
// the simulator's max-min fair sharing lets them bunch. Whether the warp that started first keeps
// its speed (the follower pushed back, which spreads the turns out), the older warp does whoever
// started first, or both slow alike, decides that.
#include "microbench.cuh"
#include "neighbour_work.cuh"
#include "sm90/softmax.cuh"
#include "wgmma_tiles.cuh"

namespace mb {
namespace {

constexpr int kN = 128, kD = 128;  // hd128 n_block 128: the kernel's fragments
constexpr int kStamps = 4;         // per warp and rep: start, after the row max, after the exponentials, end

/// Warpgroup 0: back-to-back wgmma m64n128k16 SS on the same SMSPs (kMma) or idle. Warpgroups 1
/// and 2 (warps 4-7 and 8-11, one warp of each per SMSP): per rep a named barrier over both, a
/// volatile shared load (so that the clock is read after the barrier opens: BAR.SYNC defers its
/// blocking), clock; the warpgroup other than `leader` spins `delay` cycles; then each runs one
/// softmax block of the kernel (row_max, exp_scores, rescale + pack_p, kernels/sm90/softmax.cuh)
/// on fresh scores, clock reads around its spans, and a second named barrier before the next
/// rep's scores are made. Lane 0 writes the raw 32-bit stamps (barrier,
/// start, after max, after exp, end) to out[((rep * 8 + warp - 4) * (kStamps + 1)) + k].
template <int kMma>
__global__ void __launch_bounds__(384, 1) softmax_pair_kernel(int reps, int delay, int leader, float scale_log2,
                                                              uint32_t* out, BlockClock* clk, float* sink) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ volatile int stop;
  __shared__ int done_warps;
  if (threadIdx.x == 0) stop = done_warps = 0;
  const uint8_t* base = fill_wgmma_tiles(smem_raw);  // ends with __syncthreads
  const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0), group = warp / 4;
  if (warp < 4) {
    if constexpr (kMma != 0) wgmma_until<false>(base, stop, sink);
    return;
  }
  const int lane = threadIdx.x % 32;
  const int wait = group == leader ? 0 : delay;
  float s[kN / 2], o[kD / 2];
  uint32_t p[kN / 4];
  softmax_operands<kN, kD>(s, o, lane);
  attnsim::sm90::RowStats st;
  if (threadIdx.x == 128) *clk = BlockClock{clock64(), 0, globaltimer(), 0, smid(), 0};
#pragma unroll 1
  for (int r = 0; r < reps; ++r) {
#pragma unroll
    for (int i = 0; i < kN / 2; ++i) s[i] = fmaf(s[i], 0.999f, 0.25f * static_cast<float>(r & 3));
    asm volatile("bar.sync 2, 256;" ::: "memory");  // (named barrier 1 is warpgroup 0's: wgmma_until)
    uint32_t ignored;
    asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(ignored) : "r"(smem_u32(base)) : "memory");
    const uint32_t tb = clock32();
    while (clock32() - tb < static_cast<uint32_t>(wait)) {}
    float alpha[2];
    const uint32_t t0 = clock32();
    attnsim::sm90::row_max<kN>(s, st, scale_log2, alpha);
    const uint32_t t1 = clock32();
    attnsim::sm90::exp_scores<kN, 0, 0>(s, st, scale_log2, alpha);
    const uint32_t t2 = clock32();
    attnsim::sm90::rescale<kD>(o, alpha);
    attnsim::sm90::pack_p<kN>(s, p);
    const uint32_t t3 = clock32();
    // Both warpgroups done before either prepares the next rep's scores: the leader's preparation
    // must not run beside the follower's block.
    asm volatile("bar.sync 3, 256;" ::: "memory");
#pragma unroll
    for (int i = 0; i < kN / 2; ++i) s[i] = __uint_as_float(p[i / 2] & 0x7FFF7FFFu) * 1e-30f + s[i] * 0.5f;
    if (lane == 0) {
      uint32_t* w = out + (static_cast<size_t>(r) * 8 + warp - 4) * (kStamps + 1);
      w[0] = tb;
      w[1] = t0;
      w[2] = t1;
      w[3] = t2;
      w[4] = t3;
    }
  }
  if (threadIdx.x == 128) {
    clk->clk1 = clock64();
    clk->ns1 = globaltimer();
  }
  if (lane == 0 && atomicAdd(&done_warps, 1) == 7) stop = 1;  // the last softmax warp stops the wgmma
  float x = st.sum[0] + st.sum[1];
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) x += o[i];
  if (x == 1234567.0f) sink[threadIdx.x] = x;
}

/// Medians over reps (8 dropped) of the warpgroups' spans, cycles: per rep and warpgroup the
/// median over its 4 warps of each span, and of its start after the rep's earliest barrier exit.
struct PairTimes {
  double start[2] = {0, 0}, max[2] = {0, 0}, exp[2] = {0, 0}, block[2] = {0, 0};  ///< [0]: warpgroup 1, [1]: 2
};

template <int kMma>
PairTimes run_pair(ClockMeter& clock, int reps, int delay, int leader) {
  auto kern = softmax_pair_kernel<kMma>;
  allow_smem(kern, kWgmmaTileSmem);
  DeviceBuffer<uint32_t> out(static_cast<size_t>(reps) * 8 * (kStamps + 1));
  DeviceBuffer<BlockClock> clk(1);
  DeviceBuffer<float> sink(384);
  kern<<<1, 384, kWgmmaTileSmem>>>(reps, delay, leader, 0.0883883f * 1.4426950f, out.get(), clk.get(), sink.get());
  MB_CHECK_LAUNCH("softmax_pair_kernel");
  clock.add(clk.to_host(), 5000.0);
  const auto h = out.to_host();
  std::vector<double> start[2], mx[2], ex[2], blk[2];
  for (int r = 8; r < reps; ++r) {
    const uint32_t* rec = h.data() + static_cast<size_t>(r) * 8 * (kStamps + 1);
    uint32_t first = rec[0];
    for (int w = 1; w < 8; ++w)
      if (static_cast<int32_t>(rec[w * (kStamps + 1)] - first) < 0) first = rec[w * (kStamps + 1)];
    for (int g = 0; g < 2; ++g) {
      std::vector<double> a, b, c, d;
      for (int w = 4 * g; w < 4 * g + 4; ++w) {
        const uint32_t* x = rec + w * (kStamps + 1);
        a.push_back(static_cast<double>(x[1] - first));
        b.push_back(static_cast<double>(x[2] - x[1]));
        c.push_back(static_cast<double>(x[3] - x[2]));
        d.push_back(static_cast<double>(x[4] - x[1]));
      }
      start[g].push_back(median(a));
      mx[g].push_back(median(b));
      ex[g].push_back(median(c));
      blk[g].push_back(median(d));
    }
  }
  PairTimes t;
  for (int g = 0; g < 2; ++g) {
    t.start[g] = median(start[g]);
    t.max[g] = median(mx[g]);
    t.exp[g] = median(ex[g]);
    t.block[g] = median(blk[g]);
  }
  return t;
}

void bench_softmax_pair(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "One CTA of three warpgroups on one SM; warps w + 4 and w + 8 (warpgroups 1 and 2) share SMSP w. Per rep: a "
      "named barrier over warpgroups 1 and 2, a volatile ld.shared, a 32-bit clock read; the warpgroup that is not "
      "the leader spins `delay` cycles; each then runs one softmax block of kernels/sm90/softmax.cuh at hd128 "
      "n_block 128 (row_max, exp_scores, rescale + pack_p) on fresh scores, clock reads around its spans as the "
      "traced kernel reads them, and a second barrier over both before the next rep's scores are made (so that no "
      "other work runs beside a block). Warpgroup 0 idles (alone) or streams wgmma m64n128k16 SS on the same SMSPs "
      "(beside_wgmma). Per rep and warpgroup the median over its 4 warps; medians over reps (8 dropped). "
      "Leader warpgroup 1 (the older warps) or 2; delay 4000: no overlap (each block alone). "
      "leader_priority_* = (follower's block - its block alone) / (leader's block - its block alone + follower's - "
      "its alone) at delay 150 (1: the follower absorbs all of the sharing, 0.5: both alike).");
  const int reps = rep.opt().quick ? 40 : 400;
  Json& res = rep.results();
  const int delays[] = {0, 75, 150, 300, 450, 600, 900, 4000};
  auto sweep = [&](auto mma_tag, Json& j) {
    constexpr int m = decltype(mma_tag)::value;
    for (int leader : {1, 2}) {
      Json& l = j["leader_warpgroup_" + std::to_string(leader)];
      PairTimes near, alone;
      for (int delay : delays) {
        const PairTimes t = run_pair<m>(rep.clock(), reps, delay, leader);
        Json& c = l["delay_" + std::to_string(delay)];
        for (int g = 0; g < 2; ++g) {
          const std::string wg = "wg" + std::to_string(g + 1);
          c[wg + "_start_cycles"] = t.start[g];
          c[wg + "_softmax_max_cycles"] = t.max[g];
          c[wg + "_softmax_exp_cycles"] = t.exp[g];
          c[wg + "_block_cycles"] = t.block[g];
        }
        if (delay == 150) near = t;
        if (delay == 4000) alone = t;
      }
      // Who absorbs the sharing at a short delay: the follower's extra time over both warpgroups' extra time.
      const int lg = leader - 1, fg = 2 - leader;
      const double lead_extra = near.block[lg] - alone.block[lg], follow_extra = near.block[fg] - alone.block[fg];
      l["leader_priority_delay_150"] = lead_extra + follow_extra > 0 ? follow_extra / (lead_extra + follow_extra) : 0.5;
    }
  };
  sweep(std::integral_constant<int, 0>{}, res["alone"]);
  sweep(std::integral_constant<int, 1>{}, res["beside_wgmma"]);
}

}  // namespace

std::vector<Benchmark> softmax_pair_benchmarks() {
  return {{"softmax_pair",
           "two softmax warps per SMSP, one starting later: whether the one that started first keeps its speed",
           bench_softmax_pair}};
}

}  // namespace mb
