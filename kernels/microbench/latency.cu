// Latency and issue-cost benchmarks: dependent chains of single instructions (FFMA, FADD, FMUL,
// FMNMX, MUFU.EX2, SHFL.BFLY, F2FP bf16x2 pack) on one warp; the issue cost of back-to-back
// wgmma.mma_async and of wgmma.wait_group on finished groups; mbarrier.try_wait.parity on a
// phase that has already completed.
//
// The chains are written so that ptxas cannot shorten them (every step reads the previous
// result and a run-time operand, no algebraic identity removes a step); the SASS of each
// kernel is checked on the GPU machine (cuobjdump -sass; kernels/microbench/README.md).
#include "microbench.cuh"

#include <cuda/ptx>

#include <algorithm>
#include <cmath>

#include "common/wgmma_sync.cuh"
#include "wgmma_ops.cuh"
#include "wgmma_tiles.cuh"

namespace mb {
namespace {

// --- dependent instruction chains ----------------------------------------------------------------

/// Run-time operands (kernel parameters), so that no step can be folded.
struct ChainArgs {
  float x0;  // chain start
  float a;   // FFMA multiplier (0.999) / FMUL factor (-1)
  float b;   // FFMA and FADD addend
  float c;   // FMNMX other operand (-0.5)
};

enum class ChainOp : int { Ffma, Fadd, Fmul, Fmnmx, Mufu, Shfl, F2fp };

/// One chain step; the result feeds the next step.
template <ChainOp kOp>
__device__ __forceinline__ float chain_step(float x, const ChainArgs& p, int u) {
  float y;
  if constexpr (kOp == ChainOp::Ffma) {
    asm volatile("fma.rn.f32 %0, %1, %2, %3;" : "=f"(y) : "f"(x), "f"(p.a), "f"(p.b));  // FFMA
  } else if constexpr (kOp == ChainOp::Fadd) {
    asm volatile("sub.rn.f32 %0, %1, %2;" : "=f"(y) : "f"(p.b), "f"(x));  // FADD y = b - x
  } else if constexpr (kOp == ChainOp::Fmul) {
    asm volatile("mul.rn.f32 %0, %1, %2;" : "=f"(y) : "f"(x), "f"(p.a));  // FMUL, a = -1 at run time
  } else if constexpr (kOp == ChainOp::Fmnmx) {
    // max(-x, c): FMNMX with a negated operand; max(x, c) repeated would be idempotent.
    asm volatile("{\n.reg .f32 t;\nneg.f32 t, %1;\nmax.f32 %0, t, %2;\n}" : "=f"(y) : "f"(x), "f"(p.c));
  } else if constexpr (kOp == ChainOp::Mufu) {
    // ex2(-x): stays in [0.5, 1]; the ftz form is one MUFU.EX2 (negation folded into the operand).
    asm volatile("{\n.reg .f32 t;\nneg.f32 t, %1;\nex2.approx.ftz.f32 %0, t;\n}" : "=f"(y) : "f"(x));
  } else if constexpr (kOp == ChainOp::Shfl) {
    const int lane_mask = 1 << (u % 5);
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(y) : "f"(x), "r"(lane_mask));
  } else {  // F2fp: the packed pair read back as a float (its high half is the bf16 of x) -> pack again
    uint32_t r;
    asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(x), "f"(p.b));
    y = __uint_as_float(r);
  }
  return y;
}

constexpr int kChainSteps = 128;  // unrolled steps per loop iteration (3 loop instructions per 128)

/// One warp runs `iters` x kChainSteps dependent steps twice (the first pass warms the
/// instruction cache); lane 0 records the second pass's clock64 and %globaltimer span.
template <ChainOp kOp>
__global__ void __launch_bounds__(32) latency_chain_kernel(ChainArgs p, int iters, BlockClock* out, float* sink) {
  float x = p.x0 + (threadIdx.x & 31) * 1e-3f;
  long long t0 = 0, t1 = 0;
  unsigned long long n0 = 0, n1 = 0;
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
    __syncwarp();
    n0 = globaltimer();
    t0 = clock64();
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
#pragma unroll
      for (int u = 0; u < kChainSteps; ++u) x = chain_step<kOp>(x, p, u);
    }
    t1 = clock64();
    n1 = globaltimer();
  }
  if (threadIdx.x == 0) out[0] = BlockClock{t0, t1, n0, n1, smid(), 0};
  if (x == 1234567.0f) sink[threadIdx.x] = x;
}

