// The FA2-style kernel's own GEMM blocks on the CUDA cores (kernels/fa2/fa2_kernel.cuh: scores,
// the mma_qk span; pv_row over a warp's rows, the mma_pv span), timed with 1 to 4 warps on each
// SMSP running the same block at once, for the kernel's tile shapes (hd64: Br 64 Bc 64; hd128:
// Br 64 Bc 32).
//
// Why: the kernel runs 2 to 4 CTAs per SM (one warp of each per SMSP). Their warps share the
// SMSP's dispatch and pipes, and the blocks' instruction mix (about 3 integer instructions per
// FFMA in S = Q K^T: bf16 unpacking and address arithmetic) decides how much of the ALU pipe the
// warps together keep busy. The simulator's pipe sharing assumes they can keep it full; this
// measures the time each warp's block takes when k warps share.
#include "fa2/fa2_kernel.cuh"
#include "microbench.cuh"

namespace mb {
namespace {

/// The SMEM a launch needs: the Q tile [Br][D] and K and V tiles [Bc][D] (bf16, shared by every
/// warp: the tiles' bank pattern is the kernel's), and one [R][Bc] fp32 score tile per warp.
template <class T>
constexpr int block_smem(int warps) {
  return (T::kBr + 2 * T::kBc) * T::kHeadDim * 2 + warps * T::kRows * T::kBc * 4;
}

/// 4 x kPerSmsp warps (warp w on SMSP w % 4, rows (w % 4) x R of the Q tile, as warp w % 4 of a
/// kernel CTA) run `iters` blocks each: kPv false S = Q K^T (scores), true O += P V over the
/// warp's R rows (pv_row). Lane 0 writes the warp's clock64 span of the loop.
template <class T, int kPerSmsp, bool kPv>
__global__ void __launch_bounds__(128 * kPerSmsp, 1) fa2_block_kernel(int iters, WarpSpan* spans, BlockClock* clk,
                                                                      float* sink) {
  constexpr int D = T::kHeadDim, BC = T::kBc, R = T::kRows;
  extern __shared__ __align__(16) uint8_t smem[];
  auto* sq = reinterpret_cast<__nv_bfloat16*>(smem);
  auto* sk = sq + T::kBr * D;
  auto* sv = sk + BC * D;
  float* ss = reinterpret_cast<float*>(sv + BC * D);
  for (int i = threadIdx.x; i < (T::kBr + 2 * BC) * D; i += blockDim.x)
    sq[i] = __float2bfloat16(static_cast<float>(hash32(i) & 0xFF) * (1.0f / 256.0f) - 0.5f);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* sw = ss + warp * R * BC;
  for (int i = lane; i < R * BC; i += 32) sw[i] = static_cast<float>(hash32(i + 977) & 0xFF) * (1.0f / 256.0f);
  __syncthreads();
  float o[R][T::kOutPerLane];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int c = 0; c < T::kOutPerLane; ++c) o[r][c] = 0.f;
  if (threadIdx.x == 0) *clk = BlockClock{clock64(), 0, globaltimer(), 0, smid(), 0};
  const long long c0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    if constexpr (kPv) {
#pragma unroll
      for (int r = 0; r < R; ++r) attnsim::fa2::pv_row<T>(o[r], sw + r * BC, sv, lane);
    } else {
      attnsim::fa2::scores<T>(sq, (warp % 4) * R, sk, sw, lane, 0.125f);
    }
    __syncwarp();
  }
  const long long c1 = clock64();
  if (lane == 0) spans[warp] = WarpSpan{c0, c1};
  __syncthreads();
  if (threadIdx.x == 0) {
    clk->clk1 = clock64();
    clk->ns1 = globaltimer();
  }
  float x = sw[lane];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int c = 0; c < T::kOutPerLane; ++c) x += o[r][c];
  if (x == 1234567.0f) sink[threadIdx.x] = x;
}

