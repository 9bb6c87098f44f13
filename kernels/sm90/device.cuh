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
using hopper::fence_regs;
using hopper::wgmma_wait;

/// wgmma descriptor of a 128B-swizzled operand (the layout TMA writes with SWIZZLE_128B).
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return hopper::smem_desc(addr, lbo, sbo, 1);
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

/// Upper bound of the spans one warp records in a work tile of `n_blocks` KV blocks (consumer:
/// at most 11 per block plus Q wait, epilogue and the overlap prologue; producer: 2 + 4 per block).
__host__ __device__ constexpr uint32_t trace_spans_per_tile(int n_blocks) {
  return 12u * static_cast<uint32_t>(n_blocks) + 16u;
}

/// Records the spans of one warp (kernels/common/trace_record.h) when kOn; compiled out otherwise.
/// Built to cost the warps it times as little as possible (issue 9: the previous recorder, lane 0
/// of every warp storing each span with a bounds check and 64-bit stamp arithmetic, added 22-33%):
/// - only lane 0 of the warps selected by Params::trace_warps writes (by default the load warp
///   and the first warp of each consumer warpgroup). The other warps run the same instructions
///   with the stores predicated off: a warpgroup's four warps must execute the same wgmma code,
///   and the slowest of them sets its pace anyway;
/// - a span is one predicated 16-byte store at a constant offset from a pointer that advances by
///   one record per span, so the compiler folds the offsets and moves the pointer once per loop
///   iteration; capacity is checked once per work tile (tile()), against trace_spans_per_tile,
///   never per span;
/// - registers: the pointer and a predicate word; the buffer's bounds sit in shared memory
///   (Slot), read once per tile. The consumer warps use about 230 of their 240 registers, and a
///   spill goes to local memory, which lives in L2 when the CTA takes nearly all of the SM's
///   shared memory (measured: spills of the epilogue's addresses cost 5 us per tile);
/// - stamps are the raw 32-bit %clock (the low half of %clock64): no per-span arithmetic and one
///   register per live stamp. The host subtracts the CTA's clk0 (sm90::trace_kernel).
/// Records of a tile that would not fit are not written, nor those of any later tile; spans are
/// still counted (the host reports them as dropped).
template <bool kOn>
struct TraceRecorder {
  attnsim_trace_record* ptr = nullptr;  ///< this warp's next record
  uint32_t on = 0;  ///< 1: this thread writes (lane 0 of a selected warp, records fit)

  /// This warp's slot in shared memory: its buffer's first record and end, as written by init(),
  /// read once per tile rather than kept in registers.
  struct alignas(16) Slot {
    attnsim_trace_record *base, *end;
  };
  /// Lane 0 of warp `warp` writes when the warp is in p.trace_warps; buffers are [CTA][warp][cap].
  /// `slots`: kWarps Slot entries of shared memory.
  template <class P>
  __device__ __forceinline__ void init(const P& p, void* slots, int warp, int lane) {
    if constexpr (kOn) {
      ptr = p.trace + index(warp) * p.trace_cap;
      on = lane == 0 ? (p.trace_warps >> warp) & 1u : 0u;
      if (lane == 0) static_cast<Slot*>(slots)[warp] = Slot{ptr, ptr + p.trace_cap};
    }
  }
  /// Starts a work tile of `n_blocks` KV blocks: recording stops for good, and the records
  /// written so far are counted, when its spans might not fit.
  template <class P>
  __device__ __forceinline__ void tile(const P& p, const void* slots, int n_blocks) {
    if constexpr (kOn) {
      if (on) {
        const int warp = warp_index();
        const Slot sl = static_cast<const Slot*>(slots)[warp];
        if (ptr + trace_spans_per_tile(n_blocks) > sl.end) {
          p.trace_count[index(warp)] = static_cast<uint32_t>(ptr - sl.base);
          on = 0;
        }
      }
    }
  }
  /// Lane 0 writes the warp's counts: records written (unless tile() did), spans run.
  template <class P>
  __device__ __forceinline__ void close(const P& p, const void* slots, int warp, int lane) const {
    if constexpr (kOn) {
      if (lane == 0) {
        const Slot sl = static_cast<const Slot*>(slots)[warp];
        const uint32_t n = static_cast<uint32_t>(ptr - sl.base);
        const bool selected = (p.trace_warps >> warp) & 1u;
        if (on || !selected) p.trace_count[index(warp)] = selected ? n : 0;
        p.trace_spans[index(warp)] = selected ? n : 0;
      }
    }
  }
  /// [CTA][warp] index of warp `warp` of this CTA.
  __device__ __forceinline__ static size_t index(int warp) {
    return static_cast<size_t>(blockIdx.x) * (blockDim.x / 32) + warp;
  }
  /// The warp index, read afresh (not kept in a register across the tile loop).
  __device__ __forceinline__ static int warp_index() {
    uint32_t t;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
    return static_cast<int>(t / 32);
  }

