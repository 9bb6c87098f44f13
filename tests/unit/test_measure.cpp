// The measuring side of `run` / `validate` that needs no GPU: schedule -> kernel knobs, measured
// records -> timelines with the simulator's names, per-op means, error statistics, reports.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <sstream>

#include "lower/fa3/fa3_schedule.hpp"
#include "lower/schedule.hpp"
#include "measure/fidelity.hpp"
#include "measure/measured_timeline.hpp"
#include "measure/validate.hpp"
#include "report/chrome_trace.hpp"
#include "report/window.hpp"
#include "test_support.hpp"

using namespace attnsim;

namespace {

std::string fa3_file() { return test::root() + "/schedules/fa3_sm90.json"; }
using test::h100;
Problem hd(int d) {
  Problem p;
  p.head_dim = p.head_dim_v = d;
  return p;
}

attnsim_trace_record rec(int op, uint32_t t0, uint32_t t1, int wait_on = ATTNSIM_WAIT_NONE, int stage = 0xff,
                         int phase = 0xff, int block = -1, int tile = 0) {
  attnsim_trace_record r{};
  r.op = static_cast<uint8_t>(op);
  r.wait_on = static_cast<uint8_t>(wait_on);
  r.stage = static_cast<uint8_t>(stage);
  r.phase = static_cast<uint8_t>(phase);
  r.block = static_cast<int16_t>(block);
  r.tile = static_cast<int16_t>(tile);
  r.t0 = t0;
  r.t1 = t1;
  return r;
}

/// Two CTAs of 5 warps, capacity 3 records per warp (a traced launch as sm90::trace_kernel returns it): warp 0 (load) and
/// warp 4 (consumer0) record, as with --trace-warps first; no spans array (spans run = counts).
sm90::MeasuredTrace two_ctas() {
  sm90::MeasuredTrace t;
  t.warps_per_cta = 5;
  t.cap = 3;
  t.records.assign(2 * 5 * 3, attnsim_trace_record{});
  t.counts.assign(2 * 5, 0);
  auto put = [&](int cta, int warp, std::vector<attnsim_trace_record> rs, uint32_t count) {
    for (size_t i = 0; i < rs.size(); ++i) t.records[(cta * 5 + warp) * 3 + i] = rs[i];
    t.counts[cta * 5 + warp] = count;
  };
  put(0, 0, {rec(ATTNSIM_OP_WAIT, 0, 100, ATTNSIM_WAIT_K_EMPTY, 1, 0), rec(ATTNSIM_OP_LOAD_K, 100, 120)}, 2);
  put(0, 4,
      {rec(ATTNSIM_OP_WAIT, 0, 200, ATTNSIM_WAIT_K_FULL, 1, 1), rec(ATTNSIM_OP_MMA_QK, 200, 300, 0, 0xff, 0xff, 3),
       rec(ATTNSIM_OP_WAIT, 300, 340, ATTNSIM_WAIT_PINGPONG, 0)},
      5);  // 2 spans past the capacity
  put(1, 4, {rec(ATTNSIM_OP_SOFTMAX_EXP, 10, 50, 0, 0xff, 0xff, 0, 1)}, 1);
  // CTA 0: 20000 ns and 40000 cycles (2 GHz); CTA 1 starts 500 ns later and ends last.
  t.ctas = {attnsim_cta_clock{1000, 41000, 10000, 30000, 7, 2}, attnsim_cta_clock{0, 50000, 10500, 35500, 9, 1}};
  return t;
}

}  // namespace

TEST_CASE("fa3_sm90 auto tile takes the narrower K/V blocks on short or badly padded sequences", "[measure]") {
  const auto s = load_schedule(fa3_file());
  auto n_block = [&](int head_dim, int seqlen_k, bool causal) {
    Problem p = hd(head_dim);
    p.seqlen_q = p.seqlen_k = seqlen_k;
    p.causal = causal;
    const KernelChoice k = s->real_kernel(h100(), p);
    REQUIRE(k.supported);
    return std::get<sm90::KernelKnobs>(k.knobs).n_block;
  };
  // seqlen_k <= 512: hd256 64 wide (not seven 80-wide blocks over 560); one key more and the
  // long-sequence tiles are back. hd64 is 128 wide at every seqlen.
  CHECK(n_block(64, fa3::kShortSeqlenK, false) == 128);
  CHECK(n_block(64, fa3::kShortSeqlenK + 1, false) == 128);
  CHECK(n_block(64, fa3::kShortSeqlenK + 1, true) == 128);
  CHECK(n_block(128, 256, false) == 128);
  CHECK(n_block(256, fa3::kShortSeqlenK, false) == 64);
  CHECK(n_block(256, fa3::kShortSeqlenK, true) == 64);
  CHECK(n_block(256, fa3::kShortSeqlenK + 1, true) == 80);
  // Past it, the narrower blocks where the wider ones would read 10% more keys or more: hd256 at
  // 576 (80-wide: 640 against 576, 1.111x), not at 768 (800: 1.042x).
  CHECK(n_block(256, 576, false) == 64);
  CHECK(n_block(256, 768, false) == 80);
  CHECK(n_block(256, 8192, false) == 80);
  // seqlen_k decides, not seqlen_q (the blocks tile the keys).
  Problem p = hd(256);
  p.seqlen_q = 8192;
  p.seqlen_k = 512;
  CHECK(std::get<sm90::KernelKnobs>(s->real_kernel(h100(), p).knobs).n_block == 64);
  // A tile written in the schedule is kept at any seqlen.
  p.seqlen_q = p.seqlen_k = 512;
  const auto pinned = load_schedule(fa3_file(), {R"(/tile={"m_block":128,"n_block":80})"});
  CHECK(std::get<sm90::KernelKnobs>(pinned->real_kernel(h100(), p).knobs).n_block == 80);
}

