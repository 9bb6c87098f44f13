// The SM100 kernel's tile scheduler, portable: which work tiles a CTA runs, in which order, and
// the KV blocks each visits. A work tile is q_stage x cta_group x 128 query rows of one (batch,
// head), run by one cluster of cta_group CTAs (cluster c = CTAs cta_group c .. cta_group c +
// cta_group - 1). FA4's schedulers (flash_attn/cute/tile_scheduler.py, fa4-v4.0.0.beta27): static
// persistent for non-causal problems (clusters = min(SMs / cta_group, tiles), m-block fastest,
// then head, then batch; cluster c takes tiles c, c + clusters, ...), one cluster per tile
// longest-first for causal ones. The order is
// the simulator's (kernels/common/tile_order.h, sim/plan/tile_scheduler.cpp), so a predicted
// and a measured run walk the same tiles; FA4's L2 head-swizzle of the causal order is not
// modelled by either. Used by the kernel (kernels/sm100) and the GPU test
// (tests/gpu/sm100_portable_gpu.cu). Plain C++; callable from device code when compiled by nvcc.
#pragma once

#include "common/tile_order.h"

namespace attnsim::sm100 {

/// The problem as the scheduler sees it. rows_per_tile = q_stage x cta_group x 128 (one
/// cluster's work tile); cta_group: CTAs per cluster (only the grid size reads it, so the kernel's
/// tile walk costs no more registers with it).
struct TileSpace {
  int batch = 1, heads = 1, seqlen_q = 1, seqlen_k = 1;
  int rows_per_tile = 256, n_block = 128;
  bool causal = false, persistent = true;
  int cta_group = 1;

  /// Work tiles along seqlen_q.
  ATTNSIM_HD int m_tiles() const { return (seqlen_q + rows_per_tile - 1) / rows_per_tile; }
  /// Work tiles of the whole problem.
  ATTNSIM_HD long long num_tiles() const { return static_cast<long long>(m_tiles()) * batch * heads; }
  /// Clusters on a GPU of `sm_count` SMs: persistent, one per cta_group SMs (at most one per
  /// tile); otherwise one per tile.
  ATTNSIM_HD long long clusters(int sm_count) const {
    const long long slots = sm_count / cta_group;
    return persistent ? (num_tiles() < slots ? num_tiles() : slots) : num_tiles();
  }
  /// CTAs to launch: cta_group per cluster.
  ATTNSIM_HD long long grid(int sm_count) const { return clusters(sm_count) * cta_group; }
};

/// One work tile: its m-block (of rows_per_tile rows), head, batch, the KV blocks [0, n_blocks)
/// its rows see and the first of them that needs a mask (causal diagonal or seqlen_k tail).
struct TileCoord {
  int m = 0, head = 0, batch = 0, n_blocks = 0, first_masked = 0;
};

/// Tile `t` of the launch order.
ATTNSIM_HD TileCoord tile_at(const TileSpace& s, long long t) {
  TileCoord c;
  long long bh = 0;
  attnsim_tile_coords<long long>(t, s.persistent, s.m_tiles(), static_cast<long long>(s.batch) * s.heads, 0, &c.m, &bh);
  c.head = static_cast<int>(bh % s.heads);
  c.batch = static_cast<int>(bh / s.heads);
  // Both CTAs of a cluster visit the same KV blocks (their MMAs are one instruction).
  const int row0 = c.m * s.rows_per_tile;
  c.n_blocks = attnsim_kv_blocks(row0, s.rows_per_tile, s.n_block, s.seqlen_q, s.seqlen_k, s.causal);
  c.first_masked = attnsim_first_masked_block(row0, s.n_block, c.n_blocks, s.seqlen_q, s.seqlen_k, s.causal);
  return c;
}

/// The first tile of cluster `cluster` (>= num_tiles: none), and the one after tile `t` for a
/// grid of `clusters` clusters: a persistent cluster strides by them, a per-tile one runs one.
ATTNSIM_HD long long first_tile(const TileSpace&, long long cluster) { return cluster; }
ATTNSIM_HD long long next_tile(const TileSpace& s, long long t, long long clusters) {
  return s.persistent ? t + clusters : s.num_tiles();
}

}  // namespace attnsim::sm100
