// PipeSharing between CTAs resident on one SM: the oldest CTA's blocks take the pipes first
// (greedy-then-oldest warp scheduling), except blocks timed with the residents beside them.
// Exact finish times of hand-computable cases.
#include <catch2/catch.hpp>
#include <limits>

#include "core/pipe_sharing.hpp"
#include "test_support.hpp"

using namespace attnsim;

namespace {
/// 1000 cycles of FMA-pipe work on one SMSP.
Work fma_work(const Hardware& hw) {
  Work w;
  w.fma_lanes = 1000 * hw.fma_lanes_per_clk_smsp;
  return w;
}
}  // namespace

TEST_CASE("an older CTA's block takes the SMSP's pipe first - a younger one waits for what is left", "[sharing]") {
  const Hardware hw = test::b200();
  PipeSharing ps(hw, 12);
  ps.start(0, 0, fma_work(hw), 0, {}, /*cta_rank=*/0);
  ps.start(4, 0, fma_work(hw), 0, {}, /*cta_rank=*/1);
  CHECK(ps.finish_time(0) == Approx(1000));                             // the whole FMA pipe
  CHECK(ps.finish_time(4) == std::numeric_limits<double>::infinity());  // nothing left yet
  ps.finish(0, 1000);
  CHECK(ps.finish_time(4) == Approx(2000));
  // The same two blocks of one CTA are equals: both at half speed.
  PipeSharing eq(hw, 8);
  eq.start(0, 0, fma_work(hw), 0, {}, 0);
  eq.start(4, 0, fma_work(hw), 0, {}, 0);
  CHECK(eq.finish_time(0) == Approx(2000));
  CHECK(eq.finish_time(4) == Approx(2000));
}

TEST_CASE("a latency-bound older block leaves its pipe's slack to the younger", "[sharing]") {
  const Hardware hw = test::b200();
  PipeSharing ps(hw, 12);
  MeasuredTiming slow;
  slow.alone = 2000;  // issue-bound at 2000 cycles: half the FMA pipe
  ps.start(0, 0, fma_work(hw), 0, slow, 0);
  ps.start(4, 0, fma_work(hw), 0, slow, 1);
  CHECK(ps.finish_time(0) == Approx(2000));
  CHECK(ps.finish_time(4) == Approx(2000));  // the other half
  ps.start(8, 0, fma_work(hw), 0, slow, 2);  // a third: the pipe is full, it waits
  CHECK(ps.finish_time(8) == std::numeric_limits<double>::infinity());
}

TEST_CASE("blocks timed with the resident CTAs beside them share as equals", "[sharing]") {
  const Hardware hw = test::b200();
  PipeSharing ps(hw, 12);
  MeasuredTiming together;
  together.alone = 500;  // less than its pipe work: the pipe decides
  together.with_residents = true;
  ps.start(0, 0, fma_work(hw), 0, together, 0);
  ps.start(4, 0, fma_work(hw), 0, together, 1);
  CHECK(ps.finish_time(0) == Approx(2000));
  CHECK(ps.finish_time(4) == Approx(2000));
}

TEST_CASE("merged resident CTAs carry their launch order on every op", "[sharing]") {
  CtaProgram one;
  one.warps.push_back(WarpProgram{0, "worker", {Op{}, Op{}}});
  one.barriers.push_back(BarrierDecl{"bar.syncthreads", true, 32, {0}});
  one.warps[0].ops[1].barrier = 0;
  const CtaProgram m = merge_ctas({one, one, one});
  REQUIRE(m.warps.size() == 3);
  for (int c = 0; c < 3; ++c) {
    CHECK(m.warps[c].warp == c);
    for (const Op& op : m.warps[c].ops) CHECK(op.cta_rank == c);
    CHECK(m.warps[c].ops[1].barrier == c);  // each CTA its own barrier
  }
  CHECK(m.warps[2].role == "cta2 worker");
}

TEST_CASE("a block measured while copies land stretches only while they land - by its mma state's ratio", "[sharing]") {
  const Hardware hw = test::b200();
  PipeSharing ps(hw, 8);
  MeasuredTiming stores;
  stores.alone = 1000;
  stores.beside_ss = 1.5;
  stores.beside_copies = {2, 3, 1};  // alone, beside SS, beside RS
  ps.start(0, 0, fma_work(hw).scaled(0.1), 0, stores, 0);
  CHECK(ps.finish_time(0) == Approx(1000));
  CHECK(ps.set_copies_landing(true, 200));  // 0.2 done; 0.8 left at half speed
  CHECK(ps.finish_time(0) == Approx(200 + 1600));
  CHECK_FALSE(ps.set_copies_landing(true, 300));  // no change of state
  CHECK(ps.set_smsp_mma(0, SmspMma::ss, 400));    // at 400: 0.7 left, now x 1.5 x 3
  CHECK(ps.finish_time(0) == Approx(400 + 0.7 * 4500));
  CHECK(ps.set_smsp_mma(0, SmspMma::rs, 500));  // beside RS no further slowdown (1): x 1 x 1
  CHECK(ps.finish_time(0) == Approx(500 + (0.7 - 100.0 / 4500) * 1000));
  CHECK(ps.set_copies_landing(false, 600) == false);  // RS ratio 1: nothing running changes
  // A block without a ratio is untouched by copies.
  PipeSharing plain(hw, 8);
  plain.start(0, 0, fma_work(hw).scaled(0.1), 0, MeasuredTiming{1000}, 0);
  CHECK_FALSE(plain.set_copies_landing(true, 100));
  CHECK(plain.finish_time(0) == Approx(1000));
}

TEST_CASE("a change on one SMSP re-rates the blocks sharing SMEM with it - and only them", "[sharing]") {
  const Hardware hw = test::b200();
  Work smem;
  smem.smem_bytes = 1000 * hw.smem_bytes_per_clk;  // 1000 cycles of the SM's shared-memory bandwidth
  PipeSharing ps(hw, 12);
  ps.start(0, 0, smem, 0);
  ps.start(1, 1, smem, 0);  // SMSP 1 shares the SM's SMEM with SMSP 0: both at half speed
  CHECK(ps.resolved_smsps() == 0b11u);
  CHECK(ps.finish_time(0) == Approx(2000));
  CHECK(ps.finish_time(1) == Approx(2000));
  ps.start(2, 2, fma_work(hw), 0);  // SMSP 2's FMA pipe alone: the SMEM blocks keep their speeds
  CHECK(ps.resolved_smsps() == 0b100u);
  CHECK(ps.finish_time(2) == Approx(1000));
  CHECK(ps.finish_time(1) == Approx(2000));
  ps.finish(0, 1000);  // half of block 1 left, now at full speed
  CHECK((ps.resolved_smsps() & 0b11u) == 0b11u);
  CHECK((ps.resolved_smsps() & 0b100u) == 0u);
  CHECK(ps.finish_time(1) == Approx(1500));
  CHECK(ps.finish_time(2) == Approx(1000));
}
