// The host side of the SM100 kernel's portable pieces (kernels/sm100/tile_scheduler.h,
// online_softmax.h) and of the schedule -> kernel mapping (Fa4Schedule::real_kernel): the tile
// order against the simulator's grid plan, the conditional rescale against always rescaling,
// and which knobs (and refusals) schedules/fa4_sm100.json resolves to. Runs without a GPU; the
// same headers run on a GPU in tests/gpu/sm100_portable_gpu.cu.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "lower/fa4/fa4_schedule.hpp"
#include "plan/tile_scheduler.hpp"
#include "sm100/online_softmax.h"
#include "sm100/structure.h"
#include "sm100/tile_scheduler.h"
#include "test_support.hpp"

using namespace attnsim;

namespace {
Problem problem(int b, int h, int sq, int sk, int hd, bool causal) {
  Problem p;
  p.batch = b, p.heads = p.kv_heads = h, p.seqlen_q = sq, p.seqlen_k = sk, p.head_dim = p.head_dim_v = hd;
  p.causal = causal;
  return p;
}
}  // namespace

TEST_CASE("sm100 tile scheduler walks the simulator's tiles cluster by cluster", "[sm100]") {
  Hardware hw = test::b200();
  hw.num_sms = 7;  // small, so that persistent clusters take several tiles (3 pairs with cta_group 2)
  int compared = 0;
  for (int cta_group : {1, 2})
    for (bool causal : {false, true})
      for (int q_stage : {1, 2})
        for (const auto& [b, h, sq, sk] :
             std::vector<std::array<int, 4>>{{1, 1, 1, 1}, {2, 3, 333, 411}, {1, 2, 1000, 77}, {2, 2, 2100, 2100}}) {
          const Problem p = problem(b, h, sq, sk, 128, causal);
          TilingSpec spec;
          spec.rows_per_cta = q_stage * sm100::kMBlock;
          spec.n_block = sm100::kNBlock;
          spec.cta_group = cta_group;
          // FA4: static persistent unless causal
          spec.scheduler = causal ? TileScheduler::Lpt : TileScheduler::StaticPersistent;
          const GridPlan plan = plan_tiles(hw, p, spec, 1 << 20);
          const sm100::TileSpace ts{b,      h,       sq,       sk, q_stage * cta_group * sm100::kMBlock, sm100::kNBlock,
                                    causal, !causal, cta_group};
          INFO("cta_group " << cta_group << " causal " << causal << " q_stage " << q_stage << " b" << b << " h" << h
                            << " sq" << sq << " sk" << sk);
          REQUIRE(ts.num_tiles() == plan.tiles);
          const long long clusters = ts.clusters(hw.num_sms);
          REQUIRE(clusters == static_cast<long long>(plan.cta_tiles.size()));
          REQUIRE(ts.grid(hw.num_sms) == cta_group * clusters);
          if (!causal) REQUIRE(ts.grid(hw.num_sms) == plan.resident_ctas);  // persistent: every CTA resident
          for (long long cl = 0; cl < clusters; ++cl) {
            std::vector<TileWork> walk;
            for (long long t = sm100::first_tile(ts, cl); t < ts.num_tiles(); t = sm100::next_tile(ts, t, clusters)) {
              const sm100::TileCoord c = sm100::tile_at(ts, t);
              TileWork w;
              w.m_block = c.m;
              w.rows = std::min(ts.rows_per_tile, sq - c.m * ts.rows_per_tile);
              w.n_blocks = c.n_blocks;
              w.masked_blocks = c.n_blocks - c.first_masked;
              walk.push_back(w);
            }
            REQUIRE(walk == plan.cta_tiles[cl]);
            ++compared;
          }
        }
  CHECK(compared > 100);
}

