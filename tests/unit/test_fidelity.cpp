// The fidelity module (sim/measure/fidelity.hpp) on a hand-computable table: MAPE, max error,
// Spearman, per change, per-op acceptance, the baseline and the regression rule, and reading the
// committed validation folders.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "lower/schedule.hpp"
#include "measure/fidelity.hpp"
#include "model/json_reader.hpp"
#include "test_support.hpp"

using namespace attnsim;

namespace {

ValidationCase vc(const std::string& variant, const std::string& problem, double measured, double predicted) {
  ValidationCase c;
  c.schedule = "fa3_sm90";
  c.variant = variant;
  c.problem_label = problem;
  c.kernel = variant + problem;
  c.measured = measured > 0;
  c.measured_us = measured;
  c.predicted_us = predicted;
  return c;
}

OpStat ns(double mean) { return OpStat{mean, mean * 10, 10}; }

/// Five measured cases and one not run:
///   base P1 100 -> 110 (+10%)   v P1  90 ->  99 (+10%)   w P1 102 -> 121 (+18.63%)
///   base P2 200 -> 180 (-10%)   v P2 210 -> 171 (-18.57%)
std::vector<ValidationCase> table() {
  return {vc("", "P1", 100, 110), vc("", "P2", 200, 180), vc("v", "P1", 90, 99),
          vc("v", "P2", 210, 171), vc("w", "P1", 102, 121), vc("x", "P1", 0, 50)};
}

const OpRow& row(const FidelityReport& r, const std::string& op) {
  for (const auto& o : r.ops)
    if (o.op == op) return o;
  FAIL("no op row " << op);
  return r.ops.front();
}

const OpSummary& summary(const FidelityReport& r, const std::string& op) {
  for (const auto& s : r.op_summary)
    if (s.op == op) return s;
  FAIL("no op summary " << op);
  return r.op_summary.front();
}

}  // namespace

TEST_CASE("fidelity: MAPE and max error and Spearman of a hand-computed table", "[fidelity]") {
  const FidelityReport r = fidelity_report(table());
  CHECK(r.stats.cases == 5);
  // (10 + 10 + 10 + 18.5714 + 18.6275) / 5
  CHECK(r.stats.mape == Approx((10 + 10 + 10 + 100.0 * 39 / 210 + 100.0 * 19 / 102) / 5));
  CHECK(r.stats.max_abs_err == Approx(100.0 * 19 / 102));
  CHECK(r.stats.worst == "fa3_sm90:w on P1");
  // predicted ranks 2 1 5 4 3, measured ranks 2 1 4 5 3: sum d^2 = 2, rho = 1 - 6*2/(5*24) = 0.9
  CHECK(r.stats.spearman_time == Approx(0.9));
}

TEST_CASE("fidelity: per change against the base schedule", "[fidelity]") {
  const FidelityReport r = fidelity_report(table());
  REQUIRE(r.changes.size() == 3);  // v P1, v P2, w P1; x was not measured
  const ChangeRow& v1 = r.changes[0];
  CHECK(v1.variant == "v");
  CHECK(v1.problem == "P1");
  CHECK(v1.measured_pct == Approx(-10));
  CHECK(v1.predicted_pct == Approx(-10));
  CHECK(v1.diff_pts() == Approx(0).margin(1e-9));
  CHECK(v1.significant);
  CHECK(v1.signs_agree);
  const ChangeRow& v2 = r.changes[1];
  CHECK(v2.measured_pct == Approx(5));
  CHECK(v2.predicted_pct == Approx(-5));
  CHECK(v2.diff_pts() == Approx(-10));
  CHECK(v2.significant);
  CHECK_FALSE(v2.signs_agree);
  const ChangeRow& w1 = r.changes[2];
  CHECK(w1.measured_pct == Approx(2));
  CHECK(w1.predicted_pct == Approx(10));
  CHECK(w1.diff_pts() == Approx(8));
  CHECK_FALSE(w1.significant);  // 2% <= 3%: not judged for sign
  CHECK(r.max_change_diff_pts == Approx(10));
  CHECK(r.max_change == "v on P2");
  CHECK(r.mean_change_diff_pts == Approx(6));
  CHECK(r.significant_changes == 2);
  CHECK(r.signs_agree == 1);
  const std::string text = format_changes(r);
  CHECK_THAT(text, Catch::Contains("DISAGREE"));
  CHECK_THAT(text, Catch::Contains("signs agree on 1 of 2 changes"));
  const auto j = fidelity_json(r);
  CHECK(j["changes"].size() == 3);
  CHECK(j["changes_summary"]["max_abs_diff_pts"].get<double>() == Approx(10));
}

