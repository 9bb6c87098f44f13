#include "core/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "core/event_queue.hpp"
#include "core/pipe_sharing.hpp"

namespace attnsim {
namespace {

enum EventType : uint32_t {
  kWarpResume,     // a = warp
  kComputeDone,    // a = warp (its timer in the queue: one pending finish per warp)
  kTensorDone,     // a = tensor-core FIFO: it finished the job at its head
  kTmaDone,        // TMA finished the job at its head
  kBarrierArrive,  // a = barrier, b = count (delayed arrive: tcgen05.commit)
  kTxComplete,     // a = barrier, b = bytes (TMA load landed)
  kStoreDone,      // a = warp (TMA store finished reading SMEM)
  kMmaComplete,    // a = warp (one of its MMA groups finished: wgmma.wait_group accounting)
  kCopyComplete,   // a = warp (one of its cp.async copies landed)
  kLandingStart,   // a TMA load's bytes begin to land in the SM's shared memory
  kLandingEnd,     // ... and have landed
};

// Priorities among events at the same time: completions before resumptions, so a
// warp resuming at t sees every arrival that happened at t.
constexpr int32_t kPrioCompletion = 0;
constexpr int32_t kPrioResume = 1;

// Delayed: a wait that found its condition already met, paying the cost of the check
// (mbarrier try_wait / wgmma.wait_group on a completed phase or group).
// Issuing: an MMA group whose issue stalls until the tensor core's queue has room.
// Gathering: an SM90 wgmma group whose issue waits for the warpgroup's other warps to reach it.
enum class WarpState : uint8_t { Ready, Waiting, Computing, Storing, WaitingAsync, Delayed, Issuing, Gathering, Done };

struct Warp {
  size_t pc = 0;
  WarpState state = WarpState::Ready;
  double since = 0;  // start of the current span
  int wait_barrier = -1;
  int wait_parity = 0;
  int smsp = 0;
  int mma_outstanding = 0;    // MMA groups issued and not finished (wgmma.wait_group)
  int copy_outstanding = 0;   // cp.async copies issued and not landed (cp.async.wait_group)
  int async_limit = 0;        // WaitingAsync: resume when the awaited count drops to this
  int delay_label = -1;       // Delayed: the wait's timeline label
  double compute_start = 0;   // start of the warp's latest compute block (an MMA group's issue window)
  bool async_on_mma = false;  // WaitingAsync: on MMA groups (else on copies)
  int warpgroup = -1;         // its wgmma rendezvous (index into Engine::groups_), -1: issues alone
};

// The four warps of an SM90 warpgroup that issue the same wgmma groups: a wgmma issues only once
// every warp of the warpgroup has reached it (kernels/microbench wgmma_skew: a warp's issue end
// follows a late warp's delay cycle for cycle, slope 0.98, H200 2026-11-28), so the warps leave
// each group together, and the quarters start on their SMSPs' tensor cores when the last warp
// issues them.
constexpr size_t kWarpsPerWarpgroup = 4;
struct WarpgroupRendezvous {
  std::vector<int> arrived;  // warps at the current group so far (kWarpsPerWarpgroup: all here)
  double from = 0;           // the last arriver's issue window (TcEntry::issued spread over it)
};

struct Barrier {
  int pending = 0;    // arrivals still missing in this phase
  double tx = 0;      // transaction bytes still missing
  int phase_bit = 0;  // flips when a phase completes
  std::vector<int> waiters;
};

struct Job {  // work queued on the TMA engine
  const Op* op = nullptr;
  int warp = 0;
};

// One MMA instruction (or a tcgen05.commit) in a tensor core's queue. The queue runs them in the
// order they were issued, so the instructions of groups that two warps issue at the same time
// interleave (kernels/microbench wgmma_share).
struct TcEntry {
  const Op* op = nullptr;
  int warp = 0;
  double issued = 0;  // when the warp issued it (spread over its group's issue window)
  double cycles = 0;  // execution time on this queue's tensor core
  bool last = false;  // the group's last instruction: its completion completes the group
};

class Engine {
 public:
  Engine(const Hardware& hw, const CtaProgram& prog, const EngineOptions& opt)
      : hw_(hw), prog_(prog), opt_(opt), pipes_(hw, static_cast<int>(prog.warps.size())), q_(prog.warps.size()) {
    warps_.resize(prog.warps.size());
    stats_.resize(prog.warps.size());
    for (size_t w = 0; w < warps_.size(); ++w) {
      warps_[w].smsp = prog.warps[w].warp % hw.smsp_per_sm;
      stats_[w].wait_by_barrier.assign(prog.barriers.size() + 2, 0.0);  // + wgmma / cp.async waits
    }
    find_warpgroups();
    tc_q_.resize(static_cast<size_t>(tensor_queues()));
    tc_last_complete_.assign(tc_q_.size(), 0.0);
    tc_exec_end_.assign(tc_q_.size(), 0.0);
    tc_busy_.assign(tc_q_.size(), 0);
    tc_mma_.assign(tc_q_.size(), SmspMma::idle);
    barriers_.resize(prog.barriers.size());
    for (size_t b = 0; b < barriers_.size(); ++b) barriers_[b].pending = prog.barriers[b].expected;
    if (opt_.record_spans) {
      tl_.clock_ghz = hw.clock_ghz;
      for (size_t w = 0; w < warps_.size(); ++w)
        tl_.warps.push_back({prog.warps[w].warp, warps_[w].smsp, prog.warps[w].role, {}});
      tl_.units.push_back({"tensor_core", {}});
      tl_.units.push_back({"tma", {}});
      for (const auto& b : prog.barriers) {  // labels 2b, 2b+1: barrier b awaited with parity 0/1
        tl_.labels.push_back(b.named ? b.name : b.name + " phase 0");
        tl_.labels.push_back(b.named ? b.name : b.name + " phase 1");
      }
      tl_.labels.push_back("wgmma.wait_group");
      tl_.labels.push_back("cp.async.wait_group");
    }
  }

