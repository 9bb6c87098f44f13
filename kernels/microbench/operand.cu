// The mma.sync operand path of the SMEM-staged kernel families (kernels/blackflash: ldmatrix of
// Q, K, P and V from 128B-swizzled tiles; P written back with st.shared, then
// fence.proxy.async before the TMA that overwrites it):
// - ldmatrix.x4 (and .trans) throughput per SM, conflict-free rows, 8 and 32 warps;
// - ldmatrix.x4 and ld.shared.u32 latency: one warp, each load's address is the previous load's
//   result (SMEM holds the row addresses), so the chain has no other instruction;
// - the cost of fence.proxy.async.shared::cta right after a st.shared: one warp, cycles per
//   (store + fence) minus cycles per store alone, and the same with 8 warps fencing at once
//   (ptxas emits MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S for the fence).
#include <algorithm>

#include "microbench.cuh"

namespace mb {
namespace {

constexpr int kLdsmUnroll = 8;  // loads per loop iteration, 4 KB apart

/// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16 at `addr` (this lane's row address).
template <bool kTrans>
__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t (&r)[4]) {
  if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/// Every warp issues kLdsmUnroll ldmatrix.x4 per iteration; lane l supplies row l of the warp's
/// four 8 x 8 matrices, 16 B apart, so a matrix is 128 contiguous bytes (conflict-free, as the
/// 128B swizzle makes each of the kernels' ldmatrix). The address alternates between two 2 KB
/// halves with the iteration's parity, so that ptxas cannot hoist the loads out of the loop.
template <bool kTrans>
__global__ void __launch_bounds__(1024)
    ldsm_rate_kernel(int iters, WarpSpan* spans, BlockClock* blocks, uint32_t* sink) {
  extern __shared__ uint32_t words[];
  for (int i = threadIdx.x; i < 16384; i += blockDim.x) words[i] = hash32(i);
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const uint32_t base = smem_u32(words) + (warp % 4) * 512 + lane * 16;
  uint32_t acc = 0;
  block_clock_begin(blocks);
  const long long c0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    const uint32_t half = (it & 1) * 2048;
#pragma unroll
    for (int u = 0; u < kLdsmUnroll; ++u) {
      uint32_t r[4];
      ldsm_x4<kTrans>(base + half + u * 4096, r);
      acc ^= r[0] ^ r[1] ^ r[2] ^ r[3];
    }
  }
  const long long c1 = clock64();
  if (lane == 0) spans[blockIdx.x * 32 + warp] = WarpSpan{c0, c1};
  __syncthreads();
  block_clock_end(blocks);
  if (acc == 0x9e3779b9u) sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

/// One warp: `steps` dependent loads. kKind 0: ld.shared.u32 whose word holds its own address;
/// 1: ldmatrix.x4 whose first result register holds this lane's row address (word k of the
/// first matrix = base + 16 k: lane t receives word t of matrix 0, and supplies row t).
template <int kKind>
__global__ void load_chain_kernel(int steps, long long* cycles, uint32_t* sink) {
  __shared__ __align__(128) uint32_t words[512];
  const int lane = threadIdx.x & 31;
  const uint32_t base = smem_u32(words);
  for (int k = lane; k < 512; k += 32) words[k] = kKind == 0 ? base + 4 * k : base + 16 * (k % 32);
  __syncwarp();
  uint32_t a = kKind == 0 ? base + 4 * lane : base + 16 * lane;
  const long long c0 = clock64();
#pragma unroll 1
  for (int s = 0; s < steps; s += 8) {
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      if constexpr (kKind == 0) {
        asm volatile("ld.volatile.shared.u32 %0, [%0];" : "+r"(a));
      } else {
        uint32_t r[4];
        ldsm_x4<false>(a, r);
        a = r[0];
      }
    }
  }
  const long long c1 = clock64();
  if (lane == 0) cycles[0] = c1 - c0;
  if (a == 1u) sink[lane] = a;
}

/// Each of the block's warps stores one word per lane to shared memory per step and, when
/// kFence, orders it for the async proxy (fence.proxy.async.shared::cta, what a generic-proxy
/// write of P needs before a TMA overwrites the tile). The stored value depends on the step, so
/// the stores stay in the loop.
template <bool kFence>
__global__ void fence_kernel(int steps, long long* cycles) {
  __shared__ __align__(128) uint32_t words[32 * 32];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const uint32_t addr = smem_u32(words + 32 * warp + lane);
  __syncthreads();
  const long long c0 = clock64();
#pragma unroll 1
  for (int s = 0; s < steps; ++s) {
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(s) : "memory");
    if constexpr (kFence) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  const long long c1 = clock64();
  if (lane == 0) cycles[warp] = c1 - c0;
}

template <bool kTrans>
double ldsm_rate(Report& rep, int warps, Json& out, const char* name) {
  const int grid = rep.dev().sm_count;
  const double bytes_per_iter = kLdsmUnroll * warps * 512.0;  // an x4 moves 512 B per warp
  const int iters = std::max(8, static_cast<int>((rep.opt().quick ? 4e5 : 4e6) * 128.0 / bytes_per_iter));
  DeviceBuffer<WarpSpan> spans(static_cast<size_t>(grid) * 32);
  DeviceBuffer<BlockClock> blocks(grid);
  DeviceBuffer<uint32_t> sink(static_cast<size_t>(grid) * warps * 32);
  allow_smem(ldsm_rate_kernel<kTrans>, kOneBlockPerSmSmem);
  ldsm_rate_kernel<kTrans>
      <<<grid, warps * 32, kOneBlockPerSmSmem>>>(std::max(1, iters / 8), spans.get(), blocks.get(), sink.get());
  MB_CHECK_LAUNCH("ldsm_rate_kernel warm-up");
  ldsm_rate_kernel<kTrans><<<grid, warps * 32, kOneBlockPerSmSmem>>>(iters, spans.get(), blocks.get(), sink.get());
  MB_CHECK_LAUNCH("ldsm_rate_kernel");
  rep.clock().add(blocks.to_host());
  const std::vector<double> rates = per_sm_rates(spans.to_host(), grid, 32, warps, bytes_per_iter * iters);
  Json j = Json::object();
  j["warps_per_sm"] = warps;
  j["bytes_per_clk_sm"] = median(rates);
  j["bytes_per_clk_sm_min_over_sms"] = vmin(rates);
  j["ldmatrix_x4_per_clk_sm"] = median(rates) / 512.0;
  out[name] = j;
  return median(rates);
}

template <int kKind>
double load_chain(int steps) {
  DeviceBuffer<long long> cycles(1);
  DeviceBuffer<uint32_t> sink(32);
  load_chain_kernel<kKind><<<1, 32>>>(steps / 8, cycles.get(), sink.get());
  MB_CHECK_LAUNCH("load_chain_kernel warm-up");
  load_chain_kernel<kKind><<<1, 32>>>(steps, cycles.get(), sink.get());
  MB_CHECK_LAUNCH("load_chain_kernel");
  return static_cast<double>(cycles.to_host()[0]) / steps;
}

/// Cycles per step of fence_kernel<kFence> with `warps` warps (the slowest warp).
template <bool kFence>
double fence_step(int warps, int steps) {
  DeviceBuffer<long long> cycles(warps);
  fence_kernel<kFence><<<1, 32 * warps>>>(steps / 8, cycles.get());
  MB_CHECK_LAUNCH("fence_kernel warm-up");
  fence_kernel<kFence><<<1, 32 * warps>>>(steps, cycles.get());
  MB_CHECK_LAUNCH("fence_kernel");
  const auto c = cycles.to_host();
  return static_cast<double>(*std::max_element(c.begin(), c.end())) / steps;
}

void bench_operand(Report& rep) {
  rep.set_method(
      "ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16, conflict-free rows (a matrix = 128 contiguous B), 8 per "
      "loop iteration, 8 or 32 warps, one block per SM on all SMs: bytes per SM clock from clock64 spans, median "
      "over SMs. Latency: one warp, a chain of loads each addressed by the previous one's result (ld.shared.u32 "
      "of a word holding its own address; ldmatrix.x4 whose first result register is the lane's row address), "
      "cycles per load. fence.proxy.async.shared::cta: cycles per (st.shared.b32 + fence) minus cycles per "
      "st.shared.b32 alone, 1 and 8 warps of one CTA (the slowest warp); in both loops the next step's value "
      "overwrites the store's source register, so each step already waits for the store (about 39 cycles on an "
      "H100), and the difference is the fence's cost right after a store, as where P is written over K.");
  const bool quick = rep.opt().quick;
  Json& cfg = rep.results()["configs"];
  const double x4_8 = ldsm_rate<false>(rep, 8, cfg, "x4_8_warps");
  ldsm_rate<false>(rep, 32, cfg, "x4_32_warps");
  ldsm_rate<true>(rep, 8, cfg, "x4_trans_8_warps");
  ldsm_rate<true>(rep, 32, cfg, "x4_trans_32_warps");
  const int steps = quick ? 20000 : 200000;
  const double lds = load_chain<0>(steps), ldsm = load_chain<1>(steps);
  cfg["lds_chain"] = Json::object();
  cfg["lds_chain"]["cycles_per_load"] = lds;
  cfg["ldsm_x4_chain"] = Json::object();
  cfg["ldsm_x4_chain"]["cycles_per_load"] = ldsm;
  const int fsteps = quick ? 20000 : 100000;
  double fence1 = 0, fence8 = 0;
  for (int w : {1, 8}) {
    const double plain = fence_step<false>(w, fsteps), fenced = fence_step<true>(w, fsteps);
    Json j = Json::object();
    j["warps"] = w;
    j["cycles_per_store"] = plain;
    j["cycles_per_store_and_fence"] = fenced;
    j["fence_cycles"] = fenced - plain;
    cfg[w == 1 ? "fence_1_warp" : "fence_8_warps"] = j;
    (w == 1 ? fence1 : fence8) = fenced - plain;
  }
  rep.results()["ldmatrix_bytes_per_clk"] = x4_8;
  rep.results()["lds_latency"] = lds;
  rep.results()["ldmatrix_latency"] = ldsm;
  rep.results()["fence_proxy_async_cycles"] = fence1;
  rep.results()["fence_proxy_async_cycles_8_warps"] = fence8;
}

}  // namespace

std::vector<Benchmark> operand_benchmarks() {
  return {
      {"operand",
       "mma.sync operand path: ldmatrix.x4 throughput and latency, ld.shared latency, fence.proxy.async cost",
       bench_operand},
  };
}

}  // namespace mb
