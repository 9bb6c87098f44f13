// The in-order issue model of one warp's SASS (sim/calibrate/sass_issue.hpp) on hand-computed
// sequences, and the fa2_sm80 lowering that uses its timings.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "calibrate/sass_fa2.hpp"
#include "calibrate/sass_issue.hpp"
#include "driver/simulate.hpp"
#include "lower/issue_timing.hpp"
#include "lower/schedule.hpp"
#include "model/problem.hpp"
#include "sass_test_support.hpp"
#include "test_support.hpp"

using namespace attnsim;
using namespace attnsim::sass;
using attnsim::test::instr;
using attnsim::test::ptrs;

namespace {

/// No pipe or bank limits, no fetch cost: the static schedule and the scoreboards alone.
IssueModel plain() {
  IssueModel m;
  m.lds_latency = 23;
  m.mufu_latency = 17;
  m.shfl_latency = 24;
  m.other_latency = 23;
  m.read_latency = 4;
  m.fma_interval = m.alu_interval = m.mufu_interval = 0;
  m.register_banks = 1;
  return m;
}

}  // namespace

TEST_CASE("issue time: stall counts and then a scoreboard wait on a shared load", "[sass]") {
  const std::vector<Instr> code = {
      instr(0x00, "LDS R8, [R2]", 1, /*wb*/ 0),
      instr(0x10, "IADD3 R3, R4, 0x1, RZ", 2),
      instr(0x20, "FFMA R9, R8, R5, R6", 1, 7, 7, /*wait SB0*/ 1),
      instr(0x30, "FADD R10, R9, R9", 4),
  };
  const IssueTime t = issue_time(ptrs(code), plain());
  // LDS at 0 (result at 23), IADD3 at 1, the FFMA waits for SB0 until 23, the FADD issues at 24 and
  // holds the warp 4 cycles: the next slot is 28.
  CHECK(t.cycles == Approx(28));
  CHECK(t.stall_cycles == Approx(1 + 2 + 1 + 4));
  CHECK(t.scoreboard_cycles == Approx(23 - 3));
  CHECK(t.shared_loads == 1);
  CHECK(t.instructions == 4);
}

TEST_CASE("issue time: register bank conflicts and the operand reuse cache", "[sass]") {
  IssueModel m = plain();
  m.register_banks = 2;
  // R2, R4, R6 all in bank 0: two extra reads, two cycles.
  const Instr all_even = instr(0, "FFMA R1, R2, R4, R6", 1);
  CHECK(bank_conflict_cycles(all_even, nullptr, 2) == 2);
  // R2 and R3 in different banks, R2 read twice counts once.
  CHECK(bank_conflict_cycles(instr(0, "FFMA R1, R2, R3, R2", 1), nullptr, 2) == 0);
  // The previous instruction kept R2 in the reuse cache of slot 0: only R4 and R6 come from bank 0.
  const Instr keeps = instr(0, "FFMA R7, R2.reuse, R3, R5", 1);
  CHECK(bank_conflict_cycles(all_even, &keeps, 2) == 1);
  // A reuse flag on another slot does not serve slot 0.
  const Instr other_slot = instr(0, "FFMA R7, R3, R2.reuse, R5", 1);
  CHECK(bank_conflict_cycles(all_even, &other_slot, 2) == 2);
  // Integrated: keeps (no conflict: R2, R3, R5 -> banks 0, 1, 1: one extra) then all_even (one extra).
  const std::vector<Instr> code = {keeps, all_even};
  CHECK(issue_time(ptrs(code), m).bank_cycles == Approx(1 + 1));
  CHECK(issue_time(ptrs(code), m).cycles == Approx(2 + 2));
}

TEST_CASE("issue time: a warp instruction holds its pipe for 32 / lanes cycles", "[sass]") {
  IssueModel m = plain();
  m.alu_interval = 2;  // 16 ALU lanes per SMSP
  const std::vector<Instr> code = {instr(0x00, "LOP3.LUT R1, R2, R3, R4, 0x96, !PT", 1),
                                   instr(0x10, "LOP3.LUT R5, R6, R7, R8, 0x96, !PT", 1),
                                   instr(0x20, "FFMA R9, R10, R11, R12", 1)};
  const IssueTime t = issue_time(ptrs(code), m);
  // ALU at 0, the second ALU waits for the pipe until 2, the FFMA issues at 3.
  CHECK(t.pipe_cycles == Approx(1));
  CHECK(t.cycles == Approx(4));
  CHECK(t.alu == 2);
  CHECK(t.ffma == 1);
}

