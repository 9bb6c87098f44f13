// TMA load latency of one SM while the other SMs stream K/V-like tiles at a chosen rate.
//
// Why: the simulator runs one SM and must say how fast that SM's TMA loads move while the other
// SMs load too. tma_sharing measures the chip's rate when every SM streams without pause (the
// saturated share); attention kernels load in bursts between blocks of compute, so a load usually
// meets a chip that is only partly busy. This measures a lone load's time (issue -> mbarrier
// complete) against how busy the rest of the chip keeps L2 and HBM.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cuda/ptx>

#include "microbench.cuh"
#include "neighbour_work.cuh"

namespace mb {
namespace {

constexpr int kBoxRows = 64;                 // a box of 64 rows x 64 bf16 columns = 8 KB
constexpr int kBoxBytes = kBoxRows * 128;    // bytes of one box
constexpr int kTileBytes = 2 * kBoxBytes;    // a load: both column halves of 64 rows (16 KB)
constexpr int kStages = 2;                   // background ring stages
constexpr int kProbeTiles = 4;               // tiles the probe cycles through when it wants L2 hits
constexpr long long kProbeGapCycles = 3000;  // probe pause between its loads (keeps its own load small)

__device__ __forceinline__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}

/// Issues both 64-column boxes of the 64-row tile at `row` into `dst`, completing on `bar`.
__device__ __forceinline__ void load_tile(const CUtensorMap* m, int32_t row, uint8_t* dst, uint64_t* bar) {
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar,
                                       kTileBytes);
  for (int h = 0; h < 2; ++h) {
    const int32_t c[2] = {64 * h, row};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst + h * kBoxBytes, m, c, bar);
  }
}

/// One CTA per SM. CTA 0 probes: thread 0 loads `count` single 16 KB tiles one at a time
/// (clock64 before the issue and after the mbarrier completes; out[c]), pausing kProbeGapCycles
/// between them; with probe_hits it cycles through kProbeTiles tiles (L2 hits after the first
/// pass), else every tile is one no load touched before (rows from probe_row0 upward: HBM).
/// CTAs >= 1 (when `background`) stream 16 KB tiles through a 2-stage ring, each stage refilled
/// `gap` cycles after its tile landed (compute between loads), until the probe is done; tiles
/// walk rows [bg_row0 + b * bg_stride, + bg_rows) in order, wrapping (bg_stride 0: every CTA
/// walks the same rows, from its own offset: shared tiles, L2 hits). bytes[b] and clk[b]: what
/// each CTA moved and when.
__global__ void tma_under_load_kernel(const __grid_constant__ CUtensorMap m, int count, int probe_hits,
                                      long long probe_row0, int background, long long gap, long long bg_row0,
                                      long long bg_stride, long long bg_rows, volatile int* done, long long* out,
                                      double* bytes, BlockClock* clk, int* err) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t bars[kStages];
  uint8_t* buf = align1k(smem_raw);
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) cuda::ptx::mbarrier_init(&bars[i], 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) {
    uint32_t phase = 0;
    for (int c = 0; c < count; ++c) {
      const long long row = probe_hits ? probe_row0 + (c % kProbeTiles) * kBoxRows : probe_row0 + c * kBoxRows;
      const long long t0 = clock64();
      load_tile(&m, static_cast<int32_t>(row), buf, &bars[0]);
      if (!wait_parity(&bars[0], phase)) {
        atomicExch(err, 1);
        break;
      }
      out[c] = clock64() - t0;
      phase ^= 1;
      spin(kProbeGapCycles);
    }
    *done = 1;
    return;
  }
  if (!background) return;
  const unsigned long long ns0 = globaltimer();
  const long long c0 = clock64();
  const long long first = bg_row0 + blockIdx.x * bg_stride;
  long long off = bg_stride == 0 ? (blockIdx.x * 7 * kBoxRows) % bg_rows : 0;  // shared rows: spread the start
  long long moved = 0;
  uint32_t phase[kStages] = {0, 0};
  for (int s = 0; s < kStages; ++s) {
    load_tile(&m, static_cast<int32_t>(first + off), buf + s * kTileBytes, &bars[s]);
    off += kBoxRows;
    if (off >= bg_rows) off = 0;
  }
  int s = 0;
  while (*done == 0) {
    if (!wait_parity(&bars[s], phase[s])) {
      atomicExch(err, 2);
      break;
    }
    phase[s] ^= 1;
    moved += kTileBytes;
    spin(gap);
    load_tile(&m, static_cast<int32_t>(first + off), buf + s * kTileBytes, &bars[s]);
    off += kBoxRows;
    if (off >= bg_rows) off = 0;
    s ^= 1;
  }
  for (int k = 0; k < kStages; ++k) (void)wait_parity(&bars[k], phase[k]);  // drain before exit
  clk[blockIdx.x] = BlockClock{c0, clock64(), ns0, globaltimer(), smid(), 0};
  bytes[blockIdx.x] = static_cast<double>(moved);
}

