#include "plan/tile_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>
#include <stdexcept>

#include "common/tile_order.h"

namespace attnsim {

TileWork tile_at(const Problem& p, const TilingSpec& spec, int m) {
  const int rows = spec.rows_per_cta * spec.cta_group;
  TileWork t;
  t.m_block = m;
  const int row0 = m * rows;
  t.rows = std::min(rows, p.seqlen_q - row0);
  t.n_blocks = attnsim_kv_blocks(row0, rows, spec.n_block, p.seqlen_q, p.seqlen_k, p.causal);
  t.masked_blocks = t.n_blocks - attnsim_first_masked_block(row0, spec.n_block, t.n_blocks, p.seqlen_q, p.seqlen_k,
                                                              p.causal);
  return t;
}

std::vector<std::vector<size_t>> assign_dynamic_tiles(const std::vector<double>& cost, const std::vector<int>& n_blocks,
                                                      size_t ctas, int lead_blocks, double start,
                                                      std::vector<double>* done_at) {
  if (cost.size() != n_blocks.size())
    throw std::invalid_argument("assign_dynamic_tiles: a cost and a block count per tile");
  if (ctas == 0) throw std::invalid_argument("assign_dynamic_tiles: no CTA");
  using Ask = std::pair<double, size_t>;  // (asks at, CTA)
  std::priority_queue<Ask, std::vector<Ask>, std::greater<Ask>> asks;
  std::vector<std::vector<size_t>> lists(ctas);
  std::vector<double> done(ctas, start);
  for (size_t i = 0; i < cost.size(); ++i) {
    size_t c = i;  // CTA c's first tile is tile c (the kernel's blockIdx.x)
    if (i >= ctas) {
      c = asks.top().second;
      asks.pop();
    }
    lists[c].push_back(i);
    done[c] += cost[i];
    const int n = std::max(1, n_blocks[i]);
    // Ask times at a resolution of 1/16 cycle, so that equal times tie exactly (the lower CTA
    // first): a tile's exact simulation and its steady-state extrapolation agree to about 1e-6
    // cycles, and that rounding noise must not decide which CTA takes the next tile.
    const double at = done[c] - cost[i] * std::min(n, std::max(0, lead_blocks)) / n;
    asks.push({std::round(at * 16) / 16, c});
  }
  if (done_at) *done_at = std::move(done);
  return lists;
}

namespace {
/// Resident CTAs per distinct (batch, KV head) among the first `resident` tiles in launch order
/// (query heads of one GQA group read the same K/V).
double kv_sharing(const Problem& p, int m_tiles, long long heads, bool persistent, bool per_head, long long section,
                  long long resident) {
  std::set<long long> kv;
  const int group = std::max(1, p.heads / std::max(1, p.kv_heads));
  for (long long t = 0; t < resident; ++t) {
    int m = 0;
    long long bh = t;
    if (!per_head) attnsim_tile_coords<long long>(t, persistent, m_tiles, heads, section, &m, &bh);
    kv.insert((bh / p.heads) * p.kv_heads + (bh % p.heads) / group);
  }
  return kv.empty() ? 1.0 : static_cast<double>(resident) / static_cast<double>(kv.size());
}
}  // namespace

GridPlan plan_tiles(const Hardware& hw, const Problem& p, const TilingSpec& spec, long long max_tiles) {
  GridPlan g;
  g.cta_group = spec.cta_group;
  g.ctas_per_sm = spec.ctas_per_sm;
  const int rows = spec.rows_per_cta * spec.cta_group;
  const int m_tiles = (p.seqlen_q + rows - 1) / rows;
  const long long heads = static_cast<long long>(p.heads) * p.batch;
  const int clusters = hw.num_sms / spec.cta_group;
  g.tiles = m_tiles * heads;  // < 2^18 x 2^36: no overflow
  if (g.tiles > max_tiles) {
    g.over_budget = true;
    return g;
  }
  if (spec.tiles_per_head) {
    // One CTA per (batch, head), walking every m-block in order; ctas_per_sm of them share an SM.
    g.mode = GridPlan::Mode::PerHead;
    const long long slots = static_cast<long long>(hw.num_sms) * spec.ctas_per_sm;
    g.resident_ctas = static_cast<int>(std::min(slots, heads));
    std::vector<TileWork> walk;
    for (int m = 0; m < m_tiles; ++m) walk.push_back(tile_at(p, spec, m));
    for (long long h = 0; h < heads; ++h) g.cta_tiles.push_back(walk);
    g.kv_sharing = kv_sharing(p, m_tiles, heads, false, true, 0, g.resident_ctas);
    return g;
  }
  const long long tiles = m_tiles * heads;
  if (spec.scheduler == TileScheduler::StaticPersistent) {
    g.mode = GridPlan::Mode::StaticPersistent;
    const long long grid = std::min<long long>(clusters, tiles);
    g.resident_ctas = static_cast<int>(grid * spec.cta_group);
    for (long long c = 0; c < grid; ++c) {
      std::vector<TileWork> list;
      for (long long t = c; t < tiles; t += grid) {
        int m;
        long long bh;
        attnsim_tile_coords<long long>(t, true, m_tiles, heads, 0, &m, &bh);
        list.push_back(tile_at(p, spec, m));
      }
      g.cta_tiles.push_back(std::move(list));
    }
    g.kv_sharing = kv_sharing(p, m_tiles, heads, true, false, 0, grid);
  } else {
    // Longest first: m-blocks in reverse (causal tiles near the end see the most KV blocks),
    // within L2 sections of spec.l2_section heads.
    const bool dynamic = spec.scheduler == TileScheduler::DynamicLpt;
    g.mode = dynamic ? GridPlan::Mode::DynamicLpt : GridPlan::Mode::LptSingleTile;
    g.next_tile_lead_blocks = dynamic ? spec.next_tile_lead_blocks : 0;
    const long long slots = static_cast<long long>(clusters) * (dynamic ? 1 : spec.ctas_per_sm);
    g.resident_ctas = static_cast<int>(std::min(slots, tiles) * spec.cta_group);
    for (long long t = 0; t < tiles; ++t) {
      int m;
      long long bh;
      attnsim_tile_coords<long long>(t, false, m_tiles, heads, spec.l2_section, &m, &bh);
      g.cta_tiles.push_back({tile_at(p, spec, m)});
    }
    g.kv_sharing = kv_sharing(p, m_tiles, heads, false, false, spec.l2_section, std::min(slots, tiles));
  }
  return g;
}

}  // namespace attnsim
