// SM90 semantics and the bundled schedules on H100: wgmma.wait_group, cp.async, per-tile
// budgets computed by hand, and the FA3 design choices.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "lower/builder.hpp"
#include "lower/costs.hpp"
#include "lower/issue_timing.hpp"
#include "model/json_reader.hpp"
#include "test_support.hpp"

using namespace attnsim;

namespace {
using test::h100;
std::string schedule(const std::string& name) { return test::root() + "/schedules/" + name + ".json"; }
double warp_end(const SimResult& r, int warp) {
  for (size_t i = 0; i < r.timeline.warps.size(); ++i)
    if (r.timeline.warps[i].warp == warp) return r.warps[i].end;
  return -1;
}
/// Sums over one CTA's programs for a single tile of `blocks` KV blocks.
struct Budget {
  double tensor_flops = 0, mma_sync_flops = 0, fma_lanes = 0, mufu_lanes = 0;
};
Budget budget(const Schedule& s, const Hardware& hw, const Problem& p, int blocks) {
  Budget b;
  for (const auto& w : s.lower(hw, p, {TileWork{0, 128, blocks, 0}}).warps)
    for (const auto& op : w.ops) {
      if (op.kind == OpKind::Mma) b.tensor_flops += op.flops;
      if (!op.compute) continue;
      b.mma_sync_flops += op.compute->work.mma_sync_flops;
      if (op.name == ATTNSIM_OP_MMA_QK || op.name == ATTNSIM_OP_MMA_PV) b.fma_lanes += op.compute->work.fma_lanes;
      if (op.name == ATTNSIM_OP_SOFTMAX_EXP) b.mufu_lanes += op.compute->work.mufu_lanes;
    }
  return b;
}
Problem shape(int hd, int seqlen, int batch = 1) {
  Problem p = test::default_problem();
  p.head_dim = p.head_dim_v = hd;
  p.seqlen_q = p.seqlen_k = seqlen;
  p.batch = batch;
  return p;
}
}  // namespace

TEST_CASE("wgmma.wait_group and cp.async.wait_group wait for their own groups", "[hopper][engine]") {
  const Hardware hw = h100();
  const auto s = load_schedule(test::micro("wgmma_wait.json"));
  const SimResult r = simulate_cta(hw, s->lower(hw, Problem{}, {TileWork{}}));
  // One warp's MMA runs on its SMSP's tensor core: a quarter of the SM's rate (2048 cycles).
  const double mma = 2097152 / (hw.tensor_flops_per_clk / hw.smsp_per_sm);
  // wait_group(1) returns when the first group completes, the FMA block runs 100 cycles, then
  // wait_group(0) needs the second group (which ended a further 512 cycles after the first).
  CHECK(warp_end(r, 0) == Approx(std::max(mma + hw.mma_latency + 100, 2 * mma + hw.mma_latency)));
  const double copy = 16384 / std::min(hw.tma_bytes_per_clk_sm, hw.l2_bytes_per_clk);
  CHECK(warp_end(r, 1) == Approx(copy + hw.tma_latency));
}

TEST_CASE("a CTA's compute ops share their blocks - the distinct blocks do not grow with the KV loop", "[hopper]") {
  const Hardware hw = h100();
  const auto s = load_schedule(schedule("fa3_sm90"));
  const Problem p = shape(128, 8448);
  auto lowered = [&](int blocks) { return s->lower(hw, p, {TileWork{0, 128, blocks, 0}}); };
  const CtaProgram short_tile = lowered(4), long_tile = lowered(64);
  auto compute_ops = [](const CtaProgram& prog) {
    size_t n = 0;
    for (const auto& w : prog.warps)
      for (const auto& op : w.ops)
        if (op.kind == OpKind::Compute) {
          ++n;
          bool owned = false;
          for (const auto& b : prog.compute_blocks) owned |= b.get() == op.compute;
          CHECK(owned);
        }
    return n;
  };
  CHECK(compute_ops(long_tile) > 5 * compute_ops(short_tile));
  CHECK(long_tile.compute_blocks.size() == short_tile.compute_blocks.size());
  CHECK(short_tile.compute_blocks.size() < 32);
  // A merged program keeps every CTA's blocks alive.
  const CtaProgram merged = merge_ctas({short_tile, long_tile});
  CHECK(merged.compute_blocks.size() == 2 * short_tile.compute_blocks.size());
}

TEST_CASE("FA3 hd128 128x128 tile: QK and PV wgmma are 4*128^3 FLOP = 2048 tensor-core cycles per KV block",
          "[hopper][budget]") {
  const Hardware hw = h100();
  const auto s = load_schedule(schedule("fa3_sm90"));
  const Problem p = shape(128, 8448);
  const Budget one = budget(*s, hw, p, 1), two = budget(*s, hw, p, 2);
  // Hand computation at the published rates (4096 FLOP/clk, 16 ex2/clk per SM).
  CHECK(two.tensor_flops - one.tensor_flops == Approx(4.0 * 128 * 128 * 128));
  CHECK((two.tensor_flops - one.tensor_flops) / 4096 == Approx(2048));
  // exp: 128 x 128 ex2 per block at 16 per clock = 1024 MUFU cycles, half the MMA time (FA3 paper
  // 3.1), plus the rescale factor exp2(m_old - m_new): 128 rows, computed by each of the row's 4
  // quad threads = 512 more ex2 = 32 cycles.
  CHECK((two.mufu_lanes - one.mufu_lanes) / 16 == Approx(1024 + 32));
  // The engine spends exactly that on the tensor core at the config's (measured) rate.
  const SimResult r = simulate_cta(hw, s->lower(hw, p, {TileWork{0, 128, 2, 0}}));
  CHECK(r.units.tensor_busy == Approx(2 * 4.0 * 128 * 128 * 128 / hw.tensor_flops_per_clk));
}

TEST_CASE("BlackFlash 64x64x64 blocks: 4*64^3 FLOP of mma.sync per block", "[hopper][budget]") {
  const Hardware hw = h100();
  const auto s = load_schedule(schedule("blackflash"));
  const Problem p = shape(64, 4096);
  const Budget one = budget(*s, hw, p, 1), two = budget(*s, hw, p, 2);
  CHECK(two.mma_sync_flops - one.mma_sync_flops == Approx(4.0 * 64 * 64 * 64));
  // 8 consumer warps, 2 per SMSP: each SMSP's share of mma.sync does 2 x 2 x 16x32x64 x 2 FLOP per block.
  const double per_smsp_cycles = 2 * (2 * 2.0 * 16 * 32 * 64) / (hw.mma_sync_flops_per_clk / 4);
  CHECK((two.mma_sync_flops - one.mma_sync_flops) / hw.mma_sync_flops_per_clk == Approx(per_smsp_cycles));
}

TEST_CASE("FA2-style on the CUDA cores: Br x Bc x d multiply-adds twice per block with one FFMA each",
          "[hopper][budget]") {
  const Hardware hw = h100();
  const Problem p = shape(64, 4096);
  // Priced by instruction counts (the schedule without its SASS issue timing): one FFMA per multiply-add.
  nlohmann::json doc = load_json_file(schedule("fa2_sm80"));
  doc.erase("issue_timing");
  const auto counted = parse_schedule(doc, schedule("fa2_sm80"));
  CHECK(budget(*counted, hw, p, 2).fma_lanes - budget(*counted, hw, p, 1).fma_lanes ==
        Approx(2.0 * 64 * 64 * 64));  // Br = Bc = 64 at d = 64
  // Timed from the kernel's SASS: each warp's GEMM spans hold its 2 x 16 x 64 x 64 / 32 FFMAs per lane and the
  // integer multiply-adds of its addressing, all on the FMA pipe; the four warps of the CTA together.
  const auto timed = load_schedule(schedule("fa2_sm80"));
  const KernelIssue* k = IssueTimings::load(test::root() + "/configs/costs/fa2_sm80_issue.json").find(64, 64, 64);
  REQUIRE(k);
  const double gemm_ffma = k->blocks.at("mma_qk").ffma + k->blocks.at("mma_pv").ffma;
  CHECK(gemm_ffma >= 2 * 16 * 64 * 64 / 32);
  CHECK(budget(*timed, hw, p, 2).fma_lanes - budget(*timed, hw, p, 1).fma_lanes == Approx(4 * 32 * gemm_ffma));
}

