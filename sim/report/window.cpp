#include "report/window.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace attnsim {

std::pair<double, double> steady_state_window(const Timeline& tl, int iterations) {
  std::vector<std::pair<int, double>> qk;  // (block, start) of stage-0 QK in tile 0
  for (const auto& u : tl.units)
    if (u.name == "tensor_core")
      for (const auto& s : u.spans)
        if (s.op == ATTNSIM_OP_MMA_QK && s.tile == 0 && s.stage == 0) qk.emplace_back(s.block, s.start);
  // The whole run when there is no steady state to show; never an empty window (a run of 0 cycles
  // shows [0, 1]).
  const std::pair<double, double> whole{0, std::max(1.0, tl.end_cycles)};
  if (qk.size() < 2) return whole;
  std::sort(qk.begin(), qk.end(), [](auto& a, auto& b) { return a.second < b.second; });
  const int n = static_cast<int>(qk.size());
  const int span = std::min(iterations, n - 1);
  const int first = std::max(0, n / 2 - span / 2);
  const int last = std::min(n - 1, first + span);
  // SM90 records one span per SMSP for each wgmma: with few blocks those may all start together.
  if (!(qk[last].second > qk[first].second)) return whole;
  return {qk[first].second, qk[last].second};
}

std::pair<double, double> parse_window_us(const std::string& text, const Timeline& tl) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw std::invalid_argument("--window expects T0:T1 in microseconds, e.g. 10:12.5");
  try {
    const double t0 = std::stod(text.substr(0, colon)), t1 = std::stod(text.substr(colon + 1));
    if (!(t1 > t0) || t0 < 0) throw std::invalid_argument("");
    const double cycles_per_us = tl.clock_ghz * 1e3;
    return {t0 * cycles_per_us, t1 * cycles_per_us};
  } catch (const std::exception&) {
    throw std::invalid_argument("--window expects T0:T1 in microseconds with 0 <= T0 < T1, got \"" + text + "\"");
  }
}

double first_tile_end(const Timeline& tl) {
  int first = -1;  // the lowest tile index a span carries
  for (const auto& w : tl.warps)
    for (const auto& sp : w.spans)
      if (sp.tile >= 0 && (first < 0 || sp.tile < first)) first = sp.tile;
  if (first < 0) return tl.end_cycles;
  double end = 0;
  for (const auto& w : tl.warps)
    for (const auto& sp : w.spans)
      if (sp.tile == first) end = std::max(end, sp.end);
  return end > 0 ? end : tl.end_cycles;
}

}  // namespace attnsim
