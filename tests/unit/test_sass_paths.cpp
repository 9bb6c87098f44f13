// sass_paths: SASS parsing (vector registers, predicates, destinations), critical paths of
// hand-written snippets with known answers, the analysis of a real KV loop (tests/data excerpt
// of the H200 cuobjdump of kernels/sm90), CostModel::chain_latency, and the SM100 loop counts of a
// hand-written fa4_forward excerpt (tests/data/sass_sm100_snippet.txt).
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "calibrate/sass_barrier_ids.hpp"
#include "calibrate/sass_base_code.hpp"
#include "calibrate/sass_loop_control.hpp"
#include "calibrate/sass_paths.hpp"
#include "lower/costs.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"
#include "test_support.hpp"

using namespace attnsim;
using namespace attnsim::sass;

namespace {
using test::TempCostFile;

std::string data(const std::string& name) { return std::string(ATTNSIM_TEST_DATA) + "/data/" + name; }

const Latencies kLat{4, 3, 17, 20, 5};  // fma, alu, mufu, shfl, f2fp: distinct so the sums say which

/// Instructions from text lines (addresses 0x10 apart), kept alive for the pointers.
struct Snippet {
  std::vector<Instr> code;
  explicit Snippet(const std::vector<std::string>& lines) {
    uint32_t a = 0;
    for (const auto& l : lines) code.push_back(parse_instruction(a += 0x10, l));
  }
  std::vector<const Instr*> span() const {
    std::vector<const Instr*> v;
    for (const auto& i : code) v.push_back(&i);
    return v;
  }
};

std::vector<Reg> regs(std::initializer_list<std::pair<Reg::File, int>> l) {
  std::vector<Reg> v;
  for (auto [f, i] : l) v.push_back({f, i});
  return v;
}

}  // namespace

TEST_CASE("SASS critical path: three FMNMX chains joined and a shuffle", "[sass]") {
  const Snippet s({
      "FMNMX R10, R1, R2, !PT ;",             // chain A: 3
      "FMNMX R11, R3, R4, !PT ;",             // chain B: 3
      "FMNMX R12, R5, R6, !PT ;",             // chain C: 3
      "FMNMX R10, R10, R7, !PT ;",            // A: 6
      "FMNMX R10, R10, R8, !PT ;",            // A: 9
      "FMNMX R11, R11, R9, !PT ;",            // B: 6
      "FMNMX R13, R10, R11, !PT ;",           // A+B: 12
      "FMNMX R13, R13, R12, !PT ;",           // +C: 15
      "SHFL.BFLY PT, R14, R13, 0x1, 0x1f ;",  // 35
      "FMNMX R15, R13, R14, !PT ;",           // 38
  });
  const CriticalPath cp = critical_path(s.span(), kLat);
  CHECK(cp.cycles == 38);
  CHECK(cp.by_name.at("FMNMX") == 6);
  CHECK(cp.by_name.at("SHFL") == 1);
  CHECK(cp.by_class.at(Class::alu) == 6);
  CHECK(cp.path.size() == 7);
  CHECK(cp.path.front()->text == "FMNMX R10, R1, R2, !PT");
  CHECK(cp.path.back()->text == "FMNMX R15, R13, R14, !PT");
  CHECK(s.code[8].dsts == regs({{Reg::R, 14}}));  // SHFL's predicate destination is PT (a constant)
  CHECK(s.code[8].cls == Class::shfl);
}

TEST_CASE("SASS vector registers: a 64-bit destination covers two registers", "[sass]") {
  const Instr wide = parse_instruction(0, "IMAD.WIDE.U32 R4, R2, R3, R6 ;");
  CHECK(wide.dsts == regs({{Reg::R, 4}, {Reg::R, 5}}));
  CHECK(wide.srcs == regs({{Reg::R, 2}, {Reg::R, 3}, {Reg::R, 6}, {Reg::R, 7}}));
  const Instr suffixed = parse_instruction(0, "IADD3 R4.64, R6.64, R8, RZ");
  CHECK(suffixed.dsts == regs({{Reg::R, 4}, {Reg::R, 5}}));
  CHECK(suffixed.srcs == regs({{Reg::R, 6}, {Reg::R, 7}, {Reg::R, 8}}));
  const Instr lds = parse_instruction(0, "LDS.128 R8, [R2.64+0x10]");
  CHECK(lds.dsts == regs({{Reg::R, 8}, {Reg::R, 9}, {Reg::R, 10}, {Reg::R, 11}}));
  CHECK(lds.srcs == regs({{Reg::R, 2}, {Reg::R, 3}}));
  CHECK(lds.cls == Class::memory);
  const Instr stg = parse_instruction(0, "STG.E.128 desc[UR30][R28.64], R24");
  CHECK(stg.dsts.empty());
  CHECK(stg.srcs ==
        regs({{Reg::UR, 30}, {Reg::R, 28}, {Reg::R, 29}, {Reg::R, 24}, {Reg::R, 25}, {Reg::R, 26}, {Reg::R, 27}}));
  CHECK(parse_instruction(0, "CS2R R4, SRZ").dsts == regs({{Reg::R, 4}, {Reg::R, 5}}));
  // Reading the high half of R4.64 waits for the write of the pair: 3 (alu) + 4 (fma).
  const Snippet s({"IADD3 R4.64, R6.64, R8, RZ", "FADD R9, R5, R1", "FADD R10, R3, R1"});
  const CriticalPath cp = critical_path(s.span(), kLat);
  CHECK(cp.cycles == 7);
  CHECK(cp.path.size() == 2);
}

