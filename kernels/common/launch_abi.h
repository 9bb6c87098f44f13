// The launch ABI of every kernel family (kernels/sm90, kernels/fa2): the problem shape, the
// device tensors, the trace buffers and the launcher signature that the shared runner
// (kernels/sm90/runner.cu), `attnsim run` and the correctness test drive. Plain C++ (no CUDA
// headers), so the simulator's CLI (g++) can include it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "common/tile_order.h"
#include "common/trace_record.h"

namespace attnsim {

/// Attention shape. Q, O: (batch, seqlen_q, heads, head_dim); K, V: (batch, seqlen_k, kv_heads,
/// head_dim); bf16 with head_dim contiguous. LSE: (batch, heads, seqlen_q) fp32.
struct Shape {
  int batch = 1, heads = 1, kv_heads = 1, seqlen_q = 1, seqlen_k = 1, head_dim = 128;
  bool causal = false;  ///< bottom-right aligned: row r sees keys <= r + seqlen_k - seqlen_q
  /// FLOP as FlashAttention counts them: 4 * b * h * sq * sk * d, halved when causal.
  double flops() const {
    const double f = 4.0 * batch * heads * static_cast<double>(seqlen_q) * seqlen_k * head_dim;
    return causal ? f / 2 : f;
  }
  /// "b2 h16/16 sq8192 sk8192 d128 causal".
  std::string describe() const {
    char b[160];
    std::snprintf(b, sizeof b, "b%d h%d/%d sq%d sk%d d%d%s", batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim,
                  causal ? " causal" : "");
    return b;
  }
};

/// Device pointers of one problem's tensors.
struct Tensors {
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
};

/// Which warps of a CTA record spans (bit w: lane 0 of warp w): by default one per warpgroup,
/// the load warp (0) and the first warp of each consumer warpgroup (4, 8, 12).
constexpr uint32_t kTraceWarpsFirst = 0x1111u;
constexpr uint32_t kTraceWarpsAll = 0xffffffffu;
/// `attnsim validate`'s default TraceBuffers::sample: the SM90 kernels record one work tile in 32.
/// A recorded tile runs about 20% slower than a plain one at head_dim 128 (its clock reads pin
/// ptxas's schedule; H200 2026-11-29, kernels/sm90/README.md "Trace sampling"), and a static
/// grid's CTAs all wait for the slowest. Every fa3_sm90 variant over the 18 validation problems
/// (H200, 2026-11-29): one tile in 16 left 124 of 150 cases at <= 5% over the plain kernel (median
/// 3.0%), one in 32 136 of 150 (median 2.5%), with the same per-op means within 1%.
constexpr uint32_t kTraceSampleValidate = 32;
/// Device buffers a traced launch writes ([CTA][warp][cap] records, [CTA] clocks, [CTA][warp]
/// counts) and which warps record.
struct TraceBuffers {
  attnsim_trace_record* records = nullptr;
  attnsim_cta_clock* ctas = nullptr;
  uint32_t* counts = nullptr;  ///< records written
  uint32_t* spans = nullptr;   ///< spans run (> counts: the rest did not fit in cap)
  uint32_t cap = 0;
  uint32_t warps = kTraceWarpsFirst;
  /// Work tiles recorded: one in `sample` (the others run the plain kernel's code; which ones:
  /// kernels/sm90 records_tile and cta_records); 1 records every tile. Families without sampling (kernels/fa2,
  /// kernels/blackflash, kernels/sm100) record every tile whatever it says.
  uint32_t sample = 1;
};

/// Launch geometry of one kernel on one shape.
struct LaunchInfo {
  int grid = 0, threads = 0, warps = 0, smem_bytes = 0, num_tiles = 0;
};

/// The checks every launcher makes before it builds its parameters: the kernel was compiled for
/// `head_dim`, kv_heads divides heads, every extent is positive, and a traced kernel (`traced`)
/// gets trace buffers. Throws std::invalid_argument naming what does not fit.
inline void check_launch(const Shape& sh, int head_dim, bool traced, const TraceBuffers* trace) {
  if (sh.head_dim != head_dim)
    throw std::invalid_argument("kernel compiled for head_dim " + std::to_string(head_dim) + ", problem has " +
                                std::to_string(sh.head_dim));
  if (sh.kv_heads < 1 || sh.heads % sh.kv_heads) throw std::invalid_argument("kv_heads must divide heads");
  if (sh.batch < 1 || sh.heads < 1 || sh.seqlen_q < 1 || sh.seqlen_k < 1)
    throw std::invalid_argument("batch, heads and seqlens must be positive");
  if (traced && !trace) throw std::invalid_argument("traced kernel launched without trace buffers");
}

/// Copies the trace buffers into a family's kernel parameters `P` (its fields trace, cta_clock,
/// trace_count, trace_spans, trace_cap, trace_warps); nothing when `trace` is null. A family that
/// samples tiles sets its rule from TraceBuffers::sample itself (kernels/sm90/launch.cuh).
template <class P>
void set_trace_params(P& p, const TraceBuffers* trace) {
  if (!trace) return;
  p.trace = trace->records;
  p.cta_clock = trace->ctas;
  p.trace_count = trace->counts;
  p.trace_spans = trace->spans;
  p.trace_cap = trace->cap;
  p.trace_warps = trace->warps;
}

/// How a launch covers the work tiles: a schedule's tile_scheduler, resolved for one problem
/// (Schedule::real_kernel). The tile order itself is kernels/common/tile_order.h's.
enum class TileScheduler : int {
  /// One CTA per tile, longest first (m-blocks in reverse, heads fastest); the hardware's block
  /// scheduler hands the next CTA to an SM when one exits.
  Lpt = 0,
  /// One CTA per SM; CTA c runs tiles c, c + grid, ... with m-blocks fastest.
  StaticPersistent = 1,
  /// One CTA per SM; tiles in the Lpt order, each CTA taking the next one from a global counter
  /// when it has issued the loads of its current one (FlashAttention-3's dynamic persistent
  /// scheduler, arXiv:2407.08608 and hopper/tile_scheduler.hpp).
  DynamicLpt = 2,
};

/// "lpt", "static_persistent" or "dynamic_lpt": the schedule JSON's name of `s`.
inline const char* tile_scheduler_name(TileScheduler s) {
  switch (s) {
    case TileScheduler::Lpt: return "lpt";
    case TileScheduler::StaticPersistent: return "static_persistent";
    case TileScheduler::DynamicLpt: return "dynamic_lpt";
  }
  return "?";
}

/// How reports describe `s`: "LPT single-tile", "static persistent" or "dynamic LPT persistent".
inline const char* tile_scheduler_label(TileScheduler s) {
  switch (s) {
    case TileScheduler::Lpt: return "LPT single-tile";
    case TileScheduler::StaticPersistent: return "static persistent";
    case TileScheduler::DynamicLpt: return "dynamic LPT persistent";
  }
  return "?";
}

/// Launches one kernel asynchronously on `stream` (a cudaStream_t). Throws std::invalid_argument
/// when the shape does not fit the kernel (head_dim, GQA) or the kernel has no such tile
/// scheduler, and std::runtime_error on CUDA errors.
using LaunchFn = void (*)(const Shape&, const Tensors&, TileScheduler sched, const TraceBuffers* trace, void* stream,
                          LaunchInfo* info);

}  // namespace attnsim
