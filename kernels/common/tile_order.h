// The order and extent of work tiles, shared by the simulator's tile scheduler
// (sim/plan/tile_scheduler.cpp) and the SM90 kernel (kernels/sm90/kernel_traits.cuh), so a
// predicted and a measured run walk the same tiles in the same order. Plain C++; callable from
// device code when compiled by nvcc.
#pragma once

#if defined(__CUDACC__)
#define ATTNSIM_HD __host__ __device__ __forceinline__
#else
#define ATTNSIM_HD inline
#endif

/// A divisor fixed for many dividends (a kernel's m-block and head counts), for attnsim_divide: a
/// multiply-high and a shift in place of an integer division, which the GPU has no instruction
/// for (about 20 instructions: a float reciprocal and fix-ups, in every consumer warp's head of
/// every tile). Granlund and Montgomery, "Division by Invariant Integers using Multiplication"
/// (PLDI 1994): with s = ceil(log2 d) and m = ceil(2^(31+s) / d), which is below 2^32,
/// floor(n / d) = floor(n m / 2^(31+s)) for every 0 <= n < 2^31 (m d - 2^(31+s) < d <= 2^s, so
/// n m / 2^(31+s) exceeds n / d by less than 1/d).
struct attnsim_divisor {
  unsigned mul;    ///< m
  unsigned shift;  ///< s
};
/// The attnsim_divisor of d >= 1.
ATTNSIM_HD attnsim_divisor attnsim_make_divisor(int d) {
  unsigned s = 0;
  while ((1ull << s) < static_cast<unsigned long long>(d)) ++s;
  const unsigned long long p = 1ull << (31 + s);
  return {static_cast<unsigned>((p + static_cast<unsigned long long>(d) - 1) / static_cast<unsigned long long>(d)), s};
}
/// floor(n / d) for 0 <= n < 2^31, d the divisor `v` was made of.
ATTNSIM_HD int attnsim_divide(int n, attnsim_divisor v) {
  return static_cast<int>((static_cast<unsigned long long>(static_cast<unsigned>(n)) * v.mul) >> (31 + v.shift));
}
/// Linear tile index t -> (m-block, batch*head index). persistent: m-block fastest (CTA c of a
/// static persistent grid takes t = c, c + grid, ...); otherwise longest first in L2 sections:
/// the batch*head indices are cut into sections of `section` (0: one section of all bh_total),
/// and within a section the m-blocks run in reverse (causal tiles near the end see the most KV
/// blocks), heads fastest. A section's K/V stay in L2 while its tiles run, so the CTAs resident
/// at once share them (FlashAttention-3's LPT scheduler does the same: arXiv:2407.08608,
/// Dao-AILab/flash-attention hopper/tile_scheduler.hpp); the last section may be shorter.
/// `Int`: long long on the host; int in kernels, whose tile counts fit (the GPU has no 64-bit
/// integer divide: it compiles to a subroutine, with its registers, run once per tile).
template <class Int>
ATTNSIM_HD void attnsim_tile_coords(Int t, bool persistent, int m_tiles, Int bh_total, Int section, int* m, Int* bh) {
  if (persistent) {
    *m = static_cast<int>(t % m_tiles);
    *bh = t / m_tiles;
    return;
  }
  const Int s = section > 0 && section < bh_total ? section : bh_total;
  const Int k = t / (s * m_tiles);    // the section
  const Int r = t - k * s * m_tiles;  // position inside it
  const Int h0 = k * s;
  const Int hs = bh_total - h0 < s ? bh_total - h0 : s;  // heads in this section
  *m = m_tiles - 1 - static_cast<int>(r / hs);
  *bh = h0 + r % hs;
}

/// Heads per L2 section of the longest-first order (attnsim_tile_coords' `section`): the
/// (batch, KV head) pairs whose K and V (seqlen_k x (head_dim + head_dim_v) x elem_bytes each)
/// fit in `budget_mib` MiB, at least 1, rounded down to a power of 2, times the GQA group
/// heads / kv_heads (the query heads of a group read the same K/V, so they stay in one section).
/// 0 (one section) when budget_mib is 0. Query heads of a batch are contiguous in bh, a group's too.
ATTNSIM_HD long long attnsim_l2_section_heads(int budget_mib, int seqlen_k, int head_dim, int head_dim_v,
                                              int elem_bytes, int heads, int kv_heads) {
  if (budget_mib <= 0) return 0;
  const long long kv_head = static_cast<long long>(seqlen_k) * (head_dim + head_dim_v) * elem_bytes;
  long long fit = (static_cast<long long>(budget_mib) << 20) / (kv_head > 0 ? kv_head : 1), pow2 = 1;
  while (pow2 * 2 <= fit) pow2 *= 2;
  const int group = kv_heads > 0 && heads >= kv_heads ? heads / kv_heads : 1;
  return pow2 * group;
}

/// KV blocks of n_block keys that the query rows [row0, row0 + rows) visit. Causal masks are
/// bottom-right aligned (row r sees keys <= r + seqlen_k - seqlen_q); a tile whose rows see no key
/// still visits one block, fully masked (its O is 0 and its LSE -inf).
ATTNSIM_HD int attnsim_kv_blocks(int row0, int rows, int n_block, int seqlen_q, int seqlen_k, bool causal) {
  const int n_total = (seqlen_k + n_block - 1) / n_block;
  if (!causal) return n_total;
  const int last_row = (seqlen_q < row0 + rows ? seqlen_q : row0 + rows) - 1;
  const int last_key = last_row + seqlen_k - seqlen_q;
  if (last_key < 0) return 1;
  const int n = last_key / n_block + 1;
  return n < n_total ? n : n_total;
}
/// First of a tile's n_blocks KV blocks whose scores need a mask for some row of [row0, ...):
/// keys past seqlen_k or, when causal, keys right of the diagonal (bottom-right aligned). The
/// blocks before it need none, so the kernel runs them without the mask test (and the simulator
/// charges mask work only from it on). n_blocks: attnsim_kv_blocks of the same rows.
ATTNSIM_HD int attnsim_first_masked_block(int row0, int n_block, int n_blocks, int seqlen_q, int seqlen_k,
                                          bool causal) {
  int first = causal ? (row0 + seqlen_k - seqlen_q) / n_block : (seqlen_k % n_block ? n_blocks - 1 : n_blocks);
  first = first < 0 ? 0 : first;
  return first < n_blocks ? first : n_blocks;
}