TEST_CASE("issue time: code beyond the instruction cache streams at the fetch rate", "[sass]") {
  IssueModel m = plain();
  m.icache_bytes = 128;  // one line
  m.ifetch_cycles_per_instruction = 2;
  m.ifetch_runahead_bytes = 0;
  std::vector<Instr> code;
  for (uint32_t i = 0; i < 16; ++i) code.push_back(instr(i * 16, "FFMA R1, R2, R3, R1", 1));  // two 128-byte lines
  // Cold: each line's 8 instructions cost 16 cycles to fetch before its first one issues; without
  // run-ahead the second line's fetch starts when the instruction before it has issued (at 23): 39,
  // and its 8 instructions take the slots up to 47.
  const IssueTime cold = issue_time(ptrs(code), m, true);
  CHECK(cold.fetched_lines == 2);
  CHECK(cold.cycles == Approx(23 + 16 + 8));
  // Warm (the code cached): one per cycle.
  CHECK(issue_time(ptrs(code), m, false).cycles == Approx(16));
  // With run-ahead of a line, the second line is fetched right behind the first: 16 + 16, then 8 more.
  m.ifetch_runahead_bytes = 128;
  CHECK(issue_time(ptrs(code), m, true).cycles == Approx(16 + 16 + 8));
  // A loop body that fits the cache is fetched once: the same 16 instructions twice cost one fetch.
  m.icache_bytes = 256;
  std::vector<const Instr*> twice = ptrs(code);
  const auto again = ptrs(code);
  twice.insert(twice.end(), again.begin(), again.end());
  CHECK(issue_time(twice, m, true).fetched_lines == 2);
}

TEST_CASE("issue segments carry the warp's state from one span to the next", "[sass]") {
  const std::vector<Instr> first = {instr(0x00, "LDS R8, [R2]", 1, /*wb*/ 0)};
  const std::vector<Instr> second = {instr(0x10, "FADD R9, R8, R8", 1, 7, 7, /*wait SB0*/ 1)};
  const auto t = issue_segments({ptrs(first), ptrs(second)}, plain());
  REQUIRE(t.size() == 2);
  CHECK(t[0].cycles == Approx(1));
  CHECK(t[1].cycles == Approx(23 + 1 - 1));  // waits for the first span's load
}

TEST_CASE("unroll_path runs a loop its trip count and refuses conditional forward branches", "[sass]") {
  Function fn;
  fn.name = "f";
  fn.code = {parse_instruction(0x00, "IADD3 R1, R1, 0x1, RZ"),
             parse_instruction(0x10, "FFMA R2, R2, R3, R4"),
             parse_instruction(0x20, "@P0 BRA 0x10"),
             parse_instruction(0x30, "FADD R5, R2, R2"),
             parse_instruction(0x40, "@P1 BRA 0x60"),
             parse_instruction(0x50, "NOP"),
             parse_instruction(0x60, "EXIT")};
  // The loop body (0x10, 0x20) runs 3 times: taken twice.
  const auto path = unroll_path(fn, 0x00, 0x40, {{0x20, 2}});
  CHECK(path.size() == 1 + 3 * 2 + 1);
  CHECK(path.back()->address == 0x30);
  CHECK_THROWS_WITH(unroll_path(fn, 0x00, 0x60, {{0x20, 0}}), Catch::Contains("conditional forward branch"));
  CHECK_THROWS_WITH(unroll_path(fn, 0x50, 0x10, {}), Catch::Contains("leaves"));
}

