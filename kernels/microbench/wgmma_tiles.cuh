// Shared by the microbenchmarks that run wgmma (mma.cu, latency.cu, softmax_block.cu, clock_mix.cu,
// mma_issue_beside.cu, dispatch_window.cu): operand tiles in
// shared memory, and a warpgroup that keeps its SMSPs' tensor cores busy while other warps are
// timed beside it.
#pragma once
#include <cstdint>
#include <cuda/ptx>

#include "common/wgmma_sync.cuh"
#include "microbench.cuh"
#include "wgmma_ops.cuh"

namespace mb {

/// Dynamic shared memory of the tiles: A 4 k-steps of 64x16, B 4 k-steps of up to 256x16 bf16,
/// plus slack to align the base to 1024 B (128B-swizzle atoms).
constexpr int kWgmmaTileSmem = 8192 + 32768 + 1024;

/// Random bf16 in [-1, 1) from a hash (upper half of the float's bits).
__device__ __forceinline__ uint16_t bf16_bits(uint32_t h) {
  float f = static_cast<float>(h & 0xFFFF) * (1.0f / 32768.0f) - 1.0f;
  return static_cast<uint16_t>(__float_as_uint(f) >> 16);
}

/// Two random bf16 in [-1, 1) packed in a b32 register (an A or B fragment element pair).
__device__ __forceinline__ uint32_t bf16x2(uint32_t seed) {
  return static_cast<uint32_t>(bf16_bits(hash32(seed))) |
         (static_cast<uint32_t>(bf16_bits(hash32(seed ^ 0x5bd1e995u))) << 16);
}

/// Writes word(i) into the i-th b32 of the A and B tiles at the 1024-aligned base of `raw`, makes
/// the writes visible to the async proxy the tensor core reads through, __syncthreads; returns
/// the base.
template <class Word>
__device__ __forceinline__ uint8_t* fill_wgmma_tiles_with(uint8_t* raw, Word word) {
  uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  uint32_t* w = reinterpret_cast<uint32_t*>(base);
  for (int i = threadIdx.x; i < (8192 + 32768) / 4; i += blockDim.x) w[i] = word(i);
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  __syncthreads();
  return base;
}

/// Fills A and B with bf16 in [1, 2) (7 hashed mantissa bits: non-zero, varied); see
/// fill_wgmma_tiles_with.
__device__ __forceinline__ uint8_t* fill_wgmma_tiles(uint8_t* raw) {
  return fill_wgmma_tiles_with(raw, [](int i) { return 0x3f803f80u ^ (hash32(i) & 0x007f007fu); });
}

/// Fills A and B with bf16 uniform in [-1, 1) (bf16x2, seeded per block): random signs, exponents
/// and mantissas, as attention's Q, K and V (normal random data) have. The tensor cores draw more
/// power on these than on [1, 2) with 7 mantissa bits: with all SMs at full wgmma duty the clock
/// read 1.72 GHz on the latter and 1.60 on data like this (H100, clock_under_mix).
__device__ __forceinline__ uint8_t* fill_wgmma_tiles_random(uint8_t* raw) {
  return fill_wgmma_tiles_with(raw, [](int i) { return bf16x2(i * 2654435761u + blockIdx.x); });
}

/// SMEM descriptors of the tiles' 4 k-steps, K-major, 128B swizzle: A (64x16) at base, B (Nx16)
/// at base + 8192; rows 128 B apart, 8-row atoms 1024 B apart, each k-step 32 B further inside
/// the atom.
__device__ __forceinline__ void kstep_descs(const uint8_t* base, uint64_t (&da)[4], uint64_t (&db)[4]) {
  const uint32_t a0 = smem_u32(base), b0 = a0 + 8192;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    da[k] = attnsim::hopper::smem_desc(a0 + 32 * k, 16, 1024, 1);
    db[k] = attnsim::hopper::smem_desc(b0 + 32 * k, 16, 1024, 1);
  }
}

/// RS A fragments for the 4 k-steps: bf16 in [1, 2) from a hash of (thread, k-step, register), as
/// fill_wgmma_tiles' tiles.
__device__ __forceinline__ void rs_a_fragments(uint32_t (&a)[4][4]) {
#pragma unroll
  for (int k = 0; k < 4; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) a[k][i] = 0x3f803f80u ^ (hash32(threadIdx.x * 16 + k * 4 + i) & 0x007f007fu);
}

