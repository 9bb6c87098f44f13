// Shared pieces of attnsim_microbench: error checking, device query, timing records written
// by the kernels, a small ordered JSON writer (nlohmann/json costs ~10 s of nvcc time per
// translation unit; only main.cu, which parses results back, includes it) and the benchmark
// registry. Every benchmark writes one JSON file named after it.
#pragma once

#include <cuda.h>  // CUtensorMap (the encoder is fetched from the driver at run time)
#include <cuda/ptx>
#include <cuda_runtime.h>

#include <cstdint>
#include <list>
#include <stdexcept>
#include <string>
#include <utility>
#include <functional>
#include <vector>

namespace mb {

// ---------------------------------------------------------------------------------------------
// Errors

/// Error raised by MB_CHECK when a CUDA call fails; carries the call text and location.
struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Thrown by a benchmark that does not apply to the GPU at hand; its file then says why in
/// results.skipped instead of failing the run.
struct SkipBenchmark : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws CudaError if `e` is not cudaSuccess (used through MB_CHECK).
void check_cuda(cudaError_t e, const char* what, const char* file, int line);

/// Checks a launch: the launch error, then (synchronizing) any error raised while running.
void check_launch(const char* what, const char* file, int line);

#define MB_CHECK(expr) ::mb::check_cuda((expr), #expr, __FILE__, __LINE__)
#define MB_CHECK_LAUNCH(what) ::mb::check_launch((what), __FILE__, __LINE__)

// ---------------------------------------------------------------------------------------------
// Minimal ordered JSON value (output only)

/// JSON value that keeps object keys in insertion order; enough to write results files.
class Json {
 public:
  enum class Kind { Null, Bool, Int, Num, Str, Arr, Obj };
  Json() = default;
  Json(bool b) : kind_(Kind::Bool), b_(b) {}
  Json(int v) : kind_(Kind::Int), i_(v) {}
  Json(long v) : kind_(Kind::Int), i_(v) {}
  Json(long long v) : kind_(Kind::Int), i_(v) {}
  Json(unsigned v) : kind_(Kind::Int), i_(v) {}
  Json(unsigned long v) : kind_(Kind::Int), i_(static_cast<long long>(v)) {}
  Json(unsigned long long v) : kind_(Kind::Int), i_(static_cast<long long>(v)) {}
  Json(double v) : kind_(Kind::Num), d_(v) {}
  Json(float v) : kind_(Kind::Num), d_(v) {}
  Json(const char* s) : kind_(Kind::Str), s_(s) {}
  Json(std::string s) : kind_(Kind::Str), s_(std::move(s)) {}

  /// An empty object ({}).
  static Json object() { Json j; j.kind_ = Kind::Obj; return j; }
  /// An empty array ([]).
  static Json array() { Json j; j.kind_ = Kind::Arr; return j; }
  /// Array of numbers.
  static Json array(const std::vector<double>& v);

  /// Object member access; a Null value becomes an object, a missing key is appended. The
  /// reference stays valid when other members are added later.
  Json& operator[](const std::string& key);
  /// Appends to an array; a Null value becomes an array.
  void push_back(Json v);
  /// Serialises with `indent` spaces per level (0: one line). Non-finite numbers become null.
  std::string dump(int indent = 2) const;