TEST_CASE("sm100 rows of a cluster's work tile: each Q stage's 256-row MMA takes the leader's rows first", "[sm100]") {
  // cta_group 2, q_stage 2: a tile is 512 rows; stage q of rank r starts at 256 q + 128 r.
  CHECK(sm100::q_row0(0, 0, 0, 2, 2) == 0);
  CHECK(sm100::q_row0(0, 0, 1, 2, 2) == 128);
  CHECK(sm100::q_row0(0, 1, 0, 2, 2) == 256);
  CHECK(sm100::q_row0(0, 1, 1, 2, 2) == 384);
  CHECK(sm100::q_row0(3, 1, 1, 2, 2) == 3 * 512 + 384);
  CHECK(sm100::q_row0(3, 1, 0, 2, 1) == 3 * 256 + 128);  // cta_group 1: stage q at 128 q
  // Every row of a tile belongs to exactly one (stage, rank).
  for (int cg : {1, 2})
    for (int qs : {1, 2}) {
      std::vector<int> seen(qs * cg * 128 * 2, 0);
      for (int m = 0; m < 2; ++m)
        for (int q = 0; q < qs; ++q)
          for (int r = 0; r < cg; ++r)
            for (int row = 0; row < 128; ++row) ++seen.at(sm100::q_row0(m, q, r, qs, cg) + row);
      CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(seen.size()));
    }
}

TEST_CASE("sm100 tile scheduler: persistent order is m-block fastest then head then batch", "[sm100]") {
  const sm100::TileSpace ts{2, 3, 600, 600, 256, 128, false, true};  // 3 m-tiles
  REQUIRE(ts.m_tiles() == 3);
  const sm100::TileCoord c = sm100::tile_at(ts, 3 * 3 + 3 + 2);  // batch 1, head 1, m 2
  CHECK(c.m == 2);
  CHECK(c.head == 1);
  CHECK(c.batch == 1);
  CHECK(ts.grid(148) == 18);
  CHECK(sm100::next_tile(ts, 5, 4) == 9);
  const sm100::TileSpace lpt{2, 3, 600, 600, 256, 128, true, false};
  CHECK(sm100::tile_at(lpt, 0).m == 2);  // longest first: the last m-block (most KV blocks) first
  CHECK(sm100::next_tile(lpt, 0, 18) == lpt.num_tiles());
}

namespace {
/// Online softmax of rows of random scores over `blocks` KV blocks of 128 (the kernel's order:
/// blocks in descending order, P formed against the kept max), O = P V with V[key] = cos(key);
/// returns O / row_sum per row and counts the rescales.
std::vector<double> online_rows(const std::vector<float>& s2, int rows, int keys, bool conditional, float threshold,
                                int* rescales) {
  std::vector<double> out(rows);
  for (int r = 0; r < rows; ++r) {
    sm100::RowStats st;
    double o = 0;
    for (int j = keys / 128 - 1; j >= 0; --j) {
      float mx = -INFINITY;
      for (int e = 0; e < 128; ++e) mx = std::max(mx, s2[r * keys + j * 128 + e]);
      const float acc = sm100::update_row_max(st, mx, conditional, threshold);
      if (acc != 1.0f) ++*rescales;
      o *= acc;
      float sum = 0;
      for (int e = 0; e < 128; ++e) {
        const int key = j * 128 + e;
        const float p = sm100::exp2_either(s2[r * keys + key] - sm100::exp2_offset(st),
                                           sm100::element_emulated(e, 4, 16, 4, 1));
        REQUIRE(p <= std::exp2(threshold) * 1.0001f);  // P stays within 2^threshold of the kept max
        sum += p;
        o += round_to_bf16(p) * std::cos(static_cast<double>(key));
      }
      st.sum = st.sum * acc + sum;
    }
    out[r] = o * sm100::final_scale(st);
  }
  return out;
}
}  // namespace

TEST_CASE("sm100 conditional rescale gives O of always rescaling with fewer rescales", "[sm100]") {
  const int rows = 64, keys = 1024;
  std::mt19937 rng(7);
  std::normal_distribution<float> n01(0.f, 1.f);
  std::vector<float> s2(rows * keys);
  // Scores that grow with the key index: blocks are visited in descending order, so the max
  // grows rarely; half the rows get a large jump in the last-visited block (forces a rescale).
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < keys; ++k) s2[r * keys + k] = 3.0f * n01(rng) + (r % 2 && k < 128 ? 20.0f : 0.0f);
  int cond = 0, always = 0;
  const std::vector<double> a = online_rows(s2, rows, keys, true, 8.0f, &cond);
  const std::vector<double> b = online_rows(s2, rows, keys, false, 0.0f, &always);
  for (int r = 0; r < rows; ++r) {
    // Reference in double: softmax(s2 in log2 units) . cos(key).
    double m = -INFINITY, num = 0, den = 0;
    for (int k = 0; k < keys; ++k) m = std::max<double>(m, s2[r * keys + k]);
    for (int k = 0; k < keys; ++k) {
      const double p = std::exp2(s2[r * keys + k] - m);
      num += p * std::cos(static_cast<double>(k));
      den += p;
    }
    INFO("row " << r);
    CHECK(a[r] == Approx(num / den).margin(0.01));
    CHECK(b[r] == Approx(num / den).margin(0.01));
  }
  CHECK(cond >= rows / 2);  // the jump rows rescale
  CHECK(cond < always);     // and the small growths do not
}

