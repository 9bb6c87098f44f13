// Several warps issuing together on one SM (sim/calibrate/sm_issue.hpp) on hand-computed
// sequences, the BlackFlash KV-loop analysis on a small blackflash-shaped function
// (sim/calibrate/sass_blackflash.hpp), and the blackflash lowering that uses its timings.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "calibrate/sass_blackflash.hpp"
#include "calibrate/sm_issue.hpp"
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

/// Latencies as the single-warp tests use; no pipe or bank limits; SMEM 128 B/clk, HMMA 6 cycles
/// on its SMSP's tensor core, bar.sync 30 cycles.
SmIssueModel plain_sm() {
  SmIssueModel m;
  m.warp.lds_latency = 23;
  m.warp.mufu_latency = 17;
  m.warp.shfl_latency = 24;
  m.warp.other_latency = 23;
  m.warp.read_latency = 4;
  m.warp.fma_interval = m.warp.alu_interval = m.warp.mufu_interval = 0;
  m.warp.register_banks = 1;
  m.smsp = 4;
  m.hmma_interval = 6;
  m.smem_bytes_per_clk = 128;
  m.named_barrier_latency = 30;
  return m;
}

WarpRun warp(int smsp, std::vector<Segment> segments, int group = 0) {
  WarpRun w;
  w.smsp = smsp;
  w.group = group;
  w.segments = std::move(segments);
  return w;
}

}  // namespace

TEST_CASE("SM issue: warps on one SMSP share its dispatch (one instruction per cycle) in turn", "[sass]") {
  const std::vector<Instr> code = {instr(0x00, "FADD R1, R2, R3", 1), instr(0x10, "FADD R4, R5, R6", 1),
                                   instr(0x20, "FADD R7, R8, R9", 1)};
  // Alone: 3 cycles. Two warps on SMSP 0 alternate: w0 at 0, 2, 4; w1 at 1, 3, 5.
  const auto alone = issue_on_sm({warp(0, {{ptrs(code), false}})}, plain_sm());
  CHECK(alone[0][0].end == Approx(3));
  const auto two = issue_on_sm({warp(0, {{ptrs(code), false}}), warp(0, {{ptrs(code), false}})}, plain_sm());
  CHECK(two[0][0].start == Approx(0));
  CHECK(two[0][0].end == Approx(5));
  CHECK(two[1][0].start == Approx(1));
  CHECK(two[1][0].end == Approx(6));
  // On two SMSPs they do not meet.
  const auto apart = issue_on_sm({warp(0, {{ptrs(code), false}}), warp(1, {{ptrs(code), false}})}, plain_sm());
  CHECK(apart[1][0].end == Approx(3));
}

TEST_CASE("SM issue: shared memory serves the warps' accesses in turn and a load waits its turn", "[sass]") {
  // LDSM.x4 moves 512 bytes: 4 cycles at 128 B/clk. The FFMA waits for the load's result.
  const std::vector<Instr> code = {instr(0x00, "LDSM.16.M88.4 R8, [R2]", 1, /*wb*/ 0),
                                   instr(0x10, "FFMA R9, R8, R5, R6", 1, 7, 7, /*wait SB0*/ 1)};
  CHECK(shared_bytes(code[0]) == 512);
  const auto t = issue_on_sm({warp(0, {{ptrs(code), false}}), warp(1, {{ptrs(code), false}})}, plain_sm());
  // First load: served 0..4, result at 0 + 4 - 1 + 23 = 26; the FFMA issues at 26, ends 27.
  CHECK(t[0][0].end == Approx(27));
  // Second load (same cycle, other SMSP): served 4..8, result at 30.
  CHECK(t[1][0].end == Approx(31));
}

TEST_CASE("SM issue: HMMA holds its SMSP's tensor core and MEMBAR waits for the warp's shared accesses", "[sass]") {
  const std::vector<Instr> mma = {instr(0x00, "HMMA.16816.F32.BF16 R4, R8, R12, R4", 1),
                                  instr(0x10, "HMMA.16816.F32.BF16 R16, R8, R14, R16", 1)};
  const auto t = issue_on_sm({warp(2, {{ptrs(mma), false}})}, plain_sm());
  CHECK(t[0][0].end == Approx(6 + 1));  // the second waits for the first's 6 cycles
  const std::vector<Instr> fence = {instr(0x00, "STS [R2], R3", 1), instr(0x10, "MEMBAR.ALL.CTA", 1)};
  const auto f = issue_on_sm({warp(0, {{ptrs(fence), false}})}, plain_sm());
  CHECK(f[0][0].end == Approx(1 + 1));  // the 128-byte store completes at 1; the fence issues then
}