TEST_CASE("fa3_sm90 resolves to the kernel knobs of its tile per head_dim", "[measure]") {
  const auto s = load_schedule(fa3_file());
  const KernelChoice k64 = s->real_kernel(h100(), hd(64));
  const KernelChoice k128 = s->real_kernel(h100(), hd(128));
  const KernelChoice k256 = s->real_kernel(h100(), hd(256));
  REQUIRE(k64.supported);
  REQUIRE(k128.supported);
  REQUIRE(k256.supported);
  // Consumer warpgroups in pingpong at every head_dim: three at hd64 (192 x 128, setmaxnreg
  // 160/32), two elsewhere; O in a buffer of its own where it fits in SMEM (hd64: 24 KB, hd128:
  // 32 KB more; hd256's 64 KB do not fit beside Q 64 KB and two K/V stages of 80 x 256), L2
  // sections of 8 MiB; hd256 rescales O conditionally (threshold 2^8).
  CHECK(k64.knobs == AnyKernelKnobs{sm90::KernelKnobs{64, 192, 128, 2, true, true, 160, 32, false, true, 8}});
  CHECK(k128.knobs == AnyKernelKnobs{sm90::KernelKnobs{128, 128, 128, 2, true, true, 240, 24, false, true, 8}});
  CHECK(k256.knobs ==
        AnyKernelKnobs{sm90::KernelKnobs{256, 128, 80, 2, true, true, 240, 24, false, false, 8, 8000, 0, 0, true}});
  CHECK(k128.scheduler == TileScheduler::StaticPersistent);  // non-causal: as the simulator's grid
  // Causal: the dynamic scheduler, O in its own buffer where it fits, else in the V ring (hd256).
  Problem c = hd(128);
  c.causal = true;
  const KernelChoice c128 = s->real_kernel(h100(), c);
  CHECK(c128.scheduler == TileScheduler::DynamicLpt);
  CHECK(c128.knobs == AnyKernelKnobs{sm90::KernelKnobs{128, 128, 128, 2, true, true, 240, 24, true, true, 8}});
  c.head_dim = c.head_dim_v = 64;  // causal hd64: 192 rows, but 128 up to 1k keys (less of the tile past the diagonal)
  CHECK(s->real_kernel(h100(), c).knobs ==
        AnyKernelKnobs{sm90::KernelKnobs{64, 192, 128, 2, true, true, 160, 32, true, true, 8}});
  c.seqlen_q = c.seqlen_k = fa3::kHd64CausalShortSeqlenK;  // and there it trims the diagonal block
  CHECK(s->real_kernel(h100(), c).knobs ==
        AnyKernelKnobs{sm90::KernelKnobs{64, 128, 128, 2, true, true, 240, 24, true, true, 8, -1, 0, 0, false, true}});
  c.seqlen_q = c.seqlen_k = fa3::kHd64CausalShortSeqlenK + 1;
  CHECK(std::get<sm90::KernelKnobs>(s->real_kernel(h100(), c).knobs).m_block == 192);
  c.seqlen_q = c.seqlen_k = 8192;
  c.head_dim = c.head_dim_v = 256;
  const KernelChoice c256 = s->real_kernel(h100(), c);
  CHECK(c256.scheduler == TileScheduler::DynamicLpt);
  CHECK(c256.knobs ==
        AnyKernelKnobs{sm90::KernelKnobs{256, 128, 80, 2, true, true, 240, 24, true, false, 8, 8000, 0, 0, true}});
  CHECK(load_schedule(fa3_file(), {}, "lpt_single_tile")->real_kernel(h100(), hd(128)).scheduler == TileScheduler::Lpt);
  // hd256: O's own 64 KB beside Q 64 KB and two K/V stages of 80 x 256 overflow SMEM: asked for,
  // the schedule is rejected with the reason.
  try {
    load_schedule(fa3_file(), {"/o_staging=own_buffer"})->check(h100(), hd(256));
    FAIL("expected an SMEM overflow");
  } catch (const InputError& e) {
    CHECK(e.path() == "/o_staging");
    CHECK_THAT(e.what(), Catch::Contains("SMEM overflow: Q 65536 + O 65536"));
  }
  CHECK(std::get<sm90::KernelKnobs>(load_schedule(fa3_file(), {}, "kv_stage_3")->real_kernel(h100(), hd(128)).knobs)
            .kv_stage == 3);
  CHECK_FALSE(std::get<sm90::KernelKnobs>(load_schedule(fa3_file(), {}, "no_pingpong")->real_kernel(h100(), hd(128)).knobs)
                  .pingpong);
}

TEST_CASE("schedules without a real kernel say why", "[measure]") {
  const KernelChoice ws = load_schedule(fa3_file(), {}, "no_warp_specialization")->real_kernel(h100(), hd(128));
  CHECK_FALSE(ws.supported);
  CHECK_THAT(ws.why_not, Catch::Contains("warp_specialization false"));
  CHECK_THAT(load_schedule(fa3_file())->real_kernel(h100(), hd(96)).why_not, Catch::Contains("head_dim 96"));
  // fa4_sm100 with 2-CTA MMA at head_dim 64: kernels/sm100 builds it for head_dim 128 only.
  CHECK_THAT(load_schedule(test::fa4(), {"/cta_group=2"})->real_kernel(test::b200(), hd(64)).why_not,
             Catch::Contains("cta_group 2") && Catch::Contains("for head_dim 128 only"));
  // blackflash has a kernel (kernels/blackflash), for head_dim 64 only.
  CHECK_THAT(load_schedule(test::root() + "/schedules/blackflash.json")->real_kernel(h100(), hd(128)).why_not,
             Catch::Contains("head_dim = head_dim_v = 64 only"));
}