struct ChainCase {
  const char* name;
  const char* sass;  // the instruction the chain should consist of
  ChainOp op;
};

template <ChainOp kOp>
double run_chain(Report& rep, const ChainArgs& p, int iters) {
  DeviceBuffer<BlockClock> out(1);
  DeviceBuffer<float> sink(32);
  latency_chain_kernel<kOp><<<1, 32>>>(p, iters, out.get(), sink.get());
  MB_CHECK_LAUNCH("latency_chain_kernel");
  const auto rec = out.to_host();
  rep.clock().add(rec, 5000.0);
  return static_cast<double>(rec[0].clk1 - rec[0].clk0) / (static_cast<double>(iters) * kChainSteps);
}

void bench_latency_chains(Report& rep) {
  rep.set_method(
      "One warp (one block on one SM), a dependent chain of one instruction: 128 steps unrolled "
      "per loop iteration, iters iterations, run twice (the first pass warms the instruction "
      "cache); cycles per step = clock64 span of the second pass / steps (3 loop instructions "
      "per 128 steps are included: under 1% for the 4-cycle ops). Steps: FFMA x = x*a + b; FADD "
      "x = b - x; FMUL x = x*a (a = -1); FMNMX x = max(-x, c); MUFU.EX2 x = ex2(-x); SHFL.BFLY "
      "x = shfl.bfly(x, 1 << (step % 5)); F2FP x = cvt.rn.bf16x2.f32(x, b) read back as a float "
      "(no conversion instruction between steps). Operands are kernel parameters, so ptxas "
      "cannot fold a step; the SASS of each kernel is checked for an unbroken chain of that "
      "instruction.");
  const int iters = rep.opt().quick ? 16 : 256;
  const ChainArgs p{0.75f, 0.999f, 0.001f, -0.5f};
  ChainArgs pm = p;
  pm.a = -1.0f;  // FMUL by -1: |x| constant
  Json& res = rep.results();
  Json& ch = res["chains"];
  auto put = [&](const char* name, const char* sass, double cyc) {
    Json j = Json::object();
    j["sass"] = sass;
    j["steps"] = static_cast<long long>(iters) * kChainSteps;
    j["cycles_per_step"] = cyc;
    ch[name] = j;
    return cyc;
  };
  const double ffma = put("ffma", "FFMA", run_chain<ChainOp::Ffma>(rep, p, iters));
  const double fadd = put("fadd", "FADD", run_chain<ChainOp::Fadd>(rep, p, iters));
  const double fmul = put("fmul", "FMUL", run_chain<ChainOp::Fmul>(rep, pm, iters));
  const double fmnmx = put("fmnmx", "FMNMX", run_chain<ChainOp::Fmnmx>(rep, p, iters));
  const double mufu = put("mufu_ex2", "MUFU.EX2", run_chain<ChainOp::Mufu>(rep, p, iters));
  const double shfl = put("shfl_bfly", "SHFL.BFLY", run_chain<ChainOp::Shfl>(rep, p, iters));
  const double f2fp = put("f2fp_bf16_pack", "F2FP.BF16.F32.PACK_AB", run_chain<ChainOp::F2fp>(rep, p, iters));
  res["fma_latency"] = ffma;
  res["fadd_latency"] = fadd;
  res["fmul_latency"] = fmul;
  res["alu_latency"] = fmnmx;
  res["mufu_latency"] = mufu;
  res["shfl_latency"] = shfl;
  res["f2fp_latency"] = f2fp;
}

// --- wgmma issue cost ----------------------------------------------------------------------------
using attnsim::hopper::smem_desc;
using attnsim::hopper::fence_regs;
using attnsim::hopper::Wgmma;
using attnsim::hopper::wgmma_commit;
using attnsim::hopper::wgmma_fence;
using attnsim::hopper::wgmma_wait;


constexpr int kIssueSmem = kWgmmaTileSmem;

/// One warpgroup: per rep, after the previous group has finished (wait_group 0), wgmma.fence,
/// clock64, K wgmma m64nNk16 SS into one accumulator, clock64, commit, wait_group 0. K = 0
/// times the two clock64 reads alone. kKstep: each wgmma gets its own k-step descriptors, as
/// the k-steps of one GEMM (ptxas then recomputes each descriptor on the uniform datapath
/// between the HGMMAs); otherwise all use the same descriptors and the HGMMAs are back to back
/// in the SASS (the instruction's own issue cost).
template <int N, int K, bool kKstep>
__global__ void __launch_bounds__(128, 1) wgmma_issue_kernel(int reps, long long* out, float* sink) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* base = fill_wgmma_tiles(smem_raw);
  uint64_t da[4], db[4];
  kstep_descs(base, da, db);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.0f;
