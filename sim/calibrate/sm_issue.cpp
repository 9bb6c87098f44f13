#include "calibrate/sm_issue.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "model/hardware.hpp"

namespace attnsim::sass {

SmIssueModel SmIssueModel::from(const Hardware& hw) {
  SmIssueModel m;
  m.warp = IssueModel::from(hw);
  m.smsp = hw.smsp_per_sm;
  m.hmma_interval = hw.mma_sync_flops_per_clk > 0 ? 4096.0 / (hw.mma_sync_flops_per_clk / hw.smsp_per_sm) : 0;
  m.smem_bytes_per_clk = hw.smem_bytes_per_clk;
  m.named_barrier_latency = hw.named_barrier_latency;
  return m;
}

double shared_bytes(const Instr& in) {
  if (in.base != "LDS" && in.base != "LDSM" && in.base != "STS") return 0;
  const std::string& o = in.opcode;
  auto has = [&](const char* suffix) { return o.find(suffix) != std::string::npos; };
  if (in.base == "LDSM") return has(".4") ? 512 : has(".2") ? 256 : 128;
  if (has(".128")) return 512;
  if (has(".64")) return 256;
  return 128;
}

namespace {

struct WarpState {
  size_t seg = 0, pos = 0;
  double ready = 0;                 // earliest issue of the next instruction by the stall counts
  std::array<double, 6> board{};    // scoreboard release times
  double memory_done = 0;           // the warp's shared-memory accesses all complete
  const Instr* previous = nullptr;  // for the operand reuse cache
  bool at_barrier = false;          // arrived at the bar.sync before segment `seg`, not yet released
  int barriers_passed = 0;
  bool done = false;
  std::vector<SegmentTime> times;
};

}  // namespace

std::vector<std::vector<SegmentTime>> issue_on_sm(const std::vector<WarpRun>& warps, const SmIssueModel& m,
                                                  double max_cycles) {
  const size_t n = warps.size();
  std::vector<WarpState> st(n);
  int groups = 0;
  for (size_t w = 0; w < n; ++w) {
    if (warps[w].smsp < 0 || warps[w].smsp >= m.smsp) throw std::invalid_argument("a warp on an SMSP the SM lacks");
    groups = std::max(groups, warps[w].group + 1);
    st[w].times.resize(warps[w].segments.size());
    for (const auto& s : warps[w].segments)
      for (const Instr* in : s.code)
        if (in->stall < 0)
          throw std::invalid_argument(fmt::format(
              "no scheduling control for /*{:04x}*/ {}: the listing needs encodings", in->address, in->text));
  }
  const std::array<double, kNumPipes> interval = {m.warp.fma_interval, m.warp.alu_interval, m.warp.mufu_interval};
  std::vector<std::array<double, kNumPipes>> pipe_free(static_cast<size_t>(m.smsp));
  std::vector<double> tensor_free(static_cast<size_t>(m.smsp), 0.0);
  std::vector<size_t> last_issuer(static_cast<size_t>(m.smsp), n);
  double smem_free = 0;
  // Barrier bookkeeping per group: arrivals at its current barrier and the latest arrival.
  std::vector<int> arrived(static_cast<size_t>(groups), 0);
  std::vector<int> members(static_cast<size_t>(groups), 0);
  std::vector<double> latest(static_cast<size_t>(groups), 0.0);
  for (const auto& w : warps) ++members[static_cast<size_t>(w.group)];

  // Barriers warp w has met up to and including each of its segments. They must agree within a
  // group, or the group would wait forever.
  std::vector<std::vector<int>> needed(n);
  std::vector<int> barriers(static_cast<size_t>(groups), -1);
  for (size_t w = 0; w < n; ++w) {
    int b = 0;
    for (const auto& seg : warps[w].segments) needed[w].push_back(b += seg.barrier_before);
    int& g = barriers[static_cast<size_t>(warps[w].group)];
    if (g >= 0 && g != b) throw std::invalid_argument("the warps of a group reach different numbers of barriers");
    g = b;
  }
  // Moves warp w past finished segments and into the barrier before its next one; marks it done
  // at the end. The last warp of a group to arrive releases the group.
  auto settle = [&](size_t w) {
    WarpState& s = st[w];
    const auto& segs = warps[w].segments;
    while (!s.done && !s.at_barrier) {
      if (s.seg >= segs.size()) {
        s.done = true;
        break;
      }
      if (s.pos == 0 && s.barriers_passed < needed[w][s.seg]) {
        s.at_barrier = true;
        const auto g = static_cast<size_t>(warps[w].group);
        ++arrived[g];
        latest[g] = std::max(latest[g], s.ready);
        if (arrived[g] == members[g]) {
          const double release = latest[g] + m.named_barrier_latency;
          for (size_t o = 0; o < n; ++o)
            if (warps[o].group == warps[w].group && st[o].at_barrier) {
              st[o].at_barrier = false;
              ++st[o].barriers_passed;
              st[o].ready = std::max(st[o].ready, release);
            }
          arrived[g] = 0;
          latest[g] = 0;
        }
        continue;
      }
      const Segment& seg = segs[s.seg];
      if (s.pos < seg.code.size()) break;
      if (seg.code.empty()) s.times[s.seg] = {s.ready, s.ready};
      ++s.seg;
      s.pos = 0;
    }
  };
  for (size_t w = 0; w < n; ++w) settle(w);

  double t = 0;
  while (true) {
    bool all_done = true;
    double next = INFINITY;  // earliest cycle at which some warp might issue
    for (int p = 0; p < m.smsp; ++p) {
      const auto sp = static_cast<size_t>(p);
      size_t chosen = n;
      for (size_t k = 1; k <= n && chosen == n; ++k) {
        const size_t w = (last_issuer[sp] == n ? k - 1 : (last_issuer[sp] + k) % n);
        if (warps[w].smsp != p) continue;
        WarpState& s = st[w];
        settle(w);  // a barrier released since it last issued may have left it at a segment's end
        if (s.done) continue;
        all_done = false;
        if (s.at_barrier) continue;
        const Instr& in = *warps[w].segments[s.seg].code[s.pos];
        double at = s.ready;
        for (int b = 0; b < 6; ++b)
          if ((in.wait_mask >> b) & 1) at = std::max(at, s.board[static_cast<size_t>(b)]);
        const int pipe = pipe_of(in);
        if (pipe != kNoPipe) at = std::max(at, pipe_free[sp][static_cast<size_t>(pipe)]);
        if (in.base == "HMMA") at = std::max(at, tensor_free[sp]);
        if (in.base == "MEMBAR") at = std::max(at, s.memory_done);
        if (at <= t) {
          chosen = w;
        } else {
          next = std::min(next, at);
        }
      }
      if (chosen == n) continue;
      last_issuer[sp] = chosen;
      WarpState& s = st[chosen];
      const Instr& in = *warps[chosen].segments[s.seg].code[s.pos];
      if (s.pos == 0) s.times[s.seg].start = t;
      const double issue = t + bank_conflict_cycles(in, s.previous, m.warp.register_banks);
      const int pipe = pipe_of(in);
      if (pipe != kNoPipe) pipe_free[sp][static_cast<size_t>(pipe)] = issue + interval[static_cast<size_t>(pipe)];
      if (in.base == "HMMA") tensor_free[sp] = issue + m.hmma_interval;
      double result = issue + result_latency(in, m.warp);
      if (const double bytes = shared_bytes(in); bytes > 0 && m.smem_bytes_per_clk > 0) {
        const double service = bytes / m.smem_bytes_per_clk;
        const double begin = std::max(issue, smem_free);
        smem_free = begin + service;
        result = begin + service - 1 + m.warp.lds_latency;
        s.memory_done = std::max(s.memory_done, in.base == "STS" ? begin + service : result);
      }
      if (in.write_barrier < 6) {
        double& b = s.board[static_cast<size_t>(in.write_barrier)];
        b = std::max(b, result);
      }
      if (in.read_barrier < 6) {
        double& b = s.board[static_cast<size_t>(in.read_barrier)];
        b = std::max(b, issue + m.warp.read_latency);
      }
      s.ready = issue + std::max(1, in.stall);
      s.times[s.seg].end = s.ready;
      s.previous = &in;
      ++s.pos;
      settle(chosen);
      next = std::min(next, t + 1);
    }
    if (all_done) break;
    if (!std::isfinite(next)) {
      // Nothing can ever issue: every remaining warp waits at a barrier some warp never reaches.
      throw std::invalid_argument("warps wait at a barrier that the rest of their group never reaches");
    }
    t = std::max(t + 1, std::ceil(next));
    if (t > max_cycles) throw std::invalid_argument(fmt::format("the warps run past {} cycles", max_cycles));
  }
  std::vector<std::vector<SegmentTime>> out;
  out.reserve(n);
  for (auto& s : st) out.push_back(std::move(s.times));
  return out;
}

}  // namespace attnsim::sass
