// `attnsim explain`: switch off each design choice of a schedule one at a time (the variants its
// file declares, each answering one of the "Key Questions" of the FA4 execution-flow analysis,
// docs/sources.md) and report the predicted slowdown, the new bottleneck, and the steady state
// before and after, side by side.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "driver/simulate.hpp"
#include "lower/schedule.hpp"

namespace attnsim {

/// One design choice switched.
struct Ablation {
  VariantInfo variant;
  bool ok = false;  ///< false when the variant is rejected (then `error` says why)
  std::string error;
  Prediction prediction;
  double slowdown = 0;  ///< time / base time - 1 (positive: the design choice helps)
  std::string bottleneck;
};

/// The base prediction and every ablation.
struct Explanation {
  std::string schedule, hardware, problem;
  Prediction base;
  std::string base_bottleneck;
  std::vector<Ablation> ablations;
};

/// Predicts `schedule_file` (with `overrides`) and each of its variants on `hw` for `problem`.
/// Each prediction has the budget of `budget` (max_events, max_tiles). Throws InputError when the
/// base schedule itself is rejected (BudgetError when its prediction exceeds the budget).
Explanation explain(const std::string& schedule_file, const std::vector<std::string>& overrides, const Hardware& hw,
                    const Problem& problem, const PredictOptions& budget = {});

/// The table, then for each ablation the steady-state timelines before | after (each `width` wide).
std::string format_explanation(const Explanation& e, int width, bool timelines);
/// The table as JSON: base {time_us, tflops, bottleneck} and one row per ablation.
nlohmann::ordered_json explanation_json(const Explanation& e);

/// Joins two blocks of text line by line, the left padded to `left_width` columns (UTF-8 aware).
std::string side_by_side(const std::string& left, const std::string& right, int left_width, const std::string& sep);

}  // namespace attnsim