 private:
  void dump_to(std::string& out, int indent, int level) const;
  Kind kind_ = Kind::Null;
  bool b_ = false;
  long long i_ = 0;
  double d_ = 0;
  std::string s_;
  // A list, not a vector: references returned by operator[] must stay valid while more
  // members are added (callers hold `Json& section = results["x"]` and keep filling results).
  std::vector<std::string> keys_;  // object keys, parallel to vals_
  std::list<Json> vals_;           // object values or array elements
};

// ---------------------------------------------------------------------------------------------
// Device, options, statistics

/// Facts about the GPU that go into every results file.
struct DeviceInfo {
  int device = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  std::string driver_version;  // NVML driver string (e.g. 580.159.04) when NVML loads, else the CUDA driver API version
  int driver_api_version = 0;  // cudaDriverGetVersion, e.g. 13000
  std::string cuda_runtime;    // cudaRuntimeGetVersion as "13.0"
  long long l2_bytes = 0;
  int clock_rate_khz = 0;      // the device's advertised peak SM clock
  int smem_optin_bytes = 0;    // cudaDevAttrMaxSharedMemoryPerBlockOptin
  int smem_per_sm_bytes = 0;
};

/// Command-line options passed to every benchmark.
struct Options {
  std::string out_dir = ".";
  bool quick = false;  // ~10x fewer iterations: a smoke test, numbers are rougher
  int device = 0;
};

/// Queries device `dev` (and the NVML driver string, if libnvidia-ml loads).
DeviceInfo query_device(int dev);

/// The board's power state as NVML reports it (loaded at run time; all zero where it does not load).
struct BoardPower {
  double power_w = 0;        ///< nvmlDeviceGetPowerUsage: board power draw, W (the driver's running average)
  double limit_w = 0;        ///< nvmlDeviceGetEnforcedPowerLimit, W: the cap the clock is lowered to hold
  double temperature_c = 0;  ///< nvmlDeviceGetTemperature (GPU die), degrees C
};
/// Reads device `dev`'s BoardPower now.
BoardPower read_board_power(int dev);

/// Median of `v` (0 for an empty vector); `v` is copied.
double median(std::vector<double> v);

/// Least-squares line y = a + b x over the points (x[i], y[i]); returns {a, b}.
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y);
/// p-th percentile (0..100) by nearest rank; 0 for an empty vector.
double percentile(std::vector<double> v, double p);
/// Smallest / largest element; 0 for an empty vector.
double vmin(const std::vector<double>& v);
double vmax(const std::vector<double>& v);

// ---------------------------------------------------------------------------------------------
// Timing records written by kernels

/// Per-block record written by thread 0: SM cycles (clock64) and %globaltimer ns at the start
/// and end of the measured region, and the SM it ran on. clock64 is per SM, so cycle deltas are
/// only taken within one record.
struct BlockClock {
  long long clk0, clk1;
  unsigned long long ns0, ns1;
  unsigned smid;
  unsigned pad;
};

/// Per-warp cycle span of the measured loop (clock64, same SM as its block).
struct WarpSpan {
  long long c0, c1;
};

/// Per-SM rates of a one-block-per-SM benchmark: for each of the `grid` blocks, `amount` (bytes,
/// FLOP, ...) over the cycles from the earliest start to the latest end of its first `warps`
/// warp spans, block b's spans at spans[b * stride + w]. One rate per block, block order.
std::vector<double> per_sm_rates(const std::vector<WarpSpan>& spans, int grid, int stride, int warps, double amount);

/// Accumulates cycle and nanosecond deltas of block records, for the SM clock a benchmark ran at.
class ClockMeter {
 public:
  /// Adds every record whose ns interval is at least `min_ns` (shorter ones are dominated by the
  /// %globaltimer step).
  void add(const std::vector<BlockClock>& recs, double min_ns = 20000.0);
  /// Cycles per ns over everything added (0 if nothing was added).
  double ghz() const { return ns_ > 0 ? cycles_ / ns_ : 0.0; }
  /// Per-record cycles/ns values added so far.
  const std::vector<double>& samples() const { return samples_; }

 private:
  double cycles_ = 0, ns_ = 0;
  std::vector<double> samples_;
};

/// Chip-wide span (max ns1 - min ns0) of a launch's block records, in ns.
double span_ns(const std::vector<BlockClock>& recs);
/// Per-block SM clock of a launch: (clk1 - clk0) / (ns1 - ns0) of each block, GHz.
std::vector<double> block_clock_ghz(const std::vector<BlockClock>& recs);

// ---------------------------------------------------------------------------------------------
// Report and registry

