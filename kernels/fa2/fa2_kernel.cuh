// The FA2-style forward kernel of the fa2_sm80 family (CuFlash-Attn's structure, structure.h):
// one CTA of 4 warps per (batch, head) walks every Q tile; per KV tile warps 0-1 copy K and V
// into SMEM with 16-byte vector loads, everyone meets at __syncthreads, each warp computes its
// Br/4 rows on the CUDA cores (S = Q K^T into the SMEM S tile, online softmax in the exp2
// domain, O += P V with O in registers), and everyone meets again before the tile is
// overwritten. Mirrors sim/lower/fa2/fa2_schedule.cpp op for op. bf16 in and out, fp32
// accumulation; any seqlen (tails masked), GQA/MQA, causal aligned bottom-right. The traced
// build (Fa2Traits kTrace) records each op as a span with the simulator's op names
// (kernels/common/trace_recorder.cuh); the plain build has no recording code.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "common/op_names.h"
#include "common/tile_order.h"
#include "common/trace_record.h"
#include "common/trace_recorder.cuh"
#include "fa2/structure.h"

namespace attnsim::fa2 {

/// Compile-time shape of one kernel: head_dim, Br, Bc (KernelKnobs as template parameters);
/// kTrace: the warps selected at run time (Fa2Params::trace_warps) record their spans, false:
/// no recording code at all.
template <int kHeadDim_, int kBr_, int kBc_, bool kTrace_ = false>
struct Fa2Traits {
  static constexpr int kHeadDim = kHeadDim_, kBr = kBr_, kBc = kBc_;
  static constexpr bool kTrace = kTrace_;
  static constexpr int kRows = rows_per_warp(kBr);               // rows per warp
  static constexpr int kScoresPerLane = kRows * kBc / 32;        // S elements each lane computes
  static constexpr int kOutPerLane = kHeadDim / 32;              // O columns each lane owns, per row
  static constexpr SmemLayout kSmem = smem_layout(kBr, kBc, kHeadDim, kHeadDim, 2, kTrace);
  static_assert(kRows == 16, "Br = 64: the softmax gives two lanes to each of a warp's 16 rows");
  static_assert(kHeadDim % 32 == 0 && kHeadDim <= 128, "head_dim: 32, 64, 96 or 128");
  static_assert((kRows * kBc) % 32 == 0 && kBc % 2 == 0, "Bc: even, and a warp's S tile a multiple of 32");
  static_assert(kSmem.trace % 16 == 0 && sizeof(typename TraceRecorder<true>::Slot) == kTraceSlotBytes,
                "trace slots: 16-byte aligned, kTraceSlotBytes each");
};

/// Run-time parameters. Layouts: Q, O (batch, seqlen_q, heads, head_dim); K, V (batch, seqlen_k,
/// kv_heads, head_dim), bf16, head_dim contiguous; LSE (batch, heads, seqlen_q) fp32, natural log.
struct Fa2Params {
  const __nv_bfloat16 *q, *k, *v;
  __nv_bfloat16* o;
  float* lse;
  int heads, group;  // group = heads / kv_heads
  int seqlen_q, seqlen_k;
  int causal;        // bottom-right aligned: query row r sees keys <= r + seqlen_k - seqlen_q
  float scale_log2;  // softmax scale x log2(e): scores are kept in the exp2 domain
  int m_tiles;
  // Traced kernels (Fa2Traits kTrace) only; as the SM90 kernel's Params (TraceBuffers).
  attnsim_trace_record* trace;  // [CTA][warp][trace_cap]; t0/t1 raw 32-bit %clock
  attnsim_cta_clock* cta_clock;  // [CTA]
  uint32_t* trace_count;         // [CTA][warp]: records written (<= trace_cap)
  uint32_t* trace_spans;         // [CTA][warp]: spans run (more than written: dropped)
  uint32_t trace_cap;
  uint32_t trace_warps;  // bit w: lane 0 of warp w records
};

/// Copies `rows` rows of head_dim bf16 (global row stride `stride` elements) into SMEM [rows][D]
/// with 16-byte loads, `threads` threads from `t`; rows at or past `valid` are zero-filled (their
/// scores are masked, and a zero V row keeps P V finite).
template <int D>
__device__ __forceinline__ void copy_rows(__nv_bfloat16* dst, const __nv_bfloat16* src, long long stride, int rows,
                                          int valid, int t, int threads) {
  constexpr int kVecPerRow = D / 8;
  for (int i = t; i < rows * kVecPerRow; i += threads) {
    const int r = i / kVecPerRow, c = (i % kVecPerRow) * 8;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (r < valid) x = *reinterpret_cast<const uint4*>(src + r * stride + c);
    *reinterpret_cast<uint4*>(dst + r * D + c) = x;
  }
}

/// The forward kernel. Traced build: lane 0 of the warps in p.trace_warps records, per Q tile m
/// (tile m) and KV block j (block j), the spans sim/lower/fa2 emits for the same warp: the Q copy
/// and each K+V copy as a wait on cp.async.wait_group (the simulator issues them as cp.async and
/// waits for them to land; here the warp copies synchronously, so the copy is the wait), each
/// __syncthreads as a wait on bar.syncthreads, mma_qk, softmax_max (mask and row max),
/// softmax_exp (exp2, row sum), rescale_o (from the second block on), mma_pv, and per Q tile
/// final_o (O / row_sum to bf16) and store_o (the O and LSE stores, issued).
template <class T>
__global__ void __launch_bounds__(kThreads) fa2_forward(const Fa2Params p) {
  constexpr int D = T::kHeadDim, BR = T::kBr, BC = T::kBc, R = T::kRows;
  extern __shared__ __align__(16) uint8_t smem[];
  __nv_bfloat16* sq = reinterpret_cast<__nv_bfloat16*>(smem + T::kSmem.q);
  __nv_bfloat16* sk = reinterpret_cast<__nv_bfloat16*>(smem + T::kSmem.k);
  __nv_bfloat16* sv = reinterpret_cast<__nv_bfloat16*>(smem + T::kSmem.v);
  float* ss = reinterpret_cast<float*>(smem + T::kSmem.s);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int head = blockIdx.x % p.heads, batch = blockIdx.x / p.heads, kv_head = head / p.group;
  const int kv_heads = p.heads / p.group;
  const long long q_stride = static_cast<long long>(p.heads) * D, kv_stride = static_cast<long long>(kv_heads) * D;
  const __nv_bfloat16* qg = p.q + (static_cast<long long>(batch) * p.seqlen_q * p.heads + head) * D;
  const __nv_bfloat16* kg = p.k + (static_cast<long long>(batch) * p.seqlen_k * kv_heads + kv_head) * D;
  const __nv_bfloat16* vg = p.v + (static_cast<long long>(batch) * p.seqlen_k * kv_heads + kv_head) * D;
  __nv_bfloat16* og = p.o + (static_cast<long long>(batch) * p.seqlen_q * p.heads + head) * D;
  float* lseg = p.lse + (static_cast<long long>(batch) * p.heads + head) * p.seqlen_q;
  float* sw = ss + warp * R * BC;  // this warp's rows of S / P
  // Softmax: lanes 2r and 2r+1 own row r of the warp, half of its columns each.
  const int my_row = lane / 2, half = lane % 2;

  // Traced build: the CTA's start anchor and this warp's recorder (its slot in SMEM), before a
  // barrier so that every span starts after clk0. The plain build compiles all of it out.
  TraceRecorder<T::kTrace> tr;
  [[maybe_unused]] void* slots = smem + T::kSmem.trace;
  if constexpr (T::kTrace) {
    if (threadIdx.x == 0) cta_clock_begin(&p.cta_clock[blockIdx.x]);
    tr.init(p, slots, warp, lane);
    __syncthreads();
  }

  for (int m = 0; m < p.m_tiles; ++m) {
    const int row0 = m * BR, warp_row0 = row0 + warp * R;
    if constexpr (T::kTrace)  // (n is computed below where the plain kernel always had it)
      tr.tile(p, slots, attnsim_kv_blocks(row0, BR, BC, p.seqlen_q, p.seqlen_k, p.causal), trace_spans_per_tile);
    // Each warp loads its own Q rows (only it reads them).
    const uint32_t q0 = tr.now();
    copy_rows<D>(sq + warp * R * D, qg + warp_row0 * q_stride, q_stride, R, p.seqlen_q - warp_row0, lane, 32);
    tr.span(ATTNSIM_OP_WAIT, q0, tr.now(), -1, m, ATTNSIM_WAIT_CP_ASYNC);
    float o[R][T::kOutPerLane];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int c = 0; c < T::kOutPerLane; ++c) o[r][c] = 0.f;
    float row_max = -INFINITY, row_sum = 0.f;  // of row my_row (both lanes of the pair hold it)
    const int n = attnsim_kv_blocks(row0, BR, BC, p.seqlen_q, p.seqlen_k, p.causal);
    const int last_key_of_row = warp_row0 + my_row + p.seqlen_k - p.seqlen_q;  // causal limit
    for (int j = 0; j < n; ++j) {
      const int key0 = j * BC;
      if (warp < kLoadWarps) {  // warps 0-1 bring K and V, half of each tile each
        const int t = threadIdx.x, threads = 32 * kLoadWarps;
        const uint32_t c0 = tr.now();
        copy_rows<D>(sk, kg + key0 * kv_stride, kv_stride, BC, p.seqlen_k - key0, t, threads);
        copy_rows<D>(sv, vg + key0 * kv_stride, kv_stride, BC, p.seqlen_k - key0, t, threads);
        tr.span(ATTNSIM_OP_WAIT, c0, tr.now(), j, m, ATTNSIM_WAIT_CP_ASYNC);
      }
      const uint32_t t0 = tr.now();
      __syncthreads();
      const uint32_t t1 = tr.now_after_barrier(slots);
      tr.span(ATTNSIM_OP_WAIT, t0, t1, j, m, ATTNSIM_WAIT_SYNCTHREADS);
      // S = Q K^T for this warp's rows, scaled into the exp2 domain.
#pragma unroll 4
      for (int i = 0; i < T::kScoresPerLane; ++i) {
        const int e = lane + 32 * i, r = e / BC, c = e % BC;
        const __nv_bfloat16* qr = sq + (warp * R + r) * D;
        const __nv_bfloat16* kc = sk + c * D;
        float acc = 0.f;
        // Each lane starts its dot product at a different column, so that the 32 lanes (32
        // different K rows, D * 2 bytes apart) hit 32 different SMEM banks.
#pragma unroll 8
        for (int dd = 0; dd < D; dd += 2) {
          const int d = (dd + 2 * lane) % D;
          const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(qr + d));
          const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(kc + d));
          acc = fmaf(a.x, b.x, acc);
          acc = fmaf(a.y, b.y, acc);
        }
        sw[r * BC + c] = acc * p.scale_log2;
      }
      __syncwarp();
      const uint32_t t2 = tr.now();
      tr.span(ATTNSIM_OP_MMA_QK, t1, t2, j, m);
      // Online softmax of row my_row: mask, row max, P = exp2(S - max), row sum, rescale factor.
      float* srow = sw + my_row * BC;
      float local_max = -INFINITY;
      // Columns walked from a per-row offset: the 16 row pairs of the warp read different banks.
      for (int cc = 0; cc < BC / 2; ++cc) {
        const int c = half * (BC / 2) + (cc + my_row) % (BC / 2);
        const int key = key0 + c;
        const bool masked = key >= p.seqlen_k || (p.causal && key > last_key_of_row);
        if (masked) srow[c] = -INFINITY;
        local_max = fmaxf(local_max, srow[c]);
      }
      const float new_max = fmaxf(row_max, fmaxf(local_max, __shfl_xor_sync(0xffffffffu, local_max, 1)));
      const float base = new_max == -INFINITY ? 0.f : new_max;  // a row that has seen no key yet
      const float alpha = exp2f(row_max - base);                // 0 on the first block (-inf - base)
      const uint32_t t3 = tr.now();
      tr.span(ATTNSIM_OP_SOFTMAX_MAX, t2, t3, j, m);
      float local_sum = 0.f;
      for (int cc = 0; cc < BC / 2; ++cc) {
        const int c = half * (BC / 2) + (cc + my_row) % (BC / 2);
        const float pv = exp2f(srow[c] - base);
        srow[c] = pv;
        local_sum += pv;
      }
      row_sum = row_sum * alpha + local_sum + __shfl_xor_sync(0xffffffffu, local_sum, 1);
      row_max = new_max;
      __syncwarp();
      const uint32_t t4 = tr.now();
      tr.span(ATTNSIM_OP_SOFTMAX_EXP, t3, t4, j, m);
      // O = O * alpha + P V: lane owns columns lane, lane + 32, ... of every row. The plain
      // kernel rescales each row just before its P V (the SASS it has always had); the traced
      // one rescales every row first, so that rescale_o and mma_pv are spans of their own.
      uint32_t t5 = t4;
      if constexpr (T::kTrace) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const float a = __shfl_sync(0xffffffffu, alpha, 2 * r);
#pragma unroll
          for (int c = 0; c < T::kOutPerLane; ++c) o[r][c] *= a;
        }
        t5 = tr.now();
        tr.span_if(j > 0, ATTNSIM_OP_RESCALE_O, t4, t5, j, m);  // the simulator has none on block 0
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float* prow = sw + r * BC;
        if constexpr (!T::kTrace) {
          const float a = __shfl_sync(0xffffffffu, alpha, 2 * r);
#pragma unroll
          for (int c = 0; c < T::kOutPerLane; ++c) o[r][c] *= a;
        }
        for (int k = 0; k < BC; ++k) {
          const float pk = prow[k];
#pragma unroll
          for (int c = 0; c < T::kOutPerLane; ++c)
            o[r][c] = fmaf(pk, __bfloat162float(sv[k * D + lane + 32 * c]), o[r][c]);
        }
      }
      const uint32_t t6 = tr.now();
      tr.span(ATTNSIM_OP_MMA_PV, t5, t6, j, m);
      __syncthreads();  // the K/V tiles may be overwritten
      tr.span(ATTNSIM_OP_WAIT, t6, tr.now_after_barrier(slots), j, m, ATTNSIM_WAIT_SYNCTHREADS);
    }
    // O / row_sum to bf16; LSE (natural log). A row that saw no key: O = 0, LSE = -inf.
    if constexpr (T::kTrace) {
      // Traced: final_o (O / row_sum to bf16 in registers), then store_o (the stores, issued).
      const uint32_t f0 = tr.now();
      __nv_bfloat16 ob[R][T::kOutPerLane];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float l = __shfl_sync(0xffffffffu, row_sum, 2 * r);
        const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
        for (int c = 0; c < T::kOutPerLane; ++c) ob[r][c] = __float2bfloat16(o[r][c] * inv);
      }
      const float lse = row_sum > 0.f ? (row_max + log2f(row_sum)) * 0.6931471805599453f : -INFINITY;
      const uint32_t f1 = tr.now();
      tr.span(ATTNSIM_OP_FINAL_O, f0, f1, -1, m);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int row = warp_row0 + r;
        if (row >= p.seqlen_q) continue;
