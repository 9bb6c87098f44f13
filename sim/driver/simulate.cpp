#include "driver/simulate.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>

namespace attnsim {

namespace {
// Tiles that cost the same: KV blocks, masked blocks, valid rows (not where they sit).
using Signature = std::vector<std::tuple<int, int, int>>;
Signature signature(const std::vector<TileWork>& tiles) {
  Signature s;
  for (const auto& t : tiles) s.emplace_back(t.n_blocks, t.masked_blocks, t.rows);
  return s;
}
}  // namespace

Prediction predict(const Schedule& schedule, const Hardware& hw, const Problem& problem, const PredictOptions& opt) {
  schedule.check(hw, problem);
  const GridPlan plan = schedule.plan_grid(hw, problem);
  EngineOptions eo;
  eo.active_sms = std::min(hw.num_sms, std::max(1, plan.resident_ctas));
  eo.record_spans = opt.record_spans;

  Prediction p;
  p.mode = plan.mode;
  p.resident_ctas = plan.resident_ctas;
  p.cta_group = plan.cta_group;
  for (const auto& l : plan.cta_tiles) p.total_tiles += l.size();

  std::map<Signature, SimResult> done;
  auto run = [&](const std::vector<TileWork>& tiles) -> const SimResult& {
    const Signature sig = signature(tiles);
    auto it = done.find(sig);
    if (it != done.end()) return it->second;
    SimResult r = simulate_cta(hw, schedule.lower(hw, problem, tiles), eo);
    p.events += r.events;
    ++p.ctas_simulated;
    return done.emplace(sig, std::move(r)).first->second;
  };

  const std::vector<TileWork>* critical = nullptr;
  if (plan.mode == GridPlan::Mode::LptSingleTile) {
    // Launch order is longest first; a CTA slot takes the next tile when it frees (list scheduling).
    std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
    const int slots = std::max(1, plan.resident_ctas / plan.cta_group);
    for (int i = 0; i < slots; ++i) free_at.push(0);
    double makespan = 0, longest = -1;
    for (const auto& tiles : plan.cta_tiles) {
      const double d = run(tiles).end_cycles;
      const double start = free_at.top();
      free_at.pop();
      free_at.push(start + d);
      makespan = std::max(makespan, start + d);
      if (d > longest) { longest = d; critical = &tiles; }
    }
    p.cycles = makespan;
  } else {
    // A CTA whose tiles are a prefix of another CTA's tiles cannot finish later than it (the
    // other runs the same tiles first, then more), so only the longest lists are simulated.
    std::vector<Signature> sigs;
    for (const auto& tiles : plan.cta_tiles) sigs.push_back(signature(tiles));
    auto is_strict_prefix = [](const Signature& a, const Signature& b) {
      return a.size() < b.size() && std::equal(a.begin(), a.end(), b.begin());
    };
    double worst = -1;
    for (size_t i = 0; i < plan.cta_tiles.size(); ++i) {
      const auto& tiles = plan.cta_tiles[i];
      bool dominated = false;
      for (size_t j = 0; j < sigs.size() && !dominated; ++j) dominated = is_strict_prefix(sigs[i], sigs[j]);
      if (dominated) continue;
      const double d = run(tiles).end_cycles;
      if (d > worst) { worst = d; critical = &tiles; }
    }
    p.cycles = worst;
  }
  p.critical = std::move(done.at(signature(*critical)));
  p.critical_tiles = static_cast<int>(critical->size());
  p.time_us = p.cycles * hw.us_per_cycle();
  p.flops = schedule.flops(problem);
  if (p.flops <= 0) p.flops = p.critical.units.tensor_flops;
  p.tflops = p.flops / (p.time_us * 1e-6) / 1e12;
  return p;
}

}  // namespace attnsim
