// Compile-time shape of one SM90 attention kernel (the knobs a schedule resolves to; its roles,
// barriers and SMEM layout come from structure.h, shared with the simulator), plus the run-time
// parameters every warp role reads.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "common/tile_order.h"
#include "sm90/structure.h"
#include "sm90/trace_sampling.h"
#include "sm90_limits.h"  // generated: kSmemBytesPerBlock, kRegistersPerSm

namespace attnsim::sm90 {

/// Knobs of one compiled kernel. kMBlock = 64 rows per consumer warpgroup; kNBlock: keys per
/// KV block (wgmma N of S = Q K^T); kKvStage: K and V ring depth; kPingpong: the consumer
/// warpgroups take turns issuing GEMMs, round robin (named barriers); kOverlap: the PV wgmma of block j+1
/// is issued with the QK of block j, in one pingpong turn (both finish before block j's softmax);
/// kRegConsumer/kRegProducer: setmaxnreg budgets; kTrace: the warps selected at run time (Params::trace_warps) record
/// their spans; kDynamic: the dynamic LPT tile scheduler (take_next_ticket, the tile slot),
/// else tiles are c, c + grid, ...;
/// kOwnO: O is staged in a buffer of its own (Q is released after the tile's last QK);
/// kL2SectionMiB: the L2 budget of the longest-first tile orders' sections (0: one section);
/// kRescaleMilli: conditional O rescale threshold in log2 units x 1000, -1: rescale every block
/// (KernelKnobs::rescale_threshold_milli); kExp2EmuFreq/kExp2EmuRes: of every kExp2EmuFreq
/// score elements of a thread, the last kExp2EmuRes take the emulated exp2 (0: none;
/// KernelKnobs::exp2_emu_freq); kOInV: O is staged in the V ring (KernelKnobs::o_in_v_ring);
/// kTrimLast: a warpgroup takes the exponentials of its tile's last KV block on the first
/// n_block / 2 keys where it sees no key past them, and the two warpgroups swap rows in every
/// other tile (KernelKnobs::trim_last_block).
template <int kHeadDim_, int kMBlock_, int kNBlock_, int kKvStage_, bool kPingpong_, bool kOverlap_, int kRegConsumer_,
          int kRegProducer_, bool kTrace_, bool kDynamic_ = false, bool kOwnO_ = false, int kL2SectionMiB_ = 0,
          int kRescaleMilli_ = -1, int kExp2EmuFreq_ = 0, int kExp2EmuRes_ = 0, bool kOInV_ = false,
          bool kTrimLast_ = false>
struct Traits {
  static constexpr int kHeadDim = kHeadDim_, kMBlock = kMBlock_, kNBlock = kNBlock_, kKvStage = kKvStage_;
  static constexpr bool kPingpong = kPingpong_, kOverlap = kOverlap_, kTrace = kTrace_, kDynamic = kDynamic_;
  static constexpr bool kOwnO = kOwnO_, kOInV = kOInV_;
  /// The same instance untraced: the code a traced launch's CTAs that record nothing run
  /// (fa3_forward), the timed kernel's.
  using Plain =
      Traits<kHeadDim_, kMBlock_, kNBlock_, kKvStage_, kPingpong_, kOverlap_, kRegConsumer_, kRegProducer_, false,
             kDynamic_, kOwnO_, kL2SectionMiB_, kRescaleMilli_, kExp2EmuFreq_, kExp2EmuRes_, kOInV_, kTrimLast_>;
  /// The last KV block trimmed (KernelKnobs::trim_last_block: two consumer warpgroups, whose rows
  /// swap, and n_block % 32 == 0, so that a half block is a whole number of the PV's 16-key
  /// k-steps; elsewhere the knob changes nothing).
  static constexpr bool kTrimLast = kTrimLast_ && kNBlock_ % 32 == 0 && consumer_warpgroups(kMBlock_) == 2;
  /// Named-barrier ids from a fresh read of %tid.x at each turn and epilogue (barrier_group,
  /// device.cuh) rather than a register held across the KV loop: the traced head_dim 256
  /// instances, where ptxas spilled that register and reloaded it before the barriers. Measured
  /// on an H200 (2026-11-30, configs/validation/h200/fa3_sm90_barrier_ids_cudnn): their trace
  /// overhead 0.9 points lower on average; in every traced instance it cost the head_dim 64 ones
  /// 1.5 points and the head_dim 128 ones 0.4 on average (ptxas had spilled ids only in the
  /// static 192 x 128 pingpong kernels there), so not there: those kernels are as before.
  static constexpr bool kFreshBarrierIds = kTrace && kHeadDim == 256;
  /// Q is released after the tile's last QK (O is not staged in Q's buffer).
  static constexpr bool kQFreeAfterQk = kOwnO || kOInV;
  static constexpr int kL2SectionMiB = kL2SectionMiB_;
  static constexpr bool kConditionalRescale = kRescaleMilli_ >= 0;
  static constexpr float kRescaleThresholdLog2 = kRescaleMilli_ / 1000.0f;
  static constexpr int kExp2EmuFreq = kExp2EmuFreq_, kExp2EmuRes = kExp2EmuRes_;
  static constexpr int kRegConsumer = kRegConsumer_, kRegProducer = kRegProducer_;
  static constexpr int kConsumers = consumer_warpgroups(kMBlock);
  static constexpr int kWarps = cta_warps(kConsumers);
  static constexpr int kThreads = 32 * kWarps;
  // 128B swizzle: a TMA box row is at most 128 bytes, so tiles are stored as head_dim/64
  // column chunks of [rows][64] bf16, each chunk a run of 1024-byte swizzle atoms.
  static constexpr int kChunks = kHeadDim / 64;
  static constexpr SmemLayout kSmem =
      smem_layout(kMBlock, kNBlock, kHeadDim, kHeadDim, kKvStage, 2, kTrace, kDynamic, kOwnO, kOInV);
  static constexpr int kQBytes = kSmem.q_bytes, kKBytes = kSmem.k_bytes, kVBytes = kSmem.v_bytes;
  static constexpr int kQOff = kSmem.q, kOOff = kSmem.o, kKOff = kSmem.k, kVOff = kSmem.v, kBarOff = kSmem.barriers;
  static constexpr int kTileOff = kSmem.tile, kTraceOff = kSmem.trace, kSmemBytes = kSmem.bytes;
  static constexpr int kNumBars = mbarrier_count(kKvStage, kOInV);
  // Arrivals on the empty barriers: lane 0 of every consumer warp, after its own wgmma wait.
  static constexpr int kConsumerWarps = empty_arrivals(kConsumers);

  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head_dim 64, 128 or 256");
  static_assert(kMBlock % kRowsPerConsumer == 0 && kConsumers >= 1 && kConsumers <= 3, "m_block 64, 128 or 192");
  static_assert(kNBlock % 16 == 0 && kNBlock >= 16 && kNBlock <= 256, "n_block: multiple of 16 up to 256");
  static_assert(!(kOwnO && kOInV), "O is staged in its own buffer or in the V ring, not both");
  static_assert(!kOInV || o_fits_v_ring(kNBlock, kKvStage, kConsumers),
                "O in the V ring: a warpgroup's 64 rows need a V stage of at least 64 keys, one per warpgroup");
  static_assert(!kPingpong || kConsumers >= 2, "pingpong passes the GEMM turn between 2 or 3 consumer warpgroups");
  static_assert(kExp2EmuFreq >= 0 && kExp2EmuRes >= 0 && kExp2EmuRes <= kExp2EmuFreq &&
                    (kExp2EmuFreq > 0) == (kExp2EmuRes > 0),
                "exp2 emulation: 0 < res <= freq, or both 0");
  // Limits of the GPU the kernels are built for: generated by attnsim_kernelgen from configs/hw.
  static_assert(kSmemBytes <= kSmemBytesPerBlock, "SMEM per CTA over the GPU's limit (configs/hw)");
  static_assert(kRegConsumer % 8 == 0 && kRegProducer % 8 == 0, "setmaxnreg takes multiples of 8");
  static_assert(cta_registers(kConsumers, kRegConsumer, kRegProducer) <= kRegistersPerSm,
                "registers per CTA over the SM's register file (configs/hw)");
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
  int causal;   // bottom-right aligned: query row r sees keys <= r + seqlen_k - seqlen_q
  float scale;  // softmax scale (1/sqrt(head_dim))
  float scale_log2;
  int m_tiles, num_tiles;
  attnsim_divisor m_tiles_div, heads_div;  // m_tiles and heads as divisors (tile_at)
  int persistent;                // tile order: 1 m-block fastest (static persistent), 0 longest first (tile_order.h)
  int l2_section;                // longest-first order: (batch, head) pairs per L2 section (attnsim_l2_section_heads)
  attnsim_trace_record* trace;   // [CTA][warp][trace_cap] when tracing; t0/t1 raw 32-bit %clock
  attnsim_cta_clock* cta_clock;  // [CTA]
  uint32_t* trace_count;         // [CTA][warp]: records written (<= trace_cap)
  uint32_t* trace_spans;         // [CTA][warp]: spans run (more than written: dropped)
  uint32_t trace_cap;
  uint32_t trace_warps;   // bit w: lane 0 of warp w records
  int* tile_counter;      // kDynamic: [0] tiles taken past the first gridDim.x, [1] CTAs done; both 0 between launches
  TraceSampleRule trace_rule;  // traced: which work tiles are recorded (records_tile, cta_records; trace_sampling.h)
};

/// One work tile: a block of m_block query rows of one (batch, head). With the dynamic tile
/// scheduler the load warp passes it to the consumers through the tile slot (Smem::tile).
struct Tile {
  int index;  // linear index (kernels/common/tile_order.h); num_tiles or more: no more tiles
  int m, head, batch;
  int n_blocks;      // KV blocks it visits (causal: up to the diagonal)
  int first_masked;  // blocks [first_masked, n_blocks) need the mask; those below it none
};
static_assert(sizeof(Tile) <= kTileSlotBytes, "the tile slot holds a Tile (structure.h)");
static_assert(sizeof(Tile) == 6 * sizeof(int), "the tile slot's accessors move six ints");

// The tile slot is handed over by pipeline_q's mbarriers: written before the load warp's arrive
// (release) on q_full, read after the consumers' wait (acquire), rewritten after their arrivals on
// q_empty. compute-sanitizer racecheck does not take mbarrier arrive/wait as synchronization: a
// stand-alone repro (one warp writes a slot and arrives; two warps wait and read it) reports
// hazards with plain and with relaxed shared accesses and none with atomics (H100, 2026-11-24);
// the kernels' plain accesses gave 9 hazards per run. So the slot is written with shared-memory
// atomics, and lane 0 of each consumer warp reads it with atomics into its warp's own copy, which
// its lanes read between two __syncwarp. (Every lane taking the values from lane 0 by shuffles
// instead cost the dynamic hd64 kernel 20 more bytes of spills and 10% of its time at hd64 s2k.)

// The slot lives in dynamic shared memory but is reached through a generic pointer (Smem), so
// plain atomicExch/atomicAdd and volatile reads on it compile to generic atomics of GPU scope and
// .SYS volatile loads (ATOM.E.ADD.STRONG.GPU, LD.E.STRONG.SYS), each a round trip that the
// warp-aggregation ptxas adds around a generic atomic serialises: about 800 cycles per tile
// (the traced hd128 s512 b32 causal kernel, H100, 2026-11-24). The accessors below name the shared
// state space (ATOMS, LDS).

/// The shared-memory address of `p`, a generic pointer into shared memory.
__device__ __forceinline__ uint32_t shared_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Writes `c` into the tile slot (the load warp's lane 0).
__device__ __forceinline__ void publish_tile(Tile* slot, const Tile& c) {
  const uint32_t a = shared_addr(slot);
  const int v[6] = {c.index, c.m, c.head, c.batch, c.n_blocks, c.first_masked};
#pragma unroll
  for (int i = 0; i < 6; ++i) {
    [[maybe_unused]] int old;
    asm volatile("atom.shared.exch.b32 %0, [%1], %2;" : "=r"(old) : "r"(a + 4 * i), "r"(v[i]) : "memory");
  }
}

/// Copies the tile slot into `copy`, this warp's own (lane 0 reads with atomics); the whole warp
/// calls it, converged, and may read `copy` (read_tile_copy) until its next call.
__device__ __forceinline__ void copy_tile_slot(Tile* slot, Tile* copy, int lane) {
  __syncwarp();  // the lanes' reads of the previous copy come first
  if (lane == 0) {
    const uint32_t a = shared_addr(slot), c = shared_addr(copy);
    int v[6];
#pragma unroll
    for (int i = 0; i < 6; ++i)
      asm volatile("atom.shared.add.u32 %0, [%1], 0;" : "=r"(v[i]) : "r"(a + 4 * i) : "memory");
#pragma unroll
    for (int i = 0; i < 6; ++i) asm volatile("st.shared.u32 [%0], %1;" ::"r"(c + 4 * i), "r"(v[i]) : "memory");
  }
  __syncwarp();
}

/// Reads this warp's copy of the tile slot (copy_tile_slot), afresh at every call: volatile, so
/// that it is not kept in registers across the KV loop, where the accumulators need them.
__device__ __forceinline__ Tile read_tile_copy(const Tile* copy) {
  const uint32_t a = shared_addr(copy);
  int v[6];
#pragma unroll
  for (int i = 0; i < 6; ++i) asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v[i]) : "r"(a + 4 * i));
  return Tile{v[0], v[1], v[2], v[3], v[4], v[5]};
}

