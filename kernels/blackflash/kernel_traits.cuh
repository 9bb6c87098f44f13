// Compile-time shape of one BlackFlash kernel (the knobs schedules/blackflash.json resolves to;
// warps, barriers and SMEM layout from structure.h, shared with the simulator), the run-time
// parameters, the views of its SMEM and the work tile of a CTA.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "blackflash/structure.h"
#include "common/mbarrier.cuh"
#include "common/tile_order.h"
#include "common/trace_record.h"

namespace attnsim::blackflash {

/// One compiled kernel: kKvStage K/V ring stages, P over the stage's K tile (kPOverK) or in its
/// own tile, kRegisters per thread (__maxnreg__), kTrace: the warps selected at run time
/// (Params::trace_warps) record their spans (false: no recording code at all).
template <int kKvStage_, bool kPOverK_, int kRegisters_, bool kTrace_>
struct BfTraits {
  static constexpr int kKvStage = kKvStage_, kRegisters = kRegisters_;
  static constexpr bool kPOverK = kPOverK_, kTrace = kTrace_;
  static constexpr int kHeadDim = kTile;
  static constexpr SmemLayout kSmem = smem_layout(kKvStage, kPOverK, kTrace);
  static_assert(kKvStage >= 1 && kKvStage <= 8, "kv_stage 1-8");
  static_assert(kRegisters % 8 == 0 && kRegisters >= 64 && kRegisters <= 255, "registers: multiple of 8, 64-255");
  // 227 KB: the dynamic SMEM an SM90 CTA may use (configs/hw/h100_sxm.json); SM120 has 99 KB,
  // which kv_stage <= 4 keeps to.
  static_assert(kSmem.bytes <= 227 * 1024, "SMEM per CTA over the SM90 limit");
};

/// Run-time parameters (a __grid_constant__ kernel parameter: the TMA descriptors stay in
/// parameter space). Layouts: Q, O (batch, seqlen_q, heads, 64); K, V (batch, seqlen_k,
/// kv_heads, 64), bf16, head_dim contiguous; LSE (batch, heads, seqlen_q) fp32, natural log.
struct Params {
  CUtensorMap tm_q, tm_k, tm_v;  // boxes of 64 columns x 64 rows, 128B swizzle, zero fill
  __nv_bfloat16* o;
  float* lse;
  int batch, heads, group;  // group = heads / kv_heads (GQA)
  int seqlen_q, seqlen_k;
  int causal;        // bottom-right aligned: row r sees keys <= r + seqlen_k - seqlen_q
  float scale_log2;  // softmax scale x log2(e): scores are kept in the exp2 domain
  int m_tiles;
  // Traced kernels only (TraceBuffers, kernels/common/launch_abi.h).
  attnsim_trace_record* trace;
  attnsim_cta_clock* cta_clock;
  uint32_t* trace_count;
  uint32_t* trace_spans;
  uint32_t trace_cap;
  uint32_t trace_warps;
};

/// Views of the dynamic SMEM (structure.h's layout from a 1024-byte aligned base).
template <class T>
struct Smem {
  uint8_t* base;
  uint64_t *q_full, *kv_full, *kv_empty;
  float *row_max, *row_sum;  // [2 halves][64 rows]: each half's partial row statistics
  void* trace;
  // The base is `raw` advanced to the next 1024-byte boundary of the shared window by pointer
  // arithmetic, not by rounding the address as an integer: a pointer rebuilt from an integer has
  // lost its shared-memory provenance, and ptxas then reads the row statistics with generic LD.E
  // (long-scoreboard stalls right after each bar.sync in ncu's PC sampling on an H200) instead of
  // LDS.
  __device__ explicit Smem(uint8_t* raw) : base(raw + ((1024u - (smem_u32(raw) & 1023u)) & 1023u)) {
    uint64_t* bars = reinterpret_cast<uint64_t*>(base + T::kSmem.bars);
    q_full = bars;
    kv_full = bars + 1;
    kv_empty = bars + 1 + T::kKvStage;
    row_max = reinterpret_cast<float*>(base + T::kSmem.stats);
    row_sum = row_max + 2 * kTile;
    trace = base + T::kSmem.trace;
  }
  __device__ uint8_t* q() const { return base + T::kSmem.q; }
  // (Offsets read as constants: a member call on T::kSmem would odr-use it in device code.)
  __device__ uint8_t* k(int stage) const { return base + T::kSmem.kv + 2 * kTileBytes * stage; }
  __device__ uint8_t* v(int stage) const { return k(stage) + kTileBytes; }
  /// Where P of a block in `stage` goes: over K (the seed's choice), or P's own tile.
  __device__ uint8_t* p(int stage) const { return T::kPOverK ? k(stage) : base + T::kSmem.p; }
};

/// The CTA's work tile: Q tile m of (batch, head), its KV blocks and the first that needs a mask.
struct Tile {
  int m, head, batch, n_blocks, first_masked;
};

/// The tile of CTA blockIdx.x: one tile per CTA, longest first (kernels/common/tile_order.h, the
/// order the simulator's tile scheduler places them in).
__device__ __forceinline__ Tile cta_tile(const Params& p) {
  Tile c;
  long long bh;
  attnsim_tile_coords<long long>(blockIdx.x, false, p.m_tiles, static_cast<long long>(p.batch) * p.heads, 0, &c.m, &bh);
  c.head = static_cast<int>(bh % p.heads);
  c.batch = static_cast<int>(bh / p.heads);
  c.n_blocks = attnsim_kv_blocks(c.m * kTile, kTile, kTile, p.seqlen_q, p.seqlen_k, p.causal);
  c.first_masked = attnsim_first_masked_block(c.m * kTile, kTile, c.n_blocks, p.seqlen_q, p.seqlen_k, p.causal);
  return c;
}

/// bar.sync 1, 256 among the consumer threads, recorded as a wait on the simulator's
/// "bar.consumers" named barrier; `smem_word`: a shared word no thread writes after the CTA's first
/// barrier (TraceRecorder::now_after_barrier reads it). The recorders' slots (Smem::trace) are
/// such words; the row maxima were not: a consumer writing the next block's maximum while another
/// still read it behind the same barrier was a hazard (compute-sanitizer racecheck, 5 hazards on
/// the traced kernel, H200, 2026-11-28).
template <bool kOn>
__device__ __forceinline__ uint32_t consumers_sync(TraceRecorder<kOn>& tr, int block, const void* smem_word) {
  const uint32_t t0 = tr.now();
  named_sync(kConsumerBarrier, kConsumerThreads);
  const uint32_t t1 = tr.now_after_barrier(smem_word);
  tr.span(ATTNSIM_OP_WAIT, t0, t1, block, 0, ATTNSIM_WAIT_BAR_CONSUMERS);
  return t1;
}

}  // namespace attnsim::blackflash