TEST_CASE("measured records become a timeline with the simulator's roles and labels", "[measure]") {
  const sm90::MeasuredTrace t = two_ctas();
  const MeasuredCta m = measured_cta(t, 0, 1.5);
  CHECK(m.timeline.clock_ghz == Approx(2.0));  // 40000 cycles / 20000 ns
  CHECK(m.sm == 7);
  CHECK(m.tiles == 2);
  CHECK(m.start_ns == 0);
  CHECK(m.dropped == 2);
  REQUIRE(m.timeline.warps.size() == 2);
  CHECK(m.timeline.warps[0].role == "load");
  CHECK(m.timeline.warps[1].role == "consumer0");
  CHECK(m.timeline.warps[1].warp == 4);
  const Span& w = m.timeline.warps[1].spans[0];
  CHECK(w.kind == SpanKind::Wait);
  CHECK(m.timeline.label_of(w) == "pipeline_k.full[1] phase 1");
  CHECK(m.timeline.label_of(m.timeline.warps[1].spans[2]) == "bar.pingpong[0]");
  CHECK(m.timeline.warps[1].spans[1].block == 3);
  const MeasuredCta m1 = measured_cta(t, 1, 1.5);
  CHECK(m1.start_ns == 500);
  CHECK(m1.timeline.clock_ghz == Approx(2.0));
  CHECK_THROWS_AS(measured_cta(t, 2, 1.5), std::out_of_range);
}

TEST_CASE("measured records of the SM100 kernel get the simulator's fa4 roles and pipeline names", "[measure]") {
  sm90::MeasuredTrace t;
  t.knobs = sm100::KernelKnobs{};
  t.warps_per_cta = sm100::kWarps;
  t.cap = 3;
  t.records.assign(sm100::kWarps * 3, attnsim_trace_record{});
  t.counts.assign(sm100::kWarps, 0);
  auto put = [&](int warp, std::vector<attnsim_trace_record> rs) {
    for (size_t i = 0; i < rs.size(); ++i) t.records[warp * 3 + i] = rs[i];
    t.counts[warp] = static_cast<uint32_t>(rs.size());
  };
  put(4, {rec(ATTNSIM_OP_WAIT, 0, 100, ATTNSIM_WAIT_SPO_FULL, 1, 0), rec(ATTNSIM_OP_WAIT, 100, 120, ATTNSIM_WAIT_ORDER_BAR, 1),
          rec(ATTNSIM_OP_SOFTMAX_EXP, 120, 300)});
  put(8, {rec(ATTNSIM_OP_WAIT, 0, 50, ATTNSIM_WAIT_STATS_BAR, 4 * 1 + 2)});
  put(12, {rec(ATTNSIM_OP_WAIT, 0, 40, ATTNSIM_WAIT_LASTSPLIT_FULL, 0, 1), rec(ATTNSIM_OP_MMA_PV, 40, 60)});
  put(14, {rec(ATTNSIM_OP_WAIT, 0, 10, ATTNSIM_WAIT_KV_EMPTY, 2, 1)});
  t.ctas = {attnsim_cta_clock{0, 2000, 0, 1000, 3, 1}};
  const MeasuredCta m = measured_cta(t, 0, 1.855);
  REQUIRE(m.timeline.warps.size() == 4);
  CHECK(m.timeline.warps[0].role == "softmax1");
  CHECK(m.timeline.label_of(m.timeline.warps[0].spans[0]) == "pipeline_s_p_o.full[1] phase 0");
  CHECK(m.timeline.label_of(m.timeline.warps[0].spans[1]) == "bar.exp_order[1]");
  CHECK(m.timeline.warps[1].role == "correction");
  CHECK(m.timeline.label_of(m.timeline.warps[1].spans[0]) == "bar.softmax_stats[s1w2]");  // as sim/lower/fa4 names it
  CHECK(m.timeline.warps[2].role == "mma");
  CHECK(m.timeline.label_of(m.timeline.warps[2].spans[0]) == "pipeline_p_lastsplit.full[0] phase 1");
  CHECK(m.timeline.warps[3].role == "load");
  CHECK(m.timeline.label_of(m.timeline.warps[3].spans[0]) == "pipeline_kv.empty[2] phase 1");
}

TEST_CASE("dropped spans count only recording warps: spans run minus records kept", "[measure]") {
  sm90::MeasuredTrace t = two_ctas();
  // As a traced launch returns it: counts = records written, spans = spans run.
  t.counts[0 * 5 + 4] = 3;
  t.spans.assign(2 * 5, 0);
  t.spans[0 * 5 + 0] = 2;
  t.spans[0 * 5 + 4] = 7;  // 4 spans did not fit
  t.spans[1 * 5 + 4] = 1;
  t.spans[1 * 5 + 2] = 9;  // warp 2 does not record (trace_warps "first"): not dropped
  CHECK(measured_cta(t, 0, 1.5).dropped == 4);
  CHECK(measured_cta(t, 1, 1.5).dropped == 0);
  CHECK(dropped_spans(t) == 4);
  t.trace_warps = sm90::kTraceWarpsAll;
  CHECK(dropped_spans(t) == 4 + 9);
}

