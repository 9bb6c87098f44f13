// Online softmax on a consumer warp's wgmma accumulator fragment (S of its 16 rows x n_block).
// Fragment layout (PTX ISA, wgmma m64nNk16 D): thread `lane` of warp w holds rows
// r0 = 16w + lane/4 and r1 = r0 + 8; element i sits in column 8*(i/4) + 2*(lane%4) + (i%2), row
// r0 when (i/2)%2 == 0 else r1. A row is spread over the 4 threads of a quad.
#pragma once

#include <cmath>

#include "common/softmax_math.h"  // needs_rescale, exp2_emulated
#include "device.cuh"

namespace attnsim::sm90 {

/// Running row statistics of one thread's two rows: max of raw scores and partial sum of
/// exp2((s - max) * scale_log2) over this thread's columns (the quad sum is taken at the end).
struct RowStats {
  float max[2] = {-INFINITY, -INFINITY};
  float sum[2] = {0.f, 0.f};
};

/// Masks S of KV block j in place: keys past seqlen_k and, when causal, keys after the query's
/// diagonal (bottom-right aligned) become -inf. `row0`: first query row of this thread's r0.
/// `p`: the kernel's Params (seqlen_q, seqlen_k, causal); a template parameter, so that this
/// header needs no kernel traits (kernels/microbench softmax_block runs these functions alone).
template <int N, class ParamsT>
__device__ __forceinline__ void mask_scores(float (&s)[N / 2], int j, int row0, const ParamsT& p) {
  const int lane = threadIdx.x % 32;
  const int col0 = j * N + 2 * (lane % 4);
  // Per row, the first column (relative to col0) it may not see: the seqlen_k tail and, causal,
  // the diagonal. One compare and one select per element against it, with the element's column
  // offset a constant: a per-element `if` on the column compiled to a branch and a reconvergence
  // per element (64 BRA, 31 BSSY/BSYNC for 64 scores; SASS, H100, 2026-11-23), and a masked
  // block's softmax_max measured about 1 us longer than an unmasked one's (hd128 s512 causal,
  // H100, 2026-11-24).
  int limit[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int diagonal = row0 + 8 * r + (p.seqlen_k - p.seqlen_q) + 1;
    limit[r] = (p.causal ? min(p.seqlen_k, diagonal) : p.seqlen_k) - col0;
  }
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s[i] = 8 * (i / 4) + (i % 2) < limit[(i / 2) % 2] ? s[i] : -INFINITY;
}

/// Row max over this block, reduced across the quad; sets alpha, the factor exp2((old - new) *
/// scale_log2) by which O and the sums must be rescaled (1 before the first finite max), and
/// returns whether O must be rescaled. kConditional (FA4's conditional rescale, needs_rescale of
/// kernels/common/softmax_math.h): the warp keeps every row's old max (alpha 1, no O rescale)
/// unless some row's max grew by more than `threshold_log2` in log2 units; one vote per warp, so
/// that its rescale branch stays uniform. Exact either way: P and the row sums are formed against
/// the max kept, which the final 1/row_sum cancels; P stays below 2^threshold_log2.
template <int N, bool kConditional = false>
__device__ __forceinline__ bool row_max(const float (&s)[N / 2], RowStats& st, float scale_log2, float (&alpha)[2],
                                        float threshold_log2 = 0.f) {
  // Four independent partial maxima per row: a single running max would be a chain of N/4
  // dependent FMNMX (their latency, not their issue, would set the time of this step).
  float part[2][4];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int k = 0; k < 4; ++k) part[r][k] = st.max[r];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    float& m = part[(i / 2) % 2][(i % 2) + 2 * ((i / 8) % 2)];
    m = fmaxf(m, s[i]);
  }
  float m[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    m[r] = fmaxf(fmaxf(part[r][0], part[r][1]), fmaxf(part[r][2], part[r][3]));
    m[r] = fmaxf(m[r], __shfl_xor_sync(0xffffffffu, m[r], 1));
    m[r] = fmaxf(m[r], __shfl_xor_sync(0xffffffffu, m[r], 2));
  }
  bool rescale_o = true;
  if constexpr (kConditional)
    rescale_o = __any_sync(0xffffffffu, needs_rescale(st.max[0] * scale_log2, m[0] * scale_log2, threshold_log2) ||
                                            needs_rescale(st.max[1] * scale_log2, m[1] * scale_log2, threshold_log2));
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    alpha[r] = m[r] == -INFINITY || !rescale_o ? 1.f : exp2_mufu((st.max[r] - m[r]) * scale_log2);
    if (rescale_o) st.max[r] = m[r];
  }
  return rescale_o;
}

