// How long a warp's own shared-memory accesses take while the SM's shared memory serves the
// tensor cores' operand reads (wgmma) and TMA's writes (bulk copies landing).
//
// Why: in the traced hd256 kernel without pingpong (H200, 2026-11-29; kernels/microbench/README.md,
// smem_beside_async) the warps' shared-memory work at a tile's end (mbarrier arrives and waits,
// the shared load after which the recorder reads the clock past a named barrier, O's stores) took
// 0.4-1.2 us while the other warpgroup's last PV read V from shared memory and the next tile's Q
// and K landed;
// the simulator charges shared memory only inside an MMA's own duration. Whether the load/store
// unit's shared-memory accesses wait behind those streams, and how long, decides whether the
// model must share the SM's shared-memory bandwidth among them. The hd128 write_o (O in its own
// buffer) too: the plain hd128 kernel's final_o runs about 1.5x the model's (ncu PC samples, H200,
// 2026-11-30); and the hd64 one, for the model's final_o at head_dim 64 (the ratios price the
// epilogue's O stores while the next tile's copies land: configs/costs/sm90_softmax.json).
// Since 2026-12-02 also a wait on an mbarrier phase that has completed, timed as the traced
// kernel times its K and V waits: in the traced hd128 kernel those take 66-110 cycles (10th-90th
// percentile) where mbarrier_ready measures 41 with nothing beside.
#include <array>
#include <cuda/ptx>
#include <type_traits>

#include "common/mbarrier.cuh"
#include "microbench.cuh"
#include "neighbour_work.cuh"
#include "sm90/softmax.cuh"
#include "wgmma_tiles.cuh"