TEST_CASE("the trace-warps option takes first or all or none or warp indices", "[measure]") {
  CHECK(sm90::parse_trace_warps("first") == 0x1111u);  // load warp, first warp of each consumer warpgroup
  CHECK(sm90::parse_trace_warps("all") == 0xffffffffu);
  CHECK(sm90::parse_trace_warps("none") == 0u);
  CHECK(sm90::parse_trace_warps("0,4,5") == 0x31u);
  CHECK(sm90::parse_trace_warps("31") == 0x80000000u);
  CHECK_THROWS_AS(sm90::parse_trace_warps("32"), std::invalid_argument);
  CHECK_THROWS_AS(sm90::parse_trace_warps("0,,4"), std::invalid_argument);
  CHECK_THROWS_AS(sm90::parse_trace_warps("4,"), std::invalid_argument);
  CHECK_THROWS_AS(sm90::parse_trace_warps(""), std::invalid_argument);
  CHECK_THROWS_AS(sm90::parse_trace_warps("w4"), std::invalid_argument);
}

TEST_CASE("a CTA shorter than the globaltimer resolution takes the fallback clock", "[measure]") {
  sm90::MeasuredTrace t = two_ctas();
  t.ctas[0].ns1 = t.ctas[0].ns0 + 1000;
  CHECK(measured_cta(t, 0, 1.5).timeline.clock_ghz == 1.5);
}

TEST_CASE("a sampled trace: CTAs without an end anchor recorded nothing and are not shown", "[measure]") {
  // Five CTAs traced with --trace-sample 2: CTAs 1 and 3 recorded no tile, so the kernel left their
  // zeroed end anchors (and counts) as they were; CTA 4 ends last among those that recorded.
  sm90::MeasuredTrace t = two_ctas();
  t.trace_sample = 2;
  t.records.resize(5 * 5 * 3, attnsim_trace_record{});
  t.counts.resize(5 * 5, 0);
  t.ctas.resize(5, attnsim_cta_clock{});
  t.ctas[1] = attnsim_cta_clock{0, 0, 10500, 0, 9, 0};  // started, recorded nothing
  t.ctas[2] = attnsim_cta_clock{0, 20000, 10200, 20200, 3, 1};
  t.ctas[3] = attnsim_cta_clock{0, 0, 10600, 0, 4, 0};
  t.ctas[4] = attnsim_cta_clock{0, 60000, 10700, 40700, 5, 1};
  CHECK(cta_recorded(t, 0));
  CHECK_FALSE(cta_recorded(t, 1));
  CHECK_FALSE(cta_recorded(t, 3));
  const MeasuredCta m = measured_cta(t, 1, 1.5);
  CHECK(m.timeline.warps.empty());
  CHECK(m.end_ns == m.start_ns);
  CHECK(m.timeline.clock_ghz == 1.5);
  // The last to end first, then the lowest-numbered others that recorded; never one that
  // recorded nothing.
  CHECK(default_trace_ctas(t, 5) == std::vector<int>{4, 0, 2});
  CHECK(default_trace_ctas(t, 2) == std::vector<int>{4, 0});
}

TEST_CASE("per-op means group waits by barrier without stage and phase", "[measure]") {
  const sm90::MeasuredTrace t = two_ctas();
  const MeasuredCta a = measured_cta(t, 0, 1), b = measured_cta(t, 1, 1);
  const auto ops = op_means({&a.timeline, &b.timeline});
  REQUIRE(ops.count("wait pipeline_k.full"));
  CHECK(ops.at("wait pipeline_k.full").mean_ns == Approx(100.0));  // 200 cycles at 2 GHz
  CHECK(ops.at("wait pipeline_k.empty").count == 1);
  CHECK(ops.at("wait bar.pingpong").mean_ns == Approx(20.0));
  CHECK(ops.at("mma_qk").mean_ns == Approx(50.0));
  CHECK(ops.at("softmax_exp").mean_ns == Approx(20.0));
  CHECK(ops.at("load_k").mean_ns == Approx(10.0));
}

TEST_CASE("per-op means over a warp mask and the per-op table run and validate print", "[measure]") {
  const sm90::MeasuredTrace t = two_ctas();
  const MeasuredCta a = measured_cta(t, 0, 1);
  // The first warps (0, 4) as a mask match op_means_first_warps; a mask of warp 0 alone keeps
  // the load warp's ops only.
  CHECK(op_means_of_warps(a.timeline, 0x11u).size() == op_means_first_warps(a.timeline).size());
  const auto load_only = op_means_of_warps(a.timeline, 0x1u);
  CHECK(load_only.count("load_k") == 1);
  CHECK(load_only.count("mma_qk") == 0);
  CHECK(op_means_of_warps(a.timeline, 0).empty());
  // The table: every op either side has, the error against measured, "-" where a side has none.
  std::map<std::string, OpStat> predicted{{"mma_qk", {60, 120, 2}}, {"loop_control", {5, 5, 1}}};
  std::map<std::string, OpStat> measured{{"mma_qk", {50, 100, 2}}, {"wait bar.pingpong", {20, 20, 1}}};
  const std::string table = format_op_table(predicted, measured);
  CHECK_THAT(table, Catch::Contains("predicted ns"));
  // One line per op: name, predicted, measured, error, measured spans.
  CHECK_THAT(table, Catch::Matches(R"([\s\S]*\nmma_qk +60\.0 +50\.0 +\+20\.0% +2\n[\s\S]*)"));
  CHECK_THAT(table, Catch::Matches(R"([\s\S]*\nloop_control +5\.0 +- +- *\n[\s\S]*)"));
  CHECK_THAT(table, Catch::Matches(R"([\s\S]*\nwait bar\.pingpong +- +20\.0 +1\n[\s\S]*)"));
}

