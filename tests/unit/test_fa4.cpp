// The fa4_sm100 family: FA4's heuristics, the per-tile budget of the FA4 paper,
// resource checks, and the FA4 execution-flow analysis's claims about its design choices.
#include <catch2/catch.hpp>

#include "lower/fa4/fa4_schedule.hpp"
#include "lower/rescale_model.hpp"
#include "model/json_reader.hpp"
#include "test_support.hpp"

using namespace attnsim;

namespace {
Problem shape(int hd, bool causal, int seqlen = 8192) {
  Problem p = test::default_problem();
  p.head_dim = p.head_dim_v = hd;
  p.causal = causal;
  p.seqlen_q = p.seqlen_k = seqlen;
  return p;
}
const fa4::Fa4Schedule& as_fa4(const Schedule& s) { return dynamic_cast<const fa4::Fa4Schedule&>(s); }
}  // namespace

TEST_CASE("auto knobs follow FA4's heuristics", "[fa4]") {
  const Hardware hw = test::b200();
  auto s = load_schedule(test::fa4());
  const auto& f = as_fa4(*s);
  // kv_stage = min((224 KiB - Q - O) / stage, 32): hd128 2-CTA 6, hd128 1-CTA 3, hd64 10.
  const auto nc128 = f.resolve(hw, shape(128, false));
  CHECK(nc128.cta_group == 2);
  CHECK(nc128.kv_stage == 6);
  CHECK(nc128.reg_softmax == 176);
  CHECK(nc128.reg_correction == 88);
  CHECK(nc128.reg_other == 72);
  CHECK(nc128.emu_share == Approx(0.1875));  // freq 10, res 4, start_frg 1
  const auto c128 = f.resolve(hw, shape(128, true));
  CHECK(c128.cta_group == 1);
  CHECK(c128.kv_stage == 3);
  CHECK(c128.emu_share == Approx(0.125));  // freq 16, res 4, start_frg 1
  CHECK(c128.reg_softmax == 192);
  CHECK(!c128.persistent);
  CHECK(f.resolve(hw, shape(64, false)).kv_stage == 10);
}

TEST_CASE("FA4 per-tile work on B200 matches the paper's 128x128x128 budget", "[fa4][budget]") {
  // FA4 paper: MMA 4*128^3 / 8192 = 1024 cycles, exp 128^2 / 16 = 1024 cycles (emulation off).
  const Hardware hw = test::b200();
  const Problem p = shape(128, false, 128);
  auto s = load_schedule(test::fa4(), {"/exp2_emulation=\"off\"", "/q_stage=1", "/cta_group=1"});
  const CtaProgram prog = s->lower(hw, p, {TileWork{0, 128, 1, 0}});
  double flops = 0, exp_lanes = 0;
  for (const auto& w : prog.warps)
    for (const auto& op : w.ops) {
      if (op.kind == OpKind::Mma) flops += op.flops;
      if (op.name == ATTNSIM_OP_SOFTMAX_EXP) exp_lanes += op.compute->work.mufu_lanes;
    }
  const double mufu_per_clk = hw.mufu_lanes_per_clk_smsp * hw.smsp_per_sm;
  CHECK(flops / hw.tensor_flops_per_clk == Approx(1024).epsilon(0.01));
  CHECK(exp_lanes / mufu_per_clk == Approx(1024).epsilon(0.01));
  // And the engine executes exactly that much tensor-core time.
  const SimResult r = simulate_cta(hw, prog);
  CHECK(r.units.tensor_busy == Approx(1024).epsilon(0.01));
}

