// The SM90 attention kernel's structure, written once. The simulator's fa3_sm90 family
// (sim/lower/fa3: resource checks, pipelines, lowering), the measured-timeline mapping
// (sim/measure) and the kernel itself (kernels/sm90: static_asserts, SMEM carve-up, mbarrier
// and named-barrier setup) all read it, so a predicted and a measured run agree on which warp
// does what, what fits in SMEM and how many arrivals complete each barrier phase.
// Plain C++ (constexpr), callable from device code when compiled by nvcc.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/pipeline_state.h"
#include "common/tile_order.h"  // ATTNSIM_HD

namespace attnsim::sm90 {

/// The knobs a kernel is compiled with (template parameters of Traits in kernel_traits.cuh).
/// A schedule JSON resolves to one of these per head_dim (Fa3Schedule::real_kernel).
struct KernelKnobs {
  int head_dim = 128;
  int m_block = 128;  ///< 64 query rows per consumer warpgroup
  int n_block = 128;  ///< keys per KV block
  int kv_stage = 2;   ///< K and V ring depth
  bool pingpong = true;
  bool overlap = true;  ///< intra-warpgroup overlap of softmax and the PV wgmma
  int reg_consumer = 240, reg_producer = 24;  ///< setmaxnreg budgets
  /// Dynamic LPT tile scheduler (persistent CTAs taking tiles from a global counter; the load warp
  /// passes each tile to the consumers through a tile slot). Without it the same kernel runs a
  /// static persistent or a one-tile-per-CTA grid, chosen at launch.
  bool dynamic = false;
  /// O is staged for its TMA store in a buffer of its own, so the next tile's Q loads as soon as
  /// the tile's last QK has read Q (under the last softmax, PV and epilogue); otherwise O is staged
  /// in Q's buffer and the next Q waits for the epilogue's store to have read it.
  bool own_o_buffer = false;
  /// Longest-first tile orders (Lpt, DynamicLpt) walk the (batch, head) pairs in sections whose
  /// K and V fit in this many MiB of L2, m-blocks in reverse within a section; 0: one section
  /// (heads fastest over all of them). kernels/common/tile_order.h.
  int l2_section_mib = 0;
  /// Conditional O rescale (FA4's, kernels/common/softmax_math.h needs_rescale): a warp keeps its
  /// rows' running max, and skips the O rescale, unless some row's max grew by more than this
  /// threshold in log2 units, x 1000 (8000: P stays <= 256). -1: every block rescales (FA3).
  int rescale_threshold_milli = -1;
  /// exp2 emulation (FA4's, kernels/common/softmax_math.h exp2_emulated): of every
  /// `exp2_emu_freq` score elements a consumer thread holds, the last `exp2_emu_res` take the
  /// polynomial exp2 on the FMA/ALU pipes instead of MUFU.EX2. 0: every exp2 on the MUFU (FA3).
  int exp2_emu_freq = 0, exp2_emu_res = 0;
  /// O is staged in the V ring (FA3's choice: its epilogue's O shares V's SMEM), consumer
  /// warpgroup g in the stage g after the next one to be read (o_stage_in_v_ring), once the
  /// consumers have released it; the load warp brings a tile's V in only after the previous
  /// tile's stores have read the ring (barrier_o). Q is released after the tile's last QK, as with
  /// an own buffer, without that buffer's SMEM. Excludes own_o_buffer.
  bool o_in_v_ring = false;
  /// A consumer warpgroup whose keys end in the first half of its tile's last KV block
  /// (last_block_half) takes that block's exponentials on those n_block / 2 keys only (the GEMMs,
  /// the mask and the row max stay whole; P of the other keys is 0), and the two consumer
  /// warpgroups swap their 64 rows of the tile in every other tile of a CTA, so that the
  /// warpgroup with the lighter tile changes from tile to tile: in pingpong the
  /// warpgroups take the same number of GEMM turns per tile, and the lighter one would otherwise
  /// wait on the other's at every tile. Needs n_block % 32 == 0 and two consumer warpgroups
  /// (else the kernel ignores it).
  bool trim_last_block = false;