TEST_CASE("fa2: a warp alone on its SMSP takes its blocks' SASS issue time at the CUDA-core clock", "[sass]") {
  const Hardware hw = test::h100();
  const auto s = load_schedule(test::root() + "/schedules/fa2_sm80.json");
  Problem p = test::default_problem();
  p.head_dim = p.head_dim_v = 64;
  p.batch = 1;
  p.heads = 16;  // 16 CTAs: one per SM, one warp per SMSP
  p.seqlen_q = p.seqlen_k = 256;
  p.causal = false;
  PredictOptions o;
  const Prediction pr = predict(*s, hw, p, o);
  CHECK(pr.clock_ghz == Approx(hw.clock_ghz_cuda_cores));
  const KernelIssue* k = IssueTimings::load(test::root() + "/configs/costs/fa2_sm80_issue.json").find(64, 64, 64);
  REQUIRE(k);
  int seen = 0;
  REQUIRE(!pr.critical.timeline.warps.empty());
  for (const auto& sp : pr.critical.timeline.warps[0].spans) {
    const std::string name = attnsim_op_name(sp.op);
    if (!k->blocks.count(name)) continue;
    // Four warps on four SMSPs; the SMEM wavefronts and pipes of the others do not slow this one.
    CHECK(sp.end - sp.start == Approx(k->blocks.at(name).cycles).epsilon(1e-9));
    ++seen;
  }
  CHECK(seen >= 5);
  // Warp 0 copies K and V with its own loads: a wait of the copy's SASS time, every KV block.
  int copies = 0;
  for (const auto& sp : pr.critical.timeline.warps[0].spans)
    copies += sp.kind == SpanKind::Wait && sp.end - sp.start == Approx(k->blocks.at("copy_kv").cycles);
  CHECK(copies == 4 * 4);  // seqlen 256: 4 Q tiles of 64 rows, each over 4 KV blocks of 64
}

TEST_CASE("an issue-timing file with a missing or bad field is refused with its path", "[sass]") {
  const nlohmann::json ok = nlohmann::json::parse(R"({"description": "d", "hardware": "h100_sxm.json", "source": "s",
    "kernels": [{"kernel": "k", "head_dim": 64, "br": 64, "bc": 64, "blocks": {"mma_qk": {"cycles": 10,
    "instructions": 5, "ffma": 2, "alu": 1, "mufu": 0, "shared_loads": 1, "stall_cycles": 8, "scoreboard_cycles": 2,
    "pipe_cycles": 0, "bank_cycles": 0, "fetch_cycles": 0}}}]})");
  const IssueTimings t = IssueTimings::parse(ok, "t.json");
  REQUIRE(t.find(64, 64, 64));
  CHECK(t.find(64, 64, 64)->blocks.at("mma_qk").work().fma_lanes == Approx(64));
  CHECK(t.find(128, 64, 32) == nullptr);
  nlohmann::json bad = ok;
  bad["kernels"][0]["blocks"]["mma_qk"].erase("cycles");
  CHECK_THROWS_WITH(IssueTimings::parse(bad, "t.json"), Catch::Contains("/kernels/0/blocks/mma_qk"));
  bad = ok;
  bad["kernels"].push_back(ok["kernels"][0]);
  CHECK_THROWS_WITH(IssueTimings::parse(bad, "t.json"), Catch::Contains("same head_dim"));
}