namespace mb {
namespace {

constexpr int kRingStages = 2;
constexpr uint32_t kCopyBytes = 32768;            // one bulk copy: an hd256 K or V tile of 64 keys
constexpr int kWindowCopies = 128;                // 4 MB of global memory, L2-resident after a pass
constexpr int kChainWords = 1024;                 // the load chain's 4 KB
// write_o of one warpgroup: at hd256 into a V-sized stage (64-row chunks, as O staged in the V
// ring), at hd128 and hd64 into its 64 rows of a 128-row buffer (as O in its own buffer); at most
// 32 KB.
constexpr int kOBytes = 32768;
/// Rows per 64-column chunk of the O buffer write_o writes at head_dim kD (kernels/sm90/epilogue.cuh).
template <int kD>
constexpr int kOChunkRows = kD == 256 ? 64 : 128;
constexpr int kChainLoads = 32;                   // dependent loads per latency sample
constexpr int kDelayCycles = 4000;                // the streams run before the first sample
constexpr int kRingOffset = kWgmmaTileSmem - 1024;  // after the wgmma tiles (1024-aligned)
constexpr int kChainOffset = kRingOffset + kRingStages * static_cast<int>(kCopyBytes);
constexpr int kOOffset = kChainOffset + kChainWords * 4;
constexpr int kSmemBytes = kOOffset + kOBytes + 1024;
constexpr int kThreads = 288;  // warpgroup 0: wgmma; warpgroup 1: the probes; warp 8: TMA

/// What the tensor cores do meanwhile (warpgroup 0, wgmma_until): nothing, SS or RS wgmma
/// m64n128k16 back to back.
constexpr int kNoMma = 0, kSs = 1, kRs = 2;

/// Per probe warp (4..7), accumulated over `rounds`: cycles of kChainLoads dependent ld.shared,
/// cycles of the kernel's write_o at head_dim kD (O / sum to bf16, 128B swizzle, the async-proxy
/// fence), cycles of the warpgroup's named barrier right after it, the clock read
/// behind a shared load's issue as the traced kernel reads it, and cycles of the kernel's
/// wait_parity on a phase that completed before the loop, between the traced kernel's 32-bit clock
/// reads (kernels/common/mbarrier.cuh traced_wait).
struct ProbeCycles {
  long long load_chain, write_o, barrier, ready_wait;
};

/// One CTA: warpgroup 0 streams wgmma (kMma) until the probes are done; thread 256 (kTma) keeps
/// kRingStages bulk copies of kCopyBytes in flight from `window` (kWindowCopies copies, cycled);
/// warpgroup 1 waits kDelayCycles, then `rounds` times: a chain of kChainLoads dependent
/// ld.shared.u32 (each lane its own chain through 4 KB, conflict-free), write_o<kD>, bar.sync 2, 128.
template <int kMma, bool kTma, int kD>
__global__ void __launch_bounds__(kThreads, 1)
    smem_beside_kernel(int rounds, const uint8_t* window, ProbeCycles* out, BlockClock* clk, float* sink, int* err) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ volatile int stop;
  __shared__ int probes_done;
  __shared__ alignas(8) uint64_t full[kRingStages];
  __shared__ alignas(8) uint64_t ready;  // phase 0 completes here, before the probes
  if (threadIdx.x == 0) {
    stop = probes_done = 0;
    for (int s = 0; s < kRingStages; ++s) cuda::ptx::mbarrier_init(&full[s], 1);
    cuda::ptx::mbarrier_init(&ready, 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    attnsim::arrive(&ready);
  }
  uint8_t* base = fill_wgmma_tiles(smem_raw);  // ends with __syncthreads
  uint32_t* chain = reinterpret_cast<uint32_t*>(base + kChainOffset);
  for (int i = threadIdx.x; i < kChainWords; i += kThreads) chain[i] = ((i + 33) % kChainWords) * 4;
  __syncthreads();
  const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
  const int lane = threadIdx.x % 32;
  if (warp < 4) {
    if constexpr (kMma != kNoMma) wgmma_until<kMma == kRs>(base, stop, sink);
    return;
  }
  if (warp == 8) {
    if (kTma && lane == 0) {
      uint8_t* ring = base + kRingOffset;
      uint32_t bytes = kCopyBytes;  // the ptx wrappers take it by reference
      bool ok = true;
      uint32_t round = 0;
      for (int c = 0; ok && (round == 0 || !stop); ++round) {
        for (int s = 0; s < kRingStages; ++s, c = (c + 1) % kWindowCopies) {
          if (round > 0 && !(ok = wait_parity(&full[s], (round - 1) & 1))) break;
          cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                               &full[s], bytes);
          cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, ring + s * kCopyBytes,
                                   window + static_cast<size_t>(c) * kCopyBytes, bytes, &full[s]);
        }
      }
      for (int s = 0; s < kRingStages && ok; ++s) ok = wait_parity(&full[s], (round - 1) & 1);  // drain
      if (!ok) atomicExch(err, 1);
    }
    return;
  }
  // Warpgroup 1: the probes.
  float o[kD / 2];
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) o[i] = 1.0f + 0.001f * static_cast<float>((threadIdx.x + i) % 7);
  attnsim::sm90::RowStats st;
  const uint32_t chain0 = smem_u32(chain), o_base = smem_u32(base + kOOffset);
  const long long start = clock64();
  while (clock64() - start < kDelayCycles) {}
  if (threadIdx.x == 128) *clk = BlockClock{clock64(), 0, globaltimer(), 0, smid(), 0};
  ProbeCycles acc{0, 0, 0, 0};
  uint32_t at = static_cast<uint32_t>(lane) * 4;
#pragma unroll 1
  for (int r = 0; r < rounds; ++r) {
    uint32_t t0 = clock32();
#pragma unroll
    for (int k = 0; k < kChainLoads; ++k) asm volatile("ld.shared.u32 %0, [%1];" : "=r"(at) : "r"(chain0 + at) : "memory");
    // The clock read waits for the last load's value: a branch on it ends the basic block.
    if (at == 0xFFFFFFFFu) asm volatile("trap;");
    uint32_t t1 = clock32();
    acc.load_chain += t1 - t0;
    st.sum[0] = st.sum[1] = 1.0f + 0.01f * static_cast<float>(r & 3);
    t0 = clock32();
    attnsim::sm90::write_o<kD, kOChunkRows<kD>>(o_base, 0, warp % 4, lane, o, st);
    t1 = clock32();
    acc.write_o += t1 - t0;
    // As TraceRecorder::now_after_barrier: the barrier blocks the warp at the first memory
    // instruction after it, the clock is read right behind that load's issue.
    asm volatile("bar.sync 2, 128;" ::: "memory");
    uint32_t probe;
    asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(probe) : "r"(chain0) : "memory");
    const uint32_t t2 = clock32();
    acc.barrier += t2 - t1;
    at = (at + (probe & 4u)) % (kChainWords * 4);  // keeps the probe load live
    // A ready K or V stage as the consumers wait on it (traced_wait without the record).
    t0 = clock32();
    attnsim::wait_parity(&ready, 0);
    t1 = clock32();
    acc.ready_wait += t1 - t0;
  }
  if (lane == 0) {
    out[warp - 4] = acc;
    if (atomicAdd(&probes_done, 1) == 3) {
      clk->clk1 = clock64();
      clk->ns1 = globaltimer();
      stop = 1;
    }
  }
  float x = static_cast<float>(at);
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) x += o[i];
  if (x == 1234567.0f) sink[threadIdx.x] = x;
}