#pragma unroll 1
  for (int r = 0; r < reps; ++r) {
    fence_regs(d);
    wgmma_fence();
    const long long t0 = clock64();
#pragma unroll
    for (int k = 0; k < K; ++k) Wgmma<N>::ss(d, da[kKstep ? (k & 3) : 0], db[kKstep ? (k & 3) : 0], 1);
    const long long t1 = clock64();
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(d);
    if (threadIdx.x == 0) out[r] = t1 - t0;
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == 1234567.0f) sink[threadIdx.x] = s;
}

/// wgmma.wait_group 0 on a group that finished long ago (one wgmma, commit, ~4000 cycles of
/// spinning on clock64, then clock64 / wait_group 0 / clock64), and right after that once more
/// with nothing outstanding. out[3r..3r+2]: finished-group wait, empty wait, clock64 pair.
template <int N>
__global__ void __launch_bounds__(128, 1) wgmma_wait_ready_kernel(int reps, long long* out, float* sink) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* base = fill_wgmma_tiles(smem_raw);
  const uint32_t a0 = smem_u32(base), b0 = a0 + 8192;
  const uint64_t da = smem_desc(a0, 16, 1024, 1), db = smem_desc(b0, 16, 1024, 1);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.0f;
#pragma unroll 1
  for (int r = 0; r < reps; ++r) {
    fence_regs(d);
    wgmma_fence();
    Wgmma<N>::ss(d, da, db, 1);
    wgmma_commit();
    const long long s = clock64();
    while (clock64() - s < 4000) {
    }
    const long long t0 = clock64();
    wgmma_wait<0>();
    const long long t1 = clock64();
    wgmma_wait<0>();
    const long long t2 = clock64();
    const long long t3 = clock64();
    fence_regs(d);
    if (threadIdx.x == 0) {
      out[3 * r] = t1 - t0;
      out[3 * r + 1] = t2 - t1;
      out[3 * r + 2] = t3 - t2;
    }
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == 1234567.0f) sink[threadIdx.x] = s;
}

/// Median over reps (the first 8 dropped) of kernel<N, K, kKstep>'s per-rep cycles.
template <int N, int K, bool kKstep = false>
double issue_cycles(int reps) {
  auto kern = wgmma_issue_kernel<N, K, kKstep>;
  allow_smem(kern, kIssueSmem);
  DeviceBuffer<long long> out(reps);
  DeviceBuffer<float> sink(128);
  kern<<<1, 128, kIssueSmem>>>(reps, out.get(), sink.get());
  MB_CHECK_LAUNCH("wgmma_issue_kernel");
  const auto h = out.to_host();
  return median(std::vector<double>(h.begin() + 8, h.end()));
}

template <int N, bool kKstep = false>
double issue_for_n(Json& out, int reps) {
  const double pair = issue_cycles<N, 0>(reps);
  const double t[5] = {issue_cycles<N, 1, kKstep>(reps) - pair, issue_cycles<N, 2, kKstep>(reps) - pair,
                       issue_cycles<N, 3, kKstep>(reps) - pair, issue_cycles<N, 4, kKstep>(reps) - pair,
                       issue_cycles<N, 8, kKstep>(reps) - pair};
  const int ks[5] = {1, 2, 3, 4, 8};
  Json j = Json::object();
  j["clock64_pair_cycles"] = pair;
  for (int i = 0; i < 5; ++i) j["issue_" + std::to_string(ks[i]) + "_cycles"] = t[i];
  auto [a, b] = fit_line({1, 2, 3, 4}, {t[0], t[1], t[2], t[3]});
  j["fit_k1_4_cycles_per_wgmma"] = b;
  j["fit_k1_4_intercept_cycles"] = a;
  j["k4_to_k8_cycles_per_wgmma"] = (t[4] - t[3]) / 4;
  j["pipe_cycles_per_wgmma_at_4096_flop_per_clk"] = 2.0 * 64 * N * 16 / 4096.0;
  out["n" + std::to_string(N) + (kKstep ? "_kstep_descriptors" : "")] = j;
  return b;
}