TEST_CASE("SASS predicates: destinations and guards and predicated writes", "[sass]") {
  const Instr isetp = parse_instruction(0, "ISETP.GE.U32.OR P0, PT, R189, UR9, P4");
  CHECK(isetp.dsts == regs({{Reg::P, 0}}));
  CHECK(isetp.srcs == regs({{Reg::R, 189}, {Reg::UR, 9}, {Reg::P, 4}}));
  const Instr carry = parse_instruction(0, "IADD3 R24, P0, R189, R4, RZ");
  CHECK(carry.dsts == regs({{Reg::R, 24}, {Reg::P, 0}}));
  const Instr lea = parse_instruction(0, "LEA.HI.X R29, R24, UR21, R25, 0x4, P0");
  CHECK(lea.dsts == regs({{Reg::R, 29}}));
  CHECK(lea.srcs.back() == Reg{Reg::P, 0});
  const Instr plop = parse_instruction(0, "PLOP3.LUT P0, PT, PT, PT, UP0, 0x80, 0x0");
  CHECK(plop.dsts == regs({{Reg::P, 0}}));
  CHECK(plop.srcs == regs({{Reg::UP, 0}}));
  const Instr guarded = parse_instruction(0, "@!P2 FADD R193, -R191, R216");
  CHECK(guarded.predicated);
  CHECK(guarded.guard == "!P2");
  CHECK(guarded.srcs == regs({{Reg::P, 2}, {Reg::R, 191}, {Reg::R, 216}}));
  CHECK_FALSE(parse_instruction(0, "@PT FADD R1, R2, R3").predicated);
  const Instr branch = parse_instruction(0x100, "@P0 BRA 0x80 ;");
  CHECK(branch.is_branch());
  CHECK(branch.backward());
  CHECK(branch.cls == Class::control);
  CHECK(parse_instruction(0, "S2UR UR22, SR_CLOCKLO").clock_read);
  CHECK(parse_instruction(0, "@!P1 IMAD.MOV.U32 R24, RZ, RZ, -0x800000").writes_neg_inf);

  SECTION("the guard is a source; a predicated write leaves the older value possible") {
    const Snippet s({
        "FMNMX R1, R2, R3, !PT",                // 3
        "FSETP.NEU.AND P2, PT, R1, -INF , PT",  // 6
        "IMAD.MOV.U32 R5, RZ, RZ, 0x3f800000",  // 3
        "@P2 FADD R4, -R1, R6",                 // 10
        "@P2 MUFU.EX2 R5, R4",                  // 27
        "FMUL R7, R5, R5",                      // max(3, 27) + 4 = 31
    });
    const CriticalPath cp = critical_path(s.span(), kLat);
    CHECK(cp.cycles == 31);
    CHECK(cp.path.size() == 5);
    CHECK(cp.by_name.at("ALU") == 1);  // FSETP
    CHECK(cp.by_name.at("MUFU.EX2") == 1);
  }
  SECTION("a reader under the same guard sees only the guarded write") {
    const Snippet s({
        "MUFU.EX2 R8, R9",            // 17
        "@P1 LDC R8, c[0x0][0x4a4]",  // a load: ready at 0 (not on chains)
        "@P1 FMUL R10, R8, R8",       // same guard: 0 + 4
        "FMUL R11, R8, R8",           // unguarded: either value, 17 + 4 = 21
    });
    const CriticalPath cp = critical_path(s.span(), kLat);
    CHECK(cp.cycles == 21);
    CHECK(cp.path.back()->text == "FMUL R11, R8, R8");
    const Snippet t({"MUFU.EX2 R8, R9", "@P1 LDC R8, c[0x0][0x4a4]", "@P1 FMUL R10, R8, R8"});
    CHECK(critical_path(t.span(), kLat).cycles == 17);  // the MUFU alone
  }
  SECTION("a rewritten predicate is a different guard") {
    const Snippet s(
        {"MUFU.EX2 R8, R9", "@P1 LDC R8, c[0x0][0x4a4]", "ISETP.NE.AND P1, PT, R2, RZ, PT", "@P1 FMUL R10, R8, R8"});
    CHECK(critical_path(s.span(), kLat).cycles == 21);
  }
}

TEST_CASE("consumer.cuh emits 15 to 19 clock reads per KV-loop iteration", "[sass]") {
  CHECK(consumer_loop_spans(true, true).size() == 17);
  CHECK(consumer_loop_spans(false, true).size() == 15);
  CHECK(consumer_loop_spans(true, false).size() == 19);
  CHECK(consumer_loop_spans(false, false).size() == 15);
  CHECK(consumer_loop_spans(false, true)[1] == "mma_qk");
  // With overlap both wgmma waits precede the softmax; listings older than a5f1bb0 had one after.
  const auto now = consumer_loop_spans(false, true), before = consumer_loop_spans(false, true, false);
  const auto at = [](const std::vector<std::string>& v, const std::string& op) {
    return std::find(v.begin(), v.end(), op) - v.begin();
  };
  CHECK(std::count(now.begin(), now.begin() + at(now, "softmax_max"), "wait wgmma") == 2);
  CHECK(std::count(before.begin(), before.begin() + at(before, "softmax_max"), "wait wgmma") == 1);
}

TEST_CASE("SASS analysis of the real hd128 KV loop (H200 cuobjdump excerpt)", "[sass]") {
  std::ifstream in(data("sass_fa3_hd128_kv_loop.txt"));
  REQUIRE(in);
  const auto fns = parse_cuobjdump(in);
  REQUIRE(fns.size() == 1);
  const auto knobs = fa3_knobs(fns[0].mangled);
  REQUIRE(knobs);
  CHECK(knobs->head_dim == 128);
  CHECK(knobs->n_block == 128);
  CHECK(knobs->pingpong);
  CHECK(knobs->overlap);
  CHECK(knobs->trace);
  const Latencies lat{4, 4, 18, 24, 6};
  const KernelAnalysis ka = analyse_kernel(fns[0], lat);
  CHECK(ka.loop_begin == 0x5ff0);
  CHECK(ka.loop_end == 0xae00);
  CHECK(ka.loop_off_path.at(Skip::mask) == 390);
  REQUIRE(ka.spans.size() == 18);
  CHECK(ka.spans[0].op == "wait pingpong");
  CHECK(ka.spans[3].op == "mma_qk");
  CHECK(ka.spans.back().op == "final_o");

  const sass::Span& mx = *ka.find("softmax_max");
  CHECK(mx.counts.at("FMNMX") == 74);  // 64 elements + per row 3 (tree of 4 partials) + 2 (after each shuffle)
  CHECK(mx.counts.at("SHFL") == 4);
  CHECK(mx.counts.at("MUFU.EX2") == 2);  // the rescale factors
  CHECK(mx.off_path.at(Skip::mask) == 390);
  // 8 dependent FMNMX per partial max, 2 to join the partials, 2 shuffle steps with an FMNMX each,
  // then FSETP (-inf?), FADD, FMUL and the ex2 of the rescale factor.
  CHECK(mx.chain.by_name.at("FMNMX") == 12);
  CHECK(mx.chain.by_name.at("SHFL") == 2);
  CHECK(mx.chain.cycles == 12 * 4 + 2 * 24 + 4 + 4 + 4 + 18);

  const sass::Span& ex = *ka.find("softmax_exp");
  CHECK(ex.counts.at("MUFU.EX2") == 64);
  CHECK(ex.counts.at("FFMA") == 66);
  CHECK(ex.counts.at("FADD") == 70);
  CHECK(ex.off_path.at(Skip::trace) == 14);  // softmax_max's record store
  CHECK(ex.instrumentation == 4);            // clock read, record index, guard, branch
  CHECK(ex.chain.by_name.at("FADD") == 10);  // 8 dependent adds per partial sum + 2 to join them
  CHECK(ex.chain.by_name.at("MUFU.EX2") == 1);
  CHECK(ex.chain.cycles == 74);

  const sass::Span& rescale = *ka.find("rescale_o");
  CHECK(rescale.counts.at("FMUL") == 64);
  CHECK(rescale.counts.at("F2FP.BF16.PACK") == 32);
  CHECK(rescale.chain.cycles == 6);

  const sass::Span& fin = *ka.find("final_o");
  CHECK(fin.counts.at("ST") == 32);  // 32-bit generic stores of O to shared memory
  CHECK(fin.counts.at("MUFU.RCP") == 2);
  CHECK(fin.off_path.at(Skip::slow_path) > 0);
  CHECK(fin.chain.by_name.at("SHFL") == 2);
  CHECK(fin.chain.cycles == 96);

  // The same loop read as a plain instance's: the path through it, every instruction on it
  // counted (the clock reads and record code too, as a plain build would have none of them).
  const PlainKvLoop plain = plain_kv_loop(fns[0]);
  CHECK(plain.begin == ka.loop_begin);
  CHECK(plain.end == ka.loop_end);
  int off = 0;
  for (const auto& [why, n] : ka.loop_off_path) off += n;
  CHECK(plain.on_path == ka.loop_instructions - off);
  CHECK(plain.issue_cycles == -1);  // the excerpt keeps no encodings, so no control codes
}

