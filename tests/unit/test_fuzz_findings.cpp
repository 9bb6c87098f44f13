// Bugs the fuzz targets found (fuzz/regressions keeps their inputs), checked where they lived.
#include <catch2/catch.hpp>

#include "core/timeline.hpp"
#include "lower/rescale_model.hpp"
#include "report/ascii_timeline.hpp"
#include "report/window.hpp"
#include "test_support.hpp"

using namespace attnsim;
using namespace attnsim::test;

TEST_CASE("a rescale mask of one KV block answers no for later blocks instead of reading past its end", "[fuzz]") {
  // seqlen_k within one block: check() probes a two-block tile (fuzz/regressions/problem).
  const RescaleMask m = rescale_from_rate(1.0, 4, 1);
  REQUIRE(m.need.size() == 4);
  for (int w = 0; w < 4; ++w)
    for (int it = 0; it < 4; ++it) CHECK_FALSE(m.at(w, it));
  auto s = load_schedule(fa4());
  Problem p = default_problem();
  p.seqlen_q = p.seqlen_k = 128;
  p.head_dim = p.head_dim_v = 64;
  p.causal = true;
  CHECK_NOTHROW(s->check(b200(), p));
}

TEST_CASE("the default timeline window is never empty", "[fuzz]") {
  // FA3 at hd64 with two KV blocks: the QK spans of every SMSP start together (fuzz/regressions/simulate).
  const Hardware h100 = test::h100();
  Problem p = default_problem();
  p.batch = p.heads = p.kv_heads = 1;
  p.seqlen_q = 128;
  p.seqlen_k = 256;
  p.head_dim = p.head_dim_v = 64;
  const Prediction pr = run(root() + "/schedules/fa3_sm90.json", h100, p);
  const auto [t0, t1] = steady_state_window(pr.critical.timeline);
  CHECK(t1 > t0);
  AsciiOptions o;
  o.t0_cycles = t0;
  o.t1_cycles = t1;
  CHECK_FALSE(render_ascii(pr.critical.timeline, o).empty());
  Timeline empty;
  CHECK(steady_state_window(empty) == std::pair<double, double>{0, 1});
}
