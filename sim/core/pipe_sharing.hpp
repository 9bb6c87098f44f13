// Processor sharing of an SM's pipes among the compute blocks running at once.
// Resources: per SMSP the issue slot, the FMA, ALU and MUFU pipes and the SMSP's share of
// the tensor cores as warp-level mma.sync sees them; per SM the
// TMEM datapath and SMEM bandwidth. Rates are max-min fair in "speed" (the fraction
// of a block's stand-alone speed): all blocks speed up together until a resource
// saturates, blocks using it are frozen, the rest continue (progressive filling).
// Two MUFU-bound warps on one SMSP therefore each run at half speed; on two SMSPs
// both run at full speed. A block with a measured timing (MeasuredTiming) takes at least its
// measured stand-alone time, so a latency-bound block leaves pipe capacity to others.
// While the SMSP's tensor core runs wgmma, blocks do their work slower and hold their pipes
// longer: a measured block stretches as a whole by its measured slowdown beside SS or RS wgmma
// (demand and stand-alone time both x slowdown); any other block does each pipe's work at that
// pipe's rate beside wgmma (Hardware::*_rate_beside_mma). kernels/microbench softmax_block shows
// the first: two of the kernel's exp blocks on one SMSP beside wgmma take 1.7x one block's time
// there, as two blocks alone take 1.6x one alone; a cap on speed alone would give 1.4x.
//
// Blocks of CTAs resident together on the SM (merged programs) are not equals: the SMSP's warp
// scheduler issues for the oldest ready warp (greedy-then-oldest), so the pipes go to the oldest
// CTA's blocks first and a younger CTA's take what is left (classes by Op::cta_rank, filled in
// order; fair within a class). Traced at 4 CTAs per SM (FA2-style kernel, `attnsim run
// --trace-warps all --full-trace`, H100), every SM's CTAs finish in launch order, the oldest at
// 1.4x its time alone and the youngest last, alone for its final half. A block whose time was
// taken with the resident CTAs issuing beside it (MeasuredTiming::with_residents: sm_issue's
// co-resident CTAs start together and issue in turn) is served with the oldest: its sharing is
// in its time already (blackflash's two CTAs per SM, traced the same way, finish together).
#pragma once
#include <array>
#include <vector>

#include "core/program.hpp"
#include "model/hardware.hpp"

namespace attnsim {

/// Resource indices: SMSP s owns [5s, 5s+5): issue, fma, alu, mufu, mma.sync; then TMEM, SMEM.
constexpr int kPipesPerSmsp = 5;
constexpr int kIssuePipe = 0, kFmaPipe = 1, kAluPipe = 2, kMufuPipe = 3, kMmaSyncPipe = 4;
constexpr int kMaxSmsp = 4;
constexpr int kTmemResource = kMaxSmsp * kPipesPerSmsp;
constexpr int kSmemResource = kTmemResource + 1;
constexpr int kNumResources = kSmemResource + 1;
static_assert(kNumResources <= 32, "PipeSharing::solve keeps the resources a class uses as bits of a uint32_t");

/// What an SMSP's tensor core is running: the CUDA-core pipes beside it slow, by operand source.
enum class SmspMma : uint8_t { idle, ss, rs };

/// The shared pipes of one SM and the compute blocks currently using them (one per warp at most).
class PipeSharing {
 public:
  explicit PipeSharing(const Hardware& hw, int num_warps);

