// What the benchmarks that run the SM90 kernel's softmax code (softmax_block, mma_issue_beside)
// share: the clock they time spans with, and the score and O fragments they start from.
#pragma once

#include <cstdint>

#include "microbench.cuh"

namespace mb {

/// The low 32 bits of the SM cycle counter, as the traced kernel stamps its spans.
__device__ __forceinline__ uint32_t clock32() {
  uint32_t t;
  asm volatile("mov.u32 %0, %%clock;" : "=r"(t));
  return t;
}

/// A thread's fragments at n_block kN and head_dim kD: kN / 2 scores in [0, 8) from a hash of
/// (element, lane), and kD / 2 O elements of 1.
template <int kN, int kD>
__device__ __forceinline__ void softmax_operands(float (&s)[kN / 2], float (&o)[kD / 2], int lane) {
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) s[i] = static_cast<float>(hash32(i * 32 + lane) & 0xFFFF) * (1.0f / 8192.0f);
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) o[i] = 1.0f;
}

}  // namespace mb