TEST_CASE("sm100 update_row_max: threshold and first block and unconditional", "[sm100]") {
  sm100::RowStats st;
  CHECK(sm100::update_row_max(st, -INFINITY, true, 8) == 1.0f);  // nothing seen yet
  CHECK(sm100::exp2_offset(st) == 0.0f);
  CHECK(sm100::update_row_max(st, 3.0f, true, 8) == 1.0f);  // the first finite max is taken as is
  CHECK(st.max2 == 3.0f);
  CHECK(sm100::update_row_max(st, 10.5f, true, 8) == 1.0f);  // grows by 7.5 <= 8: kept
  CHECK(st.max2 == 3.0f);
  CHECK(sm100::update_row_max(st, 12.0f, true, 8) == Approx(std::exp2(-9.0f)));  // grows by 9 > 8: rescaled
  CHECK(st.max2 == 12.0f);
  CHECK(sm100::update_row_max(st, 12.5f, false, 0) == Approx(std::exp2(-0.5f)));  // always follows
  CHECK(sm100::update_row_max(st, 1.0f, false, 0) == 1.0f);  // no growth, no rescale
  CHECK(sm100::row_lse(sm100::RowStats{}) == -INFINITY);
  CHECK(sm100::final_scale(sm100::RowStats{}) == 0.0f);
}

TEST_CASE("sm100 exp2 split matches the FA4 table", "[sm100]") {
  auto share = [](int freq, int res, int frg) {
    int n = 0;
    for (int e = 0; e < 128; ++e) n += sm100::element_emulated(e, 4, freq, res, frg);
    return n / 128.0;
  };
  CHECK(share(16, 4, 1) == Approx(0.125));
  CHECK(share(10, 4, 1) == Approx(0.1875));
  CHECK(share(16, 4, 0) == Approx(0.1875));
  CHECK(share(0, 0, 0) == 0.0);
  for (int e = 96; e < 128; ++e) CHECK_FALSE(sm100::element_emulated(e, 4, 16, 4, 0));  // last fragment: MUFU
}

