// What the benchmarks that time one warp beside others on its SMSP share (softmax_block,
// mma_issue_beside, tma_issue): the clock they time spans with, the score and O fragments the
// kernel's softmax code starts from, and FFMA chains that take a chosen share of the issue slots.
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

/// FFMA in kChains independent chains (FFMA's dependent-issue latency is 4 cycles, so 1, 2 and 4
/// chains ask for 1/4, 1/2 and all of the SMSP's issue slots), kFfmaPerPoll between polls of
/// `stop`, until it is nonzero. Returns the polls (loop iterations); `sink` keeps the chains alive.
constexpr int kFfmaPerPoll = 128;
template <int kChains>
__device__ __forceinline__ long long ffma_chains_until(const volatile int* stop, float* sink) {
  float a[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i) a[i] = threadIdx.x + i;
  long long iters = 0;
  for (; *stop == 0; ++iters) {
#pragma unroll
    for (int k = 0; k < kFfmaPerPoll / kChains; ++k)
#pragma unroll
      for (int i = 0; i < kChains; ++i) a[i] = fmaf(a[i], 0.999f, 0.5f);
  }
  float x = 0;
#pragma unroll
  for (int i = 0; i < kChains; ++i) x += a[i];
  if (x == 1234567.0f) *sink = x;
  return iters;
}

}  // namespace mb
