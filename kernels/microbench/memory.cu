// Memory benchmarks: TMA loads (cp.async.bulk and cp.async.bulk.tensor 2D, completion on an
// mbarrier) from L2 -- latency, one-SM bandwidth, all-SM bandwidth, plus an HBM stream -- and
// shared-memory read bandwidth (ld.shared.v4).
#include "microbench.cuh"

#include <cuda.h>  // CUtensorMap and its enums (the driver entry point is fetched at run time)
#include <cudaTypedefs.h>

#include <cuda/ptx>

#include <algorithm>
#include <numeric>
#include <random>

namespace mb {
namespace {

/// Where a TMA benchmark reads from: a 1D byte range (cp.async.bulk) or a 2D bf16 tensor of
/// 128 columns (a head_dim-128 K/V tile layout) read in boxes of 64 columns x box_rows rows with
/// 128B swizzle, as FA3 does (cp.async.bulk.tensor.2d).
struct TmaSource {
  const uint8_t* base;
  unsigned long long nchunks;  // chunks of `bytes` each
  uint32_t bytes;              // bytes per copy
  int mode;                    // 0: cp.async.bulk, 1: cp.async.bulk.tensor 2D
  int box_rows;                // mode 1 only
};

/// Issues one copy of chunk `c` into `dst`, completing on `bar` (arrive + expect_tx first).
__device__ __forceinline__ void tma_issue(const CUtensorMap* tmap, const TmaSource& s, unsigned long long c,
                                          uint8_t* dst, uint64_t* bar) {
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar,
                                       s.bytes);
  if (s.mode == 0) {
    cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, s.base + c * s.bytes, s.bytes,
                             bar);
  } else {
    // Chunk c: column half (c & 1), row block (c >> 1).
    const int32_t coords[2] = {static_cast<int32_t>((c & 1) * 64), static_cast<int32_t>((c >> 1) * s.box_rows)};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, tmap, coords, bar);
  }
}

/// Initialises `n` mbarriers (arrival count 1) and publishes them to the async proxy.
__device__ __forceinline__ void init_bars(uint64_t* bars, int n) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < n; ++i) cuda::ptx::mbarrier_init(&bars[i], 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  __syncthreads();
}

/// Latency: thread 0 times `reps` single copies (arrive.expect_tx, copy, try_wait until the
/// phase completes), chunks visited in a scattered order.
__global__ void tma_latency_kernel(const __grid_constant__ CUtensorMap tmap, TmaSource src, int reps,
                                   long long* out, int* err) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t bar;
  uint8_t* buf = align1k(smem_raw);
  init_bars(&bar, 1);
  if (threadIdx.x != 0) return;
  uint32_t phase = 0;
  for (int r = 0; r < reps; ++r) {
    const unsigned long long c = (static_cast<unsigned long long>(r) * 7919ull) % src.nchunks;
    const long long t0 = clock64();
    tma_issue(&tmap, src, c, buf, &bar);
    if (!wait_parity(&bar, phase)) { atomicExch(err, 1); return; }
    const long long t1 = clock64();
    phase ^= 1;
    out[r] = t1 - t0;
  }
}

constexpr int kMaxStages = 16;
constexpr int kProducers = 4;  // issuing warps per block (one per SMSP)

/// Bandwidth: a ring of `stages` SMEM buffers, each refilled as soon as its copy lands. Lane 0
/// of warp w (w < kProducers) owns stages w, w + kProducers, ...; in round r it waits for its
/// stage's copy of round r - 1 and issues the next one. Copy (r, s) reads chunk
/// (b * start_mult + (r * stages + s) * step) mod nchunks, advanced without division: the first
/// version of this kernel computed it with a 64-bit modulo in one thread, and that loop (about
/// 680 cycles per copy) set the measured rate instead of the TMA.
__global__ void tma_stream_kernel(const __grid_constant__ CUtensorMap tmap, TmaSource src, int stages, int rounds,
                                  unsigned long long start_mult, unsigned long long step, BlockClock* blocks,
                                  int* err) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t full[kMaxStages];
  uint8_t* buf = align1k(smem_raw);
  init_bars(full, stages);
  block_clock_begin(blocks);
  const int warp = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0 && warp < kProducers) {
    const unsigned long long n = src.nchunks;
    const unsigned long long inc = (static_cast<unsigned long long>(stages) * step) % n;  // per round
    unsigned long long base = (blockIdx.x * start_mult) % n;
    bool ok = true;
    for (int r = 0; r < rounds && ok; ++r) {
      for (int st = warp; st < stages; st += kProducers) {
        if (r > 0 && !wait_parity(&full[st], (r - 1) & 1)) { ok = false; break; }
        unsigned long long c = base + static_cast<unsigned long long>(st) * step;
        while (c >= n) c -= n;
        tma_issue(&tmap, src, c, buf + st * src.bytes, &full[st]);
      }
      base += inc;
      if (base >= n) base -= n;
    }
    for (int st = warp; st < stages && ok; st += kProducers)  // drain the last round
      ok = wait_parity(&full[st], (rounds - 1) & 1);
    if (!ok) atomicExch(err, 1);
  }
  __syncthreads();
  block_clock_end(blocks);
}

