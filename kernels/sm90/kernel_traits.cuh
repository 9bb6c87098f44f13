// Compile-time shape of one SM90 attention kernel (the knobs a schedule resolves to) and its
// shared-memory layout, plus the run-time parameters every warp role reads.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "common/tile_order.h"

namespace attnsim::sm90 {

/// Knobs of one compiled kernel. kMBlock = 64 rows per consumer warpgroup; kNBlock: keys per
/// KV block (wgmma N of S = Q K^T); kKvStage: K and V ring depth; kPingpong: the two consumer
/// warpgroups take turns issuing GEMMs (named barriers); kOverlap: the PV wgmma of block j+1
/// runs under the softmax of block j; kRegConsumer/kRegProducer: setmaxnreg budgets; kTrace:
/// the warps selected at run time (Params::trace_warps) record their spans.
template <int kHeadDim_, int kMBlock_, int kNBlock_, int kKvStage_, bool kPingpong_, bool kOverlap_, int kRegConsumer_,
          int kRegProducer_, bool kTrace_>
struct Traits {
  static constexpr int kHeadDim = kHeadDim_, kMBlock = kMBlock_, kNBlock = kNBlock_, kKvStage = kKvStage_;
  static constexpr bool kPingpong = kPingpong_, kOverlap = kOverlap_, kTrace = kTrace_;
  static constexpr int kRegConsumer = kRegConsumer_, kRegProducer = kRegProducer_;
  static constexpr int kConsumers = kMBlock / 64;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kWarps = kThreads / 32;
  // 128B swizzle: a TMA box row is at most 128 bytes, so tiles are stored as head_dim/64
  // column chunks of [rows][64] bf16, each chunk a run of 1024-byte swizzle atoms.
  static constexpr int kChunks = kHeadDim / 64;
  static constexpr int kQBytes = kMBlock * kHeadDim * 2, kKBytes = kNBlock * kHeadDim * 2, kVBytes = kKBytes;
  static constexpr int kQOff = 0, kKOff = kQBytes, kVOff = kKOff + kKvStage * kKBytes;
  static constexpr int kBarOff = kVOff + kKvStage * kVBytes;
  // mbarriers: q_full, q_empty, k_full[S], k_empty[S], v_full[S], v_empty[S].
  static constexpr int kNumBars = 2 + 4 * kKvStage;
  // Traced kernels: a 16-byte slot per warp for its trace buffer's bounds (TraceRecorder::Slot).
  static constexpr int kTraceOff = kBarOff + kNumBars * 8;
  static constexpr int kSmemBytes = kTraceOff + (kTrace ? 16 * kWarps : 0) + 1024;  // + slack to align to 1024 B
  // Arrivals on the empty barriers: lane 0 of every consumer warp, after its own wgmma wait.
  static constexpr int kConsumerWarps = 4 * kConsumers;
  // Named barriers (0 is __syncthreads): pingpong turn of warpgroup g = 1 + g, epilogue of g = 3 + g.
  static constexpr int kBarPingpong = 1, kBarEpilogue = 3;

  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head_dim 64, 128 or 256");
  static_assert(kMBlock % 64 == 0 && kConsumers >= 1 && kConsumers <= 3, "m_block 64, 128 or 192");
  static_assert(kNBlock % 16 == 0 && kNBlock >= 16 && kNBlock <= 256, "n_block: multiple of 16 up to 256");
  static_assert(!kPingpong || kConsumers == 2, "pingpong alternates two consumer warpgroups");
  static_assert(kSmemBytes <= 227 * 1024, "SMEM: at most 227 KB per CTA on SM90");
  static_assert(kRegConsumer % 8 == 0 && kRegProducer % 8 == 0, "setmaxnreg takes multiples of 8");
  static_assert(128 * (kConsumers * kRegConsumer + kRegProducer) <= 65536, "registers: 64K per SM");
};

/// Run-time parameters (one struct passed as a __grid_constant__ kernel parameter, so the TMA
/// descriptors stay in parameter space where cp.async.bulk.tensor can address them).
/// Layouts: Q, O (batch, seqlen_q, heads, head_dim); K, V (batch, seqlen_k, kv_heads, head_dim),
/// bf16, head_dim contiguous; LSE (batch, heads, seqlen_q) fp32, natural log.
struct Params {
  CUtensorMap tm_q, tm_k, tm_v, tm_o;  // boxes: Q 64 x m_block, K/V 64 x n_block, O 64 x 64
  float* lse;
  int batch, heads, group;  // group = heads / kv_heads (GQA)
  int seqlen_q, seqlen_k;
  int causal;      // bottom-right aligned: query row r sees keys <= r + seqlen_k - seqlen_q
  float scale;     // softmax scale (1/sqrt(head_dim))
  float scale_log2;
  int m_tiles, num_tiles;
  int persistent;  // 1: CTA c runs tiles c, c + grid, ...; m-block fastest. 0: one tile per CTA, longest first.
  attnsim_trace_record* trace;  // [CTA][warp][trace_cap] when tracing; t0/t1 raw 32-bit %clock
  attnsim_cta_clock* cta_clock;  // [CTA]
  uint32_t* trace_count;         // [CTA][warp]: records written (<= trace_cap)
  uint32_t* trace_spans;         // [CTA][warp]: spans run (more than written: dropped)
  uint32_t trace_cap;
  uint32_t trace_warps;          // bit w: lane 0 of warp w records
};

/// One work tile: a block of m_block query rows of one (batch, head).
struct Tile {
  int m, head, batch;
  int n_blocks;  // KV blocks it visits (causal: up to the diagonal)
};

/// The tile with linear index t, in the simulator's order (kernels/common/tile_order.h).
__device__ __forceinline__ Tile tile_at(const Params& p, int t, int m_block, int n_block) {
  Tile c;
  long long bh;
  attnsim_tile_coords(t, p.persistent, p.m_tiles, static_cast<long long>(p.batch) * p.heads, &c.m, &bh);
  c.head = static_cast<int>(bh % p.heads);
  c.batch = static_cast<int>(bh / p.heads);
  c.n_blocks = attnsim_kv_blocks(c.m * m_block, m_block, n_block, p.seqlen_q, p.seqlen_k, p.causal);
  return c;
}

}  // namespace attnsim::sm90
