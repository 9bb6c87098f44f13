#include "lower/rescale_model.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <tuple>

#include "common/softmax_math.h"

namespace attnsim {

bool RescaleMask::at(int warp, int iteration) const {
  // A mask of one iteration (seqlen_k within one KV block) knows no later block; asked about one
  // (the probe tile of check() has two blocks), it says no rather than reading past its end.
  if (iteration <= 0 || iterations <= 1) return false;
  const int it = iteration < iterations ? iteration : 1 + (iteration - 1) % std::max(1, iterations - 1);
  return need[static_cast<size_t>(it) * warps + warp] != 0;
}

double RescaleMask::rate() const {
  if (iterations <= 1) return 0;
  double n = 0;
  for (int i = 1; i < iterations; ++i)
    for (int w = 0; w < warps; ++w) n += need[static_cast<size_t>(i) * warps + w];
  return n / ((iterations - 1.0) * warps);
}

namespace {
using Key = std::tuple<int, int, int, int, double, int>;
std::mutex mu;
std::map<Key, RescaleMask> cache;

/// The seeded stream of N(0,1) draws every score matrix is cut from: Q takes its first rows x
/// head_dim draws, K (column-major, as Eigen stores it) the next seqlen_k x head_dim, exactly what
/// a fresh generator per mask drew. Generated once and extended as longer K are asked for: a
/// causal grid's CTAs ask for dozens of key counts, each drawing up to seqlen_k x head_dim normals
/// anew (hd256 s8k b2 causal: about half of a 1.3 s prediction went to drawing them, perf).
struct NormalStream {
  std::mt19937_64 rng{0x5eed2026};
  std::normal_distribution<float> normal{0.f, 1.f};
  std::shared_ptr<const std::vector<float>> draws = std::make_shared<std::vector<float>>();
};
std::mutex stream_mu;
NormalStream stream;

/// At least `n` draws of the stream (an immutable snapshot; safe to read while others extend it).
std::shared_ptr<const std::vector<float>> normal_draws(size_t n) {
  std::lock_guard<std::mutex> lock(stream_mu);
  if (stream.draws->size() < n) {
    auto longer = std::make_shared<std::vector<float>>(*stream.draws);
    longer->reserve(n);
    while (longer->size() < n) longer->push_back(stream.normal(stream.rng));
    stream.draws = std::move(longer);
  }
  return stream.draws;
}
}  // namespace

void clear_rescale_cache() {
  {
    std::lock_guard<std::mutex> lock(mu);
    cache.clear();
  }
  std::lock_guard<std::mutex> lock(stream_mu);
  stream = NormalStream{};
}

RescaleMask rescale_from_random_scores(int head_dim, int seqlen_k, int n_block, int warps, double threshold_log2,
                                       int rows_per_warp) {
  const Key key{head_dim, seqlen_k, n_block, warps, threshold_log2, rows_per_warp};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  const int rows = rows_per_warp * warps;
  const size_t q_size = static_cast<size_t>(rows) * head_dim, k_size = static_cast<size_t>(seqlen_k) * head_dim;
  const std::shared_ptr<const std::vector<float>> draws = normal_draws(q_size + k_size);
  const Eigen::Map<const Eigen::MatrixXf> q(draws->data(), rows, head_dim),
      k(draws->data() + q_size, seqlen_k, head_dim);
  // Scores in log2 units: S * softmax_scale * log2(e), as the kernel's scale_log2 makes them.
  const float scale_log2 = static_cast<float>(1.0 / std::sqrt(head_dim) / std::log(2.0));
  const Eigen::MatrixXf s = (q * k.transpose()) * scale_log2;

  RescaleMask m;
  m.warps = warps;
  m.iterations = (seqlen_k + n_block - 1) / n_block;
  m.need.assign(static_cast<size_t>(m.iterations) * warps, 0);
  std::vector<float> row_max(static_cast<size_t>(rows), -INFINITY);
  for (int it = 0; it < m.iterations; ++it) {
    const int blk = m.iterations - 1 - it;  // descending KV order
    const int c0 = blk * n_block, cols = std::min(n_block, seqlen_k - c0);
    for (int w = 0; w < warps; ++w) {
      bool rescale = false;
      std::vector<float> blk_max(static_cast<size_t>(rows_per_warp));
      for (int r = 0; r < rows_per_warp; ++r) {
        const int row = w * rows_per_warp + r;
        blk_max[r] = s.row(row).segment(c0, cols).maxCoeff();
        // acc_scale_log2 = m_old - m_new; below -threshold the warp must rescale.
        if (it > 0 && needs_rescale(row_max[row], blk_max[r], static_cast<float>(threshold_log2))) rescale = true;
      }
      // The decision is per warp: either every row takes its new max, or every row keeps the old one.
      for (int r = 0; r < rows_per_warp; ++r) {
        const int row = w * rows_per_warp + r;
        if (it == 0 || rescale) row_max[row] = std::max(row_max[row], blk_max[r]);
      }
      m.need[static_cast<size_t>(it) * warps + w] = rescale ? 1 : 0;
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, m);
  return m;
}

RescaleMask conditional_rescale_mask(std::optional<double> rate, const std::vector<TileWork>& tiles, int head_dim,
                                     int seqlen_k, int n_block, int warps, double threshold_log2, int rows_per_warp) {
  int max_blocks = 1;
  for (const TileWork& t : tiles) max_blocks = std::max(max_blocks, t.n_blocks);
  if (rate) return rescale_from_rate(*rate, warps, max_blocks);
  return rescale_from_random_scores(head_dim, std::min(seqlen_k, max_blocks * n_block), n_block, warps,
                                    threshold_log2, rows_per_warp);
}

RescaleMask rescale_from_rate(double rate, int warps, int iterations) {
  RescaleMask m;
  m.warps = warps;
  m.iterations = iterations;
  m.need.assign(static_cast<size_t>(iterations) * warps, 0);
  long long step = 0;
  for (int it = 1; it < iterations; ++it)
    for (int w = 0; w < warps; ++w, ++step)
      m.need[static_cast<size_t>(it) * warps + w] =
          std::floor((step + 1) * rate + 1e-9) > std::floor(step * rate + 1e-9) ? 1 : 0;
  return m;
}

RescaleMask rescale_always(int warps, int iterations) { return rescale_from_rate(1.0, warps, iterations); }

}  // namespace attnsim
