// warp_guard: what a named barrier costs a warp when ptxas cannot prove the loop around it
// warp-uniform. The SM90 kernel's dynamic tile scheduler reads a tile's KV block count from its
// tile slot in shared memory into per-lane registers; ptxas then guards the KV loop's aligned
// bar.sync (the pingpong turn) with YIELD and WARPSYNC.ALL, which the static scheduler's loop
// (counts from kernel parameters) does not have. ncu's source counters put 2.5% of the dynamic
// hd128 kernel's stall samples on that WARPSYNC.ALL (stall reason branch_resolving). This
// benchmark runs the same loop both ways and reports the difference per iteration. (H200,
// 2026-11-30: none, -1 to -5 cycles: WARPSYNC.ALL on a converged warp is free here, so those
// samples are not its own cost; kernels/microbench/README.md.)
#include <cuda/ptx>

#include "microbench.cuh"

namespace mb {
namespace {

/// `n` dependent FFMAs on x (4-cycle latency each: a chain the warp waits on, like a softmax).
template <int n>
__device__ __forceinline__ void ffma_chain(float& x) {
#pragma unroll
  for (int i = 0; i < n; ++i) asm volatile("fma.rn.f32 %0, %0, 0f3F800347, 0f3F000000;" : "+f"(x));
}

/// Warpgroups 0 and 1 (warps 0-7) take turns as FA3's pingpong does: warpgroup g waits on named
/// barrier 1 + g, runs a turn of kTurn dependent FFMAs, arrives on the other's barrier, then runs
/// kWork dependent FFMAs (its softmax), `iters` times. With kGroups == 0 one warp runs
/// kWork FFMAs and a bar.sync of its own 32 threads per iteration. kLane: every lane reads the trip
/// count from shared memory (ptxas cannot prove it warp-uniform, as the dynamic scheduler's tile
/// slot), else it comes from the kernel parameter. With `spin`, warp 8 spins on an mbarrier
/// try_wait until warp 0 is done (a load warp waiting for a free stage: its SYNCS/BRA loop).
/// Warp 0 writes its clock64 span.
template <bool kLane, int kGroups, int kTurn, int kWork>
__global__ void warp_guard_kernel(int iters, int spin, BlockClock* out, float* sink, int* err) {
  __shared__ int trip[288];
  __shared__ uint64_t done;
  // Warp-uniform as ptxas sees it (a shuffle from lane 0), as the kernel's warp roles: so that only
  // the trip count decides whether the loop is guarded.
  const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x >> 5), 0);
  trip[threadIdx.x] = iters;
  if (threadIdx.x == 0) cuda::ptx::mbarrier_init(&done, 1);
  __syncthreads();
  float x = static_cast<float>(threadIdx.x) * 1e-3f;
  if (warp == 8) {  // the spinner
    if (spin && !wait_parity(&done, 0)) atomicExch(err, 1);
    return;
  }
  const int n = kLane ? trip[threadIdx.x] : iters;
  const unsigned long long n0 = globaltimer();
  const long long t0 = clock64();
  if constexpr (kGroups == 0) {
    for (int i = 0; i < n; ++i) {
      ffma_chain<kWork>(x);
      asm volatile("bar.sync 1, 32;" ::: "memory");
    }
  } else {
    const int g = warp / 4;
    if (g == 1) asm volatile("bar.arrive 1, 256;" ::: "memory");  // warpgroup 0 takes the first turn
    for (int i = 0; i < n; ++i) {
      asm volatile("bar.sync %0, 256;" ::"r"(1 + g) : "memory");
      ffma_chain<kTurn>(x);
      asm volatile("bar.arrive %0, 256;" ::"r"(2 - g) : "memory");
      ffma_chain<kWork>(x);
    }
    if (g == 0) asm volatile("bar.sync 1, 256;" ::: "memory");  // warpgroup 1's last arrive
  }
  const long long t1 = clock64();
  const unsigned long long n1 = globaltimer();
  if (threadIdx.x == 0) {
    out[0] = BlockClock{t0, t1, n0, n1, smid(), 0};
    (void)cuda::ptx::mbarrier_arrive(&done);
  }
  sink[threadIdx.x] = x;
}