TEST_CASE("fidelity: a variant that ran the base's kernel is noise - not a change", "[fidelity]") {
  auto cases = table();
  cases.push_back(vc("same", "P1", 107, 110));
  cases.back().kernel = cases[0].kernel;  // resolved to the base's kernel: +7% measured is noise
  const FidelityReport r = fidelity_report(cases);
  REQUIRE(r.changes.size() == 4);
  CHECK(r.changes[3].same_kernel);
  CHECK_FALSE(r.changes[3].significant);
  CHECK(r.same_kernel_changes == 1);
  CHECK(r.same_kernel_noise_pct == Approx(7));
  // The three real changes keep their figures: max 10, mean 6, signs 1 of 2.
  CHECK(r.max_change_diff_pts == Approx(10));
  CHECK(r.mean_change_diff_pts == Approx(6));
  CHECK(r.significant_changes == 2);
  CHECK(r.signs_agree == 1);
  const std::string text = format_changes(r);
  CHECK_THAT(text, Catch::Contains("3 changes:"));
  CHECK_THAT(text, Catch::Contains("1 more variants ran the base's own kernel"));
  CHECK(fidelity_json(r)["changes_summary"]["same_kernel_changes"] == 1);
  // The same knob set launched under another tile scheduler (the prediction's grid says so) is
  // a change: another grid, not noise.
  cases.back().predicted_grid_mode = static_cast<int>(GridPlan::Mode::LptSingleTile);
  cases[0].predicted_grid_mode = static_cast<int>(GridPlan::Mode::StaticPersistent);
  const FidelityReport other_grid = fidelity_report(cases);
  CHECK_FALSE(other_grid.changes[3].same_kernel);
  CHECK(other_grid.same_kernel_changes == 0);
}

TEST_CASE("fidelity: per-op acceptance rules", "[fidelity]") {
  auto cases = table();
  ValidationCase& c = cases[0];
  c.predicted_ops = {{"mma_qk", ns(114)},          {"mma_pv", ns(116)},
                     {"softmax_max", ns(50)},      {"wait pipeline_k.full", ns(250)},
                     {"wait pipeline_v.full", ns(500)}, {"wait bar.pingpong", ns(150)},
                     {"load_k", ns(10)}};
  c.measured_ops = {{"mma_qk", ns(100)},          {"mma_pv", ns(100)},
                    {"wait pipeline_k.full", ns(200)}, {"wait pipeline_v.full", ns(350)},
                    {"wait bar.pingpong", ns(60)},   {"wait pipeline_q.full", ns(80)},
                    {"load_k", ns(100)}};
  const FidelityReport r = fidelity_report(cases);
  CHECK(r.op_cases == 1);
  CHECK(row(r, "mma_qk").pass);  // +14%
  CHECK(row(r, "mma_qk").error_pct() == Approx(14));
  CHECK_FALSE(row(r, "mma_pv").pass);       // +16%
  CHECK_FALSE(row(r, "softmax_max").pass);  // predicted only: a compute op needs both sides
  CHECK(std::isnan(row(r, "softmax_max").error_pct()));
  CHECK(row(r, "wait pipeline_k.full").pass);        // +25%
  CHECK_FALSE(row(r, "wait pipeline_v.full").pass);  // +42.9% and 150 ns
  CHECK(row(r, "wait bar.pingpong").pass);           // +150% but 90 ns
  CHECK(row(r, "wait pipeline_q.full").pass);        // never predicted: 0 against 80 ns
  CHECK(row(r, "wait pipeline_q.full").error_pct() == Approx(-100));
  CHECK(row(r, "load_k").rule == OpRule::None);
  CHECK(row(r, "load_k").pass);  // not judged
  // softmax_exp and rescale_o have no spans at all: they fail too.
  CHECK(summary(r, "softmax_exp").passed == 0);
  CHECK(summary(r, "softmax_exp").cases == 1);
  CHECK(summary(r, "mma_qk").passed == 1);
  CHECK(summary(r, "mma_pv").worst_err_pct == Approx(16));
  CHECK(r.op_summary.front().op == "mma_qk");  // the judged compute ops first, in their order
  CHECK_FALSE(r.ops_accepted);
  const std::string text = format_op_acceptance(r, true);
  CHECK_THAT(text, Catch::Contains("FAIL: mma_pv fails on 1 of 1"));
  CHECK_THAT(text, Catch::Contains("wait pipeline_v.full fails on 1 of 1"));
  CHECK(fidelity_json(r)["ops_acceptance"]["pass"] == false);
}

