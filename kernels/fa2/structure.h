// The FA2-style (CuFlash-Attn) kernel's structure, written once: the simulator's fa2_sm80 family
// (sim/lower/fa2: warps, SMEM check, lowering) and the kernel (kernels/fa2) both read it.
// 4 warps per CTA, no warp specialization: one CTA per (batch, head) walks every Q tile of Br
// rows; per KV tile of Bc keys, warps 0-1 copy K and V into SMEM, everyone meets at
// __syncthreads, each warp computes its Br/4 rows (S = Q K^T into the SMEM S tile, online
// softmax, O += P V on the CUDA cores), and everyone meets again before the tile is overwritten.
// Plain C++ (constexpr), callable from device code when compiled by nvcc.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/tile_order.h"  // ATTNSIM_HD

namespace attnsim::fa2 {

/// The knobs a kernel is compiled with (template parameters of Fa2Traits in fa2_kernel.cuh).
struct KernelKnobs {
  int head_dim = 64;
  int br = 64;  ///< query rows per Q tile (Br), a multiple of 4 warps x 16
  int bc = 64;  ///< keys per KV tile (Bc)

  bool operator==(const KernelKnobs&) const = default;
  /// "hd64 br64 bc64 fma".
  std::string describe() const {
    char b[96];
    std::snprintf(b, sizeof b, "hd%d br%d bc%d fma", head_dim, br, bc);
    return b;
  }
};

inline constexpr int kWarps = 4;  ///< every warp loads (0-1), computes and stores
inline constexpr int kThreads = 32 * kWarps;
inline constexpr int kLoadWarps = 2;  ///< warps 0-1 copy each K and V tile, half each
/// The role of every warp, as the simulator's timelines and the measured traces name it.
inline constexpr const char* kWarpRole = "worker";

/// Upper bound of the spans one warp of the traced kernel records in a Q tile of `n_blocks` KV
/// blocks: per block the K/V copy (warps 0-1), two __syncthreads waits, mma_qk, softmax_max,
/// softmax_exp, rescale_o and mma_pv; per tile the Q copy, final_o and store_o.
ATTNSIM_HD constexpr uint32_t trace_spans_per_tile(int n_blocks) {
  return 8u * static_cast<uint32_t>(n_blocks) + 3u;
}
/// Bytes of one warp's trace slot in the traced kernel's SMEM (its buffer's bounds,
/// TraceRecorder::Slot in kernels/common/trace_recorder.cuh).
inline constexpr int kTraceSlotBytes = 16;

/// Query rows of one warp.
ATTNSIM_HD constexpr int rows_per_warp(int br) { return br / kWarps; }

/// Byte offsets of the SMEM tiles and the dynamic SMEM a CTA uses: Q [Br][d], K and V
/// [Bc][max(d, dv)] in the input type, S (then P) [Br][Bc] fp32; in traced kernels then one
/// trace slot per warp.
struct SmemLayout {
  int q = 0, k = 0, v = 0, s = 0;
  int trace = 0;  ///< traced kernels: kTraceSlotBytes per warp (16-byte aligned when the tiles are)
  int bytes = 0;
};

/// The SMEM layout for `elem_bytes` per element of Q, K, V; `trace`: the traced kernel's.
ATTNSIM_HD constexpr SmemLayout smem_layout(int br, int bc, int head_dim, int head_dim_v, int elem_bytes,
                                           bool trace = false) {
  SmemLayout l{};
  const int kv_cols = head_dim > head_dim_v ? head_dim : head_dim_v;
  l.q = 0;
  l.k = l.q + br * head_dim * elem_bytes;
  l.v = l.k + bc * kv_cols * elem_bytes;
  l.s = l.v + bc * kv_cols * elem_bytes;
  l.trace = l.s + br * bc * 4;
  l.bytes = l.trace + (trace ? kTraceSlotBytes * kWarps : 0);
  return l;
}

}  // namespace attnsim::fa2