TEST_CASE("fa4_sm100 schedules resolve to kernels/sm100 knobs or say why not", "[sm100]") {
  const Hardware hw = test::b200();
  const auto base = load_schedule(test::fa4());
  // Non-causal hd128 long sequences: FA4's 2-CTA MMA, its register split and exp2 emulation
  // (10/4/1), six K/V stages of half a block each, a persistent grid of clusters.
  const KernelChoice nc = base->real_kernel(hw, problem(4, 16, 8192, 8192, 128, false));
  REQUIRE(nc.supported);
  CHECK(nc.scheduler == TileScheduler::StaticPersistent);
  const auto k2 = std::get<sm100::KernelKnobs>(nc.knobs);
  CHECK(k2.cta_group == 2);
  CHECK(k2.kv_stage == 6);
  CHECK(k2.reg_softmax == 176);
  CHECK(k2.reg_correction == 88);
  CHECK(k2.reg_other == 72);
  CHECK(k2.emu_freq == 10);
  // 2-CTA below head_dim 128 is refused with the reason (V's half would be 32 columns).
  const auto cg2 = load_schedule(test::fa4(), {"/cta_group=2"});
  CHECK_THAT(cg2->real_kernel(hw, problem(1, 1, 8192, 8192, 64, false)).why_not,
             Catch::Contains("cta_group 2") && Catch::Contains("head_dim 128 only"));
  // Causal hd128: 1-CTA, FA4's causal register split and exp2 emulation (16/4/1), LPT grid.
  const KernelChoice c = base->real_kernel(hw, problem(4, 16, 8192, 8192, 128, true));
  REQUIRE(c.supported);
  CHECK(c.scheduler == TileScheduler::Lpt);
  const auto k = std::get<sm100::KernelKnobs>(c.knobs);
  CHECK(k.kv_stage == 3);
  CHECK(k.reg_softmax == 192);
  CHECK(k.reg_correction == 72);
  CHECK(k.reg_other == 56);
  CHECK(k.emu_freq == 16);
  CHECK(k.emu_res == 4);
  CHECK(k.emu_start_frg == 1);
  CHECK(k.split_columns == 96);
  CHECK(k.rescale_threshold_milli == 8000);
  CHECK(k.tmem_p1 == 192);
  CHECK(k.tmem_o1 == 384);
  CHECK(k.tmem_alloc == 512);
  CHECK(kernel_family(c.knobs) == "fa4_sm100");
  CHECK(kernel_arch(c.knobs) == "sm_100a");
  // hd64: ten K/V stages (FA4's formula), no emulation.
  const auto k64 = std::get<sm100::KernelKnobs>(base->real_kernel(hw, problem(1, 1, 8192, 8192, 64, false)).knobs);
  CHECK(k64.kv_stage == 10);
  CHECK(k64.emu_freq == 0);
  // Variants change the knobs they name.
  const auto ns = std::get<sm100::KernelKnobs>(
      load_schedule(test::fa4(), {}, "no_split_p")->real_kernel(hw, problem(1, 1, 8192, 8192, 128, true)).knobs);
  CHECK(ns.split_columns == 128);
  const auto un = std::get<sm100::KernelKnobs>(
      load_schedule(test::fa4(), {}, "unconditional_rescale")->real_kernel(hw, problem(1, 1, 8192, 8192, 128, true)).knobs);
  CHECK_FALSE(un.conditional_rescale);
  CHECK(load_schedule(test::fa4(), {}, "one_cta")->real_kernel(hw, problem(1, 1, 8192, 8192, 128, false)).supported);
  // Unsupported: head_dim 96, and warp roles other than FA4's layout.
  CHECK_THAT(base->real_kernel(hw, problem(1, 1, 512, 512, 96, true)).why_not, Catch::Contains("head_dim 96"));
  const auto swapped = load_schedule(test::fa4(), {"/warps/load/ids=[13]", "/warps/epilogue/ids=[14]"});
  CHECK_THAT(swapped->real_kernel(hw, problem(1, 1, 512, 512, 128, true)).why_not,
             Catch::Contains("warp 14 is epilogue here but load in kernels/sm100"));
}

TEST_CASE("sm100 SMEM layout equals the simulator's SMEM figure and fits its barrier region", "[sm100]") {
  const Hardware hw = test::b200();
  for (int cta_group : {1, 2})
    for (int hd : {64, 128})
      for (int q_stage : {1, 2}) {
        if (cta_group == 2 && hd != 128) continue;  // refused (test above)
        const auto s =
            load_schedule(test::fa4(), {fmt::format("/q_stage={}", q_stage), fmt::format("/cta_group={}", cta_group)});
        const Problem p = problem(1, 1, 4096, 4096, hd, cta_group == 1);
        const KernelChoice c = s->real_kernel(hw, p);
        REQUIRE(c.supported);
        const auto k = std::get<sm100::KernelKnobs>(c.knobs);
        const sm100::SmemLayout l = sm100::smem_layout(hd, k.q_stage, k.kv_stage, k.cta_group);
        INFO("cta_group " << cta_group << " hd " << hd << " q_stage " << q_stage);
        // 2-CTA: a K/V stage holds half a block (64 keys of K, or 64 of V's columns).
        CHECK(l.kv_tile == 128 / cta_group * hd * 2);
        CHECK(l.bytes == static_cast<long long>(s->resources(hw, p).at("smem_bytes")));
        CHECK(l.barrier_used <= sm100::kBarrierRegionBytes);
        CHECK(l.bytes <= hw.smem_bytes_per_block);
      }
}

