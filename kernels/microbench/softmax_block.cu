// The SM90 kernel's own softmax code (kernels/sm90/softmax.cuh: row_max, exp_scores, rescale +
// pack_p on a 64-element score fragment and a 64-element O fragment, as at hd128 n_block 128),
// timed between clock reads as the traced kernel times its spans, on one warp per SMSP: alone,
// and beside a warpgroup running back-to-back wgmma on the same SMSPs. softmax_duty: the same
// spans beside wgmma that sleeps between its groups, the tensor cores busy part of the time.
//
// Why: in the traced kernel these spans take 1.6-2x their static issue time (the sum of ptxas's
// stall counts, `attnsim sass-costs`). Alone, the same code shows whether that gap is the code's
// own (issue rate, scoreboards) or its surroundings' (the other warps, the running wgmma).
#include <cuda/ptx>

#include "common/mbarrier.cuh"
#include "microbench.cuh"
#include "neighbour_work.cuh"
#include "sm90/softmax.cuh"
#include "wgmma_tiles.cuh"

namespace mb {
namespace {

/// softmax_block_kernel's kMma value for warpgroup 0's warp 0 waiting in wait_parity (below).
constexpr int kSpin = 3;

/// What mask_scores reads of the kernel's Params (sm90::Params): a causal problem of one 128-row
/// block, so that the timed KV block (j = 0) crosses the diagonal of the rows the softmax warps
/// hold (0..63), as a causal tile's last block does.
struct MaskArgs {
  int seqlen_q, seqlen_k, causal;
};
constexpr MaskArgs kDiagonal{128, 128, 1};

/// The conditional rescale's threshold in log2 units: the base schedule's at head_dim 256
/// (schedules/fa3_sm90.json, rescale.threshold_log2 8; FA4's conditional rescale). The benchmark's
/// scores never grow a row's max that far after the first block, so its rescale_o spans pack P only.
constexpr float kThresholdLog2 = 8.0f;

/// Warpgroup 0 (kMma 1: back-to-back wgmma m64n128k16 SS until the softmax warps are done; 2: RS,
/// A from registers, as the PV GEMM; 0: idle; kSpin: warp 0 alone waits on an mbarrier in the
/// kernels' wait loop, wait_parity, until the softmax warps are done, as the load warp waits
/// for a free stage on SMSP 0 beside consumer warps 4 and 8); warpgroups 1..kGroups, one warp per SMSP each, run
/// `iters` softmax blocks of n_block kN (kN / 2 scores per thread) and head_dim kD (kD / 2 O
/// elements) on fresh scores and accumulate the cycles of each span (row max, exp + sums,
/// rescale + pack) into out[3 * (warp - 4) + k]. kGroups 2: two softmax warps share each SMSP, in
/// step (both start together), as the consumer warpgroups of a kernel without pingpong can.
/// kEmuFreq/kEmuRes: exp_scores's exp2 emulation (the last kEmuRes of every kEmuFreq elements).
/// kConditional: the conditional rescale's row max (its warp vote, threshold kThresholdLog2) and
/// the rescale_o span as the kernel runs it there (O rescaled only where the vote says so, P packed
/// always); out[4 * (warp - 4) + 3] counts the blocks that rescaled. kMask: the softmax_max span
/// masks the block first (mask_scores, as the kernel's masked steps: `mask`'s causal diagonal
/// crossing it; its values come at run time, as the kernel's Params do). kPackOnly: the rescale_o
/// span packs P and rescales nothing, as at a tile's first KV block (no vote to test). gap_ns,
/// duty: warpgroup 0's sleep after each wgmma group and its tensor-core duty (wgmma_until).
template <int kN, int kD, int kMma, int kGroups = 1, int kEmuFreq = 0, int kEmuRes = 0, bool kConditional = false,
          bool kMask = false, bool kPackOnly = false>
__global__ void __launch_bounds__(128 * (kGroups + 1), 1)
    softmax_block_kernel(int iters, int delay, float scale_log2, long long* out, BlockClock* clk, float* sink,
                         MaskArgs mask, int gap_ns, unsigned long long* duty) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ volatile int stop;
  __shared__ int done_warps;
  __shared__ uint64_t spin_bar;  // kSpin: completed by the last softmax warp
  if (threadIdx.x == 0) {
    stop = done_warps = 0;
    cuda::ptx::mbarrier_init(&spin_bar, 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  const uint8_t* base = fill_wgmma_tiles(smem_raw);  // ends with __syncthreads
  const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
  if (warp < 4) {
    if constexpr (kMma == kSpin) {
      if (warp == 0) attnsim::wait_parity(&spin_bar, 0);
    } else if constexpr (kMma != 0) {
      wgmma_until<kMma == 2>(base, stop, sink, gap_ns, duty);
    }
    return;
  }
  const long long start = clock64();
  while (clock64() - start < delay) {  // let the tensor cores get busy first; the delay varies the phase
  }
  const int lane = threadIdx.x % 32;
  float s[kN / 2], o[kD / 2];
  uint32_t p[kN / 4];
  softmax_operands<kN, kD>(s, o, lane);
  attnsim::sm90::RowStats st;
  long long acc[4] = {0, 0, 0, 0};
  if (threadIdx.x == 128) *clk = BlockClock{clock64(), 0, globaltimer(), 0, smid(), 0};
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    // Fresh scores (as a new QK would give), outside the timed spans.
#pragma unroll
    for (int i = 0; i < kN / 2; ++i) s[i] = fmaf(s[i], 0.999f, 0.25f * static_cast<float>(it & 3));
    float alpha[2];
    const uint32_t t0 = clock32();
    if constexpr (kMask) attnsim::sm90::mask_scores<kN>(s, 0, 16 * (warp % 4) + lane / 4, mask);
    const bool rescale_o = attnsim::sm90::row_max<kN, kConditional>(s, st, scale_log2, alpha, kThresholdLog2);
    const uint32_t t1 = clock32();
    attnsim::sm90::exp_scores<kN, kEmuFreq, kEmuRes>(s, st, scale_log2, alpha);
    const uint32_t t2 = clock32();
    if (!kPackOnly && rescale_o) attnsim::sm90::rescale<kD>(o, alpha);  // always, unless kConditional (as the kernel)
    attnsim::sm90::pack_p<kN>(s, p);
    const uint32_t t3 = clock32();
    acc[0] += t1 - t0;
    acc[1] += t2 - t1;
    acc[2] += t3 - t2;
    acc[3] += rescale_o;
#pragma unroll
    for (int i = 0; i < kN / 2; ++i) s[i] = __uint_as_float(p[i / 2] & 0x7FFF7FFFu) * 1e-30f + s[i] * 0.5f;
  }
  if (threadIdx.x == 128) {
    clk->clk1 = clock64();
    clk->ns1 = globaltimer();
  }
  if (lane == 0) {
    for (int k = 0; k < 4; ++k) out[4 * (warp - 4) + k] = acc[k];
    if (atomicAdd(&done_warps, 1) == 4 * kGroups - 1) {  // the last softmax warp stops the wgmma
      stop = 1;
      (void)cuda::ptx::mbarrier_arrive(&spin_bar);  // and releases the spinning warp
    }
  }
  float x = st.sum[0] + st.sum[1];
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) x += o[i];
  if (x == 1234567.0f) sink[threadIdx.x] = x;
}

/// busy[0] / busy[1] of wgmma_until's duty counters (0 where no wgmma ran).
double duty_share(const std::vector<unsigned long long>& busy) {
  return busy[1] > 0 ? static_cast<double>(busy[0]) / static_cast<double>(busy[1]) : 0.0;
}

/// Mean cycles per block of each span: median over the 4 kGroups softmax warps of a launch, then
/// median over `launches` launches whose softmax warps start at different delays (4000 + 97 i
/// cycles), so that no one phase between the softmax loop and the wgmma stream decides. A fourth
/// figure: the share of blocks that rescaled O (1 unless kConditional), mean over warps and launches.
/// A fifth: the tensor cores' duty beside the spans (kMma 1, 2; 0 otherwise), the share of
/// warpgroup 0's wgmma loop its groups ran (wgmma_until), median over the launches: the "beside"
/// figures are at that duty, not at 1. `per_warp` (optional): each softmax warp's three spans
/// (warp 4 + w on SMSP w % 4), median over the launches. `gap_ns`: warpgroup 0 sleeps that long
/// after each wgmma group.
template <int kN, int kD, int kMma, int kGroups = 1, int kEmuFreq = 0, int kEmuRes = 0, bool kConditional = false,
          bool kMask = false, bool kPackOnly = false>
std::vector<double> span_cycles(ClockMeter& clock, int iters, int launches,
                                std::vector<std::vector<double>>* per_warp = nullptr, int gap_ns = 0) {
  auto kern = softmax_block_kernel<kN, kD, kMma, kGroups, kEmuFreq, kEmuRes, kConditional, kMask, kPackOnly>;
  allow_smem(kern, kWgmmaTileSmem);
  constexpr int kThreads = 128 * (kGroups + 1), kWarps = 4 * kGroups;
  DeviceBuffer<long long> out(16 * kGroups);
  DeviceBuffer<BlockClock> clk(1);
  DeviceBuffer<float> sink(kThreads);
  DeviceBuffer<unsigned long long> busy(2);
  std::vector<std::vector<double>> per_launch(3), warp_launch(3 * kWarps);
  std::vector<double> duties;
  double rescaled = 0;
  for (int i = 0; i < launches; ++i) {
    MB_CHECK(cudaMemset(busy.get(), 0, 2 * sizeof(unsigned long long)));
    kern<<<1, kThreads, kWgmmaTileSmem>>>(iters, 4000 + 97 * i, 0.0883883f * 1.4426950f, out.get(), clk.get(),
                                          sink.get(), kDiagonal, gap_ns, busy.get());
    MB_CHECK_LAUNCH("softmax_block_kernel");
    duties.push_back(duty_share(busy.to_host()));
    clock.add(clk.to_host(), 5000.0);
    const auto h = out.to_host();
    for (int k = 0; k < 3; ++k) {
      std::vector<double> v;
      for (int w = 0; w < kWarps; ++w) {
        v.push_back(static_cast<double>(h[4 * w + k]) / iters);
        warp_launch[3 * w + k].push_back(v.back());
      }
      per_launch[k].push_back(median(v));
    }
    for (int w = 0; w < kWarps; ++w) rescaled += static_cast<double>(h[4 * w + 3]) / iters / (kWarps * launches);
  }
  if (per_warp) {
    per_warp->assign(kWarps, {});
    for (int w = 0; w < kWarps; ++w)
      for (int k = 0; k < 3; ++k) (*per_warp)[w].push_back(median(warp_launch[3 * w + k]));
  }
  return {median(per_launch[0]), median(per_launch[1]), median(per_launch[2]), rescaled, median(duties)};
}

/// A warp waiting on an mbarrier phase that completes `wait` cycles later (another warp on
/// another SMSP arrives then): try_wait loops (`while (!try_wait) ++n`) per cycle of the wait.
/// out[0] = loops, out[1] = cycles waited.
__global__ void spin_rate_kernel(long long wait, long long* out) {
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(&bar, 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const long long t0 = clock64();
    long long n = 0;
    while (!attnsim::try_wait_parity<false>(&bar, 0)) ++n;
    out[0] = n;
    out[1] = clock64() - t0;
  } else if (threadIdx.x == 32) {
    const long long t0 = clock64();
    while (clock64() - t0 < wait) {}
    (void)cuda::ptx::mbarrier_arrive(&bar);
  }
}

/// try_wait loops per 1000 cycles of a pending phase, median over `launches` waits of `wait` cycles.
double spin_loops_per_kcycle(long long wait, int launches) {
  DeviceBuffer<long long> out(2);
  std::vector<double> v;
  for (int i = 0; i < launches; ++i) {
    spin_rate_kernel<<<1, 64>>>(wait, out.get());
    MB_CHECK_LAUNCH("spin_rate_kernel");
    const auto h = out.to_host();
    v.push_back(1000.0 * static_cast<double>(h[0]) / static_cast<double>(h[1]));
  }
  return median(v);
}

/// The softmax spans of one tile shape on each SMSP, warpgroup 0 idle and with its warp 0 waiting
/// in the kernels' wait loop on SMSP 0 (as the load warp waits beside consumer warps 4 and 8),
/// into `j`: per span, SMSP 0's and the other three's mean.
template <int kN, int kD>
void beside_waiting_warp(Report& rep, Json& j, int iters, int launches) {
  j["n_block"] = kN;
  j["head_dim"] = kD;
  const char* names[3] = {"softmax_max", "softmax_exp", "rescale_o"};
  for (int spin = 0; spin < 2; ++spin) {
    std::vector<std::vector<double>> by_smsp;  // softmax warp w is on SMSP w
    if (spin)
      span_cycles<kN, kD, kSpin>(rep.clock(), iters, launches, &by_smsp);
    else
      span_cycles<kN, kD, 0>(rep.clock(), iters, launches, &by_smsp);
    for (int k = 0; k < 3; ++k) {
      Json& x = j["spans"][names[k]];
      const std::string cond = spin ? "beside_waiting_warp" : "alone";
      x[cond + "_smsp0_cycles"] = by_smsp[0][static_cast<size_t>(k)];
      x[cond + "_smsp1_3_cycles"] = (by_smsp[1][static_cast<size_t>(k)] + by_smsp[2][static_cast<size_t>(k)] +
                                     by_smsp[3][static_cast<size_t>(k)]) /
                                    3;
    }
  }
}

/// The kernel's final_o span (kernels/sm90/softmax.cuh write_o, which the epilogue runs: row sums across the quad, O /
/// sum to bf16 into the warpgroup's 64 rows of a Q-sized buffer, 128B swizzle, async-proxy fence)
/// on every consumer warpgroup of an m_block kMBlock tile at once (warpgroups 1..kMBlock / 64, as
/// the kernel's consumers end a tile), `iters` times on fresh sums: accumulated cycles between
/// 32-bit clock reads per warp into out[warp - 4]. Warpgroup 0 idles or streams wgmma (kMma).
template <int kD, int kMBlock, int kMma>
__global__ void __launch_bounds__(128 * (kMBlock / 64 + 1), 1)
    final_o_kernel(int iters, int delay, long long* out, BlockClock* clk, float* sink, unsigned long long* duty) {
  constexpr int kGroups = kMBlock / 64;
  extern __shared__ uint8_t smem_raw[];
  __shared__ volatile int stop;
  __shared__ int done_warps;
  if (threadIdx.x == 0) stop = done_warps = 0;
  const uint8_t* base = fill_wgmma_tiles(smem_raw);  // ends with __syncthreads
  const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
  if (warp < 4) {
    if constexpr (kMma != 0) wgmma_until<kMma == 2>(base, stop, sink, 0, duty);
    return;
  }
  // Q's buffer right after the wgmma tiles (kWgmmaTileSmem - 1024 B past the 1024-aligned base).
  const uint32_t q = smem_u32(base) + (kWgmmaTileSmem - 1024);
  const long long start = clock64();
  while (clock64() - start < delay) {}
  const int lane = threadIdx.x % 32;
  float o[kD / 2];
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) o[i] = 1.0f + static_cast<float>(hash32(i * 32 + lane) & 0xFF) * (1.0f / 256.0f);
  attnsim::sm90::RowStats st;
  long long acc = 0;
  if (threadIdx.x == 128) *clk = BlockClock{clock64(), 0, globaltimer(), 0, smid(), 0};
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    st.sum[0] = 1.0f + static_cast<float>(it & 7);  // fresh partial sums, outside the timed span
    st.sum[1] = 2.0f + static_cast<float>(it & 3);
    const uint32_t t0 = clock32();
    attnsim::sm90::write_o<kD, kMBlock>(q, 64 * (warp / 4 - 1), warp % 4, lane, o, st);
    const uint32_t t1 = clock32();
    acc += t1 - t0;
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) o[i] = o[i] * 0.999f + st.sum[i % 2] * 1e-6f;
  }
  if (threadIdx.x == 128) {
    clk->clk1 = clock64();
    clk->ns1 = globaltimer();
  }
  if (lane == 0) {
    out[warp - 4] = acc;
    if (atomicAdd(&done_warps, 1) == 4 * kGroups - 1) stop = 1;  // the last consumer warp stops the wgmma
  }
  float x = st.sum[0] + st.sum[1];
  if (x == 1234567.0f) sink[threadIdx.x] = x;
}