  SimResult run() {
    for (size_t w = 0; w < warps_.size(); ++w) q_.push(0, kPrioResume, kWarpResume, static_cast<int>(w));
    uint64_t events = 0;
    while (!q_.empty()) {
      Event e = q_.pop();
      if (++events > opt_.max_events)
        throw BudgetError("", fmt::format("the CTA simulation exceeded {} events", opt_.max_events));
      now_ = e.time;
      dispatch(e);
    }
    for (size_t w = 0; w < warps_.size(); ++w)
      if (warps_[w].state != WarpState::Done) report_deadlock();
    check_conservation();
    SimResult r;
    r.end_cycles = 0;
    for (const auto& s : stats_) r.end_cycles = std::max(r.end_cycles, s.end);
    r.end_cycles = std::max(r.end_cycles, units_end_);
    tl_.end_cycles = r.end_cycles;
    r.timeline = std::move(tl_);
    r.warps = std::move(stats_);
    units_.pipe_consumed.assign(pipes_.consumed().begin(), pipes_.consumed().end());
    units_.pipe_capacity.assign(pipes_.capacity().begin(), pipes_.capacity().end());
    r.units = units_;
    r.events = events;
    r.tma_bytes_per_clk = units_.tma_busy > 0 ? units_.tma_bytes / units_.tma_busy : tma_rate();
    return r;
  }

 private:
  void dispatch(const Event& e) {
    switch (e.type) {
      case kWarpResume:
        resume(e.a);
        break;
      case kComputeDone:
        if (warps_[e.a].state == WarpState::Computing) compute_done(e.a);
        break;
      case kTensorDone:
        tensor_done(e.a);
        break;
      case kTmaDone:
        tma_done();
        break;
      case kBarrierArrive:
        arrive(e.a, static_cast<int>(e.b), -1);
        break;
      case kTxComplete:
        complete_tx(e.a, static_cast<double>(e.b));
        break;
      case kLandingStart:
      case kLandingEnd:
        copies_landing_ += e.type == kLandingStart ? 1 : -1;
        if (pipes_.set_copies_landing(copies_landing_ > 0, now_)) reschedule_compute();
        break;
      case kMmaComplete:
      case kCopyComplete: {
        Warp& w = warps_[e.a];
        int& outstanding = e.type == kMmaComplete ? w.mma_outstanding : w.copy_outstanding;
        --outstanding;
        if (w.state == WarpState::WaitingAsync && w.async_on_mma == (e.type == kMmaComplete) &&
            outstanding <= w.async_limit) {
          close_span(e.a, SpanKind::Wait, ATTNSIM_OP_WAIT, async_label(w.async_on_mma));
          w.state = WarpState::Ready;
          ++w.pc;
          run_warp(e.a);
        }
        break;
      }
      case kStoreDone: {
        Warp& w = warps_[e.a];
        // The store's issue and its wait for the SMEM read are one span, as the kernel records it.
        close_span(e.a, SpanKind::Busy, -1, -1);
        w.state = WarpState::Ready;
        ++w.pc;
        run_warp(e.a);
        break;
      }
    }
  }

  const Op& op_at(int w) const { return prog_.warps[w].ops[warps_[w].pc]; }

  void resume(int w) {
    Warp& ws = warps_[w];
    if (ws.state == WarpState::Waiting) {
      // Woken by a phase completion: the wait op is now satisfied.
      close_span(w, SpanKind::Wait, ATTNSIM_OP_WAIT, 2 * ws.wait_barrier + ws.wait_parity);
      ws.state = WarpState::Ready;
      ++ws.pc;
    } else if (ws.state == WarpState::Delayed) {
      close_span(w, SpanKind::Wait, ATTNSIM_OP_WAIT, ws.delay_label);
      ws.state = WarpState::Ready;
      ++ws.pc;
    } else if (ws.state == WarpState::Issuing) {
      close_span(w, SpanKind::Busy, -1, -1);  // continues the issue block's span (same op name)
      ws.state = WarpState::Ready;
      ++ws.pc;
    }
    run_warp(w);
  }

