// The code of a KV iteration outside the spans the simulator charges (`loop_control` in
// configs/costs/sm90_softmax.json), counted per traced SM90 kernel instance for `attnsim sass-costs`.
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "calibrate/sass_paths.hpp"

namespace attnsim::sass {

/// Whether `a` and `b` are the same fa3_forward instance but for tracing and, with
/// `any_scheduler`, the tile scheduler.
bool same_instance(const Fa3Knobs& a, const Fa3Knobs& b, bool any_scheduler = false);

/// A plain (untraced) instance's knobs and its steady-state KV loop.
using PlainLoop = std::pair<Fa3Knobs, PlainKvLoop>;

/// One instance's loop control: instructions and static issue cycles per consumer warp and KV
/// iteration.
struct LoopControlCount {
  int instructions = 0, issue_cycles = 0;  ///< in the traced build's gaps between spans
  /// Dynamic scheduler instances with a static twin (traced and plain): what the dynamic plain
  /// loop holds over the static plain loop; instructions / issue_cycles are then the static
  /// twin's gaps.
  std::optional<int> plain_over_static_instructions, plain_over_static_issue_cycles;
};

/// The loop control of traced instance `ka`: the instructions of its KV loop's gaps between spans
/// ("-" spans) and their static issue time. The dynamic scheduler's kernels keep the tile's control
/// values in vector registers, guard the loop warp-uniformly and move descriptors to uniform
/// registers in the plain build but not in the traced one (kernels/sm90/README.md), so for them,
/// where `traced` holds the static twin and `plain` both plain loops, it is the static twin's gaps
/// plus the dynamic plain loop's excess over the static plain loop (not where the listing has no
/// control codes).
LoopControlCount loop_control_count(const KernelAnalysis& ka, const std::vector<KernelAnalysis>& traced,
                                    const std::vector<PlainLoop>& plain);

}  // namespace attnsim::sass