/// Reads a buffer once (grid-stride, 16 B per thread) so that it sits in L2.
__global__ void touch_kernel(const uint4* p, size_t n, uint32_t* sink) {
  uint32_t x = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint4 v = p[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x12345678u) sink[0] = x;
}

/// Plain load latency from L2: one thread chases a random cyclic permutation with ld.global.cg
/// (cached in L2 only), for comparison with the TMA latency.
__global__ void chase_kernel(const uint32_t* next, int steps, long long* out) {
  uint32_t i = 0;
  for (int k = 0; k < 64; ++k) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(i) : "l"(next + i));  // warm
  const long long t0 = clock64();
  for (int k = 0; k < steps; ++k) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(i) : "l"(next + i));
  const long long t1 = clock64();
  out[0] = t1 - t0;
  out[1] = i;
}

// --- host --------------------------------------------------------------------------------------

/// A TmaSource over `buf` (of `buf_bytes`) for copies of `bytes` (mode 0) or boxes of
/// `box_rows` rows (mode 1: bytes = box_rows * 128), with its tensor map.
std::pair<TmaSource, CUtensorMap> source(const uint8_t* buf, size_t buf_bytes, int mode, uint32_t bytes) {
  TmaSource s{buf, 0, bytes, mode, 0};
  CUtensorMap m{};
  if (mode == 0) {
    s.nchunks = buf_bytes / bytes;
    // Any valid map will do: the kernel does not read it in mode 0.
    m = make_tmap(buf, buf_bytes / 256, 8);
  } else {
    s.box_rows = static_cast<int>(bytes / 128);
    const unsigned long long rows = buf_bytes / 256;
    s.nchunks = 2 * (rows / s.box_rows);
    m = make_tmap(buf, rows, s.box_rows);
  }
  return {s, m};
}

void touch(const uint8_t* buf, size_t bytes, int sm_count) {
  DeviceBuffer<uint32_t> sink(1);
  touch_kernel<<<sm_count * 4, 512>>>(reinterpret_cast<const uint4*>(buf), bytes / 16, sink.get());
  MB_CHECK_LAUNCH("touch_kernel");
}

struct StreamResult {
  double bytes_per_clk_sm = 0;      // median over blocks of bytes / own cycles
  double chip_bytes_per_ns = 0;     // all bytes / (last end - first start)
  double sum_bytes_per_clk = 0;     // sum over blocks of bytes / own cycles
  std::vector<BlockClock> blocks;
};

/// Streams about `per_block` copies (rounded down to whole rounds of `stages`) per block.
StreamResult stream(const TmaSource& s, const CUtensorMap& m, int grid, int stages, int per_block,
                    unsigned long long start_mult, unsigned long long step) {
  const int smem = stages * static_cast<int>(s.bytes) + 1024;
  const int rounds = std::max(1, per_block / stages);
  allow_smem(tma_stream_kernel, smem);
  DeviceBuffer<BlockClock> blocks(grid);
  DeviceBuffer<int> err(1);
  err.zero();
  tma_stream_kernel<<<grid, 32 * kProducers, smem>>>(m, s, stages, rounds, start_mult, step, blocks.get(), err.get());
  MB_CHECK_LAUNCH("tma_stream_kernel");
  check_err(err, "tma_stream_kernel");
  StreamResult r;
  r.blocks = blocks.to_host();
  const double bytes = static_cast<double>(rounds) * stages * s.bytes;
  std::vector<double> rates;
  for (const BlockClock& b : r.blocks) {
    const double rate = bytes / static_cast<double>(b.clk1 - b.clk0);
    rates.push_back(rate);
    r.sum_bytes_per_clk += rate;
  }
  r.bytes_per_clk_sm = median(rates);
  const double ns = span_ns(r.blocks);
  r.chip_bytes_per_ns = ns > 0 ? bytes * grid / ns : 0.0;
  return r;
}