TEST_CASE("sm100 mbarrier counts equal the simulator's fa4 pipeline counts for the kernel's warp layout", "[sm100]") {
  // The kernel's warps by role (structure.h), as the simulator's RoleDecl map.
  std::map<std::string, RoleDecl> roles;
  std::map<std::string, fa4::RoleId> ids;
  for (int w = 0; w < sm100::kWarps; ++w) {
    const std::string name = sm100::warp_role_name(w);
    roles[name].warps.push_back(w);
    ids[name] = *fa4::parse_role(name);
    roles[name].q_stage = ids[name].role == fa4::Role::Softmax ? ids[name].stage : -1;
  }
  for (bool correction : {true, false}) {
    const auto pipes = fa4::derived_pipelines(roles, ids, correction);
    auto full = [&](const char* p, int s) { return arrivals_at_stage(pipes.at(p), pipes.at(p).full, s, roles); };
    auto empty = [&](const char* p, int s) { return arrivals_at_stage(pipes.at(p), pipes.at(p).empty, s, roles); };
    for (int s = 0; s < 2; ++s) {
      INFO("correction warpgroup " << correction << " stage " << s);
      CHECK(full("pipeline_q", s) == sm100::kTmaArrivals);
      CHECK(empty("pipeline_q", s) == sm100::kCommitArrivals);
      CHECK(full("pipeline_kv", s) == sm100::kTmaArrivals);
      CHECK(empty("pipeline_kv", s) == sm100::kCommitArrivals);
      CHECK(full("pipeline_s_p_o", s) == sm100::kCommitArrivals);
      CHECK(empty("pipeline_s_p_o", s) == sm100::s_p_o_empty_arrivals(correction));
      CHECK(full("pipeline_p_lastsplit", s) == sm100::lastsplit_arrivals());
      CHECK(full("pipeline_o_acc", s) == sm100::kCommitArrivals);
      CHECK(empty("pipeline_o_acc", s) == sm100::o_acc_empty_arrivals());
      CHECK(full("pipeline_o_epi", s) == sm100::kOOwnerArrivals);
      CHECK(empty("pipeline_o_epi", s) == sm100::kEpilogueArrivals);
      if (correction) CHECK(empty("pipeline_sm_stats", s) == sm100::kSmStatsArrivals);
    }
  }
}

TEST_CASE("sm100 mbarrier counts equal the lowered CTA's barriers with 2-CTA clusters too", "[sm100]") {
  // With cta_group 2 the barriers the leader's MMA thread waits on count both CTAs' arrivals; the
  // simulator's lowering declares the same counts (Pipe: cluster-scoped sides, leader-only MMA).
  const Hardware hw = test::b200();
  const Problem p = problem(1, 1, 1024, 1024, 128, false);
  for (int cg : {1, 2})
    for (bool correction : {true, false}) {
      auto s = load_schedule(test::fa4(), {fmt::format("/cta_group={}", cg),
                                           fmt::format("/correction_warpgroup={}", correction ? "true" : "false")});
      s->check(hw, p);
      const CtaProgram prog = s->lower(hw, p, {TileWork{0, 128, 2, 0}});
      std::map<std::string, int> expected;
      for (const BarrierDecl& b : prog.barriers) expected[b.name] = b.expected;
      INFO("cta_group " << cg << " correction warpgroup " << correction);
      for (int q = 0; q < 2; ++q) {
        auto at = [&](const std::string& name) { return expected.at(fmt::format("{}[{}]", name, q)); };
        CHECK(at("pipeline_q.full") == sm100::kTmaArrivals);
        CHECK(at("pipeline_q.empty") == sm100::kCommitArrivals);
        CHECK(at("pipeline_s_p_o.full") == sm100::kCommitArrivals);
        CHECK(at("pipeline_s_p_o.empty") == sm100::s_p_o_empty_arrivals(correction, cg));
        CHECK(at("pipeline_p_lastsplit.full") == sm100::lastsplit_arrivals(cg));
        CHECK(at("pipeline_o_acc.full") == sm100::kCommitArrivals);
        CHECK(at("pipeline_o_acc.empty") == sm100::o_acc_empty_arrivals(cg));
        CHECK(at("pipeline_o_epi.full") == sm100::kOOwnerArrivals);
        CHECK(at("pipeline_o_epi.empty") == sm100::kEpilogueArrivals);
      }
      CHECK(expected.at("pipeline_kv.full[0]") == sm100::kTmaArrivals);
      CHECK(expected.at("pipeline_kv.empty[0]") == sm100::kCommitArrivals);
    }
}