  bool operator==(const KernelKnobs&) const = default;
  /// "hd128 m128 n128 kv2 pingpong overlap reg 240/24" (+ " dynamic", " own_o", " l2 32MiB",
  /// " rescale>8", " exp2 emu 1/8", " o_in_v", " trim_last").
  std::string describe() const {
    char b[192];
    std::snprintf(b, sizeof b, "hd%d m%d n%d kv%d%s%s reg %d/%d%s%s", head_dim, m_block, n_block, kv_stage,
                  pingpong ? " pingpong" : "", overlap ? " overlap" : "", reg_consumer, reg_producer,
                  dynamic ? " dynamic" : "", own_o_buffer ? " own_o" : "");
    std::string out = b;
    if (l2_section_mib > 0) out += " l2 " + std::to_string(l2_section_mib) + "MiB";
    if (rescale_threshold_milli >= 0) {
      std::snprintf(b, sizeof b, " rescale>%g", rescale_threshold_milli / 1000.0);
      out += b;
    }
    if (exp2_emu_freq > 0) {
      std::snprintf(b, sizeof b, " exp2 emu %d/%d", exp2_emu_res, exp2_emu_freq);
      out += b;
    }
    if (o_in_v_ring) out += " o_in_v";
    if (trim_last_block) out += " trim_last";
    return out;
  }
};

// ---- Warp roles -------------------------------------------------------------------------------
// Warpgroup 0 is the producer: its warp 0 issues the TMA loads ("load"); warps 1-3 give their
// registers back with setmaxnreg and idle ("idle"). Warpgroups 1..consumers are the consumers
// (wgmma + softmax on 64 query rows each). Without warp specialization (modelled only, no kernel)
// there is no producer warpgroup and warp 0 of consumer warpgroup 0 also issues the loads.

/// What a warp of the SM90 kernel does.
enum class Role : uint8_t { Load, Idle, Consumer };

inline constexpr int kWarpsPerWarpgroup = 4;
inline constexpr int kThreadsPerWarpgroup = 128;
inline constexpr int kRowsPerConsumer = 64;  ///< wgmma M: query rows per consumer warpgroup

/// Consumer warpgroups of a tile of `m_block` query rows.
ATTNSIM_HD constexpr int consumer_warpgroups(int m_block) { return m_block / kRowsPerConsumer; }
/// First consumer warp: after the producer warpgroup, or 0 without warp specialization.
ATTNSIM_HD constexpr int first_consumer_warp(bool warp_specialization = true) {
  return warp_specialization ? kWarpsPerWarpgroup : 0;
}
/// Warps per CTA.
ATTNSIM_HD constexpr int cta_warps(int consumers, bool warp_specialization = true) {
  return kWarpsPerWarpgroup * consumers + first_consumer_warp(warp_specialization);
}
/// The role of warp `warp`. Without warp specialization every warp is a consumer (warp 0 also loads).
ATTNSIM_HD constexpr Role warp_role(int warp, bool warp_specialization = true) {
  return !warp_specialization ? Role::Consumer
         : warp == 0          ? Role::Load
         : warp < first_consumer_warp(true) ? Role::Idle
                                            : Role::Consumer;
}
/// The warp that issues the TMA loads (warp 0 of the producer, or of consumer warpgroup 0).
inline constexpr int kLoadWarp = 0;
/// Consumer warpgroup (0-based) of consumer warp `warp`.
ATTNSIM_HD constexpr int consumer_group(int warp, bool warp_specialization = true) {
  return (warp - first_consumer_warp(warp_specialization)) / kWarpsPerWarpgroup;
}
/// The role's name as timelines, traces and reports print it: "load", "idle", "consumer<g>".
inline std::string warp_role_name(int warp, bool warp_specialization = true) {
  switch (warp_role(warp, warp_specialization)) {
    case Role::Load:
      return "load";
    case Role::Idle:
      return "idle";
    case Role::Consumer:
      break;
  }
  return "consumer" + std::to_string(consumer_group(warp, warp_specialization));
}

// ---- Pipelines (mbarrier rings) ---------------------------------------------------------------
// pipeline_q (1 stage), pipeline_k and pipeline_v (kv_stage stages each). The full side of each
// completes with one arrival (the load warp's mbarrier.arrive.expect_tx) plus the TMA's
// transaction bytes; the empty side with one arrival per consumer warp (lane 0, once the wgmma
// that read the stage has retired; for Q, once the tile's last QK has retired when O has a buffer
// of its own, else once the warp's epilogue has stored O from Q's buffer).

/// Arrivals per phase on a full barrier.
inline constexpr int kFullArrivals = 1;
/// Arrivals per phase on an empty barrier: every consumer warp.
ATTNSIM_HD constexpr int empty_arrivals(int consumers) { return kWarpsPerWarpgroup * consumers; }
/// The dynamic tile scheduler: the load warp takes the CTA's next tile from the global counter as
/// it starts the loads of block kNextTileAtBlock of its current tile (blocks are loaded n-1 .. 0; a
/// tile of fewer blocks takes it at its first), and waits for the atomic's result only once the
/// tile's last loads are issued: two blocks' loads later, under which the atomic returns (it took
/// the load warp 850-2200 cycles in traces of the H100; kernels/sm90/README.md, "When a CTA takes
/// its next tile", has why the atomic is an atomicInc). Taken as the tile started, a CTA
/// was bound to its next tile a whole tile ahead, which undid the balance of the longest-first
/// order wherever an L2 section's longest tiles follow the previous section's shortest (H100, hd128
/// s16k b1 causal: the CTAs ended 1615-1904 us; kernels/sm90/README.md, which has the A/B runs).
inline constexpr int kNextTileAtBlock = 2;
/// KV blocks of its current tile a CTA still has to compute (at most) when its load warp takes
/// the next tile: blocks kNextTileAtBlock .. 0, and the kv_stage loaded before them (in the rings).
ATTNSIM_HD constexpr int next_tile_lead_blocks(int kv_stage) { return kNextTileAtBlock + 1 + kv_stage; }
/// Stages of pipeline_q.
inline constexpr int kQStages = 1;
/// mbarriers in SMEM, in this order: q_full, q_empty, k_full[S], k_empty[S], v_full[S], v_empty[S],
/// and with O staged in the V ring barrier_o (KernelKnobs::o_in_v_ring).
ATTNSIM_HD constexpr int mbarrier_count(int kv_stage, bool o_in_v_ring = false) {
  return 2 * kQStages + 4 * kv_stage + (o_in_v_ring ? 1 : 0);
}

// ---- O staged in the V ring (KernelKnobs::o_in_v_ring) -----------------------------------------
// Consumer warpgroup g stages its 64 rows of O (head_dim_v / 64 chunks of [64][64] bf16, the O
// tensor map's boxes, back to back) in one V stage: the stage g after the next one the consumers
// will read. That is the ring's oldest stage for warpgroup 0, whose release by every warpgroup
// came a block or more earlier, so in pingpong the leading warpgroup does not wait for the
// other's last PV. Before writing, the warpgroup waits on the stage's empty barrier with the
// parity the load warp's next acquire of it would wait for; afterwards warp 0's lane 0 arrives on
// barrier_o once its TMA store has read the stage, and the load warp waits for every warpgroup's
// arrival before it loads the next tile's first V.

/// Arrivals per phase on barrier_o: one per consumer warpgroup (its storing thread).
ATTNSIM_HD constexpr int barrier_o_arrivals(int consumers) { return consumers; }
/// Whether O fits in the V ring that way: a warpgroup's 64 rows of O in one V stage (n_block >= 64
/// when head_dim_v = head_dim) and a stage for each consumer warpgroup.
ATTNSIM_HD constexpr bool o_fits_v_ring(int n_block, int kv_stage, int consumers) {
  return n_block >= kRowsPerConsumer && kv_stage >= consumers;
}
/// The V stage consumer warpgroup `group` stages O in (index), and the parity with which its empty
/// barrier completes once every consumer warp has released that stage's last use (phase): `group`
/// stages past `next_read`, the consumers' next read position in the V ring, in the load warp's
/// terms (its position too, one phase apart: it loads no V of the next tile before barrier_o).
ATTNSIM_HD PipelineState o_stage_in_v_ring(const PipelineState& next_read, int group) {
  PipelineState s{next_read.index, next_read.phase ^ 1u, next_read.stages};
  for (int g = 0; g < group; ++g) s.advance();
  return s;
}

// ---- Named barriers ---------------------------------------------------------------------------
// Id 0 is __syncthreads. Pingpong: consumer warpgroup g waits on 1 + g for its turn to issue its
// GEMMs (its own 128 threads + the 128 of the warpgroup handing over: g - 1, round robin over two
// or three warpgroups); epilogue: the 4 warps of warpgroup g meet on bar_epilogue(consumers) + g
// once O is staged in SMEM.
inline constexpr int kBarPingpong = 1;
/// First epilogue barrier id of a CTA of `consumers` consumer warpgroups: past the pingpong's
/// ids, two of them at least (so the two-warpgroup kernels keep ids 3 and 4).
ATTNSIM_HD constexpr int bar_epilogue(int consumers) { return kBarPingpong + (consumers < 2 ? 2 : consumers); }
inline constexpr int kPingpongThreads = 2 * kThreadsPerWarpgroup;
inline constexpr int kEpilogueThreads = kThreadsPerWarpgroup;
/// Without pingpong, with O staged in the V ring: a warpgroup's O of a tile goes into the V stage
/// that another warpgroup's O of an earlier tile went into (o_stage_in_v_ring moves with the
/// ring), ordered only by mbarriers and TMA (the stage's store read, barrier_o, its next loads and
/// releases), which compute-sanitizer's racecheck does not take as synchronization: it reported
/// each such pair of O stores as a write-write hazard (H200, 2026-11-29, kernels/sm90/README.md).
/// A chain of named barriers on the pingpong's ids (unused without pingpong) makes the order
/// explicit: warpgroup g arrives on bar_o_staged(g) once it has staged a tile's O, and warpgroup
/// g + 1 syncs on it before staging its own; warpgroup 0 syncs on the last one's before its next
/// tile's. A warpgroup that comes first out of turn waits there (traced at hd256: 330-1040 ns per
/// tile on average), and the kernels ran faster with it than without (kernels/sm90/README.md).
ATTNSIM_HD constexpr bool o_staged_barriers(bool o_in_v_ring, bool pingpong, int consumers) {
  return o_in_v_ring && !pingpong && consumers > 1;
}
/// The barrier id warpgroup `group` arrives on once it has staged a tile's O (o_staged_barriers);
/// kPingpongThreads count on it: the arriving warpgroup and the one syncing.
ATTNSIM_HD constexpr int bar_o_staged(int group) { return kBarPingpong + group; }
/// Whether warpgroup `group` syncs on a bar_o_staged before staging the O of its CTA's `tile`-th
/// tile (from 0): all but warpgroup 0's first tile.
ATTNSIM_HD constexpr bool o_staged_waits(int group, int tile) { return group > 0 || tile > 0; }
/// The warpgroup whose bar_o_staged warpgroup `group` syncs on (o_staged_waits) among `consumers`:
/// the one before it, round robin.
ATTNSIM_HD constexpr int o_staged_after(int group, int consumers) { return (group + consumers - 1) % consumers; }

// ---- The last KV block, trimmed ----------------------------------------------------------------

/// Whether rows 64 group .. 64 group + 63 of a tile at m-block `m` (m_block query rows, n_blocks
/// KV blocks of n_block keys) see no key past the middle of the tile's last KV block (the first
/// it computes): every key they may see lies before the seqlen_k tail and, causal, at or before
/// the last row's diagonal (bottom-right aligned: row r sees keys <= r + seqlen_k - seqlen_q).
/// Where it holds, KernelKnobs::trim_last_block takes that block's exponentials on its first
/// n_block / 2 keys only (the other half is masked out for all 64 rows; its P is 0). The half
/// must be a whole number of the PV's 16-key k-steps: n_block % 32 == 0, else false. In a causal
/// 128 x 128 tile of a square problem the first 64 rows hold it on the diagonal block, the last
/// 64 do not.
ATTNSIM_HD constexpr bool last_block_half(int m, int m_block, int n_block, int n_blocks, int group, int seqlen_q,
                                          int seqlen_k, bool causal) {
  if (n_block % 32 != 0 || n_blocks < 1) return false;
  const long long diagonal_end =  // one past the last key of the warpgroup's last row
      static_cast<long long>(m) * m_block + kRowsPerConsumer * (group + 1) + seqlen_k - seqlen_q;
  const long long end = causal && diagonal_end < seqlen_k ? diagonal_end : seqlen_k;
  return end <= static_cast<long long>(n_blocks - 1) * n_block + n_block / 2;
}

// ---- Shared memory ----------------------------------------------------------------------------

/// Bytes of the tile slot (kernels with the dynamic tile scheduler): the load warp writes the
/// tile whose Q it loads there (index, m-block, head, batch, KV blocks, first masked block:
/// sm90::Tile) before it arrives on pipeline_q.full, and the consumers read it after waiting on
/// it (the tiles are decided at run time; an index past the last tile means "no more").
inline constexpr int kTileSlotBytes = 32;
/// The dynamic scheduler's tile slots: the load warp's, then one copy per warp of the CTA (each
/// consumer warp's lane 0 copies the tile there for its lanes: kernels/sm90/kernel_traits.cuh).
ATTNSIM_HD constexpr int tile_slots_bytes(int consumers) { return kTileSlotBytes * (1 + cta_warps(consumers)); }
/// Bytes of one warp's trace slot (traced kernels: where its recording stands between the tiles it
/// records, TraceRecorder::Cursor).
inline constexpr int kTraceSlotBytes = 16;
/// Slack requested on top of the layout so that the base can be aligned up to 1024 B, as the
/// 128B-swizzle atoms that TMA writes require.
inline constexpr int kSmemAlignSlack = 1024;

/// Byte offsets of the SMEM regions from the 1024-B aligned base, and the dynamic SMEM a CTA
/// requests (the layout + kSmemAlignSlack).
struct SmemLayout {
  int q = 0;         ///< Q tile [m_block][head_dim]; stages O for the TMA store unless O has its own buffer
                     ///< or goes to the V ring
  int o = 0;         ///< own_o_buffer: O tile [m_block][head_dim_v] staged for the TMA store (else = q)
  int k = 0;         ///< K ring [kv_stage][n_block][head_dim]
  int v = 0;         ///< V ring [kv_stage][n_block][head_dim_v]
  int barriers = 0;  ///< mbarrier_count(kv_stage, o_in_v_ring) x 8 B, rounded up to 16 B
  int tile = 0;      ///< dynamic scheduler: tile_slots_bytes, the tile whose Q is in the Q buffer
  int trace = 0;     ///< traced kernels: kTraceSlotBytes per warp
  int bytes = 0;     ///< dynamic SMEM per CTA
  int q_bytes = 0, k_bytes = 0, v_bytes = 0;  ///< one Q tile, one K stage, one V stage
  int o_bytes = 0;                            ///< the own O buffer (0 without one)
};

/// The SMEM layout of a CTA: `elem_bytes` per element of Q, K, V; `trace`: traced kernel;
/// `dynamic`: the dynamic tile scheduler's kernel (with a tile slot); `own_o`: O staged in a
/// buffer of its own (KernelKnobs::own_o_buffer); `o_in_v_ring`: in the V ring (barrier_o added).
ATTNSIM_HD constexpr SmemLayout smem_layout(int m_block, int n_block, int head_dim, int head_dim_v, int kv_stage,
                                            int elem_bytes, bool trace, bool dynamic = false, bool own_o = false,
                                            bool o_in_v_ring = false) {
  SmemLayout l{};
  l.q_bytes = m_block * head_dim * elem_bytes;
  l.k_bytes = n_block * head_dim * elem_bytes;
  l.v_bytes = n_block * head_dim_v * elem_bytes;
  l.o_bytes = own_o ? m_block * head_dim_v * elem_bytes : 0;
  l.q = 0;
  l.o = own_o ? l.q + l.q_bytes : l.q;  // both multiples of 1024 B (swizzle atoms)
  l.k = l.q + l.q_bytes + l.o_bytes;
  l.v = l.k + kv_stage * l.k_bytes;
  l.barriers = l.v + kv_stage * l.v_bytes;
  // Rounded up to 16 B: the trace slots after them are read 16 B at a time (an odd count, with
  // barrier_o, left them 8 B off: misaligned-address faults in the traced kernels, H200 2026-11-28).
  l.tile = l.barriers + (mbarrier_count(kv_stage, o_in_v_ring) * 8 + 15) / 16 * 16;
  const int consumers = consumer_warpgroups(m_block);
  l.trace = l.tile + (dynamic ? tile_slots_bytes(consumers) : 0);
  l.bytes = l.trace + (trace ? kTraceSlotBytes * cta_warps(consumers) : 0) + kSmemAlignSlack;
  return l;
}

// ---- Registers --------------------------------------------------------------------------------

/// 32-bit registers a CTA holds after setmaxnreg: 128 threads per warpgroup at its budget.
ATTNSIM_HD constexpr long long cta_registers(int consumers, int reg_consumer, int reg_producer,
                                             bool warp_specialization = true) {
  return static_cast<long long>(kThreadsPerWarpgroup) *
         (static_cast<long long>(consumers) * reg_consumer + (warp_specialization ? reg_producer : 0));
}

}  // namespace attnsim::sm90
