// The SM100 kernel's tile scheduler, portable: which work tiles a CTA runs, in which order, and
// the KV blocks each visits. A work tile is q_stage x 128 query rows of one (batch, head). FA4's
// schedulers (flash_attn/cute/tile_scheduler.py, fa4-v4.0.0.beta27): static persistent for
// non-causal problems (grid = min(SMs, tiles), m-block fastest, then head, then batch; CTA c
// takes tiles c, c + grid, ...), one CTA per tile longest-first for causal ones. The order is
// the simulator's (kernels/common/tile_order.h, sim/plan/tile_scheduler.cpp), so a predicted
// and a measured run walk the same tiles; FA4's L2 head-swizzle of the causal order is not
// modelled by either. Used by the kernel (kernels/sm100) and the GPU test
// (tests/gpu/sm100_portable_gpu.cu). Plain C++; callable from device code when compiled by nvcc.
#pragma once

#include "common/tile_order.h"

namespace attnsim::sm100 {

/// The problem as the scheduler sees it. rows_per_cta = q_stage x 128.
struct TileSpace {
  int batch = 1, heads = 1, seqlen_q = 1, seqlen_k = 1;
  int rows_per_cta = 256, n_block = 128;
  bool causal = false, persistent = true;

  /// CTA tiles along seqlen_q.
  ATTNSIM_HD int m_tiles() const { return (seqlen_q + rows_per_cta - 1) / rows_per_cta; }
  /// Work tiles of the whole problem.
  ATTNSIM_HD long long num_tiles() const { return static_cast<long long>(m_tiles()) * batch * heads; }
  /// CTAs to launch on a GPU of `sm_count` SMs: persistent, one per SM (at most one per tile);
  /// otherwise one per tile.
  ATTNSIM_HD long long grid(int sm_count) const {
    return persistent ? (num_tiles() < sm_count ? num_tiles() : sm_count) : num_tiles();
  }
};

/// One work tile: its m-block (of rows_per_cta rows), head, batch, the KV blocks [0, n_blocks)
/// its rows see and the first of them that needs a mask (causal diagonal or seqlen_k tail).
struct TileCoord {
  int m = 0, head = 0, batch = 0, n_blocks = 0, first_masked = 0;
};

/// Tile `t` of the launch order.
ATTNSIM_HD TileCoord tile_at(const TileSpace& s, long long t) {
  TileCoord c;
  long long bh = 0;
  attnsim_tile_coords(t, s.persistent, s.m_tiles(), static_cast<long long>(s.batch) * s.heads, &c.m, &bh);
  c.head = static_cast<int>(bh % s.heads);
  c.batch = static_cast<int>(bh / s.heads);
  const int row0 = c.m * s.rows_per_cta;
  c.n_blocks = attnsim_kv_blocks(row0, s.rows_per_cta, s.n_block, s.seqlen_q, s.seqlen_k, s.causal);
  c.first_masked = attnsim_first_masked_block(row0, s.n_block, c.n_blocks, s.seqlen_q, s.seqlen_k, s.causal);
  return c;
}

/// The first tile of CTA `cta` (>= num_tiles: none), and the one after tile `t` for a grid of
/// `grid` CTAs: a persistent CTA strides by the grid, a per-tile CTA runs one.
ATTNSIM_HD long long first_tile(const TileSpace&, long long cta) { return cta; }
ATTNSIM_HD long long next_tile(const TileSpace& s, long long t, long long grid) {
  return s.persistent ? t + grid : s.num_tiles();
}

}  // namespace attnsim::sm100
