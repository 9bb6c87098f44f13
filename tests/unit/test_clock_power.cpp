// The clock under a kernel's activity (model/clock_power.hpp) and its fit on clock_under_mix
// (calibrate/clock_power_fit.hpp): hand-computable power and clocks, recovery of known constants
// from synthetic mixes, and the committed H100 fit's behaviour.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "calibrate/clock_power_fit.hpp"
#include "driver/simulate.hpp"
#include "lower/schedule.hpp"
#include "model/clock_power.hpp"
#include "model/json_reader.hpp"
#include "test_support.hpp"

using namespace attnsim;

TEST_CASE("board power of the model by hand", "[clock_power]") {
  const Hardware hw = test::round_power_hw();
  ChipActivity a;
  a.tensor_duty = 0.5;
  a.issue_duty = 0.5;
  a.l2_bytes_per_clk = 2000;  // at 1 GHz: 2 TB/s
  a.hbm_bytes_per_clk = 500;  // 0.5 TB/s
  // 100 + 0.25 x (100 + 400 + 100) + 20 x 2 + 100 x 0.5 = 340 W
  CHECK(board_power_w(hw, a, 1.0) == Approx(340));
}

TEST_CASE("the clock is the tensor ceiling below the power limit and the limit clock above it", "[clock_power]") {
  const Hardware hw = test::round_power_hw();
  ChipActivity light;
  light.tensor_duty = 0.1;
  CHECK(clock_under_activity(hw, light, 1.6) == Approx(1.8));  // 100 + 0.81 x 180 = 246 W < 700
  ChipActivity none;                                           // no tensor work: the top clock (100 + 100 W)
  CHECK(clock_under_activity(hw, none, 1.6) == Approx(2.0));
  ChipActivity heavy;
  heavy.tensor_duty = 1.0;
  heavy.issue_duty = 0.5;
  // 100 + (f/2)^2 x 1000 = 700 -> f = 2 sqrt(0.6) = 1.549 GHz
  const double f = clock_under_activity(hw, heavy, 1.6);
  CHECK(f == Approx(2 * std::sqrt(0.6)).epsilon(1e-6));
  CHECK(board_power_w(hw, heavy, f) == Approx(700).epsilon(1e-6));
  // More HBM traffic lowers it further.
  heavy.hbm_bytes_per_clk = 1000;
  CHECK(clock_under_activity(hw, heavy, 1.6) < f);
}

TEST_CASE("without a power model the clock is the fallback", "[clock_power]") {
  Hardware hw = test::round_power_hw();
  hw.clock_power_limit_w = 0;
  ChipActivity a;
  a.tensor_duty = 1;
  CHECK(clock_under_activity(hw, a, 1.606) == 1.606);
  CHECK(board_power_w(hw, a, 1.5) == 0);
}

TEST_CASE("fit_clock_power recovers the constants of synthetic mixes", "[clock_power][calibrate]") {
  const Hardware hw = test::round_power_hw();
  nlohmann::json doc;
  doc["results"]["max_clock_ghz"] = 2.0;
  int n = 0;
  for (double t : {0.0, 0.3, 1.0})
    for (double i : {0.0, 0.4, 0.6})
      for (double l2 : {0.0, 8.0})
        for (double hbm : {0.0, 3.0}) {
          ChipActivity a;
          a.tensor_duty = t;
          a.issue_duty = i;
          // Clocks that vary from mix to mix, as under the power limit.
          const double f = 1.3 + 0.05 * (n % 13);
          a.l2_bytes_per_clk = l2 * 1e3 / f;
          a.hbm_bytes_per_clk = hbm * 1e3 / f;
          auto& m = doc["results"]["configs"]["mix" + std::to_string(n++)];
          m["clock_ghz"] = f;
          m["tensor_duty"] = t;
          m["issue_duty"] = i;
          m["l2_bytes_per_s"] = l2 * 1e12;
          m["hbm_bytes_per_s"] = hbm * 1e12;
          m["board_power_w"] = board_power_w(hw, a, f);
          m["power_limit_w"] = 700;
        }
  std::map<std::string, double> v;
  for (const auto& c : fit_clock_power(doc, "synthetic.json")) v[c.name] = c.value;
  CHECK(v.at("clock_power_exponent") == 2);
  CHECK(v.at("clock_power_static_w") == Approx(100).margin(1e-6));
  CHECK(v.at("clock_power_tensor_w") == Approx(800).margin(1e-6));
  CHECK(v.at("clock_power_issue_w") == Approx(200).margin(1e-6));
  CHECK(v.at("clock_power_l2_w_per_tbps") == Approx(20).margin(1e-6));
  CHECK(v.at("clock_power_hbm_w_per_tbps") == Approx(100).margin(1e-6));
  CHECK(v.at("clock_power_limit_w") == 700);
}

