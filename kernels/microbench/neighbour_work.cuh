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

/// softmax.cuh's scale_log2 at head_dim kD: 1 / sqrt(kD) x log2(e) (kD 64 or 128).
template <int kD>
constexpr float kSoftmaxScaleLog2 = (kD == 128 ? 0.0883883f : 0.125f) * 1.4426950f;

/// A softmax neighbour loop's fresh scores for iteration `it`: each score moved a little, so
/// that every iteration's row max and exponentials are computed anew.
template <int kN>
__device__ __forceinline__ void refresh_scores(float (&s)[kN / 2], int it) {
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) s[i] = fmaf(s[i], 0.999f, 0.25f * static_cast<float>(it & 3));
}

/// Feeds the packed P back into the scores (a dependence that keeps pack_p's work alive).
template <int kN>
__device__ __forceinline__ void feed_back_p(float (&s)[kN / 2], const uint32_t (&p)[kN / 4]) {
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) s[i] = __uint_as_float(p[i / 2] & 0x7FFF7FFFu) * 1e-30f + s[i] * 0.5f;
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
