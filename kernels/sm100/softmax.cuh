// Softmax role (warpgroup q = warps 4q .. 4q+3 serves Q stage q; thread = one row = one TMEM
// lane): per KV block, wait for S (pipeline_s_p_o.full), tcgen05.ld the row in 32-column
// fragments, mask, row max, conditional rescale decision (online_softmax.h), acc_scale to sScale
// for the correction warpgroup (named barrier softmax_stats), then per fragment exp2 on MUFU or
// on the FMA pipe (ex2_emu_freq/res/start_frg), bf16 P stored over S's upper half with
// tcgen05.st; pipeline_s_p_o is released after the first split_columns of P, pipeline_p_lastsplit
// after the rest (both on the leader CTA's barriers with cta_group 2: its MMA thread issues the
// pair's PV); the row sum last. Mirrors sim/lower/fa4/softmax.cpp.
#pragma once

#include "correction.cuh"
#include "device.cuh"
#include "kernel_traits.cuh"
#include "online_softmax.h"
#include "smem.cuh"

namespace attnsim::sm100 {

template <class T>
__device__ __forceinline__ void softmax_warpgroup(const Params& p, const Smem<T>& s, TraceRecorder<T::kTrace>& tr,
                                                  uint32_t tmem, int q, int w, int lane) {
#if ATTNSIM_HAVE_TCGEN05
  const int row = 32 * w + lane;
  const uint32_t lanes = tmem_addr(tmem, 32 * w, 0);
  const float scale_log2 = p.scale_log2;
  uint32_t s_full = 0, stats_free = 1;  // parities: S ready (consumer), sScale free (producer)
  FinalOState fs;                        // without a correction warpgroup, these threads finish O
  bool first_exp = true;
  int local = 0;
  for (long long t = first_tile(p.tiles, cluster_id<T>()); t < p.num_tiles;
       t = next_tile(p.tiles, t, cluster_count<T>()), ++local) {
    const TileCoord c = tile_at(p.tiles, t);
    const bool last_tile = next_tile(p.tiles, t, cluster_count<T>()) >= p.num_tiles;
    tr.tile(p, s.trace(), c.n_blocks, trace_spans_per_tile);
    const int row_g = q_row0(c.m, q, cta_rank<T>(), T::kQStage, T::kCtaGroup) + row;
    const int diag = row_g + p.tiles.seqlen_k - p.tiles.seqlen_q;  // causal: keys <= diag are visible
    RowStats st;
    for (int i = 0; i < c.n_blocks; ++i) {
      const int j = c.n_blocks - 1 - i;
      traced_wait(tr, s.bar(kSpoFull, q), s_full, ATTNSIM_WAIT_SPO_FULL, q, j, local);
      s_full ^= 1;
      if constexpr (T::kCorrectionWg) {
        // sScale free (the correction warps read the last value): waited before S's 128 values
        // are in registers, where the wait loop's own registers would spill.
        traced_wait(tr, s.bar(kSmStatsEmpty, q), stats_free, ATTNSIM_WAIT_SMSTATS_EMPTY, q, j, local);
        stats_free ^= 1;
      }
      cuda::ptx::tcgen05_fence_after_thread_sync();
      uint32_t t0 = tr.now();
      uint32_t raw[kNBlock];
#pragma unroll
      for (int f = 0; f < T::kFragments; ++f)
        cuda::ptx::tcgen05_ld_32x32b(*reinterpret_cast<uint32_t(*)[32]>(&raw[32 * f]), lanes + T::tmem_s(q) + 32 * f);
      cuda::ptx::tcgen05_wait_ld();
      float x[kNBlock];
#pragma unroll
      for (int e = 0; e < kNBlock; ++e) x[e] = __uint_as_float(raw[e]);
      if (j >= c.first_masked) {  // blocks on the causal diagonal or over the seqlen_k tail
        // Column e of this block is key j * 128 + e: visible up to the last key of the row, one
        // scalar bound (per-element key tests kept 128 predicates live and spilled).
        const int last = (p.tiles.causal ? min(diag, p.tiles.seqlen_k - 1) : p.tiles.seqlen_k - 1) - j * kNBlock;
#pragma unroll
        for (int e = 0; e < kNBlock; ++e) x[e] = e > last ? -INFINITY : x[e];
      }
      float mx = x[0];
#pragma unroll
      for (int e = 1; e < kNBlock; ++e) mx = fmaxf(mx, x[e]);
      const float acc = update_row_max(st, mx * scale_log2, T::kConditional, T::kThresholdLog2);
      if constexpr (T::kCorrectionWg) {
        s.stats(q, 0)[row] = acc;
        named_arrive(stats_barrier(q, w), kStatsThreads);
      } else if (i > 0 && (!T::kConditional || __any_sync(0xffffffffu, acc != 1.0f))) {
        rescale_o<T>(lanes, q, acc);  // PV(j+1) has completed: S(j) is ready only after it
      }
      tr.span(ATTNSIM_OP_SOFTMAX_MAX, t0, tr.now(), j, local);
      if constexpr (T::kExpOrder) {
        if (!(q == 0 && first_exp)) {
          t0 = tr.now();
          named_sync(order_barrier(q), kOrderThreads);
          tr.span(ATTNSIM_OP_WAIT, t0, tr.now(), j, local, ATTNSIM_WAIT_ORDER_BAR, q);
        }
      }
      first_exp = false;
      t0 = tr.now();
      const float off = exp2_offset(st);
      float sum = 0.0f;
#pragma unroll
      for (int f = 0; f < T::kFragments; ++f) {
        uint32_t packed[16];
#pragma unroll
        for (int e = 0; e < 32; e += 2) {
          constexpr bool kAny = T::kEmuFreq > 0;  // the choice per element folds at compile time
          const bool emu = kAny && element_emulated(32 * f + e, T::kFragments, T::kEmuFreq, T::kEmuRes, T::kEmuStartFrg);
          const float p0 = exp2_either(fmaf(x[32 * f + e], scale_log2, -off), emu);
          const float p1 = exp2_either(fmaf(x[32 * f + e + 1], scale_log2, -off), emu);
          sum += p0 + p1;
          packed[e / 2] = pack_bf16(p0, p1);
        }
        cuda::ptx::tcgen05_st_32x32b(lanes + T::tmem_p(q) + 16 * f, packed);
        if (32 * (f + 1) == T::kSplit) {  // first split of P stored: the PV may start
          cuda::ptx::tcgen05_wait_st();
          cuda::ptx::tcgen05_fence_before_thread_sync();
          arrive_leader<T::kCtaGroup>(s.bar(kSpoEmpty, q));
        }
      }
      cuda::ptx::tcgen05_wait_st();
      cuda::ptx::tcgen05_fence_before_thread_sync();
      __syncwarp();
      if (lane == 0) arrive_leader<T::kCtaGroup>(s.bar(kLastsplitFull, q));
      tr.span(ATTNSIM_OP_SOFTMAX_EXP, t0, tr.now(), j, local);
      if constexpr (T::kExpOrder) {
        // Stage 1 skips its very last hand-over: stage 0 has no exp left to wait for it.
        if (!(q == 1 && last_tile && i + 1 == c.n_blocks)) named_arrive(order_barrier(1 - q), kOrderThreads);
      }
      t0 = tr.now();
      st.sum = st.sum * acc + sum;
      tr.span(ATTNSIM_OP_SOFTMAX_SUM, t0, tr.now(), j, local);
    }
    if constexpr (T::kCorrectionWg) {
      traced_wait(tr, s.bar(kSmStatsEmpty, q), stats_free, ATTNSIM_WAIT_SMSTATS_EMPTY, q, -1, local);
      stats_free ^= 1;
      s.stats(q, 0)[row] = st.sum;
      s.stats(q, 1)[row] = st.max2;
      named_arrive(stats_barrier(q, w), kStatsThreads);
    } else {
      final_o<T>(p, s, tr, lanes, q, row, c, st, fs, local);
    }
  }
#endif
}

}  // namespace attnsim::sm100
