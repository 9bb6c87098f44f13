// The tile schedulers (sim/plan/tile_scheduler.cpp) and how the driver times them: the dynamic
// LPT grid of the fa3_sm90 schedule (tile_scheduler "dynamic_lpt") against LPT single-tile and
// static persistent grids.
#include <catch2/catch.hpp>

#include "plan/tile_scheduler.hpp"
#include "test_support.hpp"

using namespace attnsim;
using namespace attnsim::test;

namespace {
Hardware h100() { return load_hardware(root() + "/configs/hw/h100_sxm.json"); }
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

TEST_CASE("dynamic LPT with no more tiles than SMs runs each tile on its own CTA - as LPT single-tile does",
          "[tile_scheduler][fa3]") {
  // 2 heads x 16 m-blocks = 32 tiles on 132 SMs: one wave, no CTA takes a second tile, so both
  // grids finish when the longest tile does.
  const Problem p = causal(1, 2, 2048, 128);
  const Prediction lpt = run(fa3(), h100(), p, "", {"/tile_scheduler=\"lpt\""});
  const Prediction dyn = run(fa3(), h100(), p, "dynamic_lpt");
  CHECK(dyn.mode == GridPlan::Mode::DynamicLpt);
  CHECK(dyn.critical_tiles == 1);
  // The same schedule; only the dynamic kernel's own loop code differs (configs/costs/
  // sm90_softmax.json loop_control: 111 against 110 cycles of static issue per KV iteration at
  // hd128, 16 iterations in the longest tile), where a second tile on a CTA would double the time.
  CHECK(dyn.cycles == Approx(lpt.cycles).epsilon(1e-3));
  CHECK(dyn.cycles >= lpt.cycles);
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