/// One benchmark's results file: common header fields, a method text and a results object.
class Report {
 public:
  Report(std::string name, const Options& opt, const DeviceInfo& dev);
  /// The "results" object the benchmark fills.
  Json& results() { return results_; }
  /// Block clock records go here; they give the file's sm_clock_ghz_measured.
  ClockMeter& clock() { return clock_; }
  /// The GPU the benchmark runs on.
  const DeviceInfo& dev() const { return dev_; }
  /// Command-line options (quick mode, output folder).
  const Options& opt() const { return opt_; }
  /// Short text of how the numbers were measured (the file's "method").
  void set_method(std::string m) { method_ = std::move(m); }
  /// Writes <out_dir>/<name>.json and returns its path.
  std::string write() const;

 private:
  std::string name_;
  Options opt_;
  DeviceInfo dev_;
  std::string method_;
  Json results_ = Json::object();
  ClockMeter clock_;
};

/// Iterations for a run of about `seconds`, from a calibration launch of `cal_iters` that took
/// `cal_seconds`; clamped to [cal_iters, max_iters] so that a broken calibration cannot ask for
/// an absurd run.
int scaled_iters(double cal_seconds, int cal_iters, double seconds, double max_iters);

/// A clock_under_* benchmark: `launch(iters)` runs the load kernel on all SMs and returns the
/// blocks' (clock64, %globaltimer) stamps. Runs it with `cal_iters`, scales the iterations to about
/// 2 s (quick: 0.3 s), runs again and writes clock_ghz (median over SMs of cycles / ns), its min
/// and max over SMs, the run's seconds and the calibration launch's clock.
void measure_clock(Report& rep, const std::function<std::vector<BlockClock>(int)>& launch, int cal_iters);

/// A benchmark: its name (also the JSON file name), one line of what it measures, and its body.
/// Throws SkipBenchmark unless the GPU is compute capability 9.0, the only one with wgmma.
void require_sm90(const Report& rep);

struct Benchmark {
  const char* name;
  const char* summary;
  void (*run)(Report& rep);
};

// Each translation unit contributes its benchmarks through one of these.
std::vector<Benchmark> pipe_benchmarks();
std::vector<Benchmark> mma_benchmarks();
std::vector<Benchmark> clock_mix_benchmarks();
std::vector<Benchmark> memory_benchmarks();
std::vector<Benchmark> sync_benchmarks();
std::vector<Benchmark> latency_benchmarks();
std::vector<Benchmark> launch_benchmarks();
std::vector<Benchmark> operand_benchmarks();
std::vector<Benchmark> mma_queue_benchmarks();
std::vector<Benchmark> ifetch_benchmarks();
std::vector<Benchmark> softmax_block_benchmarks();
std::vector<Benchmark> softmax_pair_benchmarks();
std::vector<Benchmark> gemm_turn_benchmarks();
std::vector<Benchmark> load_warp_benchmarks();
std::vector<Benchmark> ldg_load_benchmarks();
std::vector<Benchmark> tma_load_benchmarks();
std::vector<Benchmark> mma_issue_beside_benchmarks();
std::vector<Benchmark> dispatch_window_benchmarks();
std::vector<Benchmark> smem_beside_async_benchmarks();
std::vector<Benchmark> warp_guard_benchmarks();

/// 2D bf16 tensor map over `rows` x 128 columns (row stride 256 B: a head_dim-128 K/V layout),
/// boxes of 64 columns x `box_rows` rows, 128B swizzle, L2 promotion 256 B (as FA3's).
CUtensorMap make_tmap(const void* base, unsigned long long rows, int box_rows);

/// RAII device allocation of `n` elements of T.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (n_ > 0) MB_CHECK(cudaMalloc(&p_, n_ * sizeof(T)));
  }
  ~DeviceBuffer() { if (p_) cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return p_; }
  size_t size() const { return n_; }
  /// Copies the whole buffer to the host.
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    if (n_ > 0) MB_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  /// Zero-fills the buffer.
  void zero() { if (n_ > 0) MB_CHECK(cudaMemset(p_, 0, n_ * sizeof(T))); }

 private:
  T* p_ = nullptr;
  size_t n_;
};

