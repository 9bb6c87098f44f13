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

}  // namespace

std::vector<Benchmark> tma_load_benchmarks() {
  return {{"tma_under_load",
           "one SM's 16 KB TMA load latency (L2 hit, HBM miss) while the other SMs stream tiles at a chosen rate",
           bench_tma_under_load}};
}

}  // namespace mb
