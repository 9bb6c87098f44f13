// Epilogue warp (warp 13 in FA4): TMA store of each finished O stage from SMEM to
// global memory, then frees the SMEM stage (pipeline_o_epi).
#include "lower/fa4/fa4_schedule.hpp"

namespace attnsim::fa4 {

void emit_epilogue(Context& c, WarpBuilder& w) {
  const double o_bytes = c.k.m_block * c.k.head_dim_v * c.problem.elem_bytes();
  const Work issue = alu_instructions(c.hw.tma_issue_instrs);
  const int release = c.o_epi.arrive_count("epilogue", false, false);
  PipelineState st = c.o_epi.ids.consumer_start();
  for (size_t t = 0; t < c.tiles.size(); ++t) {
    for (int s = 0; s < c.k.q_stage; ++s) {
      w.tags(s, -1, static_cast<int>(t));
      w.consumer_wait(c.o_epi.ids, st);
      w.compute(ATTNSIM_OP_STORE_O, issue);
      w.tma_store(ATTNSIM_OP_STORE_O, o_bytes);
      w.consumer_release(c.o_epi.ids, st, release);
    }
  }
}

}  // namespace attnsim::fa4
