// Synchronisation and timer benchmarks: mbarrier arrive -> waiter-resumes latency (two warps
// ping-pong), named-barrier (bar.sync / bar.arrive) latency, and the %globaltimer update step.
#include "microbench.cuh"

#include <cuda/ptx>

#include <algorithm>
#include <map>
#include <numeric>

namespace mb {
namespace {

/// Warp 0 and warp `partner` ping-pong over two mbarriers for `iters` rounds: warp 0 arrives on
/// bars[0] and waits on bars[1]; the partner waits on bars[0] and arrives on bars[1]. One
/// round = two arrive -> wake-up latencies. Arrivals per round: lane 0 only (count 1) or all
/// 32 lanes (count 32).
__global__ void mbarrier_pingpong_kernel(int iters, int partner, int all_lanes, BlockClock* out, int* err) {
  __shared__ uint64_t bars[2];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(&bars[0], all_lanes ? 32 : 1);
    cuda::ptx::mbarrier_init(&bars[1], all_lanes ? 32 : 1);
  }
  __syncthreads();
  const bool arrives = all_lanes || lane == 0;
  if (warp == 0) {
    const unsigned long long n0 = globaltimer();
    const long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
      if (arrives) (void)cuda::ptx::mbarrier_arrive(&bars[0]);
      if (!wait_parity(&bars[1], i & 1)) { atomicExch(err, 1); return; }
      __syncwarp();  // every lane has seen phase i before lane 0 can help complete phase i + 1
    }
    const long long t1 = clock64();
    const unsigned long long n1 = globaltimer();
    if (lane == 0) out[0] = BlockClock{t0, t1, n0, n1, smid(), 0};
  } else if (warp == partner) {
    for (int i = 0; i < iters; ++i) {
      if (!wait_parity(&bars[0], i & 1)) { atomicExch(err, 1); return; }
      __syncwarp();
      if (arrives) (void)cuda::ptx::mbarrier_arrive(&bars[1]);
    }
  }
}

/// Named barriers: warps [0, g) are group A, [g, 2g) group B, count = 64 g threads.
/// mode 0 (ping-pong, FA3's pingpong pattern): A does bar.arrive 1 then bar.sync 2, B does
/// bar.sync 1 then bar.arrive 2; a round is two arrive -> release latencies.
/// mode 1: everyone does bar.sync 1 each round (the cost of one full barrier).
__global__ void named_barrier_kernel(int iters, int g, int mode, BlockClock* out) {
  const int warp = threadIdx.x >> 5;
  const int cnt = 64 * g;
  const bool group_a = warp < g;
  __syncthreads();
  const unsigned long long n0 = globaltimer();
  const long long t0 = clock64();
  if (mode == 0) {
    if (group_a) {
      for (int i = 0; i < iters; ++i) {
        asm volatile("bar.arrive 1, %0;" ::"r"(cnt) : "memory");
        asm volatile("bar.sync 2, %0;" ::"r"(cnt) : "memory");
      }
    } else {
      for (int i = 0; i < iters; ++i) {
        asm volatile("bar.sync 1, %0;" ::"r"(cnt) : "memory");
        asm volatile("bar.arrive 2, %0;" ::"r"(cnt) : "memory");
      }
    }
  } else {
    for (int i = 0; i < iters; ++i) asm volatile("bar.sync 1, %0;" ::"r"(cnt) : "memory");
  }
  const long long t1 = clock64();
  const unsigned long long n1 = globaltimer();
  if (threadIdx.x == 0) out[0] = BlockClock{t0, t1, n0, n1, smid(), 0};
}

