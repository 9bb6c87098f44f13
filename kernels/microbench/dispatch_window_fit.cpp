#include "dispatch_window_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

namespace mb {
namespace {

double overlap(double a0, double a1, double b0, double b1) { return std::max(0.0, std::min(a1, b1) - std::max(a0, b0)); }

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

StretchFit fit_dispatch_stretch(const std::vector<DispatchWindow>& windows, const std::vector<NeighbourPhase>& phases,
                                int kinds, double idle) {
  std::vector<std::vector<double>> rows;
  std::vector<double> y, len;
  for (const DispatchWindow& w : windows) {
    std::vector<double> c(kinds, 0.0);
    double any = 0;
    for (const NeighbourPhase& p : phases)
      if (p.smsp == w.smsp) {
        const double o = overlap(w.begin, w.end, p.begin, p.end);
        c[p.kind] += o;
        any += o;
      }
    if (any <= 0) continue;
    const double l = w.end - w.begin;
    rows.push_back(c);
    y.push_back((l - idle) * l / idle);  // = sum_k s_k c_k
    len.push_back(l);
  }
  StretchFit fit;
  fit.windows = static_cast<int>(rows.size());
  fit.stretch.assign(kinds, 0.0);
  fit.cycles.assign(kinds, 0.0);
  if (rows.empty()) return fit;
  Eigen::MatrixXd a(rows.size(), kinds);
  Eigen::VectorXd b(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int k = 0; k < kinds; ++k) {
      a(i, k) = rows[i][k];
      fit.cycles[k] += rows[i][k];
    }
    b(i) = y[i];
  }
  // Kinds no window saw stay 0 (their columns would make the system singular).
  std::vector<int> seen;
  for (int k = 0; k < kinds; ++k)
    if (fit.cycles[k] > 0) seen.push_back(k);
  Eigen::MatrixXd as(rows.size(), seen.size());
  for (size_t j = 0; j < seen.size(); ++j) as.col(j) = a.col(seen[j]);
  const Eigen::VectorXd s = as.colPivHouseholderQr().solve(b);
  for (size_t j = 0; j < seen.size(); ++j) fit.stretch[seen[j]] = s(j);
  // Error in L: L solves L^2 - idle L - idle * sum s_k c_k = 0.
  double se = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    double q = 0;
    for (int k = 0; k < kinds; ++k) q += fit.stretch[k] * rows[i][k];
    const double l = 0.5 * (idle + std::sqrt(std::max(0.0, idle * idle + 4 * idle * q)));
    se += (l - len[i]) * (l - len[i]);
  }
  fit.rms_cycles = std::sqrt(se / rows.size());
  return fit;
}

std::vector<PhaseSlowdown> fit_phase_slowdown(const std::vector<DispatchWindow>& windows,
                                              const std::vector<NeighbourPhase>& phases, int kinds) {
  std::vector<PhaseSlowdown> out(kinds);
  for (int k = 0; k < kinds; ++k) {
    std::vector<Eigen::Vector3d> x;
    std::vector<double> y, alone;
    int touched = 0;
    for (const NeighbourPhase& p : phases) {
      if (p.kind != k) continue;
      double d = 0, t = 0;
      for (const DispatchWindow& w : windows)
        if (w.smsp == p.smsp) {
          d += overlap(p.begin, p.end, w.begin, w.end);
          t += overlap(p.begin, p.end, w.end, w.done);
        }
      x.emplace_back(1.0, d, t);
      y.push_back(p.end - p.begin);
      if (d + t > 0)
        ++touched;
      else
        alone.push_back(p.end - p.begin);
    }
    PhaseSlowdown& r = out[k];
    r.instances = static_cast<int>(x.size());
    r.touched = touched;
    r.alone_median = median_of(alone);
    if (touched < 3 || x.size() < 6) continue;
    Eigen::MatrixXd a(x.size(), 3);
    Eigen::VectorXd b(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      a.row(i) = x[i].transpose();
      b(i) = y[i];
    }
    const Eigen::Vector3d c = a.colPivHouseholderQr().solve(b);
    r.alone = c(0);
    r.per_dispatch = c(1);
    r.per_tensor = c(2);
  }
  return out;
}

}  // namespace mb
