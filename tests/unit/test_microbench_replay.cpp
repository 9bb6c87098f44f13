// The model against the microbenchmarks that time the SM90 kernel's own code on an H200
// (sim/measure/microbench_replay.hpp): gemm_turn (its GEMM dispatch) and softmax_pair (two of its
// softmax blocks on one SMSP), replayed with the fa3_sm90 family's costs. The tolerances hold what
// the model claims to capture: the tensor core queue hands a warpgroup's turn over behind the
// other's groups, a turn alone completes when the pipe says, a softmax block alone takes its
// measured time, and two in step share the MUFU.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "lower/costs.hpp"
#include "measure/microbench_replay.hpp"
#include "model/json_reader.hpp"
#include "test_support.hpp"

using namespace attnsim;

namespace {

std::vector<ReplayRow> replay_h200(const std::string& benchmark) {
  return replay_microbench(test::root() + "/configs/measured/h200/" + benchmark + ".json",
                           load_hardware(test::root() + "/configs/hw/h200.json"),
                           CostModel::load(test::root() + "/configs/costs/sm90_softmax.json"));
}

const std::vector<ReplayRow>& h200_rows() {
  static const std::vector<ReplayRow> rows = replay_h200("gemm_turn");
  return rows;
}

const std::vector<ReplayRow>& pair_rows() {
  static const std::vector<ReplayRow> rows = replay_h200("softmax_pair");
  return rows;
}

const ReplayRow& find(const std::vector<ReplayRow>& rows, const std::string& instance, const std::string& case_name,
                      int wg, const std::string& q) {
  for (const auto& r : rows)
    if (r.instance == instance && r.case_name == case_name && r.warpgroup == wg && r.quantity == q) return r;
  FAIL("no row " << instance << " " << case_name << " wg" << wg << " " << q);
  throw std::logic_error("unreachable");
}

const ReplayRow& row(const std::string& instance, const std::string& case_name, int wg, const std::string& q) {
  return find(h200_rows(), instance, case_name, wg, q);
}

}  // namespace

TEST_CASE("gemm_turn replay: every case of the committed H200 result gives its rows", "[replay]") {
  std::set<std::string> cases;
  for (const auto& r : h200_rows()) {
    cases.insert(r.instance + " " + r.case_name);
    CHECK(r.measured > 0);
    CHECK(r.predicted > 0);
  }
  // 3 instances x (solo, 5 pingpong delays, 8 beside-softmax phases, 4 beside-FFMA bursts, softmax alone).
  CHECK(cases.size() == 3 * 19);
  // A pingpong case has a row of each quantity for every consumer warpgroup (three at hd64).
  for (int wg : {0, 1, 2})
    for (const char* q : {"turn_wait", "qk_dispatch", "pv_dispatch", "done"})
      CHECK(row("hd64", "pingpong_delay_0", wg, q).measured > 0);
  for (const char* q : {"softmax_max", "softmax_exp", "rescale_o"})
    CHECK(row("hd128", "softmax_alone", 1, q).measured > 0);
}

TEST_CASE("gemm_turn replay: the tensor core queue hands the turn over as measured", "[replay]") {
  // Warpgroup 1's turn starts right after warpgroup 0 issued its PV group: its QK group waits in
  // the queue behind warpgroup 0's instructions (mma_queue_depth, wgmma_share), and both of its
  // groups complete one turn of tensor core work after warpgroup 0's.
  for (const char* inst : {"hd128", "hd256"}) {
    INFO(inst);
    const ReplayRow& qk = row(inst, "pingpong_delay_0", 1, "qk_dispatch");
    CHECK(std::abs(qk.error_pct()) < 5);
    const ReplayRow& done = row(inst, "pingpong_delay_0", 1, "done");
    CHECK(std::abs(done.error_pct()) < 5);
  }
}

TEST_CASE("gemm_turn replay: a turn alone completes when the tensor core pipe says", "[replay]") {
  // One warpgroup, the tensor cores idle: QK and PV back to back (16, 16 and 21 wgmmas at hd64,
  // hd128, hd256), done within 10% of the measured completion.
  for (const char* inst : {"hd64", "hd128", "hd256"}) {
    INFO(inst);
    CHECK(std::abs(row(inst, "solo", 0, "done").error_pct()) < 10);
  }
}