TEST_CASE("PV wait position: the row max and exponentials before an overlapped step's PV wait", "[sass]") {
  // Two overlapped steps: QK's wait (gsb0, 0x1), softmax, PV's wait (gsb0, 0x0), up to the next
  // HGMMA. The first runs its whole max and a quarter of its exponentials before the PV's wait,
  // the second its max only.
  const Snippet s({
      "WARPGROUP.DEPBAR.LE gsb0, 0x1 ;", "FMNMX R10, R1, R2, !PT ;", "FMNMX R10, R10, R3, !PT ;",
      "MUFU.EX2 R20, R4 ;", "WARPGROUP.DEPBAR.LE gsb0, 0x0 ;", "MUFU.EX2 R21, R5 ;", "MUFU.EX2 R22, R6 ;",
      "MUFU.EX2 R23, R7 ;", "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;",  //
      "WARPGROUP.DEPBAR.LE gsb0, 0x1 ;", "FMNMX R10, R1, R2, !PT ;", "FMNMX R10, R10, R3, !PT ;",
      "WARPGROUP.DEPBAR.LE gsb0, 0x0 ;", "MUFU.EX2 R21, R5 ;", "MUFU.EX2 R22, R6 ;",
      "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;",
  });
  const Function fn{"f", "f", s.code};
  const auto steps = pv_wait_steps(fn);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].address == 0x50);
  CHECK(std::make_pair(steps[0].max_before, steps[0].max_total) == std::make_pair(2, 2));
  CHECK(std::make_pair(steps[0].ex2_before, steps[0].ex2_total) == std::make_pair(1, 4));
  CHECK(std::make_pair(steps[1].ex2_before, steps[1].ex2_total) == std::make_pair(0, 2));
  CHECK(max_before_pv_wait(steps) == 1.0);
  CHECK(exp_before_pv_wait(steps) == Approx((0.25 + 0) / 2));
  CHECK(exp_before_pv_wait({}) == -1);  // no overlapped step

  // The real traced hd128 excerpt (an older build): its one overlapped step waits for the PV after
  // the whole softmax, its 74 FMNMX and 66 MUFU.EX2 (64 scores, 2 rescale factors).
  std::ifstream in(data("sass_fa3_hd128_kv_loop.txt"));
  REQUIRE(in);
  const auto real = pv_wait_steps(parse_cuobjdump(in).at(0));
  REQUIRE(real.size() == 1);
  CHECK(real[0].address == 0xa4b0);
  CHECK(std::make_pair(real[0].max_before, real[0].max_total) == std::make_pair(74, 74));
  CHECK(std::make_pair(real[0].ex2_before, real[0].ex2_total) == std::make_pair(66, 66));
  CHECK(real[0].clocked);
}

TEST_CASE("A BRA.DIV fallback's branch back into the KV loop is no loop of its own", "[sass]") {
  // ptxas places the fallback of a warp-wide operation (here a shuffle, as for the GEMMs' ring
  // stage from lane 0 in kernels/sm90/consumer.cuh) after the kernel's body: BRA.DIV jumps to it
  // when the warp has diverged, and it branches back behind the BRA.DIV. That backward branch
  // spans the loop's tail and the epilogue, with HGMMA, MUFU.EX2 and more clock reads than the
  // loop; taken for a loop, it was analysed as the KV loop (sass-costs failed on the listing).
  std::ifstream in(data("sass_fa3_hd128_kv_loop.txt"));
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  std::string listing = text.str();
  const std::string warpsync = "/*6020*/                   WARPSYNC.ALL ;";
  const size_t at = listing.find(warpsync);
  REQUIRE(at != std::string::npos);
  listing.replace(at, warpsync.size(), "/*6020*/ BRA.DIV UR8, 0xc600 ;");
  listing +=
      "/*c600*/ BSSY B3, 0xc650 ;\n"
      "/*c610*/ WARPSYNC.COLLECTIVE R4, 0xc640 ;\n"
      "/*c620*/ SHFL.IDX P1, R0, R0, R3, R2 ;\n"
      "/*c630*/ ENDCOLLECTIVE ;\n"
      "/*c640*/ BSYNC B3 ;\n"
      "/*c650*/ BRA 0x6030 ;\n";
  std::istringstream with_fallback(listing);
  const auto fns = parse_cuobjdump(with_fallback);
  REQUIRE(fns.size() == 1);
  REQUIRE(fns[0].code.back().address == 0xc650);
  const KernelAnalysis ka = analyse_kernel(fns[0], Latencies{4, 4, 18, 24, 6});
  CHECK(ka.loop_begin == 0x5ff0);
  CHECK(ka.loop_end == 0xae00);
  REQUIRE(ka.spans.size() == 18);
  CHECK(ka.spans[3].op == "mma_qk");
  CHECK(plain_kv_loop(fns[0]).begin == 0x5ff0);
}