void bench_tma(Report& rep) {
  rep.set_method(
      "TMA loads completing on an mbarrier (arrive.expect_tx, then the copy; try_wait.parity). bulk = cp.async.bulk global->shared (1D); tensor2d = "
      "cp.async.bulk.tensor.2d of a bf16 [rows x 128] tensor in boxes of 64 cols x R rows, 128B "
      "swizzle (FA3's K/V tile layout). Latency: one SM, issue -> wait returns, clock64, median "
      "over scattered chunks of an L2-resident 4 MB buffer. Bandwidth: a ring of S SMEM stages, "
      "each refilled as soon as it lands, issued by 4 warps (one lane each); one SM (L2-resident 16 MB buffer), all SMs at once "
      "(same buffer, each SM starting elsewhere), and all SMs streaming a 1 GB buffer once "
      "(HBM). Bytes per SM clock from clock64; chip-wide bytes per clock = bytes / (%globaltimer "
      "span x measured clock).");
  const DeviceInfo& dev = rep.dev();
  const bool quick = rep.opt().quick;
  Json& res = rep.results();

  // L2-resident source for latency and L2 bandwidth; HBM source for the stream.
  const size_t l2_bytes = 16u << 20;
  DeviceBuffer<uint8_t> l2buf(l2_bytes);
  MB_CHECK(cudaMemset(l2buf.get(), 0x3c, l2_bytes));

  // --- latency
  {
    const size_t lat_bytes = 4u << 20;
    touch(l2buf.get(), lat_bytes, dev.sm_count);
    const int reps = quick ? 64 : 256;
    DeviceBuffer<long long> out(reps);
    DeviceBuffer<int> err(1);
    Json& lat = res["latency_cycles"];
    std::vector<double> sizes_b, bulk_med, t2_sizes, t2_med;
    for (int mode = 0; mode < 2; ++mode) {
      const std::vector<uint32_t> sizes = mode == 0 ? std::vector<uint32_t>{128, 1024, 4096, 8192, 16384, 32768}
                                                    : std::vector<uint32_t>{1024, 4096, 8192, 16384, 32768};
      for (uint32_t b : sizes) {
        auto [s, m] = source(l2buf.get(), lat_bytes, mode, b);
        const int smem = static_cast<int>(b) + 1024;
        allow_smem(tma_latency_kernel, smem);
        err.zero();
        touch(l2buf.get(), lat_bytes, dev.sm_count);
        tma_latency_kernel<<<1, 32, smem>>>(m, s, reps, out.get(), err.get());
        MB_CHECK_LAUNCH("tma_latency_kernel");
        check_err(err, "tma_latency_kernel");
        auto h = out.to_host();
        std::vector<double> v(h.begin() + 8, h.end());  // first 8: warm-up
        Json j = Json::object();
        j["bytes"] = b;
        j["median"] = median(v);
        j["min"] = vmin(v);
        j["p90"] = percentile(v, 90);
        lat[std::string(mode == 0 ? "bulk_" : "tensor2d_") + std::to_string(b)] = j;
        if (mode == 0) { sizes_b.push_back(b); bulk_med.push_back(median(v)); }
        else { t2_sizes.push_back(b); t2_med.push_back(median(v)); }
      }
    }
    // latency = a + bytes / bw: fit over the copies of at most 16 KB.
    auto fit = [](const std::vector<double>& x, const std::vector<double>& y) {
      double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        if (x[i] > 16384) continue;
        n += 1; sx += x[i]; sy += y[i]; sxx += x[i] * x[i]; sxy += x[i] * y[i];
      }
      const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
      return std::pair<double, double>{(sy - b * sx) / n, b};
    };
    auto [a1, b1] = fit(sizes_b, bulk_med);
    auto [a2, b2] = fit(t2_sizes, t2_med);
    res["latency_fit_bulk"] = Json::object();
    res["latency_fit_bulk"]["intercept_cycles"] = a1;
    res["latency_fit_bulk"]["bytes_per_clk"] = b1 > 0 ? 1.0 / b1 : 0.0;
    res["latency_fit_tensor2d"] = Json::object();
    res["latency_fit_tensor2d"]["intercept_cycles"] = a2;
    res["latency_fit_tensor2d"]["bytes_per_clk"] = b2 > 0 ? 1.0 / b2 : 0.0;
    // FA3's unit of transfer: one 64-col x 128-row box (16 KB); and the fixed part for the model.
    res["tma_latency_16k_tensor2d"] = lat["tensor2d_16384"]["median"];
    res["tma_latency"] = a2;

    // Plain L2-hit load latency (pointer chase over 4 MB).
    const uint32_t n = 1u << 20;
    std::vector<uint32_t> perm(n), next(n);
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin() + 1, perm.end(), std::mt19937(12345));
    for (uint32_t i = 0; i < n; ++i) next[perm[i]] = perm[(i + 1) % n];
    DeviceBuffer<uint32_t> dn(n);
    MB_CHECK(cudaMemcpy(dn.get(), next.data(), n * 4, cudaMemcpyHostToDevice));
    touch(reinterpret_cast<const uint8_t*>(dn.get()), n * 4ull, dev.sm_count);
    DeviceBuffer<long long> co(2);
    const int steps = quick ? 512 : 4096;
    chase_kernel<<<1, 1>>>(dn.get(), steps, co.get());
    MB_CHECK_LAUNCH("chase_kernel");
    res["l2_hit_ldg_cg_latency_cycles"] = static_cast<double>(co.to_host()[0]) / steps;
  }

  // --- bandwidth
  {
    touch(l2buf.get(), l2_bytes, dev.sm_count);
    struct Cfg { const char* name; int mode; uint32_t bytes; int stages; };
    const Cfg one[] = {{"bulk_4k_x16", 0, 4096, 16},   {"bulk_8k_x16", 0, 8192, 16},
                       {"bulk_16k_x8", 0, 16384, 8},   {"bulk_32k_x4", 0, 32768, 4},
                       {"tensor2d_8k_x16", 1, 8192, 16}, {"tensor2d_16k_x8", 1, 16384, 8}};
    Json& j1 = res["one_sm_l2"];
    double best_one = 0;
    const double one_total = quick ? 8e6 : 32e6;
    for (const Cfg& c : one) {
      auto [s, m] = source(l2buf.get(), l2_bytes, c.mode, c.bytes);
      const int per_block = static_cast<int>(one_total / c.bytes);
      stream(s, m, 1, c.stages, std::max(1, per_block / 8), 1, 1);  // warm-up
      StreamResult r = stream(s, m, 1, c.stages, per_block, 1, 1);
      rep.clock().add(r.blocks);
      Json j = Json::object();
      j["bytes_per_copy"] = c.bytes;
      j["stages"] = c.stages;
      j["bytes_per_clk"] = r.bytes_per_clk_sm;
      j["gb_per_s"] = r.chip_bytes_per_ns;
      j1[c.name] = j;
      best_one = std::max(best_one, r.bytes_per_clk_sm);
    }
    res["tma_bytes_per_clk_sm"] = best_one;

    const int grid = dev.sm_count;
    const double per_sm_total = quick ? 1e6 : 8e6;
    Json& ja = res["all_sms_l2"];
    double best_all = 0, best_all_clk = 0;
    for (const Cfg& c : {Cfg{"bulk_16k_x8", 0, 16384, 8}, Cfg{"tensor2d_16k_x8", 1, 16384, 8}}) {
      auto [s, m] = source(l2buf.get(), l2_bytes, c.mode, c.bytes);
      const int per_block = static_cast<int>(per_sm_total / c.bytes);
      stream(s, m, grid, c.stages, std::max(1, per_block / 8), 97, 1);  // warm-up
      StreamResult r = stream(s, m, grid, c.stages, per_block, 97, 1);
      rep.clock().add(r.blocks);
      ClockMeter cm;
      cm.add(r.blocks, 1000.0);
      Json j = Json::object();
      j["bytes_per_copy"] = c.bytes;
      j["stages"] = c.stages;
      j["bytes_per_clk_per_sm_median"] = r.bytes_per_clk_sm;
      j["sum_over_sms_bytes_per_clk"] = r.sum_bytes_per_clk;
      j["chip_gb_per_s"] = r.chip_bytes_per_ns;
      j["chip_bytes_per_clk"] = cm.ghz() > 0 ? r.chip_bytes_per_ns / cm.ghz() : 0.0;
      ja[c.name] = j;
      if (r.chip_bytes_per_ns > best_all) {
        best_all = r.chip_bytes_per_ns;
        best_all_clk = cm.ghz() > 0 ? r.chip_bytes_per_ns / cm.ghz() : 0.0;
      }
    }
    res["l2_bytes_per_clk"] = best_all_clk;
    res["l2_gb_per_s"] = best_all;

    // HBM: every SM streams its own chunks of a 1 GB buffer once (no reuse, so no L2 hits).
    const size_t hbm_bytes = quick ? (256u << 20) : (1u << 30);
    DeviceBuffer<uint8_t> hbuf(hbm_bytes);
    MB_CHECK(cudaMemset(hbuf.get(), 0x3c, hbm_bytes));
    {
      // Writing 128 MB elsewhere pushes the tail of hbuf (which the memset left in L2) out.
      DeviceBuffer<uint8_t> flush(128u << 20);
      MB_CHECK(cudaMemset(flush.get(), 0x3d, flush.size()));
      MB_CHECK(cudaDeviceSynchronize());
    }
    auto [s, m] = source(hbuf.get(), hbm_bytes, 0, 16384);
    const int per_block = static_cast<int>(s.nchunks / grid);
    StreamResult r = stream(s, m, grid, 8, per_block, 1, static_cast<unsigned long long>(grid));
    rep.clock().add(r.blocks);
    Json j = Json::object();
    j["bytes_per_copy"] = 16384;
    j["stages"] = 8;
    j["buffer_bytes"] = static_cast<long long>(hbm_bytes);
    j["chip_gb_per_s"] = r.chip_bytes_per_ns;
    j["bytes_per_clk_per_sm_median"] = r.bytes_per_clk_sm;
    res["all_sms_hbm"] = j;
    res["hbm_bytes_per_s"] = r.chip_bytes_per_ns * 1e9;
  }
}