  // Executes ops of warp w at time now_ until one takes time or blocks.
  void run_warp(int w) {
    Warp& ws = warps_[w];
    const auto& ops = prog_.warps[w].ops;
    while (ws.pc < ops.size()) {
      const Op& op = ops[ws.pc];
      switch (op.kind) {
        case OpKind::Wait: {
          const Barrier& b = barriers_[op.barrier];
          if (b.phase_bit != op.parity) {
            if (hw_.mbarrier_ready_cycles > 0) {
              delay(w, hw_.mbarrier_ready_cycles, 2 * op.barrier + op.parity);
              return;
            }
            ++ws.pc;
            break;
          }
          block_on(w, op.barrier, op.parity);
          return;
        }
        case OpKind::Arrive:
          arrive(op.barrier, op.count, w);
          ++ws.pc;
          break;
        case OpKind::Compute: {
          ws.state = WarpState::Computing;
          ws.since = now_;
          ws.compute_start = now_;
          static const ComputeBlock kNothing;
          const ComputeBlock& block = op.compute ? *op.compute : kNothing;
          pipes_.start(w, ws.smsp, block.work, now_, block.measured, op.cta_rank);
          reschedule_compute();
          return;
        }
        case OpKind::TmaLoad:
          expect_tx(op.barrier, op.bytes, w);
          tma_q_.push_back({&op, w});
          if (tma_q_.size() == 1) start_tma();
          ++ws.pc;
          break;
        case OpKind::TmaStore:
          if (op.count) {  // asynchronous: the warp goes on; the copy still takes the TMA's time
            tma_q_.push_back({&op, w});
            if (tma_q_.size() == 1) start_tma();
            ++ws.pc;
            break;
          }
          ws.state = WarpState::Storing;
          ws.since = now_;
          tma_q_.push_back({&op, w});
          if (tma_q_.size() == 1) start_tma();
          return;
        case OpKind::Mma:
        case OpKind::MmaCommit: {
          const int tq = tensor_queue(w);
          if (op.kind == OpKind::MmaCommit) {
            enqueue_tensor(tq, {&op, w, now_, 0, true});
            ++ws.pc;
            break;
          }
          // The group's instructions went out evenly over the end of the compute block that
          // issued it (the block before, of the same op): over its dependency chain, the
          // back-to-back issue cost (wgmma_issue), within the block.
          const bool issued_by_block =
              ws.pc > 0 && ops[ws.pc - 1].kind == OpKind::Compute && ops[ws.pc - 1].name == op.name;
          const double from = issued_by_block ? std::max(ws.compute_start, now_ - ops[ws.pc - 1].chain) : now_;
          if (ws.warpgroup >= 0) {
            WarpgroupRendezvous& g = groups_[ws.warpgroup];
            g.arrived.push_back(w);
            g.from = from;  // the last arriver's window stands for the group's
            if (g.arrived.size() < kWarpsPerWarpgroup) {
              ws.state = WarpState::Gathering;
              ws.since = now_;
              return;
            }
            // The last warp is here: the others issue with it (their stall continues their span).
            for (int o : g.arrived) {
              if (o == w) continue;
              const double accept = issue_mma(o, op_at(o), g.from);
              warps_[o].state = WarpState::Issuing;
              q_.push(std::max(now_, accept), kPrioResume, kWarpResume, o);
            }
            g.arrived.clear();
          }
          const double accept = issue_mma(w, op, from);
          if (accept > now_) {
            ws.state = WarpState::Issuing;
            ws.since = now_;
            q_.push(accept, kPrioResume, kWarpResume, w);
            return;
          }
          ++ws.pc;
          break;
        }
        case OpKind::BarSync: {
          const bool released = named_arrive(op.barrier, op.count, w);
          if (released) {
            // The arrival that fills the barrier is released with the warps waiting on it, after
            // the barrier's latency (kernels/microbench named_barrier: a round of bar.sync in which
            // every warp syncs takes 41 cycles, H200); the kernel records that wait too.
            if (hw_.named_barrier_latency > 0) {
              delay(w, hw_.named_barrier_latency, 2 * op.barrier);
              return;
            }
            ++ws.pc;
            break;
          }
          block_on(w, op.barrier, 0);
          return;
        }
        case OpKind::BarArrive:
          named_arrive(op.barrier, op.count, w);
          ++ws.pc;
          break;
        case OpKind::MmaWait:
        case OpKind::CpAsyncWait: {
          const bool mma = op.kind == OpKind::MmaWait;
          if ((mma ? ws.mma_outstanding : ws.copy_outstanding) <= op.count) {
            if (mma && hw_.wgmma_wait_ready_cycles > 0) {
              delay(w, hw_.wgmma_wait_ready_cycles, async_label(true));
              return;
            }
            ++ws.pc;
            break;
          }
          ws.state = WarpState::WaitingAsync;
          ws.since = now_;
          ws.async_limit = op.count;
          ws.async_on_mma = mma;
          return;
        }
        case OpKind::SyncCopy:
          delay(w, op.latency, async_label(false));
          return;
        case OpKind::CpAsync:
          ++ws.copy_outstanding;
          tma_q_.push_back({&op, w});
          if (tma_q_.size() == 1) start_tma();
          ++ws.pc;
          break;
      }
    }
    ws.state = WarpState::Done;
    stats_[w].end = now_;
  }

  // A wait whose condition already holds: it passes after `cycles`, recorded as a wait span.
  void delay(int w, double cycles, int label) {
    Warp& ws = warps_[w];
    ws.state = WarpState::Delayed;
    ws.since = now_;
    ws.delay_label = label;
    q_.push(now_ + cycles, kPrioResume, kWarpResume, w);
  }