TEST_CASE("loop control of the dynamic scheduler's kernels: the static twin's gaps and the plain loops' difference",
          "[sass]") {
  auto knobs = [](bool dynamic, bool trace) {
    Fa3Knobs k;
    k.head_dim = k.m_block = k.n_block = 128;
    k.kv_stage = 2;
    k.pingpong = k.overlap = true;
    k.reg_consumer = 240, k.reg_producer = 24;
    k.dynamic = dynamic, k.trace = trace, k.own_o = true;
    return k;
  };
  auto traced = [&](bool dynamic, int gap_instructions) {
    KernelAnalysis a;
    a.knobs = knobs(dynamic, true);
    sass::Span gap, qk;
    gap.op = "-", qk.op = "mma_qk";
    gap.code.assign(gap_instructions, nullptr);
    gap.issue_cycles = 2 * gap_instructions;
    qk.code.assign(40, nullptr);
    a.spans = {qk, gap, gap};
    return a;
  };
  const std::vector<KernelAnalysis> kernels = {traced(false, 27), traced(true, 25)};
  PlainKvLoop stat_loop, dyn_loop;
  stat_loop.on_path = 544, stat_loop.issue_cycles = 1123;
  dyn_loop.on_path = 561, dyn_loop.issue_cycles = 1126;
  const std::vector<PlainLoop> plain = {{knobs(false, false), stat_loop}, {knobs(true, false), dyn_loop}};

  const LoopControlCount s = loop_control_count(kernels[0], kernels, plain);
  CHECK(s.instructions == 54);  // its own gaps
  CHECK(s.issue_cycles == 108);
  CHECK_FALSE(s.plain_over_static_instructions);
  const LoopControlCount d = loop_control_count(kernels[1], kernels, plain);
  CHECK(d.instructions == 54);  // the static twin's gaps, not its own 50
  CHECK(d.plain_over_static_instructions == 17);
  CHECK(d.plain_over_static_issue_cycles == 3);
  // Without the static twin's plain loop: its own gaps, nothing added.
  const LoopControlCount alone = loop_control_count(kernels[1], kernels, {plain[1]});
  CHECK(alone.instructions == 50);
  CHECK_FALSE(alone.plain_over_static_instructions);
}

