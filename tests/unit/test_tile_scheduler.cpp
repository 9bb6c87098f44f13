// The tile schedulers (sim/plan/tile_scheduler.cpp) and how the driver times them: the dynamic
// LPT grid of the fa3_sm90 schedule (tile_scheduler "dynamic_lpt") against LPT single-tile and
// static persistent grids.
#include <catch2/catch.hpp>

#include "model/json_reader.hpp"
#include "plan/tile_scheduler.hpp"
#include "test_support.hpp"

using namespace attnsim;
using namespace attnsim::test;

namespace {
std::string fa3() { return root() + "/schedules/fa3_sm90.json"; }
Problem causal(int batch, int heads, int seqlen, int head_dim) {
  Problem p;
  p.batch = batch;
  p.heads = p.kv_heads = heads;
  p.seqlen_q = p.seqlen_k = seqlen;
  p.head_dim = p.head_dim_v = head_dim;
  p.causal = true;
  return p;
}
}  // namespace

TEST_CASE("dynamic LPT grid: one CTA per SM and every tile once - longest first", "[tile_scheduler]") {
  const Hardware hw = h100();
  const Problem p = causal(4, 16, 2048, 128);  // 16 m-blocks of 128 rows x 64 heads = 1024 tiles
  TilingSpec spec;
  spec.rows_per_cta = 128;
  spec.n_block = 128;
  spec.ctas_per_sm = 2;  // ignored: a persistent CTA holds its SM
  spec.scheduler = TileScheduler::DynamicLpt;
  spec.l2_section = 0;  // one section: heads fastest over all 64
  const GridPlan g = plan_tiles(hw, p, spec, 1 << 20);
  CHECK(g.mode == GridPlan::Mode::DynamicLpt);
  CHECK(g.resident_ctas == hw.num_sms);
  REQUIRE(g.cta_tiles.size() == 1024);
  int blocks = 0;
  for (size_t i = 0; i < g.cta_tiles.size(); ++i) {
    REQUIRE(g.cta_tiles[i].size() == 1);
    blocks += g.cta_tiles[i][0].n_blocks;
    if (i > 0) CHECK(g.cta_tiles[i][0].n_blocks <= g.cta_tiles[i - 1][0].n_blocks);  // longest first
  }
  CHECK(blocks == 64 * (16 * 17 / 2));  // m-block m visits m + 1 blocks: conservation of work
  spec.scheduler = TileScheduler::Lpt;
  const GridPlan lpt = plan_tiles(hw, p, spec, 1 << 20);
  CHECK(lpt.mode == GridPlan::Mode::LptSingleTile);
  CHECK(lpt.cta_tiles == g.cta_tiles);  // the same tiles in the same order, only fewer CTAs
  CHECK(lpt.resident_ctas == 2 * hw.num_sms);
}

TEST_CASE("longest-first order in L2 sections - m-blocks reversed within each section of heads", "[tile_scheduler]") {
  // K/V of one head at seqlen 2048, hd128, bf16: 2048 x 256 x 2 B = 1 MiB, so 32 MiB hold 32 heads.
  CHECK(attnsim_l2_section_heads(32, 2048, 128, 128, 2, 1, 1) == 32);
  CHECK(attnsim_l2_section_heads(24, 2048, 128, 128, 2, 1, 1) == 16);   // a power of 2 below 24
  CHECK(attnsim_l2_section_heads(32, 2048, 128, 128, 2, 8, 1) == 256);  // GQA 8:1 groups stay whole
  CHECK(attnsim_l2_section_heads(1, 65536, 128, 128, 2, 1, 1) == 1);    // at least one head
  CHECK(attnsim_l2_section_heads(0, 2048, 128, 128, 2, 1, 1) == 0);     // no sections
  const Hardware hw = h100();
  const Problem p = causal(5, 16, 2048, 128);  // 80 heads: sections of 32, 32 and 16; 16 m-blocks
  TilingSpec spec;
  spec.rows_per_cta = 128;
  spec.n_block = 128;
  spec.scheduler = TileScheduler::Lpt;
  spec.ctas_per_sm = 2;
  spec.l2_section = 32;
  const GridPlan g = plan_tiles(hw, p, spec, 1 << 20);
  REQUIRE(g.cta_tiles.size() == 80 * 16);
  // Section k's tiles are consecutive: m-block 15 of its heads, then 14, ...; 16 heads in the last.
  auto m_of = [&](size_t i) { return g.cta_tiles[i][0].m_block; };
  CHECK(m_of(0) == 15);
  CHECK(m_of(31) == 15);
  CHECK(m_of(32) == 14);
  CHECK(m_of(511) == 0);
  CHECK(m_of(512) == 15);  // the second section starts long again
  CHECK(m_of(1024) == 15);
  CHECK(m_of(1024 + 16) == 14);
  long long blocks = 0;
  for (const auto& t : g.cta_tiles) blocks += t[0].n_blocks;
  CHECK(blocks == 80 * (16 * 17 / 2));  // conservation of work
  // The 264 CTAs resident at first (2 per SM) cover 32 heads, 8.25 each; without sections all 80.
  CHECK(g.kv_sharing == Approx(264.0 / 32));
  spec.l2_section = 0;
  CHECK(plan_tiles(hw, p, spec, 1 << 20).kv_sharing == Approx(264.0 / 80));
}

TEST_CASE("fa3_sm90 causal with L2 sections is predicted faster than heads fastest - its K/V come from L2",
          "[tile_scheduler][fa3]") {
  // hd128 s4k b8 causal: 128 heads of 2 MiB K/V; heads fastest, the resident CTAs read 128 heads'
  // K/V at once (about 1 CTA each, so nearly all from HBM); 16 heads per 32 MiB section share theirs.
  const Problem p = causal(8, 16, 4096, 128);
  const Prediction sections = run(fa3(), h100(), p);
  const Prediction heads_fastest = run(fa3(), h100(), p, "no_l2_sections");
  CHECK(sections.cycles < 0.95 * heads_fastest.cycles);
}