TEST_CASE("every bundled schedule simulates on H100", "[hopper]") {
  const Hardware hw = h100();
  PredictOptions fast;
  fast.record_spans = false;
  fast.extrapolate = true;
  struct Case {
    std::string schedule;
    int hd;
    bool causal;
  };
  for (const Case& c : {Case{"fa3_sm90", 64, false}, Case{"fa3_sm90", 128, true}, Case{"fa3_sm90", 256, false},
                        Case{"fa2_sm80", 128, false}, Case{"blackflash", 64, true}}) {
    Problem p = shape(c.hd, 4096, 2);
    p.causal = c.causal;
    INFO(c.schedule << " " << p.describe());
    const Prediction r = predict(*load_schedule(schedule(c.schedule)), hw, p, fast);
    CHECK(r.tflops > 1);
    CHECK(r.tflops < 989);  // never above the dense bf16 peak
  }
}

TEST_CASE("FA3 intra-warpgroup overlap and warp specialization pay off on H100 at hd128 seqlen 8448", "[hopper][fa3]") {
  const Hardware hw = h100();
  const Problem p = shape(128, 8448, 1);
  PredictOptions fast;
  fast.record_spans = false;
  fast.extrapolate = true;
  const double base = predict(*load_schedule(schedule("fa3_sm90")), hw, p, fast).time_us;
  for (const char* v : {"no_intra_warpgroup_overlap", "no_warp_specialization"}) {
    INFO(v);
    CHECK(predict(*load_schedule(schedule("fa3_sm90"), {}, v), hw, p, fast).time_us > 1.03 * base);
  }
}

TEST_CASE("FA3 pingpong makes the two consumer warpgroups take turns on the tensor cores", "[hopper][fa3]") {
  // The mechanism, checked on the unit's own timeline: with pingpong each warpgroup's QK
  // wgmmas of one warpgroup enter the tensor cores as one turn, turns alternating between the groups.
  const Hardware hw = h100();
  const Problem p = shape(128, 2048, 1);
  auto turns = [&](const std::string& variant) {
    const auto s = load_schedule(schedule("fa3_sm90"), {}, variant);
    const SimResult r = simulate_cta(hw, s->lower(hw, p, {TileWork{0, 128, 8, 0}}));
    std::vector<int> groups;  // warpgroup of each QK span in tensor-core order
    for (const auto& u : r.timeline.units)
      if (u.name == "tensor_core")
        for (const auto& sp : u.spans)
          if (sp.op == ATTNSIM_OP_MMA_QK) groups.push_back(sp.stage);
    int switches = 0;
    for (size_t i = 1; i < groups.size(); ++i) switches += groups[i] != groups[i - 1];
    return std::pair{groups.size(), switches};
  };
  const auto [n, alternations] = turns("");
  REQUIRE(n == 2 * 8);               // SMSP 0's tensor core (the track): 2 warpgroups x 8 blocks
  CHECK(alternations == 2 * 8 - 1);  // strictly alternating
}

TEST_CASE("FA3 pingpong over three consumer warpgroups passes the turn round robin", "[hopper][fa3]") {
  // m_block 192 (three warpgroups, head_dim 64): warpgroup g takes its turn after g - 1, so the
  // QK turns on the tensor cores run 0, 1, 2, 0, 1, 2, ...; without pingpong nothing orders them.
  const Hardware hw = h100();
  const Problem p = shape(64, 2048, 1);
  auto order = [&](bool pingpong) {
    const auto s = load_schedule(schedule("fa3_sm90"), {"/tile={\"m_block\":192,\"n_block\":128}",
                                                        pingpong ? "/pingpong=true" : "/pingpong=false"});
    const SimResult r = simulate_cta(hw, s->lower(hw, p, {TileWork{0, 192, 8, 0}}));
    std::vector<int> groups;  // warpgroup of each run of QK spans in tensor-core order
    for (const auto& u : r.timeline.units)
      if (u.name == "tensor_core")
        for (const auto& sp : u.spans)
          if (sp.op == ATTNSIM_OP_MMA_QK && (groups.empty() || groups.back() != sp.stage)) groups.push_back(sp.stage);
    return groups;
  };
  const std::vector<int> rr = order(true);
  REQUIRE(rr.size() == 3 * 8);  // 3 warpgroups x 8 blocks, each QK one turn
  for (size_t i = 0; i < rr.size(); ++i) CHECK(rr[i] == static_cast<int>(i % 3));
  CHECK(order(false) != rr);  // the QKs of different warpgroups interleave
}

TEST_CASE("Hopper schedules refuse what they cannot run", "[hopper][inputs]") {
  const Hardware b200 = test::b200(), hw = h100();
  CHECK_THROWS_WITH(load_schedule(schedule("fa3_sm90"))->check(b200, shape(128, 1024)), Catch::Contains("wgmma"));
  CHECK_THROWS_WITH(load_schedule(schedule("blackflash"))->check(hw, shape(128, 1024)), Catch::Contains("head_dim 64"));
  CHECK_THROWS_WITH(load_schedule(schedule("fa3_sm90"), {"/pingpong=true", "/tile={\"m_block\":64,\"n_block\":128}"})
                        ->check(hw, shape(64, 1024)),
                    Catch::Contains("pingpong passes the GEMM turn between two or three consumer warpgroups"));
  CHECK_THROWS_WITH(load_schedule(schedule("fa3_sm90"), {"/kv_stage=4"})->check(hw, shape(128, 1024)),
                    Catch::Contains("SMEM overflow"));
}

TEST_CASE("MUFU and FMA sharing between warps matches the H100 microbenchmarks", "[hopper][sharing]") {
  // configs/measured/h100_sxm: per-warp rates with 2 warps on one SMSP (warps 0 and 4: two
  // consumer warpgroups' warps share an SMSP so) and on two SMSPs (warps 0 and 1), and 4 per SMSP.
  const Hardware hw = h100();
  struct Pipe {
    const char* file;
    double Work::*field;
  };
  for (const Pipe pipe : {Pipe{"mufu_ex2", &Work::mufu_lanes}, Pipe{"ffma", &Work::fma_lanes}}) {
    const auto measured = load_json_file(test::root() + "/configs/measured/h100_sxm/" + pipe.file + ".json");
    struct Config {
      const char* name;
      std::vector<int> warps;
    };
    for (const Config& c : {Config{"2_warps_same_smsp", {0, 4}}, Config{"2_warps_diff_smsp", {0, 1}},
                            Config{"16_warps", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}}) {
      INFO(pipe.file << " " << c.name);
      CtaBuilder cta;
      const double lanes = 320000;
      for (int w : c.warps) {
        Work work;
        work.*pipe.field = lanes;
        cta.warp(w, "w").compute(ATTNSIM_OP_COMPUTE, work);
      }
      const SimResult r = simulate_cta(hw, cta.take());
      const auto& m = measured["results"]["configs"][c.name];
      // Throughput of each SMSP in use: the warps on it share its pipe.
      std::set<int> smsps;
      for (int w : c.warps) smsps.insert(w % hw.smsp_per_sm);
      const double per_smsp =
          lanes * static_cast<double>(c.warps.size()) / static_cast<double>(smsps.size()) / r.end_cycles;
      CHECK(per_smsp == Approx(m["lanes_per_clk_per_used_smsp"].get<double>()).epsilon(0.05));
      // Two warps on one SMSP split it evenly (the hardware alternates them); with more warps the
      // hardware's split is uneven, so only the aggregate is compared there.
      if (c.warps.size() == 2)
        CHECK(lanes / r.warps[0].end == Approx(m["lanes_per_clk_per_warp_median"].get<double>()).epsilon(0.05));
    }
  }
}

