// Host services around the compiled kernels: device query, random inputs, back-to-back timing
// with CUDA events, correctness against a reference, traced runs.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <queue>
#include <stdexcept>
#include <string>

#include "common/clock_probe.cuh"
#include "common/cuda_check.cuh"
#include "fa3_api.h"
#include "launch.cuh"
#include "reference.cuh"
#include "sm100/tile_scheduler.h"

void attnsim::cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

namespace attnsim::sm90 {

int sm_count() {
  static int n = 0;
  if (!n) cuda_check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0), "multiprocessor count");
  return n;
}

int* tile_counter() {
  static int* c = nullptr;
  if (!c) {
    cuda_check(cudaMalloc(&c, 2 * sizeof(int)), "cudaMalloc(tile counter)");
    cuda_check(cudaMemset(c, 0, 2 * sizeof(int)), "cudaMemset(tile counter)");
  }
  return c;
}

const CompiledKernel* find_kernel(const AnyKernelKnobs& k) {
  for (const auto& c : compiled_kernels())
    if (c.knobs == k) return &c;
  return nullptr;
}

GpuInfo gpu_info() {
  GpuInfo g;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    g.why = e != cudaSuccess ? std::string("no usable CUDA driver or device (") + cudaGetErrorString(e) + ")"
                             : "no CUDA device";
    cudaGetLastError();
    return g;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    g.why = "cudaGetDeviceProperties failed";
    return g;
  }
  g.name = p.name;
  g.sm_count = p.multiProcessorCount;
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.usable = p.major == 9 && p.minor == 0;
  if (!g.usable)
    g.why = g.name + " is compute capability " + std::to_string(p.major) + "." + std::to_string(p.minor) +
            "; these kernels are built for sm_90a (H100/H200) only";
  return g;
}

std::string kernel_unrunnable(const AnyKernelKnobs& k, const GpuInfo& gpu) {
  if (gpu.name.empty()) return gpu.why;  // no device at all
  const int major = kernel_cc_major(k);
  if (gpu.cc_major == major && gpu.cc_minor == 0) return "";
  return gpu.name + " is compute capability " + std::to_string(gpu.cc_major) + "." + std::to_string(gpu.cc_minor) +
         "; " + kernel_family(k) + " kernels are built for " + kernel_arch(k) + " (compute capability " +
         std::to_string(major) + ".0" + (major == 10 ? ", e.g. a B200" : ", an H100/H200") + ")";
}