  int async_label(bool mma) const { return static_cast<int>(2 * prog_.barriers.size()) + (mma ? 0 : 1); }

  void block_on(int w, int barrier, int parity) {
    Warp& ws = warps_[w];
    ws.state = WarpState::Waiting;
    ws.since = now_;
    ws.wait_barrier = barrier;
    ws.wait_parity = parity;
    barriers_[barrier].waiters.push_back(w);
  }

  void close_span(int w, SpanKind kind, int op_name, int label) {
    Warp& ws = warps_[w];
    const double dur = now_ - ws.since;
    if (kind == SpanKind::Busy)
      stats_[w].busy += dur;
    else {
      stats_[w].wait += dur;
      if (label >= 0 && ws.state == WarpState::Waiting) stats_[w].wait_by_barrier[ws.wait_barrier] += dur;
      if (ws.state == WarpState::WaitingAsync)
        stats_[w].wait_by_barrier[prog_.barriers.size() + (ws.async_on_mma ? 0 : 1)] += dur;
    }
    if (!opt_.record_spans || dur <= 0) return;
    const Op& op = op_at(w);
    auto& spans = tl_.warps[w].spans;
    // An MMA issue stalled by back-pressure, or a TMA store's wait for its SMEM read, continues the
    // span of the compute block that issued it: one span, as the kernel records it.
    if (kind == SpanKind::Busy && op.kind != OpKind::Compute && !spans.empty() &&
        spans.back().kind == SpanKind::Busy && spans.back().op == op.name && spans.back().end == ws.since) {
      spans.back().end = now_;
      return;
    }
    Span s;
    s.start = ws.since;
    s.end = now_;
    s.kind = kind;
    s.op = static_cast<int16_t>(kind == SpanKind::Busy ? op.name : op_name);
    s.stage = op.stage;
    s.block = op.block;
    s.tile = op.tile;
    s.label = label;
    spans.push_back(s);
  }

  // --- compute blocks ---------------------------------------------------------
  // Every running block's finish moves whenever the SM's rates change: a timer per warp, replaced
  // in place (a push per change left the heap full of stale finishes: 7 of 8 events popped in a
  // long prediction, a third of its time).
  void reschedule_compute() {
    const uint32_t resolved = pipes_.resolved_smsps();  // the others' rates did not change
    for (size_t w = 0; w < warps_.size(); ++w) {
      if (((resolved >> warps_[w].smsp) & 1u) == 0) continue;
      if (warps_[w].state != WarpState::Computing || !pipes_.active(static_cast<int>(w))) continue;
      const double t = pipes_.finish_time(static_cast<int>(w));
      if (std::isfinite(t))
        q_.set_timer(w, std::max(t, now_), kPrioCompletion, kComputeDone, static_cast<int>(w));
      else
        q_.cancel_timer(w);
    }
  }

  void compute_done(int w) {
    Warp& ws = warps_[w];
    if (pipes_.active(w)) {
      pipes_.finish(w, now_);
      reschedule_compute();
      // Pipe work done. The block still ends no sooner than its dependency chain allows, and
      // its result arrives `latency` after that.
      const Op& op = op_at(w);
      const double done = std::max(now_, ws.since + op.chain) + op.latency;
      if (done > now_) {
        q_.set_timer(static_cast<size_t>(w), done, kPrioCompletion, kComputeDone, w);
        return;
      }
    }
    close_span(w, SpanKind::Busy, -1, -1);
    ws.state = WarpState::Ready;
    ++ws.pc;
    run_warp(w);
  }

  // --- mbarriers ----------------------------------------------------------------
  void expect_tx(int b, double bytes, int w) {
    barriers_[b].tx += bytes;
    arrive(b, 1, w);
  }

  void complete_tx(int b, double bytes) {
    Barrier& bar = barriers_[b];
    bar.tx -= bytes;
    if (bar.tx < 1e-6 && bar.tx > -1e-6) bar.tx = 0;
    if (bar.tx < 0)
      throw ProgramError(fmt::format("{}: more TMA bytes completed than expected", prog_.barriers[b].name));
    maybe_complete_phase(b);
  }

  void arrive(int b, int count, int by_warp) {
    Barrier& bar = barriers_[b];
    bar.pending -= count;
    if (bar.pending < 0)
      throw ProgramError(fmt::format(
          "{}: {} arrivals in one phase but its count is {} (last arrival by {})", prog_.barriers[b].name,
          prog_.barriers[b].expected - bar.pending, prog_.barriers[b].expected,
          by_warp >= 0 ? fmt::format("warp {}", prog_.warps[by_warp].warp) : std::string("tcgen05.commit")));
    maybe_complete_phase(b);
  }

  void maybe_complete_phase(int b) {
    Barrier& bar = barriers_[b];
    if (bar.pending > 0 || bar.tx > 0) return;
    bar.phase_bit ^= 1;
    bar.pending = prog_.barriers[b].expected;
    wake(b, hw_.mbarrier_latency);
  }

  void wake(int b, double delay) {
    Barrier& bar = barriers_[b];
    std::vector<int> still;
    for (int w : bar.waiters) {
      // mbarrier: a waiter passes once the phase it awaited completed (parity differs).
      if (prog_.barriers[b].named || bar.phase_bit != warps_[w].wait_parity)
        q_.push(now_ + delay, kPrioResume, kWarpResume, w);
      else
        still.push_back(w);
    }
    bar.waiters.swap(still);
  }