TEST_CASE("per-op means leave out the tiles before first_tile unless nothing else is left", "[measure]") {
  Timeline tl;
  tl.clock_ghz = 1;
  WarpTrack w;
  w.warp = 4;
  auto span = [](int op, double t0, double t1, int tile) {
    Span s;
    s.op = op;
    s.kind = SpanKind::Busy;
    s.start = t0;
    s.end = t1;
    s.tile = tile;
    return s;
  };
  // Tile 0: a QK of 300 cycles; tile 1: one of 100; a span of no tile (-1) of 10.
  w.spans = {span(ATTNSIM_OP_MMA_QK, 0, 300, 0), span(ATTNSIM_OP_MMA_QK, 400, 500, 1),
             span(ATTNSIM_OP_LOOP_CONTROL, 500, 510, -1)};
  tl.warps.push_back(w);
  CHECK(op_means_first_warps(tl).at("mma_qk").mean_ns == Approx(200.0));
  const auto later = op_means_first_warps(tl, 1);
  CHECK(later.at("mma_qk").mean_ns == Approx(100.0));
  CHECK(later.at("mma_qk").count == 1);
  CHECK(later.at("loop_control").count == 1);  // belongs to no tile: kept
  CHECK(op_means_of_warps(tl, 1u << 4, 1).at("mma_qk").mean_ns == Approx(100.0));
  // No span of tile 2 or later: every tile counts (a CTA that ran one tile).
  CHECK(op_means_first_warps(tl, 2).at("mma_qk").mean_ns == Approx(200.0));
}

TEST_CASE("a trace's default extent is the first tile the timeline holds - recorded or predicted", "[measure]") {
  Timeline tl;
  tl.end_cycles = 900;
  WarpTrack w;
  auto span = [](double t0, double t1, int tile) {
    Span s;
    s.start = t0;
    s.end = t1;
    s.tile = tile;
    return s;
  };
  // A measured CTA that recorded its tiles 2 and 3 (trace sampling leaves a CTA's first out).
  w.spans = {span(0, 50, -1), span(100, 400, 2), span(400, 800, 3)};
  tl.warps.push_back(w);
  CHECK(first_tile_end(tl) == 400);
  tl.warps[0].spans.push_back(span(800, 850, 0));  // a tile 0 wherever it lies
  CHECK(first_tile_end(tl) == 850);
  tl.warps[0].spans = {span(0, 50, -1)};  // no tile at all: the whole timeline
  CHECK(first_tile_end(tl) == 900);
}

TEST_CASE("the predicted op means leave out the tiles the kernel's trace sampling does not record", "[measure]") {
  const Hardware hw = load_hardware(test::root() + "/configs/hw/h200.json");
  const auto base = load_schedule(fa3_file());
  Problem p = hd(128);
  p.batch = 8;
  p.heads = 16;
  p.seqlen_q = p.seqlen_k = 1024;  // 8 m-blocks x 128 (batch, head) pairs: 1024 tiles, 7-8 per CTA
  PredictOptions opt;
  const Prediction persistent = predict(*base, hw, p, opt);
  REQUIRE(persistent.mode == GridPlan::Mode::StaticPersistent);
  CHECK(recorded_tiles(*base, persistent, 32).first == 1);                              // no CTA's first tile
  CHECK(recorded_tiles(*base, persistent, 32).end == std::numeric_limits<int>::max());  // to its last
  CHECK(recorded_tiles(*base, persistent, 1).first == 0);                               // every tile recorded
  // One CTA per tile: each CTA's only tile is its first.
  const auto lpt = load_schedule(fa3_file(), {}, "lpt_single_tile");
  const Prediction single = predict(*lpt, hw, p, opt);
  REQUIRE(single.mode == GridPlan::Mode::LptSingleTile);
  CHECK(recorded_tiles(*lpt, single, 32).first == 0);
  // The dynamic scheduler's grid: more than three tiles per CTA, so the first is left out; a grid
  // of two per CTA records only the first tiles.
  const auto dyn = load_schedule(fa3_file(), {}, "dynamic_lpt");
  const Prediction many = predict(*dyn, hw, p, opt);
  REQUIRE(many.mode == GridPlan::Mode::DynamicLpt);
  const RecordedTiles dyn_rec = recorded_tiles(*dyn, many, 32);
  CHECK(dyn_rec.first == 1);
  // ... and its tiles from the last 2 x 132 of the order (1024 tiles: 760 on) are not recorded:
  // the critical CTA's list ends with them.
  const auto& order = many.critical_tile_order;
  REQUIRE(order.size() == static_cast<size_t>(many.critical_tiles));
  REQUIRE(dyn_rec.end < static_cast<int>(order.size()));
  CHECK(order[dyn_rec.end] >= 1024 - 264);
  CHECK(order[dyn_rec.end - 1] < 1024 - 264);
  CHECK(std::is_sorted(order.begin(), order.end()));  // a CTA takes its tiles in the order
  Problem two = p;
  two.batch = 2;  // 256 tiles on 132 CTAs
  CHECK(recorded_tiles(*dyn, predict(*dyn, hw, two, opt), 32).first == 0);
  CHECK(persistent.critical_tile_order.empty());
  // validate's prediction: the critical CTA's tiles from its second on.
  ValidationCase c;
  c.problem = p;
  c.trace_sample = 32;
  predict_case(*base, hw, c);
  ValidationCase all = c;
  all.trace_sample = 1;
  predict_case(*base, hw, all);
  REQUIRE(c.predicted_ops.count("wait pipeline_q.full"));
  // The first tile's Q wait is the launch's (its Q from HBM behind every CTA's first loads): the
  // later tiles' waits are shorter, so leaving it out lowers the mean.
  CHECK(c.predicted_ops.at("wait pipeline_q.full").mean_ns < all.predicted_ops.at("wait pipeline_q.full").mean_ns);
  CHECK(c.predicted_ops.at("mma_qk").count < all.predicted_ops.at("mma_qk").count);
  CHECK(c.predicted_us == all.predicted_us);  // the time does not depend on what is recorded
}