TEST_CASE("fidelity: predicted spans are compared at the clock the traced run ran at", "[fidelity]") {
  // Predicted at 1.5 GHz (the timed runs' clock): mma_qk 120 ns = 180 cycles. The traced run
  // that measured 100 ns ran at 1.8 GHz: 180 cycles there are 100 ns, the model right in cycles.
  auto cases = table();
  ValidationCase& c = cases[0];
  c.predicted_clock_ghz = 1.5;
  c.predicted_ops = {{"mma_qk", ns(120)}, {"wait pipeline_k.full", ns(300)}};
  c.measured_ops = {{"mma_qk", ns(100)}, {"wait pipeline_k.full", ns(240)}};
  CHECK_FALSE(row(fidelity_report(cases), "mma_qk").pass);  // +20% where the trace run's clock is unknown
  CHECK(fidelity_report(cases).op_cases_clocked == 0);
  c.measured_clock_ghz = 1.8;
  const FidelityReport r = fidelity_report(cases);
  CHECK(r.op_cases_clocked == 1);
  CHECK(row(r, "mma_qk").predicted_ns == Approx(100));
  CHECK(row(r, "mma_qk").pass);
  CHECK(row(r, "wait pipeline_k.full").predicted_ns == Approx(250));  // its cycles kept too
  CHECK(c.predicted_ops.at("mma_qk").mean_ns == 120);                 // the prediction itself is untouched
  const auto at = c.predicted_ops_at_trace_clock();
  CHECK(at.at("mma_qk").total_ns == Approx(1000));
  CHECK(at.at("mma_qk").count == 10);
  // What validate writes beside the measured spans is at that clock as well.
  CHECK_THAT(validation_ops_csv({c}), Catch::Contains("fa3_sm90,,P1,mma_qk,100.00,100.00,10,10"));
  CHECK_THAT(format_op_acceptance(r, false), Catch::Contains("1 of them compared at the traced run's clock"));
}

TEST_CASE("fidelity: per-op acceptance passes when every rule holds", "[fidelity]") {
  auto cases = table();
  for (auto& c : cases) {
    if (!c.measured) continue;
    for (const auto& op : acceptance_compute_ops()) {
      c.predicted_ops[op] = ns(100);
      c.measured_ops[op] = ns(110);
    }
    c.predicted_ops["wait pipeline_k.full"] = ns(1000);
    c.measured_ops["wait pipeline_k.full"] = ns(1200);
  }
  const FidelityReport r = fidelity_report(cases);
  CHECK(r.op_cases == 5);
  CHECK(r.ops_accepted);
  CHECK_THAT(format_op_acceptance(r), Catch::Contains("PASS"));
  // Without measured spans (validate --no-ops) nothing is judged.
  CHECK_FALSE(fidelity_report(table()).ops_accepted);
  CHECK_THAT(format_op_acceptance(fidelity_report(table())), Catch::Contains("not judged"));
}

TEST_CASE("fidelity: the baseline round-trips and the regression rule has its tolerances", "[fidelity]") {
  const auto cases = table();
  const FidelityReport r = fidelity_report(cases);
  const FidelityBaseline b = baseline_of(r, cases);
  CHECK(b.cases == 5);
  CHECK(b.predicted_us.size() == 5);
  CHECK(b.predicted_us.at("fa3_sm90:v | P2") == 171);
  const nlohmann::json j = baseline_json(b, "h100_sxm");
  const FidelityBaseline back = parse_baseline(j, "fidelity.json");
  CHECK(back.mape_pct == Approx(b.mape_pct).margin(1e-4));
  CHECK(back.spearman == Approx(0.9));
  CHECK(back.max_change_diff_pts == Approx(10));
  CHECK(back.predicted_us == b.predicted_us);
  CHECK(baseline_json(back, "h100_sxm") == j);  // --update twice: same file
  CHECK(regressions(back, r).empty());

  FidelityBaseline t = b;
  t.mape_pct = r.stats.mape - 0.04;  // 0.04 pts worse: within tolerance
  t.max_abs_error_pct = r.stats.max_abs_err - 0.04;
  t.spearman = r.stats.spearman_time + 0.004;
  CHECK(regressions(t, r).empty());
  t.mape_pct = r.stats.mape - 0.06;
  auto regs = regressions(t, r);
  REQUIRE(regs.size() == 1);
  CHECK(regs[0].figure == "MAPE");
  CHECK_THAT(regs[0].message(), Catch::Contains("MAPE regressed: baseline") && Catch::Contains("now 13.4398%"));
  t = b;
  t.max_abs_error_pct = r.stats.max_abs_err - 0.06;
  t.spearman = r.stats.spearman_time + 0.006;
  regs = regressions(t, r);
  REQUIRE(regs.size() == 2);
  CHECK(regs[0].figure == "max |error|");
  CHECK(regs[1].figure == "Spearman");
  CHECK_THAT(regs[1].message(), Catch::Contains("dropped by 0.0060"));
  // A better model is no regression.
  t = b;
  t.mape_pct += 5;
  t.spearman -= 0.5;
  CHECK(regressions(t, r).empty());

  nlohmann::json bad = j;
  bad["mape"] = 1;
  CHECK_THROWS_AS(parse_baseline(bad, "fidelity.json"), InputError);
  bad = j;
  bad.erase("spearman_time");
  CHECK_THROWS_AS(parse_baseline(bad, "fidelity.json"), InputError);
}

