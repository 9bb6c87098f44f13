#include "driver/tile_scheduler.hpp"

#include <algorithm>

namespace attnsim {

TileWork tile_at(const Problem& p, const TilingSpec& spec, int m) {
  const int rows = spec.rows_per_cta * spec.cta_group;
  const int n_total = (p.seqlen_k + spec.n_block - 1) / spec.n_block;
  TileWork t;
  t.m_block = m;
  const int row0 = m * rows;
  t.rows = std::min(rows, p.seqlen_q - row0);
  if (p.causal) {
    // Bottom-right aligned: row r sees keys <= r + (seqlen_k - seqlen_q).
    const int shift = p.seqlen_k - p.seqlen_q;
    const int last_key = std::min(p.seqlen_q, row0 + rows) - 1 + shift;
    t.n_blocks = std::min(n_total, last_key / spec.n_block + 1);
    const int first_masked = (row0 + shift) / spec.n_block;
    t.masked_blocks = t.n_blocks - std::min(first_masked, t.n_blocks);
  } else {
    t.n_blocks = n_total;
    t.masked_blocks = p.seqlen_k % spec.n_block ? 1 : 0;
  }
  return t;
}

GridPlan plan_tiles(const Hardware& hw, const Problem& p, const TilingSpec& spec) {
  GridPlan g;
  g.cta_group = spec.cta_group;
  g.ctas_per_sm = spec.ctas_per_sm;
  const int rows = spec.rows_per_cta * spec.cta_group;
  const int m_tiles = (p.seqlen_q + rows - 1) / rows;
  const long long heads = static_cast<long long>(p.heads) * p.batch;
  const int clusters = hw.num_sms / spec.cta_group;
  if (spec.tiles_per_head) {
    // One CTA per (batch, head), walking every m-block in order; ctas_per_sm of them share an SM.
    g.mode = GridPlan::Mode::PerHead;
    const long long slots = static_cast<long long>(hw.num_sms) * spec.ctas_per_sm;
    g.resident_ctas = static_cast<int>(std::min(slots, heads));
    std::vector<TileWork> walk;
    for (int m = 0; m < m_tiles; ++m) walk.push_back(tile_at(p, spec, m));
    for (long long h = 0; h < heads; ++h) g.cta_tiles.push_back(walk);
    return g;
  }
  const long long tiles = m_tiles * heads;
  if (spec.persistent) {
    g.mode = GridPlan::Mode::StaticPersistent;
    const long long grid = std::min<long long>(clusters, tiles);
    g.resident_ctas = static_cast<int>(grid * spec.cta_group);
    for (long long c = 0; c < grid; ++c) {
      std::vector<TileWork> list;
      for (long long t = c; t < tiles; t += grid) list.push_back(tile_at(p, spec, static_cast<int>(t % m_tiles)));
      g.cta_tiles.push_back(std::move(list));
    }
  } else {
    // Longest first: m-blocks in reverse (causal tiles near the end see the most KV blocks).
    g.mode = GridPlan::Mode::LptSingleTile;
    const long long slots = static_cast<long long>(clusters) * spec.ctas_per_sm;
    g.resident_ctas = static_cast<int>(std::min(slots, tiles) * spec.cta_group);
    for (int m = m_tiles - 1; m >= 0; --m)
      for (long long bh = 0; bh < heads; ++bh) g.cta_tiles.push_back({tile_at(p, spec, m)});
  }
  return g;
}

}  // namespace attnsim