TEST_CASE("fa3_sm90 lowers to the kernel structure - roles and barrier counts and SMEM from structure.h",
          "[hopper][fa3][structure]") {
  const Hardware hw = h100();
  for (int hd : {64, 128, 256}) {
    Problem p = test::default_problem();
    p.head_dim = p.head_dim_v = hd;
    p.seqlen_q = p.seqlen_k = 1024;
    auto s = load_schedule(schedule("fa3_sm90"));
    s->check(hw, p);
    const auto kk = std::get<sm90::KernelKnobs>(s->real_kernel(hw, p).knobs);
    const int consumers = sm90::consumer_warpgroups(kk.m_block);
    const CtaProgram prog = s->lower(hw, p, {TileWork{0, kk.m_block, 2, 0}});
    REQUIRE(static_cast<int>(prog.warps.size()) == sm90::cta_warps(consumers));
    for (const WarpProgram& w : prog.warps) CHECK(w.role == sm90::warp_role_name(w.warp));
    CHECK(prog.warps[0].role == "load");
    CHECK(prog.warps[1].role == "idle");
    CHECK(prog.warps[4].role == "consumer0");
    int mbarriers = 0;
    for (const BarrierDecl& b : prog.barriers) {
      if (b.named) {
        CHECK(b.expected == (b.name.rfind("bar.pingpong", 0) == 0 ? sm90::kPingpongThreads : sm90::kEpilogueThreads));
        continue;
      }
      ++mbarriers;
      const bool full = b.name.find(".full[") != std::string::npos;
      CHECK(b.expected == (full                      ? sm90::kFullArrivals
                           : b.name == "barrier_o" ? sm90::barrier_o_arrivals(consumers)
                                                   : sm90::empty_arrivals(consumers)));
    }
    // O in the V ring at hd256 (no room for a buffer of its own) adds barrier_o.
    CHECK(kk.o_in_v_ring == (hd == 256));
    CHECK(mbarriers == sm90::mbarrier_count(kk.kv_stage, kk.o_in_v_ring));
    // Each KV block (2 here) of a consumer warp runs the code between the kernel's spans once, as
    // the cost file's SASS count for this instance says.
    const LoopControl lc = CostModel::load(test::root() + "/configs/costs/sm90_softmax.json")
                               .loop_control(hd, kk.pingpong, kk.overlap, false, kk.n_block);
    REQUIRE(lc.instructions > 0);
    int loop_controls = 0;
    for (const Op& op : prog.warps[4].ops)
      if (op.name == ATTNSIM_OP_LOOP_CONTROL) {
        ++loop_controls;
        CHECK(op.compute->work.issue == Approx(lc.instructions));
        CHECK(op.compute->measured.alone == Approx(lc.issue_cycles));
      }
    CHECK(loop_controls == 2);
    // The tile's head (after its Q wait) and tail (after the store of O), as the plain kernel's
    // SASS counts them for this instance.
    const TileControl tc = CostModel::load(test::root() + "/configs/costs/sm90_softmax.json")
                               .tile_control(hd, kk.pingpong, kk.overlap, false, hd <= 128, kk.n_block);
    REQUIRE(tc.head.instructions > 0);
    std::vector<double> tile_ops;
    for (const Op& op : prog.warps[4].ops)
      if (op.name == ATTNSIM_OP_TILE_CONTROL) tile_ops.push_back(op.compute->measured.alone);
    CHECK(tile_ops == std::vector<double>{tc.head.issue_cycles, tc.tail.issue_cycles});
    // In the overlapped step (block 0 here) the PV's wait (wgmma.wait_group 0) comes where the
    // plain kernel's SASS has it: after the row max where ptxas sank it below most of the max.
    const bool under_max = CostModel::load(test::root() + "/configs/costs/sm90_softmax.json")
                               .max_before_pv_wait(hd, kk.pingpong, kk.overlap, false, kk.own_o_buffer, kk.n_block) >= 0.5;
    CHECK(under_max == (hd <= 128));  // the 2026-11-29 listing: hd64/hd128 with O's own buffer, not hd256
    // Positions in a consumer warp's ops of its wgmma.wait_group 0 and of its row maxes.
    auto waits_and_maxes = [](const std::vector<Op>& ops) {
      std::pair<std::vector<size_t>, std::vector<size_t>> at;
      for (size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].kind == OpKind::MmaWait && ops[i].count == 0) at.first.push_back(i);
        if (ops[i].name == ATTNSIM_OP_SOFTMAX_MAX) at.second.push_back(i);
      }
      return at;
    };
    const auto& ops = prog.warps[4].ops;
    const auto [waits, maxes] = waits_and_maxes(ops);
    // Waits: QK of block 1, PV of block 1 in block 0's step, PV of block 0; maxes: blocks 1, 0.
    REQUIRE(waits.size() == 3);
    REQUIRE(maxes.size() == 2);
    CHECK((maxes[1] < waits[1]) == under_max);
    // The traced twin (the kernel whose spans are measured): its load warp records its spans, so
    // it exists for every warp-specialized instance; in its recorded steps it waits for the PV
    // before the whole max, where the plain kernel's wait sits below it.
    const auto twin = s->traced_twin(hw, p);
    REQUIRE(twin != nullptr);
    CHECK(twin->traced_twin(hw, p) == nullptr);
    const CtaProgram tprog = twin->lower(hw, p, {TileWork{0, kk.m_block, 2, 0}});
    const auto& tops = tprog.warps[4].ops;
    const auto [twaits, tmaxes] = waits_and_maxes(tops);
    REQUIRE(twaits.size() == 3);
    REQUIRE(tmaxes.size() == 2);
    CHECK(tmaxes[1] > twaits[1]);
    CHECK(tops.size() == ops.size());  // the same ops (another order where the plain wait is under the max)
    // Its load warp, and only its, spends the code around its recorded spans once per KV block
    // (kernels/microbench load_warp's block_gaps for this instance).
    const LoadWarpCost lw = CostModel::load(test::root() + "/configs/costs/sm90_softmax.json")
                                .load_warp(hd, false, kk.own_o_buffer, kk.n_block);
    REQUIRE(lw.block_gaps > 0);
    auto load_gaps = [](const CtaProgram& prog) {
      std::vector<double> v;
      for (const Op& op : prog.warps[sm90::kLoadWarp].ops)
        if (op.name == ATTNSIM_OP_LOOP_CONTROL) v.push_back(op.latency);
      return v;
    };
    CHECK(load_gaps(tprog) == std::vector<double>{lw.block_gaps, lw.block_gaps});
    CHECK(load_gaps(prog).empty());
    // The SMEM the simulator checks is the kernel's layout (untraced), mbarriers included, with
    // O's own buffer where the schedule resolves to one (it does at hd64/hd128, not at hd256).
    CHECK(kk.own_o_buffer == (hd <= 128));
    REQUIRE_FALSE(kk.dynamic);  // non-causal: static persistent
    const auto layout = sm90::smem_layout(kk.m_block, kk.n_block, hd, hd, kk.kv_stage, 2, false, false,
                                          kk.own_o_buffer, kk.o_in_v_ring);
    CHECK(layout.o_bytes == (kk.own_o_buffer ? kk.m_block * hd * 2 : 0));
    CHECK(s->resources(hw, p).at("smem_bytes") == layout.bytes);
    CHECK(layout.barriers + (sm90::mbarrier_count(kk.kv_stage, kk.o_in_v_ring) * 8 + 15) / 16 * 16 +
              sm90::kSmemAlignSlack ==
          layout.bytes);
    // The dynamic tile scheduler's kernel adds the tile slot and one copy per warp after the mbarriers.
    const auto dyn = sm90::smem_layout(kk.m_block, kk.n_block, hd, hd, kk.kv_stage, 2, false, true,
                                       kk.own_o_buffer, kk.o_in_v_ring);
    CHECK(dyn.tile == layout.tile);
    const int warps = sm90::cta_warps(sm90::consumer_warpgroups(kk.m_block));
    CHECK(dyn.bytes == layout.bytes + sm90::kTileSlotBytes * (1 + warps));
  }
  // A field that could only hold one value is derived, and declaring it is an error.
  try {
    load_schedule(schedule("fa3_sm90"), {"/pipelines={}"});
    FAIL("expected rejection");
  } catch (const InputError& e) {
    CHECK(e.path() == "/pipelines");
    CHECK_THAT(e.what(), Catch::Contains("kernels/sm90/structure.h"));
  }
}

