// Epilogue of a consumer warp (the seed's output writeback): O / row_sum in bf16 and the LSE
// (final_o), O staged in Q's SMEM tile (Q is no longer read: every warp's last mma_qk ended
// before the last block's first bar.sync), bar.sync 1, 256, then the 256 consumer threads copy
// the 64 x 64 tile to global memory with 8-byte stores, rows past seqlen_q skipped (store_o).
#pragma once

#include <cuda_bf16.h>

#include "blackflash/kernel_traits.cuh"
#include "blackflash/warp_mma.cuh"
#include "common/mbarrier.cuh"

namespace attnsim::blackflash {

/// o: the warp's O_half fragment (rows g, g + 8 of its pair; 4 n-tiles of 8 columns of its half);
/// m_run, l_run: the thread's two rows' max (exp2 domain) and sum, both halves included.
template <class T>
__device__ __forceinline__ void epilogue(const Params& p, const Smem<T>& s, const Tile& c, int consumer, int lane,
                                         const float (&o)[4][4], const float (&m_run)[2], const float (&l_run)[2],
                                         TraceRecorder<T::kTrace>& tr) {
  const int pair = consumer / 2, half = consumer % 2;
  const int r0 = kRowsPerPair * pair;
  const uint32_t t0 = tr.now();
  const uint32_t sq = smem_u32(s.q());
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float inv = l_run[h] > 0.f ? 1.f / l_run[h] : 0.f;  // a row that saw no key: O = 0
    const RowCol e = acc_elem(lane, 2 * h);                   // elements 2 h, 2 h + 1: a column pair of one row
    const int r = r0 + e.row;
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
      asm volatile("st.shared.b32 [%0], %1;" ::"r"(sq + swizzled(r, kColsPerHalf * half + 8 * nt + e.col)),
                   "r"(pack_bf16x2(o[nt][2 * h] * inv, o[nt][2 * h + 1] * inv))
                   : "memory");
    const int row = c.m * kTile + r;
    if (half == 0 && e.col == 0 && row < p.seqlen_q)  // one thread per row
      p.lse[(static_cast<long long>(c.batch) * p.heads + c.head) * p.seqlen_q + row] =
          l_run[h] > 0.f ? (m_run[h] + log2f(l_run[h])) * 0.6931471805599453f : -INFINITY;
  }
  tr.span(ATTNSIM_OP_FINAL_O, t0, tr.now(), -1, 0);
  consumers_sync(tr, -1, s.trace);
  // 8 KB = 1024 pieces of 8 bytes (fragments.h's out_piece), 4 per thread.
  const uint32_t t1 = tr.now();
  const int t = 32 * consumer + lane;
  const long long row_stride = static_cast<long long>(p.heads) * kTile;
  __nv_bfloat16* og = p.o + (static_cast<long long>(c.batch) * p.seqlen_q * p.heads + c.head) * kTile;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const RowCol x = out_piece(t + kConsumerThreads * k);
    uint32_t lo, hi;
    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(lo), "=r"(hi) : "r"(sq + swizzled(x.row, x.col)));
    const int row = c.m * kTile + x.row;
    if (row < p.seqlen_q) *reinterpret_cast<uint2*>(og + row * row_stride + x.col) = make_uint2(lo, hi);
  }
  tr.span(ATTNSIM_OP_STORE_O, t1, tr.now(), -1, 0);
}

}  // namespace attnsim::blackflash
