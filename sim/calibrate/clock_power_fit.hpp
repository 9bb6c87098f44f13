// The board-power model of model/clock_power.hpp, fitted on a kernels/microbench clock_under_mix
// result.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrate/calibrate.hpp"

namespace attnsim {

/// From the clock_under_mix file `doc` (read from `file`): clock_ghz_max (/results/max_clock_ghz),
/// clock_power_limit_w (median of the mixes' enforced limit), clock_ghz_tensor_ceiling (mean clock
/// of the mixes with tensor work whose board drew more than 15 W under the limit), and the power
/// constants P0, c_x, c_t, c_i, e_l, e_h of
///     P = P0 + (f / f_max)^k (c_x + c_t tensor_duty + c_i issue_duty) + e_l L2 + e_h HBM   (W; TB/s)
/// by Eigen least squares over every mix's measured board power, for k = 1, 2, 3; the k with the
/// smallest residual is kept (clock_power_exponent). Throws InputError (file, JSON path) when a
/// field is missing or fewer than 8 mixes have board power (NVML absent on the GPU machine).
std::vector<CalibratedConstant> fit_clock_power(const nlohmann::json& doc, const std::string& file);

}  // namespace attnsim
