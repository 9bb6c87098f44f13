// Processor sharing of an SM's pipes among the compute blocks running at once.
// Resources: per SMSP the issue slot, the FMA, ALU and MUFU pipes and the SMSP's share of
// the tensor cores as warp-level mma.sync sees them; per SM the
// TMEM datapath and SMEM bandwidth. Rates are max-min fair in "speed" (the fraction
// of a block's stand-alone speed): all blocks speed up together until a resource
// saturates, blocks using it are frozen, the rest continue (progressive filling).
// Two MUFU-bound warps on one SMSP therefore each run at half speed; on two SMSPs
// both run at full speed.
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

/// The shared pipes of one SM and the compute blocks currently using them (one per warp at most).
class PipeSharing {
 public:
  explicit PipeSharing(const Hardware& hw, int num_warps);

  /// Starts warp `warp`'s block on SMSP `smsp` at time `now`. Returns its stand-alone duration (cycles).
  double start(int warp, int smsp, const Work& work, double now);
  /// Removes a finished block (after advance() brought it to zero remaining work).
  void finish(int warp, double now);
  /// Brings every block's remaining work to time `now` and recomputes all rates.
  void rebalance(double now);
  /// Scales SMSP `smsp`'s FMA, ALU and MUFU pipes to these fractions of their nominal rates from
  /// time `now` on (1 = nominal): the pipes slow while the SMSP's tensor core runs wgmma.
  void scale_smsp(int smsp, double fma, double alu, double mufu, double now);
  /// Projected finish time of warp's block at current rates (+inf when stalled).
  double finish_time(int warp) const;
  bool active(int warp) const { return slots_[warp].active; }
  /// Work consumed so far per resource, in the resource's units (lane-ops, bytes, instructions).
  const std::array<double, kNumResources>& consumed() const { return consumed_; }
  /// Nominal capacity per resource per cycle (utilisation is reported against it).
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
  };
  void advance(double now);
  void solve();
  std::array<double, kNumResources> nominal_{};   ///< per cycle, as the hardware config gives it
  std::array<double, kNumResources> capacity_{};  ///< per cycle now (nominal, or scaled by scale_smsp)
  std::array<double, kNumResources> consumed_{};
  std::vector<Slot> slots_;
  std::vector<int> active_;  ///< warps with an active block, in start order
};

}  // namespace attnsim