TEST_CASE("fa3_sm90's load warp spends its measured time between tiles in every prediction", "[hopper][fa3][load]") {
  const Hardware hw = h100();
  const CostModel costs = CostModel::load(test::root() + "/configs/costs/sm90_softmax.json");
  // The cost file's points are kernels/microbench load_warp's figures beside the softmax.
  const auto measured = load_json_file(test::root() + "/configs/measured/h200/load_warp.json")["results"]["instances"];
  auto figure = [&](const char* instance, const char* key) {
    return measured[instance]["beside_softmax"][key].get<double>();
  };
  CHECK(costs.load_warp(128, false, true, 128).tile_bookkeeping == Approx(figure("hd128", "tile_bookkeeping_cycles")));
  CHECK(costs.load_warp(128, true, true, 128).block_gaps == Approx(figure("hd128_dynamic", "block_gaps_cycles")));
  CHECK(costs.load_warp(256, false, false, 80).tile_bookkeeping == Approx(figure("hd256", "tile_bookkeeping_cycles")));
  // No point at this head_dim: the mean of the scheduler's points.
  const double static_mean = (figure("hd64", "block_gaps_cycles") + figure("hd128", "block_gaps_cycles") +
                              figure("hd256", "block_gaps_cycles")) / 3;
  CHECK(costs.load_warp(96, false, true, 128).block_gaps == Approx(static_mean).epsilon(1e-3));
  for (bool causal : {false, true}) {
    Problem p = test::default_problem();
    p.head_dim = p.head_dim_v = 128;
    p.seqlen_q = p.seqlen_k = 2048;
    p.causal = causal;
    auto s = load_schedule(schedule("fa3_sm90"));
    const auto k = std::get<sm90::KernelKnobs>(s->real_kernel(hw, p).knobs);
    CHECK(k.dynamic == causal);  // the base schedule's grids
    const LoadWarpCost lw = costs.load_warp(128, causal, k.own_o_buffer, k.n_block);
    // Two tiles of 3 blocks: the bookkeeping once, before the second tile's first wait.
    const CtaProgram prog = s->lower(hw, p, {TileWork{0, k.m_block, 3, 0}, TileWork{1, k.m_block, 3, 0}});
    const auto& ops = prog.warps[sm90::kLoadWarp].ops;
    std::vector<size_t> at;
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].name == ATTNSIM_OP_TILE_CONTROL) at.push_back(i);
    REQUIRE(at.size() == 1);
    CHECK(ops[at[0]].latency == Approx(lw.tile_bookkeeping));
    CHECK(ops[at[0]].compute->work.issue == 0);  // measured time, not instructions on the issue slots
    REQUIRE(at[0] + 1 < ops.size());
    CHECK(ops[at[0] + 1].kind == OpKind::Wait);  // the second tile's first wait (K first when dynamic, else Q)
    CHECK(ops[at[0] + 1].tile == 1);
    // The traced twin enters a static grid's tile as the kernel enters the one tile a CTA records,
    // from a plain tile (load_warp's recorded_after_plain); the dynamic grid's recorded tiles
    // follow one another.
    const auto twin = s->traced_twin(hw, p);
    REQUIRE(twin != nullptr);
    const CtaProgram tprog = twin->lower(hw, p, {TileWork{0, k.m_block, 3, 0}, TileWork{1, k.m_block, 3, 0}});
    double between = 0;
    for (const Op& op : tprog.warps[sm90::kLoadWarp].ops)
      if (op.name == ATTNSIM_OP_TILE_CONTROL) between += op.latency;
    if (!causal) REQUIRE(lw.recorded_entry_extra > 0);
    CHECK(between == Approx(lw.tile_bookkeeping + (causal ? 0.0 : lw.recorded_entry_extra)));
  }
}

