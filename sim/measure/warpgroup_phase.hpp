// The relative phase of the consumer warpgroups that take turns at the tensor cores (FA3's pingpong),
// read the same way from a predicted and from a measured timeline. Two runs of one kernel can settle
// in different phases at the same speed: on an H200 the hd128 kernel's two warpgroups ran symmetric
// (each QK about 170 ns after the other's PV completed) exactly when warp 4 was instrumented, and
// asymmetric (about -100 / +455 ns, as the model) with any other choice of recording warps
// (configs/validation/h200/warpgroup_phase). The mean span durations differ between the two states
// by up to 40%, so a per-op comparison names the phase it was taken in.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/timeline.hpp"

namespace attnsim {

/// One consumer warpgroup's turn handed to the next, seen through one warp of each.
struct PhaseLink {
  int from_warp = 0;  ///< the warp read for the warpgroup whose PV completes
  int to_warp = 0;    ///< the warp read for the warpgroup that issues its QK next
  /// Per KV step of `from_warp` that has a PV: the time from that PV completing (the end of the
  /// step's second wgmma.wait_group wait, which waits for the PV group) to `to_warp`'s first mma_qk
  /// span after the step's own QK began, in ns. Negative: the next warpgroup issued its QK while the
  /// PV still ran.
  std::vector<double> d_ns;
};

/// The phase of a timeline's consumer warpgroups: for each warpgroup in warp order, the link to
/// the next one round robin. A warpgroup is read through its lowest warp that is in `warp_mask` (bit
/// w: warp w) and has mma_qk spans. Empty when fewer than two warpgroups have such a warp (one
/// consumer warpgroup, a schedule without wgmma groups, or traces of other warps). Times convert
/// with the timeline's clock_ghz.
std::vector<PhaseLink> warpgroup_phase(const Timeline& tl, uint32_t warp_mask = ~0u);

/// The same over several timelines (the CTAs of a measured run): the first timeline's links (the
/// first with any), each with the steps of every timeline's link between the same two warps.
std::vector<PhaseLink> warpgroup_phase(const std::vector<const Timeline*>& tls, uint32_t warp_mask = ~0u);

/// Median of `link.d_ns` (0 when empty).
double median_d_ns(const PhaseLink& link);

/// One line for `run`: each link's median d, measured beside predicted ("warps 4 -> 8: measured
/// +184 ns, predicted -206 ns; ..."). Links only one side has are shown with "-" on the other;
/// "" when neither side has any.
std::string format_phase_line(const std::vector<PhaseLink>& measured, const std::vector<PhaseLink>& predicted);

}  // namespace attnsim
