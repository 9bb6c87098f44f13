#include "reference.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/cuda_check.cuh"

namespace attnsim::sm90 {

namespace {

constexpr double kAtol = 0.02, kRtol = 0.02;  // bf16 O (8 mantissa bits) and bf16 P in the PV product
constexpr double kLseTol = 1e-3;
constexpr double kCpuLimit = 1 << 28;  // b*h*sq*sk*d above this: GPU reference on sampled rows

float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// One reference row: scores, softmax and O in fp32, one block of 128 threads per (row, batch*head).
__global__ void reference_rows(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const int* rows,
                               Shape s, float scale, float* scratch, float* o_ref, float* lse_ref) {
  __shared__ float qs[256];
  __shared__ float red[128];
  const int bh = blockIdx.y, b = bh / s.heads, h = bh % s.heads, hk = h / (s.heads / s.kv_heads);
  const int r = rows[blockIdx.x], d = s.head_dim;
  const size_t out = static_cast<size_t>(bh) * gridDim.x + blockIdx.x;
  float* sc = scratch + out * s.seqlen_k;
  for (int i = threadIdx.x; i < d; i += blockDim.x)
    qs[i] = __bfloat162float(q[((static_cast<size_t>(b) * s.seqlen_q + r) * s.heads + h) * d + i]);
  __syncthreads();
  const int kmax = s.causal ? min(s.seqlen_k, r + s.seqlen_k - s.seqlen_q + 1) : s.seqlen_k;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < kmax; j += blockDim.x) {
    const __nv_bfloat16* kr = k + ((static_cast<size_t>(b) * s.seqlen_k + j) * s.kv_heads + hk) * d;
    float acc = 0.f;
    for (int i = 0; i < d; ++i) acc += qs[i] * __bfloat162float(kr[i]);
    sc[j] = acc * scale;
    m = fmaxf(m, acc * scale);
  }
  red[threadIdx.x] = m;
  __syncthreads();
  for (int w = 64; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + w]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float l = 0.f;
  for (int j = threadIdx.x; j < kmax; j += blockDim.x) {
    sc[j] = expf(sc[j] - m);
    l += sc[j];
  }
  red[threadIdx.x] = l;
  __syncthreads();
  for (int w = 64; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  l = red[0];
  for (int i = threadIdx.x; i < d; i += blockDim.x) {
    float acc = 0.f;
    for (int j = 0; j < kmax; ++j)
      acc += sc[j] * __bfloat162float(v[((static_cast<size_t>(b) * s.seqlen_k + j) * s.kv_heads + hk) * d + i]);
    o_ref[out * d + i] = l > 0.f ? acc / l : 0.f;
  }
  if (threadIdx.x == 0) lse_ref[out] = l > 0.f ? m + logf(l) : -INFINITY;
}

/// Accumulates the comparison of one row.
struct Comparer {
  CheckResult res;
  void row(const float* o, const double* ref, float lse, double lse_ref, int d, const char* where) {
    ++res.rows_checked;
    double err2 = 0, ref2 = 0;
    for (int i = 0; i < d; ++i) {
      const double e = std::fabs(o[i] - ref[i]);
      if (!(e <= kAtol + kRtol * std::fabs(ref[i])) && res.detail.empty()) {
        char b[200];
        std::snprintf(b, sizeof b, "%s column %d: O %.5f, reference %.5f", where, i, o[i], ref[i]);
        res.detail = b;
      }
      res.max_abs_err = std::max(res.max_abs_err, std::isnan(e) ? INFINITY : e);
      err2 += e * e;
      ref2 += ref[i] * ref[i];
    }
    if (ref2 > 0) res.max_rel_rms = std::max(res.max_rel_rms, std::sqrt(err2 / ref2));
    const bool both_inf = std::isinf(lse) && std::isinf(lse_ref) && lse < 0 && lse_ref < 0;
    const double le = both_inf ? 0.0 : std::fabs(lse - lse_ref);
    res.max_lse_err = std::max(res.max_lse_err, std::isnan(le) ? INFINITY : le);
    if (!(le <= kLseTol * std::max(1.0, std::fabs(lse_ref))) && res.detail.empty()) {
      char b[200];
      std::snprintf(b, sizeof b, "%s: LSE %.6f, reference %.6f", where, lse, lse_ref);
      res.detail = b;
    }
  }
};

CheckResult compare_cpu(DeviceProblem& prob) {
  const Shape& s = prob.shape();
  const auto q = prob.q_host(), k = prob.k_host(), v = prob.v_host(), o = prob.o_host();
  const auto lse = prob.lse_host();
  const int d = s.head_dim, group = s.heads / s.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  Comparer cmp;
  cmp.res.reference = "cpu";
  std::vector<double> sc(s.seqlen_k), ref(d);
  std::vector<float> orow(d);
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h)
      for (int r = 0; r < s.seqlen_q; ++r) {
        const int hk = h / group;
        const int kmax = s.causal ? std::min(s.seqlen_k, r + s.seqlen_k - s.seqlen_q + 1) : s.seqlen_k;
        double m = -INFINITY;
        const size_t qrow = ((static_cast<size_t>(b) * s.seqlen_q + r) * s.heads + h) * d;
        for (int j = 0; j < kmax; ++j) {
          const size_t krow = ((static_cast<size_t>(b) * s.seqlen_k + j) * s.kv_heads + hk) * d;
          double acc = 0;
          for (int i = 0; i < d; ++i) acc += static_cast<double>(bf16_to_float(q[qrow + i])) * bf16_to_float(k[krow + i]);
          sc[j] = acc * scale;
          m = std::max(m, sc[j]);
        }
        double l = 0;
        for (int j = 0; j < kmax; ++j) l += (sc[j] = std::exp(sc[j] - m));
        std::fill(ref.begin(), ref.end(), 0.0);
        for (int j = 0; j < kmax; ++j) {
          const size_t vrow = ((static_cast<size_t>(b) * s.seqlen_k + j) * s.kv_heads + hk) * d;
          for (int i = 0; i < d; ++i) ref[i] += sc[j] * bf16_to_float(v[vrow + i]);
        }
        for (int i = 0; i < d; ++i) {
          ref[i] = l > 0 ? ref[i] / l : 0.0;
          orow[i] = bf16_to_float(o[qrow + i]);
        }
        char where[96];
        std::snprintf(where, sizeof where, "batch %d head %d row %d", b, h, r);
        cmp.row(orow.data(), ref.data(), lse[(static_cast<size_t>(b) * s.heads + h) * s.seqlen_q + r],
                l > 0 ? m + std::log(l) : -INFINITY, d, where);
      }
  return cmp.res;
}

CheckResult compare_gpu(DeviceProblem& prob, int sample_rows) {
  const Shape& s = prob.shape();
  std::vector<int> rows;
  if (s.seqlen_q <= sample_rows) {
    for (int r = 0; r < s.seqlen_q; ++r) rows.push_back(r);
  } else {
    for (int i = 0; i < sample_rows - 2; ++i) rows.push_back(static_cast<int>(static_cast<long long>(i) * s.seqlen_q / (sample_rows - 2)));
    rows.push_back(s.seqlen_q - 2);  // the tail tile
    rows.push_back(s.seqlen_q - 1);
  }
  const int nr = static_cast<int>(rows.size()), bh = s.batch * s.heads, d = s.head_dim;
  int* rows_d = nullptr;
  float *scratch = nullptr, *o_ref = nullptr, *lse_ref = nullptr;
  cuda_check(cudaMalloc(&rows_d, nr * sizeof(int)), "cudaMalloc");
  cuda_check(cudaMalloc(&scratch, static_cast<size_t>(nr) * bh * s.seqlen_k * 4), "cudaMalloc reference scratch");
  cuda_check(cudaMalloc(&o_ref, static_cast<size_t>(nr) * bh * d * 4), "cudaMalloc");
  cuda_check(cudaMalloc(&lse_ref, static_cast<size_t>(nr) * bh * 4), "cudaMalloc");
  cuda_check(cudaMemcpy(rows_d, rows.data(), nr * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
  const Tensors t = prob.tensors();
  reference_rows<<<dim3(nr, bh), 128>>>(static_cast<const __nv_bfloat16*>(t.q), static_cast<const __nv_bfloat16*>(t.k),
                                        static_cast<const __nv_bfloat16*>(t.v), rows_d, s,
                                        1.0f / std::sqrt(static_cast<float>(d)), scratch, o_ref, lse_ref);
  cuda_check(cudaDeviceSynchronize(), "reference kernel");
  std::vector<float> oref(static_cast<size_t>(nr) * bh * d), lref(static_cast<size_t>(nr) * bh);
  cuda_check(cudaMemcpy(oref.data(), o_ref, oref.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cuda_check(cudaMemcpy(lref.data(), lse_ref, lref.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaFree(rows_d);
  cudaFree(scratch);
  cudaFree(o_ref);
  cudaFree(lse_ref);
  const auto o = prob.o_host();
  const auto lse = prob.lse_host();
  Comparer cmp;
  cmp.res.reference = "gpu";
  std::vector<double> ref(d);
  std::vector<float> orow(d);
  for (int x = 0; x < bh; ++x)
    for (int i = 0; i < nr; ++i) {
      const int b = x / s.heads, h = x % s.heads, r = rows[i];
      const size_t out = static_cast<size_t>(x) * nr + i;
      const size_t qrow = ((static_cast<size_t>(b) * s.seqlen_q + r) * s.heads + h) * d;
      for (int c = 0; c < d; ++c) {
        ref[c] = oref[out * d + c];
        orow[c] = bf16_to_float(o[qrow + c]);
      }
      char where[96];
      std::snprintf(where, sizeof where, "batch %d head %d row %d", b, h, r);
      cmp.row(orow.data(), ref.data(), lse[static_cast<size_t>(x) * s.seqlen_q + r], lref[out], d, where);
    }
  return cmp.res;
}

}  // namespace

CheckResult compare_with_reference(DeviceProblem& prob, int sample_rows) {
  const Shape& s = prob.shape();
  const double work = static_cast<double>(s.batch) * s.heads * s.seqlen_q * s.seqlen_k * s.head_dim;
  CheckResult r = work <= kCpuLimit ? compare_cpu(prob) : compare_gpu(prob, sample_rows);
  r.pass = r.detail.empty();
  return r;
}

}  // namespace attnsim::sm90