template <int N>
void wait_ready_for_n(Json& out, int reps, double* finished, double* empty) {
  auto kern = wgmma_wait_ready_kernel<N>;
  allow_smem(kern, kIssueSmem);
  DeviceBuffer<long long> dev_out(3 * reps);
  DeviceBuffer<float> sink(128);
  kern<<<1, 128, kIssueSmem>>>(reps, dev_out.get(), sink.get());
  MB_CHECK_LAUNCH("wgmma_wait_ready_kernel");
  const auto h = dev_out.to_host();
  std::vector<double> f, e, p;
  for (int r = 8; r < reps; ++r) {
    f.push_back(static_cast<double>(h[3 * r]));
    e.push_back(static_cast<double>(h[3 * r + 1]));
    p.push_back(static_cast<double>(h[3 * r + 2]));
  }
  const double pair = median(p);
  Json j = Json::object();
  j["clock64_pair_cycles"] = pair;
  j["wait_finished_group_cycles"] = median(f) - pair;
  j["wait_finished_group_cycles_min"] = vmin(f) - pair;
  j["wait_nothing_outstanding_cycles"] = median(e) - pair;
  out["n" + std::to_string(N)] = j;
  *finished = median(f) - pair;
  *empty = median(e) - pair;
}

void bench_wgmma_issue(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "One warpgroup on one SM. Issue: per rep, after wait_group 0 (tensor core idle), "
      "wgmma.fence, clock64, K back-to-back wgmma.mma_async m64nNk16 f32.bf16 SS (128B swizzle, "
      "one accumulator, the same descriptors, so that the HGMMAs are adjacent in the SASS), "
      "clock64, then commit + wait_group 0 outside the span; median of the reps minus the two "
      "clock64 reads (K = 0). cycles per wgmma = slope over K = 1..4 (the issue cost while the "
      "tensor core does not back-press; K = 8 shows where the queue fills). n128_kstep_descriptors: "
      "the same with each wgmma on its own k-step descriptors, which ptxas recomputes on the "
      "uniform datapath between the HGMMAs (as in a GEMM's k loop). wait_ready: one wgmma + "
      "commit, ~4000 cycles of spinning, then clock64 / wait_group 0 / clock64, minus a clock64 pair; also a second "
      "wait_group 0 with nothing outstanding.");
  const int reps = rep.opt().quick ? 24 : 136;
  Json& res = rep.results();
  Json& iss = res["issue"];
  issue_for_n<64>(iss, reps);
  const double n128 = issue_for_n<128>(iss, reps);
  issue_for_n<256>(iss, reps);
  issue_for_n<128, true>(iss, reps);
  Json& wr = res["wait_ready"];
  double fin = 0, emp = 0, f2 = 0, e2 = 0;
  wait_ready_for_n<128>(wr, reps, &fin, &emp);
  wait_ready_for_n<256>(wr, reps, &f2, &e2);
  res["wgmma_issue_cycles"] = n128;
  res["wgmma_wait_ready_cycles"] = fin;
  res["wgmma_wait_nothing_outstanding_cycles"] = emp;
}

// --- mbarrier.try_wait on a completed phase -------------------------------------------------------

/// `lanes` threads (1 or 32 of warp 0): after phase 0 of an arrival-count-1 mbarrier has
/// completed, per rep: clock64, 32 back-to-back `while (!try_wait.parity(bar, 0))` loops
/// (each branch depends on its own try_wait), clock64; and one such wait between two clock64
/// reads, and a bare clock64 pair. out[3r..3r+2].
__global__ void mbarrier_ready_kernel(int reps, int lanes, long long* out, BlockClock* clk) {
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(&bar, 1);
    (void)cuda::ptx::mbarrier_arrive(&bar);  // phase 0 completes
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) >= lanes) return;
  const unsigned long long n0 = globaltimer();
  const long long c0 = clock64();
#pragma unroll 1
  for (int r = 0; r < reps; ++r) {
    const long long t0 = clock64();
#pragma unroll
    for (int k = 0; k < 32; ++k)
      while (!cuda::ptx::mbarrier_try_wait_parity(&bar, 0u)) {
      }
    const long long t1 = clock64();
    while (!cuda::ptx::mbarrier_try_wait_parity(&bar, 0u)) {
    }
    const long long t2 = clock64();
    const long long t3 = clock64();
    if (threadIdx.x == 0) {
      out[3 * r] = t1 - t0;
      out[3 * r + 1] = t2 - t1;
      out[3 * r + 2] = t3 - t2;
    }
  }
  const long long c1 = clock64();
  const unsigned long long n1 = globaltimer();
  if (threadIdx.x == 0) clk[0] = BlockClock{c0, c1, n0, n1, smid(), 0};
}

