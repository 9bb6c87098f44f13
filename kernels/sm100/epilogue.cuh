// Epilogue role (warp 13): per Q stage of each tile, wait for O staged in SMEM (pipeline_o_epi),
// TMA-store it (one 64-column box per chunk; rows past seqlen_q are clipped), wait until the
// store has read SMEM, release the stage. Mirrors sim/lower/fa4/epilogue.cpp.
#pragma once

#include "device.cuh"
#include "kernel_traits.cuh"
#include "smem.cuh"

namespace attnsim::sm100 {

template <class T>
__device__ __forceinline__ void epilogue_warp(const Params& p, const Smem<T>& s, TraceRecorder<T::kTrace>& tr,
                                              int lane) {
  uint32_t full = 0;  // parity per Q stage
  int local = 0;
  for (long long t = first_tile(p.tiles, cluster_id<T>()); t < p.num_tiles;
       t = next_tile(p.tiles, t, cluster_count<T>()), ++local) {
    const TileCoord c = tile_at(p.tiles, t);
    tr.tile(p, s.trace(), c.n_blocks, trace_spans_per_tile);
    for (int q = 0; q < T::kQStage; ++q) {
      traced_wait(tr, s.bar(kOEpiFull, q), (full >> q) & 1, ATTNSIM_WAIT_OEPI_FULL, q, -1, local);
      full ^= 1u << q;
      if (lane == 0) {
        tr.start();
        const int row0 = q_row0(c.m, q, cta_rank<T>(), T::kQStage, T::kCtaGroup);
#pragma unroll
        for (int ch = 0; ch < T::kChunks; ++ch)
          tma_store(&p.tm_o, s.o(q) + ch * kMBlock * 128, ch * 64, row0, c.head, c.batch);
        cuda::ptx::cp_async_bulk_commit_group();
        cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});  // SMEM read: the stage is free
        tr.finish(ATTNSIM_OP_STORE_O, -1, local);
      }
      __syncwarp();
      arrive(s.bar(kOEpiEmpty, q));
    }
  }
  if (lane == 0) cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>{});  // writes done before exit
}

}  // namespace attnsim::sm100