TEST_CASE("fa3_sm90 O staged in the V ring: Q freed after the last QK and the next tile's first V after barrier_o",
          "[hopper][fa3][structure]") {
  // hd256 (O fits no buffer of its own), two tiles of 3 KV blocks in a ring of 2 stages.
  const Hardware hw = h100();
  const Problem p = shape(256, 1024);
  const auto s =
      load_schedule(schedule("fa3_sm90"), {"/o_staging=\"v_ring\"", "/tile={\"m_block\":128,\"n_block\":64}"});
  s->check(hw, p);
  const auto kk = std::get<sm90::KernelKnobs>(s->real_kernel(hw, p).knobs);
  CHECK(kk.o_in_v_ring);
  CHECK_FALSE(kk.own_o_buffer);
  // No SMEM of its own: the Q-buffer layout plus barrier_o.
  const auto layout = sm90::smem_layout(128, 64, 256, 256, 2, 2, false, false, false, true);
  CHECK(s->resources(hw, p).at("smem_bytes") == layout.bytes);
  // (9 mbarriers: 72 B, rounded up to 80 so that what follows stays 16-byte aligned.)
  CHECK(layout.bytes == sm90::smem_layout(128, 64, 256, 256, 2, 2, false, false, false, false).bytes + 16);
  CHECK(sm90::smem_layout(128, 64, 256, 256, 2, 2, true, true, false, true).trace % 16 == 0);
  const CtaProgram prog = s->lower(hw, p, {TileWork{0, 128, 3, 0}, TileWork{1, 128, 3, 0}});
  int barrier_o = -1;
  std::map<int, std::string> names;
  for (size_t b = 0; b < prog.barriers.size(); ++b) {
    names[static_cast<int>(b)] = prog.barriers[b].name;
    if (prog.barriers[b].name == "barrier_o") {
      barrier_o = static_cast<int>(b);
      CHECK(prog.barriers[b].expected == 2);  // one arrival per consumer warpgroup
      CHECK_FALSE(prog.barriers[b].named);
    }
  }
  REQUIRE(barrier_o >= 0);
  // The load warp: tile 1's first V (and nothing of tile 0) waits for phase 0 of barrier_o.
  std::vector<std::pair<int, int>> load_order;  // (op name, tile) of loads and barrier_o waits
  for (const Op& op : prog.warps[0].ops)
    if (op.kind == OpKind::Wait && op.barrier == barrier_o)
      load_order.emplace_back(-1, op.tile);
    else if (op.kind == OpKind::TmaLoad)
      load_order.emplace_back(op.name, op.tile);
  const auto wait_at = std::find(load_order.begin(), load_order.end(), std::pair{-1, 1});
  REQUIRE(wait_at != load_order.end());
  CHECK(std::count(load_order.begin(), load_order.end(), std::pair{-1, 1}) == 1);
  CHECK(std::count_if(load_order.begin(), load_order.end(), [](auto x) { return x.first == -1; }) == 1);
  CHECK(*(wait_at + 1) == std::pair{static_cast<int>(ATTNSIM_OP_LOAD_V), 1});
  CHECK(std::count(load_order.begin(), wait_at, std::pair{static_cast<int>(ATTNSIM_OP_LOAD_V), 1}) == 0);
  CHECK(std::count(load_order.begin(), wait_at, std::pair{static_cast<int>(ATTNSIM_OP_LOAD_Q), 1}) == 1);
  // Consumer warps: Q released before the epilogue; before final_o each waits on the V stage its
  // warpgroup stages O in: after 3 blocks the next read is stage 1 (phase 1), so warpgroup 0 takes
  // stage 1 with the load warp's parity 0, warpgroup 1 stage 0 with parity 1; warp 0 of each
  // arrives on barrier_o after its store.
  for (const WarpProgram& w : prog.warps) {
    if (w.role.rfind("consumer", 0) != 0) continue;
    const int group = sm90::consumer_group(w.warp);
    const int want_stage = group == 0 ? 1 : 0, want_parity = group == 0 ? 0 : 1;
    bool q_released = false, checked_wait = false, arrived = false;
    const Op* last_wait = nullptr;
    for (const Op& op : w.ops) {
      if (op.tile > 0) break;  // (the last warpgroup's opening pingpong arrive has no tile)
      if (op.kind == OpKind::Arrive && names[op.barrier] == "pipeline_q.empty[0]") q_released = true;
      if (op.kind == OpKind::Wait) last_wait = &op;
      if (op.name == ATTNSIM_OP_FINAL_O && !checked_wait) {
        checked_wait = true;
        CHECK(q_released);
        REQUIRE(last_wait != nullptr);
        CHECK(names[last_wait->barrier] == fmt::format("pipeline_v.empty[{}]", want_stage));
        CHECK(last_wait->parity == want_parity);
      }
      if (op.kind == OpKind::Arrive && op.barrier == barrier_o) arrived = true;
    }
    CHECK(checked_wait);
    CHECK(arrived == (w.warp % sm90::kWarpsPerWarpgroup == 0));
  }
  // It runs to the end, whatever the tiles' lengths (one block: a stage never used before).
  for (int blocks : {1, 2, 5})
    CHECK(simulate_cta(
              hw, s->lower(hw, p, {TileWork{0, 128, blocks, 0}, TileWork{1, 128, 1, 0}, TileWork{2, 128, blocks, 0}}))
              .end_cycles > 0);
  // Its reason to be: the next tile's Q and first K load under the epilogue, so a CTA of short
  // tiles finishes sooner than with O in Q's buffer.
  const auto q_buffer =
      load_schedule(schedule("fa3_sm90"), {"/o_staging=\"q_buffer\"", "/tile={\"m_block\":128,\"n_block\":64}"});
  const std::vector<TileWork> tiles(8, TileWork{0, 128, 4, 0});
  CHECK(simulate_cta(hw, s->lower(hw, p, tiles)).end_cycles <
        simulate_cta(hw, q_buffer->lower(hw, p, tiles)).end_cycles);
  // Where O does not fit: blocks narrower than a warpgroup's 64 rows, fewer stages than warpgroups.
  CHECK_THROWS_WITH(
      load_schedule(schedule("fa3_sm90"), {"/o_staging=\"v_ring\"", "/tile={\"m_block\":128,\"n_block\":48}"})
          ->check(hw, p),
      Catch::Contains("needs n_block >= 64 and kv_stage >= 2"));
  CHECK_THROWS_WITH(load_schedule(schedule("fa3_sm90"), {"/o_staging=\"v_ring\"", "/kv_stage=1"})->check(hw, p),
                    Catch::Contains("kv_stage 1"));
  CHECK_THROWS_WITH(
      load_schedule(schedule("fa3_sm90"), {"/o_staging=\"v_ring\"", "/warp_specialization=false"})->check(hw, p),
      Catch::Contains("v_ring needs warp specialization"));
}

TEST_CASE("fa3_sm90 without pingpong and with O in the V ring: the warpgroups stage O in turn (bar.o_staged)",
          "[hopper][fa3][structure]") {
  // Warpgroup g arrives on bar.o_staged[g] once it has staged a tile's O; warpgroup 1 syncs on
  // [0] before staging its own, warpgroup 0 on [1] from its second tile on (kernels/sm90/epilogue.cuh).
  const Hardware hw = h100();
  const Problem p = shape(256, 1024);
  const std::string tile = "/tile={\"m_block\":128,\"n_block\":64}";
  const auto s = load_schedule(schedule("fa3_sm90"), {"/o_staging=\"v_ring\"", "/pingpong=false", tile});
  s->check(hw, p);
  const auto kk = std::get<sm90::KernelKnobs>(s->real_kernel(hw, p).knobs);
  REQUIRE(kk.o_in_v_ring);
  REQUIRE_FALSE(kk.pingpong);
  CHECK(sm90::o_staged_barriers(true, false, 2));
  CHECK_FALSE(sm90::o_staged_barriers(true, true, 2));
  CHECK_FALSE(sm90::o_staged_barriers(false, false, 2));
  // The pingpong's ids, clear of the epilogue's.
  CHECK(sm90::bar_o_staged(1) < sm90::bar_epilogue(2));
  // Who waits on whom: warpgroup g on g - 1; warpgroup 0 on the last one from its second tile on.
  CHECK(sm90::o_staged_waits(1, 0));
  CHECK_FALSE(sm90::o_staged_waits(0, 0));
  CHECK(sm90::o_staged_waits(0, 1));
  CHECK(sm90::o_staged_after(1, 2) == 0);
  CHECK(sm90::o_staged_after(0, 2) == 1);
  CHECK(sm90::o_staged_after(0, 3) == 2);
  CHECK(sm90::o_staged_after(2, 3) == 1);
  const CtaProgram prog = s->lower(hw, p, {TileWork{0, 128, 3, 0}, TileWork{1, 128, 2, 0}});
  int staged[2] = {-1, -1};
  for (size_t b = 0; b < prog.barriers.size(); ++b) {
    for (int g = 0; g < 2; ++g)
      if (prog.barriers[b].name == fmt::format("bar.o_staged[{}]", g)) {
        staged[g] = static_cast<int>(b);
        CHECK(prog.barriers[b].named);
        CHECK(prog.barriers[b].expected == sm90::kPingpongThreads);
      }
  }
  REQUIRE(staged[0] >= 0);
  REQUIRE(staged[1] >= 0);
  for (const WarpProgram& w : prog.warps) {
    if (w.role.rfind("consumer", 0) != 0) continue;
    const int group = sm90::consumer_group(w.warp);
    // Per tile: the barrier op right before final_o and right after it.
    std::map<int, std::pair<const Op*, const Op*>> around;
    for (size_t i = 0; i < w.ops.size(); ++i)
      if (w.ops[i].name == ATTNSIM_OP_FINAL_O && w.ops[i].kind == OpKind::Compute) {
        REQUIRE(i > 0);
        REQUIRE(i + 1 < w.ops.size());
        around[w.ops[i].tile] = {&w.ops[i - 1], &w.ops[i + 1]};
      }
    REQUIRE(around.size() == 2);
    for (const auto& [t, ops] : around) {
      const bool waits = group == 1 || t > 0;
      CHECK((ops.first->kind == OpKind::BarSync) == waits);
      if (waits) CHECK(ops.first->barrier == staged[1 - group]);
      CHECK(ops.second->kind == OpKind::BarArrive);
      CHECK(ops.second->barrier == staged[group]);
    }
  }
  // It runs to the end whatever the tiles' lengths.
  for (int blocks : {1, 2, 5})
    CHECK(simulate_cta(
              hw, s->lower(hw, p, {TileWork{0, 128, blocks, 0}, TileWork{1, 128, 1, 0}, TileWork{2, 128, blocks, 0}}))
              .end_cycles > 0);
  // With pingpong the turns order the warpgroups already: no such barrier.
  const auto pp = load_schedule(schedule("fa3_sm90"), {"/o_staging=\"v_ring\"", "/pingpong=true", tile});
  for (const BarrierDecl& b : pp->lower(hw, p, {TileWork{0, 128, 3, 0}}).barriers)
    CHECK(b.name.rfind("bar.o_staged", 0) != 0);
}