TEST_CASE("predicted and measured traces share track and span names", "[measure]") {
  const sm90::MeasuredTrace t = two_ctas();
  CHECK(default_trace_ctas(t, 2) == std::vector<int>{1, 0});  // CTA 1 ends last: first
  std::ostringstream meas;
  write_measured_trace(t, {1, 0}, true, 1.5, "measured", meas);
  const std::string s = meas.str();
  CHECK_THAT(s, Catch::Contains("\"name\":\"consumer0 w4\""));
  CHECK_THAT(s, Catch::Contains("\"name\":\"wait pipeline_k.full[1] phase 1\""));
  CHECK_THAT(s, Catch::Contains("\"name\":\"mma_qk\""));
  CHECK_THAT(s, Catch::Contains("measured CTA 1 (SM 9, 1 tiles)"));
  // CTA 1 is 0.5 us later on the common axis: its softmax_exp span at 10 cycles = 0.005 us.
  CHECK_THAT(s, Catch::Contains("\"ts\":0.5050"));
  const auto parsed = nlohmann::json::parse(s);
  CHECK(parsed["traceEvents"].size() > 8);
  // The simulator's trace of the same schedule names the consumer tracks the same way.
  const Prediction p = test::run(fa3_file(), h100(), hd(128));
  std::ostringstream pred;
  write_chrome_trace(p.critical.timeline, TraceOptions{}, pred);
  CHECK_THAT(pred.str(), Catch::Contains("\"name\":\"consumer0 w4\""));
  CHECK_THAT(pred.str(), Catch::Contains("\"name\":\"wait pipeline_k.full[0] phase 0\""));
  CHECK_THAT(pred.str(), Catch::Contains("\"name\":\"mma_qk\""));
}

TEST_CASE("Spearman on hand-computed rankings", "[measure]") {
  CHECK(spearman({1, 2, 3, 4}, {10, 20, 30, 40}) == Approx(1.0));
  CHECK(spearman({1, 2, 3, 4}, {4, 3, 2, 1}) == Approx(-1.0));
  // ranks (1,2,3,4) vs (1,3,2,4): d^2 = 2, rho = 1 - 6*2 / (4*15) = 0.8
  CHECK(spearman({1, 2, 3, 4}, {1, 5, 3, 9}) == Approx(0.8));
  // ties take the average rank: (1, 2.5, 2.5, 4) against (1, 2, 3, 4)
  CHECK(spearman({1, 2, 2, 3}, {1, 2, 3, 4}) == Approx(0.9486833).epsilon(1e-6));
  CHECK(spearman({1, 1, 1}, {1, 2, 3}) == 0.0);
  CHECK_THROWS_AS(spearman({1}, {1}), std::invalid_argument);
}

