// Host API of the SM90 attention kernels (kernels/sm90): what was compiled, and how to launch,
// time, check and trace a kernel. Plain C++ (no CUDA headers), so the simulator's CLI (g++) can
// call it; everything CUDA stays in the .cu files of this folder.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/launch_abi.h"
#include "common/trace_record.h"
#include "sm90/kernel_knobs.h"

namespace attnsim::sm90 {

// The launch ABI every family's launcher implements (kernels/common/launch_abi.h).
using attnsim::kTraceWarpsAll;
using attnsim::kTraceWarpsFirst;
using attnsim::LaunchFn;
using attnsim::LaunchInfo;
using attnsim::Shape;
using attnsim::Tensors;
using attnsim::TileScheduler;
using attnsim::TraceBuffers;

/// Repetitions to time: `reps`, or as many more as make reps x launches x launch_ms_sum (the
/// per-launch times of the series timed together, summed, ms) reach `min_timed_ms`, at most
/// 100000. Throws std::invalid_argument on reps or launches below 1.
inline int timed_reps(int reps, int launches, double launch_ms_sum, double min_timed_ms) {
  if (reps < 1 || launches < 1) throw std::invalid_argument("timed_reps: reps and launches must be >= 1");
  const double per_rep = launches * launch_ms_sum;
  if (min_timed_ms <= 0 || per_rep <= 0 || reps * per_rep >= min_timed_ms) return reps;
  const double need = min_timed_ms / per_rep;
  return need >= 100000 ? 100000 : std::max(reps, static_cast<int>(std::ceil(need)));
}

/// Parses --trace-warps: "first", "all", "none" or comma-separated warp indices ("0,4,5").
/// Throws std::invalid_argument otherwise.
inline uint32_t parse_trace_warps(const std::string& s) {
  if (s == "first") return kTraceWarpsFirst;
  if (s == "all") return kTraceWarpsAll;
  if (s == "none") return 0;
  uint32_t m = 0;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    const std::string w = s.substr(i, j - i);
    if (w.empty() || w.size() > 2 || w.find_first_not_of("0123456789") != std::string::npos || std::stoi(w) > 31)
      throw std::invalid_argument("--trace-warps: expected first, all, none or warp indices 0-31 (\"0,4,8\"), got \"" +
                                  s + "\"");
    m |= 1u << std::stoi(w);
    i = j + 1;
  }
  if (s.empty() || s.back() == ',') throw std::invalid_argument("--trace-warps: empty warp list");
  return m;
}

/// A kernel compiled into this build: its knobs, plain and traced launchers, and the schedules
/// (file and variant) that resolve to it.
struct CompiledKernel {
  AnyKernelKnobs knobs;             ///< which family, and its template parameters
  LaunchFn launch = nullptr;         ///< instrumentation compiled out
  LaunchFn launch_traced = nullptr;  ///< the warps in TraceBuffers::warps record their spans; null: no traced build
  const char* origin = "";           ///< e.g. "schedules/fa3_sm90.json: (base), no_pingpong"
};

/// Every kernel compiled into this build (generated at build time from schedules/*.json).
const std::vector<CompiledKernel>& compiled_kernels();
/// The compiled kernel with these knobs, or nullptr.
const CompiledKernel* find_kernel(const AnyKernelKnobs& k);

/// The GPU this process would run on.
struct GpuInfo {
  bool usable = false;  ///< a device of compute capability 9.0 is present
  std::string why;      ///< when not usable: why (no driver, no device, other architecture)
  std::string name;
  int sm_count = 0, cc_major = 0, cc_minor = 0;
};
/// Queries device 0 (never throws; a machine without a GPU gives usable = false and why).
GpuInfo gpu_info();
/// Why a kernel of these knobs cannot run on `gpu` ("" when it can): no device, or a device of
/// another architecture than the kernel's (kernel_arch: sm_90a kernels need compute capability
/// 9.0, the sm_100a FA4-style kernels 10.0, e.g. a B200).
std::string kernel_unrunnable(const AnyKernelKnobs& k, const GpuInfo& gpu);