TEST_CASE("causal one-tile grids: long CTAs from their steady state agree with exact runs", "[hopper][driver]") {
  const Hardware hw = h100();
  struct Case {
    const char* schedule;
    const char* variant;
    int head_dim, seqlen;
  };
  // 64 KV blocks for the longest CTA: those of 49 to 63 blocks take the shortcut.
  for (const Case& c : {Case{"blackflash", "registers_96", 64, 4096}, Case{"fa3_sm90", "", 128, 8192},
                        Case{"fa3_sm90", "dynamic_lpt", 128, 8192}}) {
    const auto s = load_schedule(schedule(c.schedule), {}, c.variant);
    Problem p = shape(c.head_dim, c.seqlen);
    p.causal = true;
    PredictOptions quick, exact;
    quick.record_spans = exact.record_spans = false;
    exact.exact_every_cta = true;
    const Prediction a = predict(*s, hw, p, quick), b = predict(*s, hw, p, exact);
    INFO(c.schedule << " " << c.variant);
    CHECK(a.cycles == Approx(b.cycles).epsilon(0.002));
    CHECK(a.ctas_simulated < b.ctas_simulated);
  }
}

TEST_CASE("static persistent grids: CTAs with the same tiles in another order are simulated once", "[hopper][driver]") {
  // 192-row tiles do not divide seqlen 1280: each CTA's list holds the tail tile (64 rows) at
  // another place, or none; one list of each kind of work stands for the others.
  const Hardware hw = h100();
  const auto s = load_schedule(schedule("fa3_sm90"), {"/tile={\"m_block\":192,\"n_block\":128}"});
  Problem p = shape(64, 1280, 8);  // 7 m-blocks x 128 heads: 896 tiles on 132 CTAs
  PredictOptions quick, exact;
  quick.record_spans = exact.record_spans = false;
  exact.exact_every_cta = true;
  const Prediction a = predict(*s, hw, p, quick), b = predict(*s, hw, p, exact);
  CHECK(a.cycles == Approx(b.cycles).epsilon(0.002));
  CHECK(a.ctas_simulated == 1);
  CHECK(b.ctas_simulated >= 4);  // lists that are no prefix of another: the tail tile at other places
}

TEST_CASE("static persistent grids: a CTA of many like tiles from its periodic steady state agrees with the exact run",
          "[hopper][driver]") {
  // hd128 s16k b2: 4096 tiles on 132 CTAs, up to 32 tiles of 128 KV blocks per CTA. The time per
  // tile is the same from the second tile on (with pingpong and, here, without), so 2, 3 and 4
  // tiles stand for 32. (Where the sampled tiles' increments differ, the CTA runs whole: hd64 s16k
  // at 192 x 128 without pingpong, configs/validation/h200/fa3_hd64_three_warpgroups.)
  const Hardware hw = h100();
  const Problem p = shape(128, 16384, 2);
  PredictOptions quick, exact;
  quick.record_spans = exact.record_spans = false;
  exact.exact_every_cta = true;
  const auto s = load_schedule(schedule("fa3_sm90"));
  const Prediction a = predict(*s, hw, p, quick), b = predict(*s, hw, p, exact);
  CHECK(a.cycles == Approx(b.cycles).epsilon(0.001));
  CHECK(a.ctas_simulated == 3);  // the first 2, 3 and 4 tiles of the critical list
  // The timeline reported is that sample of 4 tiles (and says so), not another list simulated.
  CHECK(a.critical_sampled_tiles == 4);
  CHECK(b.critical_sampled_tiles == 0);
  REQUIRE(a.critical_tiles == b.critical_tiles);
  CHECK(a.critical.units.tensor_flops * a.critical_tiles == Approx(b.critical.units.tensor_flops * 4));
  CHECK(a.events * 3 < b.events);
  const auto no_pp = load_schedule(schedule("fa3_sm90"), {"/pingpong=false"});
  const Prediction c = predict(*no_pp, hw, p, quick);
  CHECK(c.ctas_simulated == 3);
  CHECK(c.cycles == Approx(predict(*no_pp, hw, p, exact).cycles).epsilon(0.001));
}

TEST_CASE("fa3_sm90 conditional rescale: a warp rescales O only at the steps its rows' maxima call for",
          "[hopper][fa3][rescale]") {
  const Hardware hw = h100();
  const std::string cond = "/rescale={\"conditional\":true,\"threshold_log2\":8}";
  Problem p = shape(256, 8192);
  const int blocks = 6, warps = 8;  // 2 consumer warpgroups of 4 warps, 16 rows each
  // The issue-slot work of every rescale_o span of one tile, in program order.
  auto rescale_ops = [&](const std::vector<std::string>& sets, std::optional<double> rate) {
    Problem q = p;
    q.rescale_rate = rate;
    std::vector<double> issue;
    for (const auto& w : load_schedule(schedule("fa3_sm90"), sets)->lower(hw, q, {TileWork{0, 128, blocks, 0}}).warps)
      for (const auto& op : w.ops)
        if (op.name == ATTNSIM_OP_RESCALE_O) issue.push_back(op.compute->work.issue);
    return issue;
  };
  const std::vector<double> always = rescale_ops({"/rescale/conditional=false"}, std::nullopt);
  REQUIRE(always.size() == static_cast<size_t>(warps * blocks));
  // Every step rescaling: the program of FA3's unconditional rescale, op for op.
  CHECK(rescale_ops({cond}, 1.0) == always);
  // No step rescaling: every span packs P only, as the tile's first block does.
  const double pack_only = always.front();
  const std::vector<double> never = rescale_ops({cond}, 0.0);
  CHECK(std::count(never.begin(), never.end(), pack_only) == warps * blocks);
  // Half the (warp, block >= 1) steps rescale: that many spans carry the O multiplies.
  const std::vector<double> half = rescale_ops({cond}, 0.5);
  CHECK(std::count_if(half.begin(), half.end(), [&](double x) { return x > pack_only; }) == warps * (blocks - 1) / 2);
  // Random N(0,1) scores at threshold 2^8: after the first block, no warp of 16 rows rescales.
  const std::vector<double> random = rescale_ops({cond}, std::nullopt);
  CHECK(std::count(random.begin(), random.end(), pack_only) == warps * blocks);
  // Skipping the O multiplies (128 per thread per block at hd256) shortens the tile.
  CHECK(test::run(schedule("fa3_sm90"), hw, p, "", {cond}).time_us <
        test::run(schedule("fa3_sm90"), hw, p, "", {"/rescale/conditional=false"}).time_us);

  // The kernel: threshold 8 -> 8000 (log2 units x 1000); -1 where every block rescales. The base
  // schedule's "auto": conditional at head_dim 256 only.
  const auto knobs = [&](const std::vector<std::string>& sets, int hd = 256) {
    return std::get<sm90::KernelKnobs>(load_schedule(schedule("fa3_sm90"), sets)->real_kernel(hw, shape(hd, 8192)).knobs);
  };
  CHECK(knobs({"/rescale/conditional=false"}).rescale_threshold_milli == -1);
  CHECK(knobs({}).rescale_threshold_milli == 8000);
  CHECK(knobs({}, 128).rescale_threshold_milli == -1);
  CHECK(knobs({}, 64).rescale_threshold_milli == -1);
  CHECK(knobs({cond}, 64).rescale_threshold_milli == 8000);
  CHECK_THAT(knobs({cond}).describe(), Catch::EndsWith(" rescale>8 o_in_v"));
  CHECK_THROWS_WITH(load_schedule(schedule("fa3_sm90"), {"/rescale={\"conditional\":true,\"threshold_log2\":200}"}),
                    Catch::Contains("/rescale/threshold_log2"));
  CHECK_THROWS_WITH(load_schedule(schedule("fa3_sm90"), {"/rescale={\"conditional\":1,\"threshold_log2\":8}"}),
                    Catch::Contains("/rescale/conditional"));
}

