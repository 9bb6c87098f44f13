// Consumer warpgroups (64 query rows each; every warp runs this program for its 16 rows).
// Per KV block j (descending): S = Q K_j^T (wgmma, SMEM operands), softmax in registers,
// O = O * alpha + P V_j (wgmma, P from registers). With intra-warpgroup overlap the PV of
// block j+1 is issued right after the QK of block j, in the same turn, and both finish before
// block j's softmax (wgmma.wait_group 1, then 0), as in kernels/sm90/consumer.cuh. With
// pingpong, named barriers make the two warpgroups take turns issuing their GEMMs, so one's
// softmax runs while the other's GEMMs hold the tensor cores. Without warp specialization,
// warp 0 of warpgroup 0 also issues the TMA loads, prefetching the next block.
#include "lower/fa3/fa3_schedule.hpp"
#include "lower/fa3/turn_costs.hpp"

namespace attnsim::fa3 {

void emit_consumer(Context& c, WarpBuilder& w, int group, int warp_in_group) {
  const Resolved& k = c.k;
  const double eb = c.problem.elem_bytes();
  const int n_blk = k.n_block, d = k.head_dim, dv = k.head_dim_v;
  // The QK and PV wgmma groups and their issue blocks (turn_costs.hpp).
  const GemmGroup qk_g = qk_group(c.hw, d, n_blk, eb), pv_g = pv_group(c.hw, dv, n_blk, eb);
  // Per thread: n_block / 2 scores of 2 rows; head_dim_v / 2 outputs.
  const SoftmaxBlock max_b = softmax_max_block(c.costs, c.hw, n_blk, k.conditional_rescale);
  const SoftmaxBlock masked_max_b = masked_max_block(c.costs, max_b, n_blk);
  // The exponentials of a KV block's first `keys` keys, and P packed: n_block, or n_block / 2
  // where the warpgroup's rows see no key past the middle of the tile's last block
  // (trim_last_block, sm90::last_block_half: the GEMMs, the mask and the row max stay whole, the
  // scores past the half are not exponentiated and their P is 0). With exp2 emulation, a share of
  // the scores takes the polynomial on the FMA/ALU pipes in place of its MUFU.EX2. The kernel's
  // rescale_o span also packs P to bf16 (pack_p), right before the PV that reads it.
  struct ExpCosts {
    SoftmaxBlock exp, rescale;  ///< the exponentials; O rescaled and P packed
    SoftmaxBlock pack;          ///< P packed alone (a step that rescales nothing)
  };
  auto exp_costs = [&](int keys) {
    return ExpCosts{softmax_exp_block(c.costs, c.hw, keys, k.exp2_emu_share), rescale_block(c.costs, c.hw, dv, keys),
                    pack_block(c.costs, c.hw, dv, keys)};
  };
  const ExpCosts full = exp_costs(n_blk), half = exp_costs(n_blk / 2);
  const Work final_work = c.costs.work("final_o", dv / 2.0, 2);
  // Dependency chains (critical paths in the kernel's SASS), at this tile's elements per thread-row.
  const double final_chain = c.costs.chain_latency("final_o", dv / 2.0, c.hw);
  // final_o measured with every consumer warpgroup storing O at once covers its tail (the fence
  // waits for the stores): no assumed latency on top.
  const MeasuredTiming final_measured = c.costs.measured_timing("final_o", dv / 2.0);
  const double final_latency = final_measured.alone > 0 ? 0.0 : c.costs.latency("final_o");
  // The code between the kernel's spans in each KV iteration (stage releases, pipeline indices
  // and phases, the pingpong arrive, the loop branch), counted in its SASS (sass-costs): its
  // instructions on the issue slot and ALU pipe, its static issue time as the floor.
  const LoopControl lc =
      c.costs.loop_control(d, k.pingpong, k.overlap, k.scheduler == TileScheduler::DynamicLpt, k.n_block);
  const Work lc_work = alu_instructions(lc.instructions);
  const MeasuredTiming lc_timing{lc.issue_cycles};
  // The rescale_o span at KV iteration `it` (0: the tile's first block): O *= alpha and P packed,
  // or P packed only where nothing is rescaled: the first block, whose code packs only (priced
  // from its instructions), and with the conditional rescale the steps where no row of this warp
  // grew its max past the threshold, whose code tests the warp's vote first (the measured pack_p).
  const int row_warp = group * sm90::kWarpsPerWarpgroup + warp_in_group;
  auto rescale_and_pack = [&](int it, const ExpCosts& b) {
    if (c.rescale_at(row_warp, it))
      w.compute(ATTNSIM_OP_RESCALE_O, b.rescale.work, 0, b.rescale.chain, b.rescale.measured);
    else if (it == 0)
      w.compute(ATTNSIM_OP_RESCALE_O, b.pack.work, 0, b.pack.chain);
    else
      w.compute(ATTNSIM_OP_RESCALE_O, b.pack.work, 0, b.pack.chain, b.pack.measured);
  };
  auto loop_control = [&]() {
    if (lc.instructions > 0) w.compute(ATTNSIM_OP_LOOP_CONTROL, lc_work, 0, 0, lc_timing);
  };
  // The code each tile runs outside the spans, counted in the plain kernel's SASS the same way:
  // its head (tile slot or coordinates, KV block count, exit test) after the pipeline_q.full
  // wait, its tail (LSE, the tile loop's bookkeeping) after the store of O.
  const TileControl tc =
      c.costs.tile_control(d, k.pingpong, k.overlap, k.scheduler == TileScheduler::DynamicLpt, k.own_o_buffer, k.n_block);
  auto tile_control = [&](const LoopControl& part) {
    if (part.instructions > 0)
      w.compute(ATTNSIM_OP_TILE_CONTROL, alu_instructions(part.instructions), 0, 0, MeasuredTiming{part.issue_cycles});
  };
  // Where an overlapped KV step waits for its PV GEMM: the source waits before the softmax; in the
  // plain kernel's SASS ptxas may sink that wgmma.wait_group 0 below the row max (the hd64 and
  // hd128 instances with O in its own buffer: below every FMNMX of it; hd256: mostly not), not in
  // the traced kernel's recorded steps (Resolved::pv_wait_under_max).
  const bool pv_under_max = k.pv_wait_under_max;
  const bool loader = !k.warp_specialization && group == 0 && warp_in_group == 0;
  if (loader)  // its TMA arrive.expect_tx is the "load" arrival of each full barrier
    for (Pipe* p : {&c.q, &c.k_pipe, &c.v_pipe}) p->arrive_count("load", true, false);
  const int release = c.k_pipe.arrive_count("consumer", false, false);
  c.v_pipe.arrive_count("consumer", false, false);
  const int q_release = c.q.arrive_count("consumer", false, false);
  const bool pp = !c.pingpong_bar.empty();
  const int next_group = (group + 1) % k.consumers;
  if (pp && group == k.consumers - 1) w.bar_arrive(c.pingpong_bar[0], 32);  // warpgroup 0 issues first

  // Waits and releases run at different points of the loop (a stage is released once the wgmma
  // that read it retired), so each has its own state; the loader warp's are producer states.
  PipelineState q_wait = c.q.ids.consumer_start(), q_rel = c.q.ids.consumer_start();
  PipelineState k_wait = c.k_pipe.ids.consumer_start(), k_rel = c.k_pipe.ids.consumer_start();
  PipelineState v_wait = c.v_pipe.ids.consumer_start(), v_rel = c.v_pipe.ids.consumer_start();
  PipelineState q_load = c.q.ids.producer_start(), k_load = c.k_pipe.ids.producer_start(),
                v_load = c.v_pipe.ids.producer_start();
  // With O in its own buffer or the V ring, Q's buffer is free once the tile's last QK (block 0)
  // has retired.
  const bool q_free_after_qk = k.own_o_buffer || k.o_in_v_ring;
  auto release_q = [&]() {
    if (q_free_after_qk) w.consumer_release(c.q.ids, q_rel, q_release);
  };
  auto turn_start = [&]() {
    if (pp) w.bar_sync(c.pingpong_bar[group], 32);
  };
  auto turn_end = [&]() {
    if (pp) w.bar_arrive(c.pingpong_bar[next_group], 32);
  };
  auto load_kv = [&](int j, int tile) {  // loader warp only (loads whole blocks)
    w.tags(-1, j, tile);
    load_stage(c, w, c.k_pipe, k_load, ATTNSIM_OP_LOAD_K, static_cast<double>(n_blk) * d * eb);
    load_stage(c, w, c.v_pipe, v_load, ATTNSIM_OP_LOAD_V, static_cast<double>(n_blk) * dv * eb);
  };
  auto qk = [&](int j, int tile) {
    w.tags(group, j, tile);
    w.consumer_wait(c.k_pipe.ids, k_wait);
    k_wait.advance();
    w.compute(ATTNSIM_OP_MMA_QK, qk_g.issue, 0, qk_g.chain);
    w.mma(ATTNSIM_OP_MMA_QK, qk_g.flops, qk_g.smem, qk_g.wgmmas);
  };
  auto pv = [&](int j, int tile) {
    w.tags(group, j, tile);
    w.consumer_wait(c.v_pipe.ids, v_wait);
    v_wait.advance();
    w.compute(ATTNSIM_OP_MMA_PV, pv_g.issue, 0, pv_g.chain);
    w.mma(ATTNSIM_OP_MMA_PV, pv_g.flops, pv_g.smem, pv_g.wgmmas, pv_g.a_in_registers);
  };
  auto softmax_max = [&](int j, int tile, bool masked) {
    w.tags(group, j, tile);
    const SoftmaxBlock& m = masked ? masked_max_b : max_b;
    w.compute(ATTNSIM_OP_SOFTMAX_MAX, m.work, m.latency, m.chain, m.measured);
  };
  auto softmax_exp = [&](int j, int tile, const ExpCosts& b) {
    w.tags(group, j, tile);
    w.compute(ATTNSIM_OP_SOFTMAX_EXP, b.exp.work, 0, b.exp.chain, b.exp.measured);
  };
  auto softmax = [&](int j, int tile, bool masked, const ExpCosts& b) {
    softmax_max(j, tile, masked);
    softmax_exp(j, tile, b);
  };

  for (size_t t = 0; t < c.tiles.size(); ++t) {
    const int tile = static_cast<int>(t), n = c.tiles[t].n_blocks;
    const int first_masked = n - c.tiles[t].masked_blocks;
    // Keys of block j this warpgroup exponentiates: the last block (j = n - 1) trimmed to its
    // first half where its rows see no key past it; with trim_last_block the two warpgroups swap
    // rows in every other tile (the kernel's Consumer::rows), so the one that trims alternates.
    const int rows = k.trim_last_block ? group ^ (tile & 1) : group;
    const bool trimmed = k.trim_last_block && sm90::last_block_half(c.tiles[t].m_block, k.m_block, n_blk, n, rows,
                                                                    c.problem.seqlen_q, c.problem.seqlen_k,
                                                                    c.problem.causal);
    auto costs = [&](int j) -> const ExpCosts& { return j == n - 1 && trimmed ? half : full; };
    if (loader) {  // Q and the first block; later blocks are prefetched one ahead, as stages free up
      w.tags(-1, -1, tile);
      load_stage(c, w, c.q, q_load, ATTNSIM_OP_LOAD_Q, static_cast<double>(k.m_block) * d * eb);
      load_kv(n - 1, tile);
      if (!k.overlap && n > 1) load_kv(n - 2, tile);
    }
    w.tags(group, -1, tile);
    w.consumer_wait(c.q.ids, q_wait);
    q_wait.advance();
    tile_control(tc.head);
    if (k.overlap) {
      turn_start();
      qk(n - 1, tile);
      turn_end();
      w.wait_mma(0);
      w.consumer_release(c.k_pipe.ids, k_rel, release);
      if (n == 1) release_q();
      softmax(n - 1, tile, n - 1 >= first_masked, costs(n - 1));
      rescale_and_pack(0, costs(n - 1));
      loop_control();
      if (loader && n > 1) load_kv(n - 2, tile);
      for (int j = n - 2; j >= 0; --j) {
        turn_start();
        qk(j, tile);
        pv(j + 1, tile);
        turn_end();
        w.wait_mma(1);  // QK(j) done: K_j's stage is free
        w.consumer_release(c.k_pipe.ids, k_rel, release);
        if (j == 0) release_q();
        // PV(j+1) done: before the softmax in the source, after the row max where ptxas sank the
        // wait below it (pv_under_max), the max then running under the PV.
        if (pv_under_max) softmax_max(j, tile, j >= first_masked);
        w.wait_mma(0);
        w.consumer_release(c.v_pipe.ids, v_rel, release);
        if (loader && j > 0) load_kv(j - 1, tile);  // the stages of block j+1 are free now
        if (!pv_under_max) softmax_max(j, tile, j >= first_masked);
        softmax_exp(j, tile, costs(j));
        rescale_and_pack(n - 1 - j, costs(j));
        loop_control();
      }
      turn_start();
      pv(0, tile);
      turn_end();
      w.wait_mma(0);
      w.consumer_release(c.v_pipe.ids, v_rel, release);
    } else {
      for (int j = n - 1; j >= 0; --j) {
        if (loader && j < n - 1 && j > 0) load_kv(j - 1, tile);  // prefetch: block j+1's stages are free
        turn_start();
        qk(j, tile);
        turn_end();
        w.wait_mma(0);
        w.consumer_release(c.k_pipe.ids, k_rel, release);
        if (j == 0) release_q();
        softmax(j, tile, j >= first_masked, costs(j));
        rescale_and_pack(n - 1 - j, costs(j));
        turn_start();
        pv(j, tile);
        turn_end();
        w.wait_mma(0);
        w.consumer_release(c.v_pipe.ids, v_rel, release);
        loop_control();
      }
    }
    // Epilogue: O / row_sum to bf16 in SMEM, then one warp stores the warpgroup's rows. In O's own
    // buffer: after the previous tile's store has read it (long since: its wait is not timed), and
    // the store is not waited for. In Q's buffer: the store is waited for, then Q's buffer is freed.
    // In the V ring: in the stage `group` past the next one to be read, once every consumer warp
    // has released it (the parity the load warp's acquire would wait for), the store waited for
    // and barrier_o arrived on (sm90::o_stage_in_v_ring).
    w.tags(group, -1, tile);
    if (k.own_o_buffer) w.bar_sync(c.epilogue_bar[group], 32);
    if (k.o_in_v_ring) w.producer_acquire(c.v_pipe.ids, sm90::o_stage_in_v_ring(v_rel, group));
    // Without pingpong, O staged after the previous warpgroup's (sm90::o_staged_barriers).
    const bool ordered = !c.o_staged_bar.empty();
    if (ordered && sm90::o_staged_waits(group, tile))
      w.bar_sync(c.o_staged_bar[sm90::o_staged_after(group, k.consumers)], 32);
    w.compute(ATTNSIM_OP_FINAL_O, final_work, final_latency, final_chain, final_measured);
    if (ordered) w.bar_arrive(c.o_staged_bar[group], 32);
    w.bar_sync(c.epilogue_bar[group], 32);
    if (warp_in_group == 0) {
      const Work tma = alu_instructions(c.hw.tma_issue_instrs);
      w.compute(ATTNSIM_OP_STORE_O, tma);
      w.tma_store(ATTNSIM_OP_STORE_O, 64.0 * dv * eb, !k.own_o_buffer);
      if (k.o_in_v_ring) w.arrive(c.barrier_o, 1);
    }
    tile_control(tc.tail);
    if (!q_free_after_qk) {
      w.bar_sync(c.epilogue_bar[group], 32);  // the store has read Q's buffer: it may be refilled
      w.consumer_release(c.q.ids, q_rel, q_release);
    }
  }
}

}  // namespace attnsim::fa3
