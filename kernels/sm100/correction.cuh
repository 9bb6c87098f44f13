// Correction role (warps 8-11; with the correction warpgroup off, the softmax warps do this
// work themselves): per KV block, read the row's acc_scale that softmax left in sScale (named
// barrier softmax_stats), vote, and rescale O in TMEM only when a lane of the warp needs it
// (FA4's conditional rescale; every block after the first when unconditional), then release
// pipeline_s_p_o (the leader CTA's with cta_group 2) so the next PV may accumulate; at the end of a tile, O x 1/row_sum
// to bf16 in SMEM for the epilogue's TMA store, and the LSE. Mirrors sim/lower/fa4/correction.cpp.
#pragma once

#include "common/pipeline_state.h"
#include "device.cuh"
#include "kernel_traits.cuh"
#include "online_softmax.h"
#include "smem.cuh"

namespace attnsim::sm100 {

/// O *= acc_scale for this thread's row of Q stage q's accumulator in TMEM (`lanes`: the warp's
/// TMEM address at lane 32 w, column 0), in 16-column tcgen05.ld / st chunks (FA4's width: the
/// correction warps run on 72-88 registers).
template <class T>
__device__ __forceinline__ void rescale_o(uint32_t lanes, int q, float acc_scale) {
#if ATTNSIM_HAVE_TCGEN05
#pragma unroll 1
  for (int c = 0; c < T::kHeadDim; c += 16) {
    uint32_t v[16];
    cuda::ptx::tcgen05_ld_32x32b(v, lanes + T::tmem_o(q) + c);
    cuda::ptx::tcgen05_wait_ld();
#pragma unroll
    for (int e = 0; e < 16; ++e) v[e] = __float_as_uint(__uint_as_float(v[e]) * acc_scale);
    cuda::ptx::tcgen05_st_32x32b(lanes + T::tmem_o(q) + c, v);
  }
  cuda::ptx::tcgen05_wait_st();
#endif
}

/// Per-role parities of the pipelines that finish O, one bit per Q stage.
struct FinalOState {
  uint32_t o_acc_full = 0;  // consumer: needs the MMA's commit
  uint32_t o_epi_free = ~0u;  // producer: the SMEM O stages start free
};

/// Final O of this thread's row `row` (0..127) of Q stage q of tile c: wait for the last PV
/// (pipeline_o_acc), acquire the SMEM O stage (pipeline_o_epi), O x 1/row_sum in bf16 stored
/// 128B-swizzled as the TMA store reads it, release the accumulator, hand the stage to the
/// epilogue; the row's LSE to global memory.
template <class T>
__device__ __forceinline__ void final_o(const Params& p, const Smem<T>& s, TraceRecorder<T::kTrace>& tr,
                                        uint32_t lanes, int q, int row, const TileCoord& c, const RowStats& st,
                                        FinalOState& fs, int local) {
#if ATTNSIM_HAVE_TCGEN05
  traced_wait(tr, s.bar(kOAccFull, q), (fs.o_acc_full >> q) & 1, ATTNSIM_WAIT_OACC_FULL, q, -1, local);
  fs.o_acc_full ^= 1u << q;
  traced_wait(tr, s.bar(kOEpiEmpty, q), (fs.o_epi_free >> q) & 1, ATTNSIM_WAIT_OEPI_EMPTY, q, -1, local);
  fs.o_epi_free ^= 1u << q;
  cuda::ptx::tcgen05_fence_after_thread_sync();
  tr.start();
  const float inv = final_scale(st);
  // Row r of a [128][64] chunk: 16-byte unit u at r * 128 + ((u ^ (r % 8)) * 16) (SWIZZLE_128B).
  const uint32_t row_addr = smem_u32(s.o(q)) + row * 128;
#pragma unroll 1
  for (int col = 0; col < T::kHeadDim; col += 16) {
    uint32_t v[16];
    cuda::ptx::tcgen05_ld_32x32b(v, lanes + T::tmem_o(q) + col);
    cuda::ptx::tcgen05_wait_ld();
#pragma unroll
    for (int u = 0; u < 2; ++u) {  // two 16-byte units of 8 bf16
      const int unit = ((col % 64) / 8 + u) ^ (row % 8);
      const uint32_t dst = row_addr + (col / 64) * kMBlock * 128 + unit * 16;
      asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(dst),
                   "r"(pack_bf16(__uint_as_float(v[8 * u + 0]) * inv, __uint_as_float(v[8 * u + 1]) * inv)),
                   "r"(pack_bf16(__uint_as_float(v[8 * u + 2]) * inv, __uint_as_float(v[8 * u + 3]) * inv)),
                   "r"(pack_bf16(__uint_as_float(v[8 * u + 4]) * inv, __uint_as_float(v[8 * u + 5]) * inv)),
                   "r"(pack_bf16(__uint_as_float(v[8 * u + 6]) * inv, __uint_as_float(v[8 * u + 7]) * inv))
                   : "memory");
    }
  }
  cuda::ptx::tcgen05_fence_before_thread_sync();
  arrive_leader<T::kCtaGroup>(s.bar(kOAccEmpty, q));      // the accumulator may take the next tile's PV
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // generic-proxy stores -> TMA reads
  arrive(s.bar(kOEpiFull, q));
  const int row_g = q_row0(c.m, q, cta_rank<T>(), T::kQStage, T::kCtaGroup) + row;
  if (row_g < p.tiles.seqlen_q)
    p.lse[(static_cast<long long>(c.batch) * p.tiles.heads + c.head) * p.tiles.seqlen_q + row_g] = row_lse(st);
  tr.finish(ATTNSIM_OP_FINAL_O, -1, local);
#endif
}