/// P = exp2(S * scale_log2 - max * scale_log2) in place, and the partial row sums rescaled by
/// alpha and updated. The exp2 runs on the MUFU (ex2.approx), except for the elements i of this
/// thread's fragment with exp2_element_emulated(i, kEmuFreq, kEmuRes) (kernels/common/
/// softmax_math.h, FA4's pattern), which take FA4's polynomial on the FMA and ALU pipes
/// (exp2_emulated): at head_dim 64 a block's exp2s keep the MUFU (16 per clock per SM) as busy
/// as its two GEMMs keep the tensor cores, so moving some off it could shorten the softmax
/// (measured slower on an H200: kernels/sm90/README.md; the schedule keeps it off). kSplit and
/// `half` (a trimmed last block, KernelKnobs::trim_last_block): over the block's first N / 2 keys
/// only, the others left as they are (their P is 0: pack_p); a branch uniform over the
/// warpgroup, the first half's code the same on both paths (a second copy of the whole softmax
/// at half width left ptxas short of registers for the traced kernels' wgmmas, C7511).
template <int N, int kEmuFreq = 0, int kEmuRes = 0, bool kSplit = false>
__device__ __forceinline__ void exp_scores(float (&s)[N / 2], RowStats& st, float scale_log2, const float (&alpha)[2],
                                           bool half = false) {
  float ms[2], add[2][4] = {};  // four independent partial sums per row (see row_max)
#pragma unroll
  for (int r = 0; r < 2; ++r) ms[r] = st.max[r] == -INFINITY ? 0.f : st.max[r] * scale_log2;
  auto take = [&](int i) {
    const float x = fmaf(s[i], scale_log2, -ms[(i / 2) % 2]);
    s[i] = exp2_element_emulated(i, kEmuFreq, kEmuRes) ? exp2_emulated(x) : exp2_mufu(x);
    add[(i / 2) % 2][(i % 2) + 2 * ((i / 8) % 2)] += s[i];
  };
#pragma unroll
  for (int i = 0; i < N / 4; ++i) take(i);
  if (!kSplit || !half)
#pragma unroll
    for (int i = N / 4; i < N / 2; ++i) take(i);
#pragma unroll
  for (int r = 0; r < 2; ++r) st.sum[r] = st.sum[r] * alpha[r] + ((add[r][0] + add[r][1]) + (add[r][2] + add[r][3]));
}

/// O *= alpha per row (O fragment has the same row mapping as S).
template <int D>
__device__ __forceinline__ void rescale(float (&o)[D / 2], const float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] *= alpha[(i / 2) % 2];
}

/// P in bf16 as wgmma A fragments: k-step t (16 keys) uses p[4t .. 4t+3]. The accumulator
/// layout of S matches the A-register layout, so this is a pairwise pack. kSplit, `half`: the
/// exponentials took the block's first N / 2 keys only (exp_scores); P of the others is 0.
template <int N, bool kSplit = false>
__device__ __forceinline__ void pack_p(const float (&s)[N / 2], uint32_t (&p)[N / 4], bool half = false) {
#pragma unroll
  for (int i = 0; i < N / 8; ++i) p[i] = pack_bf16(s[2 * i], s[2 * i + 1]);
  if (!kSplit || !half) {
#pragma unroll
    for (int i = N / 8; i < N / 4; ++i) p[i] = pack_bf16(s[2 * i], s[2 * i + 1]);
  } else {
#pragma unroll
    for (int i = N / 8; i < N / 4; ++i) p[i] = 0u;
  }
}

/// The final_o span of a consumer warpgroup (warp 0-3 of it, lane): completes each row's sum
/// across its quad, scales O by 1 / sum, and stores it in bf16 into the warpgroup's 64 rows, from
/// row `row0`, of the buffer at `q` (shared address, 1024-aligned; head_dim / 64 chunks of
/// kChunkRows rows x 128 B, 128B swizzle, as the O tensor map's boxes: Q's or O's own buffer,
/// kMBlock rows a chunk, row0 = 64 x group; a V stage, 64 rows a chunk, row0 = 0), then fences the
/// stores for the TMA store that reads them.
/// `o`: this thread's head_dim / 2 accumulator values (its two rows); st.sum: its two rows' partial
/// sums, completed here. The epilogue runs it (epilogue.cuh); kernels/microbench softmax_block
/// times it.
template <int D, int kChunkRows>
__device__ __forceinline__ void write_o(uint32_t q, int row0, int warp, int lane, const float (&o)[D / 2],
                                        RowStats& st) {
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    st.sum[r] += __shfl_xor_sync(0xffffffffu, st.sum[r], 1);
    st.sum[r] += __shfl_xor_sync(0xffffffffu, st.sum[r], 2);
    inv[r] = st.sum[r] > 0.f ? 1.f / st.sum[r] : 0.f;
  }
  // Rows of this thread inside the box: r = row0 + 16 * warp + lane / 4 (+ 8). 128B
  // swizzle: the 16-byte unit u of box row r lives at unit u ^ (r % 8). row[h] is the 32-bit
  // shared address of row r_h's first chunk with the swizzle term (r % 8) << 4 in bits 4-6 (the
  // buffer is 1024-aligned, so nothing else sets them): unit u is at row[h] ^ (u << 4). Two
  // 32-bit registers instead of a 64-bit generic pointer per (row, unit), which ptxas kept live
  // across the whole KV loop (16 registers) or spilled.
  const int rbox = row0 + 16 * warp + lane / 4;
  uint32_t row[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = rbox + 8 * h;
    row[h] = q + r * 128 + ((r % 8) << 4) + 4 * (lane % 4);
  }
#pragma unroll
  for (int i = 0; i < D / 2; i += 2) {
    const int h = (i / 2) % 2, unit = (i / 4) % 8, chunk = i / 32;  // column 8 * (i / 4) + 2 * (lane % 4)
    const uint32_t dst = (row[h] ^ (unit << 4)) + chunk * kChunkRows * 128;
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(dst), "r"(pack_bf16(o[i] * inv[h], o[i + 1] * inv[h])) : "memory");
  }
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // generic-proxy stores -> TMA reads
}

}  // namespace attnsim::sm90