TEST_CASE("FA4's design choices pay off on B200 - hd128 - seqlen 8192 - non-causal", "[fa4][design]") {
  const Hardware hw = test::b200();
  const Problem p = test::default_problem();
  const double base = test::run(test::fa4(), hw, p).time_us;
  SECTION("q_stage 1 is slower than 2") { CHECK(test::run(test::fa4(), hw, p, "q_stage_1").time_us > 1.2 * base); }
  SECTION("split P off is slower than on") { CHECK(test::run(test::fa4(), hw, p, "no_split_p").time_us > 1.05 * base); }
  SECTION("rescaling O inside the softmax warps is slower than in a correction warpgroup") {
    // The analysis's premise: O is rescaled at every KV block (its "what actually it is" timeline).
    const double with_wg = test::run(test::fa4(), hw, p, "unconditional_rescale").time_us;
    const double without =
        test::run(test::fa4(), hw, p, "no_correction_warpgroup", {"/rescale/conditional=false"}).time_us;
    CHECK(without > 1.03 * with_wg);
  }
  SECTION("2-CTA MMA halves the K/V (B-operand) loads and SMEM reads per CTA") {
    const Prediction two = test::run(test::fa4(), hw, p);
    const Prediction one = test::run(test::fa4(), hw, p, "one_cta");
    const auto per_tile = [](const Prediction& r, double bytes) { return bytes / r.critical_tiles; };
    const double q_bytes = 2.0 * 128 * 128 * 2;  // the two Q tiles of a CTA, loaded whole either way
    CHECK(per_tile(one, one.critical.units.tma_bytes) - q_bytes ==
          Approx(2 * (per_tile(two, two.critical.units.tma_bytes) - q_bytes)).epsilon(0.05));
    CHECK(per_tile(one, one.critical.units.mma_smem_bytes) > 1.4 * per_tile(two, two.critical.units.mma_smem_bytes));
    // And the 2-CTA schedule is faster, mostly through the exp2 emulation FA4 turns on with it
    // (cta_group 2, hd128, non-causal): with kernels/sm100's SASS counts (sm100_softmax.json) the
    // emulated exp2 takes work off the MUFU since it builds the exponent with a shift, not an F2I
    // (an F2I shares the MUFU's pipe: kernels/microbench cvt).
    CHECK(one.time_us > base);
  }
}

TEST_CASE("conditional rescale follows the scores' row-max evolution", "[fa4][rescale]") {
  // Random N(0,1) Q, K at hd 128: the running max grows by far less than 8 (log2) after the first block.
  const RescaleMask m = rescale_from_random_scores(128, 8192, 128, 4, 8.0);
  CHECK(m.iterations == 64);
  CHECK(m.rate() == 0.0);
  // With a threshold of 0 every increase of the max forces a rescale; early blocks see many.
  const RescaleMask eager = rescale_from_random_scores(128, 8192, 128, 4, 0.0);
  CHECK(eager.rate() > 0.0);
  CHECK(eager.at(0, 1) + eager.at(1, 1) + eager.at(2, 1) + eager.at(3, 1) >= 3);
  CHECK(rescale_from_rate(0.25, 4, 9).rate() == Approx(0.25));
  CHECK(rescale_always(4, 9).rate() == 1.0);
}

TEST_CASE("random-score rescale masks do not depend on which were asked for first", "[fa4][rescale]") {
  // Every mask's scores are cut from one seeded stream of draws, extended as longer K are asked
  // for: a mask is the same whether the stream was fresh or already long.
  auto same = [](const RescaleMask& a, const RescaleMask& b) {
    return a.warps == b.warps && a.iterations == b.iterations && a.need == b.need;
  };
  clear_rescale_cache();
  const RescaleMask short_first = rescale_from_random_scores(64, 640, 64, 8, 0.5, 16);
  const RescaleMask long_after = rescale_from_random_scores(64, 4096, 64, 8, 0.5, 16);
  clear_rescale_cache();
  const RescaleMask long_first = rescale_from_random_scores(64, 4096, 64, 8, 0.5, 16);
  const RescaleMask short_after = rescale_from_random_scores(64, 640, 64, 8, 0.5, 16);
  CHECK(same(short_first, short_after));
  CHECK(same(long_first, long_after));
  CHECK(short_first.rate() > 0.0);  // a low threshold: the masks hold decisions to compare
  CHECK(long_first.iterations == 64);
}