struct Variant {
  const char* name;
  void (*uniform)(int, int, BlockClock*, float*, int*);
  void (*lane)(int, int, BlockClock*, float*, int*);
  int threads, spin;
};

#define MB_GUARD_VARIANT(name, groups, turn, work, spin)                                             \
  Variant {                                                                                          \
    name, warp_guard_kernel<false, groups, turn, work>, warp_guard_kernel<true, groups, turn, work>, \
        (spin)     ? 288                                                                             \
        : (groups) ? 256                                                                             \
                   : 32,                                                                             \
        spin                                                                                         \
  }

void bench_warp_guard(Report& rep) {
  rep.set_method(
      "One block on one SM. pingpong: warpgroups 0 and 1 take turns over named barriers (bar.sync own, "
      "a turn of T dependent FFMAs, bar.arrive the other's, W dependent FFMAs), as FA3's pingpong; "
      "alone: one warp, W dependent FFMAs and bar.sync 1, 32 per iteration. The loop's trip count from "
      "the kernel parameter (uniform) or read by every lane from shared memory (lane: ptxas cannot prove "
      "it warp-uniform and puts a WARPSYNC.ALL in the loop, as in the dynamic scheduler's KV loop, where "
      "it sits right before the pingpong bar.sync; check with cuobjdump). _spin: warp 8 spins on an "
      "mbarrier try_wait meanwhile (a waiting load warp's SYNCS/BRA loop). clock64 of warp 0 over the "
      "loop / iterations; median of 5 launches; guard_cycles = lane - uniform.");
  const int iters = rep.opt().quick ? 500 : 5000;
  DeviceBuffer<BlockClock> out(1);
  DeviceBuffer<float> sink(288);
  DeviceBuffer<int> err(1);
  Json& cfg = rep.results()["configs"];
  const Variant variants[] = {
      MB_GUARD_VARIANT("alone_w128", 0, 0, 128, 0),
      MB_GUARD_VARIANT("alone_w512", 0, 0, 512, 0),
      MB_GUARD_VARIANT("pingpong_t16_w128", 2, 16, 128, 0),
      MB_GUARD_VARIANT("pingpong_t16_w512", 2, 16, 512, 0),
      MB_GUARD_VARIANT("pingpong_t64_w384", 2, 64, 384, 0),
      MB_GUARD_VARIANT("pingpong_t64_w384_spin", 2, 64, 384, 1),
      MB_GUARD_VARIANT("pingpong_t16_w512_spin", 2, 16, 512, 1),
  };
  double main_guard = 0;
  for (const Variant& v : variants) {
    Json j = Json::object();
    double cycles[2] = {0, 0};  // uniform, lane
    for (int lane = 0; lane < 2; ++lane) {
      auto* kernel = lane ? v.lane : v.uniform;
      std::vector<double> per_iter;
      for (int rep_i = 0; rep_i < 6; ++rep_i) {
        err.zero();
        kernel<<<1, v.threads>>>(iters, v.spin, out.get(), sink.get(), err.get());
        MB_CHECK_LAUNCH(v.name);
        if (err.to_host()[0]) throw std::runtime_error(std::string("warp_guard ") + v.name + ": a wait timed out");
        const auto rec = out.to_host();
        if (rep_i == 0) continue;  // warm-up
        rep.clock().add(rec);
        per_iter.push_back(static_cast<double>(rec[0].clk1 - rec[0].clk0) / iters);
      }
      cycles[lane] = median(per_iter);
      j[lane ? "lane_cycles_per_iteration" : "uniform_cycles_per_iteration"] = cycles[lane];
    }
    const double guard = cycles[1] - cycles[0];
    j["guard_cycles"] = guard;
    cfg[v.name] = j;
    if (std::string(v.name) == "pingpong_t64_w384_spin") main_guard = guard;
  }
  rep.results()["warpsync_guard_cycles"] = main_guard;
}

}  // namespace

std::vector<Benchmark> warp_guard_benchmarks() {
  return {{"warp_guard", "a named barrier in a loop ptxas cannot prove warp-uniform (WARPSYNC.ALL guard)",
           bench_warp_guard}};
}

}  // namespace mb
