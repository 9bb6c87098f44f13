// Chrome Trace Event JSON export of a Timeline (opens in ui.perfetto.dev and
// chrome://tracing): one thread per warp, then one per shared unit.
#pragma once
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/timeline.hpp"

namespace attnsim {

/// What to export. Window bounds are SM clock cycles from the start of the CTA.
struct TraceOptions {
  double t0_cycles = 0;                ///< window start (cycles)
  double t1_cycles = -1;               ///< window end (cycles); negative = end of the timeline
  std::string process_name = "CTA 0";  ///< name shown for the process (pid) track group
  int pid = 0;                         ///< process id of every event (one per exported CTA)
  double offset_us = 0;  ///< added to every timestamp (aligns CTAs of a measured run on one axis)
};

/// Writes `tl` as Chrome Trace Event JSON to `out`:
/// {"traceEvents":[...],"displayTimeUnit":"ns","otherData":{clock_ghz, window_*}}.
/// Metadata ("M") events name the process and each thread; tid = warp index for warps
/// and 1000 + i (or above the highest warp) for unit i. Every span overlapping the window
/// becomes an "X" event clipped to it, ts/dur in microseconds (4 decimals, absolute time,
/// i.e. not shifted by t0). Busy spans are named by op, waits "wait <label>"; cat is
/// "busy", "wait" or "unit"; args hold stage/block/tile when >= 0 and the label if any.
/// Output is byte-identical for identical input. Throws std::invalid_argument when t1 < t0.
void write_chrome_trace(const Timeline& tl, const TraceOptions& opt, std::ostream& out);

/// Several CTAs in one trace: each timeline becomes its own process (its TraceOptions' pid,
/// name, window and offset_us). otherData describes the first. Throws like write_chrome_trace;
/// std::invalid_argument also when `ctas` is empty.
void write_chrome_trace(const std::vector<std::pair<const Timeline*, TraceOptions>>& ctas, std::ostream& out);

}  // namespace attnsim
