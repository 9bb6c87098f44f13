// Device helpers of the SM90 attention kernel: mbarrier waits, named barriers, TMA through
// <cuda/ptx>, wgmma descriptors and fences, setmaxnreg, and the trace recorder.
#pragma once

#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/op_names.h"
#include "common/trace_record.h"

// wgmma and setmaxnreg exist only on sm_90a; other passes (e.g. sm_100a) build empty bodies
// and the host refuses to launch there (the CUDA runtime finds no sm_90a image to run).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTNSIM_SM90_WGMMA 1
#else
#define ATTNSIM_SM90_WGMMA 0
#endif

#include "wgmma_ops.cuh"  // generated (gen_wgmma.cmake): Wgmma<N>::ss / rs_tb

namespace attnsim::sm90 {

/// A wait that lasts this long is a bug (a broken pipeline), not a slow kernel: the kernel
/// traps, so the host sees an error instead of a hung GPU.
constexpr unsigned long long kHangNs = 4000000000ull;  // 4 s

/// %globaltimer: nanoseconds, common to all SMs (update step 32-96 ns on H100, measured).
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Shared-memory address of a pointer into shared memory.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Blocks until the phase of `bar` with parity `parity` has completed. The timer is read only
/// after 4096 failed tries (one read costs ~26 cycles), so the fast path is the bare try_wait.
__device__ __forceinline__ void wait_parity(uint64_t* bar, uint32_t parity) {
  if (cuda::ptx::mbarrier_try_wait_parity(bar, parity)) return;
  unsigned long long t0 = 0;
  for (unsigned k = 1;; ++k) {
    if (cuda::ptx::mbarrier_try_wait_parity(bar, parity)) return;
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
/// TMA: stores a 4D box from `src` to `coords` (rows outside the tensor are clipped).
__device__ __forceinline__ void tma_store(const void* tmap, const void* src, int c0, int c1, int c2, int c3) {
  const int32_t coords[4] = {c0, c1, c2, c3};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, tmap, coords, src);
}

/// wgmma shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address,
/// leading and stride byte offsets (>> 4), swizzle mode 1 = 128B in bits 62-63.
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

/// wgmma.fence: earlier register writes (accumulators, A fragments) are visible to wgmma.
__device__ __forceinline__ void wgmma_fence() {
#if ATTNSIM_SM90_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
/// wgmma.commit_group: closes the group of wgmmas issued since the last commit.
__device__ __forceinline__ void wgmma_commit() {
#if ATTNSIM_SM90_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
/// wgmma.wait_group N: at most N committed groups still in flight.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if ATTNSIM_SM90_WGMMA
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

/// setmaxnreg: the warpgroup's register budget (sm_90a; needs a register cap at kernel entry).
template <int N>
__device__ __forceinline__ void set_registers(bool increase) {
#if ATTNSIM_SM90_WGMMA
  if (increase)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
  else
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

/// Two floats to a bf16x2 register (round to nearest): lo in the low half.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

/// exp2 on the MUFU (ex2.approx.ftz.f32), as FA3 does.
__device__ __forceinline__ float exp2_mufu(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// Lane 0 of a warp records its spans (op, what it waited on, block, tile, cycles) when kOn.
/// Records past `cap` are counted, not written.
template <bool kOn>
struct TraceRecorder {
  attnsim_trace_record* out = nullptr;
  uint32_t n = 0, cap = 0;
  long long clk0 = 0;
  bool lane0 = false;

  /// Current time stamp (SM cycles), or 0 when tracing is compiled out. The "memory" clobber
  /// keeps the read in program order with the barrier, TMA and wgmma asm around it (clock64()
  /// alone may be moved across them, which made some spans zero-length).
  __device__ __forceinline__ long long now() const {
    if constexpr (kOn) {
      long long t;
      asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
      return t;
    } else {
      return 0;
    }
  }
  /// Appends one span [t0, t1).
  __device__ __forceinline__ void span(int op, long long t0, long long t1, int block = -1, int tile = -1,
                                       int wait_on = ATTNSIM_WAIT_NONE, int stage = 0xff, int phase = 0xff) {
    if constexpr (kOn) {
      if (lane0 && n < cap) {
        attnsim_trace_record r;
        r.op = static_cast<uint8_t>(op);
        r.wait_on = static_cast<uint8_t>(wait_on);
        r.stage = static_cast<uint8_t>(stage);
        r.phase = static_cast<uint8_t>(phase);
        r.block = static_cast<int16_t>(block);
        r.tile = static_cast<int16_t>(tile);
        r.t0 = static_cast<uint32_t>(t0 - clk0);
        r.t1 = static_cast<uint32_t>(t1 - clk0);
        *reinterpret_cast<int4*>(&out[n]) = *reinterpret_cast<const int4*>(&r);
      }
      ++n;
    }
  }
  /// Waits on an mbarrier phase, recording the wait as a WAIT span.
  __device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity, int wait_on, int stage, int block, int tile) {
    const long long t0 = now();
    wait_parity(bar, parity);
    span(ATTNSIM_OP_WAIT, t0, now(), block, tile, wait_on, stage, parity);
  }
};

}  // namespace attnsim::sm90
