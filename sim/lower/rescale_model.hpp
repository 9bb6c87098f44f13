// Which (warp, KV iteration) steps of the online softmax need an O rescale under
// FA4's conditional rescale: a warp rescales only when some row's running max grew
// by more than `threshold_log2` (in log2 units, after the softmax scale). Whether
// that happens depends on the data, so it is computed from scores: by default those
// of random N(0,1) Q and K at the problem's head_dim and seqlen_k (what standard
// benchmarks feed), or spread evenly from a user-given rate.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "plan/grid_plan.hpp"  // TileWork

namespace attnsim {

/// Rescale decisions for the warps of one Q tile over its KV iterations (in processing order).
struct RescaleMask {
  int warps = 0;              ///< row warps (a 128-row tile has 4)
  int iterations = 0;         ///< KV blocks, in the order the kernel visits them
  std::vector<uint8_t> need;  ///< [iteration * warps + warp]: 1 = this warp rescales O at this iteration
  /// Iterations past the computed range reuse the last computed one's pattern cyclically.
  bool at(int warp, int iteration) const;
  double rate() const;  ///< fraction of (warp, iteration >= 1) steps that rescale
};

/// From the scores of random N(0,1) Q (rows x head_dim) and K (seqlen_k x head_dim), softmax
/// scale 1/sqrt(head_dim), KV blocks of `n_block` visited in descending order (FA4's order).
/// Deterministic (fixed seed). Rows = rows_per_warp * warps (FA4's softmax warps own 32 rows, one
/// per thread; an SM90 consumer warp 16, its quarter of a wgmma m64 fragment). Results are cached
/// per argument set.
RescaleMask rescale_from_random_scores(int head_dim, int seqlen_k, int n_block, int warps, double threshold_log2,
                                       int rows_per_warp = 32);

/// The mask of a CTA that runs `tiles` (its iterations: the longest tile's KV blocks of `n_block`
/// keys) under a conditional rescale: `rate` (--rescale-rate) spread evenly when given, else from
/// random N(0,1) scores over min(seqlen_k, that tile's keys). The FA4 and SM90 lowerings share it.
RescaleMask conditional_rescale_mask(std::optional<double> rate, const std::vector<TileWork>& tiles, int head_dim,
                                     int seqlen_k, int n_block, int warps, double threshold_log2,
                                     int rows_per_warp = 32);

/// Forgets cached masks and the drawn scores (benchmarks use it to time the cold path, as one CLI
/// run sees it).
void clear_rescale_cache();

/// `rate` of the steps (iteration >= 1) rescale, spread evenly (deterministic).
RescaleMask rescale_from_rate(double rate, int warps, int iterations);

/// Every step after the first rescales (what an unconditional online softmax does).
RescaleMask rescale_always(int warps, int iterations);

}  // namespace attnsim
