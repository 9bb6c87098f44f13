// Measured timelines: the records an instrumented kernel wrote (kernels/common/trace_record.h)
// turned into the simulator's Timeline, so the same reports (Chrome trace, per-op table) read
// predicted and measured runs alike; and the per-op summary both are compared by.
#pragma once
#include <limits>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "common/trace_record.h"
#include "core/timeline.hpp"
#include "sm90/fa3_api.h"  // sm90::MeasuredTrace: a traced launch's records, plain C++

namespace attnsim {

/// One CTA of a measured run: its timeline (cycles since its clk0) and where it sits on the
/// common %globaltimer axis.
struct MeasuredCta {
  int index = 0;  ///< blockIdx.x
  Timeline timeline;
  double start_ns = 0;  ///< ns0 relative to the earliest CTA of the launch
  double end_ns = 0;
  int sm = 0;
  int tiles = 0;
  uint64_t dropped = 0;  ///< spans of its recording warps beyond the record capacity
};

/// The SM clock of a traced run: the median over `ctas` of each one's clock (GHz; its cycles over
/// its %globaltimer span, MeasuredCta::timeline.clock_ghz); 0 when `ctas` is empty.
double median_cta_clock_ghz(const std::vector<MeasuredCta>& ctas);

/// Whether CTA `cta` of `rec` wrote its end anchor. Every CTA of kernels/fa2, kernels/blackflash
/// and kernels/sm100 does; an SM90 CTA that recorded no tile under trace sampling
/// (MeasuredTrace::trace_sample > 1) does not, and has no spans.
bool cta_recorded(const sm90::MeasuredTrace& rec, int cta);

/// Converts CTA `cta` of `rec` to a Timeline (an empty one, ending where it starts, for a CTA that
/// did not record). Clock: this CTA's (clk1 - clk0) / (ns1 - ns0),
/// or `fallback_ghz` when its interval is too short for the %globaltimer step (< 20 us).
/// Wait labels follow the simulator's ("pipeline_k.full[1] phase 0", "bar.pingpong[0]",
/// "wgmma.wait_group"). Throws std::out_of_range for a CTA index past the records.
MeasuredCta measured_cta(const sm90::MeasuredTrace& rec, int cta, double fallback_ghz);

/// Spans that recording warps ran but could not keep (their buffers were full), over every CTA.
uint64_t dropped_spans(const sm90::MeasuredTrace& rec);

/// Mean duration per op of a timeline's warp spans, in ns. Key: the op name for busy spans;
/// "wait <barrier>" for waits with stage and phase dropped ("wait pipeline_k.full").
struct OpStat {
  double mean_ns = 0;
  double total_ns = 0;
  long long count = 0;
};
std::map<std::string, OpStat> op_means(const Timeline& tl);
/// Same over the warps the instrumented kernel records by default (`--trace-warps first`: warp 0
/// of each warpgroup), so predicted and measured means sample the same warps: in the epilogue,
/// for example, warp 0 issues the O store while its three siblings wait for it. `first_tile`,
/// `end_tile`: only the spans of the CTA's work tiles [first_tile, end_tile) (Span::tile) count,
/// and those of no tile, as the kernel's trace sampling records a CTA's tiles but its first and a
/// dynamic grid's last ones (recorded_tiles); where that leaves no span of a tile, every tile
/// counts.
std::map<std::string, OpStat> op_means_first_warps(const Timeline& tl, int first_tile = 0,
                                                   int end_tile = std::numeric_limits<int>::max());
/// Same over the warps set in `warp_mask` (bit w: warp w, as `--trace-warps` selects the warps an
/// instrumented kernel records), so that a prediction samples the warps a measured run recorded;
/// `first_tile`, `end_tile` as for op_means_first_warps.
std::map<std::string, OpStat> op_means_of_warps(const Timeline& tl, uint32_t warp_mask, int first_tile = 0,
                                                int end_tile = std::numeric_limits<int>::max());
/// Same over several timelines (every CTA of a measured run).
std::map<std::string, OpStat> op_means(const std::vector<const Timeline*>& tls);

/// The CTAs a measured trace shows by default: the one that finished last (the critical CTA,
/// as `simulate` shows) followed by the lowest-indexed others that recorded (with a trace sample,
/// MeasuredTrace::trace_sample, not every CTA does), at most `count` in all.
std::vector<int> default_trace_ctas(const sm90::MeasuredTrace& rec, int count);

/// Writes CTAs `ctas` of a measured run as one Chrome trace: a process per CTA ("CTA i (SM s)"),
/// placed on the common %globaltimer axis, tracks and span names as `simulate --trace` writes
/// them. full = false: each CTA's first tile only. `title` prefixes the process names.
void write_measured_trace(const sm90::MeasuredTrace& rec, const std::vector<int>& ctas, bool full, double fallback_ghz,
                          const std::string& title, std::ostream& out);

}  // namespace attnsim
