// The summary of a prediction: time, TFLOPS, utilisation of each unit, the bottleneck
// unit, per-role busy and stall shares and what each role waited on most. Printed as
// text or JSON (keys documented in README.md).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "driver/simulate.hpp"

namespace attnsim {

/// Utilisation of one unit over the critical CTA's run, in [0, 1].
struct UnitUse {
  std::string name;  ///< "tensor_core", "mufu", "fma", "alu", "issue", "tmem", "smem", "tma", "l2", "hbm"
  double utilisation = 0;
  std::string detail;  ///< how it was computed, human-readable
};

/// How one role's warps spent the critical CTA's time.
struct RoleUse {
  std::string role;
  int warps = 0;
  double busy = 0, stall = 0;  ///< fractions of the CTA's time, averaged over the role's warps
  std::string top_wait;        ///< barrier (stage index dropped) it waited on longest
  double top_wait_share = 0;   ///< that wait as a fraction of the CTA's time
};

/// Everything `simulate` prints, computed once from a Prediction.
struct Summary {
  std::string schedule, hardware, problem;
  std::vector<std::string> knobs;
  double time_us = 0, tflops = 0, cycles = 0, clock_ghz = 0;
  std::vector<UnitUse> units;
  std::string bottleneck;
  double bottleneck_utilisation = 0;
  std::vector<RoleUse> roles;
  std::string grid;  ///< tile scheduling in words
  int ctas_simulated = 0;
  uint64_t events = 0;
  ChipActivity activity;  ///< what the clock followed (Prediction::activity)
};

/// Builds the summary; roles appear in the schedule's order (Schedule::roles()).
Summary summarize(const Prediction& p, const Schedule& s, const Hardware& hw, const Problem& problem);
/// Below this utilisation of the busiest unit, a run is bound by its dependency chain.
constexpr double kSaturated = 0.75;
/// "tensor_core", or "dependencies (tensor_core 47%)" when no unit is near saturation.
std::string bound_by(const Summary& s);
/// Multi-line text for the terminal.
std::string format_summary(const Summary& s);
/// JSON with at least time_us, tflops, bottleneck (see README).
nlohmann::ordered_json summary_json(const Summary& s);

}  // namespace attnsim
