// clock_under_mix: the SM clock the board's power controller holds for a mix of tensor-core,
// CUDA-core and memory work on every SM, with the board's power beside it.
//
// Why: under sustained load an H100/H200 lowers its SM clock until the board draws no more than
// its power limit, and what it draws depends on what every SM does each cycle. Attention kernels
// run wgmma, softmax arithmetic and K/V streams at once, at duties that differ by problem, and
// their SMs ran at 1.35-1.84 GHz by problem (the clock read inside the kernel, `attnsim validate`);
// wgmma alone at full duty runs at about 1.64 GHz (clock_under_duty) and FFMA alone at the top
// clock (clock_under_ffma). This benchmark measures the clock over a grid of mixes so that
// `attnsim calibrate` can fit a power model (sim/calibrate/clock_power) that the simulator solves
// for each problem's own mix.
//
// Each SM runs one CTA of 3 warpgroups. Warpgroups 0 and 1 per iteration: issue 8 wgmma
// m64n128k16 SS (bf16 uniform in [-1, 1), as attention's data) if `tensor`, run `rounds` softmax-like rounds on 64
// scores per thread while the wgmma run (per score: FMNMX, FFMA, MUFU.EX2, FADD, FFMA; per score pair: F2FP and a
// LOP3), wait for the wgmma, sleep `gap_ns`. One thread of warpgroup 2 keeps 4 bulk copies (TMA, 16 KB each, as the
// kernels load K/V tiles) in flight from an L2-resident window shared by all SMs, or from a 16 MB slice of HBM per SM,
// until the compute warpgroups are done. (A first version streamed with 16-byte loads from 4 warps: per byte they drew
// about 3x what TMA-loading attention kernels do, the cost of the load instructions and L1, not of L2 or HBM.)
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cuda/ptx>
#include <thread>

#include "microbench.cuh"
#include "wgmma_tiles.cuh"

