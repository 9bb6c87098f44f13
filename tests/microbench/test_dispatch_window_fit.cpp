// The host-side fits of kernels/microbench dispatch_window on hand-built windows and phases whose
// answers are known.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "dispatch_window_fit.hpp"

using namespace mb;

TEST_CASE("dispatch stretch: the stretch of each phase kind is recovered from windows it covers") {
  // Idle 100 cycles. Beside phase kind 0 (stretch 0.5) a window covered by it takes
  // L = 100 (1 + 0.5 L / L) = 150; beside kind 1 (stretch 1) 200; half and half: L solves
  // L^2 - 100 L - 100 (0.5 L / 2 + L / 2) = 0, L = 175.
  std::vector<DispatchWindow> w;
  std::vector<NeighbourPhase> p;
  double t = 0;
  for (int i = 0; i < 3; ++i) {
    w.push_back({t, t + 150, t + 400, 0});
    p.push_back({t - 10, t + 160, 0, 0});
    t += 1000;
    w.push_back({t, t + 200, t + 400, 0});
    p.push_back({t - 10, t + 210, 1, 0});
    t += 1000;
    w.push_back({t, t + 175, t + 400, 0});
    p.push_back({t - 10, t + 87.5, 0, 0});
    p.push_back({t + 87.5, t + 200, 1, 0});
    t += 1000;
  }
  // A phase on another SMSP beside every window must not count.
  p.push_back({-100, t, 2, 1});
  const StretchFit f = fit_dispatch_stretch(w, p, 3, 100.0);
  REQUIRE(f.windows == 9);
  CHECK(f.stretch[0] == Approx(0.5).margin(1e-9));
  CHECK(f.stretch[1] == Approx(1.0).margin(1e-9));
  CHECK(f.stretch[2] == 0.0);  // never beside a window on its SMSP
  CHECK(f.cycles[2] == 0.0);
  CHECK(f.cycles[0] == Approx(3 * (150 + 87.5)));
  CHECK(f.rms_cycles == Approx(0.0).margin(1e-6));
}

TEST_CASE("dispatch stretch: windows no phase touches are left out") {
  const StretchFit f = fit_dispatch_stretch({{0, 120, 300, 2}}, {{0, 500, 0, 1}}, 1, 100.0);
  CHECK(f.windows == 0);
  CHECK(f.stretch[0] == 0.0);
}

TEST_CASE("phase slowdown: extra cycles per dispatch and per tensor-work cycle beside the phase") {
  // Phases of kind 0, alone 300 cycles; each overlapping a dispatch by d and its tensor work by e
  // lasts 300 + 0.25 d + 0.5 e.
  std::vector<DispatchWindow> w;
  std::vector<NeighbourPhase> p;
  double t = 0;
  const double ds[] = {0, 40, 100, 0, 60, 80};
  const double es[] = {0, 0, 50, 120, 30, 200};
  for (int i = 0; i < 6; ++i) {
    const double dur = 300 + 0.25 * ds[i] + 0.5 * es[i];
    p.push_back({t, t + dur, 0, 3});
    if (ds[i] + es[i] > 0) {
      // The dispatch ends d cycles into the phase's end part; the tensor work follows for e.
      const double end = t + dur;
      w.push_back({end - ds[i] - es[i], end - es[i], end, 3});
    }
    t += 2000;
  }
  const auto s = fit_phase_slowdown(w, p, 1);
  REQUIRE(s.size() == 1);
  CHECK(s[0].instances == 6);
  CHECK(s[0].touched == 5);
  CHECK(s[0].alone_median == 300.0);
  CHECK(s[0].alone == Approx(300).margin(1e-6));
  CHECK(s[0].per_dispatch == Approx(0.25).margin(1e-9));
  CHECK(s[0].per_tensor == Approx(0.5).margin(1e-9));
}
