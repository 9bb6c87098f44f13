// Device helpers of the SM90 attention kernel: mbarrier waits, named barriers, TMA through
// <cuda/ptx>, wgmma descriptors and fences, setmaxnreg, and the trace recorder.
#pragma once

#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/op_names.h"
#include "common/trace_record.h"

// wgmma and setmaxnreg exist only on sm_90a; other passes build empty bodies
// (ATTNSIM_HAVE_WGMMA = 0) and the runtime finds no image to run there.
#include "common/wgmma_sync.cuh"

#include "wgmma_ops.cuh"  // generated (kernels/common/gen_wgmma.cmake): Wgmma<N>::ss / rs / rs_tb

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

using hopper::Wgmma;
using hopper::wgmma_commit;
using hopper::wgmma_fence;
using hopper::wgmma_wait;

/// wgmma descriptor of a 128B-swizzled operand (the layout TMA writes with SWIZZLE_128B).
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return hopper::smem_desc(addr, lbo, sbo, 1);
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
#if ATTNSIM_HAVE_WGMMA
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
  /// keeps the read in program order with the barrier, TMA and wgmma asm around it.
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
        // One 16-byte store of the record's words (little-endian attnsim_trace_record layout),
        // built from values (a local struct read back as int4 would break strict aliasing).
        const int w0 = static_cast<int>((op & 0xff) | ((wait_on & 0xff) << 8) | ((stage & 0xff) << 16) |
                                        (static_cast<unsigned>(phase & 0xff) << 24));
        const int w1 = static_cast<int>((block & 0xffff) | (static_cast<unsigned>(tile & 0xffff) << 16));
        *reinterpret_cast<int4*>(out + n) =
            make_int4(w0, w1, static_cast<int>(static_cast<uint32_t>(t0 - clk0)),
                      static_cast<int>(static_cast<uint32_t>(t1 - clk0)));
      }
      ++n;
    }
  }
  /// Opens a span whose start stays in the record slot, not in a register: in the producer warp
  /// (24 registers) ptxas rematerialises a clock read kept in a register, re-reading the clock at
  /// the span's end (load_v spans came out zero-length). Close it with finish().
  __device__ __forceinline__ void start() {
    if constexpr (kOn) {
      const long long t = now();
      if (lane0 && n < cap) reinterpret_cast<uint32_t*>(out + n)[2] = static_cast<uint32_t>(t - clk0);
    }
  }
  /// Closes the span opened by start().
  __device__ __forceinline__ void finish(int op, int block, int tile) {
    if constexpr (kOn) {
      const long long t = now();
      if (lane0 && n < cap) {
        uint32_t* w = reinterpret_cast<uint32_t*>(out + n);
        w[0] = (op & 0xff) | (0xffu << 16) | (0xffu << 24);
        w[1] = (block & 0xffff) | (static_cast<uint32_t>(tile & 0xffff) << 16);
        w[3] = static_cast<uint32_t>(t - clk0);
      }
      ++n;
    }
  }
  /// Waits on an mbarrier phase, recording the wait as a WAIT span; returns when it ended.
  __device__ __forceinline__ long long wait(uint64_t* bar, uint32_t parity, int wait_on, int stage, int block,
                                            int tile) {
    const long long t0 = now();
    wait_parity(bar, parity);
    const long long t1 = now();
    span(ATTNSIM_OP_WAIT, t0, t1, block, tile, wait_on, stage, parity);
    return t1;
  }
};

}  // namespace attnsim::sm90