namespace mb {
namespace {

constexpr int kThreads = 384;  // warpgroups 0-1 compute, warpgroup 2 memory
constexpr int kComputeWarps = 8;
/// Tensor-core cycles per iteration: 2 warpgroups x 8 wgmma m64n128k16 (262144 FLOP each) at
/// 4096 dense bf16 FLOP per SM clock (the `wgmma` benchmark's rate).
constexpr double kTensorCyclesPerIter = 2.0 * 8 * 64 * 128 * 16 * 2 / 4096.0;
constexpr int kScores = 64;  // per thread per round: one warpgroup's 64x128 score tile
/// Warp instructions per round per warp, by construction (each PTX operation below is one SASS
/// instruction: fmaxf -> FMNMX, fmaf -> FFMA, ex2.approx.ftz -> MUFU.EX2, + -> FADD,
/// cvt.rn.bf16x2 -> F2FP, ^ -> LOP3); the few combining the partial max/sums are not counted.
constexpr int kInstrPerRound = 5 * kScores + 2 * (kScores / 2);
constexpr int kStages = 4;                   // bulk copies in flight per SM
constexpr uint32_t kChunkBytes = 16384;      // bytes per copy (a 64x128 bf16 K/V tile)
constexpr unsigned kL2WindowChunks = 256;    // 4 MB, shared by all SMs: L2 hits
constexpr unsigned kHbmSliceChunks = 1024;   // 16 MB per SM (2.1 GB on 132 SMs): HBM
constexpr int kRingOffset = kWgmmaTileSmem;  // the ring after the wgmma tiles (1 KB aligned)
static_assert(kRingOffset % 1024 == 0 && kRingOffset + kStages * kChunkBytes + 1024 <= kOneBlockPerSmSmem);

/// One configuration of the mix.
struct MixArgs {
  int iters = 0;
  int rounds = 0;  ///< softmax-like rounds per iteration on the compute warps
  int gap_ns = 0;  ///< __nanosleep after each iteration (duty below 1)
  int mem = 0;     ///< 0 none, 1 L2 window, 2 HBM slices
  int mem_sms = 0;  ///< SMs (CTAs 0 .. mem_sms - 1) whose copy thread streams
  const uint8_t* buf = nullptr;
};

__device__ __forceinline__ float ex2_approx(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// One softmax-like round on a thread's 64 scores: row max, exp2 of scale * s - max, row sum,
/// bf16 packing of the probabilities, and the scores moved on (s = 0.75 s + p) so that no round
/// repeats the last.
__device__ __forceinline__ void softmax_round(float (&s)[kScores], float& sum, uint32_t& packed) {
  float m[4] = {s[0], s[1], s[2], s[3]};
#pragma unroll
  for (int i = 4; i < kScores; ++i) m[i & 3] = fmaxf(m[i & 3], s[i]);
  const float mx = fmaxf(fmaxf(m[0], m[1]), fmaxf(m[2], m[3]));
  float part[4] = {0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < kScores; i += 2) {
    const float e0 = ex2_approx(fmaf(s[i], 1.4426950f, -mx));
    const float e1 = ex2_approx(fmaf(s[i + 1], 1.4426950f, -mx));
    part[i & 3] += e0;
    part[(i + 1) & 3] += e1;
    uint32_t p;
    asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(e1), "f"(e0));
    packed ^= p;
    s[i] = fmaf(s[i], 0.75f, e0);
    s[i + 1] = fmaf(s[i + 1], 0.75f, e1);
  }
  sum += (part[0] + part[1]) + (part[2] + part[3]);
}

/// kTensor: the compute warpgroups issue wgmma (a template parameter, so that no branch around
/// the in-flight accumulators makes ptxas wait for them before the softmax rounds).
template <bool kTensor>
__global__ void __launch_bounds__(kThreads, 1)
    clock_mix_kernel(MixArgs a, BlockClock* blocks, unsigned long long* mem_bytes, float* sink, int* err) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ volatile int stop;
  __shared__ uint64_t full[kStages];
  if (threadIdx.x == 0) {
    stop = 0;
    for (int i = 0; i < kStages; ++i) cuda::ptx::mbarrier_init(&full[i], 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  const uint8_t* base = fill_wgmma_tiles_random(smem_raw);  // ends with __syncthreads
  block_clock_begin(blocks);
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  if (wg < 2) {
    uint64_t da[4], db[4];
    kstep_descs(base, da, db);
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) d[i] = 0.0f;
    float s[kScores];
#pragma unroll
    for (int i = 0; i < kScores; ++i)
      s[i] = static_cast<float>(hash32(i * 384 + threadIdx.x) & 0xFFFF) * (1.0f / 16384.0f);
    float sum = 0;
    uint32_t packed = 0;
#pragma unroll 1
    for (int it = 0; it < a.iters; ++it) {
      if constexpr (kTensor) {
        attnsim::hopper::fence_regs(d);
        attnsim::hopper::wgmma_fence();
#pragma unroll
        for (int k = 0; k < 8; ++k) attnsim::hopper::Wgmma<128>::ss(d, da[k & 3], db[k & 3], 1);
        attnsim::hopper::wgmma_commit();
      }
#pragma unroll 1
      for (int r = 0; r < a.rounds; ++r) softmax_round(s, sum, packed);
      if constexpr (kTensor) {
        attnsim::hopper::wgmma_wait<0>();
        attnsim::hopper::fence_regs(d);
      }
      if (a.gap_ns > 0) __nanosleep(static_cast<unsigned>(a.gap_ns));
    }
    asm volatile("bar.sync 1, 256;" ::: "memory");  // both compute warpgroups done
    if (threadIdx.x == 0) stop = 1;
    float x = sum + static_cast<float>(packed & 1);
#pragma unroll
    for (int i = 0; i < 64; ++i) x += d[i];
    if (x == 1234567.0f) sink[blockIdx.x * kThreads + threadIdx.x] = x;
  } else if (a.mem != 0 && threadIdx.x == 256 && static_cast<int>(blockIdx.x) < a.mem_sms) {
    // One thread keeps kStages bulk copies (TMA, as the kernels load K/V) in flight into a ring.
    uint8_t* ring = align1k(smem_raw) + kRingOffset;
    const unsigned chunks = a.mem == 1 ? kL2WindowChunks : kHbmSliceChunks;
    const uint8_t* src = a.mem == 1 ? a.buf : a.buf + static_cast<size_t>(blockIdx.x) * kHbmSliceChunks * kChunkBytes;
    unsigned c = a.mem == 1 ? blockIdx.x * 3u : 0u;  // L2: SMs start apart in the shared window
    unsigned long long copies = 0;
    uint32_t last_round = 0;
    const uint32_t bytes = kChunkBytes;  // the ptx wrappers take it by reference
    bool ok = true;
    for (uint32_t round = 0; ok && (round == 0 || !stop); ++round) {
      for (int st = 0; st < kStages; ++st) {
        if (round > 0 && !wait_parity(&full[st], (round - 1) & 1)) {
          ok = false;
          break;
        }
        cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             &full[st], bytes);
        cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, ring + st * kChunkBytes,
                                 src + static_cast<size_t>(c) * kChunkBytes, bytes, &full[st]);
        c = (c + 1) & (chunks - 1);
        ++copies;
        last_round = round;
      }
    }
    for (int st = 0; st < kStages && ok; ++st) ok = wait_parity(&full[st], last_round & 1);  // drain
    if (!ok) atomicExch(err, 1);
    mem_bytes[blockIdx.x] = copies * kChunkBytes;
  }
  __syncthreads();
  block_clock_end(blocks);
}