/// One condition's medians over the probe warps and launches, cycles per unit.
struct SmemProbe {
  double load_cycles = 0;     // per dependent ld.shared
  double write_o_cycles = 0;  // per write_o by the warpgroup (each warp's span)
  double barrier_cycles = 0;  // per named barrier after it, to the clock behind a shared load
  double ready_wait_cycles = 0;  // per wait on a completed mbarrier phase
};

/// Runs smem_beside_kernel<kMma, kTma, kD> `launches` times on one SM and returns its SmemProbe;
/// throws (check_err) if a bulk copy never completed.
template <int kMma, bool kTma, int kD>
SmemProbe probe(Report& rep, const DeviceBuffer<uint8_t>& window, int rounds, int launches) {
  auto kern = smem_beside_kernel<kMma, kTma, kD>;
  allow_smem(kern, kSmemBytes);
  DeviceBuffer<ProbeCycles> out(4);
  DeviceBuffer<BlockClock> clk(1);
  DeviceBuffer<float> sink(kThreads);
  DeviceBuffer<int> err(1);
  MB_CHECK(cudaMemset(err.get(), 0, sizeof(int)));
  std::vector<double> loads, writes, bars, waits;
  for (int i = 0; i < launches; ++i) {
    kern<<<1, kThreads, kSmemBytes>>>(rounds, window.get(), out.get(), clk.get(), sink.get(), err.get());
    MB_CHECK_LAUNCH("smem_beside_kernel");
    rep.clock().add(clk.to_host(), 5000.0);
    for (const ProbeCycles& p : out.to_host()) {
      loads.push_back(static_cast<double>(p.load_chain) / (static_cast<double>(rounds) * kChainLoads));
      writes.push_back(static_cast<double>(p.write_o) / rounds);
      bars.push_back(static_cast<double>(p.barrier) / rounds);
      waits.push_back(static_cast<double>(p.ready_wait) / rounds);
    }
  }
  check_err(err, "smem_beside_kernel (bulk copy ring timed out)");
  return {median(loads), median(writes), median(bars), median(waits)};
}