TEST_CASE("fidelity: a sweep's ranking Spearman round-trips and may not drop", "[fidelity][sweep]") {
  // Two candidates on one problem: a measured faster than b, predicted so too (Spearman 1).
  auto cand = [](const std::string& label, double measured, double predicted) {
    ValidationCase c = vc("", "P1", measured, predicted);
    c.schedule = label;
    c.problem.batch = c.problem.heads = c.problem.kv_heads = 1;
    c.problem.seqlen_q = c.problem.seqlen_k = 1024;
    c.problem.head_dim = c.problem.head_dim_v = 64;
    return c;
  };
  const std::vector<ValidationCase> cases = {cand("/a=1", 100, 110), cand("/a=2", 200, 190)};
  const FidelityReport r = fidelity_report(cases);
  REQUIRE(r.sweep.has_spearman);
  CHECK(r.sweep.spearman == Approx(1.0));
  CHECK_THAT(format_sweep(r), Catch::Contains("Spearman of the candidate rankings: 1.000"));
  const FidelityBaseline b = baseline_of(r, cases);
  const FidelityBaseline back = parse_baseline(baseline_json(b, "h100_sxm"), "fidelity.json");
  REQUIRE(back.has_sweep_spearman);
  CHECK(back.sweep_spearman == Approx(1.0));
  CHECK(regressions(back, r).empty());
  // The same cases predicted in the other order: the ranking flips, Spearman -1, a regression.
  const std::vector<ValidationCase> flipped = {cand("/a=1", 100, 210), cand("/a=2", 200, 190)};
  const auto regs = regressions(back, fidelity_report(flipped));
  REQUIRE_FALSE(regs.empty());
  CHECK(regs.back().figure == "sweep Spearman");
  CHECK_THAT(regs.back().message(), Catch::Contains("dropped by 2.0000"));
  // A folder without a sweep writes no sweep figure.
  CHECK_FALSE(baseline_json(baseline_of(fidelity_report(table()), table()), "h100_sxm").contains("sweep_spearman"));
}

TEST_CASE("fidelity: time splits into cycles and clock where the clock was probed", "[fidelity]") {
  auto cases = table();
  CHECK(fidelity_report(cases).clock.cases == 0);  // no probed clock: no split
  CHECK(format_clock_split(fidelity_report(cases)).empty());
  // base P1: 100 us measured at 2.0 GHz = 200000 cycles; predicted 110 us = 176000 cycles at 1.6 GHz.
  cases[0].timed_clock_ghz = 2.0;
  cases[0].predicted_cycles = 176000;
  cases[0].predicted_clock_ghz = 1.6;
  // base P2: 200 us at 1.5 GHz = 300000 cycles; predicted 180 us = 288000 cycles at 1.6 GHz.
  cases[1].timed_clock_ghz = 1.5;
  cases[1].predicted_cycles = 288000;
  cases[1].predicted_clock_ghz = 1.6;
  const ClockSplit k = fidelity_report(cases).clock;
  CHECK(k.cases == 2);
  CHECK(k.cycles_mape == Approx((12.0 + 4.0) / 2));  // 176000 / 200000 - 1 = -12%, 288000 / 300000 - 1 = -4%
  CHECK(k.cycles_mean_err == Approx((-12.0 - 4.0) / 2));
  CHECK(k.cycles_max_abs_err == Approx(12.0));
  CHECK(k.cycles_worst == "fa3_sm90 on P1");
  CHECK(k.clock_min_err == Approx(-20.0));  // 1.6 / 2.0 - 1
  CHECK(k.clock_max_err == Approx(100.0 * (1.6 / 1.5 - 1)));
  CHECK(k.timed_clock_min == Approx(1.5));
  CHECK(k.timed_clock_max == Approx(2.0));
  CHECK_THAT(format_clock_split(fidelity_report(cases)), Catch::Contains("MAPE 8.0%"));
  CHECK(k.in_kernel == 0);
  // A clock read inside the kernel takes the probe's place: P1 at 1.76 GHz runs 176000 cycles,
  // as predicted.
  auto in_kernel = cases;
  in_kernel[0].kernel_clock_ghz = 1.76;
  const ClockSplit ki = fidelity_report(in_kernel).clock;
  CHECK(ki.in_kernel == 1);
  CHECK(ki.cycles_max_abs_err == Approx(4.0));  // P2's, at its probed clock
  CHECK(ki.clock_max_err == Approx(100.0 * (1.6 / 1.5 - 1)));
  CHECK(ki.clock_min_err == Approx(100.0 * (1.6 / 1.76 - 1)));
  // The baseline keeps the cycles' MAPE, and it may not grow.
  const FidelityReport r = fidelity_report(cases);
  FidelityBaseline back = parse_baseline(baseline_json(baseline_of(r, cases), "h100_sxm"), "fidelity.json");
  CHECK(back.has_cycles_mape);
  CHECK(back.cycles_mape_pct == Approx(8.0));
  CHECK(regressions(back, r).empty());
  back.cycles_mape_pct = 7.9;
  const auto regs = regressions(back, r);
  REQUIRE(regs.size() == 1);
  CHECK(regs[0].figure == "cycles MAPE");
  CHECK_FALSE(parse_baseline(baseline_json(baseline_of(fidelity_report(table()), table()), "h100_sxm"), "f.json")
                  .has_cycles_mape);  // no probed clock: no such figure
}