/// Mean cycles per final_o span: median over the consumer warps of a launch, then over `launches`
/// launches started 4000 + 97 i cycles in (as span_cycles); `duty` (optional): the tensor cores'
/// duty beside it (span_cycles), median over the launches.
template <int kD, int kMBlock, int kMma>
double final_o_cycles(ClockMeter& clock, int iters, int launches, double* duty = nullptr) {
  auto kern = final_o_kernel<kD, kMBlock, kMma>;
  constexpr int kSmem = kWgmmaTileSmem + kMBlock * kD * 2;
  allow_smem(kern, kSmem);
  constexpr int kThreads = 128 * (kMBlock / 64 + 1), kWarps = 4 * (kMBlock / 64);
  DeviceBuffer<long long> out(kWarps);
  DeviceBuffer<BlockClock> clk(1);
  DeviceBuffer<float> sink(kThreads);
  DeviceBuffer<unsigned long long> busy(2);
  std::vector<double> per_launch, duties;
  for (int i = 0; i < launches; ++i) {
    MB_CHECK(cudaMemset(busy.get(), 0, 2 * sizeof(unsigned long long)));
    kern<<<1, kThreads, kSmem>>>(iters, 4000 + 97 * i, out.get(), clk.get(), sink.get(), busy.get());
    MB_CHECK_LAUNCH("final_o_kernel");
    duties.push_back(duty_share(busy.to_host()));
    clock.add(clk.to_host(), 5000.0);
    const auto h = out.to_host();
    std::vector<double> v;
    for (int w = 0; w < kWarps; ++w) v.push_back(static_cast<double>(h[w]) / iters);
    per_launch.push_back(median(v));
  }
  if (duty) *duty = median(duties);
  return median(per_launch);
}