void bench_tma_under_load(Report& rep) {
  rep.set_method(
      "One CTA per SM (120 KB dynamic SMEM). Probe (CTA 0, one thread): single TMA loads of 16 KB "
      "(64 rows x 128 bf16 columns as two 64-column 128B-swizzled boxes, an hd64 K or V tile), "
      "clock64 from the issue to the mbarrier's completion, 3000 cycles apart; 'hit': four tiles "
      "cycled (L2 hits after the first pass), 'miss': tiles no load touched before (HBM). "
      "Background (the other SMs, one thread each): 16 KB tiles through a 2-stage ring, each stage "
      "refilled `gap` cycles after its tile lands (compute between loads), until the probe is done; "
      "'hbm': each CTA walks its own 4 MB of rows (132 x 4 MB, far beyond L2); 'l2': every CTA walks "
      "the same 4 MB from its own offset (L2 hits). Background chip bytes/s = bytes moved / the "
      "CTAs' common %globaltimer span; utilisation = that / the same mode's rate at gap 0. Probe "
      "latency: median (and p90) of the loads after the first 8; median over 3 launches. The L2 is "
      "flushed (4 x its size written elsewhere) before each launch.");
  const DeviceInfo& dev = rep.dev();
  const bool quick = rep.opt().quick;
  const int sms = dev.sm_count;
  const int count = quick ? 40 : 160;
  const long long bg_rows = (4ll << 20) / 256;  // 4 MB per background CTA
  const long long probe_rows = static_cast<long long>(count + 16) * kBoxRows;
  const long long total_rows = probe_rows + bg_rows * sms;
  if (total_rows > (1ll << 31) - 1) throw std::runtime_error("tma_under_load: tensor rows overflow int32 coordinates");
  DeviceBuffer<uint8_t> data(static_cast<size_t>(total_rows) * 256);
  MB_CHECK(cudaMemset(data.get(), 0x3c, data.size()));
  L2Flusher l2(dev);
  const CUtensorMap m = make_tmap(data.get(), static_cast<unsigned long long>(total_rows), kBoxRows);
  const int smem = 120 * 1024;
  allow_smem(tma_under_load_kernel, smem);
  DeviceBuffer<long long> out(count);
  DeviceBuffer<double> bytes(sms);
  DeviceBuffer<BlockClock> clk(sms);
  DeviceBuffer<int> done(1), err(1);
  Json& res = rep.results();
  res["tile_bytes"] = kTileBytes;
  res["probe_gap_cycles"] = kProbeGapCycles;

  struct Point {
    double latency, p90, chip_bytes_per_s, per_sm_bytes_per_clk;
  };
  auto launch = [&](bool hits, bool background, bool bg_l2, long long gap) {
    std::vector<double> lat, p90, chip, per_sm;
    for (int r = 0; r < 3; ++r) {
      l2.flush();
      done.zero();
      err.zero();
      MB_CHECK(cudaMemset(bytes.get(), 0, sms * sizeof(double)));
      MB_CHECK(cudaMemset(clk.get(), 0, sms * sizeof(BlockClock)));
      tma_under_load_kernel<<<sms, 32, smem>>>(m, count, hits ? 1 : 0, 0, background ? 1 : 0, gap, probe_rows,
                                               bg_l2 ? 0 : bg_rows, bg_rows, done.get(), out.get(), bytes.get(),
                                               clk.get(), err.get());
      MB_CHECK_LAUNCH("tma_under_load_kernel");
      check_err(err, "tma_under_load_kernel");
      const auto o = out.to_host();
      std::vector<double> v(o.begin() + 8, o.end());
      lat.push_back(median(v));
      p90.push_back(percentile(v, 90));
      if (background) {
        const auto b = bytes.to_host();
        auto c = clk.to_host();
        double total = 0;
        std::vector<BlockClock> bg(c.begin() + 1, c.end());
        std::vector<double> rates;
        for (int i = 1; i < sms; ++i) {
          total += b[i];
          if (c[i].clk1 > c[i].clk0) rates.push_back(b[i] / static_cast<double>(c[i].clk1 - c[i].clk0));
        }
        rep.clock().add(bg, 20000.0);
        const double ns = span_ns(bg);
        chip.push_back(ns > 0 ? total / ns * 1e9 : 0.0);
        per_sm.push_back(median(rates));
      }
    }
    return Point{median(lat), median(p90), chip.empty() ? 0.0 : median(chip), per_sm.empty() ? 0.0 : median(per_sm)};
  };
  const std::vector<long long> gaps = quick ? std::vector<long long>{0, 2000, 8000}
                                            : std::vector<long long>{0, 250, 500, 1000, 2000, 4000, 8000, 16000};
  struct Mode {
    const char* name;
    bool hits, bg_l2;
  };
  for (const Mode& md : {Mode{"probe_hit_background_l2", true, true}, Mode{"probe_hit_background_hbm", true, false},
                         Mode{"probe_miss_background_hbm", false, false}}) {
    Json j = Json::object();
    const Point alone = launch(md.hits, false, md.bg_l2, 0);
    j["alone"]["latency_cycles"] = alone.latency;
    j["alone"]["latency_p90_cycles"] = alone.p90;
    double saturated = 0;
    Json pts = Json::array();
    for (long long gap : gaps) {
      const Point p = launch(md.hits, true, md.bg_l2, gap);
      if (gap == 0) saturated = p.chip_bytes_per_s;
      Json q = Json::object();
      q["gap_cycles"] = gap;
      q["latency_cycles"] = p.latency;
      q["latency_p90_cycles"] = p.p90;
      q["background_chip_bytes_per_s"] = p.chip_bytes_per_s;
      q["background_per_sm_bytes_per_clk"] = p.per_sm_bytes_per_clk;
      q["utilisation"] = saturated > 0 ? p.chip_bytes_per_s / saturated : 0.0;
      q["latency_over_alone"] = alone.latency > 0 ? p.latency / alone.latency : 0.0;
      pts.push_back(q);
    }
    j["points"] = pts;
    res["modes"][md.name] = j;
  }
  res["latency_hit_alone_cycles"] = res["modes"]["probe_hit_background_l2"]["alone"]["latency_cycles"];
  res["latency_miss_alone_cycles"] = res["modes"]["probe_miss_background_hbm"]["alone"]["latency_cycles"];
}