/// One thread polls %globaltimer and records the size (ns) and SM cycles of each of the first
/// `max_changes` changes, stopping after `max_ns`; also times `reads` back-to-back reads.
__global__ void globaltimer_kernel(int max_changes, unsigned long long max_ns, unsigned long long* d_ns,
                                   long long* d_clk, int* count, long long* read_cost, int reads) {
  unsigned long long prev = globaltimer();
  long long pc = clock64();
  const unsigned long long start = prev;
  int n = 0;
  while (n < max_changes) {
    const unsigned long long t = globaltimer();
    if (t != prev) {
      const long long c = clock64();
      d_ns[n] = t - prev;
      d_clk[n] = c - pc;
      prev = t;
      pc = c;
      ++n;
    }
    if (t - start > max_ns) break;
  }
  *count = n;
  unsigned long long x = 0;
  const long long r0 = clock64();
  for (int i = 0; i < reads; ++i) x += globaltimer();
  const long long r1 = clock64();
  read_cost[0] = r1 - r0;
  read_cost[1] = static_cast<long long>(x & 1);
}

// --- host --------------------------------------------------------------------------------------

void bench_mbarrier(Report& rep) {
  rep.set_method(
      "Two warps of one block ping-pong over two mbarriers (mbarrier.arrive; all 32 lanes spin "
      "on mbarrier.try_wait.parity, then __syncwarp), clock64 over N rounds in warp 0; latency "
      "= cycles per round / 2. partner warp 1 (another SMSP) or 4 (same SMSP, if warp w -> SMSP w % 4); one "
      "arriving lane (count 1) or 32 (count 32).");
  const int iters = rep.opt().quick ? 2000 : 20000;
  DeviceBuffer<BlockClock> out(1);
  DeviceBuffer<int> err(1);
  Json& cfg = rep.results()["configs"];
  double main_latency = 0;
  struct Cfg { const char* name; int partner; int all; };
  for (const Cfg& c : {Cfg{"partner_warp1_count1", 1, 0}, Cfg{"partner_warp4_count1", 4, 0},
                       Cfg{"partner_warp1_count32", 1, 1}}) {
    err.zero();
    mbarrier_pingpong_kernel<<<1, (c.partner + 1) * 32>>>(iters / 10, c.partner, c.all, out.get(), err.get());
    MB_CHECK_LAUNCH("mbarrier_pingpong_kernel warm-up");
    mbarrier_pingpong_kernel<<<1, (c.partner + 1) * 32>>>(iters, c.partner, c.all, out.get(), err.get());
    MB_CHECK_LAUNCH("mbarrier_pingpong_kernel");
    if (err.to_host()[0]) throw std::runtime_error("mbarrier ping-pong: a wait timed out");
    const auto rec = out.to_host();
    rep.clock().add(rec);
    const double round = static_cast<double>(rec[0].clk1 - rec[0].clk0) / iters;
    Json j = Json::object();
    j["round_trip_cycles"] = round;
    j["arrive_to_wake_cycles"] = round / 2;
    cfg[c.name] = j;
    if (c.partner == 1 && !c.all) main_latency = round / 2;
  }
  rep.results()["mbarrier_latency"] = main_latency;
}

void bench_named_barrier(Report& rep) {
  rep.set_method(
      "Named barriers. pingpong: group A does bar.arrive 1 + bar.sync 2, group B bar.sync 1 + "
      "bar.arrive 2 (FA3's warpgroup pingpong); cycles per round / 2 = arrive -> release "
      "latency. sync_all: every warp does bar.sync 1 each round; cycles per round. Groups of 1 "
      "warp (64 threads in all) or 1 warpgroup (256 threads).");
  const int iters = rep.opt().quick ? 2000 : 20000;
  DeviceBuffer<BlockClock> out(1);
  Json& cfg = rep.results()["configs"];
  double main_latency = 0;
  for (int g : {1, 4}) {
    for (int mode : {0, 1}) {
      named_barrier_kernel<<<1, 64 * g>>>(iters / 10, g, mode, out.get());
      MB_CHECK_LAUNCH("named_barrier_kernel warm-up");
      named_barrier_kernel<<<1, 64 * g>>>(iters, g, mode, out.get());
      MB_CHECK_LAUNCH("named_barrier_kernel");
      const auto rec = out.to_host();
      rep.clock().add(rec);
      const double round = static_cast<double>(rec[0].clk1 - rec[0].clk0) / iters;
      Json j = Json::object();
      j["threads"] = 64 * g;
      j["cycles_per_round"] = round;
      if (mode == 0) j["arrive_to_release_cycles"] = round / 2;
      const std::string name = std::string(mode == 0 ? "pingpong_" : "sync_all_") + (g == 1 ? "2_warps" : "2_warpgroups");
      cfg[name] = j;
      if (mode == 0 && g == 4) main_latency = round / 2;
    }
  }
  rep.results()["named_barrier_latency"] = main_latency;
}

