// mbarrier waits, named barriers and TMA copies through <cuda/ptx>, shared by the kernel families
// that use them (kernels/sm90, kernels/blackflash), and the mbarrier wait recorded as a WAIT span
// of the trace recorder. Moved here from kernels/sm90/device.cuh unchanged. CUDA only (nvcc),
// sm_90 and later (cp.async.bulk.tensor, mbarrier transaction counts).
#pragma once

#include <cuda/ptx>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/op_names.h"
#include "common/trace_record.h"
#include "common/trace_recorder.cuh"

namespace attnsim {

/// A wait that lasts this long is a bug (a broken pipeline), not a slow kernel: the kernel
/// traps, so the host sees an error instead of a hung GPU.
constexpr unsigned long long kHangNs = 4000000000ull;  // 4 s

/// Shared-memory address of a pointer into shared memory.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// One try_wait on the phase of `bar` with parity `parity`: acquire at CTA scope, or at cluster
/// scope where threads of another CTA of the cluster arrive on `bar` (their release is at cluster
/// scope; a CTA-scope acquire would not synchronise with it).
template <bool kClusterScope>
__device__ __forceinline__ bool try_wait_parity(uint64_t* bar, uint32_t parity) {
  if constexpr (kClusterScope)
    return cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cluster, bar, parity);
  else
    return cuda::ptx::mbarrier_try_wait_parity(bar, parity);
}

/// Blocks until the phase of `bar` with parity `parity` has completed. The timer is read only
/// after 4096 failed tries (one read costs ~26 cycles), so the fast path is the bare try_wait.
template <bool kClusterScope = false>
__device__ __forceinline__ void wait_parity(uint64_t* bar, uint32_t parity) {
  if (try_wait_parity<kClusterScope>(bar, parity)) return;
  unsigned long long t0 = 0;
  for (unsigned k = 1;; ++k) {
    if (try_wait_parity<kClusterScope>(bar, parity)) return;
    if ((k & 4095u) == 0) {
      const unsigned long long now = globaltimer();
      if (t0 == 0) t0 = now;
      else if (now - t0 > kHangNs) __trap();
    }
  }
}

/// mbarrier arrive (release, CTA scope) by the calling thread.
__device__ __forceinline__ void arrive(uint64_t* bar) { (void)cuda::ptx::mbarrier_arrive(bar); }

/// Named barrier `id` over `threads` threads: wait for all of them.
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
/// Named barrier `id` over `threads` threads: count this thread's arrival, do not wait.
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/// TMA: loads a 4D box (64 columns x rows x 1 x 1) at `coords` into `dst`, completing on `bar`.
__device__ __forceinline__ void tma_load(const void* tmap, void* dst, int c0, int c1, int c2, int c3, uint64_t* bar) {
  const int32_t coords[4] = {c0, c1, c2, c3};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, tmap, coords, bar);
}
/// TMA: fetches the tensor map `tmap` (a __grid_constant__ kernel parameter) into the TMA unit's
/// descriptor cache, so that the first load or store through it does not wait for the fetch
/// (PTX ISA, prefetch.tensormap; FlashAttention-3 does it at its producer's start).
__device__ __forceinline__ void tma_prefetch_descriptor(const void* tmap) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(tmap)) : "memory");
}
/// TMA: stores a 4D box from `src` to `coords` (rows outside the tensor are clipped).
__device__ __forceinline__ void tma_store(const void* tmap, const void* src, int c0, int c1, int c2, int c3) {
  const int32_t coords[4] = {c0, c1, c2, c3};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, tmap, coords, src);
}

/// Waits on an mbarrier phase, recording the wait as a WAIT span of `tr` (a TraceRecorder or
/// CursorRecorder, kernels/common/trace_recorder.cuh); returns when it ended. kClusterScope: see try_wait_parity.
template <bool kClusterScope = false, class Recorder>
__device__ __forceinline__ uint32_t traced_wait(Recorder& tr, uint64_t* bar, uint32_t parity, int wait_on, int stage,
                                                int block, int tile) {
  const uint32_t t0 = tr.now();
  wait_parity<kClusterScope>(bar, parity);
  const uint32_t t1 = tr.now();
  tr.span(ATTNSIM_OP_WAIT, t0, t1, block, tile, wait_on, stage, parity);
  return t1;
}

}  // namespace attnsim
