// The device side of the measured timelines, shared by the kernel families (kernels/sm90,
// kernels/fa2): the per-warp span recorder (TraceRecorder) and the per-CTA clock anchors. Writes
// the records of trace_record.h; op ids from op_names.h. CUDA only (nvcc).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/op_names.h"
#include "common/trace_record.h"

namespace attnsim {

/// %globaltimer: nanoseconds, common to all SMs (update step 32-96 ns on H100, measured).
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Thread 0 of a traced CTA, before the CTA's first barrier (so that every span starts after
/// it): the start anchor of `c` (clock64, %globaltimer, %smid). Records carry raw 32-bit clock
/// stamps, which the host places relative to this clk0. (kernels/fa2; the SM90 kernel writes the
/// same fields inline: through these helpers its traced SASS changed.)
__device__ __forceinline__ void cta_clock_begin(attnsim_cta_clock* c) {
  c->clk0 = clock64();
  c->ns0 = globaltimer();
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  c->smid = sm;
}

/// Thread 0 of a traced CTA, after every warp has closed its recorder: the end anchor of `c`
/// (%globaltimer, clock64). The caller writes c->tiles, the work tiles the CTA ran.
__device__ __forceinline__ void cta_clock_end(attnsim_cta_clock* c) {
  c->ns1 = globaltimer();
  c->clk1 = clock64();
}

/// Records the spans of one warp (kernels/common/trace_record.h) when kOn; compiled out otherwise.
/// Used by the SM90 kernel (kernels/sm90, where it was written) and the FA2-style kernel
/// (kernels/fa2). Built to cost the warps it times as little as possible (issue 9: the previous
/// recorder, lane 0 of every warp storing each span with a bounds check and 64-bit stamp
/// arithmetic, added 22-33% to the SM90 kernel):
/// - only lane 0 of the warps selected by Params::trace_warps writes (in the SM90 kernel by
///   default the load warp and the first warp of each consumer warpgroup). The other warps run
///   the same instructions with the stores predicated off: a warpgroup's four warps must execute
///   the same wgmma code, and the slowest of them sets its pace anyway;
/// - a span is one predicated 16-byte store at a constant offset from a pointer that advances by
///   one record per span, so the compiler folds the offsets and moves the pointer once per loop
///   iteration; capacity is checked once per work tile (tile()), against the family's bound on a
///   tile's spans, never per span;
/// - registers: the pointer and a predicate word; the buffer's bounds sit in shared memory
///   (Slot), read once per tile. The SM90 consumer warps use about 230 of their 240 registers,
///   and a spill goes to local memory, which lives in L2 when the CTA takes nearly all of the
///   SM's shared memory (measured: spills of the epilogue's addresses cost 5 us per tile);
/// - stamps are the raw 32-bit %clock (the low half of %clock64): no per-span arithmetic and one
///   register per live stamp. The host subtracts the CTA's clk0 (sm90::trace_kernel).
/// Records of a tile that would not fit are not written, nor those of any later tile; spans are
/// still counted (the host reports them as dropped).
/// The kernel's Params must have the fields trace, trace_count, trace_spans, trace_cap and
/// trace_warps (kernels/sm90/kernel_traits.cuh, kernels/fa2/fa2_kernel.cuh).
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
  /// `slots`: one Slot per warp of the CTA, in shared memory.
  template <class P>
  __device__ __forceinline__ void init(const P& p, void* slots, int warp, int lane) {
    if constexpr (kOn) {
      ptr = p.trace + index(warp) * p.trace_cap;
      on = lane == 0 ? (p.trace_warps >> warp) & 1u : 0u;
      if (lane == 0) static_cast<Slot*>(slots)[warp] = Slot{ptr, ptr + p.trace_cap};
    }
  }
  /// Starts a work tile of `n_blocks` KV blocks, whose spans number at most
  /// `spans_per_tile(n_blocks)` (the family's bound: sm90::trace_spans_per_tile,
  /// fa2::trace_spans_per_tile): recording stops for good, and the records written so far are
  /// counted, when they might not fit. The bound is computed here, inside the recording warp's
  /// branch (computed by the caller, ptxas hoisted it and the traced SM90 kernel's SASS changed).
  template <class P, class SpansPerTile>
  __device__ __forceinline__ void tile(const P& p, const void* slots, int n_blocks, SpansPerTile spans_per_tile) {
    if constexpr (kOn) {
      if (on) {
        const int warp = warp_index();
        const Slot sl = static_cast<const Slot*>(slots)[warp];
        if (ptr + spans_per_tile(n_blocks) > sl.end) {
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

  // Resumable recording (kernels/sm90): the recorder lives in registers only inside the tiles it
  // records. Between them its state is the warp's Cursor in shared memory, so the code of the
  // tiles and CTAs that record nothing keeps no recorder registers live (kept live across the
  // tile loop, the traced SM90 kernels ran 3-9% slower than the plain ones even where they
  // recorded nothing: H200, 2026-11-29, kernels/sm90/README.md, "Recorder state in shared
  // memory").

  /// A warp's recording state between the tiles it records, in its Slot's 16 bytes of shared
  /// memory: the next record, and the end of its buffer or null once the warp records nothing
  /// more (not selected by Params::trace_warps, or its buffer full).
  struct alignas(16) Cursor {
    attnsim_trace_record *next, *end;
  };
  /// Lane 0 of warp `warp` writes the warp's Cursor (`slots`: one per warp, in shared memory),
  /// before the CTA's first barrier; the recorder itself holds nothing until resume().
  template <class P>
  __device__ __forceinline__ static void open_cursor(const P& p, void* slots, int warp, int lane) {
    if constexpr (kOn) {
      if (lane == 0) {
        attnsim_trace_record* base = p.trace + index(warp) * p.trace_cap;
        static_cast<Cursor*>(slots)[warp] = Cursor{base, (p.trace_warps >> warp) & 1u ? base + p.trace_cap : nullptr};
      }
    }
  }
  /// The recorder of warp `warp`, resumed from its Cursor: lane 0 writes when the warp records.
  /// Only lane 0 reads the Cursor (the other lanes' stores are predicated off, their pointer
  /// unused): lane 0 rewrites it in suspend() with no barrier before the next tile's resume(),
  /// and the other lanes' reads raced with that write (compute-sanitizer racecheck, static grids,
  /// H200 2026-11-29).
  __device__ __forceinline__ static TraceRecorder resume(const void* slots, int warp, int lane) {
    TraceRecorder r;
    if constexpr (kOn) {
      if (lane == 0) {
        const Cursor c = static_cast<const Cursor*>(slots)[warp];
        r.ptr = c.next;
        r.on = c.end != nullptr ? 1u : 0u;
      }
    }
    return r;
  }
  /// Starts a tile of a resumed recorder, as tile() does, the end of the buffer from the Cursor.
  template <class P, class SpansPerTile>
  __device__ __forceinline__ void tile_cursor(const P& p, const void* slots, int warp, int n_blocks,
                                              SpansPerTile spans_per_tile) {
    if constexpr (kOn) {
      if (on) {
        const Cursor c = static_cast<const Cursor*>(slots)[warp];
        if (ptr + spans_per_tile(n_blocks) > c.end) {
          p.trace_count[index(warp)] = static_cast<uint32_t>(ptr - (p.trace + index(warp) * p.trace_cap));
          on = 0;
        }
      }
    }
  }
  /// Lane 0 writes the recorder's state back to warp `warp`'s Cursor (records stop for good if
  /// tile_cursor() found the buffer full).
  __device__ __forceinline__ void suspend(void* slots, int warp, int lane) const {
    if constexpr (kOn) {
      if (lane == 0) {
        Cursor* c = static_cast<Cursor*>(slots) + warp;
        c->next = ptr;
        if (!on) c->end = nullptr;
      }
    }
  }
  /// Lane 0 writes the warp's counts from its Cursor: records written (unless tile_cursor() did),
  /// spans run.
  template <class P>
  __device__ __forceinline__ static void close_cursor(const P& p, const void* slots, int warp, int lane) {
    if constexpr (kOn) {
      if (lane == 0) {
        const Cursor c = static_cast<const Cursor*>(slots)[warp];
        const uint32_t n = static_cast<uint32_t>(c.next - (p.trace + index(warp) * p.trace_cap));
        const bool selected = (p.trace_warps >> warp) & 1u;
        if (c.end != nullptr || !selected) p.trace_count[index(warp)] = selected ? n : 0;
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
  /// store4 under the predicate `write` (nonzero: store) instead of `on`.
  __device__ __forceinline__ void store4_if(uint32_t write, uint32_t a, uint32_t b, uint32_t c, uint32_t d) const {
    asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %0, 0;\n @p st.global.cs.v4.b32 [%1], {%2, %3, %4, %5};\n}"
                 ::"r"(write), "l"(ptr), "r"(a), "r"(b), "r"(c), "r"(d));
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
  /// Time stamp right after a bar.sync (named barrier or __syncthreads): bar.sync compiles to
  /// BAR.SYNC.DEFER_BLOCKING, which blocks the warp at a later instruction, not at a clock read
  /// right after it. Measured on an H100 (2026-11-23): with all 8 blackflash consumer warps
  /// traced, every one of them saw a 1.2 ns wait at its bar.sync, impossible for a barrier that
  /// blocked there, and the wait showed up in the span after it. ncu charges the barrier stall to
  /// the first memory instruction after the BAR, so a volatile shared load of `smem_word` goes
  /// first and the clock read after it sees the release. `smem_word` must be a shared word no
  /// thread writes after the CTA's first barrier (the recorders' slots): a word others write right
  /// after the same barrier (a K tile, the row maxima) makes the read a hazard for racecheck.
  /// Traced builds only; 0 when tracing is compiled out.
  __device__ __forceinline__ uint32_t now_after_barrier(const void* smem_word) const {
    if constexpr (kOn) {
      uint32_t d, t;
      const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(smem_word));
      asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(d) : "r"(a) : "memory");
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
      // (Written out here, not in a helper: with helpers the traced SM90 kernel's SASS changed.)
      const uint32_t w0 = (op & 0xff) | ((wait_on & 0xff) << 8) | ((stage & 0xff) << 16) |
                          (static_cast<uint32_t>(phase & 0xff) << 24);
      const uint32_t w1 = (block & 0xffff) | (static_cast<uint32_t>(tile & 0xffff) << 16);
      store4(w0, w1, t0, t1);
      ++ptr;
    }
  }
  /// Appends one span [t0, t1) when `cond` holds, without a branch: the store's predicate is
  /// `on && cond`, and the pointer advances by `cond` (for an op the simulator emits only on some
  /// iterations, e.g. fa2's rescale_o from the second KV block on).
  __device__ __forceinline__ void span_if(bool cond, int op, uint32_t t0, uint32_t t1, int block = -1, int tile = -1,
                                          int wait_on = ATTNSIM_WAIT_NONE, int stage = 0xff, int phase = 0xff) {
    if constexpr (kOn) {
      const uint32_t c = cond ? 1u : 0u;
      const uint32_t w0 = (op & 0xff) | ((wait_on & 0xff) << 8) | ((stage & 0xff) << 16) |
                          (static_cast<uint32_t>(phase & 0xff) << 24);
      const uint32_t w1 = (block & 0xffff) | (static_cast<uint32_t>(tile & 0xffff) << 16);
      store4_if(on & c, w0, w1, t0, t1);
      ptr += c;
    }
  }
  /// Opens a span whose start stays in the record slot, not in a register: in the SM90 producer
  /// warp (24 registers) ptxas rematerialises a clock read kept in a register, re-reading the
  /// clock at the span's end (load_v spans came out zero-length). Close it with finish().
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
};

/// Records the spans of a role that one thread runs (the SM90 load warp's lane 0) through its
/// warp's TraceRecorder::Cursor in shared memory, holding no register between spans: each span
/// loads the cursor, stores the record (when the cursor has an end) and advances the cursor. The
/// load warp runs on 24 registers (setmaxnreg); a TraceRecorder's pointer and flag in its recorded
/// tiles made ptxas spill values that its plain tiles reload too, on the path to the next tile's
/// Q and K loads (cuobjdump -sass, H200 2026-11-29). Same span interface as TraceRecorder (now,
/// span, start, finish), so traced_wait takes either.
template <bool kOn>
struct CursorRecorder {
  uint32_t cursor = 0;  ///< shared-space address of this warp's Cursor

  /// The recorder of warp `warp`, whose Cursor is in `slots` (TraceRecorder::open_cursor).
  __device__ __forceinline__ static CursorRecorder at(const void* slots, int warp) {
    CursorRecorder r;
    if constexpr (kOn)
      r.cursor = static_cast<uint32_t>(__cvta_generic_to_shared(slots)) +
                 warp * static_cast<uint32_t>(sizeof(typename TraceRecorder<true>::Cursor));
    return r;
  }
  /// Starts a tile of `n_blocks` KV blocks: as TraceRecorder::tile_cursor, recording stops for
  /// good, and the records written so far are counted, when the tile's spans might not fit.
  template <class P, class SpansPerTile>
  __device__ __forceinline__ void tile(const P& p, int warp, int n_blocks, SpansPerTile spans_per_tile) const {
    if constexpr (kOn) {
      const auto [next, end] = load();
      if (end != nullptr && next + spans_per_tile(n_blocks) > end) {
        p.trace_count[TraceRecorder<true>::index(warp)] =
            static_cast<uint32_t>(next - (p.trace + TraceRecorder<true>::index(warp) * p.trace_cap));
        asm volatile("st.shared.u64 [%0+8], %1;" ::"r"(cursor), "l"(0ull));
      }
    }
  }
  /// Current time stamp, as TraceRecorder::now.
  __device__ __forceinline__ uint32_t now() const { return TraceRecorder<kOn>{}.now(); }
  /// Appends one span [t0, t1), as TraceRecorder::span.
  __device__ __forceinline__ void span(int op, uint32_t t0, uint32_t t1, int block = -1, int tile = -1,
                                       int wait_on = ATTNSIM_WAIT_NONE, int stage = 0xff, int phase = 0xff) const {
    if constexpr (kOn) {
      const auto [next, end] = load();
      // Written out as in TraceRecorder::span: record_word helpers shared by both recorders changed
      // the SASS of every traced SM90 kernel and of blackflash's (nvcc 13.0, 2026-11-29).
      const uint32_t w0 =
          (op & 0xff) | ((wait_on & 0xff) << 8) | ((stage & 0xff) << 16) | (static_cast<uint32_t>(phase & 0xff) << 24);
      const uint32_t w1 = (block & 0xffff) | (static_cast<uint32_t>(tile & 0xffff) << 16);
      asm volatile(
          "{\n .reg .pred p;\n setp.ne.u64 p, %0, 0;\n @p st.global.cs.v4.b32 [%1], {%2, %3, %4, %5};\n}" ::"l"(end),
          "l"(next), "r"(w0), "r"(w1), "r"(t0), "r"(t1));
      advance(next);
    }
  }
  /// Opens a span, its start in the record's slot (as TraceRecorder::start); close it with finish().
  __device__ __forceinline__ void start() const {
    if constexpr (kOn) {
      const auto [next, end] = load();
      asm volatile("{\n .reg .pred p;\n setp.ne.u64 p, %0, 0;\n @p st.global.cs.b32 [%1+8], %2;\n}" ::"l"(end),
                   "l"(next), "r"(now()));
    }
  }
  /// Closes the span opened by start().
  __device__ __forceinline__ void finish(int op, int block, int tile) const {
    if constexpr (kOn) {
      const uint32_t t = now();
      const auto [next, end] = load();
      const uint32_t w0 = (op & 0xff) | (0xffu << 16) | (0xffu << 24);
      const uint32_t w1 = (block & 0xffff) | (static_cast<uint32_t>(tile & 0xffff) << 16);
      asm volatile(
          "{\n .reg .pred p;\n setp.ne.u64 p, %0, 0;\n @p st.global.cs.v2.b32 [%1], {%2, %3};\n"
          " @p st.global.cs.b32 [%1+12], %4;\n}" ::"l"(end),
          "l"(next), "r"(w0), "r"(w1), "r"(t));
      advance(next);
    }
  }

 private:
  struct Loaded {
    attnsim_trace_record *next, *end;
  };
  // The cursor through asm volatile, so that the compiler keeps it in shared memory, not in a
  // register from one span to the next (only these asm touch it between open_cursor and
  // close_cursor, each side of a __syncthreads).
  __device__ __forceinline__ Loaded load() const {
    uint64_t next, end;
    asm volatile("ld.shared.v2.u64 {%0, %1}, [%2];" : "=l"(next), "=l"(end) : "r"(cursor));
    return {reinterpret_cast<attnsim_trace_record*>(next), reinterpret_cast<attnsim_trace_record*>(end)};
  }
  __device__ __forceinline__ void advance(const attnsim_trace_record* next) const {
    asm volatile("st.shared.u64 [%0], %1;" ::"r"(cursor), "l"(reinterpret_cast<uint64_t>(next + 1)));
  }
};

}  // namespace attnsim