  // Named barrier: returns true when this arrival filled it (the arriving warp passes).
  bool named_arrive(int b, int count, int w) {
    Barrier& bar = barriers_[b];
    bar.pending -= count;
    if (bar.pending < 0)
      throw ProgramError(fmt::format("{}: more threads arrived than its count {}", prog_.barriers[b].name,
                                     prog_.barriers[b].expected));
    if (bar.pending > 0) return false;
    bar.pending = prog_.barriers[b].expected;
    bar.phase_bit ^= 1;
    wake(b, hw_.named_barrier_latency);
    return true;
  }

  // Puts warp w's MMA group `op` into its tensor core's queue, its instructions issued evenly from
  // `from` to now; each runs from when it was issued or the tensor core freed up, whichever is
  // later, even if that is before now. Returns when the warp may go on: now, or later where the
  // queue is full (issue back-pressure: the group's last instruction enters the queue once no more
  // than mma_queue_depth instructions wait ahead of it, itself included).
  double issue_mma(int w, const Op& op, double from) {
    ++warps_[w].mma_outstanding;
    const int tq = tensor_queue(w);
    const int instrs = std::max(1, op.count);
    const double cycles = mma_cycles(op) / instrs;
    size_t last_pos = 0;
    for (int i = 0; i < instrs; ++i)
      last_pos = enqueue_tensor(tq, {&op, w, from + (i + 1) * (now_ - from) / instrs, cycles, i == instrs - 1});
    const double accept = projected_start(tq, last_pos - std::min(last_pos, queue_depth()));
    return last_pos > queue_depth() ? std::max(now_, accept) : now_;
  }

  // SM90: the warpgroups whose four warps issue the same wgmma groups (same role, as many MMA ops
  // each) meet at every group (WarpgroupRendezvous). A warp that issues MMAs alone (a hand-written
  // schedule's single MMA warp), and SM100's single-thread tcgen05.mma, does not wait.
  void find_warpgroups() {
    if (hw_.has_tmem()) return;
    std::vector<std::vector<int>> by_group;
    for (size_t w = 0; w < prog_.warps.size(); ++w) {
      const size_t g = static_cast<size_t>(prog_.warps[w].warp) / kWarpsPerWarpgroup;
      if (by_group.size() <= g) by_group.resize(g + 1);
      by_group[g].push_back(static_cast<int>(w));
    }
    auto mma_ops = [&](int w) {
      return std::count_if(prog_.warps[w].ops.begin(), prog_.warps[w].ops.end(),
                           [](const Op& o) { return o.kind == OpKind::Mma; });
    };
    for (const auto& ws : by_group) {
      if (ws.size() != kWarpsPerWarpgroup || mma_ops(ws[0]) == 0) continue;
      const bool same = std::all_of(ws.begin(), ws.end(), [&](int w) {
        return prog_.warps[w].role == prog_.warps[ws[0]].role && mma_ops(w) == mma_ops(ws[0]);
      });
      if (!same) continue;
      for (int w : ws) warps_[w].warpgroup = static_cast<int>(groups_.size());
      groups_.push_back({});
    }
  }

  // --- tensor cores (in-order queues of MMA instructions and commits) -------------
  // SM100: one SM-wide tensor core fed by the single thread that issues tcgen05.mma. SM90: a
  // warpgroup's wgmma runs on the four SMSPs' tensor cores at once, each warp's quarter (16 rows)
  // on its own SMSP's, so each SMSP has a queue at a quarter of the SM's rate, shared by the warps
  // on that SMSP.
  int tensor_queues() const { return hw_.has_tmem() ? 1 : hw_.smsp_per_sm; }
  int tensor_queue(int w) const { return hw_.has_tmem() ? 0 : warps_[w].smsp; }
  size_t queue_depth() const { return static_cast<size_t>(std::max(0.0, std::round(hw_.mma_queue_depth))); }
  double mma_cycles(const Op& op) const {
    const double n = tensor_queues();
    return std::max(op.flops / (hw_.tensor_flops_per_clk / n),
                    hw_.smem_bytes_per_clk > 0 ? op.bytes / (hw_.smem_bytes_per_clk / n) : 0.0);
  }

  // Puts `e` into queue tq in issue order: behind every entry issued no later than it, never
  // ahead of the one executing (the front, while the queue is busy). Returns its position among
  // the entries that wait (0: next to run). Starts the queue if it was idle.
  size_t enqueue_tensor(int tq, const TcEntry& e) {
    auto& q = tc_q_[tq];
    const size_t first_waiting = tc_busy_[tq] ? 1 : 0;
    size_t pos = q.size();
    while (pos > first_waiting && q[pos - 1].issued > e.issued) --pos;
    q.insert(q.begin() + static_cast<std::ptrdiff_t>(pos), e);
    if (!tc_busy_[tq]) {
      start_tensor(tq);
      return 0;  // started, or (a commit) done at once: nothing waits ahead of it
    }
    return pos - first_waiting;
  }