/// The kernel's situation: warp 4 (warpgroup 1, all 32 lanes) waits on an mbarrier phase that
/// completed ~3000 cycles earlier, by a plain arrive (kTma false) or by a 1 KB cp.async.bulk
/// with complete_tx (kTma: as a K/V stage fills), while warpgroup 0 idles (kMma 0) or streams
/// wgmma m64n128k16 SS (1) / RS (2) on the SM's tensor cores. Per rep: (arrive or expect_tx +
/// copy), spin 3000 cycles, clock64, `while (!try_wait.parity)`, clock64, clock64:
/// out[2r..2r+1] = wait, clock64 pair. The last rep stops warpgroup 0.
template <int kMma, bool kTma>
__global__ void __launch_bounds__(256, 1)
    mbarrier_ready_busy_kernel(int reps, const uint8_t* src, long long* out, float* sink) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ volatile int stop;
  __shared__ uint64_t bar;
  __shared__ alignas(128) uint8_t dst[1024];
  if (threadIdx.x == 0) {
    stop = 0;
    cuda::ptx::mbarrier_init(&bar, 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  const uint8_t* base = fill_wgmma_tiles(smem_raw);  // ends with __syncthreads
  const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
  if (warp < 4) {
    if constexpr (kMma != 0) wgmma_until<kMma == 2>(base, stop, sink);
    return;
  }
  if (warp != 4) return;
  const long long s0 = clock64();
  while (clock64() - s0 < 4000) {  // the tensor cores busy first
  }
#pragma unroll 1
  for (int r = 0; r < reps; ++r) {
    if (threadIdx.x == 128) {
      if constexpr (kTma) {
        cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             &bar, 1024u);
        cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, src, 1024u, &bar);
      } else {
        (void)cuda::ptx::mbarrier_arrive(&bar);
      }
    }
    const long long s = clock64();
    while (clock64() - s < 3000) {}
    const uint32_t parity = r & 1;
    const long long t0 = clock64();
    while (!cuda::ptx::mbarrier_try_wait_parity(&bar, parity)) {}
    const long long t1 = clock64();
    const long long t2 = clock64();
    if (threadIdx.x == 128) {
      out[2 * r] = t1 - t0;
      out[2 * r + 1] = t2 - t1;
    }
    __syncwarp();
  }
  if (threadIdx.x == 128) stop = 1;
}

/// Median ready-wait cycles (wait minus a clock64 pair; first 8 reps dropped) of one configuration.
template <int kMma, bool kTma>
double ready_busy_cycles(int reps, const uint8_t* src) {
  auto kern = mbarrier_ready_busy_kernel<kMma, kTma>;
  allow_smem(kern, kWgmmaTileSmem);
  DeviceBuffer<long long> out(2 * reps);
  DeviceBuffer<float> sink(256);
  kern<<<1, 256, kWgmmaTileSmem>>>(reps, src, out.get(), sink.get());
  MB_CHECK_LAUNCH("mbarrier_ready_busy_kernel");
  const auto h = out.to_host();
  std::vector<double> w, pair;
  for (int r = 8; r < reps; ++r)
    w.push_back(static_cast<double>(h[2 * r])), pair.push_back(static_cast<double>(h[2 * r + 1]));
  return median(w) - median(pair);
}

