#include "measure/warpgroup_phase.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/op_names.h"
#include "common/trace_record.h"  // attnsim_wait_name: the wait labels measured and predicted timelines share
#include "sm90/structure.h"       // kWarpsPerWarpgroup

namespace attnsim {
namespace {

bool is_wgmma_wait(const Timeline& tl, const Span& s) {
  return s.kind == SpanKind::Wait && tl.label_of(s) == attnsim_wait_name(ATTNSIM_WAIT_WGMMA);
}

/// For each KV step of `warp` (from one mma_qk span to the next) that has an mma_pv span and two
/// wgmma waits: (its QK start, its PV completion), in cycles.
std::vector<std::pair<double, double>> pv_steps(const Timeline& tl, const WarpTrack& warp) {
  std::vector<std::pair<double, double>> steps;
  const auto& sp = warp.spans;
  size_t i = 0;
  while (i < sp.size() && sp[i].op != ATTNSIM_OP_MMA_QK) ++i;
  while (i < sp.size()) {
    size_t next = i + 1;
    while (next < sp.size() && sp[next].op != ATTNSIM_OP_MMA_QK) ++next;
    bool pv = false;
    int waits = 0;
    double done = 0;
    for (size_t k = i + 1; k < next; ++k) {
      pv |= sp[k].op == ATTNSIM_OP_MMA_PV;
      if (pv && is_wgmma_wait(tl, sp[k]) && ++waits == 2) done = sp[k].end;
    }
    if (waits >= 2) steps.emplace_back(sp[i].start, done);
    i = next;
  }
  return steps;
}

}  // namespace

std::vector<PhaseLink> warpgroup_phase(const Timeline& tl, uint32_t warp_mask) {
  // The lowest recorded warp with QK spans of each consumer warpgroup, in warpgroup order.
  std::map<int, const WarpTrack*> reader;
  for (const WarpTrack& w : tl.warps) {
    if (w.warp < 0 || w.warp >= 32 || !((warp_mask >> w.warp) & 1u)) continue;
    const bool has_qk = std::any_of(w.spans.begin(), w.spans.end(),
                                    [](const Span& s) { return s.op == ATTNSIM_OP_MMA_QK; });
    if (!has_qk) continue;
    const int group = w.warp / sm90::kWarpsPerWarpgroup;
    if (!reader.count(group) || w.warp < reader[group]->warp) reader[group] = &w;
  }
  std::vector<PhaseLink> links;
  if (reader.size() < 2) return links;
  std::vector<const WarpTrack*> order;
  for (const auto& [group, w] : reader) order.push_back(w);
  for (size_t g = 0; g < order.size(); ++g) {
    const WarpTrack& from = *order[g];
    const WarpTrack& to = *order[(g + 1) % order.size()];
    std::vector<double> qk;
    for (const Span& s : to.spans)
      if (s.op == ATTNSIM_OP_MMA_QK) qk.push_back(s.start);
    PhaseLink link{from.warp, to.warp, {}};
    for (const auto& [qk_start, done] : pv_steps(tl, from)) {
      const auto next = std::upper_bound(qk.begin(), qk.end(), qk_start);
      if (next != qk.end()) link.d_ns.push_back((*next - done) / tl.clock_ghz);
    }
    links.push_back(std::move(link));
  }
  return links;
}

std::vector<PhaseLink> warpgroup_phase(const std::vector<const Timeline*>& tls, uint32_t warp_mask) {
  std::vector<PhaseLink> pooled;
  for (const Timeline* tl : tls) {
    const std::vector<PhaseLink> links = warpgroup_phase(*tl, warp_mask);
    if (links.empty()) continue;
    if (pooled.empty()) {
      pooled = links;
      continue;
    }
    for (PhaseLink& p : pooled)
      for (const PhaseLink& l : links)
        if (l.from_warp == p.from_warp && l.to_warp == p.to_warp) p.d_ns.insert(p.d_ns.end(), l.d_ns.begin(), l.d_ns.end());
  }
  return pooled;
}

double median_d_ns(const PhaseLink& link) {
  if (link.d_ns.empty()) return 0;
  std::vector<double> v = link.d_ns;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2) return v[mid];
  const double upper = v[mid];
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

std::string format_phase_line(const std::vector<PhaseLink>& measured, const std::vector<PhaseLink>& predicted) {
  auto value = [](const std::vector<PhaseLink>& links, int from, int to) -> std::string {
    for (const PhaseLink& l : links)
      if (l.from_warp == from && l.to_warp == to && !l.d_ns.empty()) return fmt::format("{:+.0f} ns", median_d_ns(l));
    return "-";
  };
  std::vector<std::pair<int, int>> keys;
  for (const auto* side : {&measured, &predicted})
    for (const PhaseLink& l : *side)
      if (!l.d_ns.empty() && std::find(keys.begin(), keys.end(), std::make_pair(l.from_warp, l.to_warp)) == keys.end())
        keys.emplace_back(l.from_warp, l.to_warp);
  std::string line;
  for (const auto& [from, to] : keys)
    line += fmt::format("{}warps {} -> {}: measured {}, predicted {}", line.empty() ? "" : "; ", from, to,
                        value(measured, from, to), value(predicted, from, to));
  return line;
}

}  // namespace attnsim
