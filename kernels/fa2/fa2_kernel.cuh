// The FA2-style forward kernel of the fa2_sm80 family (CuFlash-Attn's structure, structure.h):
// one CTA of 4 warps per (batch, head) walks every Q tile; per KV tile warps 0-1 copy K and V
// into SMEM with 16-byte vector loads, everyone meets at __syncthreads, each warp computes its
// Br/4 rows on the CUDA cores (S = Q K^T into the SMEM S tile, online softmax in the exp2
// domain, O += P V with O in registers), and everyone meets again before the tile is
// overwritten. Mirrors sim/lower/fa2/fa2_schedule.cpp op for op. bf16 in and out, fp32
// accumulation; any seqlen (tails masked), GQA/MQA, causal aligned bottom-right.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "common/tile_order.h"
#include "fa2/structure.h"

namespace attnsim::fa2 {

/// Compile-time shape of one kernel: head_dim, Br, Bc (KernelKnobs as template parameters).
template <int kHeadDim_, int kBr_, int kBc_>
struct Fa2Traits {
  static constexpr int kHeadDim = kHeadDim_, kBr = kBr_, kBc = kBc_;
  static constexpr int kRows = rows_per_warp(kBr);               // rows per warp
  static constexpr int kScoresPerLane = kRows * kBc / 32;        // S elements each lane computes
  static constexpr int kOutPerLane = kHeadDim / 32;              // O columns each lane owns, per row
  static constexpr SmemLayout kSmem = smem_layout(kBr, kBc, kHeadDim, kHeadDim, 2);
  static_assert(kRows == 16, "Br = 64: the softmax gives two lanes to each of a warp's 16 rows");
  static_assert(kHeadDim % 32 == 0 && kHeadDim <= 128, "head_dim: 32, 64, 96 or 128");
  static_assert((kRows * kBc) % 32 == 0 && kBc % 2 == 0, "Bc: even, and a warp's S tile a multiple of 32");
};

/// Run-time parameters. Layouts: Q, O (batch, seqlen_q, heads, head_dim); K, V (batch, seqlen_k,
/// kv_heads, head_dim), bf16, head_dim contiguous; LSE (batch, heads, seqlen_q) fp32, natural log.
struct Fa2Params {
  const __nv_bfloat16 *q, *k, *v;
  __nv_bfloat16* o;
  float* lse;
  int heads, group;  // group = heads / kv_heads
  int seqlen_q, seqlen_k;
  int causal;        // bottom-right aligned: query row r sees keys <= r + seqlen_k - seqlen_q
  float scale_log2;  // softmax scale x log2(e): scores are kept in the exp2 domain
  int m_tiles;
};

/// Copies `rows` rows of head_dim bf16 (global row stride `stride` elements) into SMEM [rows][D]
/// with 16-byte loads, `threads` threads from `t`; rows at or past `valid` are zero-filled (their
/// scores are masked, and a zero V row keeps P V finite).
template <int D>
__device__ __forceinline__ void copy_rows(__nv_bfloat16* dst, const __nv_bfloat16* src, long long stride, int rows,
                                          int valid, int t, int threads) {
  constexpr int kVecPerRow = D / 8;
  for (int i = t; i < rows * kVecPerRow; i += threads) {
    const int r = i / kVecPerRow, c = (i % kVecPerRow) * 8;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (r < valid) x = *reinterpret_cast<const uint4*>(src + r * stride + c);
    *reinterpret_cast<uint4*>(dst + r * D + c) = x;
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) fa2_forward(const Fa2Params p) {
  constexpr int D = T::kHeadDim, BR = T::kBr, BC = T::kBc, R = T::kRows;
  extern __shared__ __align__(16) uint8_t smem[];
  __nv_bfloat16* sq = reinterpret_cast<__nv_bfloat16*>(smem + T::kSmem.q);
  __nv_bfloat16* sk = reinterpret_cast<__nv_bfloat16*>(smem + T::kSmem.k);
  __nv_bfloat16* sv = reinterpret_cast<__nv_bfloat16*>(smem + T::kSmem.v);
  float* ss = reinterpret_cast<float*>(smem + T::kSmem.s);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int head = blockIdx.x % p.heads, batch = blockIdx.x / p.heads, kv_head = head / p.group;
  const int kv_heads = p.heads / p.group;
  const long long q_stride = static_cast<long long>(p.heads) * D, kv_stride = static_cast<long long>(kv_heads) * D;
  const __nv_bfloat16* qg = p.q + (static_cast<long long>(batch) * p.seqlen_q * p.heads + head) * D;
  const __nv_bfloat16* kg = p.k + (static_cast<long long>(batch) * p.seqlen_k * kv_heads + kv_head) * D;
  const __nv_bfloat16* vg = p.v + (static_cast<long long>(batch) * p.seqlen_k * kv_heads + kv_head) * D;
  __nv_bfloat16* og = p.o + (static_cast<long long>(batch) * p.seqlen_q * p.heads + head) * D;
  float* lseg = p.lse + (static_cast<long long>(batch) * p.heads + head) * p.seqlen_q;
  float* sw = ss + warp * R * BC;  // this warp's rows of S / P
  // Softmax: lanes 2r and 2r+1 own row r of the warp, half of its columns each.
  const int my_row = lane / 2, half = lane % 2;

  for (int m = 0; m < p.m_tiles; ++m) {
    const int row0 = m * BR, warp_row0 = row0 + warp * R;
    // Each warp loads its own Q rows (only it reads them).
    copy_rows<D>(sq + warp * R * D, qg + warp_row0 * q_stride, q_stride, R, p.seqlen_q - warp_row0, lane, 32);
    float o[R][T::kOutPerLane];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int c = 0; c < T::kOutPerLane; ++c) o[r][c] = 0.f;
    float row_max = -INFINITY, row_sum = 0.f;  // of row my_row (both lanes of the pair hold it)
    const int n = attnsim_kv_blocks(row0, BR, BC, p.seqlen_q, p.seqlen_k, p.causal);
    const int last_key_of_row = warp_row0 + my_row + p.seqlen_k - p.seqlen_q;  // causal limit
    for (int j = 0; j < n; ++j) {
      const int key0 = j * BC;
      if (warp < kLoadWarps) {  // warps 0-1 bring K and V, half of each tile each
        const int t = threadIdx.x, threads = 32 * kLoadWarps;
        copy_rows<D>(sk, kg + key0 * kv_stride, kv_stride, BC, p.seqlen_k - key0, t, threads);
        copy_rows<D>(sv, vg + key0 * kv_stride, kv_stride, BC, p.seqlen_k - key0, t, threads);
      }
      __syncthreads();
      // S = Q K^T for this warp's rows, scaled into the exp2 domain.
#pragma unroll 4
      for (int i = 0; i < T::kScoresPerLane; ++i) {
        const int e = lane + 32 * i, r = e / BC, c = e % BC;
        const __nv_bfloat16* qr = sq + (warp * R + r) * D;
        const __nv_bfloat16* kc = sk + c * D;
        float acc = 0.f;
        // Each lane starts its dot product at a different column, so that the 32 lanes (32
        // different K rows, D * 2 bytes apart) hit 32 different SMEM banks.
#pragma unroll 8
        for (int dd = 0; dd < D; dd += 2) {
          const int d = (dd + 2 * lane) % D;
          const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(qr + d));
          const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(kc + d));
          acc = fmaf(a.x, b.x, acc);
          acc = fmaf(a.y, b.y, acc);
        }
        sw[r * BC + c] = acc * p.scale_log2;
      }
      __syncwarp();
      // Online softmax of row my_row: mask, row max, P = exp2(S - max), row sum, rescale factor.
      float* srow = sw + my_row * BC;
      float local_max = -INFINITY;
      // Columns walked from a per-row offset: the 16 row pairs of the warp read different banks.
      for (int cc = 0; cc < BC / 2; ++cc) {
        const int c = half * (BC / 2) + (cc + my_row) % (BC / 2);
        const int key = key0 + c;
        const bool masked = key >= p.seqlen_k || (p.causal && key > last_key_of_row);
        if (masked) srow[c] = -INFINITY;
        local_max = fmaxf(local_max, srow[c]);
      }
      const float new_max = fmaxf(row_max, fmaxf(local_max, __shfl_xor_sync(0xffffffffu, local_max, 1)));
      const float base = new_max == -INFINITY ? 0.f : new_max;  // a row that has seen no key yet
      const float alpha = exp2f(row_max - base);                // 0 on the first block (-inf - base)
      float local_sum = 0.f;
      for (int cc = 0; cc < BC / 2; ++cc) {
        const int c = half * (BC / 2) + (cc + my_row) % (BC / 2);
        const float pv = exp2f(srow[c] - base);
        srow[c] = pv;
        local_sum += pv;
      }
      row_sum = row_sum * alpha + local_sum + __shfl_xor_sync(0xffffffffu, local_sum, 1);
      row_max = new_max;
      __syncwarp();
      // O = O * alpha + P V: lane owns columns lane, lane + 32, ... of every row.
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float a = __shfl_sync(0xffffffffu, alpha, 2 * r);
        const float* prow = sw + r * BC;
#pragma unroll
        for (int c = 0; c < T::kOutPerLane; ++c) o[r][c] *= a;
        for (int k = 0; k < BC; ++k) {
          const float pk = prow[k];
#pragma unroll
          for (int c = 0; c < T::kOutPerLane; ++c)
            o[r][c] = fmaf(pk, __bfloat162float(sv[k * D + lane + 32 * c]), o[r][c]);
        }
      }
      __syncthreads();  // the K/V tiles may be overwritten
    }
    // O / row_sum to bf16; LSE (natural log). A row that saw no key: O = 0, LSE = -inf.
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float l = __shfl_sync(0xffffffffu, row_sum, 2 * r);
      const int row = warp_row0 + r;
      if (row >= p.seqlen_q) continue;
      const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
      for (int c = 0; c < T::kOutPerLane; ++c)
        og[row * q_stride + lane + 32 * c] = __float2bfloat16(o[r][c] * inv);
    }
    if (half == 0 && warp_row0 + my_row < p.seqlen_q)
      lseg[warp_row0 + my_row] = row_sum > 0.f ? (row_max + log2f(row_sum)) * 0.6931471805599453f : -INFINITY;
  }
}

}  // namespace attnsim::fa2