  // When the entry at waiting position `pos` of queue tq would start if nothing else arrived.
  double projected_start(int tq, size_t pos) const {
    const auto& q = tc_q_[tq];
    double t = tc_exec_end_[tq];
    const size_t first_waiting = tc_busy_[tq] ? 1 : 0;
    for (size_t i = first_waiting; i < first_waiting + pos && i < q.size(); ++i)
      t = std::max(t, q[i].issued) + q[i].cycles;
    return first_waiting + pos < q.size() ? std::max(t, q[first_waiting + pos].issued) : t;
  }

  void start_tensor(int tq) {
    auto& fifo = tc_q_[tq];
    while (!fifo.empty()) {
      const TcEntry& j = fifo.front();
      if (j.op->kind == OpKind::MmaCommit) {
        // Arrives once every earlier MMA has completed (in order: all are done by then).
        q_.push(std::max(now_, tc_last_complete_[tq]), kPrioCompletion, kBarrierArrive, j.op->barrier, j.op->count);
        fifo.pop_front();
        continue;
      }
      // It runs from when it was issued, or when the previous instruction finished: possibly
      // before now, when its group was pushed at the end of the block that issued it.
      const double dur = j.cycles;
      const double start = std::max(tc_exec_end_[tq], j.issued);
      const int instrs = std::max(1, j.op->count);
      set_tensor_busy(tq, j.op);
      units_.tensor_busy += dur / tensor_queues();
      units_.tensor_flops += j.op->flops / instrs;
      units_.mma_smem_bytes += j.op->bytes / instrs;
      tc_exec_end_[tq] = start + dur;
      tc_last_complete_[tq] = start + dur + hw_.mma_latency;
      units_end_ = std::max(units_end_, tc_last_complete_[tq]);
      if (j.last) q_.push(std::max(now_, tc_last_complete_[tq]), kPrioCompletion, kMmaComplete, j.warp);
      if (tq == 0) unit_span(0, *j.op, start, start + dur);  // one track: SMSP 0's tensor core stands for all
      q_.push(std::max(now_, start + dur), kPrioCompletion, kTensorDone, tq);
      return;
    }
    set_tensor_busy(tq, nullptr);
  }
  void tensor_done(int tq) {
    tc_q_[tq].pop_front();
    start_tensor(tq);
  }
  // While an SMSP's tensor core runs wgmma, its CUDA-core pipes keep only a fraction of their rate
  // (the accumulators share the register file's ports; measured by kernels/microbench
  // pipes_under_mma and, per block of the kernel's own code, softmax_block), by the operand
  // source of the running instruction. Not on SM100, whose single FIFO stands for the whole SM and
  // accumulates in TMEM.
  void set_tensor_busy(int tq, const Op* running) {
    tc_busy_[tq] = running != nullptr;
    if (hw_.has_tmem()) return;
    const SmspMma mma = !running ? SmspMma::idle : running->a_in_registers ? SmspMma::rs : SmspMma::ss;
    if (mma == tc_mma_[tq]) return;
    tc_mma_[tq] = mma;
    if (pipes_.set_smsp_mma(tq, mma, now_)) reschedule_compute();
  }

