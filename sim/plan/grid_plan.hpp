// What a tile scheduler decides: the work tiles of a problem and how CTAs cover them. Produced by
// each schedule family's plan_grid (through plan/tile_scheduler), consumed by the lowering (one
// CTA's tiles) and by the driver (which CTAs to simulate).
#pragma once
#include <vector>

namespace attnsim {

/// One work tile of a CTA: a block of query rows of one (batch, head) and its KV range.
struct TileWork {
  int m_block = 0;        ///< index of the CTA tile along seqlen_q
  int rows = 0;           ///< valid query rows per Q stage (tails are masked)
  int n_blocks = 0;       ///< KV blocks processed
  int masked_blocks = 0;  ///< of those, blocks that need causal / seqlen masking
  bool operator==(const TileWork&) const = default;
};

/// How CTAs cover the problem.
struct GridPlan {
  /// Single: one CTA. StaticPersistent: CTAs loop over tiles. LptSingleTile: one CTA per tile,
  /// longest first. DynamicLpt: resident CTAs loop over the tiles in LPT order, each taking the
  /// next when next_tile_lead_blocks of its current one are left. PerHead: one CTA per (batch,
  /// head) walking its Q tiles (FA2 style).
  enum class Mode { Single, StaticPersistent, LptSingleTile, DynamicLpt, PerHead } mode = Mode::Single;
  int cta_group = 1;      ///< CTAs per cluster (2 for 2-CTA MMA)
  int resident_ctas = 1;  ///< CTAs running at once on the whole GPU
  int ctas_per_sm = 1;    ///< CTAs sharing one SM at once (simulated together, alike)
  /// CTAs of the first wave per distinct (batch, KV head): how many CTAs stream each K/V tile at
  /// about the same time, which sets how much of their TMA traffic L2 serves (engine).
  double kv_sharing = 1;
  /// DynamicLpt: KV blocks of its current tile a CTA has left to compute, at most, when it takes
  /// the next (TilingSpec::next_tile_lead_blocks).
  int next_tile_lead_blocks = 0;
  /// Tiles of the whole problem. When they are more than the planner was allowed (max_tiles),
  /// the plan holds only this count: cta_tiles stays empty and `over_budget` is set.
  long long tiles = 1;
  bool over_budget = false;
  /// StaticPersistent: the tile list of each resident CTA (cluster leader), in order.
  /// LptSingleTile and DynamicLpt: every tile as a list of one, in launch order (longest first).
  /// PerHead: each CTA's tile walk,
  /// in launch order. Single: one entry.
  std::vector<std::vector<TileWork>> cta_tiles;
};

}  // namespace attnsim
