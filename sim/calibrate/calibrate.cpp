#include "calibrate/calibrate.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "calibrate/clock_power_fit.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"

namespace attnsim {

namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

/// Where each directly read constant lives: benchmark -> (JSON pointer in the results file, constant);
/// `older`: where result files from before `pointer` existed have it (nullptr: none).
struct DirectField {
  const char* benchmark;
  const char* pointer;
  const char* constant;
  const char* older = nullptr;
};
constexpr DirectField kDirect[] = {
    {"mufu_ex2", "/results/mufu_lanes_per_clk_smsp", "mufu_lanes_per_clk_smsp"},
    {"ffma", "/results/fma_lanes_per_clk_smsp", "fma_lanes_per_clk_smsp"},
    {"alu", "/results/alu_lanes_per_clk_smsp", "alu_lanes_per_clk_smsp"},
    {"issue_rate", "/results/issue_per_clk_smsp", "issue_per_clk_smsp"},
    {"wgmma", "/results/tensor_flops_per_clk", "tensor_flops_per_clk"},
    {"mma_sync", "/results/mma_sync_flops_per_clk_sm", "mma_sync_flops_per_clk"},
    {"smem_bw", "/results/smem_bytes_per_clk", "smem_bytes_per_clk"},
    {"tma", "/results/tma_bytes_per_clk_sm", "tma_bytes_per_clk_sm"},
    {"tma", "/results/l2_bytes_per_clk", "l2_bytes_per_clk"},
    {"tma", "/results/hbm_bytes_per_s", "hbm_bytes_per_s"},
    {"mbarrier", "/results/mbarrier_latency", "mbarrier_latency"},
    {"clock_under_load", "/results/clock_ghz", "clock_ghz"},
    {"clock_under_ffma", "/results/clock_ghz", "clock_ghz_cuda_cores"},
    {"clock_under_mma_sync", "/results/clock_ghz", "clock_ghz_mma_sync"},
    {"operand", "/results/lds_latency", "lds_latency"},
    {"tma", "/results/l2_hit_ldg_cg_latency_cycles", "ldg_latency"},
    {"ifetch", "/results/icache_bytes", "icache_bytes"},
    {"ifetch", "/results/ifetch_cycles_per_instruction", "ifetch_cycles_per_instruction"},
    {"ifetch", "/results/ifetch_runahead_bytes", "ifetch_runahead_bytes"},
    {"named_barrier", "/results/named_barrier_latency", "named_barrier_latency"},
    {"latency_chains", "/results/fma_latency", "fma_latency"},
    {"latency_chains", "/results/alu_latency", "alu_latency"},
    {"latency_chains", "/results/mufu_latency", "mufu_latency"},
    {"latency_chains", "/results/shfl_latency", "shfl_latency"},
    {"latency_chains", "/results/f2fp_latency", "f2fp_latency"},
    {"wgmma_issue", "/results/wgmma_issue_cycles", "wgmma_issue_cycles"},
    {"wgmma_issue", "/results/wgmma_wait_ready_cycles", "wgmma_wait_ready_cycles"},
    {"wgmma_share", "/results/mma_queue_depth", "mma_queue_depth"},
    {"mbarrier_ready", "/results/mbarrier_ready_cycles", "mbarrier_ready_cycles"},
    {"tma_sharing", "/results/tma_store_latency", "tma_store_latency"},
    {"launch_overhead", "/results/launch/full_grid_cuda_graph_ns", "launch_ns"},
    // The rates while the tensor core runs: the ratio taken from the benchmark's tensor duty to 1
    // (results since 2026-12-01; before, the ratio as timed, at a duty of about 0.8).
    {"pipes_under_mma", "/results/configs/ffma/ratio_ss_full_duty", "fma_rate_beside_mma",
     "/results/configs/ffma/ratio_ss"},
    {"pipes_under_mma", "/results/configs/fmnmx/ratio_ss_full_duty", "alu_rate_beside_mma",
     "/results/configs/fmnmx/ratio_ss"},
    {"pipes_under_mma", "/results/configs/mufu_ex2/ratio_ss_full_duty", "mufu_rate_beside_mma",
     "/results/configs/mufu_ex2/ratio_ss"},
    {"launch_overhead", "/results/cta_prologue_cycles", "cta_prologue_cycles"},
};

/// The number at `pointer` of microbenchmark result `doc` (read from `file`).
double result_number(const json& doc, const std::string& file, const std::string& pointer) {
  return number_at(doc, file, pointer, " (is this a kernels/microbench result file?)");
}

std::vector<std::string> expand(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const auto& in : inputs) {
    if (fs::is_directory(in)) {
      std::vector<std::string> here;
      // A folder's results, less the `attnsim replay --update` baselines kept beside them
      // (<benchmark>.replay.json: the model's errors on a result, not a result).
      for (const auto& e : fs::directory_iterator(in)) {
        const std::string name = e.path().filename().string();
        const bool replay_baseline = name.size() > 12 && name.ends_with(".replay.json");
        if (e.path().extension() == ".json" && !replay_baseline) here.push_back(e.path().string());
      }
      std::sort(here.begin(), here.end());
      files.insert(files.end(), here.begin(), here.end());
    } else {
      files.push_back(in);
    }
  }
  return files;
}
}  // namespace