// --- attention-like K/V streaming: shared tiles (L2 hits) against distinct tiles (HBM) -----------

/// Attention-like K/V stream. CTA b works on head b / m_blocks (its m_blocks siblings read the
/// same tiles, in the same order, at about the same time, as the m-block CTAs of one head do in
/// FA3); it loads KV tiles j = 0 .. n_blocks-1 of its head: the K tile and the V tile of
/// `tile_rows` rows x 128 columns, each as two 64-column boxes, through a ring of `stages`
/// stages of one K + one V tile each, completing on the stage's mbarrier. One thread issues
/// (FA3's producer); a stage is refilled as soon as its tiles land (no consumer).
__global__ void tma_kv_stream_kernel(const __grid_constant__ CUtensorMap tmap_k, const __grid_constant__ CUtensorMap tmap_v,
                                     int m_blocks, int n_blocks, int tile_rows, int seqlen, int stages,
                                     BlockClock* blocks, int* err) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t full[kMaxStages];
  uint8_t* buf = align1k(smem_raw);
  init_bars(full, stages);
  block_clock_begin(blocks);
  if (threadIdx.x == 0) {
    const uint32_t box = static_cast<uint32_t>(tile_rows) * 128;  // bytes of one 64-column box
    const int32_t row0 = static_cast<int32_t>(blockIdx.x / m_blocks) * seqlen;
    bool ok = true;
    int st = 0;
    for (int j = 0; j < n_blocks && ok; ++j) {
      // Fill j goes to stage j % stages once that stage's previous fill (j - stages) has landed.
      if (j >= stages && !wait_parity(&full[st], static_cast<uint32_t>((j / stages - 1) & 1))) ok = false;
      uint8_t* dst = buf + static_cast<size_t>(st) * 4 * box;
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &full[st], 4 * box);
      const int32_t row = row0 + j * tile_rows;
      for (int h = 0; h < 2; ++h) {
        const int32_t c[2] = {64 * h, row};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst + h * box, &tmap_k, c,
                                        &full[st]);
      }
      for (int h = 0; h < 2; ++h) {
        const int32_t c[2] = {64 * h, row};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst + (2 + h) * box,
                                        &tmap_v, c, &full[st]);
      }
      if (++st == stages) st = 0;
    }
    // Drain: wait for every stage's last fill.
    for (int k = 0; k < stages && ok; ++k) {
      const int j = n_blocks - stages + k;
      if (j < 0) continue;
      const int s = j % stages;
      const uint32_t p = static_cast<uint32_t>((j / stages) & 1);
      ok = wait_parity(&full[s], p);
    }
    if (!ok) atomicExch(err, 1);
  }
  __syncthreads();
  block_clock_end(blocks);
}