__global__ void fill_buffer_kernel(uint4* p, size_t n) {  // random bytes
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t h = hash32(static_cast<uint32_t>(i));
    p[i] = make_uint4(h, hash32(h), hash32(h + 1), hash32(h + 2));
  }
}

/// bf16 N(0, 1) samples (Box-Muller on a counter hash), as the attention kernels' K and V are
/// (kernels/sm90/runner.cu): their sign and exponent bits are far from random.
__global__ void fill_bf16_normal_kernel(uint4* p, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t w[4];
    for (int k = 0; k < 4; ++k) {
      uint16_t half[2];
      for (int j = 0; j < 2; ++j) {
        const uint32_t h = hash32(static_cast<uint32_t>(i * 8 + k * 2 + j) * 2654435761u + 12345u);
        const float u1 = (static_cast<float>(h & 0xFFFF) + 1.f) / 65537.f;
        const float u2 = static_cast<float>(h >> 16) / 65536.f;
        const float x = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
        half[j] = static_cast<uint16_t>(__float_as_uint(x) >> 16);  // bf16 by truncation
      }
      w[k] = half[0] | (static_cast<uint32_t>(half[1]) << 16);
    }
    p[i] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

struct Mix {
  int tensor, rounds, gap_ns, mem;
  int mem_sms = 0;  ///< SMs that stream (0: all)
};

constexpr const char* kMemName[] = {"none", "l2", "hbm"};  // by MixArgs::mem

/// The mix's key in the results: "t1_r2_g800_hbm".
std::string mix_name(const Mix& m) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "t%d_r%d_g%d_%s", m.tensor, m.rounds, m.gap_ns, kMemName[m.mem]);
  return buf;
}

/// The clock_mix kernel on every SM, with its buffers: launch(mix, iterations) runs it once and
/// returns each SM's clock record (BlockClock: clock64 and %globaltimer at its start and end).
struct MixRunner {
  int grid;
  DeviceBuffer<uint4> buf;
  DeviceBuffer<BlockClock> blocks;
  DeviceBuffer<unsigned long long> mem_bytes;
  DeviceBuffer<float> sink;
  DeviceBuffer<int> err;
  explicit MixRunner(int sm_count)
      : grid(sm_count),
        buf(static_cast<size_t>(sm_count) * kHbmSliceChunks * kChunkBytes / sizeof(uint4)),
        blocks(sm_count),
        mem_bytes(sm_count),
        sink(static_cast<size_t>(sm_count) * kThreads),
        err(1) {
    allow_smem(clock_mix_kernel<false>, kOneBlockPerSmSmem);
    allow_smem(clock_mix_kernel<true>, kOneBlockPerSmSmem);
    fill(false);
    MB_CHECK(cudaMemset(err.get(), 0, sizeof(int)));
  }
  /// The streamed buffer: random bytes, or bf16 N(0, 1) values (`bf16_normal`).
  void fill(bool bf16_normal) {
    if (bf16_normal)
      fill_bf16_normal_kernel<<<1024, 256>>>(buf.get(), buf.size());
    else
      fill_buffer_kernel<<<1024, 256>>>(buf.get(), buf.size());
    MB_CHECK_LAUNCH("fill_buffer_kernel");
    MB_CHECK(cudaDeviceSynchronize());
  }
  std::vector<BlockClock> launch(const Mix& m, int iters) {
    MB_CHECK(cudaMemset(mem_bytes.get(), 0, grid * sizeof(unsigned long long)));
    MixArgs a;
    a.iters = iters;
    a.rounds = m.rounds;
    // A mix of neither tensor nor softmax work still needs iterations that take time.
    a.gap_ns = (m.tensor == 0 && m.rounds == 0) ? std::max(m.gap_ns, 1000) : m.gap_ns;
    a.mem = m.mem;
    a.mem_sms = m.mem_sms > 0 ? m.mem_sms : grid;
    a.buf = reinterpret_cast<const uint8_t*>(buf.get());
    if (m.tensor)
      clock_mix_kernel<true>
          <<<grid, kThreads, kOneBlockPerSmSmem>>>(a, blocks.get(), mem_bytes.get(), sink.get(), err.get());
    else
      clock_mix_kernel<false>
          <<<grid, kThreads, kOneBlockPerSmSmem>>>(a, blocks.get(), mem_bytes.get(), sink.get(), err.get());
    MB_CHECK_LAUNCH("clock_mix_kernel");
    check_err(err, "clock_mix_kernel");
    return blocks.to_host();
  }
  /// Iterations for about `s` seconds of `m`, from a 100-iteration calibration launch.
  int iters_for(const Mix& m, double s) {
    const int cal = 100;
    return scaled_iters(span_ns(launch(m, cal)) * 1e-9, cal, s, 2e8);
  }
};

