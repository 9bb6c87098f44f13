// The SM100 (Blackwell) FA4-style kernel's structure, written once: its compile-time knobs (as
// the fa4_sm100 schedule family resolves them, Fa4Schedule::real_kernel), the warp-to-role map,
// the mbarrier arrive counts, the named-barrier ids and the SMEM carve-up. The kernel
// (kernels/sm100), the kernel generator (sim/tools/kernelgen.cpp) and the resource test
// (tests/gpu/sm100_resources.cpp) read it. Warp roles, pipelines and counts follow FA4's forward
// kernel (Dao-AILab/flash-attention flash_attn/cute/flash_fwd_sm100.py, fa4-v4.0.0.beta27; FA4
// paper arXiv 2603.05451), as the simulator's fa4 family models them (sim/lower/fa4/pipelines.cpp).
// Plain C++ (constexpr), callable from device code when compiled by nvcc.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/tile_order.h"  // ATTNSIM_HD

namespace attnsim::sm100 {

/// The knobs one SM100 kernel is compiled with (the template parameters of Traits,
/// kernel_traits.cuh). Tiles are fixed at m_block = n_block = 128 (one softmax thread owns one
/// row of the 128 TMEM lanes). TMEM columns are fp32 columns of the 512 an SM has.
struct KernelKnobs {
  int head_dim = 128;      ///< 64 or 128 (head_dim_v = head_dim)
  int q_stage = 2;         ///< 128-row Q tiles per CTA, one softmax warpgroup each (1 or 2)
  int kv_stage = 3;        ///< depth of the one ring that K_j and V_j share
  int cta_group = 1;       ///< tcgen05.mma cta_group: 1, or 2 (a 2x1 cluster, M = 256; head_dim 128)
  int split_columns = 96;  ///< PV waits for the last split of P after this many P columns; 128 = no split
  int emu_freq = 0, emu_res = 0, emu_start_frg = 0;  ///< exp2 emulation (softmax_math.h); freq 0 = all MUFU
  int rescale_threshold_milli = 8000;  ///< conditional rescale threshold, log2 units x 1000
  bool conditional_rescale = true;     ///< false: O rescaled at every KV block after the first
  bool correction_warpgroup = true;    ///< false: the softmax warps rescale and finish O themselves
  int reg_softmax = 192, reg_correction = 80, reg_other = 48;  ///< setmaxnreg per thread
  bool exp_order_barrier = false;  ///< the two softmax warpgroups take turns for exp2
  int tmem_s0 = 0, tmem_s1 = 128, tmem_p0 = 64, tmem_p1 = 192, tmem_o0 = 256, tmem_o1 = 384;  ///< region starts
  int tmem_alloc = 512;  ///< columns tcgen05.alloc takes (a power of two, 32..512)