TEST_CASE("validation statistics over measured cases only", "[measure]") {
  auto mk = [](std::string prob, std::string kernel, double pred, double meas) {
    ValidationCase c;
    c.schedule = "s";
    c.variant = kernel;
    c.kernel = kernel;
    c.problem_label = prob;
    c.predicted_us = pred;
    c.measured_us = meas;
    c.measured = true;
    return c;
  };
  std::vector<ValidationCase> cases = {mk("a", "k1", 110, 100), mk("a", "k2", 180, 200), mk("a", "k3", 300, 300),
                                       mk("b", "k1", 50, 40)};
  ValidationCase skipped;
  skipped.skipped = "not compiled";
  cases.push_back(skipped);
  const ValidationStats st = validation_stats(cases);
  CHECK(st.cases == 4);
  CHECK(st.mape == Approx((10.0 + 10.0 + 0.0 + 25.0) / 4));
  CHECK(st.max_abs_err == Approx(25.0));
  CHECK(st.worst == "s:k1 on b");
  CHECK(st.spearman_time == Approx(1.0));
  REQUIRE(st.spearman_per_problem.count("a"));  // 3 kernels on problem a; b has one
  CHECK_FALSE(st.spearman_per_problem.count("b"));
  CHECK(st.spearman_per_problem.at("a") == Approx(1.0));
  const std::string csv = validation_csv(cases);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 6);  // header + 5 cases
  CHECK_THAT(csv, Catch::Contains(",10.000,"));          // error_pct of the first case
  const std::string table = format_validation(cases, st, -1);
  CHECK_THAT(table, Catch::Contains("MAPE 11.2%"));
  CHECK_THAT(csv,
             Catch::Contains("traced_us,trace_overhead_pct,timed_clock_ghz,kernel_clock_ghz,trace_clock_ghz,skipped"));
  CHECK_THAT(table, !Catch::Contains("trace ovh"));  // no case timed traced
  CHECK_THAT(table, Catch::Contains("not run: not compiled"));
  const auto j = validation_json(cases, st, {{"gpu", "test"}});
  CHECK(j["stats"]["cases"] == 4);
  CHECK(j["cases"].size() == 5);
  CHECK(j["gpu"] == "test");
  // The instrumented kernel's time per case: overhead = traced / plain median - 1.
  cases[0].traced_us = 104;
  CHECK(cases[0].trace_overhead_pct() == Approx(4.0));
  CHECK_THAT(validation_csv(cases), Catch::Contains(",104.000,4.00,"));
  const std::string t2 = format_validation(cases, st, -1);
  CHECK_THAT(t2, Catch::Contains("trace ovh"));
  CHECK_THAT(t2, Catch::Contains("+4.0%"));
  const auto j2 = validation_json(cases, st, {});
  CHECK(j2["cases"][0]["traced"]["overhead_pct"].get<double>() == Approx(4.0));
  CHECK_FALSE(j2["cases"][1].contains("traced"));
  // The time error split into cycles and clock where the run's clock was read: 100 us measured
  // at 1.5 GHz (150000 cycles); predicted 135000 cycles at 1.35 GHz: cycles -10%, clock -10%,
  // time 0% (the errors cancel). The kernel's own clock wins over the probe's.
  CHECK_THAT(t2, !Catch::Contains("cycles    clock"));  // no clock read yet
  ValidationCase& k = cases[0];
  k.measured_us = 100;
  k.timed_clock_ghz = 1.9;
  k.kernel_clock_ghz = 1.5;
  k.predicted_cycles = 135000;
  k.predicted_clock_ghz = 1.35;
  REQUIRE(k.has_clock_split());
  CHECK(k.run_clock_ghz() == 1.5);
  CHECK(k.cycles_error_pct() == Approx(-10.0));
  CHECK(k.clock_error_pct() == Approx(-10.0));
  const std::string t3 = format_validation(cases, validation_stats(cases), -1);
  CHECK_THAT(t3, Catch::Contains("cycles    clock"));
  CHECK_THAT(t3, Catch::Contains("-10.0%   -10.0%"));
  CHECK_FALSE(cases[1].has_clock_split());
}

TEST_CASE("fa2_sm80 resolves to the kernels/fa2 knobs - CuFlash tiles per head_dim", "[measure][fa2]") {
  const std::string fa2 = test::root() + "/schedules/fa2_sm80.json";
  const auto s = load_schedule(fa2);
  const KernelChoice k64 = s->real_kernel(h100(), hd(64));
  const KernelChoice k128 = s->real_kernel(h100(), hd(128));
  REQUIRE(k64.supported);
  REQUIRE(k128.supported);
  CHECK(k64.knobs == AnyKernelKnobs{fa2::KernelKnobs{64, 64, 64}});    // Br 64, Bc 64 at d 64
  CHECK(k128.knobs == AnyKernelKnobs{fa2::KernelKnobs{128, 64, 32}});  // Bc 32 at d 128 (SMEM)
  CHECK(describe(k128.knobs) == "fa2_sm80 hd128 br64 bc32 fma");
  // The SMEM the simulator checks is the kernel's: Q, K, V bf16 tiles and the fp32 S tile.
  CHECK(s->resources(h100(), hd(128)).at("smem_bytes") == fa2::smem_layout(64, 32, 128, 128, 2).bytes);
  CHECK(fa2::smem_layout(64, 32, 128, 128, 2).bytes == (64 * 128 + 2 * 32 * 128) * 2 + 64 * 32 * 4);
  CHECK_THAT(load_schedule(fa2, {}, "mma_sync")->real_kernel(h100(), hd(64)).why_not,
             Catch::Contains("mma_sync is modelled but not implemented"));
  CHECK_THAT(s->real_kernel(h100(), hd(256)).why_not, Catch::Contains("head_dim 256"));
  CHECK_THAT(load_schedule(fa2, {"/block={\"Br\":128,\"Bc\":64}"})->real_kernel(h100(), hd(64)).why_not,
             Catch::Contains("Br 128"));
}

TEST_CASE("fa2 measured records carry the simulator's fa2 roles and per-op keys", "[measure]") {
  // A traced fa2_sm80 launch as sm90::trace_kernel returns it: one CTA of 4 warps, warp 0 recording.
  sm90::MeasuredTrace t;
  t.knobs = fa2::KernelKnobs{128, 64, 32};
  t.warps_per_cta = fa2::kWarps;
  t.cap = 8;
  t.records.assign(fa2::kWarps * 8, attnsim_trace_record{});
  t.counts.assign(fa2::kWarps, 0);
  const std::vector<attnsim_trace_record> rs = {
      rec(ATTNSIM_OP_WAIT, 0, 50, ATTNSIM_WAIT_CP_ASYNC), rec(ATTNSIM_OP_WAIT, 50, 90, ATTNSIM_WAIT_CP_ASYNC, 0xff, 0xff, 0),
      rec(ATTNSIM_OP_WAIT, 90, 100, ATTNSIM_WAIT_SYNCTHREADS, 0xff, 0xff, 0),
      rec(ATTNSIM_OP_MMA_QK, 100, 300, ATTNSIM_WAIT_NONE, 0xff, 0xff, 0)};
  for (size_t i = 0; i < rs.size(); ++i) t.records[i] = rs[i];
  t.counts[0] = static_cast<uint32_t>(rs.size());
  t.ctas = {attnsim_cta_clock{0, 40000, 0, 20000, 3, 1}};
  const MeasuredCta m = measured_cta(t, 0, 1.5);
  REQUIRE(m.timeline.warps.size() == 1);
  CHECK(m.timeline.warps[0].role == "worker");
  CHECK(m.timeline.label_of(m.timeline.warps[0].spans[2]) == "bar.syncthreads");
  const auto measured = op_means(m.timeline);
  // Every measured key is one the simulator's fa2 timeline has for the warps validate compares.
  const auto s = load_schedule(test::root() + "/schedules/fa2_sm80.json");
  const Prediction pred = predict(*s, h100(), hd(128));
  const auto predicted = op_means_first_warps(pred.critical.timeline);
  for (const char* key : {"wait cp.async.wait_group", "wait bar.syncthreads", "mma_qk"}) {
    CHECK(measured.count(key) == 1);
    CHECK(predicted.count(key) == 1);
  }
  CHECK(pred.critical.timeline.warps.at(0).role == "worker");
}

