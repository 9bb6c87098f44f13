// The KV loop of the BlackFlash kernel (kernels/blackflash) in a cuobjdump -sass listing, and the
// time of each of its compute spans with the SM's consumer warps issuing it together
// (sm_issue.hpp).
//
// The plain instance is analysed (the traced one spills and records; the end-to-end time is the
// plain kernel's). Its consumer KV loop has the shape consumer.cuh gives it: the mbarrier wait
// for the stage, S = Q K^T (ldmatrix + 16 HMMA), one warp-uniform branch to the masked or the
// unmasked row max, bar.sync, exp2 and P to SMEM, bar.sync, the row-sum update and (j > 0) O
// rescaled behind one branch, O += P V (ldmatrix + 16 HMMA), the fence and the stage's release.
// The spans are cut where the kernel's trace recorder cuts them: mma_qk up to the mask branch,
// softmax_max (its unmasked arm; softmax_max_masked the other) up to the first bar.sync,
// softmax_exp between the two, rescale_o up to the end of the rescale branch's region, mma_pv to
// the loop's end. The try-wait on the stage's mbarrier (taken as already complete) is left out:
// the simulator prices the wait itself (mbarrier_ready_cycles).
//
// The SM runs the instance's resident CTAs (one, or two at 96 registers per thread), each with
// 8 consumer warps on the SMSPs of warps 1..8 after those of earlier CTAs (warp w on SMSP w % 4,
// the simulator's rule). The CTAs start together, as a launch starts them, and stay in step: on
// an H100 the traced 96-register kernel's mma_qk and mma_pv take 1.8x their one-CTA time, what
// both CTAs' ldmatrix traffic at once through the SM's shared memory gives, and the lockstep
// model's KV block (2936 cycles) matches the measured one (2893, hd64 s16k). Several KV blocks
// run; each span's cycles are the mean over the warps of its time in a steady-state block.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "calibrate/sm_issue.hpp"

namespace attnsim::sass {

/// Template arguments of an attnsim::blackflash::blackflash_forward<BfTraits<kv_stage, p_over_k, registers, trace>>.
struct BlackFlashKnobs {
  int kv_stage = 0;
  bool p_over_k = false;
  int registers = 0;
  bool trace = false;
};
/// The knobs of `mangled` when it is a blackflash_forward instance.
std::optional<BlackFlashKnobs> blackflash_knobs(const std::string& mangled);

/// One compute span of the KV loop.
struct BlackFlashSpan {
  std::string op;                  ///< mma_qk, softmax_max, softmax_max_masked, softmax_exp, rescale_o, mma_pv
  std::vector<const Instr*> path;  ///< its dynamic instructions
  IssueTime alone;                 ///< one warp alone on its SMSP (issue_segments over one KV block)
  double cycles = 0;               ///< mean over the consumer warps of its steady-state time among the resident warps
  double shared_bytes = 0;         ///< shared-memory bytes its loads and stores move (one warp)
  int hmma = 0;                    ///< HMMA.16816 instructions (4096 FLOP each)
};

/// The KV loop of one plain blackflash_forward instance.
struct BlackFlashAnalysis {
  const Function* function = nullptr;
  BlackFlashKnobs knobs;
  int ctas_per_sm = 1;         ///< resident CTAs the spans were timed with
  uint32_t kv_loop_bytes = 0;  ///< code of the consumer KV loop
  double period = 0;           ///< steady-state cycles per unmasked KV block (mean over warps)
  double period_masked = 0;    ///< the same with every block masked
  std::vector<BlackFlashSpan> spans;
  const BlackFlashSpan* find(const std::string& op) const;
};

/// Consumer warps of one CTA (kernels/blackflash/structure.h: warp 0 loads, warps 1..8 consume).
inline constexpr int kBlackFlashConsumers = 8;

/// Finds the consumer KV loop of a plain blackflash_forward instance and times its spans with
/// `ctas_per_sm` resident CTAs. Throws std::runtime_error when the code does not have the shape
/// above (no such loop, a branch the analysis cannot place, a loop larger than the instruction
/// cache: the model assumes it stays cached).
BlackFlashAnalysis analyse_blackflash(const Function& fn, const SmIssueModel& m, int ctas_per_sm);

}  // namespace attnsim::sass