  bool operator==(const KernelKnobs&) const = default;
  /// "hd128 q2 kv3 cg1 splitP96 emu16/4/1 rescale>8.000 corrwg reg 192/72/56 tmem512".
  std::string describe() const {
    char split[32], rescale[32], b[256];
    if (split_columns < 128)
      std::snprintf(split, sizeof split, "splitP%d", split_columns);
    else
      std::snprintf(split, sizeof split, "nosplitP");
    if (conditional_rescale)
      std::snprintf(rescale, sizeof rescale, "rescale>%.3g", rescale_threshold_milli / 1000.0);
    else
      std::snprintf(rescale, sizeof rescale, "rescale-always");
    std::snprintf(b, sizeof b, "hd%d q%d kv%d cg%d %s emu%d/%d/%d %s%s%s reg %d/%d/%d tmem%d", head_dim, q_stage,
                  kv_stage, cta_group, split, emu_freq, emu_res, emu_start_frg, rescale,
                  correction_warpgroup ? " corrwg" : " nocorrwg", exp_order_barrier ? " exporder" : "", reg_softmax,
                  reg_correction, reg_other, tmem_alloc);
    return b;
  }
};

// ---- Tiles --------------------------------------------------------------------------------------
inline constexpr int kMBlock = 128;  ///< query rows per Q stage = TMEM lanes
inline constexpr int kNBlock = 128;  ///< keys per KV block
inline constexpr int kFragment = 32;  ///< softmax columns per fragment (one tcgen05.ld 32x32b.x32)

// ---- Warp roles (FA4: 16 warps, 512 threads) ----------------------------------------------------
/// What a warp of the SM100 kernel does.
enum class Role : uint8_t { Softmax, Correction, Mma, Epilogue, Load, Empty };
inline constexpr int kWarps = 16;
inline constexpr int kThreads = 32 * kWarps;
inline constexpr int kThreadsPerWarpgroup = 128;
inline constexpr int kFirstCorrectionWarp = 8, kMmaWarp = 12, kEpilogueWarp = 13, kLoadWarp = 14, kEmptyWarp = 15;

/// The role of warp `warp`: 0-3 softmax0, 4-7 softmax1, 8-11 correction, 12 MMA, 13 epilogue,
/// 14 load, 15 empty (FA4's layout; schedules/fa4_sm100.json declares the same ids).
ATTNSIM_HD constexpr Role warp_role(int warp) {
  return warp < kFirstCorrectionWarp ? Role::Softmax
         : warp < kMmaWarp           ? Role::Correction
         : warp == kMmaWarp          ? Role::Mma
         : warp == kEpilogueWarp     ? Role::Epilogue
         : warp == kLoadWarp         ? Role::Load
                                     : Role::Empty;
}
/// The role's name as the simulator's fa4 timelines print it ("softmax1", "mma").
inline std::string warp_role_name(int warp) {
  switch (warp_role(warp)) {
    case Role::Softmax: return warp < 4 ? "softmax0" : "softmax1";
    case Role::Correction: return "correction";
    case Role::Mma: return "mma";
    case Role::Epilogue: return "epilogue";
    case Role::Load: return "load";
    case Role::Empty: break;
  }
  return "empty";
}

// ---- Pipelines (mbarriers): arrivals per phase -------------------------------------------------
// Names and arrivers as in sim/lower/fa4/pipelines.cpp. Full sides of pipeline_q / pipeline_kv:
// the load warp's arrive.expect_tx plus the TMA bytes; their empty sides, pipeline_s_p_o.full
// and pipeline_o_acc.full: one tcgen05.commit of the MMA thread. With cta_group 2 the MMA thread
// of the leader CTA (cluster rank 0) issues for both CTAs: the barriers it waits on live in the
// leader and count both CTAs' arrivals (pipeline_s_p_o.empty, pipeline_p_lastsplit.full,
// pipeline_o_acc.empty; pipeline_q/kv.full count the leader's one arrive.expect_tx of both CTAs'
// bytes), and its commits are multicast to the same barrier in both CTAs.
inline constexpr int kTmaArrivals = 1, kCommitArrivals = 1;
/// pipeline_s_p_o.empty: every softmax thread of the stage (first split of P stored) plus every
/// correction thread (O rescaled), or the softmax threads alone without a correction warpgroup;
/// of both CTAs with cta_group 2.
ATTNSIM_HD constexpr int s_p_o_empty_arrivals(bool correction_wg, int cta_group = 1) {
  return kThreadsPerWarpgroup * (correction_wg ? 2 : 1) * cta_group;
}
/// pipeline_p_lastsplit.full: lane 0 of each softmax warp of the stage (of both CTAs with cta_group 2).
ATTNSIM_HD constexpr int lastsplit_arrivals(int cta_group = 1) { return 4 * cta_group; }
/// pipeline_o_acc.empty: the 128 threads that finish O (of both CTAs with cta_group 2).
ATTNSIM_HD constexpr int o_acc_empty_arrivals(int cta_group = 1) { return kThreadsPerWarpgroup * cta_group; }
/// pipeline_o_epi.full: the 128 threads that finish O (per CTA).
inline constexpr int kOOwnerArrivals = kThreadsPerWarpgroup;
/// pipeline_sm_stats.empty: the correction threads, once they have read the row stats.
inline constexpr int kSmStatsArrivals = kThreadsPerWarpgroup;
/// pipeline_o_epi.empty: every lane of the epilogue warp.
inline constexpr int kEpilogueArrivals = 32;

/// mbarrier indices in SMEM: the q_stage-deep pipelines (full, empty per stage), then pipeline_kv.
enum MbarrierId : int {
  kQFull, kQEmpty, kSpoFull, kSpoEmpty, kLastsplitFull, kOAccFull, kOAccEmpty, kSmStatsEmpty, kOEpiFull, kOEpiEmpty,
  kPerQStageBarriers
};
/// mbarriers per CTA: kPerQStageBarriers per Q stage, full and empty per KV stage.
ATTNSIM_HD constexpr int mbarrier_count(int q_stage, int kv_stage) { return kPerQStageBarriers * q_stage + 2 * kv_stage; }

// ---- Rows of a work tile ------------------------------------------------------------------------
/// First query row of Q stage q of CTA `rank` of its cluster, in work tile m-block `m`. A work
/// tile is q_stage x cta_group x 128 rows; each Q stage's MMA (M = 128 x cta_group) takes
/// cta_group consecutive 128-row tiles, rank 0's first (tcgen05.mma cta_group::2 reads A's rows
/// 0-127 from the leader CTA and 128-255 from its peer).
ATTNSIM_HD constexpr int q_row0(int m, int q, int rank, int q_stage, int cta_group) {
  return ((m * q_stage + q) * cta_group + rank) * kMBlock;
}

// ---- Named barriers (id 0 is __syncthreads) ----------------------------------------------------
/// softmax_stats: softmax warp w of stage s with correction warp w (64 threads), ids 1..8.
ATTNSIM_HD constexpr int stats_barrier(int stage, int warp_in_group) { return 1 + 4 * stage + warp_in_group; }
inline constexpr int kStatsThreads = 64;
/// exp_order: stage s waits on its id before its exp2 and the other stage arrives (256 threads), ids 9..10.
ATTNSIM_HD constexpr int order_barrier(int stage) { return 9 + stage; }
inline constexpr int kOrderThreads = 256;

// ---- Tracing -----------------------------------------------------------------------------------
/// The warps that record by default (`--trace-warps first`): the first warp of softmax0, softmax1
/// and correction, the MMA, epilogue and load warps (0, 4, 8, 12, 13, 14).
inline constexpr uint32_t kTraceWarpsFirst = 0x7111u;
/// Upper bound of the spans one warp records in a work tile of `n_blocks` KV blocks (at most 6
/// per block and Q stage, two stages, plus the tile's prologue and final O); the trace recorder
/// checks capacity against it once per tile.
ATTNSIM_HD constexpr uint32_t trace_spans_per_tile(int n_blocks) { return 16u * static_cast<uint32_t>(n_blocks) + 32u; }

// ---- Shared memory ------------------------------------------------------------------------------
/// The region the simulator reserves for mbarriers and small state (Fa4Schedule::resolve:
/// barrier_bytes): the mbarriers, the TMEM base address, the trace slots fit inside it.
inline constexpr int kBarrierRegionBytes = 1024;
inline constexpr int kTraceSlotBytes = 16;

/// Byte offsets of the SMEM regions from the (1024-B aligned) dynamic SMEM base, and the dynamic
/// SMEM a CTA requests. Every tile is stored as head_dim/64 chunks of [rows][64] bf16, 128B
/// swizzled (the TMA box and the UMMA canonical SW128 layout).
struct SmemLayout {
  int q = 0;          ///< Q tiles [q_stage][chunk][128][64]
  int o = 0;          ///< O staging for the TMA store [q_stage][chunk][128][64]
  int kv = 0;         ///< K/V ring [kv_stage]: K [chunk][128 / cta_group][64], V [chunk][128][64] (cta_group 1)
                      ///< or V's columns [64 rank, 64 rank + 64) as one [128][64] chunk (cta_group 2)
  int stats = 0;      ///< sScale [q_stage][2][128] fp32: acc_scale or row_sum, and row_max
  int barriers = 0;   ///< mbarrier_count x 8 B
  int tmem_addr = 0;  ///< the TMEM base address tcgen05.alloc writes
  int trace = 0;      ///< trace slots, kTraceSlotBytes per warp
  int bytes = 0;      ///< dynamic SMEM per CTA
  int q_tile = 0,
      kv_tile = 0;       ///< bytes of one Q (or O) tile and of one K/V stage (this CTA's half of B with cta_group 2)
  int barrier_used = 0;  ///< bytes of the barrier region in use (<= kBarrierRegionBytes)
};

/// The SMEM layout of a CTA with these knobs (bf16 tiles). No alignment slack: the dynamic SMEM
/// base is 1024-B aligned (the kernel checks it and traps otherwise), so the total equals the
/// simulator's Q + O + kv_stage stages + stats + 1024 B. With cta_group 2 a K/V stage holds this
/// CTA's half of the MMA's B operand (2-CTA tcgen05.mma splits N across the pair): 64 keys of K,
/// or half of V's head_dim columns.
ATTNSIM_HD constexpr SmemLayout smem_layout(int head_dim, int q_stage, int kv_stage, int cta_group = 1) {
  SmemLayout l{};
  l.q_tile = kMBlock * head_dim * 2;
  l.kv_tile = kNBlock / cta_group * head_dim * 2;
  l.q = 0;
  l.o = l.q + q_stage * l.q_tile;
  l.kv = l.o + q_stage * l.q_tile;
  l.stats = l.kv + kv_stage * l.kv_tile;
  l.barriers = l.stats + q_stage * 2 * kMBlock * 4;
  l.tmem_addr = l.barriers + mbarrier_count(q_stage, kv_stage) * 8;
  l.trace = l.tmem_addr + 16;
  l.barrier_used = l.trace + kTraceSlotBytes * kWarps - l.barriers;
  l.bytes = l.barriers + kBarrierRegionBytes;
  return l;
}

/// 32-bit registers a CTA holds after setmaxnreg: 128 threads x (softmax budget per softmax
/// warpgroup (two, even with q_stage 1: its warps exist and idle) + correction + other).
ATTNSIM_HD constexpr long long cta_registers(int reg_softmax, int reg_correction, int reg_other) {
  return static_cast<long long>(kThreadsPerWarpgroup) * (2LL * reg_softmax + reg_correction + reg_other);
}

}  // namespace attnsim::sm100
