// A warp's program: the op list the engine executes, produced by lowering a
// schedule (sim/lower). Ops are the vocabulary of the design: wait / arrive on an
// mbarrier or named barrier, issue asynchronous work to a unit, or a compute block
// with instruction counts per pipe.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/op_names.h"

namespace attnsim {

/// Work of a compute block, as counts per pipe of the warp's SMSP and bytes on SM-wide datapaths.
struct Work {
  double issue = 0;           ///< warp instructions (issue slots)
  double fma_lanes = 0;       ///< FMA-pipe lane-operations (FFMA = 32, FFMA2 = 64 per warp instruction)
  double alu_lanes = 0;       ///< ALU-pipe lane-operations
  double mufu_lanes = 0;      ///< MUFU lane-operations (one per ex2 element)
  double mma_sync_flops = 0;  ///< warp-level mma.sync FLOP on the SMSP's tensor core (synchronous MMA)
  double tmem_bytes = 0;      ///< tcgen05.ld/st bytes (SM-wide TMEM datapath)
  double smem_bytes = 0;      ///< ld/st.shared bytes (SM-wide SMEM bandwidth)

  Work& operator+=(const Work& o);
  Work scaled(double f) const;
  bool empty() const;
  bool operator==(const Work&) const = default;
};

/// A compute block's timing measured on the GPU with the kernel's own code
/// (kernels/microbench softmax_block): what its instruction schedule costs alone, and how much
/// longer it takes while another warp's wgmma runs on the same SMSP's tensor core.
struct MeasuredTiming {
  double alone = 0;      ///< cycles alone (0: not measured; pipe throughput and chain decide)
  double beside_ss = 1;  ///< time beside SS wgmma (both operands in SMEM) / time alone, >= 1
  double beside_rs = 1;  ///< time beside RS wgmma (A from registers) / time alone, >= 1
  /// `alone` was timed with the SM's other resident CTAs issuing beside it (sim/calibrate/sm_issue
  /// at ctas_per_sm > 1): their sharing is in it already, so PipeSharing serves it with the
  /// oldest CTA's blocks (Op::cta_rank does not apply).
  bool with_residents = false;
  /// Time while TMA copies land in the SM's shared memory / time without them, with the SMSP's
  /// tensor core idle, running SS wgmma, running RS wgmma (>= 1; 1: not measured, or no shared
  /// memory stores). Measured for the epilogue's O stores by kernels/microbench smem_beside_async:
  /// the copies' writes take the shared memory's port from the warps' stores.
  std::array<double, 3> beside_copies{1, 1, 1};
  bool operator==(const MeasuredTiming&) const = default;
};

/// What a Compute op runs: its pipe work and, where measured, its timing. Lowering emits the same
/// few blocks thousands of times per CTA, so the ops that run one block share it
/// (CtaProgram::compute_blocks owns them) and an Op stays small: the op lists of a long static
/// persistent CTA came to ~100 MB, and building them was a third of its prediction's time.
struct ComputeBlock {
  Work work;
  MeasuredTiming measured;
  bool operator==(const ComputeBlock&) const = default;
};

/// `n` warp instructions of integer/address work (descriptor updates, loop control): issue
/// slots and the ALU pipe. Used for the cost of issuing asynchronous work (TMA, MMA).
inline Work alu_instructions(double n) {
  Work w;
  w.issue = n;
  w.alu_lanes = 32 * n;
  return w;
}

/// What an op does; the engine switches on this.
enum class OpKind : uint8_t {
  Wait,         ///< block until `barrier` has completed the phase with parity `parity`
  Arrive,       ///< arrive `count` on mbarrier `barrier` (no time)
  Compute,      ///< run `work` on the SMSP/SM pipes (processor sharing), no sooner than `chain`; then `latency`
  TmaLoad,      ///< arrive.expect_tx(bytes) on `barrier`, then a TMA copy of `bytes` that completes the tx;
                ///< `count` = 1: the tile is read by no other CTA, so it comes from HBM (tma_latency_hbm)
  TmaStore,     ///< TMA store of `bytes`; the warp waits for it to finish reading SMEM (`count` = 1: it
                ///< does not: asynchronous, its buffer's reuse is guarded elsewhere)
  Mma,          ///< enqueue `flops` (+ `bytes` of SMEM operand reads) as `count` MMA instructions on the
                ///< tensor core; the warp stalls while its queue is full (mma_queue_depth)
  MmaCommit,    ///< tcgen05.commit: arrive `count` on `barrier` when every MMA issued before it has finished
  BarSync,      ///< named barrier `barrier`: arrive `count` threads and wait for the barrier to fill
  BarArrive,    ///< named barrier `barrier`: arrive `count` threads, do not wait
  MmaWait,      ///< wgmma.wait_group: block until at most `count` of this warp's MMA groups are unfinished
  CpAsync,      ///< cp.async / synchronous-style global->SMEM copy of `bytes` by this warp (memory path)
  CpAsyncWait,  ///< cp.async.wait_group: block until at most `count` of this warp's copies are unfinished
  SyncCopy,     ///< a copy the warp makes with its own loads and stores and waits out: `latency` cycles (its
                ///< SASS's issue time), recorded as a wait on cp.async.wait_group as the kernels record it
};

/// One step of a warp's program. Tags (stage, block, tile) only label spans.
struct Op {
  OpKind kind = OpKind::Compute;
  int16_t name = ATTNSIM_OP_COMPUTE;  ///< attnsim_op_id used for the span
  int8_t stage = -1;
  int8_t parity = 0;  ///< Wait: phase parity awaited (mbarrier try_wait.parity semantics)
  bool a_in_registers = false;  ///< Mma: operand A comes from registers (wgmma RS), else from SMEM
  int32_t block = -1;
  int32_t tile = -1;
  int32_t barrier = -1;  ///< mbarrier or named-barrier id
  int32_t count = 0;     ///< arrive count (threads, or 1 for elected-lane arrives)
  double bytes = 0;      ///< TMA bytes, or SMEM operand bytes of an MMA
  double flops = 0;      ///< MMA FLOP
  double latency = 0;    ///< Compute: cycles after the block (a tail no instruction of it overlaps)
  double chain = 0;      ///< Compute: dependency-chain latency, cycles: the block ends no sooner than
                         ///< its start + chain, however free the pipes are (critical path in the SASS)
  /// Compute: its work and measured timing (owned by the program's compute_blocks); null: none.
  const ComputeBlock* compute = nullptr;
  /// Compute: launch order of the op's CTA among the CTAs resident on the SM (0 oldest). The
  /// SMSP's warp scheduler issues for the oldest ready warp first (greedy-then-oldest), so an
  /// older CTA's blocks take the pipes first (PipeSharing); one CTA's warps are equals.
  int32_t cta_rank = 0;
};

/// A warp and the program it runs.
struct WarpProgram {
  int warp = 0;
  std::string role;
  std::vector<Op> ops;
};

/// An mbarrier (one stage of a pipeline side) or a named barrier, as declared by lowering.
struct BarrierDecl {
  std::string name;           ///< "pipeline_kv.full[2]" or "bar.stats[s0w1]"
  bool named = false;         ///< named barrier (bar.sync/bar.arrive) rather than mbarrier
  int expected = 1;           ///< arrive count per phase (threads for named barriers)
  std::vector<int> arrivers;  ///< warps that arrive on it (for deadlock wait-for graphs)
};

/// Everything the engine runs for one CTA (or for several CTAs resident on one SM, merged).
struct CtaProgram {
  std::vector<WarpProgram> warps;
  std::vector<BarrierDecl> barriers;
  /// Owners of the ComputeBlocks the ops point to (shared with copies and merged programs).
  std::vector<std::shared_ptr<const ComputeBlock>> compute_blocks;
};

/// Several CTAs resident on one SM as one program: CTA c's warps are numbered after those of
/// CTAs 0..c-1 (so they spread over the SMSPs), its barriers are its own, its roles are
/// prefixed "cta<c> " for c > 0, and its ops carry cta_rank c (CTA 0 launched first).
CtaProgram merge_ctas(const std::vector<CtaProgram>& ctas);

}  // namespace attnsim
