// Host-side helpers of attnsim_microbench: errors, JSON writer, device query, statistics and
// the per-benchmark report file.
#include "microbench.cuh"

#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace mb {

void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  char buf[1024];
  std::snprintf(buf, sizeof buf, "%s:%d: %s failed: %s (%s)", file, line, what,
                cudaGetErrorString(e), cudaGetErrorName(e));
  throw CudaError(buf);
}

void check_launch(const char* what, const char* file, int line) {
  // The launch error first (bad configuration), then errors raised while the kernel ran.
  check_cuda(cudaGetLastError(), what, file, line);
  check_cuda(cudaDeviceSynchronize(), what, file, line);
}

// ---------------------------------------------------------------------------------------------
// Json

Json Json::array(const std::vector<double>& v) {
  Json j = array();
  for (double x : v) j.push_back(x);
  return j;
}

Json& Json::operator[](const std::string& key) {
  if (kind_ == Kind::Null) kind_ = Kind::Obj;
  if (kind_ != Kind::Obj) throw std::logic_error("Json: [] on a non-object");
  auto it = vals_.begin();
  for (size_t i = 0; i < keys_.size(); ++i, ++it)
    if (keys_[i] == key) return *it;
  keys_.push_back(key);
  vals_.emplace_back();
  return vals_.back();
}

void Json::push_back(Json v) {
  if (kind_ == Kind::Null) kind_ = Kind::Arr;
  if (kind_ != Kind::Arr) throw std::logic_error("Json: push_back on a non-array");
  vals_.push_back(std::move(v));
}

static void escape_to(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void Json::dump_to(std::string& out, int indent, int level) const {
  auto nl = [&](int lv) {
    if (indent <= 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * lv), ' ');
  };
  switch (kind_) {
    case Kind::Null: out += "null"; break;
    case Kind::Bool: out += b_ ? "true" : "false"; break;
    case Kind::Int: out += std::to_string(i_); break;
    case Kind::Num: {
      if (!std::isfinite(d_)) { out += "null"; break; }
      char b[40];
      std::snprintf(b, sizeof b, "%.9g", d_);
      std::string s = b;
      // Keep it a JSON number that reads back as floating point.
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      out += s;
      break;
    }
    case Kind::Str: escape_to(out, s_); break;
    case Kind::Arr: {
      // Arrays of scalars stay on one line: they are sample lists, easier to read that way.
      bool scalars = std::all_of(vals_.begin(), vals_.end(), [](const Json& v) {
        return v.kind_ != Kind::Arr && v.kind_ != Kind::Obj;
      });
      out += '[';
      bool first = true;
      for (const Json& v : vals_) {
        if (!first) out += scalars ? ", " : ",";
        first = false;
        if (!scalars) nl(level + 1);
        v.dump_to(out, indent, level + 1);
      }
      if (!scalars && !vals_.empty()) nl(level);
      out += ']';
      break;
    }
    case Kind::Obj: {
      out += '{';
      auto it = vals_.begin();
      for (size_t i = 0; i < keys_.size(); ++i, ++it) {
        if (i) out += ',';
        nl(level + 1);
        escape_to(out, keys_[i]);
        out += indent > 0 ? ": " : ":";
        it->dump_to(out, indent, level + 1);
      }
      if (!keys_.empty()) nl(level);
      out += '}';
      break;
    }
  }
}

std::string Json::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Device query

// NVML is loaded at run time so the program neither links nor needs it: it gives the driver's
// own version string (580.xx), which the CUDA runtime does not.
static std::string nvml_driver_version() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return "";
  using InitFn = int (*)();
  using VerFn = int (*)(char*, unsigned);
  auto init = reinterpret_cast<InitFn>(dlsym(h, "nvmlInit_v2"));
  auto ver = reinterpret_cast<VerFn>(dlsym(h, "nvmlSystemGetDriverVersion"));
  auto shut = reinterpret_cast<InitFn>(dlsym(h, "nvmlShutdown"));
  std::string out;
  if (init && ver && init() == 0) {
    char buf[96] = {0};
    if (ver(buf, sizeof buf) == 0) out = buf;
    if (shut) shut();
  }
  dlclose(h);
  return out;
}