TEST_CASE("fidelity: results.csv and ops.csv are read by column name", "[fidelity]") {
  const std::string results =
      "schedule,variant,problem,batch,heads,kv_heads,seqlen_q,seqlen_k,head_dim,causal,kernel,predicted_us,"
      "measured_us,overhead_pct,runs,timed_clock_ghz,kernel_clock_ghz,trace_clock_ghz,skipped\n"
      "fa3_sm90,,hd64 s2k b8,8,16,16,2048,2048,64,0,hd64 m192 n128 kv2 overlap reg 160/32,337.047,339.904,23.0,10,"
      "1.9043,1.7021,1.6325,\"\"\n"
      "fa3_sm90,kv_stage_3,hd256 s1k b16,16,16,16,1024,1024,256,0,,,,,,,,,\"no kernel, \"kv3\" was not compiled\"\n"
      "fa3_sm90,no_pingpong,hd128 s16k b1 causal,1,16,8,16384,16384,128,1,k,1752.696,1667.072,,10,,,,\"\"\n";
  auto cases = parse_results_csv(results, "results.csv");
  REQUIRE(cases.size() == 2);  // the row not run is left out
  CHECK(cases[0].variant.empty());
  CHECK(cases[0].problem_label == "hd64 s2k b8");
  CHECK(cases[0].problem.batch == 8);
  CHECK(cases[0].problem.head_dim == 64);
  CHECK(cases[0].problem.head_dim_v == 64);
  CHECK_FALSE(cases[0].problem.causal);
  CHECK(cases[0].measured_us == Approx(339.904));
  CHECK(cases[0].predicted_us == Approx(337.047));
  CHECK(cases[0].kernel == "hd64 m192 n128 kv2 overlap reg 160/32");
  CHECK(cases[0].timed_clock_ghz == Approx(1.9043));
  CHECK(cases[0].kernel_clock_ghz == Approx(1.7021));
  CHECK(cases[0].measured_clock_ghz == Approx(1.6325));  // the traced run's
  CHECK(cases[1].timed_clock_ghz == 0);  // not probed
  CHECK(cases[1].kernel_clock_ghz == 0);
  CHECK(cases[1].measured_clock_ghz == 0);
  CHECK(cases[1].variant == "no_pingpong");
  CHECK(cases[1].problem.causal);
  CHECK(cases[1].problem.kv_heads == 8);
  CHECK(cases[1].problem.seqlen_k == 16384);

  const std::string ops =
      "schedule,variant,problem,op,predicted_mean_ns,measured_mean_ns,predicted_spans,measured_spans\n"
      "fa3_sm90,,hd64 s2k b8,mma_qk,134.21,217.56,2112,270336\n"
      "fa3_sm90,,hd64 s2k b8,wait,567.50,,33,\n"
      "fa3_sm90,kv_stage_3,hd256 s1k b16,mma_qk,1,2,3,4\n";
  attach_ops_csv(ops, "ops.csv", cases);
  REQUIRE(cases[0].measured_ops.size() == 1);  // the predicted-only row has no measured side
  CHECK(cases[0].measured_ops.at("mma_qk").mean_ns == Approx(217.56));
  CHECK(cases[0].measured_ops.at("mma_qk").count == 270336);
  CHECK(cases[0].predicted_ops.empty());  // predictions come from the model, not the file
  CHECK(cases[1].measured_ops.empty());

  // Folders older than the trace_clock_ghz column: the traced run's clock from results.json.
  cases[0].measured_clock_ghz = 0;
  const nlohmann::json results_json = {
      {"cases",
       {{{"schedule", "fa3_sm90"}, {"variant", ""}, {"problem", "hd64 s2k b8"}, {"traced", {{"sm_clock_ghz", 1.59}}}},
        {{"schedule", "fa3_sm90"}, {"variant", "no_pingpong"}, {"problem", "hd128 s16k b1 causal"}},  // not traced
        {{"schedule", "fa3_sm90"},
         {"variant", "gone"},
         {"problem", "hd64 s2k b8"},
         {"traced", {{"sm_clock_ghz", 2}}}}}}};
  attach_trace_clocks(results_json, "results.json", cases);
  CHECK(cases[0].measured_clock_ghz == Approx(1.59));
  CHECK(cases[1].measured_clock_ghz == 0);
  nlohmann::json bad = results_json;
  bad["cases"][0]["traced"]["sm_clock_ghz"] = "fast";
  CHECK_THROWS_WITH(attach_trace_clocks(bad, "results.json", cases),
                    Catch::Contains("results.json") && Catch::Contains("/cases/0/traced/sm_clock_ghz"));

  CHECK_THROWS_AS(parse_results_csv("schedule,variant\nfa3_sm90,\n", "results.csv"), InputError);
  CHECK_THROWS_WITH(parse_results_csv(std::string(results).replace(results.find("339.904"), 7, "abc"), "r.csv"),
                    Catch::Contains("r.csv: row 1, column measured_us: expected a number, got 'abc'"));
}

