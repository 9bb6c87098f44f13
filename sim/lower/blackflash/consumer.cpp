// BlackFlash consumer warps. Warp i: pair i / 2 owns 16 Q rows, half i % 2 owns 32 of the 64
// columns of S and of O. Per KV block: S_half = Q K_half^T (mma.sync, ldmatrix operands), row
// max exchanged with the partner through SMEM (bar.sync of the 256 consumers), exp2, row sum
// likewise, P written to SMEM over the K buffer (after a bar.sync: everyone has read K),
// bar.sync, O_half += P V_half (mma.sync, full 64-wide P), release the stage (256 arrivals).
// After the last block: O / row_sum and the LSE, O staged in SMEM, bar.sync, and the 256
// consumer threads copy the O tile out with 8-byte stores (kernels/blackflash/epilogue.cuh).
#include "lower/blackflash/blackflash_schedule.hpp"

namespace attnsim::blackflash {

void emit_consumer(Context& c, WarpBuilder& w, int index) {
  const double eb = c.problem.elem_bytes();
  const int rows = 16, cols = kTile / 2;  // this warp's block of S and of O
  // mma.sync m16n8k16: 4096 FLOP per instruction; ldmatrix.x4 moves 16 B per thread.
  auto mma = [&](double flops, double smem_bytes) {
    Work m;
    m.mma_sync_flops = flops;
    m.issue = flops / 4096 + smem_bytes / 512;
    m.smem_bytes = smem_bytes;
    return m;
  };
  const Work qk = mma(2.0 * rows * cols * kTile, (rows * kTile + cols * kTile) * eb);
  const Work pv = mma(2.0 * rows * cols * kTile, (rows * kTile + kTile * cols) * eb);
  const double per_thread = static_cast<double>(rows) * cols / 32;  // 16 scores of 2 rows
  Work max_w = c.costs.work("softmax_max", per_thread, 2);
  max_w += c.costs.work("row_exchange", 0, 1);
  Work exp_w = c.costs.work("softmax_exp", per_thread, 2);
  exp_w += c.costs.work("row_exchange", 0, 1);
  exp_w += c.costs.work("pack_p", per_thread, 0);
  exp_w += c.costs.work("p_to_smem", per_thread, 0);
  const Work mask_w = c.costs.work("softmax_mask", per_thread, 0);
  const Work rescale_w = c.costs.work("rescale_o", per_thread, 0);
  const Work final_w = c.costs.work("final_o", per_thread, 2);
  // store_o: the kernel's copy-out (epilogue.cuh): per thread 4 ld.shared.v2 + 4 st.global.v2 of
  // the staged O and about 3 integer instructions each for the address and the row check (from the
  // kernel's source; its SASS is not counted yet). Global stores have no pipe of their own in the
  // model: their bytes count in the grid's HBM traffic.
  Work store_w;
  store_w.issue = 4 * (2 + 3);
  store_w.alu_lanes = 32.0 * 4 * 3;
  store_w.smem_bytes = static_cast<double>(rows) * cols * eb;
  // With an issue-timing file, the KV loop's blocks take the time the SM's consumer warps take to
  // issue the kernel's SASS together (sim/calibrate/sass_blackflash.hpp) and its counts as work;
  // timed with two CTAs per SM, that time has their sharing in it (MeasuredTiming::with_residents).
  auto timed = [&](const char* name) -> const BlockIssue* { return c.sass ? &c.sass->blocks.at(name) : nullptr; };
  const BlockIssue *t_qk = timed("mma_qk"), *t_max = timed("softmax_max"), *t_masked = timed("softmax_max_masked"),
                   *t_exp = timed("softmax_exp"), *t_rescale = timed("rescale_o"), *t_pv = timed("mma_pv");
  auto block = [&](int op, const BlockIssue* t, const Work& work, double latency = 0) {
    if (t)
      w.compute(op, t->work(), 0, 0, t->timing(c.sass->ctas_per_sm > 1));
    else
      w.compute(op, work, latency);
  };
  const int release = c.kv.arrive_count("consumer", false, false);
  PipelineState q = c.q.ids.consumer_start(), kv = c.kv.ids.consumer_start();
  for (size_t t = 0; t < c.tiles.size(); ++t) {
    const int tile = static_cast<int>(t), n = c.tiles[t].n_blocks;
    w.tags(index / 2, -1, tile);
    w.consumer_wait(c.q.ids, q);
    q.advance();
    for (int j = 0; j < n; ++j) {
      w.tags(index / 2, j, tile);
      w.consumer_wait(c.kv.ids, kv);
      block(ATTNSIM_OP_MMA_QK, t_qk, qk);
      const bool masked = j >= n - c.tiles[t].masked_blocks;
      Work m = max_w;
      if (masked) m += mask_w;
      block(ATTNSIM_OP_SOFTMAX_MAX, masked ? t_masked : t_max, m, c.costs.latency("softmax_max"));
      w.bar_sync(c.consumers_bar, 32);  // partner's row max is in SMEM; K has been read
      block(ATTNSIM_OP_SOFTMAX_EXP, t_exp, exp_w);
      w.bar_sync(c.consumers_bar, 32);  // P (over K) and the row sums are in SMEM
      if (j > 0) block(ATTNSIM_OP_RESCALE_O, t_rescale, rescale_w);
      block(ATTNSIM_OP_MMA_PV, t_pv, pv);
      w.consumer_release(c.kv.ids, kv, release);
    }
    w.tags(index / 2, -1, tile);
    w.compute(ATTNSIM_OP_FINAL_O, final_w, c.costs.latency("final_o"));
    w.bar_sync(c.consumers_bar, 32);         // O staged in sQ by every warp
    w.compute(ATTNSIM_OP_STORE_O, store_w);  // a 1/8 share of the tile, 8-byte stores
  }
}

}  // namespace attnsim::blackflash