TEST_CASE("validation_csv quotes a sweep candidate's overrides - fidelity reads them back", "[measure][csv]") {
  ValidationCase c;
  c.schedule = R"(/kv_stage=2 /tile={"m_block":128,"n_block":176})";  // commas and quotes
  c.problem_label = "hd128 s8k b2";
  c.problem.batch = 2;
  c.problem.heads = 16;
  c.problem.kv_heads = 16;
  c.problem.seqlen_q = c.problem.seqlen_k = 8192;
  c.problem.head_dim = c.problem.head_dim_v = 128;
  c.kernel = "fa3_sm90 hd128 m128 n176";
  c.measured = true;
  c.predicted_us = 1676.289;
  c.measured_us = 1808.845;
  c.runs = 10;
  const std::string csv = validation_csv({c});
  CHECK_THAT(csv, Catch::Contains(R"("/kv_stage=2 /tile={""m_block"":128,""n_block"":176}")"));
  const auto back = parse_results_csv(csv, "results.csv");
  REQUIRE(back.size() == 1);
  CHECK(back[0].schedule == c.schedule);
  CHECK(back[0].problem.batch == 2);
  CHECK(back[0].measured_us == Approx(1808.845));
}

TEST_CASE("sweep candidates: overrides from their labels and the geomean-TFLOPS ranking", "[measure][sweep]") {
  CHECK(candidate_overrides(R"(/kv_stage=3 /tile={"m_block":128,"n_block":176} /pingpong="auto")") ==
        std::vector<std::string>{"/kv_stage=3", R"(/tile={"m_block":128,"n_block":176})", R"(/pingpong="auto")"});
  CHECK(is_sweep_candidate("/kv_stage=3"));
  CHECK_FALSE(is_sweep_candidate("fa3_sm90"));
  // Candidate a: 100 and 400 TFLOPS measured (geomean 200), b: 300 and 300; c misses problem q.
  auto make = [](const std::string& cand, const std::string& prob, double measured_tflops, double predicted_tflops,
                 bool measured = true) {
    ValidationCase c;
    c.schedule = cand;
    c.problem_label = prob;
    c.problem.batch = 1;
    c.problem.heads = 1;
    c.problem.kv_heads = 1;
    c.problem.seqlen_q = c.problem.seqlen_k = 1024;
    c.problem.head_dim = c.problem.head_dim_v = 128;
    c.measured = measured;
    c.measured_us = c.problem.flops() / (measured_tflops * 1e6);
    c.predicted_us = c.problem.flops() / (predicted_tflops * 1e6);
    return c;
  };
  const std::vector<ValidationCase> cases = {make("/a=1", "p", 100, 100), make("/a=1", "q", 400, 400),
                                             make("/a=2", "p", 300, 100), make("/a=2", "q", 300, 100),
                                             make("/a=3", "p", 500, 500), make("/a=3", "q", 0, 0, false),
                                             make("fa3_sm90", "p", 1, 1)};
  const SweepRanking r = sweep_ranking(cases);
  CHECK(r.candidates == 3);
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0].measured_geomean_tflops == Approx(200));
  CHECK(r.rows[1].measured_geomean_tflops == Approx(300));
  CHECK(r.rows[1].predicted_geomean_tflops == Approx(100));
  REQUIRE(r.has_spearman);
  CHECK(r.spearman == Approx(-1.0));  // measured: a < b; predicted: a > b
}

TEST_CASE("a traced run's clock is the median of its recording CTAs' clocks", "[measure]") {
  std::vector<MeasuredCta> ctas(3);
  ctas[0].timeline.clock_ghz = 1.5;
  ctas[1].timeline.clock_ghz = 1.7;
  ctas[2].timeline.clock_ghz = 1.6;
  CHECK(median_cta_clock_ghz(ctas) == 1.6);
  CHECK(median_cta_clock_ghz({}) == 0);
  // Op means predicted at 1.5 GHz, in ns at that clock: each span's cycles kept.
  const std::map<std::string, OpStat> ops = {{"mma_qk", OpStat{160, 1600, 10}}};
  CHECK(ops_at_clock(ops, 1.5, 1.6).at("mma_qk").mean_ns == Approx(150));
  CHECK(ops_at_clock(ops, 1.5, 1.6).at("mma_qk").total_ns == Approx(1500));
  CHECK(ops_at_clock(ops, 1.5, 0).at("mma_qk").mean_ns == 160);  // the run's clock unknown: as predicted
}
