// The BlackFlash kernel's structure, written once: the simulator's blackflash family
// (sim/lower/blackflash: warps, SMEM, lowering), the measured-timeline mapping (sim/measure) and
// the kernel (kernels/blackflash) all read it. After the BlackFlash README (github.com/fms-zth/
// BlackFlash; docs/sources.md): Br = Bc = d = 64; 288 threads = 1 TMA producer warp (warp 0) + 8
// consumer warps in a 4 x 2 grid (consumer c = warp - 1: pair c / 2 owns 16 Q rows, half c % 2
// owns 32 of the 64 key columns of S and 32 of the 64 head-dim columns of O); a K/V ring of
// kv_stage stages on mbarriers; P written to SMEM (over the stage's K tile by default).
// Plain C++ (constexpr), callable from device code when compiled by nvcc.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/tile_order.h"  // ATTNSIM_HD

namespace attnsim::blackflash {

/// The knobs a kernel is compiled with (template parameters of BfTraits in blackflash_kernel.cuh),
/// as BlackFlashSchedule::real_kernel resolves them from schedules/blackflash.json.
struct KernelKnobs {
  int head_dim = 64;     ///< Br = Bc = d = 64 is the only shape (the seed's)
  int kv_stage = 2;      ///< K/V ring depth ("kv_stage"; the seed: 2, double buffering)
  bool p_over_k = true;  ///< P written over the stage's K tile ("p_over_k"; false: its own SMEM tile)
  int registers = 128;   ///< registers per thread, the kernel's __maxnreg__ ("registers_per_thread")

  bool operator==(const KernelKnobs&) const = default;
  /// "hd64 kv2 p_over_k reg 128".
  std::string describe() const {
    char b[96];
    std::snprintf(b, sizeof b, "hd%d kv%d %s reg %d", head_dim, kv_stage, p_over_k ? "p_over_k" : "p_own_tile",
                  registers);
    return b;
  }
};

inline constexpr int kTile = 64;          ///< Br = Bc = d
inline constexpr int kConsumerWarps = 8;  ///< 4 row pairs x 2 column halves
inline constexpr int kWarps = 1 + kConsumerWarps;
inline constexpr int kThreads = 32 * kWarps;
inline constexpr int kConsumerThreads = 32 * kConsumerWarps;  ///< bar.sync 1, 256 and the empty arrive count
inline constexpr int kLoadWarp = 0;
inline constexpr int kRowsPerPair = 16;  ///< mma.sync M
inline constexpr int kColsPerHalf = kTile / 2;
/// The named barrier of the 256 consumer threads (0 is __syncthreads).
inline constexpr int kConsumerBarrier = 1;
/// Bytes of one 64 x 64 bf16 tile (Q, K, V, P or the staged O).
inline constexpr int kTileBytes = kTile * kTile * 2;

/// The role of warp `warp`, as the simulator's timelines and the measured traces name it.
inline const char* warp_role(int warp) { return warp == kLoadWarp ? "load" : "consumer"; }

/// Upper bound of the spans one warp of the traced kernel records in a Q tile of `n_blocks` KV
/// blocks. Consumer: per block the full wait, mma_qk, softmax_max, two bar.sync waits,
/// softmax_exp, rescale_o, mma_pv; per tile the Q wait, final_o, the bar.sync wait and store_o.
/// Load warp: per block the empty wait and load_k; per tile load_q.
ATTNSIM_HD constexpr uint32_t trace_spans_per_tile(int n_blocks) { return 8u * static_cast<uint32_t>(n_blocks) + 4u; }
/// Bytes of one warp's trace slot in the traced kernel's SMEM (TraceRecorder::Slot).
inline constexpr int kTraceSlotBytes = 16;

/// Byte offsets in the kernel's dynamic SMEM (after aligning its base to 1024 B, which 128B
/// swizzle atoms need) and the bytes to request: Q (later the staged O), then per stage K and V,
/// P's own tile unless it goes over K, the mbarriers (q_full, kv_full[stages], kv_empty[stages]),
/// the row statistics exchanged between the two halves (max and sum, [2 halves][64 rows] fp32
/// each) and in traced kernels one trace slot per warp, 16-byte aligned (a Slot is stored as one
/// 16-byte vector: at kv_stage 2 the 40 bytes of mbarriers left it 8 bytes off, and the traced
/// kernel faulted with a misaligned address).
struct SmemLayout {
  int q = 0, kv = 0, p = 0, bars = 0, stats = 0, trace = 0;
  int used = 0;   ///< bytes from the aligned base
  int bytes = 0;  ///< dynamic SMEM to request: used + 1024 of alignment slack
  /// Offset of K (V: + kTileBytes) of stage `s`.
  ATTNSIM_HD constexpr int k(int s) const { return kv + 2 * kTileBytes * s; }
};

ATTNSIM_HD constexpr SmemLayout smem_layout(int kv_stage, bool p_over_k, bool trace = false) {
  SmemLayout l{};
  l.q = 0;
  l.kv = kTileBytes;
  l.p = l.kv + 2 * kTileBytes * kv_stage;  // (== K of the stage when p_over_k; unused then)
  l.bars = l.p + (p_over_k ? 0 : kTileBytes);
  l.stats = l.bars + 8 * (1 + 2 * kv_stage);
  const int stats_end = l.stats + 2 * 2 * kTile * 4;
  l.trace = (stats_end + kTraceSlotBytes - 1) / kTraceSlotBytes * kTraceSlotBytes;
  l.used = trace ? l.trace + kTraceSlotBytes * kWarps : stats_end;
  l.bytes = l.used + 1024;
  return l;
}

}  // namespace attnsim::blackflash