void bench_mbarrier_ready(Report& rep) {
  rep.set_method(
      "mbarrier.try_wait.parity on a phase that has already completed (arrival count 1, one "
      "arrive before the loop). 1 lane or a full warp: clock64 around 32 back-to-back "
      "`while (!try_wait.parity(bar, 0))` loops (each loop's branch waits for its own "
      "try_wait), / 32; and one such wait between two clock64 reads minus a clock64 pair. "
      "Median over reps (first 8 dropped). single_wait_beside: one full-warp wait (warp 4) on a phase completed "
      "3000 cycles earlier by a plain arrive or by a 1 KB cp.async.bulk with complete_tx, while warpgroup 0 idles or "
      "streams wgmma m64n128k16 SS / RS (groups of 8, wait_group 0), minus a clock64 pair; median over 504 reps.");
  const int reps = rep.opt().quick ? 64 : 1024;
  DeviceBuffer<long long> out(3 * reps);
  DeviceBuffer<BlockClock> clk(1);
  Json& res = rep.results();
  Json& cfg = res["configs"];
  double main_value = 0;
  for (int lanes : {1, 32}) {
    mbarrier_ready_kernel<<<1, 32>>>(reps, lanes, out.get(), clk.get());
    MB_CHECK_LAUNCH("mbarrier_ready_kernel");
    const auto h = out.to_host();
    rep.clock().add(clk.to_host(), 5000.0);
    std::vector<double> run, one, pair;
    for (int r = 8; r < reps; ++r) {
      run.push_back(static_cast<double>(h[3 * r]) / 32.0);
      one.push_back(static_cast<double>(h[3 * r + 1]));
      pair.push_back(static_cast<double>(h[3 * r + 2]));
    }
    Json j = Json::object();
    j["lanes"] = lanes;
    j["cycles_per_wait_back_to_back"] = median(run);
    j["single_wait_cycles"] = median(one) - median(pair);
    j["clock64_pair_cycles"] = median(pair);
    cfg[lanes == 1 ? "one_lane" : "full_warp"] = j;
    if (lanes == 32) main_value = median(run);
  }
  res["mbarrier_ready_cycles"] = main_value;
  // As the kernel's consumers wait: the phase completed by a plain arrive or by a TMA copy, the
  // tensor cores idle or streaming wgmma from another warpgroup.
  DeviceBuffer<uint8_t> src(1024);
  MB_CHECK(cudaMemset(src.get(), 0, 1024));
  const int busy_reps = rep.opt().quick ? 64 : 512;
  Json& b = res["single_wait_beside"];
  b["arrive_idle"] = ready_busy_cycles<0, false>(busy_reps, src.get());
  b["arrive_wgmma_ss"] = ready_busy_cycles<1, false>(busy_reps, src.get());
  b["arrive_wgmma_rs"] = ready_busy_cycles<2, false>(busy_reps, src.get());
  b["tma_idle"] = ready_busy_cycles<0, true>(busy_reps, src.get());
  b["tma_wgmma_ss"] = ready_busy_cycles<1, true>(busy_reps, src.get());
  b["tma_wgmma_rs"] = ready_busy_cycles<2, true>(busy_reps, src.get());
}

/// One warp spins ~`cycles`: the wgmma_issue kernels are too short for %globaltimer, so the
/// file header's measured clock comes from this spin.
__global__ void spin_kernel(long long cycles, BlockClock* out) {
  const unsigned long long n0 = globaltimer();
  const long long c0 = clock64();
  while (clock64() - c0 < cycles) {
  }
  const long long c1 = clock64();
  const unsigned long long n1 = globaltimer();
  if (threadIdx.x == 0) out[0] = BlockClock{c0, c1, n0, n1, smid(), 0};
}

// --- CUDA-core pipes while the tensor cores run wgmma -------------------------------------------

/// Warpgroup 0 issues back-to-back wgmma m64n128k16 (kMma 1: SS, both operands in SMEM; 2: RS, A
/// from registers; 0: none) until warpgroup 1 is done; warpgroup 1 (one warp per SMSP) times
/// `iters` x 8 steps of kChains independent kOp chains (8: throughput bound; 1: one dependent chain,
/// latency bound, each step waiting out the one before: the warp issues at its latency's pace).
template <ChainOp kOp, int kMma, int kChains = 8>
__global__ void __launch_bounds__(256, 1)
    pipes_under_mma_kernel(ChainArgs p, int iters, long long* out, float* sink, unsigned long long* duty) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ volatile int stop;
  if (threadIdx.x == 0) stop = 0;
  uint8_t* base = fill_wgmma_tiles(smem_raw);  // ends with __syncthreads
  const int warp = threadIdx.x / 32;
  if (warp < 4) {
    if constexpr (kMma != 0) wgmma_until<kMma == 2>(base, stop, sink, 0, duty);
    return;
  }
  // Let the tensor cores get busy first.
  const long long start = clock64();
  while (clock64() - start < 4000) {
  }
  float x[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) x[c] = p.x0 + 0.01f * c + 0.001f * (threadIdx.x % 32);
  const long long t0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < 8; ++u)