std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  Eigen::MatrixXd a(static_cast<Eigen::Index>(x.size()), 2);
  Eigen::VectorXd b(static_cast<Eigen::Index>(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    a(static_cast<Eigen::Index>(i), 0) = 1;
    a(static_cast<Eigen::Index>(i), 1) = x[i];
    b(static_cast<Eigen::Index>(i)) = y[i];
  }
  const Eigen::Vector2d c = a.colPivHouseholderQr().solve(b);
  return {c(0), c(1)};
}

std::vector<CalibratedConstant> derive_constants(const std::vector<std::string>& results, std::string& note) {
  std::vector<CalibratedConstant> out;
  std::set<std::string> gpus;
  std::string driver, date;
  const auto files = expand(results);
  if (files.empty())
    throw InputError(results.empty() ? "(no input)" : results[0], "", "no microbenchmark result files found");
  for (const auto& file : files) {
    const json doc = load_json_file(file);
    if (!doc.is_object() || !doc.contains("benchmark") || !doc["benchmark"].is_string())
      throw InputError(file, "/benchmark", "expected the benchmark name (a kernels/microbench result file)");
    if (!doc.contains("results") || !doc["results"].is_object())
      throw InputError(file, "/results", "expected an object of results");
    if (doc["results"].contains("skipped")) continue;
    const std::string bench = doc["benchmark"];
    gpus.insert(doc.value("gpu", "?"));
    driver = doc.value("driver_version", "?");
    date = std::max(date, doc.value("date", std::string()));
    for (const auto& d : kDirect) {
      if (bench != d.benchmark) continue;
      const char* at = d.older && !doc.contains(json::json_pointer(d.pointer)) ? d.older : d.pointer;
      out.push_back({d.constant, result_number(doc, file, at), bench, at});
    }
    if (bench == "tma" || bench == "tma_sharing") {
      // TMA latency = intercept of (issue -> data landed) against bytes, 2D tensor copies: L2-resident
      // (tma, 1-16 KiB) or tiles no earlier load touched, after an L2 flush (tma_sharing, 2-16 KiB).
      const bool hbm = bench == "tma_sharing";
      std::vector<double> x, y;
      const json::json_pointer lat(hbm ? "/results/hbm_latency_cycles" : "/results/latency_cycles");
      if (!doc.contains(lat) || !doc[lat].is_object())
        throw InputError(file, lat.to_string(), "expected latency points");
      for (auto it = doc[lat].begin(); it != doc[lat].end(); ++it)
        if (it.key().rfind("tensor2d_", 0) == 0) {
          x.push_back(result_number(doc, file, lat.to_string() + "/" + it.key() + "/bytes"));
          y.push_back(result_number(doc, file, lat.to_string() + "/" + it.key() + "/median"));
        }
      if (x.size() < 2)
        throw InputError(file, lat.to_string(), "expected at least two tensor2d_* latency points to fit");
      const auto [intercept, slope] = fit_line(x, y);
      out.push_back({hbm ? "tma_latency_hbm" : "tma_latency", intercept, bench,
                     fmt::format("Eigen least-squares fit of median latency vs bytes over {} 2D tensor copies{}: "
                                 "{:.1f} cycles + bytes / {:.1f} B/clk",
                                 x.size(), hbm ? " of tiles not in L2" : "", intercept, 1 / slope)});
    }
    if (bench == "tma_sharing") {
      // K/V tiles that s CTAs stream at once: every distinct byte is filled into L2 once, then served
      // s times. Fit 1 / (chip bytes/s) = 1 / l2_hit_bytes_per_s + (1 / s) / kv_fill_bytes_per_s over
      // the sharing degrees measured (cold L2 at the start of each run, as a kernel's first pass).
      std::vector<double> x, y;
      const json::json_pointer cfg("/results/configs");
      if (!doc.contains(cfg) || !doc[cfg].is_object())
        throw InputError(file, cfg.to_string(), "expected the sharing configurations");
      for (auto it = doc[cfg].begin(); it != doc[cfg].end(); ++it) {
        x.push_back(1 / result_number(doc, file, cfg.to_string() + "/" + it.key() + "/ctas_per_head"));
        y.push_back(1 / result_number(doc, file, cfg.to_string() + "/" + it.key() + "/cold/chip_bytes_per_s"));
      }
      if (x.size() < 2) throw InputError(file, cfg.to_string(), "expected at least two sharing degrees to fit");
      const auto [intercept, slope] = fit_line(x, y);
      const std::string how = fmt::format(
          "Eigen fit over {} sharing degrees s of 1 / chip bytes/s = 1 / {:.3g} + (1 / s) / {:.3g} (B/s)", x.size(),
          1 / intercept, 1 / slope);
      out.push_back({"l2_hit_bytes_per_s", 1 / intercept, bench, how});
      out.push_back({"kv_fill_bytes_per_s", 1 / slope, bench, how});
    }
    if (bench == "tma_under_load") {
      // A lone TMA load's latency while the other SMs stream tiles from HBM at utilisation rho below
      // saturation: latency / latency alone - 1 = k rho / sqrt(1 - rho), fitted through the origin
      // (rho at or above 0.97 is saturation, where the chip's share bounds the transfer instead).
      const std::string mode = "/results/modes/probe_miss_background_hbm";
      const double alone = result_number(doc, file, mode + "/alone/latency_cycles");
      const json::json_pointer pts(mode + "/points");
      if (!doc.contains(pts) || !doc[pts].is_array())
        throw InputError(file, pts.to_string(), "expected the latency points under load");
      Eigen::VectorXd x(static_cast<Eigen::Index>(doc[pts].size())), y(x.size());
      Eigen::Index n = 0;
      for (size_t i = 0; i < doc[pts].size(); ++i) {
        const std::string at = pts.to_string() + "/" + std::to_string(i);
        const double rho = result_number(doc, file, at + "/utilisation");
        if (result_number(doc, file, at + "/gap_cycles") <= 0 || rho >= 0.97 || rho <= 0) continue;
        x(n) = rho / std::sqrt(1 - rho);
        y(n) = result_number(doc, file, at + "/latency_cycles") / alone - 1;
        ++n;
      }
      if (n < 2 || !(alone > 0))
        throw InputError(file, pts.to_string(), "expected at least two points below saturation and a latency alone");
      const double k = x.head(n).dot(y.head(n)) / x.head(n).squaredNorm();
      out.push_back({"tma_queue_factor", std::max(0.0, k), bench,
                     fmt::format("Eigen least-squares fit through the origin over {} utilisations rho < 0.97 of one "
                                 "SM's 16 KB HBM load latency / alone ({:.0f} cycles) - 1 = k rho / sqrt(1 - rho) "
                                 "while the other SMs stream from HBM",
                                 n, alone)});
    }
    if (bench == "clock_under_mix") {
      const auto fitted = fit_clock_power(doc, file);
      out.insert(out.end(), fitted.begin(), fitted.end());
    }
    if (bench == "launch_overhead") {
      // Per-wave CTA launch cost: slope of empty-kernel GPU time (one launch alone between an event
      // pair) against waves, in SM cycles at the clock measured in the stamping kernel of the same run.
      std::vector<double> x, y;
      const json::json_pointer waves("/results/waves");
      if (!doc.contains(waves) || !doc[waves].is_object())
        throw InputError(file, waves.to_string(), "expected per-wave launch timings");
      for (auto it = doc[waves].begin(); it != doc[waves].end(); ++it) {
        x.push_back(result_number(doc, file, waves.to_string() + "/" + it.key() + "/waves"));
        y.push_back(result_number(doc, file, waves.to_string() + "/" + it.key() + "/empty_ns_single_launch"));
      }
      if (x.size() < 2) throw InputError(file, waves.to_string(), "expected at least two wave counts to fit");
      const double ghz = result_number(doc, file, "/results/clock_ghz");
      const auto [intercept, slope] = fit_line(x, y);
      out.push_back({"cta_launch_cycles", slope * ghz, bench,
                     fmt::format("Eigen fit of empty-kernel GPU time per launch vs waves over {} wave counts: {:.0f} ns + "
                                 "{:.1f} ns per wave, x {:.3f} GHz measured in-kernel",
                                 x.size(), intercept, slope, ghz)});
    }
    if (bench == "wgmma") {
      // wgmma completion latency beyond its pipe time: intercept of single-wgmma latency against the
      // pipe cycles of m64nNk16 (N = 64..256, A and B from SMEM).
      std::vector<double> x, y;
      const json::json_pointer lat("/results/latency");
      for (const char* n : {"n64_ss", "n128_ss", "n192_ss", "n256_ss"}) {
        const std::string base = lat.to_string() + "/" + n;
        if (!doc.contains(json::json_pointer(base))) continue;
        x.push_back(result_number(doc, file, base + "/pipe_cycles_at_4096_flop_per_clk"));
        y.push_back(result_number(doc, file, base + "/single_wgmma_latency_cycles"));
      }
      if (x.size() < 2) throw InputError(file, lat.to_string(), "expected single-wgmma latencies for at least two N");
      const auto [intercept, slope] = fit_line(x, y);
      out.push_back(
          {"mma_latency", intercept, bench,
           fmt::format("Eigen fit of single-wgmma latency vs pipe cycles over {} N: {:.1f} cycles + {:.2f} x pipe time",
                       x.size(), intercept, slope)});
    }
  }
  if (gpus.size() > 1)
    throw InputError(
        files[0], "/gpu",
        fmt::format("results come from more than one GPU ({}); calibrate one GPU at a time", fmt::join(gpus, ", ")));
  note = fmt::format("{}, driver {}, {}", gpus.empty() ? "?" : *gpus.begin(), driver, date.substr(0, 10));
  return out;
}