TEST_CASE("SM issue: a bar.sync releases its group when the last warp arrives and a mismatch is refused", "[sass]") {
  const std::vector<Instr> one = {instr(0x00, "FADD R1, R2, R3", 1)};
  const std::vector<Instr> five = {instr(0x00, "FADD R1, R2, R3", 5)};
  const auto t = issue_on_sm(
      {warp(0, {{ptrs(one), false}, {ptrs(one), true}}), warp(1, {{ptrs(five), false}, {ptrs(one), true}})}, plain_sm());
  // Warp 1 arrives at 5, warp 0 at 1: both issue again at 5 + 30.
  CHECK(t[0][1].start == Approx(35));
  CHECK(t[1][1].start == Approx(35));
  // Another group does not wait for them.
  const auto g = issue_on_sm(
      {warp(0, {{ptrs(one), false}, {ptrs(one), true}}), warp(1, {{ptrs(five), false}, {ptrs(one), true}}, 1)},
      plain_sm());
  CHECK(g[0][1].start == Approx(1 + 30));
  CHECK_THROWS_WITH(
      issue_on_sm({warp(0, {{ptrs(one), false}, {ptrs(one), true}}), warp(1, {{ptrs(one), false}})}, plain_sm()),
      Catch::Contains("different numbers of barriers"));
}

namespace {

/// A small plain-blackflash-shaped function: the consumer KV loop with its mbarrier try-wait,
/// S = Q K^T (one ldmatrix, two HMMA), the mask branch (masked arm: three -INF selects; unmasked:
/// one max from -INF), the row max to SMEM, bar.sync, exp2 and P to SMEM, bar.sync, the row sum
/// from SMEM and the rescale behind its branch, O += P V (two HMMA), the release, the back edge.
Function blackflash_like() {
  Function fn;
  fn.mangled = "_ZN7attnsim10blackflash18blackflash_forwardINS0_8BfTraitsILi2ELb1ELi128ELb0EEEEEvNS0_6ParamsE";
  fn.name = "blackflash_forward<BfTraits<2, true, 128, false>>";
  auto add = [&](uint32_t a, const std::string& text, int stall = 1, int wb = 7, int wait = 0) {
    fn.code.push_back(instr(a, text.c_str(), stall, wb, 7, wait));
  };
  add(0x000, "BAR.SYNC.DEFER_BLOCKING 0x0");  // the CTA's setup barrier
  add(0x010, "IADD3 R41, R2, 0xa008, R3");    // loop head
  add(0x020, "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R41+URZ], R36", 1, 0);
  add(0x030, "@P0 BRA 0x60", 1, 7, 1);
  add(0x040, "NANOSLEEP 0x20");  // the retry path, never taken
  add(0x050, "BRA 0x20");
  add(0x060, "LDSM.16.M88.4 R56, [R98]", 1, 1);  // mma_qk
  add(0x070, "HMMA.16816.F32.BF16 R44, R56, R72, RZ", 1, 7, 0b10);
  add(0x080, "HMMA.16816.F32.BF16 R64, R56, R74, RZ", 20);
  add(0x090, "@!P0 BRA 0xe0");              // the mask branch
  add(0x0a0, "FSEL R44, R44, -INF , !P2");  // masked arm
  add(0x0b0, "FSEL R45, R45, -INF , !P3");
  add(0x0c0, "FSEL R46, R46, -INF , !P4");
  add(0x0d0, "BRA 0xf0");
  add(0x0e0, "FMNMX R42, R44, -INF , !PT");  // unmasked arm
  add(0x0f0, "STS [R87], R42");              // the row max to SMEM
  add(0x100, "BAR.SYNC.DEFER_BLOCKING 0x1, 0x100");
  add(0x110, "MUFU.EX2 R42, R42", 1, 2);  // softmax_exp
  add(0x120, "FADD R52, R42, R43", 1, 7, 0b100);
  add(0x130, "STS [R36], R52");
  add(0x140, "BAR.SYNC.DEFER_BLOCKING 0x1, 0x100");
  add(0x150, "LDS R36, [R86+0x200]", 1, 3);  // rescale_o
  add(0x160, "FADD R5, R5, R36", 1, 7, 0b1000);
  add(0x170, "@!P0 BRA 0x190");
  add(0x180, "FMUL R28, R28, R38");
  add(0x190, "LDSM.16.MT88.4 R56, [R56]", 1, 4);  // mma_pv
  add(0x1a0, "HMMA.16816.F32.BF16 R28, R52, R56, R28", 1, 7, 0b10000);
  add(0x1b0, "HMMA.16816.F32.BF16 R24, R52, R58, R24", 1);
  add(0x1c0, "SYNCS.ARRIVE.TRANS64.A1T0 RZ, [R32+URZ], RZ");
  add(0x1d0, "@!P1 BRA 0x10");
  add(0x1e0, "EXIT");
  return fn;
}

}  // namespace