TEST_CASE("fit_clock_power names the file and path of what is missing", "[clock_power][calibrate][inputs]") {
  nlohmann::json doc;
  doc["results"]["max_clock_ghz"] = 1.98;
  doc["results"]["configs"]["t1"] = {{"clock_ghz", 1.6}};
  try {
    fit_clock_power(doc, "mix.json");
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("mix.json"));
    CHECK_THAT(e.what(), Catch::Contains("/results/configs/t1/tensor_duty"));
  }
}

TEST_CASE("the committed H100 power model gives lower clocks to heavier tensor and HBM work", "[clock_power]") {
  const Hardware hw = load_hardware(resolve_hardware_path("h100_sxm"));
  REQUIRE(hw.clock_power_limit_w > 0);
  ChipActivity a;
  a.tensor_duty = 0.2;
  const double light = clock_under_activity(hw, a, hw.clock_ghz);
  CHECK(light == Approx(hw.clock_ghz_tensor_ceiling));
  a.tensor_duty = 0.75;
  a.issue_duty = 0.4;
  a.l2_bytes_per_clk = 3000;
  const double heavy = clock_under_activity(hw, a, hw.clock_ghz);
  CHECK(heavy < light);
  CHECK(heavy > 1.2);
  a.hbm_bytes_per_clk = 1000;
  CHECK(clock_under_activity(hw, a, hw.clock_ghz) < heavy);
}

TEST_CASE("a prediction's spans turn into time at the prediction's clock and not the one it was simulated at",
          "[clock_power][driver]") {
  // A tensor-heavy FA3 run: the power model lowers the clock below clock_under_load, and the
  // critical CTA's last span must end (in us) within the predicted time, not past or short of it.
  const Hardware hw = load_hardware(resolve_hardware_path("h100_sxm"));
  const Problem p = test::shape(2, 16, 16, 2048, 128, false);
  const auto s = load_schedule(test::root() + "/schedules/fa3_sm90.json");
  const Prediction r = predict(*s, hw, p, {});
  REQUIRE(r.clock_ghz < hw.clock_under(s->clock_load()) - 0.01);
  CHECK(r.critical.timeline.clock_ghz == r.clock_ghz);
  double last = 0;
  for (const auto& w : r.critical.timeline.warps)
    for (const auto& sp : w.spans) last = std::max(last, sp.end);
  const double launch_us = hw.launch_ns * 1e-3;
  CHECK(r.critical.timeline.to_us(last) <= r.time_us + 1e-9);
  CHECK(r.critical.timeline.to_us(last) >= r.time_us - launch_us - 0.02 * r.time_us);
}

TEST_CASE("set_clock turns a prediction's cycles into time at a clock and takes the HBM bound at that clock", "[clock_power]") {
  Hardware hw = test::round_power_hw();
  hw.hbm_bytes_per_s = 1e12;
  hw.launch_ns = 1000;
  Prediction p;
  p.grid_cycles = 10000;
  p.hbm_bytes = 6e6;  // 6 us at 1 TB/s
  p.flops = 7e6;
  // 1.5 GHz: the HBM bound is 9000 cycles, under the grid's 10000; + 1500 cycles of launch.
  set_clock(p, hw, 1.5);
  CHECK_FALSE(p.hbm_bound);
  CHECK(p.cycles == Approx(11500));
  CHECK(p.time_us == Approx(11500.0 / 1500));
  CHECK(p.clock_ghz == 1.5);
  CHECK(p.critical.timeline.clock_ghz == 1.5);
  // 2 GHz: 12000 cycles of HBM bound over the grid's 10000; + 2000 of launch: 7 us.
  set_clock(p, hw, 2.0);
  CHECK(p.hbm_bound);
  CHECK(p.cycles == Approx(14000));
  CHECK(p.time_us == Approx(7.0));
  CHECK(p.tflops == Approx(7e6 / 7e-6 / 1e12));
}