/// The three softmax spans of one tile shape alone, beside SS wgmma and beside RS wgmma, and the
/// final_o span of its m_block kMBlock (every consumer warpgroup at once) likewise, into `j`.
template <int kN, int kD, int kMBlock>
std::vector<double> shape(Report& rep, Json& j, int iters, int launches) {
  const char* names[3] = {"softmax_max", "softmax_exp", "rescale_o"};
  const auto alone = span_cycles<kN, kD, 0>(rep.clock(), iters, launches);
  const auto ss = span_cycles<kN, kD, 1>(rep.clock(), iters, launches);
  const auto rs = span_cycles<kN, kD, 2>(rep.clock(), iters, launches);
  const auto pair_alone = span_cycles<kN, kD, 0, 2>(rep.clock(), iters, launches);
  const auto pair_ss = span_cycles<kN, kD, 1, 2>(rep.clock(), iters, launches);
  j["n_block"] = kN;
  j["head_dim"] = kD;
  for (int k = 0; k < 3; ++k) {
    Json& x = j["spans"][names[k]];
    x["alone_cycles"] = alone[k];
    x["beside_wgmma_cycles"] = ss[k];
    x["beside_wgmma_rs_cycles"] = rs[k];
    x["slowdown_beside_wgmma"] = ss[k] / alone[k];
    x["tensor_duty_ss"] = ss[4];
    x["tensor_duty_rs"] = rs[4];
    x["pair_alone_cycles"] = pair_alone[k];
    x["pair_beside_wgmma_cycles"] = pair_ss[k];
    x["pair_tensor_duty_ss"] = pair_ss[4];
  }
  j["m_block"] = kMBlock;
  Json& f = j["spans"]["final_o"];
  f["warpgroups"] = kMBlock / 64;
  f["alone_cycles"] = final_o_cycles<kD, kMBlock, 0>(rep.clock(), iters / 4, launches);
  double duty_ss = 0, duty_rs = 0;
  f["beside_wgmma_cycles"] = final_o_cycles<kD, kMBlock, 1>(rep.clock(), iters / 4, launches, &duty_ss);
  f["beside_wgmma_rs_cycles"] = final_o_cycles<kD, kMBlock, 2>(rep.clock(), iters / 4, launches, &duty_rs);
  f["tensor_duty_ss"] = duty_ss;
  f["tensor_duty_rs"] = duty_rs;
  return {alone[1], ss[1]};
}

