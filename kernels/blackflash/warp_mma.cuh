// Warp-level tensor-core instructions of the BlackFlash kernel: ldmatrix (x4, x4.trans) and
// mma.sync.m16n8k16 (bf16 in, fp32 accumulate), bf16 packing and ex2. Which addresses the lanes
// give them is fragments.h's. CUDA only (nvcc); sm_80 and later.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "blackflash/fragments.h"

namespace attnsim::blackflash {

/// ldmatrix.sync.aligned.m8n8.x4.shared.b16: lanes 8i..8i+7 give the row addresses of matrix i;
/// each lane gets element pairs of the four matrices in r[0..3].
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
/// The same, each 8 x 8 matrix transposed (for a B operand stored k-major, as V is).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/// d += a b: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32. a: the 16 x 16 A fragment
/// (4 registers of bf16 pairs), b: the 16 x 8 B fragment (2), d: the 16 x 8 fp32 accumulator
/// (lane t holds rows t/4 and t/4 + 8, columns 2(t%4) and 2(t%4) + 1).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Two floats to a bf16x2 register (round to nearest): lo in the low half.
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

/// ex2.approx.ftz.f32 on the MUFU: 2^x (exp2(-inf) = 0).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace attnsim::blackflash
