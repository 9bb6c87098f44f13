// Consumer role: one warpgroup owns 64 query rows of the tile (wgmma M = 64) and walks the KV
// blocks j = n-1 .. 0: S = Q K_j^T (wgmma, both operands in SMEM), online softmax in
// registers, O (+)= P V_j (wgmma, P from registers, V MN-major in SMEM). With kOverlap the PV
// of block j+1 is issued right behind the QK of block j, in the same pingpong turn, and both
// finish before block j's softmax (wgmma.wait_group 1 frees K_j, 0 frees V_j+1): one turn per
// block instead of two. With kPingpong, named barriers make the warpgroups (two, or three at
// m_block 192, round robin) take turns issuing their GEMMs, so one's softmax runs under the
// others' GEMMs. Mirrors
// sim/lower/fa3/consumer.cpp op for op.
#pragma once

#include "common/pipeline_state.h"
#include "device.cuh"
#include "epilogue.cuh"
#include "kernel_traits.cuh"
#include "smem.cuh"
#include "softmax.cuh"

namespace attnsim::sm90 {

/// Where a Consumer keeps its turn's warpgroup between turn_start and turn_end: only where the
/// barrier ids are read afresh (T::kFreshBarrierIds). Elsewhere an empty base, not a member: a
/// member those kernels never read still moved their SASS (nvcc -cubin, CUDA 13.0). A Consumer is
/// an aggregate whose first element is this base: `Consumer<T> c{{}, p, s, tr, group, warp, lane}`.
template <bool kFresh>
struct TurnGroup {
  int turn_group = 0;
};
template <>
struct TurnGroup<false> {};

/// kRecord: this object's spans are recorded (one tile a traced build samples: recorded_tile).
/// The tile loop, run(), is a Consumer<T, false>'s, in traced builds too: their tiles that record
/// nothing run the plain kernel's code.
template <class T, bool kRecord = false>
struct Consumer : TurnGroup<T::kFreshBarrierIds> {
  static constexpr int N = T::kNBlock, D = T::kHeadDim;
  const Params& p;
  const Smem<T>& s;
  TraceRecorder<kRecord>& tr;
  int group, warp, lane;
  /// Which 64 rows of the tile this warpgroup computes (run_tile): its own, or with T::kTrimLast
  /// (two warpgroups) the other's in every other tile, so that the warpgroup that trims the last
  /// block (the one whose rows end first) changes from tile to tile.
  int rows = group;
  float sacc[N / 2];   // S of the current block, then P in fp32
  float o[D / 2];      // O accumulator
  uint32_t pr[N / 4];  // P in bf16 (A fragments of the PV wgmma)
  // Read positions in the K and V rings: each stage is waited for, read by the wgmma, released.
  PipelineState k_read = PipelineState::consumer_start(T::kKvStage),
                v_read = PipelineState::consumer_start(T::kKvStage);

  /// Q descriptor of this warpgroup's 64 rows at k-step kk (16 columns of head_dim).
  __device__ uint64_t desc_q(int kk) const {
    return smem_desc_sw128(smem_u32(s.q + (kk / 4) * T::kMBlock * 128 + rows * 64 * 128 + (kk % 4) * 32), 16, 1024);
  }
  /// K (B operand of QK, K-major: n_block rows of head_dim) at k-step kk.
  __device__ uint64_t desc_k(int stage, int kk) const {
    return smem_desc_sw128(smem_u32(s.k(stage) + (kk / 4) * N * 128 + (kk % 4) * 32), 16, 1024);
  }
  /// V (B operand of PV, MN-major: K = keys, N = head_dim) at k-step kk (16 keys). Leading byte
  /// offset: from one 64-column chunk of head_dim to the next; stride: 8 keys of 128 B.
  __device__ uint64_t desc_v(int stage, int kk) const {
    return smem_desc_sw128(smem_u32(s.v(stage) + kk * 16 * 128), N * 128, 1024);
  }

  // The warpgroup for the turn's barrier ids where they are read afresh (T::kFreshBarrierIds,
  // barrier_group): in turn_start, where the wait for the turn covers the read's latency, and
  // held over the turn for turn_end's arrive, which would otherwise wait for it right before the
  // wgmma.wait_group's span. Elsewhere `group`, as the plain kernels have it.
  __device__ int pingpong_group() const {
    if constexpr (T::kFreshBarrierIds)
      return this->turn_group;
    else
      return group;
  }