/// Latency of single TMA 2D loads (issue -> mbarrier complete), one thread: box c of `count`
/// is row block first_block + c * stride (64 columns, the left half only: with 256 B L2
/// promotion the right half would come along), so no box reuses a line of another.
__global__ void tma_single_latency_kernel(const __grid_constant__ CUtensorMap tmap, int box_rows,
                                          long long first_block, long long stride, int count, long long* out,
                                          int* err) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t bar;
  uint8_t* buf = align1k(smem_raw);
  init_bars(&bar, 1);
  if (threadIdx.x != 0) return;
  uint32_t phase = 0;
  for (int c = 0; c < count; ++c) {
    const int32_t coords[2] = {0, static_cast<int32_t>((first_block + c * stride) * box_rows)};
    const long long t0 = clock64();
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &bar,
                                         static_cast<uint32_t>(box_rows) * 128);
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, buf, &tmap, coords, &bar);
    if (!wait_parity(&bar, phase)) {
      atomicExch(err, 1);
      return;
    }
    const long long t1 = clock64();
    phase ^= 1;
    out[c] = t1 - t0;
  }
}

/// TMA tensor store latency, one thread: a box of 64 columns x box_rows rows written from SMEM
/// (filled with data and fenced to the async proxy first) to row block c of the tensor; per
/// store: clock64, cp.async.bulk.tensor store, commit_group, wait_group.read 0 (SMEM may be
/// reused), clock64, wait_group 0 (writes done), clock64. out[2c], out[2c+1].
__global__ void tma_store_latency_kernel(const __grid_constant__ CUtensorMap tmap, int box_rows, int count,
                                         long long* out) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* buf = align1k(smem_raw);
  uint32_t* w = reinterpret_cast<uint32_t*>(buf);
  for (int i = threadIdx.x; i < box_rows * 32; i += blockDim.x) w[i] = 0x3f803f80u ^ (hash32(i) & 0x007f007fu);
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int c = 0; c < count; ++c) {
    const int32_t coords[2] = {64 * (c & 1), (c >> 1) * box_rows};
    const long long t0 = clock64();
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, &tmap, coords, buf);
    cuda::ptx::cp_async_bulk_commit_group();
    cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
    const long long t1 = clock64();
    cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>{});
    const long long t2 = clock64();
    out[2 * c] = t1 - t0;
    out[2 * c + 1] = t2 - t0;
  }
}