/// Cycles per block of each warp, median over the warps; median over `launches` launches.
template <class T, int kPerSmsp, bool kPv>
double block_cycles(ClockMeter& clock, int iters, int launches) {
  auto kern = fa2_block_kernel<T, kPerSmsp, kPv>;
  constexpr int kWarps = 4 * kPerSmsp;
  const int smem = block_smem<T>(kWarps);
  allow_smem(kern, smem);
  DeviceBuffer<WarpSpan> spans(kWarps);
  DeviceBuffer<BlockClock> clk(1);
  DeviceBuffer<float> sink(32 * kWarps);
  std::vector<double> per_launch;
  for (int l = 0; l < launches; ++l) {
    kern<<<1, 32 * kWarps, smem>>>(iters, spans.get(), clk.get(), sink.get());
    MB_CHECK_LAUNCH("fa2_block_kernel");
    clock.add(clk.to_host(), 5000.0);
    std::vector<double> v;
    for (const WarpSpan& s : spans.to_host()) v.push_back(static_cast<double>(s.c1 - s.c0) / iters);
    per_launch.push_back(median(v));
  }
  return median(per_launch);
}

/// Both blocks of one tile shape with 1..4 warps per SMSP, into `j`.
template <class T>
void shape(Report& rep, Json& j, int iters, int launches) {
  j["head_dim"] = T::kHeadDim;
  j["br"] = T::kBr;
  j["bc"] = T::kBc;
  auto block = [&](const char* name, double one, double two, double three, double four) {
    Json& b = j["blocks"][name];
    const std::vector<double> t = {one, two, three, four};
    std::vector<double> ratio;
    for (double x : t) ratio.push_back(x / t[0]);
    b["cycles_by_warps_per_smsp"] = Json::array(t);
    b["time_over_alone"] = Json::array(ratio);
  };
  block("mma_qk", block_cycles<T, 1, false>(rep.clock(), iters, launches),
        block_cycles<T, 2, false>(rep.clock(), iters, launches), block_cycles<T, 3, false>(rep.clock(), iters, launches),
        block_cycles<T, 4, false>(rep.clock(), iters, launches));
  block("mma_pv", block_cycles<T, 1, true>(rep.clock(), iters, launches),
        block_cycles<T, 2, true>(rep.clock(), iters, launches), block_cycles<T, 3, true>(rep.clock(), iters, launches),
        block_cycles<T, 4, true>(rep.clock(), iters, launches));
}

void bench_fa2_block(Report& rep) {
  rep.set_method(
      "kernels/fa2/fa2_kernel.cuh's scores (S = Q K^T, the mma_qk span) and pv_row over a warp's "
      "16 rows (O += P V, the mma_pv span), compiled as in the kernel, on one CTA of 4 k warps (k = 1..4 "
      "warps per SMSP; warp w on SMSP w % 4, rows (w % 4) x 16 of a shared Q tile, K and V tiles shared, "
      "its own score tile), all running the same block back to back from the same start; cycles per block "
      "per warp from clock64 around the loop, median over the warps, median over the launches. "
      "time_over_alone[k - 1]: a warp's block time with k warps per SMSP over its time alone.");
  const int iters = rep.opt().quick ? 20 : 200, launches = rep.opt().quick ? 1 : 5;
  Json& res = rep.results();
  res["launches"] = launches;
  res["iterations"] = iters;
  Json& shapes = res["shapes"];
  shape<attnsim::fa2::Fa2Traits<64, 64, 64, false>>(rep, shapes["hd64 Br 64 Bc 64"], iters, launches);
  shape<attnsim::fa2::Fa2Traits<128, 64, 32, false>>(rep, shapes["hd128 Br 64 Bc 32"], iters, launches);
}

}  // namespace

std::vector<Benchmark> fa2_block_benchmarks() {
  return {{"fa2_block", "the FA2-style kernel's GEMM blocks with 1 to 4 warps per SMSP", bench_fa2_block}};
}

}  // namespace mb
