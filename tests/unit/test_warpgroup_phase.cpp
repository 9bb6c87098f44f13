// The consumer warpgroups' phase (measure/warpgroup_phase): hand-built timelines of two pingpong
// warpgroups with known answers, and the phase of the model's own fa3_sm90 timeline.
#include <catch2/catch.hpp>

#include "driver/simulate.hpp"
#include "lower/schedule.hpp"
#include "measure/warpgroup_phase.hpp"
#include "test_support.hpp"

using namespace attnsim;

namespace {

Span busy(int op, double t0, double t1) { return Span{t0, t1, static_cast<int16_t>(op), SpanKind::Busy}; }
Span wgmma_wait(double t0, double t1) {
  Span s{t0, t1, ATTNSIM_OP_WAIT, SpanKind::Wait};
  s.label = 0;  // "wgmma.wait_group"
  return s;
}

/// One KV step as a consumer warp records it: QK issued at t, PV right after, the wait for the QK
/// group (done at once), the wait for the PV group ending at `pv_done`, then the softmax.
void step(WarpTrack& w, double t, double pv_done) {
  w.spans.push_back(busy(ATTNSIM_OP_MMA_QK, t, t + 10));
  w.spans.push_back(busy(ATTNSIM_OP_MMA_PV, t + 12, t + 20));
  w.spans.push_back(wgmma_wait(t + 20, t + 21));
  w.spans.push_back(wgmma_wait(t + 21, pv_done));
  w.spans.push_back(busy(ATTNSIM_OP_SOFTMAX_MAX, pv_done, pv_done + 5));
}

/// Warp 0 loads (no QK), warps 4 and 8 are the two consumer warpgroups' first warps. Warpgroup 0's
/// PVs complete at 50 and 160 and warpgroup 1's QKs start at 70 and 170 (d = +20, +10); warpgroup
/// 1's PVs complete at 130 and 230, warpgroup 0's next QKs start at 100 and 200 (d = -30, -30).
Timeline two_warpgroups(double clock_ghz) {
  Timeline tl;
  tl.clock_ghz = clock_ghz;
  tl.labels = {"wgmma.wait_group"};
  WarpTrack load{0, 0, "load", {busy(ATTNSIM_OP_LOAD_K, 0, 5)}};
  WarpTrack a{4, 0, "consumer0", {}}, b{8, 0, "consumer1", {}};
  step(a, 0, 50);
  step(a, 100, 160);
  a.spans.push_back(busy(ATTNSIM_OP_MMA_QK, 200, 210));  // the last block: QK only, no PV
  step(b, 70, 130);
  step(b, 170, 230);
  tl.warps = {load, a, b};
  return tl;
}

}  // namespace

TEST_CASE("warpgroup phase: from each warpgroup's PV completing to the next one's QK", "[phase]") {
  const std::vector<PhaseLink> links = warpgroup_phase(two_warpgroups(1.0));
  REQUIRE(links.size() == 2);
  CHECK(links[0].from_warp == 4);
  CHECK(links[0].to_warp == 8);
  CHECK(links[0].d_ns == std::vector<double>{20, 10});
  CHECK(median_d_ns(links[0]) == Approx(15));
  CHECK(links[1].from_warp == 8);
  CHECK(links[1].to_warp == 4);
  CHECK(links[1].d_ns == std::vector<double>{-30, -30});
  CHECK(format_phase_line(links, {}) == "warps 4 -> 8: measured +15 ns, predicted -; warps 8 -> 4: measured -30 ns, "
                                        "predicted -");
}

TEST_CASE("warpgroup phase: cycles convert at the timeline's clock and pool over CTAs and masked warps drop out", "[phase]") {
  const Timeline fast = two_warpgroups(2.0);
  CHECK(warpgroup_phase(fast)[0].d_ns == std::vector<double>{10, 5});
  const Timeline slow = two_warpgroups(1.0);
  const std::vector<PhaseLink> pooled = warpgroup_phase(std::vector<const Timeline*>{&fast, &slow});
  REQUIRE(pooled.size() == 2);
  CHECK(pooled[0].d_ns == std::vector<double>{10, 5, 20, 10});
  // Only one warpgroup's warp recorded: no link.
  CHECK(warpgroup_phase(slow, (1u << 0) | (1u << 4)).empty());
  CHECK(format_phase_line({}, {}).empty());
}

TEST_CASE("warpgroup phase of the model's fa3_sm90 timeline: hd64's three warpgroups in turn and hd128's two",
          "[phase]") {
  const auto s = load_schedule(test::root() + "/schedules/fa3_sm90.json");
  for (const int d : {64, 128}) {
    Problem p;
    p.batch = 2;
    p.heads = p.kv_heads = 16;
    p.seqlen_q = p.seqlen_k = 2048;
    p.head_dim = p.head_dim_v = d;
    const Prediction pred = predict(*s, test::h100(), p);
    const std::vector<PhaseLink> links = warpgroup_phase(pred.critical.timeline);
    REQUIRE(links.size() == (d == 64 ? 3u : 2u));
    for (const PhaseLink& l : links) {
      CHECK(l.to_warp == (l.from_warp == 4 * static_cast<int>(links.size()) ? 4 : l.from_warp + 4));
      // One step per KV block after a tile's first (which has no PV) on each of the CTA's tiles.
      CHECK(l.d_ns.size() >= 15u);
      // Pingpong: the next warpgroup's QK goes out only after this one's PV was issued, at most a
      // PV group's time before it completes; and it waits at most a few turns.
      CHECK(median_d_ns(l) > -1000);
      CHECK(median_d_ns(l) < 3000);
    }
  }
}