/// The correction warpgroup: warp `w` (0..3) serves TMEM lanes [32 w, 32 w + 32) of every Q stage.
template <class T>
__device__ __forceinline__ void correction_warpgroup(const Params& p, const Smem<T>& s, TraceRecorder<T::kTrace>& tr,
                                                     uint32_t tmem, int w, int lane) {
#if ATTNSIM_HAVE_TCGEN05
  const int row = 32 * w + lane;
  const uint32_t lanes = tmem_addr(tmem, 32 * w, 0);
  FinalOState fs;
  int local = 0;
  for (long long t = first_tile(p.tiles, cluster_id<T>()); t < p.num_tiles;
       t = next_tile(p.tiles, t, cluster_count<T>()), ++local) {
    const TileCoord c = tile_at(p.tiles, t);
    tr.tile(p, s.trace(), c.n_blocks, trace_spans_per_tile);
    for (int i = 0; i < c.n_blocks; ++i) {
      const int j = c.n_blocks - 1 - i;
      for (int q = 0; q < T::kQStage; ++q) {
        uint32_t t0 = tr.now();
        named_sync(stats_barrier(q, w), kStatsThreads);
        tr.span(ATTNSIM_OP_WAIT, t0, tr.now(), j, local, ATTNSIM_WAIT_STATS_BAR, 4 * q + w);
        // start()/finish(): the span's start waits in its record, not in one of the 72-88 registers.
        tr.start();
        const float acc = s.stats(q, 0)[row];
        arrive(s.bar(kSmStatsEmpty, q));  // sScale may take softmax's next value
        const bool rescale = i > 0 && (!T::kConditional || __any_sync(0xffffffffu, acc != 1.0f));
        tr.finish(ATTNSIM_OP_CORRECTION_VOTE, j, local);
        if (rescale) {
          tr.start();
          rescale_o<T>(lanes, q, acc);
          tr.finish(ATTNSIM_OP_RESCALE_O, j, local);
        }
        cuda::ptx::tcgen05_fence_before_thread_sync();
        arrive_leader<T::kCtaGroup>(s.bar(kSpoEmpty, q));  // O rescaled: the PV of this block may accumulate
      }
    }
    for (int q = 0; q < T::kQStage; ++q) {
      const uint32_t t0 = tr.now();
      named_sync(stats_barrier(q, w), kStatsThreads);
      tr.span(ATTNSIM_OP_WAIT, t0, tr.now(), -1, local, ATTNSIM_WAIT_STATS_BAR, 4 * q + w);
      RowStats st;
      st.sum = s.stats(q, 0)[row];
      st.max2 = s.stats(q, 1)[row];
      arrive(s.bar(kSmStatsEmpty, q));
      final_o<T>(p, s, tr, lanes, q, row, c, st, fs, local);
    }
  }
#endif
}

}  // namespace attnsim::sm100
