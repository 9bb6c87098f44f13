// attnsim_sm100_portable_gpu: the parts of the SM100 kernel that are not Blackwell-specific, run on
// whatever GPU is at hand (built for sm_90a and sm_100a, so an H100/H200 runs them):
// - the conditional rescale (kernels/sm100/online_softmax.h, the code the kernel's softmax and
//   correction roles run): one thread per row walks KV blocks in the kernel's order with FA4's
//   threshold (8, log2 units) and with an always-rescaling reference (threshold 0); both must
//   give O = softmax(S) V of a double-precision reference, and the conditional one must rescale
//   less often;
// - the tile scheduler (kernels/sm100/tile_scheduler.h): every CTA of the kernel's grid walks its
//   tiles on the device; the walk must equal the simulator's grid plan (sim/plan) for the GPU's
//   SM count, tile by tile (m-block, KV blocks, masked blocks).
// The exp2 emulation has its own test (softmax_math_gpu.cu). Exits 0 when all agree, 1 otherwise,
// 77 (ctest: skipped) without a GPU of compute capability 9.0 or 10.0.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "model/hardware.hpp"
#include "model/problem.hpp"
#include "plan/tile_scheduler.hpp"
#include "sm100/online_softmax.h"
#include "sm100/tile_scheduler.h"

namespace {

using attnsim::sm100::RowStats;

constexpr int kKeys = 2048, kBlock = 128;

/// One thread per row: the softmax of the kernel (blocks n-1 .. 0, P against the kept max, exp2
/// split 16/4/1 between MUFU and the polynomial, P rounded to bf16 for the PV product, fp32 sum),
/// O = P . v with v[key] given; out[row] = O / row_sum, rescales[row] = rescales taken.
__global__ void online_softmax_rows(const float* s2, const float* v, int rows, bool conditional, float threshold,
                                    float* out, int* rescales) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  RowStats st;
  float o = 0.0f;
  int n = 0;
  for (int j = kKeys / kBlock - 1; j >= 0; --j) {
    const float* row = s2 + static_cast<size_t>(r) * kKeys + j * kBlock;
    float mx = -INFINITY;
    for (int e = 0; e < kBlock; ++e) mx = fmaxf(mx, row[e]);
    const float acc = attnsim::sm100::update_row_max(st, mx, conditional, threshold);
    n += acc != 1.0f;
    o *= acc;
    float sum = 0.0f;
    const float off = attnsim::sm100::exp2_offset(st);
    for (int e = 0; e < kBlock; ++e) {
      const float p = attnsim::sm100::exp2_either(row[e] - off, attnsim::sm100::element_emulated(e, 4, 16, 4, 1));
      sum += p;
      o += attnsim::round_to_bf16(p) * v[j * kBlock + e];
    }
    st.sum = st.sum * acc + sum;
  }
  out[r] = o * attnsim::sm100::final_scale(st);
  rescales[r] = n;
}

