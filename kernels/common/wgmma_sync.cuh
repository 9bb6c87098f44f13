// wgmma group synchronisation and shared-memory matrix descriptors (sm_90a), shared by the
// microbenchmarks (kernels/microbench) and the attention kernel (kernels/sm90). No cuda::ptx
// wrapper exists for these, hence inline PTX (PTX ISA, "wgmma.mma_async" and "Matrix Descriptor
// Format"). Other compilation passes (sm_100a, host) get empty bodies: ATTNSIM_HAVE_WGMMA is 0.
#pragma once
#include <cstdint>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTNSIM_HAVE_WGMMA 1
#else
#define ATTNSIM_HAVE_WGMMA 0
#endif

namespace attnsim::hopper {

/// wgmma.fence: earlier register writes (accumulators, A fragments) are visible to wgmma.
__device__ __forceinline__ void wgmma_fence() {
#if ATTNSIM_HAVE_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

/// wgmma.commit_group: closes the group of wgmmas issued since the last commit.
__device__ __forceinline__ void wgmma_commit() {
#if ATTNSIM_HAVE_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

/// wgmma.wait_group N: waits until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if ATTNSIM_HAVE_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

/// Compiler fence on registers that wgmma reads or writes asynchronously: keeps the compiler
/// from moving their uses across the wgmma region or reusing them before wgmma_wait.
template <class T, int K>
__device__ __forceinline__ void fence_regs(T (&r)[K]) {
#pragma unroll
  for (int i = 0; i < K; ++i) {
    if constexpr (sizeof(T) == 4 && __is_same(T, float))
      asm volatile("" : "+f"(r[i])::"memory");
    else
      asm volatile("" : "+r"(r[i])::"memory");
  }
}

/// Shared-memory matrix descriptor: start address, leading and stride byte offsets (each >> 4,
/// 14 bits) and the swizzle mode in bits 62-63 (0 none, 1 = 128B, 2 = 64B, 3 = 32B).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t swizzle) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32) | (static_cast<uint64_t>(swizzle) << 62);
}

}  // namespace attnsim::hopper