TEST_CASE("CostModel chain latency: interpolated between points and scaled outside them", "[sass][costs]") {
  const CostModel m = CostModel::load(data("costs_chain.json"));
  Hardware hw;
  hw.alu_latency = 3;
  hw.shfl_latency = 20;
  hw.fma_latency = 4;
  CHECK(m.chain_latency("max", 32, hw) == Approx(8 * 3 + 2 * 20));
  CHECK(m.chain_latency("max", 64, hw) == Approx(12 * 3 + 2 * 20));
  CHECK(m.chain_latency("max", 48, hw) == Approx((64 + 76) / 2.0));
  CHECK(m.chain_latency("max", 16, hw) == Approx(64 * 0.5));
  CHECK(m.chain_latency("max", 128, hw) == Approx(76 * 2));
  CHECK(m.chain_latency("plain", 64, hw) == 0);
  CHECK(m.latency("plain") == 40);
  CHECK(m.latency("max") == 0);
  CHECK_THROWS_AS(m.chain_latency("missing", 64, hw), InputError);

  SECTION("measured timings: alone interpolated and scaled, slowdowns interpolated and held") {
    auto doc = load_json_file(data("costs_chain.json"));
    doc["blocks"]["max"]["measured"] = {
        {"source", "test"},
        {"points",
         {{{"elements", 32}, {"alone_cycles", 100}, {"beside_wgmma_ss_cycles", 150}, {"beside_wgmma_rs_cycles", 120}},
          {{"elements", 64}, {"alone_cycles", 200}, {"beside_wgmma_ss_cycles", 400},
           {"beside_wgmma_rs_cycles", 180}}}}};
    const TempCostFile tmp(doc, "measured");
    const CostModel mm = CostModel::load(tmp.string());
    CHECK(mm.measured_timing("plain", 64).alone == 0);
    const MeasuredTiming mid = mm.measured_timing("max", 48);
    CHECK(mid.alone == Approx(150));
    CHECK(mid.beside_ss == Approx((1.5 + 2.0) / 2));
    CHECK(mid.beside_rs == Approx((1.2 + 1.0) / 2));  // 180 / 200 < 1 counts as 1
    const MeasuredTiming wide = mm.measured_timing("max", 128);
    CHECK(wide.alone == Approx(400));
    CHECK(wide.beside_ss == Approx(2.0));
    CHECK(wide.beside_copies == std::array<double, 3>{1, 1, 1});  // not measured: no slowdown
    // The slowdown while copies land: interpolated, held past the last point, 1 where unmeasured.
    doc["blocks"]["max"]["measured"]["points"][1]["while_copies_land"] = {
        {"alone_ratio", 2.0}, {"beside_wgmma_ss_ratio", 1.5}, {"beside_wgmma_rs_ratio", 1.2}, {"source", "test"}};
    const TempCostFile landing(doc, "measured_landing");
    const CostModel ml = CostModel::load(landing.string());
    CHECK(ml.measured_timing("max", 48).beside_copies[0] == Approx(1.5));
    CHECK(ml.measured_timing("max", 48).beside_copies[2] == Approx(1.1));
    CHECK(ml.measured_timing("max", 128).beside_copies[1] == Approx(1.5));
    doc["blocks"]["max"]["measured"]["points"][1]["while_copies_land"]["alone_ratio"] = 0.5;
    const TempCostFile faster(doc, "measured_landing_bad");
    CHECK_THROWS_WITH(CostModel::load(faster.string()),
                      Catch::Contains("/blocks/max/measured/points/1/while_copies_land/alone_ratio"));
    doc["blocks"]["max"]["measured"]["points"][1].erase("while_copies_land");
    doc["blocks"]["max"]["measured"]["points"][1]["elements"] = 16;
    const TempCostFile bad(doc, "measured_bad");
    CHECK_THROWS_WITH(CostModel::load(bad.string()), Catch::Contains("/blocks/max/measured/points/1/elements"));
  }

  SECTION("a chain may name only instructions with a latency class, in increasing elements") {
    auto doc = load_json_file(data("costs_chain.json"));
    doc["blocks"]["max"]["chain"]["points"][0]["STS.32"] = 1;
    const TempCostFile tmp(doc, "chain_bad");
    CHECK_THROWS_WITH(CostModel::load(tmp.string()), Catch::Contains("without a latency_class"));
    doc = load_json_file(data("costs_chain.json"));
    doc["blocks"]["max"]["chain"]["points"][1]["elements"] = 16;
    const TempCostFile tmp2(doc, "chain_order");
    CHECK_THROWS_WITH(CostModel::load(tmp2.string()), Catch::Contains("increasing order"));
  }
  SECTION("loop control: the instance's point, else the mean of its structure's, else of all") {
    CHECK(m.loop_control(128, true, true, false).instructions == 0);  // the file has none
    auto doc = load_json_file(data("costs_chain.json"));
    auto pt = [](int hd, bool pp, bool ov, double n, double c) {
      return nlohmann::json{{"kernel", "k"},    {"head_dim", hd},    {"pingpong", pp},   {"overlap", ov},
                            {"dynamic", false}, {"instructions", n}, {"issue_cycles", c}};
    };
    doc["loop_control"] = {
        {"derivation", "test"},
        {"source", "test"},
        {"points", {pt(128, true, true, 50, 110), pt(64, false, true, 40, 80), pt(256, false, true, 44, 90)}}};
    const TempCostFile tmp(doc, "loop_control");
    const CostModel mm = CostModel::load(tmp.string());
    CHECK(mm.loop_control(128, true, true, false).issue_cycles == 110);  // its own point
    CHECK(mm.loop_control(64, false, true, false).instructions == 40);
    CHECK(mm.loop_control(128, false, true, false).issue_cycles == Approx(85));          // same structure: mean of 2
    CHECK(mm.loop_control(128, false, false, false).instructions == Approx(134.0 / 3));  // none: mean of all
    // Points counted at a KV block width: the instance's width first, then its head_dim's others.
    auto wide = pt(256, false, true, 60, 174);
    wide["n_block"] = 80;
    auto narrow = pt(256, false, true, 40, 100);
    narrow["n_block"] = 64;
    doc["loop_control"]["points"] = {wide, narrow, pt(64, false, true, 40, 80)};
    const TempCostFile widths(doc, "loop_control_widths");
    const CostModel mw = CostModel::load(widths.string());
    CHECK(mw.loop_control(256, false, true, false, 80).issue_cycles == 174);
    CHECK(mw.loop_control(256, false, true, false, 64).issue_cycles == 100);
    CHECK(mw.loop_control(256, false, true, false, 128).issue_cycles == Approx(137));  // its head_dim's mean
    CHECK(mw.loop_control(256, false, true, false).issue_cycles == Approx(137));       // any width
    // A dynamic instance's point: its static twin's gaps plus the plain loops' difference.
    auto dyn = pt(128, true, true, 54, 125);
    dyn["dynamic"] = true;
    dyn["plain_over_static_instructions"] = 17;
    dyn["plain_over_static_issue_cycles"] = -5;
    doc["loop_control"]["points"].push_back(dyn);
    const TempCostFile with_dyn(doc, "loop_control_dynamic");
    const LoopControl dl = CostModel::load(with_dyn.string()).loop_control(128, true, true, true);
    CHECK(dl.instructions == 71);
    CHECK(dl.issue_cycles == 120);
    doc["loop_control"]["points"].back()["plain_over_static_instructions"] = -60;
    const TempCostFile negative(doc, "loop_control_negative");
    CHECK_THROWS_WITH(CostModel::load(negative.string()), Catch::Contains("at least 0 instructions"));
    doc["loop_control"]["points"].erase(doc["loop_control"]["points"].size() - 1);
    doc["loop_control"]["points"][0].erase("issue_cycles");
    const TempCostFile bad(doc, "loop_control_bad");
    CHECK_THROWS_WITH(CostModel::load(bad.string()), Catch::Contains("/loop_control/points/0"));
  }
  SECTION("tile control: head and tail of the instance's point, else of its structure's mean") {
    CHECK(m.tile_control(128, true, true, false, true).head.instructions == 0);  // the file has none
    auto doc = load_json_file(data("costs_chain.json"));
    auto pt = [](int hd, bool dyn, double hn, double hc, double tn, double tcyc) {
      return nlohmann::json{{"kernel", "k"},           {"head_dim", hd},
                            {"pingpong", true},        {"overlap", true},
                            {"dynamic", dyn},          {"own_o", true},
                            {"head_instructions", hn}, {"head_issue_cycles", hc},
                            {"tail_instructions", tn}, {"tail_issue_cycles", tcyc}};
    };
    doc["tile_control"] = {
        {"derivation", "test"},
        {"source", "test"},
        {"points",
         {pt(128, false, 99, 406, 86, 234), pt(64, false, 109, 420, 86, 240), pt(128, true, 48, 196, 73, 199)}}};
    const TempCostFile tmp(doc, "tile_control");
    const CostModel mm = CostModel::load(tmp.string());
    CHECK(mm.tile_control(128, true, true, true, true).head.issue_cycles == 196);  // its own point
    CHECK(mm.tile_control(128, true, true, false, true).tail.instructions == 86);
    CHECK(mm.tile_control(256, true, true, false, true).head.issue_cycles == Approx(413));          // mean of 2
    CHECK(mm.tile_control(256, false, true, false, false).tail.issue_cycles == Approx(673.0 / 3));  // of all
    doc["tile_control"]["points"][1].erase("own_o");
    const TempCostFile bad(doc, "tile_control_bad");
    CHECK_THROWS_WITH(CostModel::load(bad.string()), Catch::Contains("/tile_control/points/1"));
  }
  SECTION("pv wait: the instance's point, else the mean at its head_dim and O staging, else the source order") {
    CHECK(m.max_before_pv_wait(128, true, true, false, true) == 0);  // the file has none
    auto doc = load_json_file(data("costs_chain.json"));
    auto pt = [](int hd, bool pp, bool own_o, double f) {
      return nlohmann::json{{"kernel", "k"},    {"head_dim", hd}, {"pingpong", pp},         {"overlap", true},
                            {"dynamic", false}, {"own_o", own_o}, {"max_before_pv_wait", f}};
    };
    doc["pv_wait"] = {{"derivation", "test"},
                      {"source", "test"},
                      {"points", {pt(128, true, true, 1.0), pt(128, false, true, 0.5), pt(128, true, false, 0.2)}}};
    const TempCostFile tmp(doc, "pv_wait");
    const CostModel mm = CostModel::load(tmp.string());
    CHECK(mm.max_before_pv_wait(128, false, true, false, true) == 0.5);         // its own point
    CHECK(mm.max_before_pv_wait(128, true, true, true, true) == Approx(0.75));  // head_dim and O staging
    CHECK(mm.max_before_pv_wait(128, false, true, true, false) == Approx(0.2));
    CHECK(mm.max_before_pv_wait(256, true, true, false, false) == 0);  // no instance of this head_dim
    doc["pv_wait"]["points"][2]["max_before_pv_wait"] = 1.5;
    const TempCostFile bad(doc, "pv_wait_bad");
    CHECK_THROWS_WITH(CostModel::load(bad.string()), Catch::Contains("/pv_wait/points/2/max_before_pv_wait"));
    // hd256 at two widths, ptxas placing the wait differently: the tile's own width decides.
    auto at = [&](int n, double f) {
      auto j = pt(256, false, false, f);
      j["n_block"] = n;
      return j;
    };
    doc["pv_wait"]["points"] = {at(80, 0.115), at(64, 0.909)};
    const TempCostFile widths(doc, "pv_wait_widths");
    const CostModel mw = CostModel::load(widths.string());
    CHECK(mw.max_before_pv_wait(256, false, true, false, false, 80) == Approx(0.115));
    CHECK(mw.max_before_pv_wait(256, false, true, false, false, 64) == Approx(0.909));
    CHECK(mw.max_before_pv_wait(256, false, true, false, false) == Approx(0.512));  // any width: the mean
  }
  SECTION("a block's provenance needs its source; \"was\" keeps what a count replaced") {
    auto doc = load_json_file(data("costs_chain.json"));
    doc["blocks"]["plain"]["provenance"] = "measured";
    const TempCostFile tmp(doc, "provenance");
    CHECK_THROWS_WITH(CostModel::load(tmp.string()), Catch::Contains("/blocks/plain/source"));
    doc["blocks"]["plain"]["source"] = "counted in a listing";
    doc["blocks"]["plain"]["was"] = "derived: 2 per element";
    doc["instructions"].begin()->emplace("was", "published 16");
    const TempCostFile tmp2(doc, "was");
    CHECK(CostModel::load(tmp2.string()).latency("plain") == 40);
  }
}

