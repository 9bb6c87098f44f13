// Choosing the time window that timelines show by default: a steady-state stretch of the CTA (a few
// KV iterations in the middle of its first tile), as the per-warp diagrams of the FA4
// execution-flow analysis (docs/sources.md) show, rather than the prologue or the whole run.
#pragma once
#include <string>
#include <utility>

#include "core/timeline.hpp"

namespace attnsim {

/// [t0, t1) in cycles: `iterations` KV iterations of tile 0 around its middle, found from the
/// tensor core's QK spans; the whole timeline when there are none.
/// The window is never empty: without two distinct QK starts it is the whole run (at least 1 cycle).
std::pair<double, double> steady_state_window(const Timeline& tl, int iterations = 4);

/// End (cycles) of the CTA's first work tile in the timeline: the last span tagged with the lowest
/// tile index there (0 in a prediction; in a measured timeline the first tile the CTA recorded,
/// which under trace sampling is not its tile 0); the whole timeline when no span is tagged. The
/// default extent of Chrome traces (small enough for Perfetto).
double first_tile_end(const Timeline& tl);

/// Parses "T0:T1" in microseconds into cycles; throws std::invalid_argument with a message.
std::pair<double, double> parse_window_us(const std::string& text, const Timeline& tl);

}  // namespace attnsim