namespace {

/// A small traced-fa2-shaped function (hd64, Br = Bc = 64): the K and V copy loops between two
/// clock reads, the first __syncthreads, the five compute spans between six clock reads (S = Q
/// K^T an inner loop of 16 FFMAs), the second __syncthreads, the KV loop's back edge. Every
/// instruction has stall count 1 and no scoreboards unless given.
Function fa2_like() {
  Function fn;
  fn.mangled = "_ZN7attnsim3fa211fa2_forwardINS0_9Fa2TraitsILi64ELi64ELi64ELb1EEEEEvNS0_9Fa2ParamsE";
  fn.name = "fa2_forward<Fa2Traits<64, 64, 64, true>>";
  uint32_t a = 0;
  auto add = [&](const char* text, int wb = 7, int wait = 0) {
    fn.code.push_back(instr(a, text, 1, wb, 7, wait));
    a += 16;
  };
  add("CS2R.32 R10, SR_CLOCKLO");         // 0x000: copy start
  for (int loop = 0; loop < 2; ++loop) {  // K, then V: two 16-byte loads per pass, each stored when it lands
    const uint32_t head = a;
    add("LDG.E.128 R20, desc[UR4][R2.64]", 0);
    add("LDG.E.128 R24, desc[UR4][R4.64]", 1);
    add("STS.128 [R6], R20", 7, 0b01);
    add("STS.128 [R7], R24", 7, 0b10);
    fn.code.push_back(instr(a, fmt::format("@P0 BRA {:#x}", head).c_str(), 1));
    a += 16;
  }
  add("CS2R.32 R11, SR_CLOCKLO");  // copy end
  add("CS2R.32 R12, SR_CLOCKLO");  // barrier wait start
  add("BAR.SYNC.DEFER_BLOCKING 0x0");
  add("CS2R.32 R13, SR_CLOCKLO");  // t1: mma_qk
  const uint32_t qk = a;
  for (int i = 0; i < 16; ++i) add("FFMA R30, R31, R33, R30");
  fn.code.push_back(instr(a, fmt::format("@P1 BRA {:#x}", qk).c_str(), 1));
  a += 16;
  add("CS2R.32 R14, SR_CLOCKLO");  // t2: softmax_max
  add("FMNMX R40, R41, R43, !PT");
  add("CS2R.32 R15, SR_CLOCKLO");  // t3: softmax_exp
  add("MUFU.EX2 R44, R45", 2);
  add("FADD R46, R44, R47", 7, 0b100);
  add("CS2R.32 R16, SR_CLOCKLO");  // t4: rescale_o
  add("FMUL R50, R51, R53");
  add("CS2R.32 R17, SR_CLOCKLO");  // t5: mma_pv
  add("FFMA R54, R55, R57, R54");
  add("CS2R.32 R18, SR_CLOCKLO");  // t6
  add("BAR.SYNC.DEFER_BLOCKING 0x0");
  fn.code.push_back(instr(a, "@P2 BRA 0x0", 1));  // the KV loop
  a += 16;
  add("EXIT");
  return fn;
}

}  // namespace

TEST_CASE("fa2 analysis: spans between the clock reads and loops run the kernel's trip counts", "[sass]") {
  const Function fn = fa2_like();
  IssueModel m = plain();
  m.ldg_latency = 300;
  m.icache_bytes = 1 << 20;  // the whole loop stays cached: no fetch cost
  const Fa2Analysis a = analyse_fa2(fn, m);
  REQUIRE(a.spans.size() == 6);
  CHECK(a.knobs.head_dim == 64);
  CHECK_FALSE(a.cold_icache);
  CHECK(a.kv_loop_bytes == fn.code[fn.code.size() - 2].address + 16);
  // K/V copy: 64 rows x 64 / 8 vectors over 64 lanes = 8 per lane, 2 loads per pass: 4 passes per loop.
  const Fa2Span& copy = *a.find("copy_kv");
  CHECK(copy.taken.size() == 2);
  for (const auto& [at, n] : copy.taken) CHECK(n == 3);
  // Each pass: two loads at 0 and 1, the first store waits for the first load until 300, the
  // second store issues at 301 (its load landed then), the branch at 302: 303 cycles per pass, 8 passes.
  CHECK(copy.issue.cycles == Approx(8 * 303));
  // S = Q K^T: head_dim 64 FFMAs per score, 16 per pass: 4 passes of 17 instructions.
  const Fa2Span& qk = *a.find("mma_qk");
  REQUIRE(qk.taken.size() == 1);
  CHECK(qk.taken.begin()->second == 3);
  CHECK(qk.issue.instructions == 4 * 17);
  CHECK(qk.issue.ffma == 64);
  // softmax_exp: MUFU at 0, the FADD waits for its result (17), then the span's last slot.
  CHECK(a.find("softmax_exp")->issue.cycles == Approx(17 + 1));
  CHECK(a.find("rescale_o")->issue.cycles == Approx(1));
  CHECK(a.find("softmax_max")->issue.cycles == Approx(1));
  // A plain (untraced) instance has no spans to find.
  Function plain_fn = fn;
  plain_fn.mangled = "_ZN7attnsim3fa211fa2_forwardINS0_9Fa2TraitsILi64ELi64ELi64ELb0EEEEEvNS0_9Fa2ParamsE";
  CHECK_THROWS_WITH(analyse_fa2(plain_fn, m), Catch::Contains("no clock reads"));
  // A loop whose work does not divide is refused: 15 FFMAs per pass against head_dim 64.
  Function odd = fn;
  for (size_t i = 0; i < odd.code.size(); ++i)
    if (odd.code[i].opcode == "FFMA" && odd.code[i + 1].is_branch()) {
      odd.code[i] = instr(odd.code[i].address, "FADD R30, R31, R30", 1);
      break;
    }
  CHECK_THROWS_WITH(analyse_fa2(odd, m), Catch::Contains("does not divide"));
}