  /// Starts warp `warp`'s block on SMSP `smsp` at time `now`; `cta_rank`: its CTA's launch order
  /// on the SM (0 oldest, served first). Returns its stand-alone duration (cycles): the longest
  /// pipe's work at its nominal rate, or the measured alone time if longer.
  double start(int warp, int smsp, const Work& work, double now, const MeasuredTiming& measured = {}, int cta_rank = 0);
  /// Removes a finished block (after advance() brought it to zero remaining work).
  void finish(int warp, double now);
  /// Brings every block's remaining work to time `now` and recomputes all rates.
  void rebalance(double now);
  /// From time `now` on, SMSP `smsp`'s tensor core runs `mma` (idle, SS or RS wgmma): the blocks
  /// on that SMSP take their times beside it (see above). Returns whether a running block's rate
  /// changed (so that its finish must be rescheduled).
  bool set_smsp_mma(int smsp, SmspMma mma, double now);
  /// From time `now` on, TMA copies are (`landing`) or are not landing in the SM's shared memory:
  /// blocks measured beside landing copies (MeasuredTiming::beside_copies) take that time.
  /// Returns whether a running block's rate changed.
  bool set_copies_landing(bool landing, double now);
  /// Projected finish time of warp's block at current rates (+inf when stalled).
  double finish_time(int warp) const;
  bool active(int warp) const { return slots_[warp].active; }
  /// The SMSPs (bit s: SMSP s) whose blocks the last start, finish or state change re-rated;
  /// blocks on the others kept their speeds, so their finish times still stand.
  uint32_t resolved_smsps() const { return resolved_; }
  /// Work consumed so far per resource, in the resource's units (lane-ops, bytes, instructions).
  const std::array<double, kNumResources>& consumed() const { return consumed_; }
  /// Capacity per resource per cycle (utilisation is reported against it).
  const std::array<double, kNumResources>& capacity() const { return nominal_; }

 private:
  /// One warp's compute block under sharing.
  struct Slot {
    bool active = false;
    std::array<double, kNumResources> demand{};  ///< total work per resource
    double standalone = 0;                       ///< cycles at full speed
    double remaining = 0;                        ///< fraction of the block left, 1 -> 0
    double speed = 0;                            ///< fraction of stand-alone speed
    double last = 0;                             ///< time `remaining` was last updated
    int smsp = 0;
    std::array<double, 2> beside{0, 0};             ///< measured slowdown beside SS, RS wgmma (0: not measured)
    std::array<double, 3> beside_copies{1, 1, 1};   ///< further slowdown while copies land: idle, SS, RS
    int rank = 0;                                   ///< its CTA's launch order on the SM (0 served first)
    std::array<double, kNumResources> effective{};  ///< demand as its SMSP's tensor core state makes it
    double effective_standalone = 0;                ///< cycles at full speed in that state
    /// Resources with demand, as indices (at most the SMSP's 5 pipes and the 2 SM-wide ones):
    /// solve() visits only these.
    std::array<int8_t, kPipesPerSmsp + 2> used{};
    int n_used = 0;
    bool sm_wide = false;  ///< uses TMEM or SMEM, which couple it to the blocks of the other SMSPs
  };
  /// Recomputes the slot's effective demand and stand-alone time for its SMSP's tensor core state.
  void refresh(Slot& s) const;
  void advance(double now);
  /// `smsps` and, where one of their blocks uses an SM-wide resource (TMEM, SMEM), every SMSP with
  /// a block that uses one: the blocks whose speeds a change on `smsps` can move.
  uint32_t coupled(uint32_t smsps) const;
  /// Recomputes the speeds of the blocks on `smsps` (closed under coupled()). The others keep
  /// theirs: they share no resource with these, so max-min filling gives them the same speeds.
  void solve(uint32_t smsps);
  static constexpr uint32_t kAllSmsps = (1u << kMaxSmsp) - 1;
  std::array<double, kNumResources> nominal_{};  ///< per cycle, as the hardware config gives it
  std::array<double, kNumResources> consumed_{};
  std::vector<Slot> slots_;
  std::array<SmspMma, kMaxSmsp> smsp_mma_{};
  bool copies_landing_ = false;                 ///< TMA copies are landing in the SM's shared memory
  std::array<double, 3> beside_mma_{};          ///< fma, alu, mufu rate fractions beside wgmma (hardware config)
  std::vector<int> active_;                     ///< warps with an active block, in start order
  std::vector<int> ranks_, open_, still_open_;  ///< solve's scratch index lists, kept for their capacity
  std::array<double, kNumResources> used_{}, load_{};  ///< solve's scratch per resource, zero between calls
  uint32_t resolved_ = kAllSmsps;               ///< see resolved_smsps()
};

}  // namespace attnsim