BoardPower read_board_power(int dev) {
  BoardPower out;
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return out;
  using InitFn = int (*)();
  using HandleFn = int (*)(unsigned, void**);
  using UintFn = int (*)(void*, unsigned*);
  using TempFn = int (*)(void*, int, unsigned*);
  auto init = reinterpret_cast<InitFn>(dlsym(h, "nvmlInit_v2"));
  auto shut = reinterpret_cast<InitFn>(dlsym(h, "nvmlShutdown"));
  auto handle = reinterpret_cast<HandleFn>(dlsym(h, "nvmlDeviceGetHandleByIndex_v2"));
  auto power = reinterpret_cast<UintFn>(dlsym(h, "nvmlDeviceGetPowerUsage"));
  auto limit = reinterpret_cast<UintFn>(dlsym(h, "nvmlDeviceGetEnforcedPowerLimit"));
  auto temp = reinterpret_cast<TempFn>(dlsym(h, "nvmlDeviceGetTemperature"));
  if (init && handle && init() == 0) {
    void* d = nullptr;
    unsigned v = 0;
    // The CUDA and NVML device orders agree when CUDA_DEVICE_ORDER=PCI_BUS_ID or with one GPU.
    if (handle(static_cast<unsigned>(dev), &d) == 0) {
      if (power && power(d, &v) == 0) out.power_w = v * 1e-3;  // mW
      if (limit && limit(d, &v) == 0) out.limit_w = v * 1e-3;
      if (temp && temp(d, 0 /* NVML_TEMPERATURE_GPU */, &v) == 0) out.temperature_c = v;
    }
    if (shut) shut();
  }
  dlclose(h);
  return out;
}

