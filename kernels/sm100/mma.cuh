// MMA role (warp 12, lane 0 issues): every tcgen05.mma of the CTA, cta_group::1, M = 128; with
// cta_group 2, the leader CTA's lane 0 issues cta_group::2 MMAs with M = 256 for the pair (A: Q or
// P rows 0-127 from the leader, 128-255 from the peer; B: each CTA's half of K's keys or V's
// head_dim columns; D: each CTA's TMEM at the same columns) and the peer's MMA warp only holds
// TMEM.
// S_s = Q_s K^T into TMEM (hd/16 instructions, K = 16, A and B K-major from SMEM) and
// O_s += P_s V (8 instructions, A = P from TMEM, B = V MN-major from SMEM), in FA4's order:
// prologue QK_0, QK_1 of block n-1; per block j: PV_0(j), QK_0(j-1), PV_1(j), QK_1(j-1); each PV
// first acquires pipeline_s_p_o (first split of P stored, O rescaled), issues its first
// split_columns/16 K-steps, waits on pipeline_p_lastsplit, then issues the rest. tcgen05.commit
// signals S ready (pipeline_s_p_o.full), final O (pipeline_o_acc.full) and frees Q and K/V
// stages (multicast to both CTAs with cta_group 2). The waits of barriers the peer arrives on
// acquire at cluster scope. Mirrors sim/lower/fa4/mma.cpp.
#pragma once

#include "common/pipeline_state.h"
#include "device.cuh"
#include "kernel_traits.cuh"
#include "smem.cuh"