void bench_globaltimer(Report& rep) {
  rep.set_method(
      "One thread polls %globaltimer and records every change (ns step and clock64 cycles "
      "between changes), up to 4096 changes or 20 ms; the first change is dropped (the polling "
      "started mid-step). Also the cost of one read (1000 back-to-back reads).");
  const int max_changes = 4096, reads = 1000;
  const unsigned long long max_ns = rep.opt().quick ? 5000000ull : 20000000ull;
  DeviceBuffer<unsigned long long> dns(max_changes);
  DeviceBuffer<long long> dclk(max_changes), cost(2);
  DeviceBuffer<int> count(1);
  globaltimer_kernel<<<1, 1>>>(max_changes, max_ns, dns.get(), dclk.get(), count.get(), cost.get(), reads);
  MB_CHECK_LAUNCH("globaltimer_kernel");
  const int n = count.to_host()[0];
  auto hns = dns.to_host();
  auto hclk = dclk.to_host();
  std::vector<double> steps, cycles;
  std::map<unsigned long long, int> hist;
  for (int i = 1; i < n; ++i) {
    steps.push_back(static_cast<double>(hns[i]));
    cycles.push_back(static_cast<double>(hclk[i]));
    ++hist[hns[i]];
  }
  Json& res = rep.results();
  res["changes_recorded"] = n;
  res["min_step_ns"] = vmin(steps);
  res["typical_step_ns"] = median(steps);
  res["max_step_ns"] = vmax(steps);
  res["mean_step_ns"] = steps.empty() ? 0.0 : std::accumulate(steps.begin(), steps.end(), 0.0) / steps.size();
  res["median_cycles_per_step"] = median(cycles);
  double tot_ns = 0, tot_clk = 0;
  for (size_t i = 0; i < steps.size(); ++i) { tot_ns += steps[i]; tot_clk += cycles[i]; }
  res["cycles_per_ns_while_polling"] = tot_ns > 0 ? tot_clk / tot_ns : 0.0;
  // The most frequent step sizes, largest count first.
  std::vector<std::pair<int, unsigned long long>> top;
  for (auto& [k, v] : hist) top.push_back({v, k});
  std::sort(top.rbegin(), top.rend());
  Json h = Json::array();
  for (size_t i = 0; i < top.size() && i < 8; ++i) {
    Json e = Json::object();
    e["step_ns"] = top[i].second;
    e["count"] = top[i].first;
    h.push_back(e);
  }
  res["step_histogram_top"] = h;
  std::vector<double> first(steps.begin(), steps.begin() + std::min<size_t>(steps.size(), 32));
  res["first_steps_ns"] = Json::array(first);
  res["read_cost_cycles"] = static_cast<double>(cost.to_host()[0]) / reads;
  // This benchmark's own clock estimate (no BlockClock records here).
  std::vector<BlockClock> rec(1);
  rec[0].clk0 = 0;
  rec[0].clk1 = static_cast<long long>(tot_clk);
  rec[0].ns0 = 0;
  rec[0].ns1 = static_cast<unsigned long long>(tot_ns);
  rep.clock().add(rec, 0.0);
}

}  // namespace

std::vector<Benchmark> sync_benchmarks() {
  return {
      {"mbarrier", "mbarrier arrive -> waiter-resumes latency (two-warp ping-pong)", bench_mbarrier},
      {"named_barrier", "named barrier (bar.sync / bar.arrive) latency", bench_named_barrier},
      {"globaltimer", "%globaltimer update step and read cost", bench_globaltimer},
  };
}

}  // namespace mb
