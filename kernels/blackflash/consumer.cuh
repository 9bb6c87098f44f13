// Consumer role: warp 1 + c (c = 0..7) of the BlackFlash kernel, pair c / 2 owning Q rows
// [16 pair, 16 pair + 16) of the tile and half c % 2 owning key columns [32 half, +32) of S and
// head-dim columns [32 half, +32) of O. Per KV block j, as sim/lower/blackflash/consumer.cpp
// lowers it:
//   mma_qk       S_half = Q K_half^T: ldmatrix.x4 of Q and K (128B swizzle), 16 mma.sync m16n8k16
//   softmax_max  scale into the exp2 domain, mask (blocks from first_masked on), row max over the
//                warp's 32 columns (quad shuffles), the partial max to SMEM
//   bar.sync 1, 256: both halves' maxima are in SMEM, and every warp has read K (P may overwrite it)
//   softmax_exp  new row max, P = exp2(S - max), partial row sum to SMEM, P (bf16) to SMEM over
//                K with the swizzle the ldmatrix reads of P V expect
//   bar.sync 1, 256: all of P and both halves' sums are in SMEM
//   rescale_o    (j > 0) row sum and O scaled by exp2(old max - new max)
//   mma_pv       O_half += P V_half: ldmatrix.x4 of P, ldmatrix.x4.trans of V, 16 mma.sync
//   then every consumer thread arrives on the stage's empty mbarrier (count 256).
// The row statistics are exchanged every block (the seed's scheme): half h writes its partials
// to row_max[h] / row_sum[h] and reads the other half's.
#pragma once

#include <cmath>
#include <type_traits>

#include "blackflash/epilogue.cuh"
#include "blackflash/kernel_traits.cuh"
#include "blackflash/warp_mma.cuh"
#include "common/mbarrier.cuh"
#include "common/pipeline_state.h"