/// The softmax_exp span of one tile shape with exp2 emulation kEmuRes of every kEmuFreq elements
/// (kernels/sm90/softmax.cuh exp_scores), alone and beside SS and RS wgmma, into `j`.
template <int kN, int kD, int kEmuFreq, int kEmuRes>
void emulated_exp(Report& rep, Json& j, int iters, int launches) {
  const auto alone = span_cycles<kN, kD, 0, 1, kEmuFreq, kEmuRes>(rep.clock(), iters, launches);
  const auto ss = span_cycles<kN, kD, 1, 1, kEmuFreq, kEmuRes>(rep.clock(), iters, launches);
  const auto rs = span_cycles<kN, kD, 2, 1, kEmuFreq, kEmuRes>(rep.clock(), iters, launches);
  j["n_block"] = kN;
  j["head_dim"] = kD;
  j["exp2_emulation"]["freq"] = kEmuFreq;
  j["exp2_emulation"]["res"] = kEmuRes;
  Json& x = j["spans"]["softmax_exp"];
  x["alone_cycles"] = alone[1];
  x["beside_wgmma_cycles"] = ss[1];
  x["beside_wgmma_rs_cycles"] = rs[1];
  x["slowdown_beside_wgmma"] = ss[1] / alone[1];
  x["tensor_duty_ss"] = ss[4];
  x["tensor_duty_rs"] = rs[4];
}