/// The benchmark: the six conditions (nothing, SS, RS, copies, SS + copies, RS + copies) into
/// rep's results.
void bench_smem_beside_async(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "One CTA on one SM. Warpgroup 0 issues wgmma m64n128k16 bf16 back to back (SS, or RS with A from registers; "
      "groups of 8, wait_group 0 after each) or nothing; thread 256 keeps 2 bulk copies (cp.async.bulk, 32 KB each, "
      "from a 4 MB L2-resident window, complete_tx on an mbarrier) in flight or nothing. Warpgroup 1, after 4000 "
      "cycles, repeats: 32 dependent ld.shared.u32 per lane (address chain, conflict-free) between 32-bit clock "
      "reads; kernels/sm90/softmax.cuh's write_o at head_dim 256 into 64-row chunks (32 KB per warpgroup, 128B "
      "swizzle, the async-proxy fence), between clock reads (and, in a second set of runs, at head_dim 128 into the "
      "warpgroup's 64 rows of a 128-row buffer, O's own buffer in the kernel: write_o_hd128_*; a third set at head_dim "
      "64 likewise: write_o_hd64_*); then bar.sync among its 4 warps, the clock read right "
      "behind a volatile ld.shared's issue as the traced kernel reads it after a named barrier; then the kernel's "
      "wait_parity (kernels/common/mbarrier.cuh) on an mbarrier phase completed before the loop, between 32-bit "
      "clock reads as the traced kernel times its K and V waits. Per condition: median over the 4 probe warps and the "
      "launches of cycles per load, per write_o, per barrier and per ready wait. *_over_idle: against nothing beside.");
  const int rounds = rep.opt().quick ? 100 : 2000, launches = rep.opt().quick ? 1 : 5;
  DeviceBuffer<uint8_t> window(static_cast<size_t>(kWindowCopies) * kCopyBytes);
  MB_CHECK(cudaMemset(window.get(), 0x3c, static_cast<size_t>(kWindowCopies) * kCopyBytes));
  Json& res = rep.results();
  res["rounds"] = rounds;
  res["launches"] = launches;
  struct Row {
    const char* name;
    SmemProbe r;
  };
  // head_dim 256 (O staged in a V stage) first, then 128 (O in its own buffer): each condition's
  // load chain and barrier are reported from the hd256 runs, as before 2026-11-30.
  auto conditions = [&](auto d) {
    constexpr int kD = decltype(d)::value;
    return std::array<Row, 6>{{{"idle", probe<kNoMma, false, kD>(rep, window, rounds, launches)},
                               {"beside_ss", probe<kSs, false, kD>(rep, window, rounds, launches)},
                               {"beside_rs", probe<kRs, false, kD>(rep, window, rounds, launches)},
                               {"beside_tma", probe<kNoMma, true, kD>(rep, window, rounds, launches)},
                               {"beside_ss_tma", probe<kSs, true, kD>(rep, window, rounds, launches)},
                               {"beside_rs_tma", probe<kRs, true, kD>(rep, window, rounds, launches)}}};
  };
  const auto rows = conditions(std::integral_constant<int, 256>{});
  const auto rows128 = conditions(std::integral_constant<int, 128>{});
  const auto rows64 = conditions(std::integral_constant<int, 64>{});
  const SmemProbe& idle = rows[0].r;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    Json& c = res["configs"][row.name];
    c["ld_shared_latency_cycles"] = row.r.load_cycles;
    c["write_o_hd256_cycles"] = row.r.write_o_cycles;
    c["barrier_after_write_o_cycles"] = row.r.barrier_cycles;
    c["mbarrier_ready_cycles"] = row.r.ready_wait_cycles;
    c["mbarrier_ready_over_idle"] = row.r.ready_wait_cycles / idle.ready_wait_cycles;
    c["ld_shared_latency_over_idle"] = row.r.load_cycles / idle.load_cycles;
    c["write_o_over_idle"] = row.r.write_o_cycles / idle.write_o_cycles;
    c["write_o_hd128_cycles"] = rows128[i].r.write_o_cycles;
    c["write_o_hd128_over_idle"] = rows128[i].r.write_o_cycles / rows128[0].r.write_o_cycles;
    c["write_o_hd64_cycles"] = rows64[i].r.write_o_cycles;
    c["write_o_hd64_over_idle"] = rows64[i].r.write_o_cycles / rows64[0].r.write_o_cycles;
  }
  res["ld_shared_latency_idle_cycles"] = idle.load_cycles;
  res["ld_shared_latency_beside_ss_tma_cycles"] = rows[4].r.load_cycles;
  res["mbarrier_ready_idle_cycles"] = idle.ready_wait_cycles;
  res["mbarrier_ready_beside_ss_cycles"] = rows[1].r.ready_wait_cycles;
  res["mbarrier_ready_beside_ss_tma_cycles"] = rows[4].r.ready_wait_cycles;
  res["write_o_hd256_idle_cycles"] = idle.write_o_cycles;
  res["write_o_hd256_beside_ss_tma_cycles"] = rows[4].r.write_o_cycles;
  res["write_o_hd128_idle_cycles"] = rows128[0].r.write_o_cycles;
  res["write_o_hd128_beside_ss_tma_cycles"] = rows128[4].r.write_o_cycles;
  res["write_o_hd64_idle_cycles"] = rows64[0].r.write_o_cycles;
  res["write_o_hd64_beside_ss_tma_cycles"] = rows64[4].r.write_o_cycles;
}

}  // namespace

std::vector<Benchmark> smem_beside_async_benchmarks() {
  return {{"smem_beside_async",
           "a warp's ld.shared latency and the epilogue's O stores while wgmma and TMA stream through shared memory",
           bench_smem_beside_async}};
}

}  // namespace mb
