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
  /// DynamicLpt: a CTA takes its next tile when at most this many KV blocks of its current one
  /// are left to compute (0: when it is done).
  int next_tile_lead_blocks = 0;
};

/// Places the problem's tiles; more than `max_tiles` are only counted (GridPlan::over_budget).
/// Throws nothing for valid problems.
GridPlan plan_tiles(const Hardware& hw, const Problem& p, const TilingSpec& spec, long long max_tiles);

/// The tile of m-block `m`: KV blocks it visits and how many of them need masking.
TileWork tile_at(const Problem& p, const TilingSpec& spec, int m);

/// The dynamic LPT scheduler's assignment (list scheduling): tiles are handed out in their order
/// (`cost[i]` cycles, `n_blocks[i]` KV blocks) to `ctas` CTAs that start at `start` cycles; a CTA
/// asks for its next tile when min(n, lead_blocks) of the n blocks of its current one are left
/// (that share of its cost; 0: when it is done) and starts it when the current one is done.
/// Asks at the same time go to the lower CTA index (the first `ctas` tiles to CTAs 0, 1, ...).
/// Returns each CTA's tile indices in order; `done_at` (optional): when each CTA is done, cycles.
/// Throws std::invalid_argument when cost and n_blocks differ in size or ctas is 0.
std::vector<std::vector<size_t>> assign_dynamic_tiles(const std::vector<double>& cost, const std::vector<int>& n_blocks,
                                                      size_t ctas, int lead_blocks, double start,
                                                      std::vector<double>* done_at = nullptr);

}  // namespace attnsim