/// The rescale_o span of a tile's first KV block (kPackOnly: P packed, nothing rescaled, no vote),
/// alone and beside SS and RS wgmma, into `j` as "rescale_o".
template <int kN, int kD>
void first_block_pack(Report& rep, Json& j, int iters, int launches) {
  const auto alone = span_cycles<kN, kD, 0, 1, 0, 0, false, false, true>(rep.clock(), iters, launches);
  const auto ss = span_cycles<kN, kD, 1, 1, 0, 0, false, false, true>(rep.clock(), iters, launches);
  const auto rs = span_cycles<kN, kD, 2, 1, 0, 0, false, false, true>(rep.clock(), iters, launches);
  j["n_block"] = kN;
  j["head_dim"] = kD;
  j["first_block"] = true;
  Json& x = j["spans"]["rescale_o"];
  x["alone_cycles"] = alone[2];
  x["beside_wgmma_cycles"] = ss[2];
  x["beside_wgmma_rs_cycles"] = rs[2];
  x["tensor_duty_ss"] = ss[4];
  x["tensor_duty_rs"] = rs[4];
}

/// The row max of a KV block crossing the causal diagonal (kMask: mask_scores first, as the kernel's
/// masked steps; kConditional: with the conditional rescale's vote, as hd256's), alone and beside
/// SS and RS wgmma, into `j` as "softmax_max"; the same unmasked as "softmax_max_unmasked".
template <int kN, int kD, bool kConditional>
void masked_max(Report& rep, Json& j, int iters, int launches) {
  const auto alone = span_cycles<kN, kD, 0, 1, 0, 0, kConditional, true>(rep.clock(), iters, launches);
  const auto ss = span_cycles<kN, kD, 1, 1, 0, 0, kConditional, true>(rep.clock(), iters, launches);
  const auto rs = span_cycles<kN, kD, 2, 1, 0, 0, kConditional, true>(rep.clock(), iters, launches);
  const auto u_alone = span_cycles<kN, kD, 0, 1, 0, 0, kConditional>(rep.clock(), iters, launches);
  const auto u_ss = span_cycles<kN, kD, 1, 1, 0, 0, kConditional>(rep.clock(), iters, launches);
  const auto u_rs = span_cycles<kN, kD, 2, 1, 0, 0, kConditional>(rep.clock(), iters, launches);
  j["n_block"] = kN;
  j["head_dim"] = kD;
  j["masked"] = true;
  j["rescale"]["conditional"] = kConditional;
  Json& x = j["spans"]["softmax_max"];
  x["alone_cycles"] = alone[0];
  x["beside_wgmma_cycles"] = ss[0];
  x["beside_wgmma_rs_cycles"] = rs[0];
  x["tensor_duty_ss"] = ss[4];
  x["tensor_duty_rs"] = rs[4];
  Json& u = j["spans"]["softmax_max_unmasked"];
  u["alone_cycles"] = u_alone[0];
  u["beside_wgmma_cycles"] = u_ss[0];
  u["beside_wgmma_rs_cycles"] = u_rs[0];
  u["tensor_duty_ss"] = u_ss[4];
  u["tensor_duty_rs"] = u_rs[4];
}