/// Random N(0,1) bf16 inputs of a shape on the device, with O and LSE outputs (RAII). `q_scale`
/// multiplies Q: scores spread that much wider, so that the rows' running maxima keep growing by
/// more than a conditional rescale's threshold from block to block (kernel tests).
class DeviceProblem {
 public:
  DeviceProblem(const Shape& s, uint64_t seed, float q_scale = 1.f);
  ~DeviceProblem();
  DeviceProblem(const DeviceProblem&) = delete;
  DeviceProblem& operator=(const DeviceProblem&) = delete;
  const Shape& shape() const { return shape_; }
  Tensors tensors() const;
  /// Copies of the device tensors (bf16 as uint16 bits; LSE fp32).
  std::vector<uint16_t> q_host() const, k_host() const, v_host() const, o_host() const;
  std::vector<float> lse_host() const;

 private:
  Shape shape_;
  void *q_ = nullptr, *k_ = nullptr, *v_ = nullptr, *o_ = nullptr;
  float* lse_ = nullptr;
};

/// How a kernel is timed: 1 + max(1, `warmup`) untimed launches, then `reps` repetitions of `launches`
/// launches, all enqueued at once (behind one untimed launch; each turn of launches between its
/// own pair of CUDA events, a 50 us clock probe behind it, outside them), so the GPU runs them
/// back to back and never waits for the host; a repetition's per-launch time is the mean of its
/// launches' times. Several series
/// (plain and traced, several kernels: time_kernels) take turns of about 5 ms. The same input
/// buffers every launch: K and V of the validation problems (67-270 MB) exceed the L2 (50 MB on
/// H100), so rotating them would change nothing.
struct TimingOptions {
  int warmup = 5;
  int reps = 20;
  int launches = 10;
  /// Untimed load before the timed turns, ms: the timed turns' cycle over every series, repeated
  /// until about this long. The board's power limit acts on its power averaged over about a second
  /// (nvidia-smi on an H100 under our kernel: the clock held until ~0.8 s into the load, then
  /// throttled), so without it a short run is timed at the unthrottled clock and a long one, or
  /// one right after another load, at the throttled one. 0: none.
  double precondition_ms = 0;
  /// More repetitions than `reps` where they take less than this, ms (timed_reps): under sustained
  /// load the power controller moves the clock back and forth (1.42-1.72 GHz with a period of about
  /// 0.7 s on an H100: kernels/microbench clock_under_load), so a window shorter than that samples
  /// one phase of it. 0: `reps` only.
  double min_timed_ms = 0;
  bool traced = false;                      ///< the instrumented kernel (records to a scratch buffer)
  uint32_t trace_warps = kTraceWarpsFirst;  ///< when traced
  uint32_t trace_sample = 1;                ///< when traced: one tile in trace_sample recorded (TraceBuffers::sample)
};
/// Median and spread of the per-launch times of the repetitions, ms; the SM clock they ran at.
struct Timing {
  std::vector<double> ms;  ///< per-launch time of each repetition, in order
  double median_ms = 0, min_ms = 0, max_ms = 0;
  /// SM clock (GHz) as each of its turns ended: a one-thread probe behind the turn, outside its
  /// events, counting clock64 cycles over 50 us of %globaltimer; and their median. The clock the
  /// power controller holds, 6-13% above what the loaded SMs ran at (clock_under_duty, H100).
  std::vector<double> clock_ghz;
  double median_clock_ghz = 0;
  /// A traced series only: the clock its SMs ran at in each turn, from inside the kernel (median
  /// over the CTAs of the turn's last launch of their clock64 cycles over %globaltimer ns between
  /// the CTA's start and end anchors); and their median. Empty for a plain series.
  std::vector<double> kernel_clock_ghz;
  double median_kernel_clock_ghz = 0;
  int launches = 0;  ///< back-to-back launches per repetition
  LaunchInfo launch;
};
/// Times a kernel as TimingOptions says. A traced kernel records every span (its scratch buffer
/// holds them all), so its time is that of a full trace.
Timing time_kernel(const CompiledKernel& k, DeviceProblem& prob, TileScheduler sched, const TimingOptions& o);
/// The plain and the traced kernel (o.traced is ignored), taking turns of about 5 ms (plain,
/// traced, plain, ...) so that drift during the run affects both alike: the instrumentation's
/// overhead is traced.median_ms / plain.median_ms - 1.
struct TimingPair {
  Timing plain, traced;
};
TimingPair time_plain_and_traced(const CompiledKernel& k, DeviceProblem& prob, TileScheduler sched,
                                 const TimingOptions& o);
