// Standalone SVG rendering of a Timeline: one row per warp (grouped by role in the
// ASCII row order) plus one per shared unit, a µs time axis, tooltips and a legend.
#pragma once
#include <string>

#include "core/timeline.hpp"

namespace attnsim {

/// What to render. Window bounds are SM clock cycles from the start of the CTA.
struct SvgOptions {
  double t0_cycles = 0;   ///< window start (cycles)
  double t1_cycles = -1;  ///< window end (cycles); negative = end of the timeline
  int width_px = 1400;    ///< total image width in pixels (label column included)
};

/// Renders an SVG document (xmlns set, no external resources). Each span overlapping the
/// window is one <rect class="busy|wait|unit"> clipped to it, filled by a fixed per-op colour
/// (waits: light hatching), with a <title> tooltip (op, label, stage, block, tile, start and
/// duration in µs). Rows are labelled "softmax0 w2" / unit name; warps of role "empty" are
/// left out (as in render_ascii). A background rect (class "bg") and legend swatches (class
/// "key") are the only other rects. Deterministic. Throws std::invalid_argument for an empty window
/// or width_px < 300.
std::string render_svg(const Timeline& tl, const SvgOptions& opt);

}  // namespace attnsim