TEST_CASE("softmax_pair replay: a block alone takes its measured time and two in step share the MUFU", "[replay]") {
  for (const char* leader : {"leader_warpgroup_1", "leader_warpgroup_2"}) {
    INFO(leader);
    for (int wg : {1, 2}) {
      INFO("warpgroup " << wg);
      // Far apart (4000 cycles): each block as softmax_block timed it alone.
      CHECK(std::abs(find(pair_rows(), "alone", std::string(leader) + "/delay_4000", wg, "block").error_pct()) < 5);
      // In step: both exponentials on one SMSP's MUFU, 1.6-1.8x a block alone on the GPU.
      const ReplayRow& both = find(pair_rows(), "alone", std::string(leader) + "/delay_0", wg, "block");
      CHECK(std::abs(both.error_pct()) < 12);
      CHECK(both.predicted >
            1.5 * find(pair_rows(), "alone", std::string(leader) + "/delay_4000", wg, "block").predicted);
    }
  }
}

TEST_CASE("microbench replay rejects other result files and names the file and path", "[replay][inputs]") {
  const Hardware hw = load_hardware(test::root() + "/configs/hw/h200.json");
  const CostModel costs = CostModel::load(test::root() + "/configs/costs/sm90_softmax.json");
  for (const char* bench : {"wgmma_share", "softmax_block"}) {
    INFO(bench);
    try {
      replay_microbench(test::root() + "/configs/measured/h200/" + bench + ".json", hw, costs);
      FAIL("accepted a result the replay cannot predict");
    } catch (const InputError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Matchers::Contains(std::string(bench) + ".json"));
      CHECK(e.path() == "/benchmark");
    }
  }
  // Each replay refuses the other's file.
  CHECK_THROWS_AS(replay_gemm_turn(test::root() + "/configs/measured/h200/softmax_pair.json", hw, costs), InputError);
  CHECK_THROWS_AS(replay_softmax_pair(test::root() + "/configs/measured/h200/gemm_turn.json", hw, costs), InputError);
}

TEST_CASE("replay summary and baseline: mean errors by quantity and the regressions past 0.5 points", "[replay]") {
  const std::vector<ReplayRow> rows = {
      {"i", "c", 0, "a", 100, 110}, {"i", "c", 1, "a", 200, 180}, {"i", "c", 0, "b", 50, 50}};
  const ReplaySummary s = summarize_replay(rows);
  CHECK(s.mean_abs_error_pct.at("a") == Approx(10.0));
  CHECK(s.mean_abs_error_cycles.at("a") == Approx(15.0));
  CHECK(s.mean_abs_error_pct.at("b") == Approx(0.0));
  CHECK(s.rows.at("a") == 2);
  const std::string dir = std::filesystem::temp_directory_path() / "attnsim_replay_baseline";
  std::filesystem::create_directories(dir);
  auto baseline = [&](double a) {
    const std::string f = dir + "/b.json";
    std::ofstream(f) << nlohmann::json{{"mean_abs_error_pct", {{"a", a}, {"b", 0.0}}}}.dump();
    return f;
  };
  CHECK(replay_regressions(s, baseline(9.6)).empty());  // 10.0 <= 9.6 + 0.5
  const auto worse = replay_regressions(s, baseline(9.4));
  REQUIRE(worse.size() == 1);
  CHECK_THAT(worse[0], Catch::Matchers::StartsWith("a: baseline 9.40%, now 10.00%"));
  // The written baseline reads back as no regression.
  write_replay_baseline(s, "x/gemm_turn.json", "H200", dir + "/w.json");
  CHECK(replay_regressions(s, dir + "/w.json").empty());
  // A baseline without its errors is refused, naming the file and path.
  std::ofstream(dir + "/bad.json") << "{}";
  CHECK_THROWS_AS(replay_regressions(s, dir + "/bad.json"), InputError);
}