TEST_CASE("SASS tile control of a hand-written plain fa3_forward tile loop", "[sass][tile]") {
  std::ifstream in(data("sass_sm90_tile_snippet.txt"));
  REQUIRE(in);
  const auto fns = parse_cuobjdump(in);
  REQUIRE(fns.size() == 1);
  const auto k = fa3_knobs(fns[0].mangled);  // 12 template arguments: dynamic, own O, L2 sections
  REQUIRE(k);
  CHECK(k->head_dim == 128);
  CHECK_FALSE(k->trace);
  CHECK_FALSE(k->dynamic);
  CHECK(k->own_o);
  const TilePaths tc = tile_paths(fns[0], kLat);
  auto addresses = [](const std::vector<const Instr*>& v) {
    std::vector<uint32_t> a;
    for (const Instr* in : v) a.push_back(in->address);
    return a;
  };
  // Tail: the TMA store's uniform loop and the lane's LSE fall through; the predicated back edge
  // over the tile's HGMMA is the tile loop's.
  CHECK(tc.tail_begin == 0xf0);
  CHECK(addresses(tc.tail) == std::vector<uint32_t>{0xf0, 0x100, 0x110, 0x120, 0x130, 0x140, 0x150});
  CHECK(tc.tail_issue_cycles == 1 + 1 + 1 + 2 + 1 + 2 + 1);
  // Head: from the loop's top, the exit test's fall-through, the q.full wait and its retry loop
  // left out, up to the pingpong turn.
  CHECK(tc.loop_top == 0x10);
  CHECK(tc.head_end == 0xb0);
  CHECK(addresses(tc.head) == std::vector<uint32_t>{0x10, 0x20, 0x30, 0x40, 0x60, 0xa0});
  CHECK(tc.head_issue_cycles == 1 + 2 + 1 + 1 + 1 + 3);
  CHECK(tc.tail_chain.cycles == Approx(kLat.mufu));  // MUFU.LG2 -> STG: one MUFU on the chain

  // A divergence check (BRA.DIV) in place of the exit test's IADD3, its fallback past the q.full
  // wait and the tile slot: a converged warp goes on, so the head keeps its path (the fallback's
  // region holds a retry loop, which once made the walk jump over it).
  Function div = fns[0];
  Instr bra_div = parse_instruction(0x40, "BRA.DIV UR8, 0x140");
  bra_div.stall = div.code[4].stall;
  div.code[4] = bra_div;
  const TilePaths dc = tile_paths(div, kLat);
  CHECK(addresses(dc.head) == std::vector<uint32_t>{0x10, 0x20, 0x30, 0x40, 0x60, 0xa0});
  CHECK(dc.head_end == 0xb0);

  Function no_store = fns[0];
  no_store.code.erase(no_store.code.begin() + 14);  // the UTMASTG
  CHECK_THROWS_WITH(tile_paths(no_store, kLat), Catch::Contains("no UTMASTG"));
}

TEST_CASE("SM100 loop counts of a hand-written fa4_forward listing", "[sass][sm100]") {
  // A correction KV loop holding the O rescale's chunk loop behind `i > 0` and the vote, the
  // final O's chunk loop, and a softmax KV loop with an mbarrier retry loop, a masking region, an
  // emulated exp2, a divergence check (BRA.DIV), a spill reload and a named-barrier arrive.
  std::ifstream in(data("sass_sm100_snippet.txt"));
  REQUIRE(in);
  const auto fns = parse_cuobjdump(in);
  REQUIRE(fns.size() == 1);
  const auto k = fa4_knobs(fns[0].mangled);
  REQUIRE(k);
  CHECK(k->head_dim == 128);
  CHECK(k->q_stage == 2);
  CHECK(k->emu_freq == 16);
  CHECK(k->emu_res == 4);
  CHECK(k->correction_wg);
  CHECK(!k->trace);
  CHECK(!fa4_knobs(
      "_ZN7attnsim4sm9011fa3_forwardINS0_6TraitsILi128ELi128ELi128ELi3ELb1ELb1ELi240ELi24ELb1EEEEEvNS0_6ParamsE"));

  const Sm100Analysis a = analyse_sm100(fns[0]);
  REQUIRE(a.regions.size() == 5);
  CHECK(a.regions[0].name == "softmax");
  CHECK(a.rescale_copies == 1);
  CHECK(a.final_copies == 1);
  CHECK(a.copies_agree);

  const Region& sm = *a.find("softmax");
  CHECK(sm.begin == 0x1b0);
  CHECK(sm.end == 0x350);
  // The retry loop and the mask are skipped; BRA.DIV (a condition operand) is not taken.
  CHECK(sm.code.size() == 20);
  CHECK(sm.off_path.at(Skip::wait_retry) == 5);
  CHECK(sm.off_path.at(Skip::mask) == 2);
  const std::map<std::string, int> sm_counts = {
      {"barrier", 2},  {"OTHER", 4}, {"LDTM.x32", 1}, {"ALU", 2},   {"FMNMX3", 1},   {"FMNMX", 2},         {"FFMA", 1},
      {"MUFU.EX2", 1}, {"FADD", 2},  {"CVT", 1},      {"spill", 1}, {"STTM.x16", 1}, {"F2FP.BF16.PACK", 1}};
  CHECK(sm.counts == sm_counts);
  CHECK(a.find("mask")->counts == std::map<std::string, int>{{"ALU", 2}});

  // `i > 0` is passed, the vote's guard skips the rescale loop, its fence and the NOP.
  const Region& corr = *a.find("correction");
  CHECK(corr.begin == 0x0);
  CHECK(corr.code.size() == 12);
  CHECK(corr.off_path.at(Skip::inner_loop) == 8);
  CHECK(corr.counts == std::map<std::string, int>{{"barrier", 3}, {"ALU", 5}, {"LDS.32", 1}, {"OTHER", 3}});

  CHECK(a.find("rescale_o")->begin == 0x80);
  CHECK(a.find("rescale_o")->counts ==
        std::map<std::string, int>{{"LDTM.x16", 1}, {"FMUL", 2}, {"STTM.x16", 1}, {"ALU", 1}, {"OTHER", 1}});
  CHECK(a.find("final_o")->counts ==
        std::map<std::string, int>{
            {"LDTM.x16", 1}, {"FMUL", 2}, {"F2FP.BF16.PACK", 1}, {"STS.128", 1}, {"ALU", 1}, {"OTHER", 1}});

  const Instr bra_u = parse_instruction(0, "BRA.U !UP0, 0x9740");
  CHECK(bra_u.predicated);
  CHECK(bra_u.target == 0x9740u);
  CHECK(bra_u.srcs == regs({{Reg::UP, 0}}));
  CHECK(sm100_cost_name(parse_instruction(0, "LDCU UR8, c[0x0][0x5ac]")) == "OTHER");
  CHECK(sm100_cost_name(parse_instruction(0, "R2UR UR8, R37")) == "ALU");
  CHECK(sm100_cost_name(parse_instruction(0, "MUFU.RCP R2, R37")) == "MUFU.RCP");
  CHECK(sm100_cost_name(parse_instruction(0, "I2FP.F32.S32 R3, R4")) == "CVT");
}