#pragma unroll
        for (int c = 0; c < T::kOutPerLane; ++c) og[row * q_stride + lane + 32 * c] = ob[r][c];
      }
      if (half == 0 && warp_row0 + my_row < p.seqlen_q) lseg[warp_row0 + my_row] = lse;
      tr.span(ATTNSIM_OP_STORE_O, f1, tr.now(), -1, m);
    } else {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float l = __shfl_sync(0xffffffffu, row_sum, 2 * r);
        const int row = warp_row0 + r;
        if (row >= p.seqlen_q) continue;
        const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
        for (int c = 0; c < T::kOutPerLane; ++c)
          og[row * q_stride + lane + 32 * c] = __float2bfloat16(o[r][c] * inv);
      }
      if (half == 0 && warp_row0 + my_row < p.seqlen_q)
        lseg[warp_row0 + my_row] = row_sum > 0.f ? (row_max + log2f(row_sum)) * 0.6931471805599453f : -INFINITY;
    }
  }
  // Traced build: every warp's counts, then the CTA's end anchor.
  tr.close(p, slots, warp, lane);
  if constexpr (T::kTrace) {
    __syncthreads();
    if (threadIdx.x == 0) {
      cta_clock_end(&p.cta_clock[blockIdx.x]);
      p.cta_clock[blockIdx.x].tiles = p.m_tiles;
    }
  }
}

}  // namespace attnsim::fa2
