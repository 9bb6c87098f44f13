// Instruction fetch: how fast a warp issues straight-line code as the loop that holds it grows
// past what the SM's instruction caches keep. Long unrolled GEMM code executed once per KV block
// (the FA2-style kernel's O += P V is ~40 KB of SASS) is issued as fast as it can be fetched.
#include <algorithm>
#include <vector>

#include "microbench.cuh"

namespace mb {
namespace {

constexpr float kMagic = 1234567.0f;  // no chain reaches it: guards the sink store
constexpr int kMaxWarps = 8;          // warps per block at most

/// Eight independent FFMA chains of one thread: straight-line code of 16 bytes per FFMA.
struct FfmaChains {
  float f[8];
  __device__ __forceinline__ FfmaChains() {
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = static_cast<float>(threadIdx.x + i) * 1e-3f;
  }
  /// kInstr FFMAs, fully unrolled.
  template <int kInstr>
  __device__ __forceinline__ void run(float a, float b) {
#pragma unroll
    for (int i = 0; i < kInstr; ++i) f[i % 8] = fmaf(f[i % 8], a, b);
  }
  /// Keeps the chains alive: a store no chain can reach.
  __device__ __forceinline__ void sink(float* out) const {
    float s = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) s += f[i];
    if (s == kMagic) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  }
};

/// kInstr independent FFMAs (8 chains, 16 bytes of SASS each) per pass of a loop, `iters` passes,
/// in every warp whose bit is set in `active`.
template <int kInstr>
__global__ void __launch_bounds__(1024) ifetch_kernel(int iters, unsigned long long active, float a, float b,
                                                      WarpSpan* spans, BlockClock* blocks, float* sink) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  FfmaChains c;
  __syncthreads();
  block_clock_begin(blocks);
  if ((active >> warp) & 1ull) {
    const long long c0 = clock64();
#pragma unroll 1
    for (int it = 0; it < iters; ++it) c.run<kInstr>(a, b);
    const long long c1 = clock64();
    if (lane == 0) spans[blockIdx.x * kMaxWarps + warp] = WarpSpan{c0, c1};
  }
  __syncthreads();
  block_clock_end(blocks);
  c.sink(sink);
}

/// Each pass: the warp spins `spin` cycles on clock64 (a few instructions of cached code), then
/// issues kInstr independent FFMAs of straight-line code that the pass before pushed out of the
/// instruction cache. While the warp spins, the fetch unit may bring in the code that follows.
template <int kInstr>
__global__ void __launch_bounds__(1024) ifetch_runahead_kernel(int iters, long long spin, float a, float b,
                                                               WarpSpan* spans, BlockClock* blocks, float* sink) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  FfmaChains c;
  __syncthreads();
  block_clock_begin(blocks);
  const long long c0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    const long long s0 = clock64();
    while (clock64() - s0 < spin) {}
    c.run<kInstr>(a, b);
  }
  const long long c1 = clock64();
  if (lane == 0) spans[blockIdx.x * kMaxWarps + warp] = WarpSpan{c0, c1};
  __syncthreads();
  block_clock_end(blocks);
  c.sink(sink);
}

struct WarpShape {
  const char* name;
  int block_warps;
  unsigned long long mask;
};
const WarpShape kWarpShapes[] = {{"1_warp", 1, 0x1ull}, {"4_warps_spread", 4, 0xFull}, {"8_warps", 8, 0xFFull}};

/// Cycles per instruction per warp of one loop size and warp shape: median over SMs of the
/// active warps' mean clock64 span / instructions.
template <int kInstr>
double run_size(Report& rep, const WarpShape& s, Json& out) {
  const int grid = rep.dev().sm_count;
  const int iters = std::max(4, static_cast<int>((rep.opt().quick ? 4e5 : 4e6) / kInstr));
  DeviceBuffer<WarpSpan> spans(static_cast<size_t>(grid) * kMaxWarps);
  DeviceBuffer<BlockClock> blocks(grid);
  DeviceBuffer<float> sink(static_cast<size_t>(grid) * s.block_warps * 32);
  allow_smem(ifetch_kernel<kInstr>, kOneBlockPerSmSmem);
  for (int pass = 0; pass < 2; ++pass) {  // warm-up, then measured
    ifetch_kernel<kInstr><<<grid, s.block_warps * 32, kOneBlockPerSmSmem>>>(pass ? iters : 2, s.mask, 0.999f, 1e-3f,
                                                                            spans.get(), blocks.get(), sink.get());
    MB_CHECK_LAUNCH("ifetch_kernel");
  }
  const auto hs = spans.to_host();
  rep.clock().add(blocks.to_host());
  std::vector<double> per_sm;
  for (int b = 0; b < grid; ++b) {
    double sum = 0;
    int n = 0;
    for (int w = 0; w < s.block_warps; ++w)
      if ((s.mask >> w) & 1ull) {
        const WarpSpan& sp = hs[static_cast<size_t>(b) * kMaxWarps + w];
        sum += static_cast<double>(sp.c1 - sp.c0);
        ++n;
      }
    per_sm.push_back(sum / n / (static_cast<double>(iters) * kInstr));
  }
  const double cpi = median(per_sm);
  Json j = Json::object();
  j["instructions_per_pass"] = kInstr;
  j["code_bytes_per_pass"] = kInstr * 16;
  j["passes"] = iters;
  j["cycles_per_instruction_per_warp"] = cpi;
  j["cycles_per_instruction_per_warp_max_over_sms"] = vmax(per_sm);
  out[std::to_string(kInstr * 16 / 1024) + "KB"] = j;
  return cpi;
}