#pragma unroll
      for (int c = 0; c < kChains; ++c) x[c] = chain_step<kOp>(x[c], p, u);
  }
  const long long t1 = clock64();
  if (threadIdx.x % 32 == 0) out[warp - 4] = t1 - t0;
  if (threadIdx.x == 128) stop = 1;
  float s = 0;
#pragma unroll
  for (int c = 0; c < 8; ++c) s += x[c];
  if (s == 1234567.0f) sink[threadIdx.x] = s;
}

/// Lane-ops per clock of one warp running kOp chains beside warpgroup 0's kMma wgmmas (median over
/// the four warps, each on its own SMSP); `duty` (optional): the tensor cores' duty meanwhile, the
/// share of warpgroup 0's loop from each group's first wgmma to its completion (wgmma_until).
template <ChainOp kOp, int kMma, int kChains = 8>
double pipe_rate_under_mma(const ChainArgs& p, int iters, double* duty = nullptr) {
  auto kern = pipes_under_mma_kernel<kOp, kMma, kChains>;
  allow_smem(kern, kIssueSmem);
  DeviceBuffer<long long> out(4);
  DeviceBuffer<float> sink(256);
  DeviceBuffer<unsigned long long> busy(2);
  MB_CHECK(cudaMemset(busy.get(), 0, 2 * sizeof(unsigned long long)));
  kern<<<1, 256, kIssueSmem>>>(p, iters, out.get(), sink.get(), busy.get());
  MB_CHECK_LAUNCH("pipes_under_mma_kernel");
  if (duty) {
    const auto b = busy.to_host();
    *duty = b[1] > 0 ? static_cast<double>(b[0]) / static_cast<double>(b[1]) : 0.0;
  }
  const auto h = out.to_host();
  std::vector<double> rate;
  for (long long c : h) rate.push_back(8.0 * kChains * 32 * iters / static_cast<double>(c));
  return median(rate);
}