// --- tma_issue: how long the issuing thread spends on a burst of TMA loads -----------------------
//
// Why: a kernel's load warp issues each K or V tile as head_dim/64 boxes back to back, beside the
// consumer warps on its SMSP. The time its thread spends issuing (not waiting) is its load_k and
// load_v spans; the simulator must charge it to the load warp, not to its waits on the rings.

constexpr int kIssueBoxRows = 128;                   // 64 columns x 128 rows bf16: FA3's hd128 K box
constexpr int kIssueBoxBytes = kIssueBoxRows * 128;  // 16 KB
constexpr int kIssueMaxBoxes = 12;                   // SMEM: 12 x 16 KB
constexpr int kIssueReps = 24;                       // bursts per launch (the first 4 dropped)
constexpr int kIssueTensorBoxes = 256;               // boxes of the tensor's first 64 columns (8 MB, L2-resident)

/// One thread per CTA issues kIssueReps bursts of B 16 KB tensor2d loads (one arrive.expect_tx for
/// the burst, then the B copies into B SMEM slots), clock64 before the burst and after each issue
/// and after the mbarrier completes; out[((cta * kIssueReps) + rep) * (B + 1) + i]: cycles from the
/// burst's start to the end of issue i (i < B) and to completion (i = B). Bursts start 4000 cycles
/// after the previous one completed, so each meets an idle TMA unit (when every SM runs a CTA, each
/// SM's unit at about the same time: the chip's L2 shared as in the kernel's bursts). A launch of
/// 12 warps keeps the issuing warp's SMSP busy meanwhile: its warps 4 and 8 share SMSP 0 with the
/// issuing thread's warp 0 (warp w runs on SMSP w % 4) and issue FFMAs in 8 chains (every cycle
/// they can) until the bursts are done.
template <int B>
__global__ void tma_issue_kernel(const __grid_constant__ CUtensorMap m, long long* out, BlockClock* clk, float* sink,
                                 int* err) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t bar;
  __shared__ volatile int stop;
  uint8_t* buf = align1k(smem_raw);
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(&bar, 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    stop = 0;
  }
  __syncthreads();
  const int warp = threadIdx.x / 32;
  if (warp == 4 || warp == 8) {
    ffma_chains_until<8>(&stop, sink);
    return;
  }
  if (threadIdx.x != 0) return;
  if (blockDim.x > 32) spin(2000);  // the busy warps are running
  const unsigned long long ns0 = globaltimer();
  const long long c0 = clock64();
  uint32_t phase = 0;
  for (int rep = 0; rep < kIssueReps; ++rep) {
    long long t[B + 1];
    const int first = (blockIdx.x * 7 + rep * B) % kIssueTensorBoxes;
    const long long t0 = clock64();
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &bar,
                                         B * kIssueBoxBytes);
