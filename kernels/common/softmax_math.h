// FA4's softmax arithmetic, written once for the simulator (sim/lower/fa4: which exp2 run on the
// FMA pipe, when a warp rescales O) and the SM100 kernel to come (issue: kernels/sm100), and
// testable on any machine: the software exp2 on the FMA pipe, which elements of a row use it,
// and the conditional rescale. Facts from the FA4 paper (arXiv 2603.05451) and
// Dao-AILab/flash-attention flash_attn/cute/softmax.py (fa4-v4.0.0.beta27); docs/sources.md.
// Plain C++; callable from device code when compiled by nvcc.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/tile_order.h"  // ATTNSIM_HD

namespace attnsim {

/// Coefficients of FA4's degree-3 polynomial for 2^f on [0, 1) (published in the FA4 code:
/// p(f) = 1 + c1 f + c2 f^2 + c3 f^3). The FA4 paper quotes its max relative error in fp32 as
/// 8.77e-5 (MUFU.EX2: 1.41e-7); after rounding to bf16 both are 3.9e-3.
inline constexpr float kExp2PolyC1 = 0.695146143436431884765625f;
inline constexpr float kExp2PolyC2 = 0.227564394474029541015625f;
inline constexpr float kExp2PolyC3 = 0.077119089663028717041015625f;

/// 2^x computed on the FMA pipe instead of the SFU: x clamped to -127, split into floor(x) and
/// f = x - floor(x) in [0, 1), p(f) by Horner, floor(x) added into p's exponent bits. On the GPU
/// the floor is an add.rm of 1.5 * 2^23 (SASS: FADD.RM), as in FA4, and the exponent comes from
/// that sum's bits shifted by 23 (its low mantissa bits hold floor(x); the bias bits shift out),
/// not from a float-to-int conversion: F2I runs on the MUFU's pipe (kernels/microbench cvt), the
/// pipe the emulation exists to relieve. Results below 2^-126 are not normal floats (the
/// exponent add underflows into the denormal range); softmax inputs x = s - max there give P
/// values that round to 0 in bf16 anyway.
ATTNSIM_HD float exp2_emulated(float x) {
  x = fmaxf(x, -127.0f);
#if defined(__CUDA_ARCH__)
  const float shifted = __fadd_rd(x, 12582912.0f);  // 1.5 * 2^23: the integer floor(x) in the low mantissa bits
  const float fl = shifted - 12582912.0f;
  const int32_t exponent = static_cast<int32_t>(static_cast<uint32_t>(__float_as_int(shifted)) << 23);
#else
  const float fl = std::floor(x);
  const int32_t exponent = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int32_t>(fl)) << 23);
#endif
  const float f = x - fl;
  const float p = fmaf(fmaf(fmaf(kExp2PolyC3, f, kExp2PolyC2), f, kExp2PolyC1), f, 1.0f);
  int32_t bits;
  std::memcpy(&bits, &p, sizeof bits);
  bits = static_cast<int32_t>(static_cast<uint32_t>(bits) + static_cast<uint32_t>(exponent));
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

/// `x` rounded to bf16 (round to nearest, ties to even) and widened back: what cvt.rn.bf16.f32
/// does to a finite P before the PV MMA reads it.
ATTNSIM_HD float round_to_bf16(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
  float r;
  std::memcpy(&r, &b, sizeof r);
  return r;
}

/// FA4's pattern of emulated exp2 within a run of elements: element `e` takes the emulated exp2
/// when e % freq >= freq - res (the last `res` of every `freq`). freq 0: none.
ATTNSIM_HD constexpr bool exp2_element_emulated(int e, int freq, int res) { return freq > 0 && e % freq >= freq - res; }

/// How many of elements 0..n-1 take the emulated exp2 (exp2_element_emulated).
ATTNSIM_HD constexpr int exp2_emulated_elements(int n, int freq, int res) {
  int count = 0;
  for (int e = 0; e < n; ++e) count += exp2_element_emulated(e, freq, res);
  return count;
}

/// Whether the pair of elements (e, e + 1) of 32-element fragment `fragment` (of `fragments` in
/// a row) takes the emulated exp2: exp2_element_emulated(e, freq, res), for start_frg <= fragment
/// < the last fragment (the last always uses MUFU.EX2). `e` is even (elements go in pairs: the
/// FMA pipe runs them as packed fma.f32x2).
ATTNSIM_HD constexpr bool exp2_pair_emulated(int e, int fragment, int fragments, int freq, int res, int start_frg) {
  return fragment >= start_frg && fragment < fragments - 1 && exp2_element_emulated(e, freq, res);
}

/// Fraction of the 32 elements of fragment `fragment` whose exp2 is emulated.
ATTNSIM_HD constexpr double exp2_emulated_share(int fragment, int fragments, int freq, int res, int start_frg) {
  int n = 0;
  for (int e = 0; e < 32; e += 2)
    if (exp2_pair_emulated(e, fragment, fragments, freq, res, start_frg)) n += 2;
  return n / 32.0;
}

/// FA4's conditional rescale for one row (scores in the exp2 domain): after a block whose row max
/// is `m_block`, the row keeps its old max `m_old` unless that would let P exceed
/// 2^threshold_log2 (acc_scale_log2 = m_old - m_new < -threshold_log2). Keeping it is exact: P
/// and the row sum are formed against the same max, and the final 1/row_sum cancels it.
/// Threshold 8 for 16-bit inputs (P <= 256 stays well inside bf16), 0 rescales at every growth.
ATTNSIM_HD bool needs_rescale(float m_old, float m_block, float threshold_log2) {
  return m_old - fmaxf(m_old, m_block) < -threshold_log2;
}

}  // namespace attnsim
