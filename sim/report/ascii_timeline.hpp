// Text rendering of a Timeline in the style of the FA4 execution-flow analysis's diagrams
// (docs/sources.md): one row per role (its first warp) and per shared unit, █ = busy, ░ = waiting.
// Also the row order and short op names that the SVG renderer shares.
#pragma once
#include <string>
#include <vector>

#include "core/timeline.hpp"

namespace attnsim {

/// What to render. Window bounds are SM clock cycles from the start of the CTA.
struct AsciiOptions {
  double t0_cycles = 0;   ///< window start (cycles)
  double t1_cycles = -1;  ///< window end (cycles); negative = end of the timeline
  int width = 100;        ///< number of cells (characters) per row
  bool labels = true;     ///< print short op names under each warp row
};

/// Renders rows LOAD, MMA, SOFT0, SOFT1, CORR, EPI (roles present; first warp of each role),
/// other roles (uppercased, 6 chars; "empty" skipped), then unit rows TC, TMA, ... Each row is
/// "LABEL │cells│"; a cell is █ when busy >= half its time, else ░ when waiting >= half, else
/// the larger of the two when together >= half, else ' '. Preceded by a time-axis header
/// "TIME (us) t0 ──▶ t1" and followed by the legend. UTF-8. Throws std::invalid_argument for
/// width < 1 or an empty window.
std::string render_ascii(const Timeline& tl, const AsciiOptions& opt);

// ---- shared with the SVG renderer ----

/// End of the timeline in cycles: max of end_cycles and every span's end.
double timeline_end(const Timeline& tl);

/// Rank of a role in the row order: load 0, mma 1, softmax0 2, softmax1 3, correction 4,
/// epilogue 5, anything else 6.
int role_rank(const std::string& role);

/// Indices into tl.warps in row order: by role rank, then (other roles) by their lowest
/// warp index, then by warp index. Warps of role "empty" are left out.
std::vector<size_t> warp_row_order(const Timeline& tl);

/// Short name of a span's op for labels: QK0, PV1, K3, V3, Q0, exp, max, O1 (rescale),
/// fin, st; attnsim_op_name otherwise. Stage/block numbers are omitted when < 0.
std::string short_op_name(const Span& s);

}  // namespace attnsim