/// Thread 0 of block c walks the tiles of cluster c: out[c][k] = {m, head, batch, n_blocks,
/// first_masked}, at most `cap` of them; count[c] = tiles walked.
__global__ void walk_tiles(attnsim::sm100::TileSpace ts, long long clusters, int cap, int* out, int* count) {
  if (threadIdx.x != 0) return;
  int k = 0;
  for (long long t = attnsim::sm100::first_tile(ts, blockIdx.x); t < ts.num_tiles();
       t = attnsim::sm100::next_tile(ts, t, clusters), ++k) {
    if (k >= cap) continue;
    const attnsim::sm100::TileCoord c = attnsim::sm100::tile_at(ts, t);
    int* w = out + (static_cast<size_t>(blockIdx.x) * cap + k) * 5;
    w[0] = c.m, w[1] = c.head, w[2] = c.batch, w[3] = c.n_blocks, w[4] = c.first_masked;
  }
  count[blockIdx.x] = k;
}

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("FAIL: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

/// The conditional-rescale check; returns failures.
int test_rescale() {
  const int rows = 4096;
  std::mt19937 rng(2026);
  std::normal_distribution<float> n01(0.f, 1.f);
  std::vector<float> s2(static_cast<size_t>(rows) * kKeys), v(kKeys);
  for (int k = 0; k < kKeys; ++k) v[k] = std::cos(static_cast<float>(k));
  // Scores in log2 units with a trend against the walk (blocks are visited from the last), so
  // that the max grows now and then; every fourth row jumps by 20 in the last-visited block.
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < kKeys; ++k)
      s2[static_cast<size_t>(r) * kKeys + k] = 2.5f * n01(rng) - 0.004f * k + (r % 4 == 0 && k < kBlock ? 20.0f : 0.0f);
  float *d_s2 = nullptr, *d_v = nullptr, *d_out = nullptr;
  int* d_n = nullptr;
  if (!check(cudaMalloc(&d_s2, s2.size() * 4), "cudaMalloc") || !check(cudaMalloc(&d_v, v.size() * 4), "cudaMalloc") ||
      !check(cudaMalloc(&d_out, 2 * rows * 4), "cudaMalloc") || !check(cudaMalloc(&d_n, 2 * rows * 4), "cudaMalloc"))
    return 1;
  cudaMemcpy(d_s2, s2.data(), s2.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(d_v, v.data(), v.size() * 4, cudaMemcpyHostToDevice);
  online_softmax_rows<<<rows / 128, 128>>>(d_s2, d_v, rows, true, 8.0f, d_out, d_n);
  online_softmax_rows<<<rows / 128, 128>>>(d_s2, d_v, rows, false, 0.0f, d_out + rows, d_n + rows);
  std::vector<float> out(2 * rows);
  std::vector<int> n(2 * rows);
  if (!check(cudaMemcpy(out.data(), d_out, out.size() * 4, cudaMemcpyDeviceToHost), "online_softmax_rows")) return 1;
  cudaMemcpy(n.data(), d_n, n.size() * 4, cudaMemcpyDeviceToHost);
  cudaFree(d_s2), cudaFree(d_v), cudaFree(d_out), cudaFree(d_n);
  double worst_cond = 0, worst_always = 0, worst_pair = 0;
  long long resc_cond = 0, resc_always = 0, jump_rows_rescaled = 0;
  for (int r = 0; r < rows; ++r) {
    const float* row = s2.data() + static_cast<size_t>(r) * kKeys;
    const double m = *std::max_element(row, row + kKeys);
    double num = 0, den = 0;
    for (int k = 0; k < kKeys; ++k) {
      const double p = std::exp2(row[k] - m);
      num += p * v[k];
      den += p;
    }
    const double ref = num / den;
    worst_cond = std::max(worst_cond, std::abs(out[r] - ref));
    worst_always = std::max(worst_always, std::abs(out[rows + r] - ref));
    worst_pair = std::max(worst_pair, static_cast<double>(std::abs(out[r] - out[rows + r])));
    resc_cond += n[r];
    resc_always += n[rows + r];
    if (r % 4 == 0 && n[r] > 0) ++jump_rows_rescaled;
  }
  const bool ok = worst_cond < 5e-3 && worst_always < 5e-3 && resc_cond < resc_always && jump_rows_rescaled == rows / 4;
  std::printf("%s conditional rescale: %d rows x %d keys; |O - ref| max %.2e (threshold 8), %.2e (always), "
              "between them %.2e; rescales %lld (threshold 8) vs %lld (always); %lld of %d jump rows rescaled\n",
              ok ? "ok  " : "FAIL", rows, kKeys, worst_cond, worst_always, worst_pair, resc_cond, resc_always,
              jump_rows_rescaled, rows / 4);
  return ok ? 0 : 1;
}

/// The tile-scheduler check for one problem; returns failures.
int test_tiles(int sms, int batch, int heads, int sq, int sk, bool causal, int q_stage, int cta_group) {
  const attnsim::sm100::TileSpace ts{batch, heads, sq, sk, q_stage * cta_group * 128, 128, causal, !causal, cta_group};
  const long long grid = ts.clusters(sms);  // one walker per cluster
  const int cap = static_cast<int>((ts.num_tiles() + grid - 1) / grid);
  int *d_out = nullptr, *d_count = nullptr;
  if (!check(cudaMalloc(&d_out, grid * cap * 5 * 4), "cudaMalloc") || !check(cudaMalloc(&d_count, grid * 4), "cudaMalloc"))
    return 1;
  walk_tiles<<<static_cast<unsigned>(grid), 32>>>(ts, grid, cap, d_out, d_count);
  std::vector<int> out(grid * cap * 5), count(grid);
  if (!check(cudaMemcpy(out.data(), d_out, out.size() * 4, cudaMemcpyDeviceToHost), "walk_tiles")) return 1;
  cudaMemcpy(count.data(), d_count, count.size() * 4, cudaMemcpyDeviceToHost);
  cudaFree(d_out), cudaFree(d_count);
  // The simulator's plan of the same problem on a GPU of `sms` SMs.
  attnsim::Hardware hw;
  hw.num_sms = sms;
  attnsim::Problem p;
  p.batch = batch, p.heads = p.kv_heads = heads, p.seqlen_q = sq, p.seqlen_k = sk, p.causal = causal;
  attnsim::TilingSpec spec;
  spec.rows_per_cta = q_stage * 128;
  spec.n_block = 128;
  spec.cta_group = cta_group;
  spec.scheduler = causal ? attnsim::TileScheduler::Lpt : attnsim::TileScheduler::StaticPersistent;
  const attnsim::GridPlan plan = attnsim::plan_tiles(hw, p, spec, 1 << 22);
  std::string why;
  if (static_cast<long long>(plan.cta_tiles.size()) != grid) why = "cluster count differs";
  for (long long c = 0; why.empty() && c < grid; ++c) {
    if (count[c] != static_cast<int>(plan.cta_tiles[c].size()))
      why = "tiles per cluster differ at cluster " + std::to_string(c);
    for (int k = 0; why.empty() && k < count[c]; ++k) {
      const int* w = &out[(c * cap + k) * 5];
      const attnsim::TileWork& t = plan.cta_tiles[c][k];
      if (w[0] != t.m_block || w[3] != t.n_blocks || w[3] - w[4] != t.masked_blocks)
        why = "cluster " + std::to_string(c) + " tile " + std::to_string(k) + ": device m " + std::to_string(w[0]) +
              " n_blocks " + std::to_string(w[3]) + ", plan m " + std::to_string(t.m_block) + " n_blocks " +
              std::to_string(t.n_blocks);
    }
  }
  std::printf("%s tile scheduler b%d h%d sq%d sk%d %s q_stage %d cta_group %d: %lld clusters, %lld tiles%s%s\n",
              why.empty() ? "ok  " : "FAIL", batch, heads, sq, sk,
              causal ? "causal (one tile per cluster, longest first)" : "non-causal (persistent)", q_stage, cta_group,
              grid, ts.num_tiles(), why.empty() ? "" : ": ", why.c_str());
  return why.empty() ? 0 : 1;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA GPU on this machine\n");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  if (!((prop.major == 9 || prop.major == 10) && prop.minor == 0)) {
    std::printf("SKIPPED: %s is sm_%d%d; this test is built for sm_90a and sm_100a\n", prop.name, prop.major,
                prop.minor);
    return 77;
  }
  std::printf("GPU %s (%d SMs)\n", prop.name, prop.multiProcessorCount);
  int failures = test_rescale();
  const int sms = prop.multiProcessorCount;
  for (int cta_group : {1, 2})
    for (bool causal : {false, true})
      for (int q_stage : {1, 2}) {
        failures += test_tiles(sms, 2, 16, 8192, 8192, causal, q_stage, cta_group);
        failures += test_tiles(sms, 3, 5, 1000, 777, causal, q_stage, cta_group);
        failures += test_tiles(sms, 1, 1, 77, 4000, causal, q_stage, cta_group);
      }
  std::printf("%s\n", failures ? "FAIL" : "all passed");
  return failures ? 1 : 0;
}
