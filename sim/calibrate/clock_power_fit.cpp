#include "calibrate/clock_power_fit.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "model/json_reader.hpp"

namespace attnsim {

namespace {
using json = nlohmann::json;

double number(const json& doc, const std::string& file, const std::string& pointer) {
  const json::json_pointer p(pointer);
  if (!doc.contains(p) || !doc[p].is_number())
    throw InputError(file, pointer, "expected a number (a kernels/microbench clock_under_mix result)");
  return doc[p].get<double>();
}

/// One mix: clock (GHz), duties, traffic (TB/s), board power and limit (W).
struct Mix {
  double ghz, tensor, issue, l2, hbm, power, limit;
};
}  // namespace

std::vector<CalibratedConstant> fit_clock_power(const json& doc, const std::string& file) {
  const std::string cfg = "/results/configs";
  if (!doc.contains(json::json_pointer(cfg)) || !doc[json::json_pointer(cfg)].is_object())
    throw InputError(file, cfg, "expected the mixes of clock_under_mix");
  const double f_max = number(doc, file, "/results/max_clock_ghz");
  std::vector<Mix> mixes;
  for (const auto& [key, v] : doc[json::json_pointer(cfg)].items()) {
    const std::string at = cfg + "/" + key;
    Mix m{number(doc, file, at + "/clock_ghz"),
          number(doc, file, at + "/tensor_duty"),
          number(doc, file, at + "/issue_duty"),
          number(doc, file, at + "/l2_bytes_per_s") * 1e-12,
          number(doc, file, at + "/hbm_bytes_per_s") * 1e-12,
          number(doc, file, at + "/board_power_w"),
          number(doc, file, at + "/power_limit_w")};
    if (m.power > 0 && m.limit > 0) mixes.push_back(m);
  }
  if (mixes.size() < 8)
    throw InputError(file, cfg,
                     fmt::format("expected at least 8 mixes with board power (NVML), found {}", mixes.size()));
  std::vector<double> limits;
  for (const auto& m : mixes) limits.push_back(m.limit);
  std::nth_element(limits.begin(), limits.begin() + limits.size() / 2, limits.end());
  const double limit = limits[limits.size() / 2];
  // The tensor-core ceiling: mixes with wgmma whose board stayed clear of the limit.
  double ceiling = 0;
  int below = 0;
  for (const auto& m : mixes)
    if (m.tensor > 0 && m.power < limit - 15) {
      ceiling += m.ghz;
      ++below;
    }
  if (below == 0) throw InputError(file, cfg, "expected a mix with tensor work below the power limit");
  ceiling /= below;

  const auto n = static_cast<Eigen::Index>(mixes.size());
  Eigen::VectorXd power(n), best;
  for (Eigen::Index i = 0; i < n; ++i) power(i) = mixes[static_cast<size_t>(i)].power;
  double best_rms = INFINITY;
  int best_k = 0;
  for (int k = 1; k <= 3; ++k) {
    Eigen::MatrixXd a(n, 6);
    for (Eigen::Index i = 0; i < n; ++i) {
      const Mix& m = mixes[static_cast<size_t>(i)];
      const double s = std::pow(m.ghz / f_max, k);
      a.row(i) << 1, s, s * m.tensor, s * m.issue, m.l2, m.hbm;
    }
    const Eigen::VectorXd c = a.colPivHouseholderQr().solve(power);
    const double rms = std::sqrt((a * c - power).squaredNorm() / static_cast<double>(n));
    if (rms < best_rms) {
      best_rms = rms;
      best_k = k;
      best = c;
    }
  }
  const std::string how = fmt::format(
      "Eigen least-squares fit over {} mixes of board power P = {:.0f} + (f / {:.2f} GHz)^{} ({:.0f} + {:.0f} "
      "tensor_duty "
      "+ {:.0f} issue_duty) + {:.1f} L2 + {:.1f} HBM (W; TB/s), rms {:.0f} W; the exponent of 1, 2, 3 with the "
      "smallest rms",
      n, best(0), f_max, best_k, best(1), best(2), best(3), best(4), best(5), best_rms);
  return {
      {"clock_ghz_max", f_max, "clock_under_mix", "/results/max_clock_ghz (the driver's maximum SM clock)"},
      {"clock_power_limit_w", limit, "clock_under_mix", "median of the mixes' NVML enforced power limit"},
      {"clock_ghz_tensor_ceiling", ceiling, "clock_under_mix",
       fmt::format("mean SM clock of the {} mixes with wgmma whose board drew more than 15 W under its {:.0f} W limit",
                   below, limit)},
      {"clock_power_exponent", static_cast<double>(best_k), "clock_under_mix", how},
      {"clock_power_static_w", best(0), "clock_under_mix", how},
      {"clock_power_base_w", best(1), "clock_under_mix", how},
      {"clock_power_tensor_w", best(2), "clock_under_mix", how},
      {"clock_power_issue_w", best(3), "clock_under_mix", how},
      {"clock_power_l2_w_per_tbps", best(4), "clock_under_mix", how},
      {"clock_power_hbm_w_per_tbps", best(5), "clock_under_mix", how},
  };
}

}  // namespace attnsim