/// Runs `m` for about `seconds` on every SM and returns its record: the mix, medians over SMs of
/// the clock (clock64 / %globaltimer), tensor duty (wgmma cycles over elapsed cycles) and issue
/// duty (compute warp instructions per SMSP cycle), the chip's L2 or HBM stream bytes/s, and NVML's
/// board power, limit and temperature right after the run; `order`: its place in the run.
Json measure_mix(Report& rep, MixRunner& runner, const Mix& m, double seconds, size_t order) {
  const int iters = runner.iters_for(m, seconds);
  const auto run = runner.launch(m, iters);
  const BoardPower pw = read_board_power(rep.opt().device);
  rep.clock().add(run);
  const auto bytes = runner.mem_bytes.to_host();
  std::vector<double> tduty, iduty;
  double total_bytes = 0;
  for (size_t b = 0; b < run.size(); ++b) {
    const double cyc = static_cast<double>(run[b].clk1 - run[b].clk0);
    tduty.push_back(m.tensor ? kTensorCyclesPerIter * iters / cyc : 0.0);
    iduty.push_back(static_cast<double>(kInstrPerRound) * m.rounds * iters * kComputeWarps / 4.0 / cyc);
    total_bytes += static_cast<double>(bytes[b]);
  }
  const double span_s = span_ns(run) * 1e-9;
  Json j = Json::object();
  j["order"] = static_cast<long long>(order);
  j["tensor"] = m.tensor;
  j["rounds"] = m.rounds;
  j["gap_ns"] = m.gap_ns;
  j["mem"] = kMemName[m.mem];
  j["tensor_duty"] = median(tduty);
  j["issue_duty"] = median(iduty);
  j["l2_bytes_per_s"] = m.mem == 1 ? total_bytes / span_s : 0.0;
  j["hbm_bytes_per_s"] = m.mem == 2 ? total_bytes / span_s : 0.0;
  j["clock_ghz"] = median(block_clock_ghz(run));
  j["clock_ghz_min_over_sms"] = vmin(block_clock_ghz(run));
  j["run_seconds"] = span_s;
  j["board_power_w"] = pw.power_w;
  j["power_limit_w"] = pw.limit_w;
  j["temperature_c"] = pw.temperature_c;
  return j;
}