namespace attnsim::blackflash {

/// Consumer `c` (0..7, warp c + 1) runs the CTA's tile and its epilogue.
template <class T>
__device__ __forceinline__ void consumer_warp(const Params& p, const Smem<T>& s, const Tile& c, int consumer, int lane,
                                              TraceRecorder<T::kTrace>& tr) {
  const int pair = consumer / 2, half = consumer % 2, other = 1 - half;
  const int r0 = kRowsPerPair * pair;  // first tile row of the warp
  // The thread's accumulator elements (fragments.h): rows g and g + 8 of the warp's 16, columns
  // 2 q4 and 2 q4 + 1 of each n-tile of 8.
  const int g = acc_elem(lane, 0).row, q4 = lane % 4;
  const int diag = p.seqlen_k - p.seqlen_q;  // causal: row r sees keys <= r + diag
  tr.tile(p, s.trace, c.n_blocks, trace_spans_per_tile);
  traced_wait(tr, s.q_full, 0, ATTNSIM_WAIT_MBAR_Q_FULL, 0, -1, 0);
  const uint32_t sq = smem_u32(s.q());
  float o[4][4];  // O_half: 4 n-tiles of 8 head-dim columns x (rows g, g + 8)
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[nt][e] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};  // rows g, g + 8
  PipelineState rd = PipelineState::consumer_start(T::kKvStage);
  for (int j = 0; j < c.n_blocks; ++j) {
    traced_wait(tr, &s.kv_full[rd.index], rd.phase, ATTNSIM_WAIT_MBAR_KV_FULL, rd.index, j, 0);
    const uint32_t t_qk = tr.now();
    const uint32_t sk = smem_u32(s.k(rd.index)), sv = smem_u32(s.v(rd.index)), sp = smem_u32(s.p(rd.index));
    // ---- S = Q K_half^T (16 x 32), k over the 64 head-dim columns in 4 steps of 16.
    float sc[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) sc[nt][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t qa[4];
      const RowCol a = ldsm_a(lane, r0, 16 * kk);
      ldmatrix_x4(qa, sq + swizzled(a.row, a.col));
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        uint32_t kb[4];  // B of n-tiles 2 np and 2 np + 1 (keys 32 half + 16 np ..)
        const RowCol b = ldsm_b_nk(lane, kColsPerHalf * half + 16 * np, 16 * kk);
        ldmatrix_x4(kb, sk + swizzled(b.row, b.col));
        mma_bf16(sc[2 * np], qa, kb[0], kb[1]);
        mma_bf16(sc[2 * np + 1], qa, kb[2], kb[3]);
      }
    }
    const uint32_t t_max = tr.now();
    tr.span(ATTNSIM_OP_MMA_QK, t_qk, t_max, j, 0);
    // ---- Scale, mask, this half's row max. The mask test is one warp-uniform branch per block,
    // around the whole tile: tested per element, ptxas emitted 16 BSSY/BRA/BSYNC regions that
    // every block ran (about 10% of the PC samples of the causal hd64 s4k kernel on an H200).
    const int key0 = j * kTile + kColsPerHalf * half, row0 = c.m * kTile + r0;
    float mx[2] = {-INFINITY, -INFINITY};
    auto scale_mask_max = [&](auto masked) {
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = sc[nt][e] * p.scale_log2;
          if constexpr (decltype(masked)::value) {
            const RowCol at = acc_elem(lane, e);
            const int key = key0 + 8 * nt + at.col, row = row0 + at.row;
            x = (key >= p.seqlen_k || (p.causal && key > row + diag)) ? -INFINITY : x;
          }
          sc[nt][e] = x;
          mx[e >> 1] = fmaxf(mx[e >> 1], x);
        }
    };
    if (j >= c.first_masked)
      scale_mask_max(std::true_type{});
    else
      scale_mask_max(std::false_type{});
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
      if (q4 == 0) s.row_max[half * kTile + r0 + g + 8 * h] = mx[h];
    }
    tr.span(ATTNSIM_OP_SOFTMAX_MAX, t_max, tr.now(), j, 0);
    const uint32_t t_exp = consumers_sync(tr, j, s.trace);
    // ---- New row max (both halves), P = exp2(S - max), this half's row sum, P to SMEM.
    float alpha[2], sum[2], base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float m_new = fmaxf(m_run[h], fmaxf(mx[h], s.row_max[other * kTile + r0 + g + 8 * h]));
      base[h] = m_new == -INFINITY ? 0.f : m_new;  // a row that has seen no key yet: P = 0
      alpha[h] = exp2_approx(m_run[h] - base[h]);  // 0 on the first block (-inf)
      m_run[h] = m_new;
      sum[h] = 0.f;
    }
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      const float p0 = exp2_approx(sc[nt][0] - base[0]), p1 = exp2_approx(sc[nt][1] - base[0]);
      const float p2 = exp2_approx(sc[nt][2] - base[1]), p3 = exp2_approx(sc[nt][3] - base[1]);
      sum[0] += p0 + p1;
      sum[1] += p2 + p3;
      // P[row][key] in the layout ldsm_a reads: elements (0, 1) and (2, 3) are key pairs of rows g, g + 8.
      const RowCol e0 = acc_elem(lane, 0), e2 = acc_elem(lane, 2);
      const int col = kColsPerHalf * half + 8 * nt;
      asm volatile("st.shared.b32 [%0], %1;" ::"r"(sp + swizzled(r0 + e0.row, col + e0.col)), "r"(pack_bf16x2(p0, p1))
                   : "memory");
      asm volatile("st.shared.b32 [%0], %1;" ::"r"(sp + swizzled(r0 + e2.row, col + e2.col)), "r"(pack_bf16x2(p2, p3))
                   : "memory");
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
      sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
      if (q4 == 0) s.row_sum[half * kTile + r0 + g + 8 * h] = sum[h];
    }
    tr.span(ATTNSIM_OP_SOFTMAX_EXP, t_exp, tr.now(), j, 0);
    const uint32_t t_rescale = consumers_sync(tr, j, s.trace);
    // ---- Row sums of both halves; O rescaled (nothing to rescale on the first block).
#pragma unroll
    for (int h = 0; h < 2; ++h) l_run[h] = l_run[h] * alpha[h] + sum[h] + s.row_sum[other * kTile + r0 + g + 8 * h];
    if (j > 0) {
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[nt][e] *= alpha[e >> 1];
    }
    const uint32_t t_pv = tr.now();
    tr.span_if(j > 0, ATTNSIM_OP_RESCALE_O, t_rescale, t_pv, j, 0);
    // ---- O_half += P V_half, k over the 64 keys in 4 steps of 16.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t pa[4];
      const RowCol a = ldsm_a(lane, r0, 16 * kk);
      ldmatrix_x4(pa, sp + swizzled(a.row, a.col));
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        uint32_t vb[4];  // V is [key][dim]: B of n-tiles 2 np, 2 np + 1 (dims 32 half + 16 np ..), transposed
        const RowCol b = ldsm_b_kn_trans(lane, 16 * kk, kColsPerHalf * half + 16 * np);
        ldmatrix_x4_trans(vb, sv + swizzled(b.row, b.col));
        mma_bf16(o[2 * np], pa, vb[0], vb[1]);
        mma_bf16(o[2 * np + 1], pa, vb[2], vb[3]);
      }
    }
    // P went over K with generic-proxy stores; the next TMA into this stage writes through the
    // async proxy, so order them before the release (PTX ISA, "Proxies": fence.proxy.async).
    if constexpr (T::kPOverK) cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
    arrive(&s.kv_empty[rd.index]);
    tr.span(ATTNSIM_OP_MMA_PV, t_pv, tr.now(), j, 0);
    rd.advance();
  }
  epilogue<T>(p, s, c, consumer, lane, o, m_run, l_run, tr);
}

}  // namespace attnsim::blackflash