TEST_CASE("blackflash analysis: the KV loop's spans and both mask arms with the warps together", "[sass]") {
  const Function fn = blackflash_like();
  const SmIssueModel m = plain_sm();
  const BlackFlashAnalysis a = analyse_blackflash(fn, m, 1);
  CHECK(a.kv_loop_bytes == 0x1d0 - 0x010 + 16);
  auto ops = [&](const char* op) {
    std::vector<uint32_t> at;
    for (const Instr* in : a.find(op)->path) at.push_back(in->address);
    return at;
  };
  // The try-wait and its branch are the wait's, not mma_qk's.
  CHECK(ops("mma_qk") == std::vector<uint32_t>{0x010, 0x060, 0x070, 0x080});
  CHECK(ops("softmax_max") == std::vector<uint32_t>{0x090, 0x0e0, 0x0f0});
  CHECK(ops("softmax_max_masked") == std::vector<uint32_t>{0x090, 0x0a0, 0x0b0, 0x0c0, 0x0d0, 0x0f0});
  CHECK(ops("softmax_exp") == std::vector<uint32_t>{0x110, 0x120, 0x130});
  CHECK(ops("rescale_o") == std::vector<uint32_t>{0x150, 0x160, 0x170, 0x180});
  CHECK(ops("mma_pv") == std::vector<uint32_t>{0x190, 0x1a0, 0x1b0, 0x1c0, 0x1d0});
  CHECK(a.find("mma_qk")->hmma == 2);
  CHECK(a.find("mma_qk")->shared_bytes == 512);
  CHECK(a.find("softmax_exp")->shared_bytes == 128);
  // One warp alone: softmax_exp is the MUFU's 17 cycles and the FADD's slot... after the STS of
  // the span before (warm), then the store: 17 + 1 + 1.
  CHECK(a.find("softmax_exp")->alone.cycles == Approx(19));
  // Eight warps together are never faster than one alone, and the masked block is the longer.
  for (const auto& s : a.spans) CHECK(s.cycles >= s.alone.cycles - 1e-9);
  CHECK(a.period_masked > a.period);
  // Deterministic.
  const BlackFlashAnalysis b = analyse_blackflash(fn, m, 1);
  for (size_t i = 0; i < a.spans.size(); ++i) CHECK(a.spans[i].cycles == b.spans[i].cycles);
  // Two CTAs at once share the SMSPs and the SMEM: every span at least as long.
  const BlackFlashAnalysis two = analyse_blackflash(fn, m, 2);
  for (size_t i = 0; i < a.spans.size(); ++i) CHECK(two.spans[i].cycles >= a.spans[i].cycles - 1e-9);
  // A traced instance and a loop without the rescale branch are refused.
  Function traced = fn;
  traced.mangled = "_ZN7attnsim10blackflash18blackflash_forwardINS0_8BfTraitsILi2ELb1ELi128ELb1EEEEEvNS0_6ParamsE";
  CHECK_THROWS_WITH(analyse_blackflash(traced, m, 1), Catch::Contains("traced"));
  Function no_rescale = fn;
  for (auto& in : no_rescale.code)
    if (in.address == 0x180) in = instr(0x180, "FADD R28, R28, R38", 1);
  CHECK_THROWS_WITH(analyse_blackflash(no_rescale, m, 1), Catch::Contains("skips no FMUL"));
}

TEST_CASE("blackflash: with an issue-timing file its consumer blocks take the SASS time of the SM's warps", "[sass]") {
  const Hardware hw = test::h100();
  const auto s = load_schedule(test::root() + "/schedules/blackflash.json");
  Problem p = test::default_problem();
  p.head_dim = p.head_dim_v = 64;
  p.batch = 1;
  p.heads = 132;  // one CTA per SM
  p.seqlen_q = p.seqlen_k = 64 * 8;
  p.causal = false;
  const Prediction pr = predict(*s, hw, p, PredictOptions{});
  const KernelIssue* k = IssueTimings::load(test::root() + "/configs/costs/blackflash_issue.json")
                             .find(64, 64, 64, {{"kv_stage", 2}, {"p_over_k", 1}, {"registers", 128}}, 1);
  REQUIRE(k);
  CHECK(pr.clock_ghz == Approx(hw.clock_ghz_mma_sync));
  int seen = 0;
  for (const auto& w : pr.critical.timeline.warps) {
    if (w.role != "consumer") continue;
    for (const auto& sp : w.spans) {
      const std::string name = attnsim_op_name(sp.op);
      if (name != "softmax_exp" && name != "rescale_o") continue;
      // The eight warps' issue, SMEM and pipe demands fit in the blocks' times: no further slowdown.
      CHECK(sp.end - sp.start == Approx(k->blocks.at(name).cycles).epsilon(1e-6));
      ++seen;
    }
  }
  CHECK(seen == 8 * (8 + 7));  // 8 KV blocks: softmax_exp on each, rescale_o from the second
}