TEST_CASE("fa3_sm90 conditional rescale: its row max and its pack-only steps take their own measured times",
          "[hopper][fa3][rescale]") {
  const Hardware hw = h100();
  const CostModel costs = CostModel::load(test::root() + "/configs/costs/sm90_softmax.json");
  const int blocks = 6;
  // Every compute block named `op` of one tile's consumer warps, in program order.
  auto spans = [&](const std::vector<std::string>& sets, attnsim_op_id op) {
    Problem q = shape(256, 8192);
    q.rescale_rate = 0.0;  // no step after the first rescales O
    std::vector<const ComputeBlock*> out;
    for (const auto& w : load_schedule(schedule("fa3_sm90"), sets)->lower(hw, q, {TileWork{0, 128, blocks, 0}}).warps)
      for (const auto& op_ : w.ops)
        if (op_.name == op && op_.compute) out.push_back(op_.compute);
    return out;
  };
  const std::string cond = "/rescale={\"conditional\":true,\"threshold_log2\":8}";
  // The base schedule's hd256 tile is 80 keys wide: 40 scores a thread-row.
  const MeasuredTiming pack = costs.measured_timing("pack_p", 40),
                       max_cond = costs.measured_timing("softmax_max_conditional", 40);
  REQUIRE(pack.alone > 0);
  REQUIRE(max_cond.alone > costs.measured_timing("softmax_max", 40).alone);  // the vote costs time
  const auto rescale = spans({cond}, ATTNSIM_OP_RESCALE_O);
  REQUIRE(rescale.size() == 8u * blocks);
  // A warp's first step packs P with no vote to test (priced from its instructions); the others
  // test the vote and pack P: the measured pack-only span.
  int measured = 0, first = 0;
  for (const ComputeBlock* b : rescale) {
    if (b->measured.alone == 0) ++first;
    if (b->measured == pack) ++measured;
  }
  CHECK(first == 8);
  CHECK(measured == 8 * (blocks - 1));
  // The row max with the vote: softmax_max_conditional; without the conditional rescale, softmax_max.
  for (const ComputeBlock* b : spans({cond}, ATTNSIM_OP_SOFTMAX_MAX)) CHECK(b->measured == max_cond);
  for (const ComputeBlock* b : spans({"/rescale/conditional=false"}, ATTNSIM_OP_SOFTMAX_MAX))
    CHECK(b->measured == costs.measured_timing("softmax_max", 40));
}

TEST_CASE("fa3_sm90 masked row max: the mask's measured time on top of the row max's", "[hopper][fa3][mask]") {
  const Hardware hw = h100();
  const CostModel costs = CostModel::load(test::root() + "/configs/costs/sm90_softmax.json");
  const MeasuredTiming max = costs.measured_timing("softmax_max", 64),
                       mask = costs.measured_timing("softmax_mask_select", 64);
  REQUIRE(max.alone > 0);
  REQUIRE(mask.alone > 0);
  // hd128 causal: a tile of 3 KV blocks whose last one crosses the diagonal (masked_blocks 1).
  Problem q = shape(128, 8192);
  q.causal = true;
  std::vector<MeasuredTiming> seen;
  for (const auto& w : load_schedule(schedule("fa3_sm90"))->lower(hw, q, {TileWork{0, 128, 3, 1}}).warps)
    for (const auto& op : w.ops)
      if (op.name == ATTNSIM_OP_SOFTMAX_MAX && op.compute) seen.push_back(op.compute->measured);
  REQUIRE(seen.size() == 8u * 3);
  const auto masked = std::count_if(seen.begin(), seen.end(), [&](const MeasuredTiming& t) {
    return t.alone == Approx(max.alone + mask.alone) &&
           t.beside_ss == Approx((max.alone * max.beside_ss + mask.alone * mask.beside_ss) / (max.alone + mask.alone));
  });
  CHECK(masked == 8);  // one masked block per warp
  CHECK(std::count(seen.begin(), seen.end(), max) == 8 * 2);
}

TEST_CASE("fa3_sm90 exp2 emulation: a share of the scores' exp2 moves from the MUFU to the FMA and ALU pipes",
          "[hopper][fa3][exp2]") {
  const Hardware hw = h100();
  const Problem p = shape(64, 8192);  // hd64 non-causal at 128 x 176 tiles: 88 scores per thread
  // The softmax_exp work of one tile's steady block (the same in every warp and block).
  auto exp_work = [&](std::vector<std::string> sets) {
    sets.insert(sets.begin(), R"(/tile={"m_block":128,"n_block":176})");
    for (const auto& w : load_schedule(schedule("fa3_sm90"), sets)->lower(hw, p, {TileWork{0, 128, 4, 0}}).warps)
      for (const auto& op : w.ops)
        if (op.name == ATTNSIM_OP_SOFTMAX_EXP) return op.compute->work;
    FAIL("no softmax_exp op");
    return Work{};
  };
  const Work off = exp_work({}), quarter = exp_work({"/exp2_emulation={\"freq\":4,\"res\":1}"});
  // 1 of every 4 of 88 elements: 22 emulated per thread-row (32 lanes each), by the cost file's counts.
  const CostModel costs = CostModel::load(test::root() + "/configs/costs/sm90_softmax.json");
  const Work emu = costs.work("exp2_emulated", 22, 0);
  CHECK(off.mufu_lanes - quarter.mufu_lanes == Approx(22 * 32));
  CHECK(quarter.fma_lanes - off.fma_lanes == Approx(emu.fma_lanes));
  CHECK(quarter.alu_lanes - off.alu_lanes == Approx(emu.alu_lanes));
  CHECK(quarter.issue - off.issue == Approx(emu.issue - 22));  // one MUFU.EX2 issue fewer per element
  CHECK(exp_work({"/exp2_emulation=\"off\""}).mufu_lanes == off.mufu_lanes);

  // The kernel's knobs and what `explain` prints.
  auto schedule_with = [&](const std::string& set) { return load_schedule(schedule("fa3_sm90"), {set}); };
  const auto knobs = std::get<sm90::KernelKnobs>(
      schedule_with("/exp2_emulation={\"freq\":8,\"res\":3}")->real_kernel(hw, p).knobs);
  CHECK(knobs.exp2_emu_freq == 8);
  CHECK(knobs.exp2_emu_res == 3);
  CHECK_THAT(knobs.describe(), Catch::EndsWith(" exp2 emu 3/8"));
  CHECK(std::get<sm90::KernelKnobs>(load_schedule(schedule("fa3_sm90"))->real_kernel(hw, p).knobs).exp2_emu_freq == 0);
  bool said = false;
  for (const auto& line : schedule_with("/exp2_emulation={\"freq\":8,\"res\":3}")->knob_lines(hw, p))
    said |= line.find("emulated on the FMA pipe for 3 of every 8 elements (37.5%)") != std::string::npos;
  CHECK(said);

  // Bad input names the JSON path.
  CHECK_THROWS_WITH(schedule_with("/exp2_emulation={\"freq\":4,\"res\":5}"), Catch::Contains("/exp2_emulation/res"));
  CHECK_THROWS_WITH(schedule_with("/exp2_emulation={\"freq\":4}"), Catch::Contains("/exp2_emulation/res"));
  CHECK_THROWS_WITH(schedule_with("/exp2_emulation=\"auto\""), Catch::Contains("/exp2_emulation"));
  CHECK_THROWS_WITH(schedule_with("/exp2_emulation={\"freq\":4,\"res\":1,\"start_frg\":1}"),
                    Catch::Contains("start_frg"));
}