#pragma unroll
    for (int i = 0; i < B; ++i) {
      const int32_t c[2] = {0, ((first + i) % kIssueTensorBoxes) * kIssueBoxRows};
      cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, buf + i * kIssueBoxBytes, &m,
                                      c, &bar);
      t[i] = clock64();
    }
    if (!wait_parity(&bar, phase)) {
      atomicExch(err, 1);
      break;
    }
    t[B] = clock64();
    phase ^= 1;
    long long* o = out + (static_cast<long long>(blockIdx.x) * kIssueReps + rep) * (B + 1);
#pragma unroll
    for (int i = 0; i <= B; ++i) o[i] = t[i] - t0;
    spin(4000);
  }
  clk[blockIdx.x] = BlockClock{c0, clock64(), ns0, globaltimer(), smid(), 0};
  stop = 1;
}

void bench_tma_issue(Report& rep) {
  rep.set_method(
      "One thread per CTA (one CTA on one SM, or one per SM at once) issues bursts of B TMA loads "
      "of 16 KB (bf16 boxes of 64 columns x 128 rows, 128B swizzle: FA3's hd128 K/V box) from an "
      "8 MB L2-resident tensor (warmed first), one arrive.expect_tx for the burst then the B copies "
      "into B SMEM slots; clock64 before the burst, after each copy's issue, and after the mbarrier "
      "completes. 24 bursts per launch 4000 cycles apart (the first 4 dropped), 3 launches; medians "
      "over bursts (and CTAs). first_box_issue_cycles: the issue end at B = 1 (arrive.expect_tx and "
      "one copy); issue_cycles_per_box: (issue end of copy 7 - of copy 0) / 7 at B = 8; "
      "boxes_before_stall: copies of the B = 12 burst issued before the first whose issue took over "
      "1.5 x issue_cycles_per_box (the TMA unit's queue full). Modes: one_sm (one 32-thread CTA), "
      "all_sms (one per SM at once), one_sm_busy_smsp (one CTA of 12 warps: warps 4 and 8, on the "
      "issuing warp's SMSP, issue independent FFMAs throughout, as a kernel's consumer warps beside "
      "its load warp).");
  const DeviceInfo& dev = rep.dev();
  const int sms = dev.sm_count;
  // make_tmap's rows are 128 columns (256 B) wide; the boxes read their first 64 columns.
  const unsigned long long rows = static_cast<unsigned long long>(kIssueTensorBoxes) * kIssueBoxRows;
  DeviceBuffer<uint8_t> data(static_cast<size_t>(rows) * 256);
  MB_CHECK(cudaMemset(data.get(), 0x3c, data.size()));
  const CUtensorMap m = make_tmap(data.get(), rows, kIssueBoxRows);
  const int smem = kIssueMaxBoxes * kIssueBoxBytes + 1024;
  DeviceBuffer<long long> out(static_cast<size_t>(sms) * kIssueReps * (kIssueMaxBoxes + 1));
  DeviceBuffer<int> err(1);
  Json& res = rep.results();
  res["box_bytes"] = kIssueBoxBytes;
  // Per B: medians over (CTA, rep >= 4) of each copy's issue end and of the completion.
  DeviceBuffer<float> sink(1);
  DeviceBuffer<BlockClock> clk(sms);
  auto run = [&](auto kernel, int b, int ctas, int threads) {
    allow_smem(kernel, smem);
    std::vector<std::vector<double>> v(b + 1);
    for (int launch = 0; launch < 4; ++launch) {  // launch 0 warms L2 and is dropped
      err.zero();
      kernel<<<ctas, threads, smem>>>(m, out.get(), clk.get(), sink.get(), err.get());
      MB_CHECK_LAUNCH("tma_issue_kernel");
      check_err(err, "tma_issue_kernel");
      if (launch == 0) continue;
      auto cl = clk.to_host();
      rep.clock().add(std::vector<BlockClock>(cl.begin(), cl.begin() + ctas));
      const auto o = out.to_host();
      for (int c = 0; c < ctas; ++c)
        for (int r = 4; r < kIssueReps; ++r)
          for (int i = 0; i <= b; ++i)
            v[i].push_back(static_cast<double>(o[(static_cast<size_t>(c) * kIssueReps + r) * (b + 1) + i]));
    }
    std::vector<double> ends;
    for (int i = 0; i < b; ++i) ends.push_back(median(v[i]));
    return std::pair{ends, median(v[b])};
  };
  struct Mode {
    const char* name;
    int ctas, threads;
  };
  for (const Mode& mode : {Mode{"one_sm", 1, 32}, Mode{"all_sms", sms, 32}, Mode{"one_sm_busy_smsp", 1, 384}}) {
    Json md = Json::object();
    std::vector<std::vector<double>> ends(kIssueMaxBoxes + 1);
    auto point = [&](auto kernel, int b) {
      const auto [e, done] = run(kernel, b, mode.ctas, mode.threads);
      ends[b] = e;
      Json j = Json::object();
      Json a = Json::array();
      for (double x : e) a.push_back(x);
      j["issue_end_cycles"] = a;  // after copy 0, 1, ..., b-1
      j["done_cycles"] = done;
      md["b" + std::to_string(b)] = j;
    };
    point(tma_issue_kernel<1>, 1);
    point(tma_issue_kernel<2>, 2);
    point(tma_issue_kernel<4>, 4);
    point(tma_issue_kernel<8>, 8);
    point(tma_issue_kernel<12>, 12);
    const double per_box = (ends[8][7] - ends[8][0]) / 7;
    int before_stall = kIssueMaxBoxes;
    for (int i = 1; i < kIssueMaxBoxes; ++i)
      if (ends[12][i] - ends[12][i - 1] > 1.5 * per_box) {
        before_stall = i;
        break;
      }
    md["first_box_issue_cycles"] = ends[1][0];
    md["issue_cycles_per_box"] = per_box;
    md["boxes_before_stall"] = before_stall;
    res["modes"][mode.name] = md;
  }
  // Headline figures: one SM's, its SMSP otherwise idle (the all-SM runs show the same).
  res["first_box_issue_cycles"] = res["modes"]["one_sm"]["first_box_issue_cycles"];
  res["issue_cycles_per_box"] = res["modes"]["one_sm"]["issue_cycles_per_box"];
  res["boxes_before_stall"] = res["modes"]["one_sm"]["boxes_before_stall"];
}

}  // namespace

std::vector<Benchmark> tma_load_benchmarks() {
  return {{"tma_under_load",
           "one SM's 16 KB TMA load latency (L2 hit, HBM miss) while the other SMs stream tiles at a chosen rate",
           bench_tma_under_load},
          {"tma_issue", "cycles the issuing thread spends on a burst of 1-12 16 KB TMA loads (one SM, all SMs)",
           bench_tma_issue}};
}

}  // namespace mb