/// Cycles per pass of ifetch_runahead_kernel<4096> (64 KB of FFMAs) after `spin` cycles of
/// spinning, 4 warps (one per SMSP) per SM: median over SMs of the warps' mean.
double runahead_pass_cycles(Report& rep, long long spin) {
  constexpr int kInstr = 4096, kWarps = 4;
  const int grid = rep.dev().sm_count;
  const int iters = std::max(4, static_cast<int>((rep.opt().quick ? 4e5 : 4e6) / (kInstr * 2.5 + spin)));
  DeviceBuffer<WarpSpan> spans(static_cast<size_t>(grid) * kMaxWarps);
  DeviceBuffer<BlockClock> blocks(grid);
  DeviceBuffer<float> sink(static_cast<size_t>(grid) * kWarps * 32);
  allow_smem(ifetch_runahead_kernel<kInstr>, kOneBlockPerSmSmem);
  for (int pass = 0; pass < 2; ++pass) {
    ifetch_runahead_kernel<kInstr><<<grid, kWarps * 32, kOneBlockPerSmSmem>>>(pass ? iters : 2, spin, 0.999f, 1e-3f,
                                                                              spans.get(), blocks.get(), sink.get());
    MB_CHECK_LAUNCH("ifetch_runahead_kernel");
  }
  const auto hs = spans.to_host();
  rep.clock().add(blocks.to_host());
  std::vector<double> per_sm;
  for (int b = 0; b < grid; ++b) {
    double sum = 0;
    for (int w = 0; w < kWarps; ++w) {
      const WarpSpan& sp = hs[static_cast<size_t>(b) * kMaxWarps + w];
      sum += static_cast<double>(sp.c1 - sp.c0) / iters;
    }
    per_sm.push_back(sum / kWarps);
  }
  return median(per_sm);
}

void bench_ifetch(Report& rep) {
  rep.set_method(
      "A loop whose body is N independent FFMAs (8 chains, fully unrolled: 16 bytes of SASS each, ptxas stall count "
      "1), N = 256 .. 8192 (4 to 128 KB of code per pass), run by 1 warp per SM, 4 warps (one per SMSP) or 8 (two "
      "per SMSP), one block per SM on all SMs; cycles per instruction per warp = clock64 span / instructions, median "
      "over SMs. Where the body fits the SMSP's instruction cache a lone warp issues one FFMA per cycle; beyond it "
      "the body streams from the next cache level every pass. Run-ahead: 4 warps (one per SMSP) alternate a clock64 "
      "spin of S cycles (S = 0 .. 8000) with 4096 FFMAs (64 KB); the cycles a pass saves against S plus the pass "
      "without spin, at the streaming rate, give how many bytes the fetch unit brought in ahead of issue.");
  Json& cfgs = rep.results()["configs"];
  double stream = 0;
  int cached_bytes = 0;
  for (const WarpShape& s : kWarpShapes) {
    Json& out = cfgs[s.name];
    const std::vector<std::pair<int, double>> cpi = {
        {256, run_size<256>(rep, s, out)},   {512, run_size<512>(rep, s, out)},   {1024, run_size<1024>(rep, s, out)},
        {2048, run_size<2048>(rep, s, out)}, {4096, run_size<4096>(rep, s, out)}, {8192, run_size<8192>(rep, s, out)}};
    if (std::string(s.name) == "4_warps_spread") {
      // The code an SMSP keeps cached: the largest body issued nearer the small bodies' rate than
      // the largest body's (the streaming rate beyond the cache).
      stream = cpi.back().second;
      for (const auto& [n, c] : cpi)
        if (c < 0.5 * (cpi.front().second + stream)) cached_bytes = n * 16;
    }
  }
  rep.results()["icache_bytes"] = cached_bytes;
  rep.results()["ifetch_cycles_per_instruction"] = stream;
  // Run-ahead: how much of the streamed code the fetch unit brings in while the warp waits. The
  // cycles a pass saves against spin + the pass without spinning, converted to bytes at the
  // streaming rate; the most it saves over the spins is how far fetch runs ahead of issue.
  Json& ra = rep.results()["runahead"];
  const double base = runahead_pass_cycles(rep, 0);
  double ahead = 0;
  for (long long spin : {250LL, 500LL, 1000LL, 2000LL, 4000LL, 8000LL}) {
    const double c = runahead_pass_cycles(rep, spin);
    const double saved = base + static_cast<double>(spin) - c;
    Json j = Json::object();
    j["pass_cycles"] = c;
    j["saved_cycles"] = saved;
    j["bytes_ahead"] = stream > 0 ? saved / stream * 16 : 0.0;
    ra["spin_" + std::to_string(spin)] = j;
    ahead = std::max(ahead, stream > 0 ? saved / stream * 16 : 0.0);
  }
  ra["pass_cycles_no_spin"] = base;
  rep.results()["ifetch_runahead_bytes"] = ahead;
}

}  // namespace

std::vector<Benchmark> ifetch_benchmarks() {
  return {{"ifetch",
           "issue rate of straight-line code vs loop size: the instruction cache and the fetch rate beyond it",
           bench_ifetch}};
}

}  // namespace mb
