// PipeSharing with measured sharing curves (MeasuredTiming::shared, kernels/microbench fa2_block)
// and the oldest-CTA-first order of issue-bound blocks: exact finish times of hand-computable cases.
#include <catch2/catch.hpp>

#include "core/pipe_sharing.hpp"
#include "test_support.hpp"

using namespace attnsim;

namespace {
/// A block measured at 1000 cycles alone whose time with k warps per SMSP is 1, 1.5, 2.1, 2.7x.
MeasuredTiming curve_block() {
  MeasuredTiming m;
  m.alone = 1000;
  m.shared = {1, 1.5, 2.1, 2.7};
  return m;
}
/// Issue and ALU work that would take 4000 cycles on the pipes: a curve block does not put it there.
Work alu_work(const Hardware& hw) {
  Work w;
  w.issue = 100;
  w.alu_lanes = 4000 * hw.alu_lanes_per_clk_smsp;
  return w;
}
}  // namespace

TEST_CASE("k measured blocks on one SMSP run at 1 over their time with k warps", "[sharing]") {
  const Hardware hw = test::b200();
  PipeSharing ps(hw, 8);
  ps.start(0, 0, alu_work(hw), 0, curve_block());
  CHECK(ps.finish_time(0) == Approx(1000));  // alone: the measured time, not the 4000 cycles of ALU work
  ps.start(4, 0, alu_work(hw), 0, curve_block());
  CHECK(ps.finish_time(0) == Approx(1500));  // two on SMSP 0, one CTA: equals at 1 / 1.5
  CHECK(ps.finish_time(4) == Approx(1500));
  ps.start(1, 1, alu_work(hw), 0, curve_block());
  CHECK(ps.finish_time(1) == Approx(1000));  // SMSP 1 has its own budget
  CHECK(ps.finish_time(0) == Approx(1500));
}

TEST_CASE("an older CTA's issue-bound block takes its SMSP first - the younger one takes what is left", "[sharing]") {
  const Hardware hw = test::b200();
  PipeSharing ps(hw, 8);
  ps.start(0, 0, alu_work(hw), 0, curve_block(), /*cta_rank=*/0);
  ps.start(4, 0, alu_work(hw), 0, curve_block(), /*cta_rank=*/1);
  // Two blocks on SMSP 0: each takes 1.5 / 2 = 0.75 of the budget per unit of speed. The older
  // runs at full speed (0.75), the younger at 0.25 / 0.75 = 1/3.
  CHECK(ps.finish_time(0) == Approx(1000));
  CHECK(ps.finish_time(4) == Approx(3000));
  ps.finish(0, 1000);
  // Alone from t = 1000 with 2/3 of its block left.
  CHECK(ps.finish_time(4) == Approx(1000 + 2000.0 / 3));
  // The older first and the younger after: both done at 5/3 of a block, where equals finish at 1.5.
}

TEST_CASE("blocks timed without a sharing curve share as equals whatever their CTA's age", "[sharing]") {
  const Hardware hw = test::b200();
  PipeSharing ps(hw, 8);
  Work w;
  w.fma_lanes = 1000 * hw.fma_lanes_per_clk_smsp;  // 1000 cycles of FMA work alone
  ps.start(0, 0, w, 0, {}, /*cta_rank=*/0);
  ps.start(4, 0, w, 0, {}, /*cta_rank=*/1);
  CHECK(ps.finish_time(0) == Approx(2000));
  CHECK(ps.finish_time(4) == Approx(2000));
}