void bench_pipes_under_mma(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "One CTA: warpgroup 0 issues back-to-back wgmma m64n128k16 bf16 (8 per commit group, wait_group 0 "
      "between groups) with the accumulator in registers, SS (A and B in SMEM) or RS (A in registers), or "
      "nothing; warpgroup 1 (one warp per SMSP) times 64 x iters steps of 8 independent FFMA / FMNMX / "
      "MUFU.EX2 chains with clock64. Rate = lane-ops per clock of that warp (median of the 4 warps); "
      "ratio = rate beside wgmma / rate alone: how much the SMSP's CUDA-core pipes slow while its tensor "
      "core runs (register-file ports shared with the accumulators and A fragments). tensor_duty_*: the share of "
      "warpgroup 0's loop from each group's first wgmma to its completion; ratio_*_full_duty: the ratio while the "
      "tensor core runs, 1 / (1 + (1 / ratio - 1) / duty) (softmax_duty: a slowdown grows linearly with the duty).");
  const ChainArgs p{0.75f, 0.999f, 0.0001f, -0.5f};
  const int iters = rep.opt().quick ? 64 : 2048;
  Json& res = rep.results();
  // The wgmma loop keeps the tensor cores busy only part of the time (the wait and re-issue between
  // groups; softmax_duty: a block's slowdown grows linearly with that duty): ratio_*_full_duty is
  // the rate while the tensor core runs, alone + (beside - alone) / duty in time per lane-op.
  double duty_ss = 0, duty_rs = 0;
  auto one = [&](const char* name, auto alone_f, auto ss_f, auto rs_f) {
    const double alone = alone_f(), ss = ss_f(), rs = rs_f();
    Json& c = res["configs"][name];
    c["alone_lanes_per_clk"] = alone;
    c["beside_ss_lanes_per_clk"] = ss;
    c["beside_rs_lanes_per_clk"] = rs;
    c["ratio_ss"] = ss / alone;
    c["ratio_rs"] = rs / alone;
    c["tensor_duty_ss"] = duty_ss;
    c["tensor_duty_rs"] = duty_rs;
    auto full = [](double ratio, double duty) { return duty > 0 ? 1 / (1 + (1 / ratio - 1) / duty) : ratio; };
    c["ratio_ss_full_duty"] = full(ss / alone, duty_ss);
    c["ratio_rs_full_duty"] = full(rs / alone, duty_rs);
    return std::pair{ss / alone, rs / alone};
  };
  const auto f = one(
      "ffma", [&] { return pipe_rate_under_mma<ChainOp::Ffma, 0>(p, iters); },
      [&] { return pipe_rate_under_mma<ChainOp::Ffma, 1>(p, iters, &duty_ss); },
      [&] { return pipe_rate_under_mma<ChainOp::Ffma, 2>(p, iters, &duty_rs); });
  const auto m = one(
      "fmnmx", [&] { return pipe_rate_under_mma<ChainOp::Fmnmx, 0>(p, iters); },
      [&] { return pipe_rate_under_mma<ChainOp::Fmnmx, 1>(p, iters, &duty_ss); },
      [&] { return pipe_rate_under_mma<ChainOp::Fmnmx, 2>(p, iters, &duty_rs); });
  const auto e = one(
      "mufu_ex2", [&] { return pipe_rate_under_mma<ChainOp::Mufu, 0>(p, iters / 4); },
      [&] { return pipe_rate_under_mma<ChainOp::Mufu, 1>(p, iters / 4, &duty_ss); },
      [&] { return pipe_rate_under_mma<ChainOp::Mufu, 2>(p, iters / 4, &duty_rs); });
  res["ratio_ss_median"] = median(std::vector<double>{f.first, m.first, e.first});
  res["ratio_rs_median"] = median(std::vector<double>{f.second, m.second, e.second});
  // One dependent chain: a warp issuing at its dependencies' pace (as ptxas's stall counts make
  // a softmax warp alone do), not at a pipe's rate. Does the wgmma beside it slow that too?
  const auto f1 = one(
      "ffma_one_chain", [&] { return pipe_rate_under_mma<ChainOp::Ffma, 0, 1>(p, iters); },
      [&] { return pipe_rate_under_mma<ChainOp::Ffma, 1, 1>(p, iters, &duty_ss); },
      [&] { return pipe_rate_under_mma<ChainOp::Ffma, 2, 1>(p, iters, &duty_rs); });
  const auto m1 = one(
      "fmnmx_one_chain", [&] { return pipe_rate_under_mma<ChainOp::Fmnmx, 0, 1>(p, iters); },
      [&] { return pipe_rate_under_mma<ChainOp::Fmnmx, 1, 1>(p, iters, &duty_ss); },
      [&] { return pipe_rate_under_mma<ChainOp::Fmnmx, 2, 1>(p, iters, &duty_rs); });
  const auto e1 = one(
      "mufu_ex2_one_chain", [&] { return pipe_rate_under_mma<ChainOp::Mufu, 0, 1>(p, iters / 4); },
      [&] { return pipe_rate_under_mma<ChainOp::Mufu, 1, 1>(p, iters / 4, &duty_ss); },
      [&] { return pipe_rate_under_mma<ChainOp::Mufu, 2, 1>(p, iters / 4, &duty_rs); });
  res["one_chain_ratio_ss_median"] = median(std::vector<double>{f1.first, m1.first, e1.first});
  res["one_chain_ratio_rs_median"] = median(std::vector<double>{f1.second, m1.second, e1.second});
  // The kernels above are too short for %globaltimer: the SM clock comes from a spin kernel.
  DeviceBuffer<BlockClock> out(1);
  spin_kernel<<<1, 32>>>(400000, out.get());
  MB_CHECK_LAUNCH("spin_kernel");
  rep.clock().add(out.to_host(), 5000.0);
}

void bench_wgmma_issue_with_clock(Report& rep) {
  bench_wgmma_issue(rep);
  DeviceBuffer<BlockClock> out(1);
  spin_kernel<<<1, 32>>>(400000, out.get());
  MB_CHECK_LAUNCH("spin_kernel");
  rep.clock().add(out.to_host(), 5000.0);
}

}  // namespace

std::vector<Benchmark> latency_benchmarks() {
  return {
      {"latency_chains", "dependent-chain latency of FFMA/FADD/FMUL, FMNMX, MUFU.EX2, SHFL.BFLY, F2FP pack",
       bench_latency_chains},
      {"wgmma_issue", "issue cost of back-to-back wgmma (N = 64/128/256), wait_group on finished groups",
       bench_wgmma_issue_with_clock},
      {"mbarrier_ready", "mbarrier.try_wait.parity on an already completed phase", bench_mbarrier_ready},
      {"pipes_under_mma", "FFMA / FMNMX / MUFU.EX2 throughput of a warp while the tensor cores run wgmma",
       bench_pipes_under_mma},
  };
}

}  // namespace mb
