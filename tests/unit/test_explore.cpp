// explore: feasibility counting, ranking against brute force, interruption, the local
// search target on the bundled sweep, determinism; explain; extrapolation accuracy.
#include <catch2/catch.hpp>
#include <sstream>

#include "explain/explain.hpp"
#include "explore/sweep.hpp"
#include "explore/sweep_report.hpp"
#include "model/json_reader.hpp"
#include "test_support.hpp"

using namespace attnsim;

namespace {
std::string small_sweep() { return std::string(ATTNSIM_TEST_DATA) + "/sweeps/small.json"; }
std::string bundled_sweep() { return test::root() + "/configs/sweeps/fa4_b200.json"; }
}  // namespace

TEST_CASE("extrapolated predictions match exact simulation", "[explore][extrapolate]") {
  const Hardware hw = test::b200();
  const auto s = load_schedule(test::fa4());
  struct Shape {
    int hd;
    bool causal;
    int seqlen, batch;
  };
  for (const Shape sh : {Shape{64, false, 4096, 2}, Shape{128, true, 4096, 2}, Shape{128, false, 16384, 1}}) {
    Problem p = test::default_problem();
    p.head_dim = p.head_dim_v = sh.hd;
    p.causal = sh.causal;
    p.seqlen_q = p.seqlen_k = sh.seqlen;
    p.batch = sh.batch;
    PredictOptions exact, fast;
    exact.record_spans = fast.record_spans = false;
    fast.extrapolate = true;
    const double a = predict(*s, hw, p, exact).time_us, b = predict(*s, hw, p, fast).time_us;
    INFO(p.describe());
    CHECK(b == Approx(a).epsilon(0.001));
  }
}

TEST_CASE("infeasible candidates are rejected before simulation and counted by reason", "[explore]") {
  const SweepEvaluator ev(load_sweep(small_sweep()));
  REQUIRE(ev.grid_size() == 16);
  const auto evals = evaluate_all(ev, grid_candidates(ev), 2, nullptr, nullptr);
  REQUIRE(evals.size() == 16);
  const auto rej = rejections(evals);
  CHECK(rej.at("smem") == 8);
  CHECK(rej.at("registers") == 4);
  CHECK(rej.at("named_barriers") == 1);
  CHECK(rank(evals).size() == 3);
}

TEST_CASE("the best candidate of a small sweep equals a brute-force computation", "[explore]") {
  const SweepEvaluator ev(load_sweep(small_sweep()));
  const auto evals = evaluate_all(ev, grid_candidates(ev), 2, nullptr, nullptr);
  // Brute force: exact (not extrapolated) predictions of every candidate, geometric mean.
  double best = -1;
  size_t best_index = 0;
  for (size_t i = 0; i < ev.grid_size(); ++i) {
    try {
      const auto s = parse_schedule(ev.document(i), "brute force");
      double log_sum = 0;
      for (const auto& p : ev.spec().problems) log_sum += std::log(predict(*s, ev.spec().hw, p).tflops);
      const double g = std::exp(log_sum / ev.spec().problems.size());
      if (g > best) best = g, best_index = i;
    } catch (const InputError&) {}
  }
  const auto ranked = rank(evals);
  REQUIRE(!ranked.empty());
  CHECK(ranked.front()->index == best_index);
  CHECK(ranked.front()->objective == Approx(best).epsilon(0.001));
  // The written best schedule simulates and reproduces the objective's first problem.
  const auto doc = best_schedule(ev, *ranked.front());
  const auto s = parse_schedule(doc, "best_schedule.json");
  CHECK(predict(*s, ev.spec().hw, ev.spec().problems[0]).tflops == Approx(ranked.front()->tflops[0]).epsilon(0.001));
}

TEST_CASE("an interrupted run keeps the rows that finished", "[explore]") {
  const SweepEvaluator ev(load_sweep(small_sweep()));
  std::atomic<bool> stop{false};
  const auto evals = evaluate_all(ev, grid_candidates(ev), 1, &stop, [&](size_t done, size_t) {
    if (done == 5) stop = true;  // what Ctrl-C does
  });
  REQUIRE(evals.size() == 5);
  for (size_t i = 0; i < evals.size(); ++i) CHECK(evals[i].index == i);
  std::ostringstream csv;
  write_sweep_csv(ev, evals, csv);
  const std::string text = csv.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 6);  // header + 5 rows
}

TEST_CASE("rankings are identical across runs and thread counts", "[explore][determinism]") {
  const SweepEvaluator ev(load_sweep(small_sweep()));
  std::string first;
  for (int threads : {1, 2, 2}) {
    std::ostringstream csv;
    write_sweep_csv(ev, evaluate_all(ev, grid_candidates(ev), threads, nullptr, nullptr), csv);
    if (first.empty())
      first = csv.str();
    else
      CHECK(csv.str() == first);
  }
}

TEST_CASE(
    "the bundled FA4 sweep: >= 2000 candidates x 6 problems - local search finds the grid's best within 1% "
    "using under 10% of the evaluations",
    "[explore][search][.slow]") {
  SweepSpec spec = load_sweep(bundled_sweep());
  REQUIRE(spec.problems.size() == 6);
  const SweepEvaluator grid(spec);
  const auto admitted = grid_candidates(grid);
  REQUIRE(admitted.size() >= 2000);
  const auto all = evaluate_all(grid, admitted, 2, nullptr, nullptr);
  const double best = rank(all).front()->objective;
  spec.search.strategy = "local_search";
  const SweepEvaluator ls(spec);
  const auto found = local_search(ls, 2, nullptr, nullptr);
  CHECK(found.size() < admitted.size() / 10);
  CHECK(rank(found).front()->objective >= 0.99 * best);
}

TEST_CASE("bad sweep files are rejected with file and JSON path", "[explore][inputs]") {
  const std::string dir = std::string(ATTNSIM_TEST_DATA) + "/sweeps/";
  CHECK_THROWS_WITH(load_sweep(dir + "bad_axis.json"),
                    Catch::Contains("bad_axis.json: /axes/~1q_stage: expected a non-empty array of values to try"));
  CHECK_THROWS_WITH(load_sweep(dir + "bad_field.json"), Catch::Contains("bad_field.json: /objektive: unknown field"));
}

TEST_CASE("explain switches off each design choice and reports the slowdown", "[explain]") {
  const Hardware hw = test::b200();
  Problem p = test::default_problem();
  p.batch = 1;
  p.seqlen_q = p.seqlen_k = 4096;
  const Explanation e = explain(test::fa4(), {}, hw, p);
  REQUIRE(e.ablations.size() == schedule_variants(test::fa4()).size());
  for (const auto& a : e.ablations) {
    INFO(a.variant.name << ": " << a.error);
    REQUIRE(a.ok);
    if (a.variant.name == "q_stage_1" || a.variant.name == "no_split_p" || a.variant.name == "no_exp2_emulation" ||
        a.variant.name == "one_cta")
      CHECK(a.slowdown > 0.02);
  }
  const std::string text = format_explanation(e, 40, true);
  CHECK_THAT(text, Catch::Contains("Why 2 Q stages?"));
  CHECK_THAT(text, Catch::Contains("before: fa4_sm100"));
  CHECK_THAT(text, Catch::Contains(" ┃ after: q_stage_1"));
}

TEST_CASE("side_by_side pads UTF-8 lines by display width", "[explain]") {
  CHECK(side_by_side("█░\nab", "x\ny\nz", 4, "|") == "█░  |x\nab  |y\n    |z\n");
}