void bench_clock_under_mix(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "The SM clock the power controller holds for a mix of work on all SMs, one CTA of 3 warpgroups per SM. "
      "Warpgroups 0-1 per iteration: 8 wgmma m64n128k16 SS on bf16 tiles uniform in [-1, 1) if tensor, `rounds` "
      "softmax-like rounds on 64 scores per thread while they run (per score FMNMX, FFMA, MUFU.EX2, FADD, FFMA; per "
      "pair F2FP, LOP3: 384 warp instructions per warp-round), wgmma wait, __nanosleep gap_ns. One thread of "
      "warpgroup 2 keeps 4 bulk copies (cp.async.bulk, 16 KB) in flight from a 4 MB window all SMs share (mem l2: "
      "L2 hits) or a 16 MB slice per SM (mem hbm) until the compute warpgroups finish. 36 mixes (tensor 0/1 x rounds "
      "0/1/2 x gap 0/800 ns x mem none/l2/hbm) in a fixed shuffled order after a 3 s warm-up on the heaviest, each "
      "~1.2 s (quick ~0.15 s) after a short calibration launch. Per mix, medians over SMs: clock_ghz (clock64 / "
      "%globaltimer), tensor_duty (1024 tensor cycles per iteration at 4096 FLOP/clk over the elapsed cycles), "
      "issue_duty (compute warp instructions per SMSP cycle); l2_bytes_per_s / hbm_bytes_per_s chip-wide; board "
      "power, its enforced limit and the GPU temperature from NVML right after the run.");
  const bool quick = rep.opt().quick;
  const double seconds = quick ? 0.15 : 1.2;
  MixRunner runner(rep.dev().sm_count);
  std::vector<Mix> mixes;
  for (int tensor : {0, 1})
    for (int rounds : {0, 1, 2})
      for (int gap : {0, 800})
        for (int mem : {0, 1, 2}) mixes.push_back({tensor, rounds, gap, mem});
  const Mix heaviest{1, 1, 0, 2};
  runner.launch(heaviest, runner.iters_for(heaviest, quick ? 0.3 : 3.0));  // warm-up: a working temperature
  Json& cfg = rep.results()["configs"];
  const size_t n = mixes.size();
  for (size_t k = 0; k < n; ++k) {
    const Mix& m = mixes[(k * 7) % n];  // 7 is coprime with 36: every mix once, neighbours apart
    cfg[mix_name(m)] = measure_mix(rep, runner, m, seconds, k);
  }
  rep.results()["max_clock_ghz"] = rep.dev().clock_rate_khz * 1e-6;
}

/// clock_under_hbm: board power and SM clock against the HBM bandwidth. clock_under_mix streams HBM
/// at one level only (every SM, 4.4-4.6 TB/s), so the power model's HBM term is a line through
/// that level; attention kernels stream 0.1-2.7 TB/s. Here the same kernel streams from the first
/// `mem_sms` SMs only (16 to 132 of them), with no compute (the clock stays at its top unless the
/// power limit bites) and with a light tensor and softmax load (tensor, 1 round, 800 ns gap).
void bench_clock_under_hbm(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "clock_under_mix's kernel and measurements with its HBM stream (one thread per SM keeping 4 cp.async.bulk "
      "copies of 16 KB in flight from a 16 MB slice per SM) on the first mem_sms SMs only: mem_sms 0 (no stream), "
      "16, 33, 66, 99 and all, each with no compute (t0_r0: the compute warps sleep 1000 ns per iteration) and with "
      "wgmma and one softmax round per iteration and an 800 ns gap (t1_r1_g800); after a 3 s warm-up on the heaviest "
      "mix, each ~1.2 s (quick ~0.15 s); board power from NVML right after each run. Twice: the buffer of random "
      "bytes clock_under_mix streams (keys without a suffix), then of bf16 N(0, 1) values as attention's K and V "
      "(suffix _bf16n).");
  const bool quick = rep.opt().quick;
  const double seconds = quick ? 0.15 : 1.2;
  MixRunner runner(rep.dev().sm_count);
  const int grid = runner.grid;
  std::vector<Mix> mixes;
  for (const Mix base : {Mix{0, 0, 0, 2}, Mix{1, 1, 800, 2}})
    for (int sms : {0, 16, 33, 66, 99, grid}) {
      Mix m = base;
      if (sms == 0) m.mem = 0;
      m.mem_sms = sms;
      mixes.push_back(m);
    }
  const Mix heaviest{1, 1, 0, 2};
  runner.launch(heaviest, runner.iters_for(heaviest, quick ? 0.3 : 3.0));  // warm-up
  Json& cfg = rep.results()["configs"];
  for (size_t k = 0; k < 2 * mixes.size(); ++k) {
    const bool bf16_normal = k >= mixes.size();
    if (k == mixes.size()) runner.fill(true);
    const Mix& m = mixes[(k * 5) % mixes.size()];  // 5 is coprime with 12: neighbours apart
    Json j = measure_mix(rep, runner, m, seconds, k);
    j["mem_sms"] = m.mem == 0 ? 0 : m.mem_sms;
    j["data"] = bf16_normal ? "bf16 N(0,1)" : "random bytes";
    cfg[mix_name(m) + "_s" + std::to_string(m.mem == 0 ? 0 : m.mem_sms) + (bf16_normal ? "_bf16n" : "")] = j;
  }
  rep.results()["max_clock_ghz"] = rep.dev().clock_rate_khz * 1e-6;
}