TEST_CASE("control codes - stall cycles and scoreboards from the encoding's high word", "[sass]") {
  // Three instructions of an H100 listing with their two encoding words each.
  std::istringstream in(R"(	Function : _Z1fv
        /*6a70*/               @P2 MUFU.EX2 R198, R23 ;                     /* 0x0000001700c62308 */
                                                                            /* 0x0003e40000000800 */
        /*6a80*/               @P0 FMUL R21, R21, UR21 ;                    /* 0x0000001515150c20 */
                                                                            /* 0x000fcc0008400000 */
        /*6ac0*/                   FSEL R21, -R20, -RZ, P0 ;                /* 0x800000ff14157208 */
                                                                            /* 0x004fe20000000100 */
        /*6ad0*/                   FFMA R24, R24, UR20, R152.reuse ;        /* 0x0000001418187c23 */
)");
  const auto fns = parse_cuobjdump(in);
  REQUIRE(fns.size() == 1);
  REQUIRE(fns[0].code.size() == 4);
  const Instr& mufu = fns[0].code[0];
  CHECK(mufu.stall == 2);
  CHECK(mufu.yield);
  CHECK(mufu.write_barrier == 7);
  CHECK(mufu.read_barrier == 1);  // its source register may be rewritten once scoreboard 1 clears
  CHECK(fns[0].code[1].stall == 6);  // FMUL -> the MUFU that reads R21: the FMUL's latency
  const Instr& fsel = fns[0].code[2];
  CHECK(fsel.stall == 1);
  CHECK(fsel.wait_mask == 0b100);  // waits on scoreboard 2 before rewriting R21
  CHECK(fns[0].code[3].stall == -1);  // no high word in the listing
  std::vector<const Instr*> span = {&fns[0].code[0], &fns[0].code[1], &fns[0].code[2]};
  CHECK(static_issue_cycles(span) == 2 + 6 + 1);
  span.push_back(&fns[0].code[3]);
  CHECK(static_issue_cycles(span) == -1);
}

TEST_CASE("The PV wait's place in overlapped KV steps of a hand-written listing", "[sass]") {
  // An unmasked step whose PV wait ptxas sank below 3 of the row max's 4 FMNMX, a masked step
  // (scores set to -INF) that waits before its max and reads the SM clock (a traced build's
  // recorded step), and a QK wait with no PV wait before the next GEMM (a sequential step: not
  // counted).
  const std::vector<std::pair<uint32_t, const char*>> text = {
      {0x00, "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24, gsb0"},
      {0x10, "WARPGROUP.DEPBAR.LE gsb0, 0x1"},
      {0x20, "FMNMX R0, R24, R25, !PT"},
      {0x30, "FMNMX R0, R0, R26, !PT"},
      {0x40, "FMNMX R0, R0, R27, !PT"},
      {0x50, "WARPGROUP.DEPBAR.LE gsb0, 0x0"},
      {0x60, "FMNMX R1, R28, R29, !PT"},
      {0x70, "MUFU.EX2 R2, R2"},
      {0x80, "BAR.SYNC.DEFER_BLOCKING R17, 0x100"},
      {0x90, "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24, gsb0"},
      {0xa0, "WARPGROUP.DEPBAR.LE gsb0, 0x1"},
      {0xb0, "FSEL R24, R24, -INF , P0"},
      {0xc0, "FSEL R25, R25, -INF , P1"},
      {0xc8, "CS2R R2, SR_CLOCKLO"},
      {0xd0, "WARPGROUP.DEPBAR.LE gsb0, 0x0"},
      {0xe0, "FMNMX R0, R24, R25, !PT"},
      {0xf0, "@P2 BRA 0x90"},
      {0x100, "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24, gsb0"},
      {0x110, "WARPGROUP.DEPBAR.LE gsb0, 0x1"},
      {0x120, "FMNMX R0, R24, R25, !PT"},
      {0x130, "HGMMA.64x128x16.F32.BF16 R88, R180, gdesc[UR16].tnspB, R88, gsb0"},
      {0x140, "WARPGROUP.DEPBAR.LE gsb0, 0x0"},
  };
  Function fn;
  fn.name = "hand-written";
  for (const auto& [a, t] : text) fn.code.push_back(parse_instruction(a, t));
  const auto steps = pv_wait_steps(fn);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].address == 0x50);
  CHECK(steps[0].max_before == 3);
  CHECK(steps[0].max_total == 4);
  CHECK_FALSE(steps[0].masked);
  CHECK_FALSE(steps[0].clocked);
  CHECK(steps[1].clocked);
  CHECK(steps[1].address == 0xd0);
  CHECK(steps[1].max_before == 0);
  CHECK(steps[1].max_total == 1);
  CHECK(steps[1].masked);
  // The unmasked step stands for the instance; with only masked steps, they do.
  CHECK(max_before_pv_wait(steps) == Approx(0.75));
  CHECK(max_before_pv_wait({steps[1]}) == Approx(0.0));
  CHECK(max_before_pv_wait({}) == -1);
}

