// Views of the kernel's dynamic shared memory (layout: Traits::k*Off): the Q tile, the K and V
// rings (each tile as head_dim/64 chunks of [rows][64] bf16 in 128B-swizzled atoms, as TMA
// writes them), the pipeline mbarriers, the tile slot (dynamic scheduler) and, in traced kernels,
// the warps' trace slots.
#pragma once

#include <cstdint>

#include "common/trace_recorder.cuh"  // TraceRecorder::Cursor, the trace slots' layout
#include "kernel_traits.cuh"

namespace attnsim::sm90 {

// The layout's trace slots (structure.h) are the recorders' cursors.
static_assert(sizeof(TraceRecorder<true>::Cursor) == kTraceSlotBytes, "a trace slot holds one TraceRecorder::Cursor");

template <class T>
struct Smem {
  uint8_t* q;       // [chunk][m_block][64] bf16; stages O for the TMA store unless T::kOwnO
  uint8_t* o;       // O staged for the TMA store: its own buffer (T::kOwnO), else q (T::kOInV: unused, O goes
                    // to a V stage: o_stage_in_v_ring)
  uint8_t* k_ring;  // [stage][chunk][n_block][64]
  uint8_t* v_ring;  // [stage][chunk][n_block][64]
  uint64_t *q_full, *q_empty, *k_full, *k_empty, *v_full, *v_empty;
  uint64_t* barrier_o;  // T::kOInV: the consumers' O stores have read the V ring (structure.h)
  Tile* tile;   // dynamic scheduler: the tile whose Q the Q buffer holds (index past the last: no more),
                // then one copy per warp (warp_tile)
  void* trace;  // traced kernels: one TraceRecorder::Cursor per warp

  /// Carves the layout out of `raw` (aligned up to 1024 B, as 128B swizzle atoms require).
  __device__ explicit Smem(uint8_t* raw) {
    uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
    q = base + T::kQOff;
    o = base + T::kOOff;
    k_ring = base + T::kKOff;
    v_ring = base + T::kVOff;
    uint64_t* bars = reinterpret_cast<uint64_t*>(base + T::kBarOff);
    q_full = bars;
    q_empty = bars + 1;
    k_full = bars + 2;
    k_empty = k_full + T::kKvStage;
    v_full = k_empty + T::kKvStage;
    v_empty = v_full + T::kKvStage;
    barrier_o = v_empty + T::kKvStage;  // past the last barrier unless T::kOInV
    tile = reinterpret_cast<Tile*>(base + T::kTileOff);
    trace = base + T::kTraceOff;
  }
  /// Dynamic scheduler: warp `w`'s copy of the tile slot (copy_tile_slot).
  __device__ Tile* warp_tile(int w) const {
    return reinterpret_cast<Tile*>(reinterpret_cast<uint8_t*>(tile) + kTileSlotBytes * (1 + w));
  }
  /// Traced kernels: a shared word that no thread writes after the CTA's first barrier, for
  /// TraceRecorder::now_after_barrier: the Cursor of warp 1, an idle warp that never records (the
  /// recording warps rewrite theirs after each tile they record).
  __device__ const void* barrier_probe() const { return static_cast<const uint8_t*>(trace) + kTraceSlotBytes; }
  __device__ uint8_t* k(int stage) const { return k_ring + stage * T::kKBytes; }
  __device__ uint8_t* v(int stage) const { return v_ring + stage * T::kVBytes; }
};

}  // namespace attnsim::sm90