void apply_calibration(const std::string& hw_file, const std::vector<CalibratedConstant>& constants,
                       const std::string& note) {
  load_hardware(hw_file);  // refuse to start from a broken config
  std::ifstream in(hw_file);
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
  auto& c = doc["constants"];
  for (const auto& k : constants) {
    auto& entry = c[k.name];
    const std::string was =
        fmt::format("{} {}: {}", entry.value("provenance", "?"), entry["value"].dump(), entry.value("source", ""));
    nlohmann::ordered_json updated;
    updated["value"] = hardware_constant_is_integer(k.name) ? nlohmann::ordered_json(std::llround(k.value))
                                                            : nlohmann::ordered_json(k.value);
    updated["provenance"] = "measured";
    updated["source"] = fmt::format("kernels/microbench {} on {} ({})", k.benchmark, note, k.how);
    // Keep the published / derived figure this replaced; a re-calibration keeps the first one.
    updated["was"] =
        entry.value("provenance", "") == "measured" && entry.contains("was") ? entry["was"].get<std::string>() : was;
    entry = updated;
  }
  // One constant per line, as the hand-written configs.
  std::string text = "{\n";
  size_t i = 0;
  for (auto it = doc.begin(); it != doc.end(); ++it, ++i) {
    text += fmt::format("  {}: ", nlohmann::ordered_json(it.key()).dump());
    if (it.key() == "constants") {
      text += "{\n";
      size_t j = 0;
      for (auto ct = it->begin(); ct != it->end(); ++ct, ++j)
        text += fmt::format("    {}: {}{}\n", nlohmann::ordered_json(ct.key()).dump(), ct->dump(),
                            j + 1 < it->size() ? "," : "");
      text += "  }";
    } else {
      text += it->dump();
    }
    text += i + 1 < doc.size() ? ",\n" : "\n";
  }
  text += "}\n";
  const std::string tmp = hw_file + ".tmp";
  std::ofstream(tmp) << text;
  load_hardware(tmp);  // the result must still be a valid config
  fs::rename(tmp, hw_file);
}

}  // namespace attnsim