/// The conditional rescale's spans of one tile shape (kConditional): the row max with its vote,
/// and the rescale_o span packing P only (no row's max grew past the threshold), alone and beside
/// SS and RS wgmma, into `j` as "softmax_max" and "pack_p".
template <int kN, int kD>
void conditional_rescale(Report& rep, Json& j, int iters, int launches) {
  const auto alone = span_cycles<kN, kD, 0, 1, 0, 0, true>(rep.clock(), iters, launches);
  const auto ss = span_cycles<kN, kD, 1, 1, 0, 0, true>(rep.clock(), iters, launches);
  const auto rs = span_cycles<kN, kD, 2, 1, 0, 0, true>(rep.clock(), iters, launches);
  j["n_block"] = kN;
  j["head_dim"] = kD;
  j["rescale"]["conditional"] = true;
  j["rescale"]["threshold_log2"] = kThresholdLog2;
  j["rescale"]["blocks_rescaled_share_alone_ss_rs"] = Json::array({alone[3], ss[3], rs[3]});
  const char* names[2] = {"softmax_max", "pack_p"};
  const int index[2] = {0, 2};
  for (int k = 0; k < 2; ++k) {
    Json& x = j["spans"][names[k]];
    x["alone_cycles"] = alone[index[k]];
    x["beside_wgmma_cycles"] = ss[index[k]];
    x["beside_wgmma_rs_cycles"] = rs[index[k]];
    x["slowdown_beside_wgmma"] = ss[index[k]] / alone[index[k]];
    x["tensor_duty_ss"] = ss[4];
    x["tensor_duty_rs"] = rs[4];
  }
}