  // Predicated global stores into the current record, written as PTX: a C++ `if (on)` would end
  // a basic block at every span, and ptxas schedules within basic blocks. The predicate comes
  // from the same register every time, so ptxas computes it once per block; the pointer's
  // offsets fold into the stores. asm volatile keeps them in order with the clock reads;
  // st.global.cs: streamed, evict-first.
  __device__ __forceinline__ void store4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) const {
    asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %0, 0;\n @p st.global.cs.v4.b32 [%1], {%2, %3, %4, %5};\n}"
                 ::"r"(on), "l"(ptr), "r"(a), "r"(b), "r"(c), "r"(d));
  }
  __device__ __forceinline__ void store2(uint32_t a, uint32_t b) const {
    asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %0, 0;\n @p st.global.cs.v2.b32 [%1], {%2, %3};\n}"
                 ::"r"(on), "l"(ptr), "r"(a), "r"(b));
  }
  template <int kOffset>
  __device__ __forceinline__ void store1(uint32_t a) const {
    asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %0, 0;\n @p st.global.cs.b32 [%1+%2], %3;\n}"
                 ::"r"(on), "l"(ptr), "n"(kOffset), "r"(a));
  }

  /// Current time stamp: the low 32 bits of the SM cycle counter (0 when tracing is compiled
  /// out). asm volatile keeps it in order with the barrier, TMA and wgmma asm around it; it has
  /// no "memory" clobber, so loads, stores and arithmetic of the softmax are scheduled freely.
  __device__ __forceinline__ uint32_t now() const {
    if constexpr (kOn) {
      uint32_t t;
      asm volatile("mov.u32 %0, %%clock;" : "=r"(t));
      return t;
    } else {
      return 0;
    }
  }
  /// Appends one span [t0, t1).
  __device__ __forceinline__ void span(int op, uint32_t t0, uint32_t t1, int block = -1, int tile = -1,
                                       int wait_on = ATTNSIM_WAIT_NONE, int stage = 0xff, int phase = 0xff) {
    if constexpr (kOn) {
      // The record's words (little-endian attnsim_trace_record layout), built from values.
      const uint32_t w0 = (op & 0xff) | ((wait_on & 0xff) << 8) | ((stage & 0xff) << 16) |
                          (static_cast<uint32_t>(phase & 0xff) << 24);
      const uint32_t w1 = (block & 0xffff) | (static_cast<uint32_t>(tile & 0xffff) << 16);
      store4(w0, w1, t0, t1);
      ++ptr;
    }
  }
  /// Opens a span whose start stays in the record slot, not in a register: in the producer warp
  /// (24 registers) ptxas rematerialises a clock read kept in a register, re-reading the clock at
  /// the span's end (load_v spans came out zero-length). Close it with finish().
  __device__ __forceinline__ void start() {
    if constexpr (kOn) store1<8>(now());
  }
  /// Closes the span opened by start().
  __device__ __forceinline__ void finish(int op, int block, int tile) {
    if constexpr (kOn) {
      const uint32_t t = now();
      store2((op & 0xff) | (0xffu << 16) | (0xffu << 24), (block & 0xffff) | (static_cast<uint32_t>(tile & 0xffff) << 16));
      store1<12>(t);
      ++ptr;
    }
  }
  /// Waits on an mbarrier phase, recording the wait as a WAIT span; returns when it ended.
  __device__ __forceinline__ uint32_t wait(uint64_t* bar, uint32_t parity, int wait_on, int stage, int block,
                                           int tile) {
    const uint32_t t0 = now();
    wait_parity(bar, parity);
    const uint32_t t1 = now();
    span(ATTNSIM_OP_WAIT, t0, t1, block, tile, wait_on, stage, parity);
    return t1;
  }
};

}  // namespace attnsim::sm90