TEST_CASE("fidelity: the committed validation folders read and predict", "[fidelity]") {
  const auto dirs = committed_validation_dirs(test::root());
  REQUIRE(dirs.size() >= 2);
  const ValidationData d = load_validation_data(test::root() + "/configs/validation/h100_sxm");  // the GPU folder
  CHECK(d.gpu == "h100_sxm");
  CHECK(d.has_ops);
  CHECK(d.dir.size() > std::string("fa3_sm90_validate").size());
  CHECK(d.dir.substr(d.dir.size() - 17) == "fa3_sm90_validate");
  REQUIRE(d.cases.size() >= 20);
  for (const auto& c : d.cases) {
    CHECK(c.measured);
    CHECK_FALSE(c.measured_ops.empty());
  }
  // One small case through the prediction `validate` makes.
  std::vector<ValidationCase> one;
  for (const auto& c : d.cases)
    if (c.variant.empty() && c.problem_label == "hd256 s1k b16") one.push_back(c);
  REQUIRE(one.size() == 1);
  std::vector<std::string> errors;
  const auto secs = repredict(one, test::h100(),
                              test::root() + "/schedules", 1, errors);
  CHECK(errors.empty());
  CHECK(secs.size() == 1);
  CHECK(one[0].predicted_us > 0);
  CHECK(one[0].predicted_ops.count("mma_qk"));
  // Its time: the CPU seconds of the prediction itself, as the case records them.
  CHECK(secs[0] > 0);
  CHECK(secs[0] == one[0].predict_cpu_s);
  // A schedule that is not there: the case leaves the statistics, the error names it, no time.
  one[0].schedule = "no_such_schedule";
  const auto failed =
      repredict(one, test::h100(), test::root() + "/schedules", 1, errors);
  CHECK(failed.at(0) == 0);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::Contains("no_such_schedule on hd256 s1k b16 no longer predicts"));
  CHECK_FALSE(one[0].measured);
}

TEST_CASE("fidelity: a memo shares a prediction between folders and only an identical case's", "[fidelity]") {
  const ValidationData d = load_validation_data(test::root() + "/configs/validation/h100_sxm");
  std::vector<ValidationCase> two;
  for (const auto& c : d.cases)
    if (c.variant.empty() && (c.problem_label == "hd256 s1k b16" || c.problem_label == "hd128 s1k b16"))
      two.push_back(c);
  REQUIRE(two.size() == 2);
  const Hardware hw = test::h100();
  std::vector<std::string> errors;
  std::vector<ValidationCase> plain = two, first = two, again = two;
  repredict(plain, hw, test::root() + "/schedules", 1, errors);
  PredictionMemo memo;
  repredict(first, hw, test::root() + "/schedules", 2, errors, &memo);
  CHECK(memo.misses() == 2);
  CHECK(memo.hits() == 0);
  for (auto& c : again) c.predicted_us = 0;
  const auto secs = repredict(again, hw, test::root() + "/schedules", 2, errors, &memo);
  CHECK(errors.empty());
  CHECK(memo.misses() == 2);
  CHECK(memo.hits() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(again[i].predicted_us == plain[i].predicted_us);
    CHECK(again[i].predicted_cycles == plain[i].predicted_cycles);
    CHECK(again[i].predicted_ops.size() == plain[i].predicted_ops.size());
    CHECK(secs[i] > 0);  // the CPU seconds the prediction took when it ran
    CHECK(secs[i] == first[i].predict_cpu_s);
  }
  CHECK(again[0].predicted_us != again[1].predicted_us);
  // Another problem is another prediction.
  std::vector<ValidationCase> other = {two[0]};
  other[0].problem.batch /= 2;  // b16 -> b8
  repredict(other, hw, test::root() + "/schedules", 1, errors, &memo);
  CHECK(memo.misses() == 3);
  CHECK(other[0].predicted_us < plain[0].predicted_us);
}