/// Throws when a kernel flagged `err` (an mbarrier wait that timed out after 2 s: wait_parity).
inline void check_err(const DeviceBuffer<int>& err, const char* what) {
  if (err.to_host()[0] != 0) throw std::runtime_error(std::string(what) + ": an mbarrier wait timed out (2 s)");
}

/// `p` rounded up to 1024 bytes (128B-swizzled TMA boxes need 1 KB-aligned SMEM).
__device__ __forceinline__ uint8_t* align1k(uint8_t* p) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + 1023) & ~uintptr_t(1023));
}

// ---------------------------------------------------------------------------------------------
// Device helpers

/// %globaltimer: ns clock common to all SMs (its update step is measured by `globaltimer`).
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// A wait that lasts this long is a bug in the benchmark, not a measurement.
constexpr unsigned long long kWaitTimeoutNs = 2000000000ull;  // 2 s

/// try_wait.parity loop on an mbarrier; returns false after kWaitTimeoutNs so a mistake is a
/// reported error, not a hung GPU. The timer is read only every 1024 unsuccessful tries (one
/// read costs ~26 cycles), so the measured path is the bare try_wait loop of a real kernel.
__device__ __forceinline__ bool wait_parity(uint64_t* bar, uint32_t parity) {
  unsigned long long t0 = 0;
  for (unsigned k = 1;; ++k) {
    if (cuda::ptx::mbarrier_try_wait_parity(bar, parity)) return true;
    if ((k & 1023u) == 0) {
      const unsigned long long now = globaltimer();
      if (t0 == 0) t0 = now;
      else if (now - t0 > kWaitTimeoutNs) return false;
    }
  }
}

/// Index of the SM this thread runs on.
__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

/// Thread 0 stamps the start of the measured region (call after a __syncthreads).
__device__ __forceinline__ void block_clock_begin(BlockClock* recs) {
  if (threadIdx.x == 0) {
    recs[blockIdx.x].ns0 = globaltimer();
    recs[blockIdx.x].clk0 = clock64();
    recs[blockIdx.x].smid = smid();
  }
}

/// Thread 0 stamps the end of the measured region (call after a __syncthreads).
__device__ __forceinline__ void block_clock_end(BlockClock* recs) {
  if (threadIdx.x == 0) {
    recs[blockIdx.x].clk1 = clock64();
    recs[blockIdx.x].ns1 = globaltimer();
  }
}

/// Shared-memory address of a generic pointer into shared memory (for PTX operands).
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Cheap per-thread hash, used to fill operands with varied non-zero data (zeros can run
/// faster than real data on tensor cores).
__host__ __device__ __forceinline__ uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

/// Evicts the L2 between launches: flush() writes 4 x its size (at least 128 MB) to a scratch
/// buffer and waits.
class L2Flusher {
 public:
  explicit L2Flusher(const DeviceInfo& dev)
      : scratch_(std::max<size_t>(4 * static_cast<size_t>(dev.l2_bytes), size_t{128} << 20)) {}
  void flush() {
    MB_CHECK(cudaMemset(scratch_.get(), static_cast<int>(hash32(static_cast<uint32_t>(++n_)) & 0x7f), scratch_.size()));
    MB_CHECK(cudaDeviceSynchronize());
  }

 private:
  DeviceBuffer<uint8_t> scratch_;
  uint32_t n_ = 0;
};

/// Dynamic shared memory that forces one block per SM (more than half of the SM's 228 KB), so a
/// grid of sm_count blocks puts exactly one block on every SM.
constexpr int kOneBlockPerSmSmem = 120 * 1024;

/// Raises a kernel's dynamic shared memory limit to `bytes` (needed above 48 KB).
template <class Kernel>
void allow_smem(Kernel k, int bytes) {
  MB_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(k),
                                cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

}  // namespace mb
