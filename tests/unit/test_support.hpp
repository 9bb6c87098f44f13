// Helpers shared by the unit tests: paths to bundled files and a one-call prediction.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/simulate.hpp"
#include "model/hardware.hpp"
#include "model/problem.hpp"
#include "lower/schedule.hpp"

namespace attnsim::test {

inline std::string root() { return ATTNSIM_SOURCE_ROOT; }
inline std::string micro(const std::string& name) { return std::string(ATTNSIM_TEST_DATA) + "/schedules/" + name; }
inline std::string fa4() { return root() + "/schedules/fa4_sm100.json"; }
inline Hardware b200() { return load_hardware(root() + "/configs/hw/b200.json"); }
inline Hardware h100() { return load_hardware(root() + "/configs/hw/h100_sxm.json"); }
inline Problem default_problem() { return load_problem(root() + "/configs/problems/default.json"); }
/// A self-attention problem of `batch` x `heads` (`kv_heads` K/V heads) x `seqlen` queries and
/// keys at `head_dim` (Q, K and V alike), bf16.
inline Problem shape(int batch, int heads, int kv_heads, int seqlen, int head_dim, bool causal) {
  Problem p;
  p.batch = batch;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.seqlen_q = p.seqlen_k = seqlen;
  p.head_dim = p.head_dim_v = head_dim;
  p.causal = causal;
  return p;
}

/// `hw` without the costs outside a CTA's warp programs and without the cost of waits that are
/// already satisfied (launch, CTA launch gap and prologue, mbarrier / wgmma ready checks) and with
/// no MMA issue back-pressure: for hand-computable tests of one mechanism at a time.
inline Hardware without_fixed_costs(Hardware hw) {
  hw.launch_ns = hw.cta_launch_cycles = hw.cta_prologue_cycles = 0;
  hw.mbarrier_ready_cycles = hw.wgmma_wait_ready_cycles = 0;
  hw.mma_queue_depth = 1e9;
  return hw;
}

/// A GPU with a power model of round numbers: f_max 2 GHz, ceiling 1.8, limit 700 W,
/// P = 100 + (f / 2)^2 (100 + 800 t + 200 i) + 20 L2 + 100 HBM (W; duties, TB/s).
inline Hardware round_power_hw() {
  Hardware hw;
  hw.clock_ghz = 1.6;
  hw.clock_ghz_max = 2.0;
  hw.clock_ghz_tensor_ceiling = 1.8;
  hw.clock_power_limit_w = 700;
  hw.clock_power_exponent = 2;
  hw.clock_power_static_w = 100;
  hw.clock_power_base_w = 100;
  hw.clock_power_tensor_w = 800;
  hw.clock_power_issue_w = 200;
  hw.clock_power_l2_w_per_tbps = 20;
  hw.clock_power_hbm_w_per_tbps = 100;
  return hw;
}

/// A cost file written from `doc` for one check, under a name of its own (CostModel::load caches
/// by path), removed when the check is done.
struct TempCostFile {
  std::filesystem::path path;
  TempCostFile(const nlohmann::json& doc, const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("attnsim_costs_" + name + ".json")) {
    std::ofstream(path) << doc.dump();
  }
  ~TempCostFile() { std::filesystem::remove(path); }
  TempCostFile(const TempCostFile&) = delete;
  TempCostFile& operator=(const TempCostFile&) = delete;
  std::string string() const { return path.string(); }
};

/// Predicts `schedule_file` (with a variant and overrides) on `hw` for `problem`.
inline Prediction run(const std::string& schedule_file, const Hardware& hw, const Problem& problem,
                      const std::string& variant = "", const std::vector<std::string>& sets = {}) {
  auto s = load_schedule(schedule_file, sets, variant);
  return predict(*s, hw, problem);
}

}  // namespace attnsim::test