DeviceInfo query_device(int dev) {
  DeviceInfo d;
  d.device = dev;
  cudaDeviceProp p{};
  MB_CHECK(cudaGetDeviceProperties(&p, dev));
  d.name = p.name;
  d.sm_count = p.multiProcessorCount;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.l2_bytes = p.l2CacheSize;
  MB_CHECK(cudaDeviceGetAttribute(&d.clock_rate_khz, cudaDevAttrClockRate, dev));
  MB_CHECK(cudaDeviceGetAttribute(&d.smem_optin_bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  MB_CHECK(cudaDeviceGetAttribute(&d.smem_per_sm_bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  MB_CHECK(cudaDriverGetVersion(&d.driver_api_version));
  int rt = 0;
  MB_CHECK(cudaRuntimeGetVersion(&rt));
  d.cuda_runtime = std::to_string(rt / 1000) + "." + std::to_string((rt % 1000) / 10);
  d.driver_version = nvml_driver_version();
  if (d.driver_version.empty())
    d.driver_version = "CUDA driver API " + std::to_string(d.driver_api_version / 1000) + "." +
                       std::to_string((d.driver_api_version % 1000) / 10);
  return d;
}

// ---------------------------------------------------------------------------------------------
// Statistics and clocks

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  return {(sy - b * sx) / n, b};
}

void require_sm90(const Report& rep) {
  if (rep.dev().cc_major != 9 || rep.dev().cc_minor != 0)
    throw SkipBenchmark("wgmma needs compute capability 9.0 (sm_90a); this GPU is " +
                        std::to_string(rep.dev().cc_major) + "." + std::to_string(rep.dev().cc_minor));
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double r = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  size_t i = r < 1 ? 0 : static_cast<size_t>(r) - 1;
  return v[std::min(i, v.size() - 1)];
}

double vmin(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

std::vector<double> per_sm_rates(const std::vector<WarpSpan>& spans, int grid, int stride, int warps, double amount) {
  std::vector<double> rates;
  for (int b = 0; b < grid; ++b) {
    const size_t first = static_cast<size_t>(b) * stride;
    long long lo = spans[first].c0, hi = spans[first].c1;
    for (int w = 1; w < warps; ++w) {
      lo = std::min(lo, spans[first + w].c0);
      hi = std::max(hi, spans[first + w].c1);
    }
    rates.push_back(amount / static_cast<double>(hi - lo));
  }
  return rates;
}
double vmax(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

void ClockMeter::add(const std::vector<BlockClock>& recs, double min_ns) {
  for (const auto& r : recs) {
    double ns = static_cast<double>(r.ns1) - static_cast<double>(r.ns0);
    double cyc = static_cast<double>(r.clk1 - r.clk0);
    if (ns < min_ns || cyc <= 0) continue;
    cycles_ += cyc;
    ns_ += ns;
    samples_.push_back(cyc / ns);
  }
}

double span_ns(const std::vector<BlockClock>& recs) {
  if (recs.empty()) return 0;
  unsigned long long lo = recs[0].ns0, hi = recs[0].ns1;
  for (const auto& r : recs) {
    lo = std::min(lo, r.ns0);
    hi = std::max(hi, r.ns1);
  }
  return static_cast<double>(hi - lo);
}

std::vector<double> block_clock_ghz(const std::vector<BlockClock>& recs) {
  std::vector<double> out;
  for (const auto& r : recs)
    if (r.ns1 > r.ns0) out.push_back(static_cast<double>(r.clk1 - r.clk0) / static_cast<double>(r.ns1 - r.ns0));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Report

Report::Report(std::string name, const Options& opt, const DeviceInfo& dev)
    : name_(std::move(name)), opt_(opt), dev_(dev) {}

std::string Report::write() const {
  Json j = Json::object();
  j["benchmark"] = name_;
  j["gpu"] = dev_.name;
  j["sm_count"] = dev_.sm_count;
  j["compute_capability"] = std::to_string(dev_.cc_major) + "." + std::to_string(dev_.cc_minor);
  j["driver_version"] = dev_.driver_version;
  j["cuda_driver_api"] = dev_.driver_api_version;
  j["cuda_runtime"] = dev_.cuda_runtime;
  char date[32];
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  j["date"] = std::string(date);
  j["advertised_sm_clock_ghz"] = dev_.clock_rate_khz / 1e6;
  j["sm_clock_ghz_measured"] = clock_.ghz();
  j["quick"] = opt_.quick;
  j["method"] = method_;
  j["results"] = results_;
  std::filesystem::create_directories(opt_.out_dir);
  std::string path = (std::filesystem::path(opt_.out_dir) / (name_ + ".json")).string();
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << j.dump(2) << "\n";
  if (!f) throw std::runtime_error("error writing " + path);
  return path;
}

// ---------------------------------------------------------------------------------------------
// TMA

/// Builds a 2D bf16 tensor map over `rows` x 128 columns (row stride 256 B), box 64 x box_rows,
/// 128B swizzle. The encoder is fetched from the driver at run time (no libcuda link).
CUtensorMap make_tmap(const void* base, unsigned long long rows, int box_rows) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (!encode) {
    cudaDriverEntryPointQueryResult q{};
    MB_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                              cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !encode) throw std::runtime_error("cuTensorMapEncodeTiled not found");
  }
  CUtensorMap m{};
  const cuuint64_t dims[2] = {128, rows};
  const cuuint64_t strides[1] = {256};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t estr[2] = {1, 1};
  CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box, estr,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled failed: " + std::to_string(r));
  return m;
}

int scaled_iters(double cal_seconds, int cal_iters, double seconds, double max_iters) {
  return static_cast<int>(std::clamp(seconds / std::max(cal_seconds, 1e-9) * cal_iters, 1.0 * cal_iters, max_iters));
}

void measure_clock(Report& rep, const std::function<std::vector<BlockClock>(int)>& launch, int cal_iters) {
  const double seconds = rep.opt().quick ? 0.3 : 2.0;
  const auto cal = launch(cal_iters);
  const int iters = scaled_iters(span_ns(cal) * 1e-9, cal_iters, seconds, 2e9);
  const auto run = launch(iters);
  rep.clock().add(run);
  const std::vector<double> ghz = block_clock_ghz(run);
  Json& res = rep.results();
  res["clock_ghz"] = median(ghz);
  res["clock_ghz_min_over_sms"] = vmin(ghz);
  res["clock_ghz_max_over_sms"] = vmax(ghz);
  res["run_seconds"] = span_ns(run) * 1e-9;
  res["calibration_run_clock_ghz"] = median(block_clock_ghz(cal));
}
}  // namespace mb
