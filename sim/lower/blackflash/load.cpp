// BlackFlash load warp: TMA of the Q tile (mbar_q), then for every KV block j (ascending)
// K_j and V_j into stage j % kv_stage, once the consumers have emptied it.
#include "lower/blackflash/blackflash_schedule.hpp"

namespace attnsim::blackflash {

void emit_load(Context& c, WarpBuilder& w) {
  const double tile_bytes = kTile * kTile * c.problem.elem_bytes();
  const Work issue = alu_instructions(c.hw.tma_issue_instrs);
  c.q.arrive_count("load", true, false);
  c.kv.arrive_count("load", true, false);
  PipelineState q = c.q.ids.producer_start(), kv = c.kv.ids.producer_start();
  for (size_t t = 0; t < c.tiles.size(); ++t) {
    w.tags(-1, -1, static_cast<int>(t));
    w.compute(ATTNSIM_OP_LOAD_Q, issue);
    w.tma_load(ATTNSIM_OP_LOAD_Q, c.q.ids.full[q.index], tile_bytes);
    q.advance();
    for (int j = 0; j < c.tiles[t].n_blocks; ++j) {
      w.tags(-1, j, static_cast<int>(t));
      w.producer_acquire(c.kv.ids, kv);
      w.compute(ATTNSIM_OP_LOAD_K, issue);
      // K and V of block j complete one transaction barrier together.
      w.tma_load(ATTNSIM_OP_LOAD_K, c.kv.ids.full[kv.index], 2 * tile_bytes);
      kv.advance();
    }
  }
}

}  // namespace attnsim::blackflash