TEST_CASE("fidelity: the pins of a measured fa3_sm90 kernel resolve the schedule back to that kernel", "[fidelity]") {
  // Kernels measured before the auto knobs moved (hd64 at 192 x 128 without pingpong, hd256
  // without pingpong, O staged in Q's buffer, no L2 sections) and one of today's.
  using Pins = std::vector<std::string>;
  CHECK(measured_kernel_pins("fa3_sm90 hd64 m192 n128 kv2 overlap reg 160/32 own_o l2 8MiB") ==
        Pins{"/pingpong=false", "/tile={\"m_block\":192,\"n_block\":128}", "/rescale/conditional=false",
             "/trim_last_block=false"});
  CHECK(measured_kernel_pins("fa3_sm90 hd256 m128 n80 kv2 overlap reg 240/24") ==
        Pins{"/o_staging=q_buffer", "/l2_section_mib=0", "/pingpong=false", "/tile={\"m_block\":128,\"n_block\":80}",
             "/rescale/conditional=false", "/trim_last_block=false"});
  const Pins rescaled = measured_kernel_pins("fa3_sm90 hd256 m128 n80 kv2 pingpong overlap reg 240/24 l2 8MiB rescale>8");
  CHECK(rescaled[rescaled.size() - 2] == "/rescale={\"conditional\":true,\"threshold_log2\":8}");
  CHECK(measured_kernel_pins("fa3_sm90 hd64 m128 n128 kv2 pingpong overlap reg 240/24 dynamic own_o l2 8MiB trim_last")
            .back() == "/trim_last_block=true");
  CHECK(measured_kernel_pins("fa3_sm90 hd256 m128 n64 kv2 pingpong overlap reg 240/24 dynamic l2 8MiB rescale>8 o_in_v")
            .front() == "/o_staging=v_ring");
  CHECK(measured_kernel_pins("fa2_sm80 hd64 br64 bc64 fma").empty());
  const Hardware hw = test::h100();
  for (const auto& [kernel, head_dim] : std::vector<std::pair<std::string, int>>{
           {"fa3_sm90 hd64 m192 n128 kv2 overlap reg 160/32 own_o l2 8MiB", 64},
           {"fa3_sm90 hd256 m128 n80 kv2 overlap reg 240/24 l2 8MiB", 256},
           {"fa3_sm90 hd128 m128 n128 kv2 pingpong overlap reg 240/24 own_o l2 8MiB", 128},
           {"fa3_sm90 hd64 m128 n176 kv2 pingpong overlap reg 240/24 own_o l2 8MiB", 64},
           {"fa3_sm90 hd256 m128 n80 kv2 pingpong overlap reg 240/24 l2 8MiB rescale>8", 256},
           {"fa3_sm90 hd64 m128 n176 kv2 pingpong overlap reg 240/24 own_o l2 8MiB rescale>8", 64}}) {
    Problem p;
    p.batch = 2;
    p.heads = p.kv_heads = 16;
    p.seqlen_q = p.seqlen_k = 4096;
    p.head_dim = p.head_dim_v = head_dim;
    const auto s = load_schedule(test::root() + "/schedules/fa3_sm90.json", measured_kernel_pins(kernel));
    const KernelChoice k = s->real_kernel(hw, p);
    REQUIRE(k.supported);
    CHECK(describe(k.knobs) == kernel);
  }
  // Causal: the kernels with and without the trimmed last block.
  for (const std::string kernel : {"fa3_sm90 hd64 m128 n128 kv2 pingpong overlap reg 240/24 dynamic own_o l2 8MiB",
                                   "fa3_sm90 hd64 m128 n128 kv2 pingpong overlap reg 240/24 dynamic own_o l2 8MiB trim_last"}) {
    Problem p;
    p.batch = 2;
    p.heads = p.kv_heads = 16;
    p.seqlen_q = p.seqlen_k = 1024;
    p.head_dim = p.head_dim_v = 64;
    p.causal = true;
    const auto s = load_schedule(test::root() + "/schedules/fa3_sm90.json", measured_kernel_pins(kernel));
    CHECK(describe(s->real_kernel(hw, p).knobs) == kernel);
  }
}

