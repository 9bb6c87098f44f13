// Epilogue of a consumer warpgroup: O / row_sum in bf16 (write_o, softmax.cuh), staged in its 64 rows of
// the O buffer (T::kOwnO), of Q's buffer (Q is no longer read: its last QK wgmma has completed) or
// in a V stage (T::kOInV, structure.h: once every consumer warp has released the stage), then one
// TMA store per 64-column chunk; LSE = max * scale + ln(sum) per row. Rows past seqlen_q are
// clipped by TMA. With its own buffer the store is not waited for here: the next tile's epilogue
// waits for it to have read the buffer before rewriting it (and the kernel before it exits), so
// neither Q's next load nor this warpgroup's next tile waits for the store. In the V ring the
// storing thread waits for the read and then arrives on barrier_o, which the load warp waits on
// before the next tile's first V; the warpgroup's other warps go on. Without pingpong the
// warpgroups stage O in the V ring in turn (structure.h, o_staged_barriers).
#pragma once

#include "common/pipeline_state.h"
#include "device.cuh"
#include "kernel_traits.cuh"
#include "smem.cuh"
#include "softmax.cuh"

namespace attnsim::sm90 {

/// `group`: the consumer warpgroup (its barriers and its rows of the staging buffer); `rows`: which
/// 64 rows of the tile it computed (Consumer::rows), where its O and LSE go in global memory.
template <class T, bool kRecord>
__device__ __forceinline__ void epilogue(const Params& p, const Smem<T>& s, TraceRecorder<kRecord>& tr, const Tile& c,
                                         int group, int rows, int warp, int lane, const float (&o)[T::kHeadDim / 2],
                                         RowStats& st, int tile, const PipelineState& v_next) {
  constexpr int D = T::kHeadDim;
  // The named barriers' warpgroup (barrier_group): where read afresh, once, first, so that its
  // latency runs under the wait for the V stage or the staging of O; elsewhere `group`, added at
  // each barrier as before (those kernels' SASS stays the same).
  const int bar_group = barrier_group<T::kFreshBarrierIds>(group), fresh_bar = bar_epilogue(T::kConsumers) + bar_group;
  auto epilogue_bar = [&] { return T::kFreshBarrierIds ? fresh_bar : bar_epilogue(T::kConsumers) + group; };
  // Where O is staged: this warpgroup's rows of a buffer of kMBlock-row chunks, or one V stage.
  uint8_t* base = s.o;
  // In its own buffer, the warpgroup's own 64 rows: its store of the previous tile, which only it
  // waits for, read them. In Q's buffer, the rows whose Q it read: the other warpgroups' may
  // still be read by their last QK.
  int row0 = (T::kOwnO ? group : rows) * 64;
  constexpr int kChunkRows = T::kOInV ? 64 : T::kMBlock;
  uint32_t t0;
  if constexpr (T::kOInV) {
    // The stage is free once every consumer warp has released its last use (structure.h).
    const PipelineState w = o_stage_in_v_ring(v_next, group);
    traced_wait(tr, &s.v_empty[w.index], w.phase, ATTNSIM_WAIT_V_EMPTY, w.index, -1, tile);
    base = s.v(w.index);
    row0 = 0;
  }
  if constexpr (T::kOwnO) {
    // The previous tile's store has read this warpgroup's rows of the O buffer (long since).
    t0 = tr.now();
    if (warp == 0 && lane == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
    named_sync(epilogue_bar(), kEpilogueThreads);
    tr.span(ATTNSIM_OP_WAIT, t0, tr.now_after_barrier(s.barrier_probe()), -1, tile, ATTNSIM_WAIT_EPILOGUE, group);
  }
  // Without pingpong, after the previous warpgroup's O of this tile (of the tile before, for
  // warpgroup 0): structure.h, o_staged_barriers.
  constexpr bool kOrdered = o_staged_barriers(T::kOInV, T::kPingpong, T::kConsumers);
  if constexpr (kOrdered)
    if (o_staged_waits(group, tile)) {
      const int before = o_staged_after(bar_group, T::kConsumers);
      t0 = tr.now();
      named_sync(bar_o_staged(before), kPingpongThreads);
      tr.span(ATTNSIM_OP_WAIT, t0, tr.now_after_barrier(s.barrier_probe()), -1, tile, ATTNSIM_WAIT_O_STAGED, before);
    }
  t0 = tr.now();
  write_o<D, kChunkRows>(smem_u32(base), row0, warp, lane, o, st);
  const int rbox = rows * 64 + 16 * warp + lane / 4;  // this thread's first row in the tile
  tr.span(ATTNSIM_OP_FINAL_O, t0, tr.now(), -1, tile);
  if constexpr (kOrdered) named_arrive(bar_o_staged(bar_group), kPingpongThreads);
  t0 = tr.now();
  named_sync(epilogue_bar(), kEpilogueThreads);
  tr.span(ATTNSIM_OP_WAIT, t0, tr.now_after_barrier(s.barrier_probe()), -1, tile, ATTNSIM_WAIT_EPILOGUE, group);
  if (warp == 0 && lane == 0) {
    t0 = tr.now();
#pragma unroll
    for (int ch = 0; ch < D / 64; ++ch)
      tma_store(&p.tm_o, base + ch * kChunkRows * 128 + row0 * 128, ch * 64, c.m * T::kMBlock + rows * 64, c.head,
                c.batch);
    cuda::ptx::cp_async_bulk_commit_group();
    if constexpr (!T::kOwnO) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});  // the buffer reusable
    if constexpr (T::kOInV) arrive(s.barrier_o);
    tr.span(ATTNSIM_OP_STORE_O, t0, tr.now(), -1, tile);
  }
  // LSE through MUFU.LG2 (__logf: relative error a few ulp, far inside the reference's 1e-3):
  // the accurate logf is a dependent chain of about 20 FFMAs per row, on the path to the next tile.
  if (lane % 4 == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = c.m * T::kMBlock + rbox + 8 * r;
      if (row < p.seqlen_q)
        p.lse[(static_cast<long long>(c.batch) * p.heads + c.head) * p.seqlen_q + row] =
            st.sum[r] > 0.f ? st.max[r] * p.scale + __logf(st.sum[r]) : -INFINITY;
    }
  }
  if constexpr (!T::kQFreeAfterQk) {  // every warp knows the store has read Q's buffer
    t0 = tr.now();
    named_sync(epilogue_bar(), kEpilogueThreads);
    tr.span(ATTNSIM_OP_WAIT, t0, tr.now_after_barrier(s.barrier_probe()), -1, tile, ATTNSIM_WAIT_EPILOGUE, group);
  }
}

}  // namespace attnsim::sm90