void bench_softmax_block(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "kernels/sm90/softmax.cuh's row_max, exp_scores, and rescale + pack_p on the fragments of "
      "the kernel's tile shapes (hd64: n_block 128 and 176, hd128: n_block 128, hd256: n_block 64 and 80), one "
      "warp per SMSP (warpgroup 1), fresh scores each block; cycles between 32-bit clock reads "
      "around each span, as the traced kernel reads them; mean over the blocks, median over the 4 "
      "warps, median over 9 launches whose softmax warps start 4000 + 97 i cycles in. Alone "
      "(warpgroup 0 idle) and beside warpgroup 0 running back-to-back wgmma "
      "m64n128k16, SS and RS, on the same SMSPs. pair_*: two softmax warps per SMSP (warpgroups 1 "
      "and 2) running the same spans in step, alone and beside SS wgmma (at hd256 their fragments do "
      "not fit 168 registers: pair figures there include spills). final_o: kernels/sm90/softmax.cuh's write_o (the "
      "epilogue's first span) "
      "(row sums, O / sum to bf16 into the warpgroup's rows of a Q-sized SMEM buffer, async-proxy fence) on every "
      "consumer warpgroup of the tile's m_block at once (2: m_block 128 at every head_dim), fresh sums each time, "
      "cycles between 32-bit clock reads, median over the consumer warps and the launches; alone and beside SS / RS "
      "wgmma. \"conditional rescale\" shapes: row_max with the conditional rescale's warp vote (threshold 2^8, as "
      "the base schedule's hd256 instances) and the rescale_o span as the kernel runs it there, O rescaled only where "
      "the vote says so (here never after the first block: blocks_rescaled_share_alone_ss_rs), so that span packs P "
      "only (\"pack_p\"). \"masked\" shapes: the softmax_max span of a KV block crossing the causal diagonal "
      "(mask_scores, then row_max; the problem's seqlen and causal flag passed at run time, as the kernel's Params), "
      "and the same block unmasked. \"first block\" shapes: the rescale_o span of a tile's first KV block, which "
      "packs P and rescales nothing. tensor_duty_ss / _rs: the share of warpgroup 0's wgmma loop from each "
      "group's first wgmma to its completion, the tensor cores' duty the beside figures were timed at (the wait and "
      "re-issue between groups leave them idle the rest; softmax_duty: the slowdown grows linearly with the duty).");
  const int iters = rep.opt().quick ? 200 : 4000, launches = rep.opt().quick ? 1 : 9;
  Json& res = rep.results();
  res["launches"] = launches;
  Json& shapes = res["shapes"];
  // hd64 runs 128-row tiles since 2026-11-24 (192 rows before): 128 wide causal, 176 non-causal.
  shape<128, 64, 128>(rep, shapes["hd64 n_block 128"], iters, launches);
  shape<176, 64, 128>(rep, shapes["hd64 n_block 176"], iters, launches);
  const auto hd128 = shape<128, 128, 128>(rep, shapes["hd128 n_block 128"], iters, launches);
  // hd256 runs 64-wide K/V blocks on short sequences (fa3::kShortSeqlenK), 80 wide otherwise.
  shape<64, 256, 128>(rep, shapes["hd256 n_block 64"], iters, launches);
  shape<80, 256, 128>(rep, shapes["hd256 n_block 80"], iters, launches);
  // exp_scores with exp2 emulation (fa3_sm90 "exp2_emulation"): the softmax_exp span alone and
  // beside SS / RS wgmma, at hd64's two widths, where the MUFU is as busy as the tensor cores.
  emulated_exp<176, 64, 8, 1>(rep, shapes["hd64 n_block 176 exp2 emu 1 of 8"], iters, launches);
  emulated_exp<176, 64, 4, 1>(rep, shapes["hd64 n_block 176 exp2 emu 1 of 4"], iters, launches);
  emulated_exp<176, 64, 8, 3>(rep, shapes["hd64 n_block 176 exp2 emu 3 of 8"], iters, launches);
  emulated_exp<128, 64, 4, 1>(rep, shapes["hd64 n_block 128 exp2 emu 1 of 4"], iters, launches);
  // The conditional rescale (hd256's instances): the rescale_o span packs P only where no row's
  // max grew past the threshold, as at most KV blocks; at hd128 n_block 128 the same pack-only
  // span is every tile's first block at any head_dim.
  conditional_rescale<80, 256>(rep, shapes["hd256 n_block 80 conditional rescale"], iters, launches);
  conditional_rescale<64, 256>(rep, shapes["hd256 n_block 64 conditional rescale"], iters, launches);
  conditional_rescale<128, 128>(rep, shapes["hd128 n_block 128 conditional rescale"], iters, launches);
  // A KV block crossing the causal diagonal: the mask and the row max, with the base schedule's
  // rescale at each shape (hd256: conditional).
  masked_max<128, 128, false>(rep, shapes["hd128 n_block 128 masked"], iters, launches);
  masked_max<128, 64, false>(rep, shapes["hd64 n_block 128 masked"], iters, launches);
  masked_max<80, 256, true>(rep, shapes["hd256 n_block 80 masked conditional rescale"], iters, launches);
  masked_max<64, 256, true>(rep, shapes["hd256 n_block 64 masked conditional rescale"], iters, launches);
  // A tile's first KV block: its rescale_o span packs P only, with no vote to test.
  first_block_pack<128, 128>(rep, shapes["hd128 n_block 128 first block"], iters, launches);
  first_block_pack<80, 256>(rep, shapes["hd256 n_block 80 first block"], iters, launches);
  first_block_pack<64, 256>(rep, shapes["hd256 n_block 64 first block"], iters, launches);
  first_block_pack<176, 64>(rep, shapes["hd64 n_block 176 first block"], iters, launches);
  // A warp waiting in the kernels' wait loop on SMSP 0 (the load warp's place) beside one softmax
  // warp per SMSP; and how often that loop's try_wait returns while the phase is pending.
  beside_waiting_warp<128, 128>(rep, shapes["hd128 n_block 128 beside a waiting warp"], iters, launches);
  beside_waiting_warp<80, 256>(rep, shapes["hd256 n_block 80 beside a waiting warp"], iters, launches);
  beside_waiting_warp<128, 64>(rep, shapes["hd64 n_block 128 beside a waiting warp"], iters, launches);
  for (long long wait : {2000LL, 20000LL})
    res["try_wait_loops_per_kcycle_pending"][std::to_string(wait) + "_cycles"] = spin_loops_per_kcycle(wait, launches);
  res["softmax_exp_alone_cycles"] = hd128[0];
  res["softmax_exp_beside_wgmma_cycles"] = hd128[1];
}