TEST_CASE("resource checks reject schedules that do not fit - naming file and JSON path", "[fa4][inputs]") {
  const Hardware hw = test::b200();
  const Problem p = test::default_problem();
  auto rejects = [&](const std::vector<std::string>& sets, const std::string& path, const std::string& what) {
    auto s = load_schedule(test::fa4(), sets);
    try {
      s->check(hw, p);
      FAIL("expected rejection: " + what);
    } catch (const InputError& e) {
      CHECK(e.file() == test::fa4());
      CHECK(e.path() == path);
      CHECK_THAT(e.what(), Catch::Contains(what));
    }
  };
  rejects({"/tmem/O0/start=200"}, "/tmem/P1", "overlap O0 [200, 328); only P<s> may lie over S<s>");
  rejects({"/tmem/O1/start=448"}, "/tmem/O1", "TMEM overflow");
  rejects({"/tmem/P0/start=128"}, "/tmem/P0", "alias of S0 must lie inside it");
  rejects({"/kv_stage=7"}, "/kv_stage", "SMEM overflow");
  rejects({"/registers={\"softmax\":200,\"correction\":88,\"other\":72}"}, "/registers", "register overflow");
  // Pipelines, named barriers, a softmax warpgroup's Q stage and the MMA warp's leader-only
  // issue are derived from the roles and knobs, not declared:
  for (const auto& [set, path] : std::vector<std::pair<std::string, std::string>>{
           {"/pipelines={}", "/pipelines"},
           {"/named_barriers={}", "/named_barriers"},
           {"/warps/softmax1/q_stage=1", "/warps/softmax1/q_stage"},
           {"/warps/mma/leader_only=true", "/warps/mma/leader_only"},
           {"/tmem/P0/alias_of=\"S0\"", "/tmem/P0/alias_of"}}) {
    try {
      load_schedule(test::fa4(), {set});
      FAIL("expected rejection of a derived field: " + set);
    } catch (const InputError& e) {
      CHECK(e.path() == path);
      CHECK_THAT(e.what(), Catch::Contains("derive"));
    }
  }
  rejects({"/registers={\"softmax\":120,\"correction\":88,\"other\":72}"}, "/registers/softmax", "row of S");
  rejects({"/tile/n_block=160"}, "/tmem/S0/columns", "expected at least 160 columns");
}

TEST_CASE("an SM100 schedule refuses an SM90 GPU with the reason", "[fa4][inputs]") {
  auto s = load_schedule(test::fa4());
  const Hardware h100 = test::h100();
  CHECK_THROWS_WITH(s->check(h100, test::default_problem()), Catch::Contains("no TMEM and no tcgen05"));
}

TEST_CASE("schedule parsing rejects unknown fields - bad values and bad variants", "[fa4][inputs]") {
  CHECK_THROWS_WITH(load_schedule(test::fa4(), {"/q_stagee=2"}), Catch::Contains("/q_stagee: unknown field"));
  CHECK_THROWS_WITH(load_schedule(test::fa4(), {"/q_stage=9"}),
                    Catch::Contains("/q_stage: expected an integer in [1, 4], got 9"));
  CHECK_THROWS_WITH(load_schedule(test::fa4(), {"/split_p/first_columns=100"}),
                    Catch::Contains("/split_p/first_columns: expected a multiple of 32"));
  CHECK_THROWS_WITH(load_schedule(test::fa4(), {"/warps/mma/ids=[12,15]"}),
                    Catch::Contains("warp 15 is given to two roles"));
  CHECK_THROWS_WITH(load_schedule(test::fa4(), {}, "nope"), Catch::Contains("no variant \"nope\""));
}

TEST_CASE("fa4_sm100 pipelines are derived from the roles - with and without a correction warpgroup", "[fa4][pipelines]") {
  const Hardware hw = test::b200();
  const Problem p = shape(128, false, 1024);
  // The barrier a lowered CTA declares for stage 0 of a pipeline side: its expected arrivals.
  auto expected = [&](const std::vector<std::string>& sets, const std::string& barrier) {
    auto s = load_schedule(test::fa4(), sets);
    s->check(hw, p);
    const CtaProgram prog = s->lower(hw, p, {TileWork{0, 128, 2, 0}});
    for (const BarrierDecl& b : prog.barriers)
      if (b.name == barrier) return b.expected;
    FAIL("no barrier " + barrier);
    return -1;
  };
  // 2-CTA cluster (cta_group 2 at hd128): cluster-scoped sides count both CTAs' arrivals, the
  // leader-only MMA warp's commit once. S/P/O empty: softmax0's 4 warps x 32 + correction's 4 x 32.
  CHECK(expected({}, "pipeline_s_p_o.empty[0]") == 2 * 256);
  CHECK(expected({}, "pipeline_p_lastsplit.full[0]") == 2 * 4);  // lane 0 of each softmax warp
  CHECK(expected({}, "pipeline_o_epi.full[0]") == 128);          // the correction warpgroup, CTA scope
  CHECK(expected({}, "pipeline_kv.full[0]") == 1);               // the load warp's arrive.expect_tx
  CHECK(expected({}, "pipeline_o_acc.full[0]") == 1);            // the MMA's commit
  // Without a correction warpgroup the softmax warps take over its arrivals, with no re-declaring.
  CHECK(expected({"/correction_warpgroup=false"}, "pipeline_s_p_o.empty[0]") == 2 * 128);
  CHECK(expected({"/correction_warpgroup=false"}, "pipeline_o_epi.full[0]") == 128);
  CHECK(expected({"/correction_warpgroup=false", "/cta_group=1"}, "pipeline_o_acc.empty[0]") == 128);
}
