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

/// Linear tile index t -> (m-block, batch*head index). persistent: m-block fastest (CTA c of a
/// static persistent grid takes t = c, c + grid, ...); otherwise longest first: m-blocks in
/// reverse (causal tiles near the end see the most KV blocks), heads fastest.
ATTNSIM_HD void attnsim_tile_coords(long long t, bool persistent, int m_tiles, long long bh_total, int* m,
                                    long long* bh) {
  if (persistent) {
    *m = static_cast<int>(t % m_tiles);
    *bh = t / m_tiles;
  } else {
    *m = m_tiles - 1 - static_cast<int>(t / bh_total);
    *bh = t % bh_total;
  }
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