/// The dynamic tile scheduler's ticket for this CTA's next tile: the next tile is
/// gridDim.x + ticket (a CTA's first tile is blockIdx.x). Lane 0 of the load warp takes one per
/// tile, as it starts the loads of block kNextTileAtBlock of the tile (structure.h), and first
/// reads it once that tile's loads are issued, so the atomic's round trip (850-2200 cycles in H100
/// traces) is hidden under those loads' barrier waits.
/// An atomicInc whose limit no launch reaches (fewer than 2^31 tiles), not an atomicAdd: ptxas
/// aggregates an atomicAdd over the warp (VOTEU.ANY, FLO, POPC, ATOM.ADD, then a SHFL.IDX of the
/// result right behind it), so the warp waits for the round trip at once; it leaves ATOM.INC alone
/// (SASS of the sm_90a kernels, CUDA 13.0; kernels/sm90/README.md).
__device__ __forceinline__ unsigned take_next_ticket(const Params& p) {
  return atomicInc(reinterpret_cast<unsigned*>(&p.tile_counter[0]), 0x7fffffffu);
}
/// The counter returns to 0 for the next launch: the last CTA to find the tiles exhausted (`next`
/// from take_next_ticket) resets it (every CTA has then made its last increment), so back-to-back
/// launches on one stream need no memset; two launches sharing the counter must not run
/// concurrently.
__device__ __forceinline__ void release_counter(const Params& p, int next) {
  if (next >= p.num_tiles && atomicAdd(&p.tile_counter[1], 1) == static_cast<int>(gridDim.x) - 1) {
    atomicExch(&p.tile_counter[0], 0);
    atomicExch(&p.tile_counter[1], 0);
  }
}

