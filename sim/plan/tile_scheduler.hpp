// Tile schedulers shared by the schedule families: how a problem's (batch, head, m-block)
// tiles are placed on CTAs. Static persistent: grid = min(clusters, tiles), cluster c takes
// tiles c, c + grid, ... (m-block fastest, then head, then batch). LPT single-tile: one CTA
// per tile, longest first (FA4's causal scheduler). Dynamic LPT: grid = min(clusters, tiles),
// the tiles in the LPT order, each taken by the CTA that asks first (FA3's dynamic persistent
// scheduler; the driver decides who asks first). Causal masks are bottom-right aligned.
#pragma once
#include "model/hardware.hpp"
#include "model/problem.hpp"
#include "common/launch_abi.h"  // TileScheduler, shared with the kernels
#include "plan/grid_plan.hpp"

namespace attnsim {

/// What a family tells the scheduler about its tiles.
struct TilingSpec {
  int rows_per_cta = 128;       ///< query rows one CTA processes per tile (all its Q stages / warpgroups)
  int n_block = 128;            ///< KV rows per block
  int cta_group = 1;            ///< CTAs per cluster working on one tile
  TileScheduler scheduler = TileScheduler::StaticPersistent;  ///< how CTAs take tiles
  int ctas_per_sm = 1;          ///< CTAs resident at once on one SM (non-persistent kernels)
  bool tiles_per_head = false;  ///< one CTA per (batch, head) that walks every m-block (FA2 style)
  long long l2_section = 0;     ///< longest-first orders: (batch, head) pairs per L2 section (0: one)
};

/// Places the problem's tiles; more than `max_tiles` are only counted (GridPlan::over_budget).
/// Throws nothing for valid problems.
GridPlan plan_tiles(const Hardware& hw, const Problem& p, const TilingSpec& spec, long long max_tiles);

/// The tile of m-block `m`: KV blocks it visits and how many of them need masking.
TileWork tile_at(const Problem& p, const TilingSpec& spec, int m);

}  // namespace attnsim
