// The SM100 kernel's per-row softmax arithmetic, portable: FA4's conditional rescale of the
// running max (the rule is kernels/common/softmax_math.h needs_rescale), which exp2 an element
// takes (MUFU.EX2 or the FMA-pipe polynomial), and the final normalisation and LSE. One source
// of truth for the kernel's softmax and correction roles (kernels/sm100/softmax.cuh,
// correction.cuh), the host unit test (tests/unit/test_sm100_portable.cpp) and the GPU test
// (tests/gpu/sm100_portable_gpu.cu). Scores are in the exp2 domain: s2 = s * scale * log2(e).
// Facts: FA4 flash_attn/cute/softmax.py (fa4-v4.0.0.beta27), FA4 paper arXiv 2603.05451.
// Plain C++; callable from device code when compiled by nvcc.
#pragma once

#include <cmath>

#include "common/softmax_math.h"
#include "common/tile_order.h"  // ATTNSIM_HD

namespace attnsim::sm100 {

/// One row's running statistics: the max P is formed against (exp2 domain; -inf before any
/// unmasked key) and the sum of P so far (relative to that max).
struct RowStats {
  float max2 = -INFINITY;
  float sum = 0.0f;
};

/// Folds a block whose row max is `block_max2` into `st.max2` and returns acc_scale, the factor
/// O and the row sum must be multiplied by (1: no rescale). Conditional (FA4): the old max is
/// kept unless the block exceeds it by more than `threshold_log2` (P then stays <= 2^threshold,
/// exact after the final 1/row_sum); unconditional: the max follows every growth. A row that has
/// seen only masked keys (max -inf) takes the block's max with scale 1 (its O and sum are 0).
ATTNSIM_HD float update_row_max(RowStats& st, float block_max2, bool conditional, float threshold_log2) {
  const float m_new = fmaxf(st.max2, block_max2);
  if (st.max2 == -INFINITY) {
    st.max2 = m_new;
    return 1.0f;
  }
  if (conditional ? !needs_rescale(st.max2, block_max2, threshold_log2) : m_new == st.max2) return 1.0f;
#if defined(__CUDA_ARCH__)
  const float scale = exp2f(st.max2 - m_new);
#else
  const float scale = std::exp2(st.max2 - m_new);
#endif
  st.max2 = m_new;
  return scale;
}

/// The offset P is formed against: the row's max, or 0 while it is -inf (every P is then 0).
ATTNSIM_HD float exp2_offset(const RowStats& st) { return st.max2 == -INFINITY ? 0.0f : st.max2; }

/// Whether element `e` (0..127) of a row of `fragments` 32-column fragments takes the emulated
/// exp2 (FA4: pairs (k, k+1) with k % freq >= freq - res, fragments start_frg .. last-1).
ATTNSIM_HD constexpr bool element_emulated(int e, int fragments, int freq, int res, int start_frg) {
  return exp2_pair_emulated((e % 32) & ~1, e / 32, fragments, freq, res, start_frg);
}

/// exp2 of `x` on the MUFU (ex2.approx.ftz.f32 on the GPU) or on the FMA pipe (exp2_emulated).
ATTNSIM_HD float exp2_either(float x, bool emulated) {
  if (emulated) return exp2_emulated(x);
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return std::exp2(x);
#endif
}

/// 1 / row_sum for the final O, 0 for a row that saw no key (its O is 0).
ATTNSIM_HD float final_scale(const RowStats& st) { return st.sum > 0.0f ? 1.0f / st.sum : 0.0f; }
/// The row's LSE (natural log of sum_j exp(s_j * scale)): (max2 + log2(sum)) * ln 2; -inf when empty.
ATTNSIM_HD float row_lse(const RowStats& st) {
#if defined(__CUDA_ARCH__)
  return st.sum > 0.0f ? (st.max2 + log2f(st.sum)) * 0.6931471805599453f : -INFINITY;
#else
  return st.sum > 0.0f ? (st.max2 + std::log2(st.sum)) * 0.6931471805599453f : -INFINITY;
#endif
}

}  // namespace attnsim::sm100