/// Traced builds: which work tiles are recorded, about one in p.trace_rule.sample (1: all), by the
/// rule of trace_sampling.h. A recorded tile costs its warps their clock reads and stores; the
/// other tiles run the plain kernel's code (kernels/sm90/README.md, "Trace sampling").
/// records_tile: whether a CTA that records (cta_records) records tile `c`, its tile `local`
/// (0, 1, ...).
/// The decisions use multiply-highs, not integer divisions (a float reciprocal and about 20
/// dependent fix-ups each): every warp of a traced CTA decides before its first tile. (ncu
/// SourceCounters on an H200, 2026-11-29, the traced base hd64 kernel with nothing recorded, one
/// tile per CTA: the prologue's divisions drew 327 of the 1385 stall samples it had over the plain
/// kernel.)
template <bool kDynamic>
__device__ __forceinline__ bool records_tile(const Params& p, const Tile& c, int local) {
  if (kDynamic) return dynamic_records_tile(p.trace_rule, c.index, local);
  return static_records_tile(p.trace_rule, static_cast<int>(blockIdx.x), local);
}

/// Traced builds: whether this CTA records any tile (see records_tile). Only such a CTA writes
/// its records' counts and its end anchor: in a one-tile-per-CTA grid of short tiles the
/// end-of-CTA code alone cost 3% of the kernel's time (H100, hd64 s512 causal).
template <bool kDynamic>
__device__ __forceinline__ bool cta_records(const Params& p) {
  if (kDynamic) return dynamic_cta_records(p.trace_rule, static_cast<int>(blockIdx.x));
  return static_cta_records(p.trace_rule, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), p.num_tiles);
}

/// The tile with linear index t, in the simulator's order (kernels/common/tile_order.h).
__device__ __forceinline__ Tile tile_at(const Params& p, int t, int m_block, int n_block) {
  Tile c;
  c.index = t;
  int bh;  // tile counts fit an int (launch checks num_tiles)
  if (p.persistent) {  // attnsim_tile_coords' persistent order, its divisions by multiply-high
    bh = attnsim_divide(t, p.m_tiles_div);
    c.m = t - bh * p.m_tiles;
  } else {
    attnsim_tile_coords(t, false, p.m_tiles, p.batch * p.heads, p.l2_section, &c.m, &bh);
  }
  c.batch = attnsim_divide(bh, p.heads_div);
  c.head = bh - c.batch * p.heads;
  c.n_blocks = attnsim_kv_blocks(c.m * m_block, m_block, n_block, p.seqlen_q, p.seqlen_k, p.causal);
  c.first_masked = attnsim_first_masked_block(c.m * m_block, n_block, c.n_blocks, p.seqlen_q, p.seqlen_k, p.causal);
  return c;
}

}  // namespace attnsim::sm90
