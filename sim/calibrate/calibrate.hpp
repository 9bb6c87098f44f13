// `attnsim calibrate`: folds microbenchmark results (kernels/microbench, one JSON per
// benchmark) into a hardware config. Each constant a benchmark measures becomes
// {"value", "provenance": "measured", "source": benchmark, GPU, driver, date, method,
// "was": what it replaced}. Latencies that are intercepts (TMA latency + bytes /
// bandwidth from L2 and from HBM, wgmma latency + pipe time) and the per-wave CTA launch cost
// (slope of launch time against waves) are fitted here with Eigen from the raw points.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnsim {

/// One constant a calibration sets.
struct CalibratedConstant {
  std::string name;  ///< hardware constant ("mufu_lanes_per_clk_smsp")
  double value = 0;
  std::string benchmark;  ///< where it came from
  std::string how;        ///< field read or fit made
};

/// Reads microbenchmark result files (or folders of them) and derives constants. Throws
/// InputError naming the file and JSON path for malformed results; benchmarks marked
/// "skipped" are ignored.
std::vector<CalibratedConstant> derive_constants(const std::vector<std::string>& results, std::string& provenance_note);

/// Least-squares line y = a + b x (Eigen); returns {a, b}. Needs 2+ points.
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y);

/// Writes the constants into the hardware config `hw_file` (rewritten in place, one constant
/// per line), keeping what each replaced under "was". The result must load (load_hardware).
void apply_calibration(const std::string& hw_file, const std::vector<CalibratedConstant>& constants,
                       const std::string& provenance_note);

}  // namespace attnsim