TEST_CASE("fa3_sm90 trim_last_block: a warpgroup exponentiates the last KV block on the half its rows see",
          "[hopper][fa3][trim]") {
  // sm90::last_block_half by hand. 128 x 128 causal, square: warpgroup 0 (rows 0-63 of the tile)
  // sees keys < 128 m + 64 of the diagonal block [128 m, 128 m + 128), warpgroup 1 all of it.
  CHECK(sm90::last_block_half(0, 128, 128, 1, 0, 512, 512, true));
  CHECK(!sm90::last_block_half(0, 128, 128, 1, 1, 512, 512, true));
  CHECK(sm90::last_block_half(3, 128, 128, 4, 0, 512, 512, true));
  CHECK(!sm90::last_block_half(3, 128, 128, 4, 1, 512, 512, true));
  // 192 x 128, m-block 0 (2 blocks, keys < 256): every warpgroup's rows end by key 192.
  for (int g = 0; g < 3; ++g) CHECK(sm90::last_block_half(0, 192, 128, 2, g, 1024, 1024, true));
  // m-block 1 (rows 192-383, 3 blocks): rows 192-319 end by key 320 = 256 + 64, rows 320-383 not.
  CHECK(sm90::last_block_half(1, 192, 128, 3, 0, 1024, 1024, true));
  CHECK(sm90::last_block_half(1, 192, 128, 3, 1, 1024, 1024, true));
  CHECK(!sm90::last_block_half(1, 192, 128, 3, 2, 1024, 1024, true));
  // Bottom-right aligned: 96 more keys than queries move every diagonal 96 keys right, so m-block 0
  // reaches key 223 (2 blocks): rows 0-63 end by key 160, rows 64-127 by 224, past 128 + 64.
  CHECK(sm90::last_block_half(0, 128, 128, 2, 0, 416, 512, true));
  CHECK(!sm90::last_block_half(0, 128, 128, 2, 1, 416, 512, true));
  // Non-causal: the seqlen_k tail alone. 960 keys in 8 blocks of 128 end at the last one's middle.
  CHECK(sm90::last_block_half(0, 128, 128, 8, 1, 960, 960, false));
  CHECK(!sm90::last_block_half(0, 128, 128, 8, 1, 961, 961, false));
  // Half of 80 keys is not a whole number of 16-key k-steps.
  CHECK(!sm90::last_block_half(0, 128, 80, 1, 0, 512, 512, true));

  // The model: hd64 causal seqlen 512, 128 x 128 tiles. Tile 0 of the CTA is m-block 0 (1 block),
  // tile 1 m-block 1 (2 blocks). The warpgroups swap rows in every other tile: in tile 0
  // warpgroup 0 has rows 0-63 and trims, in tile 1 warpgroup 1 has them and trims. A trimmed
  // block's GEMMs stay whole; its softmax takes half the scores.
  const Hardware hw = h100();
  Problem p = shape(64, 512);
  p.causal = true;
  const std::vector<TileWork> tiles = {TileWork{0, 128, 1, 1}, TileWork{1, 128, 2, 1}};
  const int wg0 = sm90::first_consumer_warp(), wg1 = wg0 + sm90::kWarpsPerWarpgroup;
  // Per (tile, op) of one consumer warp: MMA FLOP, or the MUFU lane-ops of its softmax_exp.
  auto per_tile = [&](const std::string& trim, int warp) {
    std::map<std::pair<int, int>, double> out;
    const CtaProgram prog = load_schedule(schedule("fa3_sm90"), {"/trim_last_block=" + trim})->lower(hw, p, tiles);
    for (const auto& w : prog.warps)
      if (w.warp == warp)
        for (const auto& op : w.ops) {
          if (op.kind == OpKind::Mma) out[{op.tile, op.name}] += op.flops;
          if (op.name == ATTNSIM_OP_SOFTMAX_EXP) out[{op.tile, op.name}] += op.compute->work.mufu_lanes;
        }
    return out;
  };
  const auto on0 = per_tile("\"auto\"", wg0), off0 = per_tile("false", wg0), on1 = per_tile("\"auto\"", wg1);
  constexpr int qk = ATTNSIM_OP_MMA_QK, pv = ATTNSIM_OP_MMA_PV, ex = ATTNSIM_OP_SOFTMAX_EXP;
  for (int t : {0, 1})
    for (int op : {qk, pv}) CHECK(on0.at({t, op}) == off0.at({t, op}));  // GEMMs whole
  // The exp of a whole block and of a half one, per warp: its scores x 32 lanes, by the cost file.
  const CostModel costs = CostModel::load(test::root() + "/configs/costs/sm90_softmax.json");
  const double whole = costs.work("softmax_exp", 64, 2).mufu_lanes, half = costs.work("softmax_exp", 32, 2).mufu_lanes;
  CHECK(whole - half == Approx(32.0 * 32));
  CHECK(off0.at({0, ex}) == Approx(whole));
  CHECK(on0.at({0, ex}) == Approx(half));                 // tile 0: warpgroup 0 trims
  CHECK(on0.at({1, ex}) == Approx(2 * whole));            // tile 1: it has rows 64-127
  CHECK(on1.at({0, ex}) == Approx(whole));                // tile 0: rows 64-127
  CHECK(on1.at({1, ex}) == Approx(whole + half));         // tile 1: rows 0-63, trims
  CHECK(per_tile("true", wg0) == on0);  // auto: on for causal problems at head_dim 64

  const auto s_on = load_schedule(schedule("fa3_sm90"));
  // auto keeps every block whole on non-causal problems and at head_dim 128 and 256; true does
  // where the half is no whole number of 16-key k-steps (n_block 80) or three consumer warpgroups
  // would swap rows.
  for (int hd : {128, 256}) {
    Problem q = shape(hd, 512);
    q.causal = true;
    CHECK(!std::get<sm90::KernelKnobs>(s_on->real_kernel(hw, q).knobs).trim_last_block);
  }
  Problem hd64_long = shape(64, 4096);
  hd64_long.causal = true;
  CHECK(!std::get<sm90::KernelKnobs>(s_on->real_kernel(hw, hd64_long).knobs).trim_last_block);
  CHECK(!std::get<sm90::KernelKnobs>(
             load_schedule(schedule("fa3_sm90"), {"/trim_last_block=true"})->real_kernel(hw, hd64_long).knobs)
             .trim_last_block);  // 192 x 128: three consumer warpgroups
  CHECK(!std::get<sm90::KernelKnobs>(s_on->real_kernel(hw, shape(64, 512)).knobs).trim_last_block);
  CHECK(std::get<sm90::KernelKnobs>(s_on->real_kernel(hw, p).knobs).trim_last_block);
  CHECK_THAT(std::get<sm90::KernelKnobs>(s_on->real_kernel(hw, p).knobs).describe(), Catch::EndsWith(" trim_last"));
  Problem hd256 = shape(256, 4096);
  hd256.causal = true;
  CHECK(!std::get<sm90::KernelKnobs>(
             load_schedule(schedule("fa3_sm90"), {"/trim_last_block=true"})->real_kernel(hw, hd256).knobs)
             .trim_last_block);
  CHECK_THROWS_WITH(load_schedule(schedule("fa3_sm90"), {"/trim_last_block=1"}), Catch::Contains("/trim_last_block"));
  // And it pays: shorter than without on this problem at batch 64, where it was measured
  // (H200, 2026-11-29: 140.3 us against 142.7 us without).
  Problem run = p;
  run.batch = 64;
  CHECK(test::run(schedule("fa3_sm90"), hw, run).time_us <
        test::run(schedule("fa3_sm90"), hw, run, "", {"/trim_last_block=false"}).time_us);
}