/// How fast the power controller lowers the clock once a heavy load starts: after an idle pause,
/// 10 back-to-back launches of the heaviest mix (wgmma, softmax rounds, HBM streams) of T / 10
/// each, for bursts T of 0.2 to 200 ms, the clock of each launch (median over SMs of clock64 /
/// %globaltimer). A timing harness that runs a short kernel 10 times in a turn sees the first
/// part of this curve; a long kernel, its end (the sustained clock clock_under_mix fits).
void bench_clock_under_burst(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "clock_under_mix's kernel, mix t1_r1_g0_hbm (8 wgmma m64n128k16 per warpgroup and iteration, one "
      "softmax-like round beside them, 4 x 16 KB bulk copies in flight from HBM per SM) on every SM. A 2 s warm-up "
      "on it, then for each burst T (0.2, 0.5, 1, 2, 5, 10, 20, 50, 200 ms): an idle pause of 100 ms (host "
      "sleep), then 10 launches of T / 10 each, back to back but for the host's synchronisation after each. Per "
      "launch: the median over SMs of clock64 / %globaltimer over the launch, its start in ms from the burst's "
      "first launch; the board power from NVML after the burst (a query takes milliseconds, so not between launches). "
      "burst_mean_clock_ghz: the launches' clocks "
      "weighted by their duration.");
  const bool quick = rep.opt().quick;
  MixRunner runner(rep.dev().sm_count);
  const Mix heavy{1, 1, 0, 2};
  runner.launch(heavy, runner.iters_for(heavy, quick ? 0.2 : 2.0));  // a working temperature
  const int cal_iters = runner.iters_for(heavy, 0.01);               // iterations per 10 ms
  Json& res = rep.results();
  Json& bursts = res["bursts"];
  double first_clock = 0;  // the shortest burst's first launch: the clock the load starts at
  const std::vector<double> lengths_ms =
      quick ? std::vector<double>{0.5, 5} : std::vector<double>{0.2, 0.5, 1, 2, 5, 10, 20, 50, 200};
  for (double t_ms : lengths_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(quick ? 20 : 100));
    const int iters = std::max(1, static_cast<int>(cal_iters * (t_ms / 10.0) / 10.0));
    Json launches = Json::array();
    double first_ns = 0, weighted = 0, total = 0;
    for (int k = 0; k < 10; ++k) {
      const auto run = runner.launch(heavy, iters);
      unsigned long long start = run[0].ns0;
      for (const auto& b : run) start = std::min(start, b.ns0);
      if (k == 0) first_ns = static_cast<double>(start);
      if (k == 0 && t_ms == lengths_ms.front()) first_clock = median(block_clock_ghz(run));
      const double ghz = median(block_clock_ghz(run)), ns = span_ns(run);
      weighted += ghz * ns;
      total += ns;
      Json j = Json::object();
      j["start_ms"] = (static_cast<double>(start) - first_ns) * 1e-6;
      j["duration_ms"] = ns * 1e-6;
      j["clock_ghz"] = ghz;
      launches.push_back(j);
      rep.clock().add(run);
    }
    Json b = Json::object();
    b["burst_ms"] = t_ms;
    b["burst_mean_clock_ghz"] = total > 0 ? weighted / total : 0.0;
    b["board_power_w_after"] = read_board_power(rep.opt().device).power_w;  // NVML's running average
    b["launches"] = launches;
    char key[32];
    std::snprintf(key, sizeof key, "t%gms", t_ms);
    bursts[key] = b;
  }
  res["first_launch_clock_ghz"] = first_clock;
  res["max_clock_ghz"] = rep.dev().clock_rate_khz * 1e-6;
}

}  // namespace

std::vector<Benchmark> clock_mix_benchmarks() {
  return {{"clock_under_mix",
           "SM clock and board power over mixes of wgmma, softmax arithmetic and L2/HBM streams on all SMs",
           bench_clock_under_mix},
          {"clock_under_hbm",
           "SM clock and board power against the HBM bandwidth (16 to all SMs streaming), alone and beside wgmma",
           bench_clock_under_hbm},
          {"clock_under_burst",
           "SM clock launch by launch after an idle pause under the heaviest mix: how fast the power limit bites",
           bench_clock_under_burst}};
}

}  // namespace mb