TEST_CASE("kernels timed in turns share the clock of their time-weighted mean activity", "[clock_power]") {
  const Hardware hw = test::round_power_hw();
  Prediction heavy, light;
  heavy.power_clocked = light.power_clocked = true;
  heavy.activity.tensor_duty = 1.0;
  heavy.activity.issue_duty = 0.5;
  heavy.cycles = 3000;
  light.activity.tensor_duty = 0.1;
  light.cycles = 1000;
  // Weights 3/4 and 1/4: tensor 0.775, issue 0.375; 100 + (f/2)^2 x (100 + 620 + 75) = 700.
  const auto f = shared_clock_ghz(hw, {&heavy, &light});
  REQUIRE(f);
  CHECK(*f == Approx(2 * std::sqrt(600.0 / 795)).epsilon(1e-6));
  CHECK(*f < hw.clock_ghz_tensor_ceiling);
  // Alone, each holds its own: the light one the ceiling, the heavy one its power-limit clock.
  CHECK(*shared_clock_ghz(hw, {&light}) == Approx(1.8));
  CHECK(*shared_clock_ghz(hw, {&heavy}) == Approx(2 * std::sqrt(0.6)).epsilon(1e-6));
  // A kernel whose clock does not follow its activity: no shared clock to give.
  light.power_clocked = false;
  CHECK_FALSE(shared_clock_ghz(hw, {&heavy, &light}));
  CHECK_FALSE(shared_clock_ghz(hw, {}));
}

TEST_CASE("the CTAs are simulated at the clock they are predicted at: L2 and HBM move bytes per second",
          "[clock_power][driver]") {
  const Hardware hw = load_hardware(resolve_hardware_path("h200"));
  const Problem p = test::shape(8, 16, 16, 2048, 256, true);
  const std::string file = test::root() + "/schedules/fa3_sm90.json";
  auto grid_cycles = [&](const Schedule& s, const Problem& pr, double ghz) {
    PredictOptions o;
    o.clock_ghz = ghz;
    const Prediction r = predict(s, hw, pr, o);
    CHECK(r.clock_ghz == ghz);
    return r.grid_cycles;
  };
  // Without L2 sections every CTA streams its own head's K/V from HBM: the simulated CTAs take
  // about as long in ns at any clock, so their cycles grow with it.
  const auto streaming = load_schedule(file, {}, "no_l2_sections");
  const double slow = grid_cycles(*streaming, p, 1.3), fast = grid_cycles(*streaming, p, 1.8);
  CHECK(fast / slow > 1.25);  // 1.8 / 1.3 = 1.38 if wholly memory-bound
  // The base schedule on a long non-causal problem keeps the tensor cores busy: about the same
  // cycles at either clock.
  const auto base = load_schedule(file);
  const Problem dense = test::shape(2, 16, 16, 8192, 128, false);
  const double dense_ratio = grid_cycles(*base, dense, 1.8) / grid_cycles(*base, dense, 1.3);
  CHECK(dense_ratio == Approx(1.0).margin(0.03));
  // predict() simulates at the clock its own activity holds: asked to predict at that clock, it
  // gives the same time within 1%.
  const Prediction own = predict(*streaming, hw, p, {});
  PredictOptions at;
  at.clock_ghz = own.clock_ghz;
  CHECK(predict(*streaming, hw, p, at).time_us == Approx(own.time_us).epsilon(0.01));
}

TEST_CASE("the chip's tensor activity counts the MMA work the kernel executes - whole diagonal blocks and padded tiles",
          "[clock_power][driver]") {
  const Hardware hw = load_hardware(resolve_hardware_path("h200"));
  const auto base = load_schedule(test::root() + "/schedules/fa3_sm90.json");
  // hd128 at 900 keys, causal, one head: 8 m-blocks of 128 rows running 1, 2, ..., 8 KV blocks of
  // 128 keys, 36 blocks of QK and PV (2 x 128 x 128 x (128 + 128) FLOP each), where the problem's
  // FLOP (4 x 900^2 x 128 / 2) count the causal half.
  const Problem causal = test::shape(1, 1, 1, 900, 128, true);
  const GridPlan plan = base->plan_grid(hw, causal, 1 << 20);
  const double block = 2.0 * 128 * 128 * 256;
  CHECK(base->executed_mma_flops(hw, causal, plan) == Approx(36 * block));
  CHECK(causal.flops() == Approx(4.0 * 900 * 900 * 128 / 2));
  // Non-causal, a whole number of tiles: exactly the problem's FLOP.
  const Problem dense = test::shape(1, 1, 1, 1024, 128, false);
  CHECK(base->executed_mma_flops(hw, dense, base->plan_grid(hw, dense, 1 << 20)) == Approx(dense.flops()));
  // The prediction's tensor duty is the executed work over the chip's MMA rate and time: 1.46x
  // what the problem's FLOP would say for the causal one.
  const Problem many = test::shape(32, 16, 16, 900, 128, true);
  const Prediction pr = predict(*base, hw, many, {});
  CHECK(pr.mma_flops / pr.flops == Approx(36 * block / causal.flops()).epsilon(1e-9));
  CHECK(pr.activity.tensor_duty ==
        Approx(pr.mma_flops / hw.tensor_flops_per_clk / (hw.num_sms * pr.grid_cycles)).epsilon(1e-9));
}