/// One group of kWgmmas wgmma m64n{kN}k16 bf16 into `d` (kAcc = kN / 2 floats a thread), from
/// wgmma.fence to commit_group, k-steps cycling through the tiles' 4: kRs with A from `a`, else SS
/// on `da`; B on `db`. kN = 0: the fence and the commit only.
template <bool kRs, int kN, int kWgmmas, int kAcc>
__device__ __forceinline__ void issue_wgmma_group(float (&d)[kAcc], const uint32_t (&a)[4][4], const uint64_t (&da)[4],
                                                  const uint64_t (&db)[4]) {
  attnsim::hopper::wgmma_fence();
  if constexpr (kN > 0) {
#pragma unroll
    for (int k = 0; k < kWgmmas; ++k) {
      if constexpr (kRs)
        attnsim::hopper::Wgmma<kN>::rs(d, a[k & 3], db[k & 3], 1);
      else
        attnsim::hopper::Wgmma<kN>::ss(d, da[k & 3], db[k & 3], 1);
    }
  }
  attnsim::hopper::wgmma_commit();
}

/// True on every thread of warpgroup 0 when `v` is true on any of its 128 threads (bar.red.or on
/// named barrier 1, which only warpgroup 0 uses).
__device__ __forceinline__ bool warpgroup0_any(bool v) {
  uint32_t r;
  asm volatile(
      "{ .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n bar.red.or.pred q, 1, 128, p;\n selp.u32 %0, 1, 0, q; }"
      : "=r"(r)
      : "r"(static_cast<uint32_t>(v))
      : "memory");
  return r != 0;
}

/// Warpgroup 0 issues groups of 8 wgmma m64n128k16 bf16 (kRs: A from registers, else from SMEM)
/// into one register accumulator, wait_group 0 after each group, until `stop` is set (checked every
/// 4 groups). Its four
/// warps agree on when to stop (warpgroup0_any): a warp that stopped one group before the others
/// would leave them a wgmma without the whole warpgroup, an illegal instruction. `sink` only keeps
/// the accumulator alive. `gap_ns` > 0: each warp sleeps that long (nanosleep: it issues nothing)
/// after each group has completed, so that the tensor cores run only part of the time; `duty`
/// (optional): thread 0 adds the cycles from each group's first wgmma to its completion to
/// duty[0] and the cycles of the whole loop to duty[1].
template <bool kRs>
__device__ __forceinline__ void wgmma_until(const uint8_t* base, const volatile int& stop, float* sink,
                                            int gap_ns = 0, unsigned long long* duty = nullptr) {
  using attnsim::hopper::fence_regs;
  using attnsim::hopper::smem_desc;
  using attnsim::hopper::Wgmma;
  const uint32_t a0 = smem_u32(base), b0 = a0 + 8192;
  const uint64_t da = smem_desc(a0, 16, 1024, 1), db = smem_desc(b0, 16, 1024, 1);
  uint32_t a[4] = {0x3f803f80u, 0x3f803f80u ^ threadIdx.x, 0x3f803f80u, 0x3f803f81u};
  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;
  // Agreeing costs a barrier: once per 4 groups, so the tensor core stays about as busy as without.
  const long long loop0 = clock64();
  long long busy = 0;
  do {
#pragma unroll 1
    for (int g = 0; g < 4; ++g) {
      const long long g0 = duty ? clock64() : 0;
      fence_regs(d);
      attnsim::hopper::wgmma_fence();
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        if constexpr (kRs)
          Wgmma<128>::rs(d, a, db, 1);
        else
          Wgmma<128>::ss(d, da, db, 1);
      }
      attnsim::hopper::wgmma_commit();
      attnsim::hopper::wgmma_wait<0>();
      fence_regs(d);
      if (duty) busy += clock64() - g0;
      if (gap_ns > 0) __nanosleep(static_cast<unsigned>(gap_ns));
    }
  } while (!warpgroup0_any(stop != 0));
  if (duty && threadIdx.x == 0) {
    atomicAdd(&duty[0], static_cast<unsigned long long>(busy));
    atomicAdd(&duty[1], static_cast<unsigned long long>(clock64() - loop0));
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < 64; ++i) s += d[i];
  if (s == 1234567.0f) sink[threadIdx.x] = s;
}

}  // namespace mb