void bench_tma_sharing(Report& rep) {
  rep.set_method(
      "Attention-like TMA loads on all SMs (one CTA per SM). CTA b streams head b / M's K and V "
      "(bf16 [heads*seqlen x 128], seqlen 8192, tiles of 128 rows x 128 columns = 32 KB, each "
      "two 64-column 128B-swizzled boxes) in KV order through a 2-stage ring of one K + one V "
      "tile per stage, one issuing thread, each stage refilled as soon as it lands; M sibling "
      "CTAs read the same tiles in the same order at about the same time, as FA3's m-blocks "
      "of one head. heads_H: H = 1, 2, 8, 33 heads shared by ceil(SMs / H) CTAs each; "
      "heads_all: every CTA its own head (M = 1), 132 x 4 MB, far larger than L2 -> HBM. cold: "
      "L2 flushed (4 x L2 size written elsewhere) before the launch; warm: the same launch again. "
      "Chip-wide bytes/s = bytes / %globaltimer span of the launch; per SM = bytes / own clock64 "
      "cycles (median over SMs); median of 3 launches. tma_latency_hbm: one thread, single 2D "
      "loads (64 columns x R rows) of boxes no earlier load touched, after an L2 flush, "
      "issue -> mbarrier complete; intercept of median latency vs bytes (R = 16..128). "
      "tma_store_latency: one thread, cp.async.bulk.tensor store of a 64 x 128 box (16 KB) + "
      "commit_group, clock64 until cp.async.bulk.wait_group.read 0 returns (median).");
  const DeviceInfo& dev = rep.dev();
  const bool quick = rep.opt().quick;
  Json& res = rep.results();
  const int grid = dev.sm_count;
  const int seqlen = quick ? 2048 : 8192, tile_rows = 128, stages = 2;
  const int n_blocks = seqlen / tile_rows;
  const size_t head_bytes = static_cast<size_t>(seqlen) * 256;
  const size_t kv_bytes = head_bytes * grid;  // room for a head per CTA
  DeviceBuffer<uint8_t> kbuf(kv_bytes), vbuf(kv_bytes);
  MB_CHECK(cudaMemset(kbuf.get(), 0x3c, kv_bytes));
  MB_CHECK(cudaMemset(vbuf.get(), 0x3d, kv_bytes));
  L2Flusher l2(dev);
  const unsigned long long rows = kv_bytes / 256;
  const CUtensorMap mk = make_tmap(kbuf.get(), rows, tile_rows);
  const CUtensorMap mv = make_tmap(vbuf.get(), rows, tile_rows);
  const int smem = stages * 4 * tile_rows * 128 + 1024;
  allow_smem(tma_kv_stream_kernel, smem);
  DeviceBuffer<BlockClock> blocks(grid);
  DeviceBuffer<int> err(1);
  const double bytes_per_cta = static_cast<double>(n_blocks) * 4 * tile_rows * 128;
  res["seqlen"] = seqlen;
  res["tile_rows"] = tile_rows;
  res["stages"] = stages;
  res["bytes_per_cta"] = bytes_per_cta;

  struct Run {
    double chip_bytes_per_s, per_sm_bytes_per_clk, chip_bytes_per_clk;
  };
  auto launch = [&](int m_blocks) {
    err.zero();
    tma_kv_stream_kernel<<<grid, 128, smem>>>(mk, mv, m_blocks, n_blocks, tile_rows, seqlen, stages, blocks.get(),
                                              err.get());
    MB_CHECK_LAUNCH("tma_kv_stream_kernel");
    check_err(err, "tma_kv_stream_kernel");
    const auto b = blocks.to_host();
    rep.clock().add(b, 5000.0);
    ClockMeter cm;
    cm.add(b, 1000.0);
    std::vector<double> rates;
    for (const BlockClock& x : b) rates.push_back(bytes_per_cta / static_cast<double>(x.clk1 - x.clk0));
    const double ns = span_ns(b);
    Run r;
    r.chip_bytes_per_s = ns > 0 ? bytes_per_cta * grid / ns * 1e9 : 0.0;
    r.per_sm_bytes_per_clk = median(rates);
    r.chip_bytes_per_clk = cm.ghz() > 0 ? r.chip_bytes_per_s * 1e-9 / cm.ghz() : 0.0;
    return r;
  };
  auto summarize = [](const std::vector<Run>& v, Json& j) {
    std::vector<double> a, b, c;
    for (const Run& r : v) {
      a.push_back(r.chip_bytes_per_s);
      b.push_back(r.per_sm_bytes_per_clk);
      c.push_back(r.chip_bytes_per_clk);
    }
    j["chip_bytes_per_s"] = median(a);
    j["per_sm_bytes_per_clk"] = median(b);
    j["chip_bytes_per_clk"] = median(c);
    return median(a);
  };
  Json& cfgs = res["configs"];
  double l2_shared = 0, hbm_distinct = 0, l2_shared_clk = 0, hbm_sm = 0, l2_sm = 0;
  const int reps = quick ? 1 : 3;
  for (int heads : {1, 2, 8, 33, grid}) {
    const int m_blocks = (grid + heads - 1) / heads;
    Json j = Json::object();
    j["heads"] = (grid + m_blocks - 1) / m_blocks;
    j["ctas_per_head"] = m_blocks;
    j["distinct_bytes"] = static_cast<double>(2 * head_bytes) * ((grid + m_blocks - 1) / m_blocks);
    std::vector<Run> cold, warm;
    for (int r = 0; r < reps; ++r) {
      l2.flush();
      cold.push_back(launch(m_blocks));
      warm.push_back(launch(m_blocks));
    }
    Json& jc = j["cold"];
    Json& jw = j["warm"];
    const double c = summarize(cold, jc);
    summarize(warm, jw);
    const std::string name = heads == grid ? "heads_all" : "heads_" + std::to_string(heads);
    cfgs[name] = j;
    if (heads == 2) {
      l2_shared = c;
      std::vector<double> v;
      for (const Run& x : cold) v.push_back(x.chip_bytes_per_clk);
      l2_shared_clk = median(v);
      v.clear();
      for (const Run& x : cold) v.push_back(x.per_sm_bytes_per_clk);
      l2_sm = median(v);
    }
    if (heads == grid) {
      hbm_distinct = c;
      std::vector<double> v;
      for (const Run& x : cold) v.push_back(x.per_sm_bytes_per_clk);
      hbm_sm = median(v);
    }
  }
  res["l2_hit_bytes_per_s"] = l2_shared;
  res["l2_hit_bytes_per_clk_chip"] = l2_shared_clk;
  res["l2_hit_bytes_per_clk_sm"] = l2_sm;
  res["hbm_distinct_bytes_per_s"] = hbm_distinct;
  res["hbm_distinct_bytes_per_clk_sm"] = hbm_sm;

  // --- cold-tile latency
  {
    const int count = quick ? 24 : 64;
    DeviceBuffer<long long> out(count);
    Json& lat = res["hbm_latency_cycles"];
    std::vector<double> xs, ys;
    long long first = 0;  // row blocks of 128 rows already used (disjoint regions per size)
    for (int box_rows : {16, 32, 64, 128}) {
      const CUtensorMap m = make_tmap(kbuf.get(), rows, box_rows);
      const int sm = box_rows * 128 + 1024;
      allow_smem(tma_single_latency_kernel, sm);
      l2.flush();
      err.zero();
      const long long first_block = first * (128 / box_rows);
      tma_single_latency_kernel<<<1, 32, sm>>>(m, box_rows, first_block, 1, count, out.get(), err.get());
      MB_CHECK_LAUNCH("tma_single_latency_kernel");
      check_err(err, "tma_single_latency_kernel");
      first += (static_cast<long long>(count) * box_rows + 127) / 128 + 16;
      const auto h = out.to_host();
      std::vector<double> v(h.begin() + 2, h.end());  // the first loads may miss the TLB
      Json j = Json::object();
      j["bytes"] = box_rows * 128;
      j["median"] = median(v);
      j["min"] = vmin(v);
      j["p90"] = percentile(v, 90);
      lat["tensor2d_" + std::to_string(box_rows * 128)] = j;
      xs.push_back(box_rows * 128.0);
      ys.push_back(median(v));
    }
    // Scattered 16 KB boxes (a row block every 1 MB) for comparison with the sequential ones.
    {
      const CUtensorMap m = make_tmap(kbuf.get(), rows, 128);
      allow_smem(tma_single_latency_kernel, 128 * 128 + 1024);
      l2.flush();
      err.zero();
      const long long stride = 32;  // 32 x 128 rows x 256 B = 1 MB
      const long long avail = static_cast<long long>(rows / 128);
      const int n = static_cast<int>(std::min<long long>(count, (avail - first - 1) / stride));
      if (n > 4) {
        tma_single_latency_kernel<<<1, 32, 128 * 128 + 1024>>>(m, 128, first, stride, n, out.get(), err.get());
        MB_CHECK_LAUNCH("tma_single_latency_kernel scattered");
        check_err(err, "tma_single_latency_kernel");
        auto h = out.to_host();
        std::vector<double> v(h.begin() + 2, h.begin() + n);
        res["hbm_latency_16k_scattered_1mb_median"] = median(v);
      }
    }
    const auto [a, b] = fit_line(xs, ys);
    res["hbm_latency_fit"] = Json::object();
    res["hbm_latency_fit"]["intercept_cycles"] = a;
    res["hbm_latency_fit"]["bytes_per_clk"] = b > 0 ? 1.0 / b : 0.0;
    res["tma_latency_hbm"] = a;
    res["tma_latency_hbm_16k"] = ys.back();
  }

  // --- store latency
  {
    const int count = quick ? 24 : 128;
    DeviceBuffer<uint8_t> dst(8u << 20);
    MB_CHECK(cudaMemset(dst.get(), 0, dst.size()));
    DeviceBuffer<long long> out(2 * count);
    Json& st = res["store_latency_cycles"];
    double main_value = 0;
    for (int box_rows : {32, 64, 128, 256}) {
      const CUtensorMap m = make_tmap(dst.get(), dst.size() / 256, box_rows);
      const int sm = box_rows * 128 + 1024;
      allow_smem(tma_store_latency_kernel, sm);
      tma_store_latency_kernel<<<1, 128, sm>>>(m, box_rows, count, out.get());
      MB_CHECK_LAUNCH("tma_store_latency_kernel");
      const auto h = out.to_host();
      std::vector<double> rd, done;
      for (int c = 4; c < count; ++c) {
        rd.push_back(static_cast<double>(h[2 * c]));
        done.push_back(static_cast<double>(h[2 * c + 1]));
      }
      Json j = Json::object();
      j["bytes"] = box_rows * 128;
      j["wait_group_read_median"] = median(rd);
      j["wait_group_read_min"] = vmin(rd);
      j["wait_group_median"] = median(done);
      st["tensor2d_" + std::to_string(box_rows * 128)] = j;
      if (box_rows == 128) main_value = median(rd);
    }
    res["tma_store_latency"] = main_value;
  }
}