namespace {

/// Fills `n` bf16 values with N(0,1) samples (Box-Muller on a counter hash).
__global__ void fill_normal(__nv_bfloat16* x, size_t n, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    const float u1 = (static_cast<float>(h & 0xFFFFFF) + 1.f) / 16777217.f;
    const float u2 = static_cast<float>((h >> 24) & 0xFFFFFF) / 16777216.f;
    x[i] = __float2bfloat16(scale * sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
  }
}

/// One thread counts the SM clock over 50 us (count_clock) behind a timed turn of launches: the
/// clock the power controller holds as the turn ends. It moves over tens of milliseconds
/// (configs/measured/<gpu>/clock_under_load.json), not the moment the load stops: on an H100
/// (2026-11-24) windows of 50 us, 50 us and 2 ms right after this one read the same clock within
/// 1% behind every turn, 1.90-2.04 GHz on a cool GPU and 1.53-1.68 GHz on the same problems after
/// minutes of load. Loaded SMs run 6-13% slower than this idle one at the same setting
/// (kernels/microbench clock_under_duty), so it bounds the kernel's clock from above.
__global__ void clock_probe(unsigned long long* out) { count_clock(50000, out); }

template <class T>
std::vector<T> to_host(const void* p, size_t n) {
  std::vector<T> h(n);
  cuda_check(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  return h;
}

size_t q_elems(const Shape& s) { return static_cast<size_t>(s.batch) * s.seqlen_q * s.heads * s.head_dim; }
size_t kv_elems(const Shape& s) { return static_cast<size_t>(s.batch) * s.seqlen_k * s.kv_heads * s.head_dim; }

/// A CUDA event (RAII).
struct Event {
  cudaEvent_t e{};
  Event() { cuda_check(cudaEventCreate(&e), "cudaEventCreate"); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};
double elapsed_ms(const Event& a, const Event& b) {
  float m = 0;
  cuda_check(cudaEventElapsedTime(&m, a.e, b.e), "cudaEventElapsedTime");
  return m;
}

/// Device trace buffers for one launch geometry.
struct TraceAlloc {
  TraceBuffers b;
  size_t n_records = 0, n_warps = 0, n_ctas = 0;
  TraceAlloc(int grid, int warps, uint32_t cap, uint32_t trace_warps, uint32_t sample) {
    n_ctas = grid;
    n_warps = static_cast<size_t>(grid) * warps;
    n_records = n_warps * cap;
    b.cap = cap;
    b.warps = trace_warps;
    b.sample = sample;
    cuda_check(cudaMalloc(&b.records, std::max<size_t>(1, n_records) * sizeof(attnsim_trace_record)),
               "cudaMalloc trace");
    cuda_check(cudaMalloc(&b.ctas, n_ctas * sizeof(attnsim_cta_clock)), "cudaMalloc trace clocks");
    cuda_check(cudaMalloc(&b.counts, n_warps * sizeof(uint32_t)), "cudaMalloc trace counts");
    cuda_check(cudaMalloc(&b.spans, n_warps * sizeof(uint32_t)), "cudaMalloc trace spans");
  }
  ~TraceAlloc() {
    cudaFree(b.records);
    cudaFree(b.ctas);
    cudaFree(b.counts);
    cudaFree(b.spans);
  }
};

/// Launch geometry (grid, warps) of a kernel on a problem, from one untimed launch: the launcher
/// is the only place that knows it, and the run doubles as a warm-up.
LaunchInfo probe(const CompiledKernel& k, DeviceProblem& prob, TileScheduler sched) {
  LaunchInfo info;
  k.launch(prob.shape(), prob.tensors(), sched, nullptr, nullptr, &info);
  cuda_check(cudaDeviceSynchronize(), "probe run");
  return info;
}

/// Records per warp that hold every span of a launch: the most any CTA's tiles can produce (the
/// family's span bound per tile, summed over the tiles the CTA runs in the kernel's tile order).
uint32_t full_trace_cap(const CompiledKernel& k, const Shape& sh, const LaunchInfo& li, TileScheduler sched) {
  uint64_t most = 0;
  if (const auto* b = std::get_if<sm100::KernelKnobs>(&k.knobs)) {
    // The SM100 kernel's tile order (kernels/sm100/tile_scheduler.h); every role records per tile.
    const sm100::TileSpace ts{sh.batch,
                              sh.heads,
                              sh.seqlen_q,
                              sh.seqlen_k,
                              b->q_stage * b->cta_group * sm100::kMBlock,
                              sm100::kNBlock,
                              sh.causal,
                              sched == TileScheduler::StaticPersistent,
                              b->cta_group};
    const int clusters = li.grid / b->cta_group;  // both CTAs of a cluster run its tiles
    for (int c = 0; c < clusters; ++c) {
      uint64_t n = 0;
      for (long long t = sm100::first_tile(ts, c); t < li.num_tiles; t = sm100::next_tile(ts, t, clusters))
        n += sm100::trace_spans_per_tile(sm100::tile_at(ts, t).n_blocks);
      most = std::max(most, n);
    }
  } else if (const auto* f = std::get_if<fa2::KernelKnobs>(&k.knobs)) {
    // One CTA per (batch, head), each walking every Q tile: every CTA runs the same tiles.
    const int m_tiles = (sh.seqlen_q + f->br - 1) / f->br;
    for (int m = 0; m < m_tiles; ++m)
      most +=
          fa2::trace_spans_per_tile(attnsim_kv_blocks(m * f->br, f->br, f->bc, sh.seqlen_q, sh.seqlen_k, sh.causal));
  } else if (std::holds_alternative<blackflash::KernelKnobs>(k.knobs)) {
    // One CTA per Q tile: the longest tile bounds every CTA's spans.
    const int m_tiles = (sh.seqlen_q + blackflash::kTile - 1) / blackflash::kTile;
    for (int m = 0; m < m_tiles; ++m)
      most = std::max<uint64_t>(
          most, blackflash::trace_spans_per_tile(attnsim_kv_blocks(m * blackflash::kTile, blackflash::kTile,
                                                                   blackflash::kTile, sh.seqlen_q, sh.seqlen_k,
                                                                   sh.causal)));
  } else {
    const auto& kk = std::get<KernelKnobs>(k.knobs);
    const int m_tiles = (sh.seqlen_q + kk.m_block - 1) / kk.m_block;
    const long long bh = static_cast<long long>(sh.batch) * sh.heads;
    const long long section =
        attnsim_l2_section_heads(kk.l2_section_mib, sh.seqlen_k, sh.head_dim, sh.head_dim, 2, sh.heads, sh.kv_heads);
    auto blocks_of = [&](long long t) {
      int m = 0;
      long long b = 0;
      attnsim_tile_coords<long long>(t, sched == TileScheduler::StaticPersistent, m_tiles, bh, section, &m, &b);
      return attnsim_kv_blocks(m * kk.m_block, kk.m_block, kk.n_block, sh.seqlen_q, sh.seqlen_k, sh.causal);
    };
    if (sched == TileScheduler::DynamicLpt) {
      // Which tiles a CTA takes depends on timing: list-schedule them with a KV block as the unit
      // of time (plus one for a tile's fixed work) and allow twice the busiest CTA's spans; spans
      // past the cap are dropped and reported.
      std::priority_queue<std::pair<uint64_t, uint64_t>, std::vector<std::pair<uint64_t, uint64_t>>, std::greater<>> q;
      for (int c = 0; c < li.grid; ++c) q.push({0, 0});  // (busy until, spans)
      for (long long t = 0; t < li.num_tiles; ++t) {
        auto [busy, n] = q.top();
        q.pop();
        const int blocks = blocks_of(t);
        q.push({busy + blocks + 1, n + trace_spans_per_tile(blocks)});
      }
      for (; !q.empty(); q.pop()) most = std::max(most, 2 * q.top().second);
    } else {
      for (int c = 0; c < li.grid; ++c) {
        uint64_t n = 0;
        for (long long t = c; t < li.num_tiles; t += li.grid) n += trace_spans_per_tile(blocks_of(t));
        most = std::max(most, n);
      }
    }
  }
  if (most > (1u << 28)) throw std::runtime_error("trace: more than 2^28 spans per warp");
  return static_cast<uint32_t>(most);
}

/// Records hold raw 32-bit %clock stamps; make them cycles since their CTA's clk0 (a stamp a few
/// cycles before it, from a warp that passed the first barrier early, becomes 0).
void rebase_stamps(MeasuredTrace& m) {
  for (size_t c = 0; c < m.ctas.size(); ++c) {
    const uint32_t clk0 = static_cast<uint32_t>(m.ctas[c].clk0);
    for (int w = 0; w < m.warps_per_cta; ++w) {
      const size_t slot = c * m.warps_per_cta + w;
      const uint32_t n = std::min(m.counts[slot], m.cap);
      for (uint32_t i = 0; i < n; ++i) {
        attnsim_trace_record& r = m.records[slot * m.cap + i];
        r.t0 = static_cast<uint32_t>(std::max<int32_t>(0, static_cast<int32_t>(r.t0 - clk0)));
        r.t1 = static_cast<uint32_t>(std::max<int32_t>(0, static_cast<int32_t>(r.t1 - clk0)));
      }
    }
  }
}

}  // namespace

DeviceProblem::DeviceProblem(const Shape& s, uint64_t seed, float q_scale) : shape_(s) {
  cuda_check(cudaMalloc(&q_, q_elems(s) * 2), "cudaMalloc Q");
  cuda_check(cudaMalloc(&k_, kv_elems(s) * 2), "cudaMalloc K");
  cuda_check(cudaMalloc(&v_, kv_elems(s) * 2), "cudaMalloc V");
  cuda_check(cudaMalloc(&o_, q_elems(s) * 2), "cudaMalloc O");
  cuda_check(cudaMalloc(&lse_, static_cast<size_t>(s.batch) * s.heads * s.seqlen_q * 4), "cudaMalloc LSE");
  fill_normal<<<1024, 256>>>(static_cast<__nv_bfloat16*>(q_), q_elems(s), seed * 3 + 1, q_scale);
  fill_normal<<<1024, 256>>>(static_cast<__nv_bfloat16*>(k_), kv_elems(s), seed * 3 + 2, 1.f);
  fill_normal<<<1024, 256>>>(static_cast<__nv_bfloat16*>(v_), kv_elems(s), seed * 3 + 3, 1.f);
  cuda_check(cudaMemset(o_, 0, q_elems(s) * 2), "cudaMemset O");
  cuda_check(cudaDeviceSynchronize(), "filling inputs");
}

DeviceProblem::~DeviceProblem() {
  cudaFree(q_);
  cudaFree(k_);
  cudaFree(v_);
  cudaFree(o_);
  cudaFree(lse_);
}

Tensors DeviceProblem::tensors() const { return Tensors{q_, k_, v_, o_, lse_}; }
std::vector<uint16_t> DeviceProblem::q_host() const { return to_host<uint16_t>(q_, q_elems(shape_)); }
std::vector<uint16_t> DeviceProblem::k_host() const { return to_host<uint16_t>(k_, kv_elems(shape_)); }
std::vector<uint16_t> DeviceProblem::v_host() const { return to_host<uint16_t>(v_, kv_elems(shape_)); }
std::vector<uint16_t> DeviceProblem::o_host() const { return to_host<uint16_t>(o_, q_elems(shape_)); }
std::vector<float> DeviceProblem::lse_host() const {
  return to_host<float>(lse_, static_cast<size_t>(shape_.batch) * shape_.heads * shape_.seqlen_q);
}

namespace {

double median(std::vector<double> s) {
  if (s.empty()) return 0;
  std::sort(s.begin(), s.end());
  return s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
}

/// Median, min and max of a timing's per-repetition times; the median clock of its turns.
void summarize(Timing& t) {
  t.median_ms = median(t.ms);
  t.min_ms = *std::min_element(t.ms.begin(), t.ms.end());
  t.max_ms = *std::max_element(t.ms.begin(), t.ms.end());
  t.median_clock_ghz = median(t.clock_ghz);
  t.median_kernel_clock_ghz = median(t.kernel_clock_ghz);
}

/// Times each kernel of `ks` on the same problem, plain when `plain`, traced when `traced`, the
/// series taking turns of about 5 ms (k0 plain, k0 traced, k1 plain, ..., then again) so that clock
/// or temperature drift during the run affects all alike. Returns one pair per kernel (a Timing
/// not asked for stays empty).
std::vector<TimingPair> time_interleaved(const std::vector<TimedKernel>& ks, DeviceProblem& prob,
                                         const TimingOptions& o, bool plain, bool traced) {
  if (o.reps < 1 || o.launches < 1) throw std::invalid_argument("time_kernel: reps and launches must be >= 1");
  if (ks.empty()) throw std::invalid_argument("time_kernels: no kernel to time");
  struct Series {
    const TimedKernel* k;
    LaunchFn fn;
    std::unique_ptr<TraceAlloc> scratch;  // traced: every span it records fits (a full or sampled trace)
    LaunchInfo li;
    Timing* out;
  };
  std::vector<TimingPair> out(ks.size());
  std::vector<Series> series;
  for (size_t i = 0; i < ks.size(); ++i) {
    const TimedKernel& k = ks[i];
    const LaunchInfo li = probe(*k.kernel, prob, k.sched);
    if (plain) series.push_back({&k, k.kernel->launch, nullptr, li, &out[i].plain});
    if (traced)
      series.push_back(
          {&k, k.kernel->launch_traced,
           std::make_unique<TraceAlloc>(li.grid, li.warps, full_trace_cap(*k.kernel, prob.shape(), li, k.sched),
                                        o.trace_warps, o.trace_sample),
           li, &out[i].traced});
  }
  if (series.empty()) throw std::invalid_argument("time_kernels: neither plain nor traced");
  auto launch = [&](const Series& x) {
    x.fn(prob.shape(), prob.tensors(), x.k->sched, x.scratch ? &x.scratch->b : nullptr, nullptr, nullptr);
  };
  // Warm-up (one launch, then max(1, warmup) timed ones) per series: the longest kernel sets how
  // many launches make one turn.
  std::vector<double> launch_ms;  // per series, from its warm-up
  double longest_ms = 0;
  for (const auto& x : series) {
    Event a, b;
    launch(x);
    cuda_check(cudaEventRecord(a.e), "cudaEventRecord");
    for (int i = 0; i < std::max(1, o.warmup); ++i) launch(x);
    cuda_check(cudaEventRecord(b.e), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(b.e), "fa3_forward (warm-up)");
    launch_ms.push_back(elapsed_ms(a, b) / std::max(1, o.warmup));
    longest_ms = std::max(longest_ms, launch_ms.back());
  }
  // Every launch is enqueued at once (an event after each turn), so the GPU runs them back to
  // back and never waits for the host: host gaps stay out of the times. The series take turns of
  // about kTurnMs each, so that a cycle over all of them stays short against the swings of the SM
  // clock under power management (1.42-1.67 GHz within about a second: clock_under_load). Turns
  // of all `launches` launches (130-700 ms cycles) left two identical kernels of one group
  // 3.5-5.9% apart (H100 and H200, 2026-11-24); turns of one launch made every launch pay a
  // switch between kernels (short traced kernels +5-15 us). Each cycle starts one series later.
  constexpr double kTurnMs = 5;
  const int per_turn = std::clamp(static_cast<int>(kTurnMs / std::max(longest_ms, 1e-3)), 1, o.launches);
  const size_t ns = series.size();
  struct Turn {
    size_t series;
    int rep, launches;
  };
  double launch_ms_sum = 0;
  for (double ms : launch_ms) launch_ms_sum += ms;
  const int reps = timed_reps(o.reps, o.launches, launch_ms_sum, o.min_timed_ms);
  std::vector<Turn> turns;
  for (int r = 0, cycle = 0; r < reps; ++r)
    for (int c = 0; c < o.launches; c += per_turn, ++cycle)
      for (size_t y = 0; y < ns; ++y) turns.push_back({(cycle + y) % ns, r, std::min(per_turn, o.launches - c)});
  // Each turn between its own pair of events; behind each, outside them, the clock probe and, for
  // a traced series, a copy of its last launch's CTA clock anchors (cleared before the turn, so
  // that a CTA which wrote none is not read from an older launch).
  std::vector<Event> start(turns.size()), end(turns.size());
  unsigned long long* probes = nullptr;
  cuda_check(cudaMalloc(&probes, 2 * sizeof(unsigned long long) * turns.size()), "cudaMalloc(clock probes)");
  std::unique_ptr<unsigned long long, decltype(&cudaFree)> probes_owner(probes, cudaFree);
  size_t anchor_count = 0;
  std::vector<size_t> anchor_at(turns.size(), 0);
  for (size_t j = 0; j < turns.size(); ++j)
    if (const auto& x = series[turns[j].series]; x.scratch) anchor_at[j] = anchor_count, anchor_count += x.li.grid;
  attnsim_cta_clock* anchors = nullptr;
  if (anchor_count > 0)
    cuda_check(cudaMalloc(&anchors, anchor_count * sizeof(attnsim_cta_clock)), "cudaMalloc(CTA clock anchors)");
  std::unique_ptr<attnsim_cta_clock, decltype(&cudaFree)> anchors_owner(anchors, cudaFree);
  // Preconditioning: the turns' cycle, untimed, for about o.precondition_ms, so that the timed
  // turns find the power controller settled under this load (TimingOptions::precondition_ms).
  if (o.precondition_ms > 0) {
    double cycle_ms = 0;
    for (size_t y = 0; y < ns; ++y) cycle_ms += per_turn * launch_ms[y];
    const int cycles = static_cast<int>(std::ceil(o.precondition_ms / std::max(cycle_ms, 1e-3)));
    for (int c = 0; c < cycles; ++c)
      for (size_t y = 0; y < ns; ++y)
        for (int i = 0; i < per_turn; ++i) launch(series[y]);
  }
  launch(series.front());
  for (size_t j = 0; j < turns.size(); ++j) {
    const Series& x = series[turns[j].series];
    const size_t clock_bytes = static_cast<size_t>(x.li.grid) * sizeof(attnsim_cta_clock);
    if (x.scratch) cuda_check(cudaMemsetAsync(x.scratch->b.ctas, 0, clock_bytes), "cudaMemsetAsync(CTA clocks)");
    cuda_check(cudaEventRecord(start[j].e), "cudaEventRecord");
    for (int i = 0; i < turns[j].launches; ++i) launch(x);
    cuda_check(cudaEventRecord(end[j].e), "cudaEventRecord");
    clock_probe<<<1, 1>>>(probes + 2 * j);
    if (x.scratch)
      cuda_check(cudaMemcpyAsync(anchors + anchor_at[j], x.scratch->b.ctas, clock_bytes, cudaMemcpyDeviceToDevice),
                 "cudaMemcpyAsync(CTA clocks)");
  }
  cuda_check(cudaGetLastError(), "clock_probe launch");
  cuda_check(cudaDeviceSynchronize(), "fa3_forward (timed)");
  const std::vector<unsigned long long> probe = to_host<unsigned long long>(probes, 2 * turns.size());
  const std::vector<attnsim_cta_clock> anchor = to_host<attnsim_cta_clock>(anchors, anchor_count);
  // Repetition r of a series: the mean over its `launches` launches, from its turns in rep r.
  for (const auto& x : series) {
    x.out->launch = x.li;
    x.out->launches = o.launches;
    x.out->ms.assign(reps, 0.0);
    x.out->clock_ghz.clear();
    x.out->kernel_clock_ghz.clear();
  }
  for (size_t j = 0; j < turns.size(); ++j) {
    const Series& x = series[turns[j].series];
    Timing& t = *x.out;
    t.ms[turns[j].rep] += elapsed_ms(start[j], end[j]) / o.launches;
    if (probe[2 * j + 1] > 0) t.clock_ghz.push_back(static_cast<double>(probe[2 * j]) / probe[2 * j + 1]);
    if (!x.scratch) continue;
    // The turn's last launch: median over its CTAs that stamped both ends and ran >= 20 us (the
    // %globaltimer step is 32-96 ns) of clock64 cycles / ns.
    std::vector<double> ghz;
    for (int c = 0; c < x.li.grid; ++c) {
      const attnsim_cta_clock& a = anchor[anchor_at[j] + c];
      if (a.ns1 > a.ns0 + 20000 && a.clk1 > a.clk0)
        ghz.push_back(static_cast<double>(a.clk1 - a.clk0) / static_cast<double>(a.ns1 - a.ns0));
    }
    if (!ghz.empty()) t.kernel_clock_ghz.push_back(median(ghz));
  }
  for (const auto& x : series) summarize(*x.out);
  return out;
}

}  // namespace

Timing time_kernel(const CompiledKernel& k, DeviceProblem& prob, TileScheduler sched, const TimingOptions& o) {
  const TimingPair t = time_interleaved({{&k, sched}}, prob, o, !o.traced, o.traced).front();
  return o.traced ? t.traced : t.plain;
}

TimingPair time_plain_and_traced(const CompiledKernel& k, DeviceProblem& prob, TileScheduler sched,
                                 const TimingOptions& o) {
  return time_interleaved({{&k, sched}}, prob, o, true, true).front();
}

std::vector<TimingPair> time_kernels(const std::vector<TimedKernel>& ks, DeviceProblem& prob, const TimingOptions& o,
                                     bool traced) {
  return time_interleaved(ks, prob, o, true, traced);
}

CheckResult check_kernel(const CompiledKernel& k, DeviceProblem& prob, TileScheduler sched, int sample_rows) {
  cuda_check(cudaMemset(prob.tensors().o, 0xFF, q_elems(prob.shape()) * 2), "cudaMemset O (NaN poison)");
  k.launch(prob.shape(), prob.tensors(), sched, nullptr, nullptr, nullptr);
  cuda_check(cudaDeviceSynchronize(), "kernel run");
  return compare_with_reference(prob, sample_rows);
}

CheckResult check_traced_kernel(const CompiledKernel& k, DeviceProblem& prob, TileScheduler sched,
                                uint32_t trace_sample, int sample_rows) {
  if (!k.launch_traced) throw std::invalid_argument(describe(k.knobs) + " has no instrumented build");
  const LaunchInfo li = probe(k, prob, sched);
  TraceAlloc buf(li.grid, li.warps, full_trace_cap(k, prob.shape(), li, sched), kTraceWarpsFirst, trace_sample);
  cuda_check(cudaMemset(prob.tensors().o, 0xFF, q_elems(prob.shape()) * 2), "cudaMemset O (NaN poison)");
  k.launch_traced(prob.shape(), prob.tensors(), sched, &buf.b, nullptr, nullptr);
  cuda_check(cudaDeviceSynchronize(), "traced kernel run");
  return compare_with_reference(prob, sample_rows);
}

MeasuredTrace trace_kernel(const CompiledKernel& k, DeviceProblem& prob, TileScheduler sched, uint32_t cap,
                           uint32_t trace_warps, uint32_t trace_sample) {
  if (!k.launch_traced) throw std::invalid_argument(describe(k.knobs) + " has no instrumented build");
  MeasuredTrace m;
  m.launch = probe(k, prob, sched);
  // No more records per warp than the launch can write: a one-tile-per-CTA grid (blackflash: up
  // to thousands of CTAs) would otherwise allocate gigabytes for --trace-cap's default. (Under
  // dynamic_lpt the bound is an estimate: a larger cap asked for is kept.)
  const uint32_t full = full_trace_cap(k, prob.shape(), m.launch, sched);
  if (cap == 0 || (cap > full && sched != TileScheduler::DynamicLpt)) cap = full;
  TraceAlloc buf(m.launch.grid, m.launch.warps, cap, trace_warps, trace_sample);
  k.launch_traced(prob.shape(), prob.tensors(), sched, &buf.b, nullptr, nullptr);  // warm-up
  cuda_check(cudaDeviceSynchronize(), "traced kernel (warm-up)");
  // What a CTA that records nothing (trace sampling) leaves unwritten reads as zero: no records,
  // no end anchor (cta_recorded).
  cuda_check(cudaMemset(buf.b.counts, 0, buf.n_warps * sizeof(uint32_t)), "cudaMemset trace counts");
  cuda_check(cudaMemset(buf.b.spans, 0, buf.n_warps * sizeof(uint32_t)), "cudaMemset trace spans");
  cuda_check(cudaMemset(buf.b.ctas, 0, buf.n_ctas * sizeof(attnsim_cta_clock)), "cudaMemset trace clocks");
  Event a, b;
  cuda_check(cudaEventRecord(a.e), "cudaEventRecord");
  k.launch_traced(prob.shape(), prob.tensors(), sched, &buf.b, nullptr, nullptr);
  cuda_check(cudaEventRecord(b.e), "cudaEventRecord");
  cuda_check(cudaEventSynchronize(b.e), "traced kernel");
  m.kernel_ms = elapsed_ms(a, b);
  m.records = to_host<attnsim_trace_record>(buf.b.records, buf.n_records);
  m.counts = to_host<uint32_t>(buf.b.counts, buf.n_warps);
  m.spans = to_host<uint32_t>(buf.b.spans, buf.n_warps);
  m.ctas = to_host<attnsim_cta_clock>(buf.b.ctas, buf.n_ctas);
  m.warps_per_cta = m.launch.warps;
  m.cap = cap;
  m.trace_warps = trace_warps;
  m.trace_sample = trace_sample;
  m.knobs = k.knobs;
  rebase_stamps(m);
  return m;
}

}  // namespace attnsim::sm90