TEST_CASE("fidelity: cases timed in turns are re-clocked at the clock they share", "[fidelity]") {
  // P = 100 + (f / 2)^2 (100 + 800 tensor + 200 issue) W, limit 700 (no L2 or HBM traffic here).
  Hardware hw = test::round_power_hw();
  hw.hbm_bytes_per_s = 1e12;
  hw.launch_ns = 0;
  auto predicted = [](double tensor, double issue, double cycles, double ghz) {
    ValidationCase c = vc("", "P1", 1, cycles / ghz / 1e3);
    c.predicted_cycles = cycles;
    c.predicted_clock_ghz = ghz;
    c.predicted_clock_inputs.activity.tensor_duty = tensor;
    c.predicted_clock_inputs.activity.issue_duty = issue;
    c.predicted_clock_inputs.grid_cycles = cycles;
    c.predicted_clock_inputs.power_clocked = true;
    c.predicted_ops["mma_qk"] = OpStat{100, 1000, 10};
    return c;
  };
  // Alone: the heavy kernel at its power-limit clock 2 sqrt(0.6), the light one at the ceiling.
  std::vector<ValidationCase> cases = {predicted(1.0, 0.5, 3000, 2 * std::sqrt(0.6)), predicted(0.1, 0, 1000, 1.8)};
  cases[1].variant = "light";
  cases.push_back(vc("", "P2", 1, 5));  // another problem, predicted without clock inputs: left alone
  cases[2].problem.seqlen_q = cases[2].problem.seqlen_k = 2 * cases[0].problem.seqlen_q;
  cases[2].predicted_clock_ghz = 1.6;
  share_clock_by_problem(hw, cases);
  const double f = 2 * std::sqrt(600.0 / 795);  // tensor 0.775, issue 0.375 (weights 3/4, 1/4)
  for (int i = 0; i < 2; ++i) {
    CHECK(cases[i].predicted_clock_ghz == Approx(f).epsilon(1e-6));
    CHECK(cases[i].predicted_us == Approx(cases[i].predicted_cycles / f / 1e3));
  }
  CHECK(cases[0].predicted_cycles == Approx(3000));
  // The op spans keep their cycles: ns scale with the clock.
  CHECK(cases[0].predicted_ops.at("mma_qk").mean_ns == Approx(100 * 2 * std::sqrt(0.6) / f));
  CHECK(cases[1].predicted_ops.at("mma_qk").total_ns == Approx(1000 * 1.8 / f));
  CHECK(cases[2].predicted_us == 5);  // its clock does not follow activity (power_clocked false)
  CHECK(cases[2].predicted_clock_ghz == 1.6);
}

TEST_CASE("fidelity: timing.json says whether a folder's kernels were timed together and which tiles were traced",
          "[fidelity]") {
  const auto dir = std::filesystem::temp_directory_path() / ("attnsim_timing_json_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "results.csv")
      << "schedule,variant,problem,batch,heads,kv_heads,seqlen_q,seqlen_k,head_dim,causal,kernel,predicted_us,"
         "measured_us,skipped\n"
         "fa3_sm90,,hd64 s2k b8,8,16,16,2048,2048,64,0,k,337.0,339.9,\n";
  CHECK_FALSE(load_validation_data(dir.string()).timed_together_by_problem);  // no timing.json: each on its own
  std::ofstream(dir / "timing.json") << R"({"description": "d", "timed_together": "problem"})";
  CHECK(load_validation_data(dir.string()).timed_together_by_problem);
  std::ofstream(dir / "timing.json") << R"({"timed_together": "kernel"})";
  CHECK_FALSE(load_validation_data(dir.string()).timed_together_by_problem);
  std::ofstream(dir / "timing.json") << R"({"timed_together": "variant"})";
  CHECK_THROWS_WITH(load_validation_data(dir.string()),
                    Catch::Contains("timing.json") && Catch::Contains("/timed_together") && Catch::Contains("problem"));
  // The trace rule: each CTA's first tile left unrecorded under a sample (the predicted op means
  // then leave it out too); without the rule (older folders) every tile counts.
  std::ofstream(dir / "timing.json") << R"({"timed_together": "problem", "trace_sample": 32})";
  CHECK(load_validation_data(dir.string()).cases.at(0).trace_sample == 1);
  std::ofstream(dir / "timing.json") << R"({"trace_rule": "no_first_tile", "trace_sample": 32})";
  CHECK(load_validation_data(dir.string()).cases.at(0).trace_sample == 32);
  std::ofstream(dir / "timing.json") << R"({"trace_rule": "every_tile", "trace_sample": 32})";
  CHECK_THROWS_WITH(load_validation_data(dir.string()),
                    Catch::Contains("/trace_rule") && Catch::Contains("no_first_tile"));
  std::ofstream(dir / "timing.json") << R"({"trace_rule": "no_first_tile", "trace_sample": 0})";
  CHECK_THROWS_WITH(load_validation_data(dir.string()), Catch::Contains("/trace_sample"));
  // The recorded warps: the default (first of each warpgroup) unless timing.json names others.
  std::ofstream(dir / "timing.json") << R"({"timed_together": "problem"})";
  CHECK(load_validation_data(dir.string()).cases.at(0).trace_warps == 0);
  std::ofstream(dir / "timing.json") << R"({"timed_together": "problem", "trace_warps": "0,5,9"})";
  CHECK(load_validation_data(dir.string()).cases.at(0).trace_warps == ((1u << 0) | (1u << 5) | (1u << 9)));
  std::ofstream(dir / "timing.json") << R"({"timed_together": "problem", "trace_warps": "0,5,"})";
  CHECK_THROWS_WITH(load_validation_data(dir.string()),
                    Catch::Contains("timing.json") && Catch::Contains("/trace_warps") && Catch::Contains("warp"));
  std::filesystem::remove_all(dir);
}
