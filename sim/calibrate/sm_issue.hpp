// Issue of several warps' SASS on one SM: the in-order issue model of sass_issue.hpp with the
// warps that share the SM competing for what they share.
//
// Each warp runs its own dynamic instruction sequence, cut into segments (one per compute span),
// under the single-warp rules of sass_issue.hpp: ptxas's stall counts, its scoreboards
// (variable-latency results), register bank conflicts. What the warps share:
//   - the SMSP's dispatch: one warp instruction per cycle (kernels/microbench issue_rate: 0.99);
//     among the warps that could issue, the one after the SMSP's last issuer in warp order
//     (loose round robin);
//   - the SMSP's FMA, ALU and MUFU pipes (a warp instruction holds one 32 / lanes cycles) and its
//     tensor core for mma.sync (an HMMA.16816 holds it 4096 / (mma_sync_flops_per_clk / SMSPs)
//     cycles: kernels/microbench mma_sync);
//   - the SM's shared memory: a shared load or store is served in turn at smem_bytes_per_clk
//     (LDSM.x4 and 128-bit accesses 512 bytes, .x2 and 64-bit 256, else one 128-byte
//     wavefront: the kernels' accesses are conflict-free or broadcast); a load's result is ready
//     lds_latency after its last wavefront's turn less one, so waiting in the queue lengthens it;
//   - named barriers: a segment may start with a bar.sync of the warp's group (its CTA's
//     consumer warps): the warp waits until every warp of the group has reached it, then
//     named_barrier_latency (kernels/microbench named_barrier);
//   - MEMBAR waits until the warp's own shared-memory accesses have completed (a fence orders
//     them before what follows; kernels/microbench operand shows a fence after a lone store costs
//     a few cycles, so the cost is the drain).
// Instruction fetch is not modelled: callers check that the loop fits the instruction cache.
#pragma once
#include <vector>

#include "calibrate/sass_issue.hpp"

namespace attnsim::sass {

/// The shared resources' rates, beside the single-warp model.
struct SmIssueModel {
  IssueModel warp;                   ///< the per-warp rules and latencies
  int smsp = 4;                      ///< SMSPs per SM; warp w of a CTA runs on SMSP w % smsp
  double hmma_interval = 0;          ///< cycles an HMMA.16816 holds its SMSP's tensor core
  double smem_bytes_per_clk = 0;     ///< shared-memory bandwidth of the SM
  double named_barrier_latency = 0;  ///< last arrival at a bar.sync -> its warps issue again, cycles
  /// From a hardware config (IssueModel::from, smsp_per_sm, mma_sync_flops_per_clk,
  /// smem_bytes_per_clk, named_barrier_latency).
  static SmIssueModel from(const Hardware& hw);
};

/// One segment of a warp's sequence.
struct Segment {
  std::vector<const Instr*> code;
  bool barrier_before = false;  ///< a bar.sync of the warp's group precedes its first instruction
};

/// One warp: where it runs and what.
struct WarpRun {
  int smsp = 0;
  int group = 0;  ///< warps that bar.sync together (one CTA's consumer warps)
  std::vector<Segment> segments;
};

/// When a segment ran, cycles: its first instruction's issue, and the issue slot after its last
/// (that issue plus its stall count); a segment without code starts and ends when it is reached.
struct SegmentTime {
  double start = 0, end = 0;
};

/// Runs `warps` together on one SM (see the file comment) and returns, per warp and segment, when
/// it ran. Throws std::invalid_argument on an instruction without decoded control, on a group
/// whose warps reach different numbers of barriers (it would never finish), and on more than
/// `max_cycles` cycles.
std::vector<std::vector<SegmentTime>> issue_on_sm(const std::vector<WarpRun>& warps, const SmIssueModel& m,
                                                  double max_cycles = 1e7);

/// Shared-memory bytes one warp instruction moves: 512 for LDSM.x4 (any .M88/.MT88 .4) and
/// 128-bit LDS/STS, 256 for .x2 and 64-bit, 128 for other LDS / LDSM / STS; 0 for the rest.
double shared_bytes(const Instr& in);

}  // namespace attnsim::sass
