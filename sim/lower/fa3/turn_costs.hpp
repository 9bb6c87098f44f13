// What one consumer warp of the fa3_sm90 family pays per KV block, as the model prices it: the
// issue of its QK and PV wgmma groups, the groups themselves, and its softmax blocks. One source
// for the family's lowering (consumer.cpp) and for the replay of the kernel-code microbenchmarks
// (sim/measure/gemm_turn_replay.cpp), so that a replay tests the costs the lowering uses.
#pragma once
#include "core/program.hpp"
#include "lower/costs.hpp"
#include "model/hardware.hpp"

namespace attnsim::fa3 {

/// One wgmma group of a consumer warp: the issue block before it and the group itself.
struct GemmGroup {
  int wgmmas = 0;               ///< instructions in the group (k-steps of 16)
  Work issue;                   ///< the issue block's work: the descriptor SASS, on the ALU pipe
  double chain = 0;             ///< the issue block's shortest time, cycles: back-to-back wgmma issue
  double flops = 0;             ///< this warp's quarter of the warpgroup's m64 GEMM, FLOP
  double smem = 0;              ///< SMEM operand bytes this warp's quarter reads
  bool a_in_registers = false;  ///< RS (PV: P from registers)
};

/// Issuing `wgmmas` instructions of width N = `n`: their SASS (descriptor updates, fences) on
/// the ALU pipe (mma_issue_instrs instructions each, counted in our kernel's SASS), and no faster
/// than back-to-back wgmma issue, measured for N = 128 and about proportional to N
/// (kernels/microbench wgmma_issue: 4.0, 13.2, 28.0 cycles at N = 64, 128, 256).
/// Known wrong: that SASS runs on the uniform datapath, not the ALU pipe (ncu on an H100: ALU
/// 27% busy at hd64 s4k where this charge makes it 47%), and RS wgmmas issue slower than SS
/// ones (kernels/microbench wgmma_share). Corrected alone it makes 14 of 15 validation folders
/// worse: it stands in for time missed elsewhere (kernels/microbench/README.md, 2026-11-24).
inline GemmGroup gemm_group(const Hardware& hw, int wgmmas, int n) {
  GemmGroup g;
  g.wgmmas = wgmmas;
  g.issue = alu_instructions(wgmmas * hw.mma_issue_instrs);
  g.chain = wgmmas * hw.wgmma_issue_cycles * n / 128.0;
  return g;
}

/// S = Q K^T of one KV block: head_dim / 16 SS wgmmas of N = n_block; this warp's 16 rows.
/// `elem_bytes`: bytes per Q/K element.
inline GemmGroup qk_group(const Hardware& hw, int head_dim, int n_block, double elem_bytes) {
  GemmGroup g = gemm_group(hw, head_dim / 16, n_block);
  g.flops = 2.0 * 16 * n_block * head_dim;
  g.smem = (64.0 * head_dim + n_block * head_dim) * elem_bytes / 4;  // the warpgroup's Q and K
  return g;
}

/// O += P V of one KV block: n_block / 16 RS wgmmas of N = head_dim_v (P from registers).
inline GemmGroup pv_group(const Hardware& hw, int head_dim_v, int n_block, double elem_bytes) {
  GemmGroup g = gemm_group(hw, n_block / 16, head_dim_v);
  g.flops = 2.0 * 16 * head_dim_v * n_block;
  g.smem = static_cast<double>(n_block) * head_dim_v * elem_bytes / 4;  // V
  g.a_in_registers = true;
  return g;
}

/// One compute block of the softmax as the lowering emits it: its pipe work, the tail latency
/// after it, its dependency chain and its measured timing.
struct SoftmaxBlock {
  Work work;
  double latency = 0, chain = 0;
  MeasuredTiming measured;
};

/// The row max of an unmasked KV block of `n_block` keys (n_block / 2 scores of 2 rows a thread);
/// `conditional`: with the conditional rescale's vote on whether to rescale O
/// (softmax_max_conditional, timed apart: kernels/microbench softmax_block).
inline SoftmaxBlock softmax_max_block(const CostModel& costs, const Hardware& hw, int n_block,
                                      bool conditional = false) {
  const std::string name = conditional ? "softmax_max_conditional" : "softmax_max";
  return {costs.work(name, n_block / 2.0, 2), costs.latency(name), costs.chain_latency(name, n_block / 2.0, hw),
          costs.measured_timing(name, n_block / 2.0)};
}

/// The row max `max` of a KV block with the mask of one crossing the causal diagonal or the
/// seqlen_k tail on top: the mask's work (softmax_mask_select, its instructions in the SASS) added,
/// and where both are measured, its measured time (the masked row max less the unmasked one,
/// kernels/microbench softmax_block) added to the row max's, each slowing beside wgmma by its own
/// measured factor.
inline SoftmaxBlock masked_max_block(const CostModel& costs, const SoftmaxBlock& max, int n_block) {
  SoftmaxBlock b = max;
  b.work += costs.work("softmax_mask_select", n_block / 2.0, 2);
  const MeasuredTiming mask = costs.measured_timing("softmax_mask_select", n_block / 2.0);
  if (max.measured.alone > 0 && mask.alone > 0) {
    const double a = max.measured.alone, m = mask.alone;
    b.measured.alone = a + m;
    b.measured.beside_ss = (a * max.measured.beside_ss + m * mask.beside_ss) / (a + m);
    b.measured.beside_rs = (a * max.measured.beside_rs + m * mask.beside_rs) / (a + m);
  }
  return b;
}

/// The exponentials of a block's first `keys` keys and their row sums; `exp2_emu_share` of them
/// take the emulated exp2 on the FMA/ALU pipes in place of MUFU.EX2.
inline SoftmaxBlock softmax_exp_block(const CostModel& costs, const Hardware& hw, int keys, double exp2_emu_share) {
  SoftmaxBlock b;
  b.work = costs.work("softmax_exp", keys / 2.0, 2);
  if (exp2_emu_share > 0) {
    b.work += costs.work("exp2_emulated", exp2_emu_share * keys / 2.0, 0);
    b.work += costs.work("exp2_mufu", exp2_emu_share * keys / 2.0, 0).scaled(-1);
  }
  b.chain = costs.chain_latency("softmax_exp", keys / 2.0, hw);
  b.measured = costs.measured_timing("softmax_exp", keys / 2.0, exp2_emu_share);
  return b;
}

/// The kernel's rescale_o span where it rescales nothing: P of `keys` keys packed to bf16, its
/// chain the rescale's, and `measured` the time of that span where the conditional rescale's vote
/// said no (pack_p; kernels/microbench softmax_block). A tile's first KV block packs with no vote
/// to test: the lowering gives it the work alone.
inline SoftmaxBlock pack_block(const CostModel& costs, const Hardware& hw, int head_dim_v, int keys) {
  SoftmaxBlock b;
  b.work = costs.work("pack_p", keys / 2.0, 0);
  b.chain = costs.chain_latency("rescale_o", head_dim_v / 2.0, hw);
  b.measured = costs.measured_timing("pack_p", keys / 2.0);
  return b;
}

/// The kernel's rescale_o span: O *= alpha (head_dim_v / 2 outputs a thread) and P of `keys` keys
/// packed to bf16 (pack_p), right before the PV that reads it.
inline SoftmaxBlock rescale_block(const CostModel& costs, const Hardware& hw, int head_dim_v, int keys) {
  SoftmaxBlock b;
  b.work = costs.work("rescale_o", head_dim_v / 2.0, 0);
  b.work += costs.work("pack_p", keys / 2.0, 0);
  b.chain = costs.chain_latency("rescale_o", head_dim_v / 2.0, hw);
  b.measured = costs.measured_timing("rescale_o", head_dim_v / 2.0);
  return b;
}

}  // namespace attnsim::fa3
