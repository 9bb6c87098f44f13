#include "lower/builder.hpp"

#include <algorithm>
#include <functional>

namespace attnsim {

int CtaBuilder::barrier(const std::string& name, int expected, bool named) {
  BarrierDecl d;
  d.name = name;
  d.expected = expected;
  d.named = named;
  prog_.barriers.push_back(d);
  return static_cast<int>(prog_.barriers.size() - 1);
}

PipelineIds CtaBuilder::pipeline(const std::string& name, int stages, int full_count, int empty_count) {
  PipelineIds p;
  p.name = name;
  p.stages = stages;
  for (int s = 0; s < stages; ++s) {
    p.full.push_back(barrier(name + ".full[" + std::to_string(s) + "]", full_count));
    p.empty.push_back(barrier(name + ".empty[" + std::to_string(s) + "]", empty_count));
  }
  return p;
}

CtaProgram CtaBuilder::take() {
  std::vector<size_t> order(prog_.warps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return prog_.warps[a].warp < prog_.warps[b].warp; });
  std::vector<int> slot_of(order.size());
  CtaProgram out;
  for (size_t i = 0; i < order.size(); ++i) {
    slot_of[order[i]] = static_cast<int>(i);
    out.warps.push_back(std::move(prog_.warps[order[i]]));
  }
  out.barriers = std::move(prog_.barriers);
  for (auto& b : out.barriers) {
    for (int& a : b.arrivers) a = slot_of[static_cast<size_t>(a)];
    std::sort(b.arrivers.begin(), b.arrivers.end());
  }
  out.compute_blocks = std::move(prog_.compute_blocks);
  prog_ = {};
  interned_.clear();
  return out;
}

size_t CtaBuilder::BlockHash::operator()(const ComputeBlock& b) const {
  size_t h = 0;
  for (double v : {b.work.issue, b.work.fma_lanes, b.work.alu_lanes, b.work.mufu_lanes, b.work.mma_sync_flops,
                   b.work.tmem_bytes, b.work.smem_bytes, b.measured.alone, b.measured.beside_ss, b.measured.beside_rs})
    h = h * 1000003u ^ std::hash<double>{}(v);
  return h ^ static_cast<size_t>(b.measured.with_residents);
}

const ComputeBlock* CtaBuilder::intern(const ComputeBlock& block) {
  auto it = interned_.find(block);
  if (it != interned_.end()) return it->second;
  prog_.compute_blocks.push_back(std::make_shared<const ComputeBlock>(block));
  const ComputeBlock* p = prog_.compute_blocks.back().get();
  interned_.emplace(block, p);
  return p;
}

WarpBuilder CtaBuilder::warp(int warp_index, const std::string& role) {
  for (size_t i = 0; i < prog_.warps.size(); ++i)
    if (prog_.warps[i].warp == warp_index) return WarpBuilder(*this, i);
  prog_.warps.push_back(WarpProgram{warp_index, role, {}});
  return WarpBuilder(*this, prog_.warps.size() - 1);
}

int WarpBuilder::warp() const { return cta_->prog_.warps[slot_].warp; }

WarpBuilder& WarpBuilder::tags(int stage, int block, int tile) {
  stage_ = stage;
  block_ = block;
  tile_ = tile;
  return *this;
}

Op& WarpBuilder::push(OpKind kind, int name) {
  auto& ops = cta_->prog_.warps[slot_].ops;
  ops.emplace_back();
  Op& op = ops.back();
  op.kind = kind;
  op.name = static_cast<int16_t>(name);
  op.stage = static_cast<int8_t>(stage_);
  op.block = block_;
  op.tile = tile_;
  return op;
}

void WarpBuilder::note_arriver(int barrier) {
  auto& a = cta_->prog_.barriers[static_cast<size_t>(barrier)].arrivers;
  const int slot = static_cast<int>(slot_);
  if (std::find(a.begin(), a.end(), slot) == a.end()) a.push_back(slot);
}

void WarpBuilder::wait(int barrier, int parity) {
  Op& op = push(OpKind::Wait, ATTNSIM_OP_WAIT);
  op.barrier = barrier;
  op.parity = static_cast<int8_t>(parity);
}

void WarpBuilder::arrive(int barrier, int count) {
  Op& op = push(OpKind::Arrive, ATTNSIM_OP_ARRIVE);
  op.barrier = barrier;
  op.count = count;
  note_arriver(barrier);
}

void WarpBuilder::compute(int name, const Work& work, double latency, double chain, const MeasuredTiming& measured) {
  Op& op = push(OpKind::Compute, name);
  op.compute = cta_->intern(ComputeBlock{work, measured});
  op.latency = latency;
  op.chain = chain;
}

void WarpBuilder::tma_load(int name, int barrier, double bytes, bool from_hbm) {
  Op& op = push(OpKind::TmaLoad, name);
  op.barrier = barrier;
  op.bytes = bytes;
  op.count = from_hbm ? 1 : 0;
  note_arriver(barrier);
}

void WarpBuilder::tma_store(int name, double bytes, bool wait) {
  Op& op = push(OpKind::TmaStore, name);
  op.bytes = bytes;
  op.count = wait ? 0 : 1;
}

void WarpBuilder::mma(int name, double flops, double smem_bytes, int instructions, bool a_in_registers) {
  Op& op = push(OpKind::Mma, name);
  op.a_in_registers = a_in_registers;
  op.flops = flops;
  op.bytes = smem_bytes;
  op.count = instructions;
}

void WarpBuilder::commit(int barrier, int count) {
  Op& op = push(OpKind::MmaCommit, ATTNSIM_OP_MMA_COMMIT);
  op.barrier = barrier;
  op.count = count;
  note_arriver(barrier);
}

void WarpBuilder::bar_sync(int barrier, int threads) {
  Op& op = push(OpKind::BarSync, ATTNSIM_OP_BAR_SYNC);
  op.barrier = barrier;
  op.count = threads;
  note_arriver(barrier);
}

void WarpBuilder::bar_arrive(int barrier, int threads) {
  Op& op = push(OpKind::BarArrive, ATTNSIM_OP_ARRIVE);
  op.barrier = barrier;
  op.count = threads;
  note_arriver(barrier);
}

void WarpBuilder::wait_mma(int pending) {
  Op& op = push(OpKind::MmaWait, ATTNSIM_OP_WAIT);
  op.count = pending;
}

void WarpBuilder::cp_async(int name, double bytes) {
  Op& op = push(OpKind::CpAsync, name);
  op.bytes = bytes;
}

void WarpBuilder::sync_copy(double cycles) {
  Op& op = push(OpKind::SyncCopy, ATTNSIM_OP_WAIT);
  op.latency = cycles;
}

void WarpBuilder::wait_cp_async(int pending) {
  Op& op = push(OpKind::CpAsyncWait, ATTNSIM_OP_WAIT);
  op.count = pending;
}

}  // namespace attnsim