TEST_CASE("dynamic LPT with no more tiles than SMs runs each tile on its own CTA - as LPT single-tile does",
          "[tile_scheduler][fa3]") {
  // 2 heads x 16 m-blocks = 32 tiles on 132 SMs: one wave, no CTA takes a second tile, so both
  // grids finish when the longest tile does.
  const Problem p = causal(1, 2, 2048, 128);
  // The committed costs with the dynamic kernels' KV loop as long as the static ones' (their
  // plain_over_static_* left out), so that the grids run the same loop code.
  nlohmann::json doc = load_json_file(test::root() + "/configs/costs/sm90_softmax.json");
  for (auto& pt : doc["loop_control"]["points"])
    pt.erase("plain_over_static_instructions"), pt.erase("plain_over_static_issue_cycles");
  const test::TempCostFile same_loop(doc, "same_loop");
  const std::string costs = "/costs=\"" + same_loop.string() + "\"";
  const Prediction lpt = run(fa3(), h100(), p, "", {"/tile_scheduler=\"lpt\"", costs});
  const Prediction dyn = run(fa3(), h100(), p, "dynamic_lpt", {costs});
  CHECK(dyn.mode == GridPlan::Mode::DynamicLpt);
  CHECK(dyn.critical_tiles == 1);
  // The same schedule; only the tiles' own control code differs (tile_control's head and tail),
  // where a second tile on a CTA would double the time.
  CHECK(dyn.cycles == Approx(lpt.cycles).epsilon(1e-2));
  // With the committed costs the dynamic kernel's KV loop is 17 instructions longer per iteration
  // at hd128 (its plain SASS, loop_control's plain_over_static): the one-tile grid takes longer.
  const Prediction dyn_own = run(fa3(), h100(), p, "dynamic_lpt");
  CHECK(dyn_own.cycles > dyn.cycles);
}

TEST_CASE("dynamic LPT pays a CTA's fixed costs once - not once per tile", "[tile_scheduler][fa3]") {
  // Short causal tiles, 4096 of them: under LPT single-tile every tile pays a CTA launch gap and
  // prologue; the persistent CTAs pay them once each.
  const Problem p = causal(64, 16, 512, 64);
  const Hardware hw = h100();
  REQUIRE(hw.cta_launch_cycles + hw.cta_prologue_cycles > 0);
  const Prediction lpt = run(fa3(), hw, p, "", {"/tile_scheduler=\"lpt\""});
  const Prediction dyn = run(fa3(), hw, p, "dynamic_lpt");
  CHECK(dyn.critical_tiles > 1);
  CHECK(dyn.cycles < lpt.cycles);
  // Deterministic: the same plan and the same simulated CTAs every time.
  CHECK(run(fa3(), hw, p, "dynamic_lpt").cycles == dyn.cycles);
}

TEST_CASE("dynamic LPT assignment: a CTA that asks for its next tile as it starts one is bound a tile ahead",
          "[tile_scheduler]") {
  // Two CTAs, tiles of 4, 1, 4 and 1 blocks at 1 cycle per block, in that order.
  const std::vector<double> cost = {4, 1, 4, 1};
  const std::vector<int> blocks = {4, 1, 4, 1};
  std::vector<double> done;
  // Asking when done (lead 0) or with one block left: CTA 1, done with tile 1 at 1, takes tile 2
  // (done at 5); CTA 0 asks at 4 (or 3) and takes tile 3: both done at 5.
  for (int lead : {0, 1}) {
    const auto lists = assign_dynamic_tiles(cost, blocks, 2, lead, 0, &done);
    CHECK(lists == std::vector<std::vector<size_t>>{{0, 3}, {1, 2}});
    CHECK(done == std::vector<double>{5, 5});
  }
  // Asking at a tile's start (lead >= its blocks): both ask at 0, CTA 0 first, and it is bound to
  // the second long tile while it runs the first: done at 8 and 2.
  const auto ahead = assign_dynamic_tiles(cost, blocks, 2, 4, 0, &done);
  CHECK(ahead == std::vector<std::vector<size_t>>{{0, 2}, {1, 3}});
  CHECK(done == std::vector<double>{8, 2});
  // A start offset shifts every time alike.
  assign_dynamic_tiles(cost, blocks, 2, 0, 10, &done);
  CHECK(done == std::vector<double>{15, 15});
  CHECK_THROWS_AS(assign_dynamic_tiles(cost, {4, 1}, 2, 0, 0), std::invalid_argument);
  CHECK_THROWS_AS(assign_dynamic_tiles(cost, blocks, 0, 0, 0), std::invalid_argument);
}

TEST_CASE(
    "fa3_sm90 dynamic grid takes the next tile kv_stage + 3 blocks before the end of a tile - as the load warp does",
    "[tile_scheduler][fa3]") {
  const Hardware hw = h100();
  const Problem p = causal(4, 16, 2048, 128);
  const auto s = load_schedule(fa3());
  const GridPlan g = s->plan_grid(hw, p, 1 << 20);
  REQUIRE(g.mode == GridPlan::Mode::DynamicLpt);
  CHECK(g.next_tile_lead_blocks == 5);  // blocks 2, 1, 0 and kv_stage 2 (schedules/fa3_sm90.json)
  Problem nc = p;
  nc.causal = false;  // static persistent: tiles are not asked for
  CHECK(s->plan_grid(hw, nc, 1 << 20).next_tile_lead_blocks == 0);
}