  // Traced builds read the clock after a named barrier behind a shared load of the trace slots
  // (TraceRecorder::now_after_barrier): written once before the first __syncthreads, so the load
  // races with nothing. (A load of Q's buffer raced with the other warpgroup's epilogue stores of
  // O there: 3 racecheck hazards per traced run, H100 2026-11-24.)
  __device__ void turn_start(int j, int tile) {
    if constexpr (T::kPingpong) {
      if constexpr (T::kFreshBarrierIds) this->turn_group = barrier_group<true>(group);
      const uint32_t t0 = tr.now();
      named_sync(kBarPingpong + pingpong_group(), kPingpongThreads);
      tr.span(ATTNSIM_OP_WAIT, t0, tr.now_after_barrier(s.barrier_probe()), j, tile, ATTNSIM_WAIT_PINGPONG, group);
    }
  }
  __device__ void turn_end() {
    if constexpr (T::kPingpong) named_arrive(kBarPingpong + (pingpong_group() + 1) % T::kConsumers, kPingpongThreads);
  }

  /// The GEMMs' ring stage from lane 0, in the dynamic scheduler's kernels without pingpong at
  /// head_dim 128 and 256. Their tiles come from shared memory, and ptxas kept the ring positions
  /// in vector registers there, built each k-step's K and V descriptors on the vector ALU and moved
  /// them to uniform registers (R2UR) before the HGMMAs: at hd256 about 150 vector instructions
  /// per KV block more than the base kernel (ncu SourceCounters, H200). A stage index shuffled
  /// from lane 0, once per GEMM, is warp-uniform to ptxas, and the descriptors move to the uniform
  /// datapath as in the static kernels. Timed in turns against the kernels without it (H200,
  /// 2026-11-29, kernels/sm90/README.md, "The GEMMs' ring stage from lane 0"): no_pingpong hd256
  /// causal 5-6% faster, hd128 about 1%; the dynamic kernels without intra-warpgroup overlap
  /// gained nothing (-0.8 to +1.6%), the base schedule's (uniform descriptors already) and hd64's
  /// measured slower with it, so they keep the plain index.
  static constexpr bool kStageFromLane0 = D >= 128 && T::kDynamic && !T::kPingpong;
  /// Ring stage `index` as the GEMMs' descriptors read it (kStageFromLane0: lane 0's).
  __device__ __forceinline__ static int gemm_stage(int index) {
    if constexpr (kStageFromLane0) return __shfl_sync(0xffffffffu, index, 0);
    return index;
  }

