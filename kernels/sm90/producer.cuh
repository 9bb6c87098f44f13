// Producer role: lane 0 of warp 0 of the producer warpgroup issues the TMA loads of Q (once per
// tile) and of K_j, V_j for j = n-1 .. 0 into the kv_stage-deep rings, each after the consumer
// warps freed the stage. Mirrors sim/lower/fa3/producer.cpp.
#pragma once

#include "device.cuh"
#include "kernel_traits.cuh"
#include "smem.cuh"

namespace attnsim::sm90 {

template <class T>
__device__ __forceinline__ void producer_warp(const Params& p, const Smem<T>& s, TraceRecorder<T::kTrace>& tr) {
  uint32_t q_phase = 0, kv_phase = 0;
  int stage = 0, local = 0;
  for (int t = blockIdx.x; t < p.num_tiles; t += gridDim.x, ++local) {
    const Tile c = tile_at(p, t, T::kMBlock, T::kNBlock);
    const int kv_head = c.head / p.group;
    // Q's buffer is free once every consumer warp has finished the previous tile's epilogue.
    tr.wait(s.q_empty, q_phase ^ 1, ATTNSIM_WAIT_Q_EMPTY, 0, -1, local);
    long long t0 = tr.now();
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                         s.q_full, T::kQBytes);
#pragma unroll
    for (int ch = 0; ch < T::kChunks; ++ch)
      tma_load(&p.tm_q, s.q + ch * T::kMBlock * 128, ch * 64, c.m * T::kMBlock, c.head, c.batch, s.q_full);
    tr.span(ATTNSIM_OP_LOAD_Q, t0, tr.now(), -1, local);
    q_phase ^= 1;
    for (int j = c.n_blocks - 1; j >= 0; --j) {
      tr.wait(&s.k_empty[stage], kv_phase ^ 1, ATTNSIM_WAIT_K_EMPTY, stage, j, local);
      t0 = tr.now();
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &s.k_full[stage], T::kKBytes);
#pragma unroll
      for (int ch = 0; ch < T::kChunks; ++ch)
        tma_load(&p.tm_k, s.k(stage) + ch * T::kNBlock * 128, ch * 64, j * T::kNBlock, kv_head, c.batch,
                 &s.k_full[stage]);
      tr.span(ATTNSIM_OP_LOAD_K, t0, tr.now(), j, local);
      tr.wait(&s.v_empty[stage], kv_phase ^ 1, ATTNSIM_WAIT_V_EMPTY, stage, j, local);
      t0 = tr.now();
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &s.v_full[stage], T::kVBytes);
#pragma unroll
      for (int ch = 0; ch < T::kChunks; ++ch)
        tma_load(&p.tm_v, s.v(stage) + ch * T::kNBlock * 128, ch * 64, j * T::kNBlock, kv_head, c.batch,
                 &s.v_full[stage]);
      tr.span(ATTNSIM_OP_LOAD_V, t0, tr.now(), j, local);
      if (++stage == T::kKvStage) {
        stage = 0;
        kv_phase ^= 1;
      }
    }
  }
}

}  // namespace attnsim::sm90