// --- shared memory -----------------------------------------------------------------------------

constexpr int kSmemUnroll = 8;  // 16 would need 64+ registers for v4 with 32 warps

/// Every thread reads kVec 32-bit words per ld.shared (v1/v2/v4), 8 loads per iteration at
/// immediate offsets 4 KB apart; a warp's access is contiguous (conflict-free). The loads are
/// ld.volatile: plain ld.shared of loop-invariant addresses is hoisted out of the loop by ptxas
/// (asm volatile only binds the front end). xor-folding keeps the values live. The launch
/// bound caps registers at 64 so that 32 warps fit (unbounded, ptxas hoists all 16 v4 loads).
template <int kVec>
__global__ void __launch_bounds__(1024) smem_read_kernel(int iters, WarpSpan* spans, BlockClock* blocks, uint32_t* sink) {
  extern __shared__ uint32_t words[];
  for (int i = threadIdx.x; i < 16384; i += blockDim.x) words[i] = hash32(i);
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const uint32_t base = smem_u32(words) + (warp % 8) * (32 * kVec * 4) + lane * kVec * 4;
  uint32_t acc[4] = {0, 0, 0, 0};
  block_clock_begin(blocks);
  const long long c0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < kSmemUnroll; ++u) {
      const uint32_t addr = base + u * 4096;
      if constexpr (kVec == 4) {
        uint32_t x, y, z, w;
        asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(addr));
        acc[u & 3] ^= x ^ y ^ z ^ w;
      } else if constexpr (kVec == 2) {
        uint32_t x, y;
        asm volatile("ld.volatile.shared.v2.u32 {%0, %1}, [%2];" : "=r"(x), "=r"(y) : "r"(addr));
        acc[u & 3] ^= x ^ y;
      } else {
        uint32_t x;
        asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(x) : "r"(addr));
        acc[u & 3] ^= x;
      }
    }
  }
  const long long c1 = clock64();
  if (lane == 0) spans[blockIdx.x * 32 + warp] = WarpSpan{c0, c1};
  __syncthreads();
  block_clock_end(blocks);
  const uint32_t a = acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
  if (a == 0x9e3779b9u) sink[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

template <int kVec>
double smem_rate(Report& rep, int warps, Json& out, const char* name) {
  const int grid = rep.dev().sm_count;
  // kSmemUnroll loads x warps x 32 lanes x 4*kVec B per iteration; ~4M cycles at 128 B/clk.
  const double bytes_per_iter = kSmemUnroll * warps * 32.0 * 4 * kVec;
  const int iters = std::max(8, static_cast<int>((rep.opt().quick ? 4e5 : 4e6) * 128.0 / bytes_per_iter));
  DeviceBuffer<WarpSpan> spans(static_cast<size_t>(grid) * 32);
  DeviceBuffer<BlockClock> blocks(grid);
  DeviceBuffer<uint32_t> sink(static_cast<size_t>(grid) * warps * 32);
  allow_smem(smem_read_kernel<kVec>, kOneBlockPerSmSmem);
  smem_read_kernel<kVec><<<grid, warps * 32, kOneBlockPerSmSmem>>>(std::max(1, iters / 8), spans.get(), blocks.get(),
                                                                   sink.get());
  MB_CHECK_LAUNCH("smem_read_kernel warm-up");
  smem_read_kernel<kVec><<<grid, warps * 32, kOneBlockPerSmSmem>>>(iters, spans.get(), blocks.get(), sink.get());
  MB_CHECK_LAUNCH("smem_read_kernel");
  auto hb = blocks.to_host();
  rep.clock().add(hb);
  const std::vector<double> rates = per_sm_rates(spans.to_host(), grid, 32, warps, bytes_per_iter * iters);
  Json j = Json::object();
  j["warps_per_sm"] = warps;
  j["bytes_per_thread_per_load"] = 4 * kVec;
  j["bytes_per_clk_sm"] = median(rates);
  j["bytes_per_clk_sm_min_over_sms"] = vmin(rates);
  j["warp_loads_per_clk_sm"] = median(rates) / (128.0 * kVec);
  out[name] = j;
  return median(rates);
}

void bench_smem(Report& rep) {
  rep.set_method(
      "ld.volatile.shared (u32, v2.u32, v4.u32) reads, conflict-free (each warp reads a contiguous "
      "128/256/512 B), 8 loads per loop iteration, one block per SM on all SMs; bytes per SM "
      "clock from clock64 spans, median over SMs.");
  Json& cfg = rep.results()["configs"];
  const double v4_32 = smem_rate<4>(rep, 32, cfg, "v4_32_warps");
  smem_rate<4>(rep, 16, cfg, "v4_16_warps");
  smem_rate<4>(rep, 8, cfg, "v4_8_warps");
  smem_rate<2>(rep, 32, cfg, "v2_32_warps");
  smem_rate<1>(rep, 32, cfg, "v1_32_warps");
  rep.results()["smem_bytes_per_clk"] = v4_32;
}

}  // namespace

std::vector<Benchmark> memory_benchmarks() {
  return {
      {"tma", "TMA (bulk and tensor 2D) latency and bandwidth from L2, one SM and all SMs; HBM", bench_tma},
      {"smem_bw", "shared-memory read bandwidth (ld.shared v1/v2/v4)", bench_smem},
      {"tma_sharing", "attention-like K/V TMA streams: tiles shared by sibling CTAs (L2) vs distinct (HBM); cold-tile and store latency",
       bench_tma_sharing},
  };
}

}  // namespace mb