  /// Waits for K_j and issues S = Q K_j^T (one commit group).
  __device__ void issue_qk(int j, int tile) {
    const uint32_t t0 =
        traced_wait(tr, &s.k_full[k_read.index], k_read.phase, ATTNSIM_WAIT_K_FULL, k_read.index, j, tile);
    const int stage = gemm_stage(k_read.index);
    fence_regs(sacc);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) Wgmma<N>::ss(sacc, desc_q(kk), desc_k(stage, kk), kk > 0);
    wgmma_commit();
    fence_regs(sacc);
    tr.span(ATTNSIM_OP_MMA_QK, t0, tr.now(), j, tile);
  }
  /// Waits for V_j and issues O (+)= P V_j (one commit group); accumulate = false overwrites O.
  __device__ void issue_pv(int j, int tile, bool accumulate) {
    const uint32_t t0 =
        traced_wait(tr, &s.v_full[v_read.index], v_read.phase, ATTNSIM_WAIT_V_FULL, v_read.index, j, tile);
    const int stage = gemm_stage(v_read.index);
    fence_regs(o);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < N / 16; ++kk) {
      const uint32_t a[4] = {pr[4 * kk], pr[4 * kk + 1], pr[4 * kk + 2], pr[4 * kk + 3]};
      Wgmma<D>::rs_tb(o, a, desc_v(stage, kk), accumulate || kk > 0);
    }
    wgmma_commit();
    fence_regs(o);
    tr.span(ATTNSIM_OP_MMA_PV, t0, tr.now(), j, tile);
  }
  template <int kPending>
  __device__ void wait_mma(int j, int tile) {
    const uint32_t t0 = tr.now();
    wgmma_wait<kPending>();
    fence_regs(sacc);
    fence_regs(o);
    fence_regs(pr);
    tr.span(ATTNSIM_OP_WAIT, t0, tr.now(), j, tile, ATTNSIM_WAIT_WGMMA);
  }
  /// Lane 0 of each warp frees a ring stage (the empty barrier counts one arrival per consumer warp).
  __device__ void release(uint64_t* empty, int stage) {
    if (lane == 0) arrive(&empty[stage]);
  }
  /// With O in a buffer of its own or the V ring, Q's buffer is free once the tile's last QK (block 0) has
  /// retired: the load warp brings the next tile's Q in under this tile's last softmax, PV and
  /// epilogue. (Staged in Q's buffer, O frees it only after the epilogue: run_tile.)
  __device__ void release_q_after_qk(int j) {
    if constexpr (T::kQFreeAfterQk)
      if (j == 0) release(s.q_empty, 0);
  }
  /// Online softmax of block j; kMask: the block is at or past the tile's first_masked, so its
  /// scores are masked (mask_scores: a limit column per row, exact for every row). Returns whether
  /// O must be rescaled (always, unless the kernel rescales conditionally: row_max). kSplit and
  /// `half` (a trimmed last block): the exponentials on the block's first N / 2 keys only, P of
  /// the others 0 (rescale_and_pack); the mask and the row max still over the whole block (split
  /// too, they left the traced kernels' wgmmas serialized for want of registers, ptxas C7511).
  template <bool kMask, bool kSplit = false>
  __device__ bool softmax(int j, int tile, int row0, RowStats& st, float (&alpha)[2], bool half = false) {
    uint32_t t0 = tr.now();
    if constexpr (kMask) mask_scores<N>(sacc, j, row0, p);
    const bool rescale_o =
        row_max<N, T::kConditionalRescale>(sacc, st, p.scale_log2, alpha, T::kRescaleThresholdLog2);
    uint32_t t1 = tr.now();
    tr.span(ATTNSIM_OP_SOFTMAX_MAX, t0, t1, j, tile);
    exp_scores<N, T::kExp2EmuFreq, T::kExp2EmuRes, kSplit>(sacc, st, p.scale_log2, alpha, half);
    tr.span(ATTNSIM_OP_SOFTMAX_EXP, t1, tr.now(), j, tile);
    return rescale_o;
  }
  /// O *= alpha and P to bf16 (after the PV that read the previous P has completed); kSplit,
  /// `half`: the softmax took the first N / 2 keys only (softmax), P of the others is 0.
  template <bool kSplit = false>
  __device__ void rescale_and_pack(int j, int tile, const float (&alpha)[2], bool rescale_o, bool half = false) {
    const uint32_t t0 = tr.now();
    if (rescale_o) rescale<D>(o, alpha);
    pack_p<N, kSplit>(sacc, pr, half);
    tr.span(ATTNSIM_OP_RESCALE_O, t0, tr.now(), j, tile);
  }

  /// One KV block j < n-1 with intra-warpgroup overlap: QK(j) and PV(j+1) in one turn, then
  /// block j's softmax and the O rescale.
  template <bool kMask>
  __device__ void overlap_step(int j, int n, int local, int row0, RowStats& st, float (&alpha)[2]) {
    turn_start(j, local);
    issue_qk(j, local);
    issue_pv(j + 1, local, j + 1 < n - 1);
    turn_end();
    wait_mma<1>(j, local);  // QK(j) done: K_j's stage is free
    release(s.k_empty, k_read.index);
    k_read.advance();
    release_q_after_qk(j);
    // PV(j+1) done before the softmax, not under it: a softmax under its own warpgroup's
    // register-A wgmma runs slower (pipes_under_mma), and with the softmax first ptxas
    // hoisted this wait above it anyway; an order pinned the other way measured 4.5-7%
    // slower at hd64/hd128 (kernels/sm90/README.md). ptxas still sinks this wait below the
    // row max in the plain hd64/hd128 instances with O in its own buffer, while the traced
    // build's clock reads keep it here; the source waiting after the max instead measured
    // slower (README.md, "the PV wait below the row max").
    wait_mma<0>(j, local);  // its P registers and V stage are free
    release(s.v_empty, v_read.index);
    v_read.advance();
    const bool rescale_o = softmax<kMask>(j, local, row0, st, alpha);
    rescale_and_pack(j, local, alpha, rescale_o);
  }
  /// One KV block j without overlap: QK(j), softmax, PV(j), each waited for; kSplit, `half`: the
  /// softmax on the block's first N / 2 keys (softmax).
  template <bool kMask, bool kSplit = false>
  __device__ void sequential_step(int j, int n, int local, int row0, RowStats& st, float (&alpha)[2],
                                  bool half = false) {
    turn_start(j, local);
    issue_qk(j, local);
    turn_end();
    wait_mma<0>(j, local);
    release(s.k_empty, k_read.index);
    k_read.advance();
    release_q_after_qk(j);
    const bool rescale_o = softmax<kMask, kSplit>(j, local, row0, st, alpha, half);
    rescale_and_pack<kSplit>(j, local, alpha, j < n - 1 && rescale_o, half);
    turn_start(j, local);
    issue_pv(j, local, j < n - 1);
    turn_end();
    wait_mma<0>(j, local);
    release(s.v_empty, v_read.index);
    v_read.advance();
  }

  /// The tile loop. `recording`: this CTA records (cta_records; always false in plain builds),
  /// the tiles records_tile picks. A recorded tile runs through recorded_tile, the others through
  /// the plain kernel's code. kTracedLaunch: as load_warp's (a traced launch's static grid may hand
  /// tiles on; the plain kernel's loop does not test for it).
  template <bool kTracedLaunch = T::kTrace>
  __device__ void run(bool recording) {
    if constexpr (T::kPingpong)
      if (group == T::kConsumers - 1) named_arrive(kBarPingpong + 0, kPingpongThreads);  // warpgroup 0 issues first
    PipelineState q_read = PipelineState::consumer_start(kQStages);
    if constexpr (T::kDynamic) {
      // The load warp hands over each tile with its Q (an index past the last: no more tiles).
      for (int local = 0;; ++local) {
        const uint32_t t0 = TraceRecorder<T::kTrace>{}.now();
        wait_parity(&s.q_full[q_read.index], q_read.phase);
        const uint32_t t1 = TraceRecorder<T::kTrace>{}.now();
        copy_tile_slot(s.tile, s.warp_tile(TraceRecorder<false>::warp_index()), lane);
        const Tile c = slot_tile();
        if (c.index >= p.num_tiles) break;
        const uint32_t q_phase = q_read.phase;
        q_read.advance();
        if (T::kTrace && recording && records_tile<T::kDynamic>(p, c, local))
          recorded_tile(c, local,
                        [&](auto& r) { r.span(ATTNSIM_OP_WAIT, t0, t1, -1, local, ATTNSIM_WAIT_Q_FULL, 0, q_phase); });
        else
          plain_tile(c, local);
      }
    } else {
      int local = 0;
      const int cta = static_cast<int>(blockIdx.x), grid = static_cast<int>(gridDim.x);
      for (int t = cta; t < p.num_tiles;
           t = kTracedLaunch ? static_next_tile(p.trace_rule, cta, grid, p.num_tiles, t) : t + grid, ++local) {
        const Tile c = tile_at(p, t, T::kMBlock, N);
        // Both branches wait for Q, then advance, then run the tile: the plain kernel's order.
        if (T::kTrace && recording && records_tile<T::kDynamic>(p, c, local)) {
          recorded_tile(c, local, [&](auto& r) {
            traced_wait(r, &s.q_full[q_read.index], q_read.phase, ATTNSIM_WAIT_Q_FULL, 0, -1, local);
            q_read.advance();
          });
        } else {
          wait_parity(&s.q_full[q_read.index], q_read.phase);
          q_read.advance();
          plain_tile(c, local);
        }
      }
    }
  }

  /// Runs tile `c` through the plain kernel's code. In a traced build the tile runs in a fresh
  /// Consumer (as recorded_tile's do), so that no accumulator outlives its tile: one object's
  /// accumulators kept live across the other's tiles cost the traced hd128 kernel 364 bytes of
  /// spills and serialized its wgmma (ptxas C7512). The ring positions are the only state that
  /// outlives a tile.
  __device__ __forceinline__ void plain_tile(const Tile& c, int local) {
    if constexpr (T::kTrace)
      run_tile_in(tr, c, local);
    else
      run_tile(c, local);
  }
  /// Runs tile `c` recorded: the warp's recorder is resumed from its Cursor in shared memory
  /// (TraceRecorder::resume) for this tile only, `first(recorder)` records what precedes the KV
  /// loop (the wait for Q), and a fresh Consumer<T, true> runs the tile (as in plain_tile), so
  /// that neither the recorder nor any accumulator outlives it.
  template <class First>
  __device__ __forceinline__ void recorded_tile(const Tile& c, int local, First first) {
    if constexpr (T::kTrace) {
      const int w = TraceRecorder<true>::warp_index();
      TraceRecorder<true> r = TraceRecorder<true>::resume(s.trace, w, lane);
      r.tile_cursor(p, s.trace, w, c.n_blocks, trace_spans_per_tile);
      first(r);
      run_tile_in(r, c, local);
      r.suspend(s.trace, w, lane);
    }
  }
  /// Runs tile `c` in a fresh Consumer recording through `r`; the ring positions carry over.
  template <bool kRec>
  __device__ __forceinline__ void run_tile_in(TraceRecorder<kRec>& r, const Tile& c, int local) {
    Consumer<T, kRec> x{{}, p, s, r, group, warp, lane};
    x.k_read = k_read;
    x.v_read = v_read;
    x.run_tile(c, local);
    k_read = x.k_read;
    v_read = x.v_read;
  }

  /// The tile whose Q is in the Q buffer, from this warp's copy of the tile slot (dynamic
  /// scheduler; copy_tile_slot after each pipeline_q.full wait). Read where it is needed rather
  /// than kept in registers across the KV loop, where the accumulators take nearly all of them.
  __device__ Tile slot_tile() const { return read_tile_copy(s.warp_tile(tr.warp_index())); }

  /// One work tile, its Q in SMEM: the KV loop and the epilogue.
  __device__ __forceinline__ void run_tile(const Tile& c, int local) {
    const int n = c.n_blocks;
    // Between tiles the K and V read positions are equal (both advance once per KV block).
    // Taken afresh from V's here, K's does not carry from tile to tile: carried, ptxas kept it
    // in vector registers in the dynamic scheduler's kernels (whose tiles come from shared
    // memory), rebuilt each K stage's wgmma descriptors on the ALU and moved them to uniform
    // registers (R2UR) before every QK wgmma. The static kernels' SASS is the same either way;
    // at head_dim 64 the dynamic kernel's wait for PV(j+1) then moved deeper into the
    // exponentials and its KV loop ran 1-3% slower, so it keeps the carried position there
    // (H100, 2026-11-28, kernels/sm90/README.md).
    if constexpr (D >= 128) k_read = v_read;
    if constexpr (T::kTrimLast) rows = group ^ (local & 1);
    // This thread's first row (r0) in the sequence.
    const int row0 = c.m * T::kMBlock + rows * 64 + 16 * warp + lane / 4;
    RowStats st;
    float alpha[2];
    if constexpr (T::kOverlap) {
      turn_start(n - 1, local);
      issue_qk(n - 1, local);
      turn_end();
      wait_mma<0>(n - 1, local);
      release(s.k_empty, k_read.index);
      k_read.advance();
      release_q_after_qk(n - 1);
      // Whether this warpgroup's rows see none of the last block's second half (trim_last_block):
      // its softmax then takes the first half only, and P of the second is 0. Uniform over the
      // warpgroup; taken here, after the QK, so that it is not live while the wgmma is in flight.
      const bool half = T::kTrimLast && last_block_half(c.m, T::kMBlock, N, n, rows, p.seqlen_q, p.seqlen_k,
                                                        p.causal != 0);
      if (n - 1 >= c.first_masked)  // (so is every trimmed block)
        softmax<true, T::kTrimLast>(n - 1, local, row0, st, alpha, half);
      else
        softmax<false>(n - 1, local, row0, st, alpha);
      rescale_and_pack<T::kTrimLast>(n - 1, local, alpha, false, half);
      // The blocks that need the mask come first (j descends), then the hot loop without the
      // mask test: a test per block (a parameter load, two branches and a reconvergence) took
      // about a quarter of softmax_max's PC samples (ncu, H100, 2026-11-23).
      int j = n - 2;
      for (; j >= c.first_masked; --j) overlap_step<true>(j, n, local, row0, st, alpha);
      for (; j >= 0; --j) overlap_step<false>(j, n, local, row0, st, alpha);
      turn_start(0, local);
      issue_pv(0, local, n > 1);
      turn_end();
      wait_mma<0>(0, local);
      release(s.v_empty, v_read.index);
      v_read.advance();
    } else {
      int j = n - 1;
      const bool half = T::kTrimLast && last_block_half(c.m, T::kMBlock, N, n, rows, p.seqlen_q, p.seqlen_k,
                                                        p.causal != 0);  // (as above)
      for (; j >= c.first_masked; --j)
        sequential_step<true, T::kTrimLast>(j, n, local, row0, st, alpha, half && j == n - 1);
      for (; j >= 0; --j) sequential_step<false>(j, n, local, row0, st, alpha);
    }
    if constexpr (T::kDynamic)
      epilogue<T>(p, s, tr, slot_tile(), group, rows, warp, lane, o, st, local, v_read);
    else
      epilogue<T>(p, s, tr, c, group, rows, warp, lane, o, st, local, v_read);
    // Neither in a buffer of its own nor in the V ring, O was staged in Q's buffer: it may be refilled now, and with
    // the dynamic scheduler the tile slot, which lane 0 copied for this warp (copy_tile_slot),
    // rewritten (release_q_after_qk frees it earlier otherwise).
    if constexpr (!T::kQFreeAfterQk) release(s.q_empty, 0);
  }
};

}  // namespace attnsim::sm90
