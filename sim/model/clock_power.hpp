// The SM clock a kernel runs at, from what every SM does per cycle.
//
// An H100/H200 under sustained load does not run at one clock: its SMs ran at 1.35-1.84 GHz by
// problem in the validation runs of one attention kernel (the clock read inside the kernel). Two
// limits set it (kernels/microbench clock_under_mix, 36 mixes of wgmma, softmax arithmetic and
// L2/HBM streams on all SMs, the board's power from NVML beside each):
//  - tensor-core work: the mixes with wgmma whose board stayed under its limit ran at 1.67-1.83
//    GHz whatever their duty (H100, 441-634 W of 700), while CUDA-core and memory work alone run
//    at the top clock (1.98 GHz). Their mean is `clock_ghz_tensor_ceiling`.
//  - the board's power limit: the board draws
//        P(f) = P0 + (f / f_max)^k (c_x + c_t tensor_duty + c_i issue_duty) + e_l L2 + e_h HBM  (W)
//    (duties per SM cycle; L2 and HBM in TB/s), fitted by least squares on the mixes' measured
//    power, k the best of 1, 2, 3 (dynamic power ~ f V^2, V rising with f over the range; the
//    H100 fitted 3). Where P(ceiling) exceeds the limit the controller lowers f until P(f) = limit.
//    The mixes' tensor tiles hold data like attention's (uniform in [-1, 1)): on [1, 2) with 7
//    mantissa bits the same wgmma drew so much less that the fitted clocks came out 7-12% high.
// The clock is the lower of the two. `attnsim calibrate` fits the constants; `predict` solves the
// clock from the kernel's predicted activity.
#pragma once

#include "model/hardware.hpp"

namespace attnsim {

/// What the chip does per SM clock, averaged over a kernel: the activity its power follows.
struct ChipActivity {
  double tensor_duty = 0;        ///< tensor-core busy cycles / SM cycles, mean over all SMs
  double issue_duty = 0;         ///< warp instructions issued / (SMSPs x cycles), mean over all SMs
  double l2_bytes_per_clk = 0;   ///< bytes the SMs read from L2 (TMA and loads), chip-wide, per SM clock
  double hbm_bytes_per_clk = 0;  ///< bytes moved to or from HBM, chip-wide, per SM clock
};

/// Board power (W) at SM clock `ghz` under `a` (the fitted model above). 0 when `hw` has no power
/// model (clock_power_limit_w 0).
double board_power_w(const Hardware& hw, const ChipActivity& a, double ghz);

/// The SM clock (GHz) the chip holds under `a`: the lower of the tensor-core ceiling (when
/// tensor_duty > 0) and the clock at which board_power_w reaches clock_power_limit_w, at most
/// clock_ghz_max. Returns `fallback_ghz` when `hw` has no power model.
double clock_under_activity(const Hardware& hw, const ChipActivity& a, double fallback_ghz);

}  // namespace attnsim
