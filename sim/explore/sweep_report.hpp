// Outputs of a sweep: CSV and JSON of every evaluated candidate, the ranked table and
// rejection counts for the terminal, and the best candidate as a schedule file.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "explore/sweep.hpp"

namespace attnsim {

/// CSV, one row per evaluated candidate, best first then infeasible ones by index. Columns:
/// rank, index, feasible, reason, objective, [secondary], tflops:<problem label>..., <axis pointer>...
void write_sweep_csv(const SweepEvaluator& ev, const std::vector<Evaluation>& evals, std::ostream& out);
/// JSON: sweep, hardware, objective, counts (grid, admitted, evaluated, feasible), rejections by
/// reason, the ranked rows, the Pareto front when a secondary objective is set.
nlohmann::ordered_json sweep_json(const SweepEvaluator& ev, const std::vector<Evaluation>& evals, size_t admitted,
                                  bool interrupted);
/// Terminal summary: counts, rejections by reason, the top `top` candidates (and the Pareto front).
std::string format_sweep_table(const SweepEvaluator& ev, const std::vector<Evaluation>& evals, size_t admitted,
                               size_t top);
/// The candidate's schedule document, ready for `attnsim simulate`.
nlohmann::json best_schedule(const SweepEvaluator& ev, const Evaluation& best);
/// "kv_stage=6 cta_group=auto ..." for one candidate: the axis values, compact.
std::string knob_summary(const SweepEvaluator& ev, size_t index);

}  // namespace attnsim