TEST_CASE("fa3_forward instances with the conditional rescale and exp2 emulation arguments are recognised",
          "[sass]") {
  // Traits<64, 128, 176, 2, true, true, 240, 24, false, false, true, 8, -1, 4, 1> (cuobjdump, H200, 2026-11-28):
  // 15 template arguments, the 13th negative ("Lin1E").
  const auto emu = fa3_knobs(
      "_ZN7attnsim4sm9011fa3_forwardINS0_6TraitsILi64ELi128ELi176ELi2ELb1ELb1ELi240ELi24ELb0ELb0ELb1ELi8ELin1ELi4ELi1EEEEEv"
      "NS0_6ParamsE");
  REQUIRE(emu);
  CHECK(emu->n_block == 176);
  CHECK(emu->own_o);
  CHECK(emu->rescale_milli == -1);
  CHECK(emu->exp2_emu_freq == 4);
  CHECK(emu->exp2_emu_res == 1);
  // 13 arguments: the conditional rescale at 2^8.
  const auto rescale = fa3_knobs(
      "_ZN7attnsim4sm9011fa3_forwardINS0_6TraitsILi256ELi128ELi80ELi2ELb1ELb1ELi240ELi24ELb1ELb0ELb0ELi8ELi8000EEEEEvNS0_"
      "6ParamsE");
  REQUIRE(rescale);
  CHECK(rescale->trace);
  CHECK(rescale->rescale_milli == 8000);
  CHECK(rescale->exp2_emu_freq == 0);
  const auto base = fa3_knobs("_ZN7attnsim4sm9011fa3_forwardINS0_6TraitsILi128ELi128ELi128ELi3ELb1ELb1ELi240ELi24ELb1EEEEEvNS0_6ParamsE");
  REQUIRE(base);
  CHECK_FALSE(base->o_in_v);
  CHECK_FALSE(base->trim_last);
  // 17 arguments: the trimmed last KV block (Traits<64, 128, 128, 2, true, true, 240, 24, false,
  // true, true, 8, -1, 0, 0, false, true>, the hd64 causal base kernel of 2026-11-29).
  const auto trim = fa3_knobs(
      "_ZN7attnsim4sm9011fa3_forwardINS0_6TraitsILi64ELi128ELi128ELi2ELb1ELb1ELi240ELi24ELb0ELb1ELb1ELi8ELin1ELi0ELi0ELb0E"
      "Lb1EEEEEvNS0_6ParamsE");
  REQUIRE(trim);
  CHECK(trim->trim_last);
  CHECK_FALSE(trim->o_in_v);
  CHECK(trim->dynamic);
  CHECK(trim->args == 17);
}

TEST_CASE("sass-costs --into: the instances whose code the base schedule runs", "[sass]") {
  // Which knobs are a variant's depends on the head_dim: the base schedule rescales O
  // conditionally and stages it in the V ring at hd256, and at hd64/hd128 rescales at every block
  // with O in a buffer of its own (schedules/fa3_sm90.json, "auto").
  const Hardware hw = load_hardware(resolve_hardware_path("h200"));
  const std::string base = project_root() + "/schedules/fa3_sm90.json";
  auto knobs = [](int hd, int n, bool dynamic, bool own_o, int rescale_milli, bool o_in_v, int emu = 0) {
    Fa3Knobs k;
    k.head_dim = hd;
    k.m_block = hd == 64 ? 192 : 128;
    k.n_block = n;
    k.kv_stage = 2;
    k.pingpong = k.overlap = true;
    k.dynamic = dynamic;
    k.own_o = own_o;
    k.rescale_milli = rescale_milli;
    k.o_in_v = o_in_v;
    k.exp2_emu_freq = emu, k.exp2_emu_res = emu > 0 ? 1 : 0;
    k.args = 16;
    return k;
  };
  CHECK(runs_schedule_code(knobs(256, 80, true, false, 8000, true), hw, base));
  CHECK(runs_schedule_code(knobs(256, 64, false, false, 8000, true), hw, base));
  CHECK_FALSE(runs_schedule_code(knobs(256, 80, false, false, 8000, false), hw, base));  // o_in_q_buffer
  CHECK_FALSE(runs_schedule_code(knobs(256, 80, false, false, -1, true), hw, base));     // unconditional_rescale
  CHECK(runs_schedule_code(knobs(128, 128, true, true, -1, false), hw, base));
  CHECK(runs_schedule_code(knobs(64, 128, false, true, -1, false), hw, base));
  CHECK_FALSE(runs_schedule_code(knobs(128, 128, false, true, 8000, false), hw, base));  // conditional at hd128
  CHECK_FALSE(runs_schedule_code(knobs(128, 128, false, false, -1, false), hw, base));   // O in Q's buffer
  CHECK_FALSE(runs_schedule_code(knobs(64, 128, false, true, -1, false, 4), hw, base));  // exp2 emulation
  CHECK(runs_schedule_code(knobs(128, 176, false, false, -1, true), hw, base));  // 176 wide: no own O, V ring
  // A listing from before the O staging knob (9 template arguments): its O in Q's buffer was the
  // only choice, so the instance is the base's.
  auto old = knobs(128, 128, false, false, -1, false);
  old.args = 9;
  CHECK(runs_schedule_code(old, hw, base));
}

TEST_CASE("SASS named barriers whose id is reloaded from local memory", "[sass][barrier_ids]") {
  std::ifstream in(data("sass_barrier_ids_snippet.txt"));
  REQUIRE(in);
  const auto fns = parse_cuobjdump(in);
  REQUIRE(fns.size() == 2);
  // Traced: the pingpong id from an LDL right before its BAR.SYNC, the epilogue's from an S2R,
  // the first turn's arrive an immediate (not counted).
  const BarrierIds traced = barrier_ids(fns[0]);
  CHECK(traced.ldl == 1);
  CHECK(traced.register_ids == 2);
  CHECK(traced.reloaded == 1);
  // Plain: the id computed in registers.
  const BarrierIds plain = barrier_ids(fns[1]);
  CHECK(plain.ldl == 0);
  CHECK(plain.register_ids == 1);
  CHECK(plain.reloaded == 0);
}

TEST_CASE("SASS barrier ids: the closest earlier writer decides and not any LDL of the register",
          "[sass][barrier_ids]") {
  Function fn;
  fn.code = {parse_instruction(0x00, "LDL R0, [R1+0x8]"),
             parse_instruction(0x10, "IADD3 R0, R0, 0x1, RZ"),
             parse_instruction(0x20, "BAR.SYNC.DEFER_BLOCKING R0, 0x100"),
             parse_instruction(0x30, "LDL R5, [R1+0xc]"),
             parse_instruction(0x40, "@!P0 BAR.ARV R5, 0x100"),
             parse_instruction(0x50, "BAR.SYNC.DEFER_BLOCKING 0x0")};
  const BarrierIds b = barrier_ids(fn);
  CHECK(b.ldl == 2);
  CHECK(b.register_ids == 2);  // the immediate id of the last one is not a register
  CHECK(b.reloaded == 1);      // R0 was rewritten by the IADD3 after its load; R5 comes straight from one
}
