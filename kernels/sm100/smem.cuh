// The SM100 kernel's view of its dynamic shared memory (offsets from structure.h smem_layout).
#pragma once

#include <cstdint>

#include "kernel_traits.cuh"

namespace attnsim::sm100 {

/// Pointers into one CTA's SMEM: the Q tiles, the O staging tiles, the K/V ring, sScale, the
/// mbarriers (per Q stage: structure.h MbarrierId order; then pipeline_kv full and empty), the
/// TMEM base address slot and the trace slots.
template <class T>
struct Smem {
  uint8_t* base;
  __device__ explicit Smem(uint8_t* b) : base(b) {}
  __device__ uint8_t* q(int s) const { return base + T::kSmem.q + s * T::kQBytes; }
  __device__ uint8_t* o(int s) const { return base + T::kSmem.o + s * T::kQBytes; }
  __device__ uint8_t* kv(int stage) const { return base + T::kSmem.kv + stage * T::kKvBytes; }
  /// sScale of Q stage s: [0][row] acc_scale (per block) or row_sum (final); [1][row] row max (final).
  __device__ float* stats(int s, int which) const {
    return reinterpret_cast<float*>(base + T::kSmem.stats) + (s * 2 + which) * kMBlock;
  }
  /// mbarrier `id` of Q stage s.
  __device__ uint64_t* bar(MbarrierId id, int s) const {
    return reinterpret_cast<uint64_t*>(base + T::kSmem.barriers) + s * kPerQStageBarriers + id;
  }
  __device__ uint64_t* kv_full(int stage) const {
    return reinterpret_cast<uint64_t*>(base + T::kSmem.barriers) + T::kQStage * kPerQStageBarriers + stage;
  }
  __device__ uint64_t* kv_empty(int stage) const { return kv_full(stage) + T::kKvStage; }
  __device__ uint32_t* tmem_base() const { return reinterpret_cast<uint32_t*>(base + T::kSmem.tmem_addr); }
  __device__ void* trace() const { return base + T::kSmem.trace; }
};

}  // namespace attnsim::sm100