/// A kernel and the tile scheduler it runs with (time_kernels).
struct TimedKernel {
  const CompiledKernel* kernel = nullptr;
  TileScheduler sched = TileScheduler::Lpt;
};
/// Several kernels of one problem (a schedule's variants), each plain and, when `traced`, traced
/// too (o.traced is ignored), taking turns of about 5 ms (k0 plain, k0 traced, k1 plain, ...,
/// then again): the SM clock, which the GPU's power management moves by 10-20% within
/// a second under load (configs/measured/<gpu>/clock_under_load.json), is then alike for all, so
/// that a variant's time against the base's measures the variant, not the clock. One pair per
/// kernel, in order.
std::vector<TimingPair> time_kernels(const std::vector<TimedKernel>& ks, DeviceProblem& prob, const TimingOptions& o,
                                     bool traced);

/// Result of checking a kernel's O and LSE against a reference.
struct CheckResult {
  bool pass = false;
  long long rows_checked = 0;
  double max_abs_err = 0;  ///< O, over checked elements
  double max_rel_rms = 0;  ///< O, per-row RMS error / RMS of the reference row, worst row
  double max_lse_err = 0;  ///< |LSE - LSE_ref|, worst row (both -inf counts as 0)
  std::string reference;   ///< "cpu" (every row, double precision) or "gpu" (sampled rows, fp32)
  std::string detail;      ///< first failing element when !pass
};
/// Runs the kernel once and compares with a reference: every row on the CPU when the problem is
/// small (b*h*sq*sk*d <= 2^31), else `sample_rows` rows per (batch, head) on a simple GPU
/// reference kernel (fp32, one block per row). Tolerance: |err| <= 0.02 + 0.02 |ref| per element.
CheckResult check_kernel(const CompiledKernel& k, DeviceProblem& prob, TileScheduler sched, int sample_rows = 64);
/// check_kernel on the instrumented build, the first warp of every warpgroup recording one tile
/// in `trace_sample` (its other tiles run the plain code within the same kernel), so that both
/// paths of a traced kernel are checked. std::invalid_argument for a kernel without a traced build.
CheckResult check_traced_kernel(const CompiledKernel& k, DeviceProblem& prob, TileScheduler sched,
                                uint32_t trace_sample, int sample_rows = 64);

/// A measured timeline: every recording warp's spans (raw records) and every CTA's clock anchors.
struct MeasuredTrace {
  std::vector<attnsim_trace_record> records;  ///< [CTA][warp][cap]; t0/t1: cycles since the CTA's clk0
  std::vector<uint32_t> counts;               ///< [CTA][warp] records written (0: the warp did not record)
  std::vector<uint32_t> spans;                ///< [CTA][warp] spans run; empty: as counts
  std::vector<attnsim_cta_clock> ctas;
  int warps_per_cta = 0;
  uint32_t cap = 0;
  uint32_t trace_warps = kTraceWarpsFirst;
  uint32_t trace_sample = 1;  ///< about one tile in trace_sample recorded (TraceBuffers::sample, trace_sampling.h)
  LaunchInfo launch;
  double kernel_ms = 0;  ///< this traced launch, CUDA events
  AnyKernelKnobs knobs;  ///< the kernel that wrote it (its family names the warps' roles)
};
/// Runs the traced kernel once (after one warm-up launch) with `cap` records per warp (0, or more
/// than the family's span bound allows: enough for every span of the launch, and no more), lane 0
/// of the warps in `trace_warps` recording, the SM90 kernels about one tile in `trace_sample`
/// (TraceBuffers::sample; which ones: kernels/sm90/trace_sampling.h). Any family with a traced
/// build (kernels/sm90, kernels/fa2, kernels/blackflash); std::invalid_argument for a kernel
/// without one.
MeasuredTrace trace_kernel(const CompiledKernel& k, DeviceProblem& prob, TileScheduler sched, uint32_t cap,
                           uint32_t trace_warps = kTraceWarpsFirst, uint32_t trace_sample = 1);

}  // namespace attnsim::sm90
