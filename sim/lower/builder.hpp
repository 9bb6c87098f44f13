// Helpers that lowering code uses to emit warp programs: a CTA builder that owns the
// barriers and records who arrives where (for deadlock reports), and CUTLASS-style pipeline
// steps on a PipelineState (kernels/common/pipeline_state.h, shared with the kernels).
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "common/pipeline_state.h"
#include "core/program.hpp"

namespace attnsim {

/// An mbarrier ring: `stages` full barriers and `stages` empty barriers.
struct PipelineIds {
  std::string name;
  int stages = 1;
  std::vector<int> full, empty;  ///< barrier ids per stage
  /// Stage `s` alone, as a one-stage pipeline: for a role bound to one stage (FA4's softmax
  /// warpgroup of Q stage s), whose state advances one phase per pass over its stage.
  PipelineIds stage(int s) const { return {name, 1, {full.at(s)}, {empty.at(s)}}; }
  /// A producer's / consumer's first state in this ring.
  PipelineState producer_start() const { return PipelineState::producer_start(stages); }
  PipelineState consumer_start() const { return PipelineState::consumer_start(stages); }
};

class CtaBuilder;

/// Emits ops into one warp's program; stage/block/tile tags apply to the ops that follow.
class WarpBuilder {
 public:
  WarpBuilder(CtaBuilder& cta, size_t slot) : cta_(&cta), slot_(slot) {}
  WarpBuilder& tags(int stage, int block, int tile);
  void wait(int barrier, int parity);
  void arrive(int barrier, int count);
  /// A compute block: `work` on the pipes (processor sharing), lasting at least `chain` cycles
  /// (its dependency chain), then `latency` cycles of tail; `measured`: its timing measured on the
  /// GPU, if any (stand-alone cycles and slowdowns beside wgmma).
  void compute(int name, const Work& work, double latency = 0, double chain = 0, const MeasuredTiming& measured = {});
  /// TMA load of `bytes` completing on `barrier`; `from_hbm`: no other CTA reads this tile, so it
  /// misses in L2 (Q tiles), else it is an L2 hit (K/V tiles shared by a head's m-blocks).
  void tma_load(int name, int barrier, double bytes, bool from_hbm = false);
  /// TMA store of `bytes` from SMEM; `wait`: the warp waits until it has read SMEM (else it goes
  /// on at once, as a kernel that waits for the read only before reusing the buffer).
  void tma_store(int name, double bytes, bool wait = true);
  /// An MMA group of `instructions` wgmma / tcgen05.mma instructions, `flops` and `smem_bytes`
  /// of operand reads in all, queued on the tensor core; `a_in_registers`: wgmma RS (A from the
  /// issuing warps' registers), else both operands from SMEM (or TMEM on SM100).
  void mma(int name, double flops, double smem_bytes, int instructions = 1, bool a_in_registers = false);
  void commit(int barrier, int count);
  void bar_sync(int barrier, int threads);
  void bar_arrive(int barrier, int threads);
  /// wgmma.wait_group: wait until at most `pending` of this warp's MMA groups are unfinished.
  void wait_mma(int pending);
  /// cp.async copy of `bytes` into SMEM by this warp; cp.async.wait_group(`pending`) waits for it.
  void cp_async(int name, double bytes);
  void wait_cp_async(int pending);
  /// A global -> SMEM copy the warp makes with its own loads and waits out, lasting `cycles`
  /// (OpKind::SyncCopy).
  void sync_copy(double cycles);

  // CUTLASS-style pipeline steps. Waits use the state's stage and parity; commit and release
  // arrive on the state's stage and advance the state.
  /// Producer: wait until the stage is free (its empty barrier).
  void producer_acquire(const PipelineIds& p, const PipelineState& s) { wait(p.empty[s.index], s.phase); }
  /// Producer: `count` arrivals on the stage's full barrier, then the next stage.
  void producer_commit(const PipelineIds& p, PipelineState& s, int count) {
    arrive(p.full[s.index], count);
    s.advance();
  }
  /// Consumer: wait until the stage is filled (its full barrier).
  void consumer_wait(const PipelineIds& p, const PipelineState& s) { wait(p.full[s.index], s.phase); }
  /// Consumer: `count` arrivals on the stage's empty barrier, then the next stage.
  void consumer_release(const PipelineIds& p, PipelineState& s, int count) {
    arrive(p.empty[s.index], count);
    s.advance();
  }
  int warp() const;

 private:
  Op& push(OpKind kind, int name);
  void note_arriver(int barrier);
  CtaBuilder* cta_;
  size_t slot_;
  int stage_ = -1, block_ = -1, tile_ = -1;
};

/// Owns the CtaProgram under construction.
class CtaBuilder {
 public:
  /// Declares an mbarrier (or named barrier) expecting `expected` arrivals per phase.
  int barrier(const std::string& name, int expected, bool named = false);
  PipelineIds pipeline(const std::string& name, int stages, int full_count, int empty_count);
  WarpBuilder warp(int warp_index, const std::string& role);
  /// The finished program, warps sorted by warp index (arriver lists follow).
  CtaProgram take();
  CtaProgram& program() { return prog_; }

 private:
  friend class WarpBuilder;
  /// The program's ComputeBlock equal to `block`, added if new.
  const ComputeBlock* intern(const ComputeBlock& block);
  struct BlockHash {
    size_t operator()(const ComputeBlock& b) const;
  };
  CtaProgram prog_;
  std::unordered_map<ComputeBlock, const ComputeBlock*, BlockHash> interned_;  ///< prog_.compute_blocks by value
};

}  // namespace attnsim