namespace attnsim::sm100 {

template <class T>
__device__ __forceinline__ void mma_warp(const Params& p, const Smem<T>& s, TraceRecorder<T::kTrace>& tr,
                                         uint32_t tmem) {
#if ATTNSIM_HAVE_TCGEN05
  constexpr int kCg = T::kCtaGroup;
  constexpr bool kCluster = kCg == 2;  // barriers the peer arrives on: acquire at cluster scope
  constexpr auto kGroup = kPtxCtaGroup<kCg>;
  constexpr uint32_t kIdescQk = instr_desc_bf16(kMBlock * kCg, kNBlock, false);
  constexpr uint32_t kIdescPv = instr_desc_bf16(kMBlock * kCg, T::kHeadDim, true);
  constexpr int kQkSteps = T::kHeadDim / 16, kPvSteps = kNBlock / 16, kSplitSteps = T::kSplit / 16;
  constexpr uint32_t kChunkBytes = kMBlock * 128;  // one [128][64] bf16 swizzle chunk of Q or V
  PipelineState kv_read = PipelineState::consumer_start(T::kKvStage);
  // Parities, one bit per Q stage: waits for softmax/correction arrivals start at phase 0; the
  // accumulators start free (producer side: every bit 1, the fresh barrier's previous phase).
  uint32_t spo_empty = 0, lastsplit = 0, o_acc_free = ~0u;
  int local = 0;
  // S_s = Q_s K^T of the K block in ring stage `ks`.
  auto qk = [&](int q, int ks) {
    const uint32_t qa = smem_u32(s.q(q)), ka = smem_u32(s.kv(ks));
#pragma unroll
    for (int k = 0; k < kQkSteps; ++k) {
      const uint32_t along = (k % 4) * 32;  // 16 bf16 = 32 B along K inside the swizzle row
      cuda::ptx::tcgen05_mma(cuda::ptx::kind_f16, kGroup, tmem + T::tmem_s(q),
                             smem_desc_sw128(qa + (k / 4) * kChunkBytes + along, 16, 1024),
                             smem_desc_sw128(ka + (k / 4) * T::kKChunkBytes + along, 16, 1024), kIdescQk, k > 0);
    }
    commit_to<kCg>(s.bar(kSpoFull, q));
  };
  // O_s += P_s V, K-steps [k0, k1) (16 keys each: 8 TMEM columns of bf16 pairs, 2048 B of V).
  auto pv = [&](int q, int vs, int k0, int k1, bool accumulate) {
    const uint32_t va = smem_u32(s.kv(vs));
#pragma unroll
    for (int k = k0; k < k1; ++k)
      cuda::ptx::tcgen05_mma_tmem_a(cuda::ptx::kind_f16, kGroup, tmem + T::tmem_o(q), tmem + T::tmem_p(q) + k * 8,
                                    smem_desc_sw128(va + k * 2048, kChunkBytes, 1024), kIdescPv, accumulate || k > 0);
  };
  if (cta_rank<T>() != 0) return;  // the leader issues for the pair
  for (long long t = first_tile(p.tiles, cluster_id<T>()); t < p.num_tiles;
       t = next_tile(p.tiles, t, cluster_count<T>()), ++local) {
    const TileCoord c = tile_at(p.tiles, t);
    const int n = c.n_blocks;
    tr.tile(p, s.trace(), n, trace_spans_per_tile);
    int k_stage = kv_read.index;
    traced_wait<kCluster>(tr, s.kv_full(k_stage), kv_read.phase, ATTNSIM_WAIT_KV_FULL, k_stage, n - 1, local);
    kv_read.advance();
    for (int q = 0; q < T::kQStage; ++q) {
      traced_wait<kCluster>(tr, s.bar(kQFull, q), local & 1, ATTNSIM_WAIT_Q_FULL, q, -1, local);
      cuda::ptx::tcgen05_fence_after_thread_sync();
      // start()/finish(): the span's start waits in its record, not in one of the 48-56 registers.
      tr.start();
      qk(q, k_stage);
      tr.finish(ATTNSIM_OP_MMA_QK, n - 1, local);
      if (n == 1) commit_to<kCg>(s.bar(kQEmpty, q));
    }
    commit_to<kCg>(s.kv_empty(k_stage));
    for (int i = 0; i < n; ++i) {
      const int j = n - 1 - i;
      const int v_stage = kv_read.index;
      traced_wait<kCluster>(tr, s.kv_full(v_stage), kv_read.phase, ATTNSIM_WAIT_KV_FULL, v_stage, j, local);
      kv_read.advance();
      for (int q = 0; q < T::kQStage; ++q) {
        if (i == 0) {  // O_s of the previous tile has been read out by its owner
          traced_wait<kCluster>(tr, s.bar(kOAccEmpty, q), (o_acc_free >> q) & 1, ATTNSIM_WAIT_OACC_EMPTY, q, j, local);
          o_acc_free ^= 1u << q;
        }
        traced_wait<kCluster>(tr, s.bar(kSpoEmpty, q), (spo_empty >> q) & 1, ATTNSIM_WAIT_SPO_EMPTY, q, j, local);
        spo_empty ^= 1u << q;
        cuda::ptx::tcgen05_fence_after_thread_sync();
        tr.start();
        pv(q, v_stage, 0, kSplitSteps, i > 0);
        tr.finish(ATTNSIM_OP_MMA_PV, j, local);
        traced_wait<kCluster>(tr, s.bar(kLastsplitFull, q), (lastsplit >> q) & 1, ATTNSIM_WAIT_LASTSPLIT_FULL, q, j,
                              local);
        lastsplit ^= 1u << q;
        cuda::ptx::tcgen05_fence_after_thread_sync();
        tr.start();
        pv(q, v_stage, kSplitSteps, kPvSteps, true);
        tr.finish(ATTNSIM_OP_MMA_PV, j, local);
        if (i + 1 < n) {
          if (q == 0) {  // K(j-1) follows V(j) in the ring
            k_stage = kv_read.index;
            traced_wait<kCluster>(tr, s.kv_full(k_stage), kv_read.phase, ATTNSIM_WAIT_KV_FULL, k_stage, j - 1, local);
            kv_read.advance();
          }
          tr.start();
          qk(q, k_stage);  // issued behind PV_s(j) in the same thread: it reads P_s before S_s is overwritten
          tr.finish(ATTNSIM_OP_MMA_QK, j - 1, local);
          if (i + 2 == n) commit_to<kCg>(s.bar(kQEmpty, q));  // the tile's last QK of this stage
        } else {
          commit_to<kCg>(s.bar(kOAccFull, q));  // the tile's last PV of this stage: final O accumulated
        }
      }
      commit_to<kCg>(s.kv_empty(v_stage));
      if (i + 1 < n) commit_to<kCg>(s.kv_empty(k_stage));
    }
  }
#endif
}

}  // namespace attnsim::sm100