/// The three softmax spans of one tile shape beside warpgroup 0's wgmma groups (kRs: RS, else SS)
/// with `gap_ns` of sleep after each group, into j["ss" | "rs"]["gap_<gap_ns>_ns"]: the spans'
/// cycles and the tensor cores' duty (the share of warpgroup 0's loop its groups ran).
template <int kN, int kD, bool kRs>
void duty_point(Report& rep, Json& j, int gap_ns, int iters, int launches) {
  const auto c = span_cycles<kN, kD, kRs ? 2 : 1>(rep.clock(), iters, launches, nullptr, gap_ns);
  Json& x = j[kRs ? "rs" : "ss"]["gap_" + std::to_string(gap_ns) + "_ns"];
  x["gap_ns"] = gap_ns;
  x["tensor_duty"] = c[4];
  x["softmax_max_cycles"] = c[0];
  x["softmax_exp_cycles"] = c[1];
  x["rescale_o_cycles"] = c[2];
}

/// One tile shape's softmax spans alone and beside SS wgmma at every gap of `gaps_ns`, and beside
/// RS wgmma at the first and a middle one, into `j`.
template <int kN, int kD>
void duty_shape(Report& rep, Json& j, const std::vector<int>& gaps_ns, int iters, int launches) {
  const auto alone = span_cycles<kN, kD, 0>(rep.clock(), iters, launches);
  j["n_block"] = kN;
  j["head_dim"] = kD;
  j["alone"]["softmax_max_cycles"] = alone[0];
  j["alone"]["softmax_exp_cycles"] = alone[1];
  j["alone"]["rescale_o_cycles"] = alone[2];
  for (int g : gaps_ns) duty_point<kN, kD, false>(rep, j, g, iters, launches);
  duty_point<kN, kD, true>(rep, j, gaps_ns.front(), iters, launches);
  duty_point<kN, kD, true>(rep, j, gaps_ns[gaps_ns.size() / 2], iters, launches);
}

void bench_softmax_duty(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "softmax_block's spans (kernels/sm90/softmax.cuh row_max, exp_scores, rescale + pack_p; one warp per SMSP, "
      "warpgroup 1; mean over the blocks, median over the 4 warps, median over the launches) beside warpgroup 0 "
      "issuing groups of 8 wgmma m64n128k16 (SS, and RS at two gaps), wait_group 0 after each, then every warp of "
      "it sleeping gap_ns (nanosleep, no instructions issued) before the next group: the tensor cores busy part of "
      "the time. tensor_duty: the share of warpgroup 0's loop from each group's first wgmma to its completion "
      "(thread 0's clock64), median over the launches. alone: warpgroup 0 idle.");
  const int iters = rep.opt().quick ? 200 : 4000, launches = rep.opt().quick ? 1 : 9;
  const std::vector<int> gaps = rep.opt().quick ? std::vector<int>{0, 400} : std::vector<int>{0, 100, 200, 400, 800, 1600};
  Json& res = rep.results();
  res["launches"] = launches;
  Json& shapes = res["shapes"];
  duty_shape<128, 128>(rep, shapes["hd128 n_block 128"], gaps, iters, launches);
  duty_shape<128, 64>(rep, shapes["hd64 n_block 128"], gaps, iters, launches);
  duty_shape<80, 256>(rep, shapes["hd256 n_block 80"], gaps, iters, launches);
  Json& half = shapes["hd128 n_block 128"]["ss"]["gap_400_ns"];
  res["hd128_softmax_exp_cycles_gap_400_ns"] = half["softmax_exp_cycles"];
  res["hd128_tensor_duty_gap_400_ns"] = half["tensor_duty"];
}

}  // namespace

std::vector<Benchmark> softmax_block_benchmarks() {
  return {{"softmax_block", "the SM90 kernel's softmax spans (hd128) timed alone and beside running wgmma",
           bench_softmax_block},
          {"softmax_duty", "the SM90 kernel's softmax spans beside wgmma that keeps the tensor cores busy part of the time",
           bench_softmax_duty}};
}

}  // namespace mb
