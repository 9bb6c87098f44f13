#include "model/clock_power.hpp"

#include <algorithm>
#include <cmath>

namespace attnsim {

double board_power_w(const Hardware& hw, const ChipActivity& a, double ghz) {
  if (hw.clock_power_limit_w <= 0 || hw.clock_ghz_max <= 0) return 0;
  const double scale = std::pow(ghz / hw.clock_ghz_max, hw.clock_power_exponent);
  const double tb_per_s = ghz * 1e9 / 1e12;  // bytes per clock -> TB/s
  return hw.clock_power_static_w +
         scale *
             (hw.clock_power_base_w + hw.clock_power_tensor_w * a.tensor_duty + hw.clock_power_issue_w * a.issue_duty) +
         hw.clock_power_l2_w_per_tbps * a.l2_bytes_per_clk * tb_per_s +
         hw.clock_power_hbm_w_per_tbps * a.hbm_bytes_per_clk * tb_per_s;
}

double clock_under_activity(const Hardware& hw, const ChipActivity& a, double fallback_ghz) {
  if (hw.clock_power_limit_w <= 0 || hw.clock_ghz_max <= 0) return fallback_ghz;
  const double top = a.tensor_duty > 0 ? std::min(hw.clock_ghz_max, hw.clock_ghz_tensor_ceiling) : hw.clock_ghz_max;
  if (board_power_w(hw, a, top) <= hw.clock_power_limit_w) return top;
  // Power grows with the clock (every term is non-negative in the fitted constants' range of use):
  // bisect for the clock at which the board draws its limit.
  double lo = 0.1 * top, hi = top;
  if (board_power_w(hw, a, lo) > hw.clock_power_limit_w) return lo;
  for (int i = 0; i < 50; ++i) {
    const double mid = 0.5 * (lo + hi);
    (board_power_w(hw, a, mid) > hw.clock_power_limit_w ? hi : lo) = mid;
  }
  return lo;
}

}  // namespace attnsim