  // --- TMA engine (FIFO; the chip's L2/HBM rate shared with the other SMs) ------
  /// Fraction of the time so far this SM's TMA has been moving bytes; 1 at the start, when every
  /// SM issues its first loads at once.
  double tma_duty() const { return now_ > 0 ? std::min(1.0, units_.tma_busy / now_) : 1.0; }
  /// Rate of the next copy, bytes per cycle: the SM's port, or its processor-sharing share of the
  /// chip's rate at this K/V sharing with the other SMs that transfer at the same moment. Mean
  /// field: each of the other active SMs transfers the same fraction of the time as this one. An
  /// SM that loads in bursts between compute gets its port rate while the chip has room
  /// (kernels/microbench tma_under_load, H100: a lone 16 KB L2-hit load takes 521 cycles with the
  /// other SMs keeping L2 39% busy, 513 alone); one that never stops gets a 1 / active_sms share.
  double tma_rate() const {
    const double others = (std::max(1, opt_.active_sms) - 1) * tma_duty();
    return std::min(hw_.tma_bytes_per_clk_sm, l2_bytes_per_clk(hw_, opt_.kv_sharing) / (1 + others));
  }
  /// The chip's HBM utilisation by the other SMs as this one sees it (mean field: each of the
  /// other active SMs draws HBM bytes at this SM's average rate so far), against hbm_bytes_per_s;
  /// 1 at the start when other SMs are active (every SM loads at once), 0 alone. HBM, not L2:
  /// kernels/microbench tma_under_load (H100) shows a load's latency growing with the HBM traffic
  /// of the other SMs (x2.2-2.7 at 96-100% of HBM bandwidth) and hardly with their L2-hit traffic
  /// (x1.18 with L2 saturated at 6.7 TB/s).
  double hbm_utilisation() const {
    const int others = std::max(1, opt_.active_sms) - 1;
    if (others == 0 || hw_.hbm_bytes_per_s <= 0) return 0.0;
    if (now_ <= 0) return 1.0;
    const double hbm_bytes_per_clk = hw_.hbm_bytes_per_s / (hw_.clock_ghz * 1e9);
    return std::min(1.0, others * hbm_demand_ / now_ / hbm_bytes_per_clk);
  }
  /// Latency of a TMA load, issue to mbarrier complete less its transfer: a tile no other CTA reads
  /// comes from HBM (tma_latency_hbm); a K/V tile that `kv_sharing` CTAs stream at once is filled
  /// from HBM by one of them and hits L2 for the others. Requests queue in L2 and the memory
  /// controllers as HBM gets busy: x (1 + k rho / sqrt(1 - rho)) (tma_queue_factor, fitted on
  /// kernels/microbench tma_under_load up to rho = 0.96, the last point below saturation; beyond
  /// it the chip's share in tma_rate() bounds the transfer).
  double tma_load_latency(const Op& op) const {
    constexpr double kMaxFittedUtilisation = 0.96;
    const double alone =
        op.count ? hw_.tma_latency_hbm
                 : hw_.tma_latency + (hw_.tma_latency_hbm - hw_.tma_latency) / std::max(1.0, opt_.kv_sharing);
    const double rho = std::min(hbm_utilisation(), kMaxFittedUtilisation);
    return alone * (1 + hw_.tma_queue_factor * rho / std::sqrt(1 - rho));
  }
  void start_tma() {
    if (tma_q_.empty()) return;
    const Job& j = tma_q_.front();
    const double dur = j.op->bytes / tma_rate();
    units_.tma_busy += dur;
    units_.tma_bytes += j.op->bytes;
    if (j.op->kind == OpKind::TmaStore || (j.op->kind == OpKind::TmaLoad && j.op->count)) {
      units_.hbm_bytes += j.op->bytes;
      hbm_demand_ += j.op->bytes;
    } else {  // a shared K/V tile: one of the kv_sharing CTAs streaming it fills it from HBM
      hbm_demand_ += j.op->bytes / std::max(1.0, opt_.kv_sharing);
    }
    unit_span(1, *j.op, now_, now_ + dur);
    q_.push(now_ + dur, kPrioCompletion, kTmaDone, 0);
  }
  void tma_done() {
    const Job j = tma_q_.front();
    tma_q_.pop_front();
    // Stores finish reading SMEM after their own latency; cp.async copies (fa2) wait out the L2's.
    const double latency = j.op->kind == OpKind::TmaStore  ? hw_.tma_store_latency
                           : j.op->kind == OpKind::TmaLoad ? tma_load_latency(*j.op)
                                                           : hw_.tma_latency;
    const double landed = now_ + latency;
    units_end_ = std::max(units_end_, landed);
    if (j.op->kind == OpKind::TmaLoad) {
      q_.push(landed, kPrioCompletion, kTxComplete, j.op->barrier, static_cast<int64_t>(std::llround(j.op->bytes)));
      // Its bytes reach shared memory over the end of its latency, at the copy's fill rate
      // (kernels/microbench tma: the slope of latency against bytes, about the SM's port rate).
      q_.push(std::max(now_, landed - j.op->bytes / hw_.tma_bytes_per_clk_sm), kPrioCompletion, kLandingStart, 0);
      q_.push(landed, kPrioCompletion, kLandingEnd, 0);
    } else if (j.op->kind == OpKind::CpAsync)
      q_.push(landed, kPrioCompletion, kCopyComplete, j.warp);
    else if (!j.op->count)  // an asynchronous store wakes nobody
      q_.push(landed, kPrioCompletion, kStoreDone, j.warp);
    start_tma();
  }

  void unit_span(int unit, const Op& op, double t0, double t1) {
    if (!opt_.record_spans) return;
    auto& spans = tl_.units[unit].spans;
    // Back-to-back instructions of one MMA group make one span.
    if (!spans.empty() && spans.back().end == t0 && spans.back().op == op.name && spans.back().block == op.block &&
        spans.back().tile == op.tile && spans.back().stage == op.stage) {
      spans.back().end = t1;
      return;
    }
    Span s;
    s.start = t0;
    s.end = t1;
    s.op = op.name;
    s.stage = op.stage;
    s.block = op.block;
    s.tile = op.tile;
    spans.push_back(s);
  }

  // Every mbarrier phase that was started must have completed: leftover arrivals or TMA bytes
  // mean some warp arrived more (or fewer) times than its partners waited.
  void check_conservation() const {
    for (size_t b = 0; b < barriers_.size(); ++b) {
      const BarrierDecl& d = prog_.barriers[b];
      if (d.named) continue;
      if (barriers_[b].pending != d.expected || barriers_[b].tx != 0)
        throw ProgramError(
            fmt::format("{} ended with a partial phase: {} of {} arrivals{} — arrivals and waits do not "
                        "balance",
                        d.name, d.expected - barriers_[b].pending, d.expected,
                        barriers_[b].tx != 0 ? fmt::format(", {:.0f} TMA bytes outstanding", barriers_[b].tx) : ""));
    }
  }