namespace {

/// A small plain-fa2-shaped function (hd64, Br = Bc = 64, no clock reads): the copy, the first
/// __syncthreads, S = Q K^T as a loop nest (the outer loop over a lane's 32 scores holding one
/// inner loop of 16 FFMAs over head_dim, and the score's store), the row max as a loop of one
/// FMNMX, one exp2 and its sum, one FMUL, one FFMA, the second __syncthreads, the KV loop's back
/// edge. Every instruction has stall count 1 and no scoreboards unless given.
Function fa2_plain_like() {
  Function fn;
  fn.mangled = "_ZN7attnsim3fa211fa2_forwardINS0_9Fa2TraitsILi64ELi64ELi64ELb0EEEEEvNS0_9Fa2ParamsE";
  fn.name = "fa2_forward<Fa2Traits<64, 64, 64, false>>";
  uint32_t a = 0;
  auto add = [&](const std::string& text, int wb = 7, int wait = 0) {
    fn.code.push_back(instr(a, text.c_str(), 1, wb, 7, wait));
    a += 16;
  };
  add("LDG.E.128 R20, desc[UR4][R2.64]", 0);
  add("STS.128 [R6], R20", 7, 0b01);
  add("BAR.SYNC.DEFER_BLOCKING 0x0");
  const uint32_t outer = a;
  const uint32_t inner = a;
  for (int i = 0; i < 16; ++i) add("FFMA R30, R31, R33, R30");
  add(fmt::format("@P1 BRA {:#x}", inner));
  add("STS [R8], R30");
  add(fmt::format("@P2 BRA {:#x}", outer));
  const uint32_t max = a;
  add("FMNMX R40, R41, R43, !PT");
  add(fmt::format("@P3 BRA {:#x}", max));
  add("MUFU.EX2 R44, R45", 2);
  add("FADD R46, R44, R47", 7, 0b100);
  add("FMUL R50, R51, R53");
  add("FFMA R54, R55, R57, R54");
  add("BAR.SYNC.DEFER_BLOCKING 0x0");
  add("@P4 BRA 0x0");  // the KV loop
  add("EXIT");
  return fn;
}

}  // namespace

TEST_CASE("fa2 plain analysis: the KV loop between the __syncthreads and its loops told apart by what they hold", "[sass]") {
  const Function fn = fa2_plain_like();
  IssueModel m = plain();
  m.icache_bytes = 1 << 20;
  const Fa2PlainLoop p = analyse_fa2_plain(fn, m);
  CHECK(p.knobs.head_dim == 64);
  CHECK_FALSE(p.cold_icache);
  // S = Q K^T: 32 scores per lane, one inner loop per pass of the outer loop; head_dim 64 over 16
  // FFMAs: 4 inner passes of 17 instructions, then the store and the outer branch (70 per score).
  // Row max: Bc / 2 = 32 passes of FMNMX + branch. Then MUFU, FADD, FMUL, FFMA.
  CHECK(p.issue.instructions == 32 * 70 + 32 * 2 + 4);
  CHECK(p.issue.ffma == 32 * 64 + 3);  // FMA-pipe: the FFMAs, FADD and FMUL
  // One issue slot each, and the FADD waits 16 more cycles for the MUFU's result.
  CHECK(p.issue.cycles == Approx(32 * 70 + 32 * 2 + 4 + 16));
  CHECK(p.begin == fn.code[3].address);
  // A traced instance goes to analyse_fa2; a second loop nest after S = Q K^T has no rule.
  Function traced = fn;
  traced.mangled = "_ZN7attnsim3fa211fa2_forwardINS0_9Fa2TraitsILi64ELi64ELi64ELb1EEEEEvNS0_9Fa2ParamsE";
  CHECK_THROWS_WITH(analyse_fa2_plain(traced, m), Catch::Contains("traced instance"));
  Function nested = fn;
  for (auto& in : nested.code)
    if (in.opcode == "FMNMX") in = instr(in.address, "@P5 BRA 0x160", 1);  // a loop inside the row-max loop
  CHECK_THROWS_WITH(analyse_fa2_plain(nested, m), Catch::Contains("nested loops"));
}