  // --- deadlock -------------------------------------------------------------------
  [[noreturn]] void report_deadlock() {
    std::vector<BlockedWarp> blocked;
    std::vector<int> waiting(warps_.size(), 0);
    std::string text = fmt::format("deadlock at cycle {:.0f}: the event queue is empty but warps still wait\n", now_);
    for (size_t w = 0; w < warps_.size(); ++w) {
      const Warp& ws = warps_[w];
      if (ws.state == WarpState::Done) continue;
      BlockedWarp bw;
      bw.warp = prog_.warps[w].warp;
      bw.role = prog_.warps[w].role;
      bw.op_index = static_cast<int>(ws.pc);
      if (ws.state == WarpState::Waiting) {
        waiting[w] = 1;
        bw.barrier = prog_.barriers[ws.wait_barrier].name;
        bw.parity = ws.wait_parity;
        const Barrier& b = barriers_[ws.wait_barrier];
        text += fmt::format("  {} w{} (op {}) waits on {} {} (missing {} of {} arrivals{})\n", bw.role, bw.warp,
                            bw.op_index, bw.barrier,
                            prog_.barriers[ws.wait_barrier].named ? "" : fmt::format("phase parity {}", bw.parity),
                            b.pending, prog_.barriers[ws.wait_barrier].expected,
                            b.tx > 0 ? fmt::format(", {:.0f} TMA bytes", b.tx) : "");
      } else if (ws.state == WarpState::Gathering) {
        bw.barrier = "(wgmma rendezvous)";
        text += fmt::format("  {} w{} (op {}) waits at a wgmma for its warpgroup's other warps\n", bw.role, bw.warp,
                            bw.op_index);
      } else {
        bw.barrier = "(not waiting)";
        text += fmt::format("  {} w{} (op {}) is not waiting\n", bw.role, bw.warp, bw.op_index);
      }
      blocked.push_back(bw);
    }
    // Wait-for graph: a waiting warp waits for every unfinished warp that arrives on its barrier.
    auto successors = [&](size_t w) {
      std::vector<size_t> out;
      if (!waiting[w]) return out;
      for (int a : prog_.barriers[warps_[w].wait_barrier].arrivers)
        if (warps_[a].state != WarpState::Done) out.push_back(static_cast<size_t>(a));
      return out;
    };
    std::vector<int> cycle;
    for (size_t start = 0; start < warps_.size() && cycle.empty(); ++start) {
      if (!waiting[start]) continue;
      // DFS for a cycle through `start`.
      std::vector<size_t> path{start};
      std::vector<std::vector<size_t>> stack{successors(start)};
      std::vector<int> on_path(warps_.size(), 0);
      on_path[start] = 1;
      while (!stack.empty() && cycle.empty()) {
        if (stack.back().empty()) {
          on_path[path.back()] = 0;
          path.pop_back();
          stack.pop_back();
          continue;
        }
        size_t next = stack.back().front();
        stack.back().erase(stack.back().begin());
        if (next == start) {
          for (size_t p : path) cycle.push_back(static_cast<int>(p));
          cycle.push_back(static_cast<int>(start));
        } else if (!on_path[next] && waiting[next]) {
          on_path[next] = 1;
          path.push_back(next);
          stack.push_back(successors(next));
        }
      }
    }
    if (!cycle.empty()) {
      text += "wait-for cycle: ";
      for (size_t i = 0; i < cycle.size(); ++i) {
        const int w = cycle[i];
        text += fmt::format("{}{} w{}", i ? " -> " : "", prog_.warps[w].role, prog_.warps[w].warp);
        if (i + 1 < cycle.size()) text += fmt::format(" [{}]", prog_.barriers[warps_[w].wait_barrier].name);
      }
      text += "\n";
    } else {
      text += "no wait-for cycle: some barrier waits for an arrival that no remaining warp will make\n";
    }
    std::vector<int> cycle_warps;
    for (int w : cycle) cycle_warps.push_back(prog_.warps[w].warp);
    throw DeadlockError(text, blocked, cycle_warps, now_);
  }

  const Hardware& hw_;
  const CtaProgram& prog_;
  EngineOptions opt_;
  PipeSharing pipes_;
  EventQueue q_;
  double now_ = 0;
  std::vector<Warp> warps_;
  std::vector<WarpStats> stats_;
  std::vector<Barrier> barriers_;
  std::vector<WarpgroupRendezvous> groups_;  // SM90 warpgroups meeting at each wgmma group
  std::vector<std::deque<TcEntry>> tc_q_;  // per tensor-core queue; its front executes while busy
  std::vector<double> tc_last_complete_;   // per queue: when its last started instruction's result is visible
  std::vector<double> tc_exec_end_;        // per queue: when the executing instruction finishes
  std::vector<char> tc_busy_;              // per queue: executing an instruction now
  std::vector<SmspMma> tc_mma_;            // per queue: what the pipes beside it see running
  std::deque<Job> tma_q_;
  int copies_landing_ = 0;  // TMA loads whose bytes are landing in shared memory now
  double units_end_ = 0;
  UnitStats units_;
  double hbm_demand_ = 0;  ///< bytes this SM's copies drew from HBM: hbm_bytes + 1 / kv_sharing of K/V loads
  Timeline tl_;
};

}  // namespace

double l2_bytes_per_clk(const Hardware& hw, double sharing) {
  const double chip = 1 / (1 / hw.l2_hit_bytes_per_s + 1 / (std::max(1.0, sharing) * hw.kv_fill_bytes_per_s));
  return chip / (hw.clock_ghz * 1e9);
}

SimResult simulate_cta(const Hardware& hw, const CtaProgram& program, const EngineOptions& options) {
  Engine e(hw, program, options);
  return e.run();
}

}  // namespace attnsim
