#include "calibrate/sass_fa2.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace attnsim::sass {

namespace {

constexpr int kLoadWarps = 2;  ///< warps 0-1 copy K and V (kernels/fa2/structure.h)

struct Loop {
  size_t head = 0, branch = 0;  // indices into the function's code
  bool has_inner = false;
  int inner_loops = 0;
};

int count_in(const Function& fn, size_t from, size_t to, const std::string& opcode) {
  int n = 0;
  for (size_t i = from; i <= to; ++i) n += fn.code[i].opcode == opcode || fn.code[i].base == opcode;
  return n;
}

/// Iterations of a loop doing `work` units in total when one pass does `per_pass`.
int iterations(const Function& fn, const std::string& op, const Loop& l, int work, int per_pass, const char* what) {
  if (per_pass <= 0 || work % per_pass != 0)
    throw std::runtime_error(fmt::format("{}: {} loop at {:#x}: {} {} per pass does not divide the {} of the span",
                                         fn.name, op, fn.code[l.branch].address, per_pass, what, work));
  return work / per_pass;
}

/// Every loop of fn (a backward branch and its head), each marked with the loops inside it.
std::vector<Loop> find_loops(const Function& fn) {
  std::vector<Loop> loops;
  for (size_t i = 0; i < fn.code.size(); ++i)
    if (fn.code[i].is_branch() && fn.code[i].backward()) {
      Loop l;
      l.branch = i;
      l.head = i;
      while (l.head > 0 && fn.code[l.head].address > *fn.code[i].target) --l.head;
      loops.push_back(l);
    }
  for (auto& l : loops)
    for (const auto& o : loops)
      if (&o != &l && o.head >= l.head && o.branch < l.branch) l.has_inner = true, ++l.inner_loops;
  return loops;
}

/// Bytes of code of the innermost loop around both __syncthreads (code indices bar0 < bar1): the
/// KV loop. Throws when there is none.
uint32_t kv_loop_bytes(const Function& fn, const std::vector<Loop>& loops, size_t bar0, size_t bar1) {
  uint32_t best = 0;
  for (const Loop& l : loops)
    if (l.head <= bar0 && l.branch > bar1) {
      const uint32_t bytes = fn.code[l.branch].address - fn.code[l.head].address + 16;
      if (best == 0 || bytes < best) best = bytes;
    }
  if (best == 0) throw std::runtime_error(fn.name + ": no loop around the KV loop's __syncthreads");
  return best;
}

std::vector<size_t> barriers(const Function& fn) {
  std::vector<size_t> bars;
  for (size_t i = 0; i < fn.code.size(); ++i)
    if (fn.code[i].base == "BAR" && fn.code[i].opcode.find("SYNC") != std::string::npos) bars.push_back(i);
  return bars;
}

}  // namespace

std::optional<Fa2Knobs> fa2_knobs(const std::string& mangled) {
  if (mangled.find("fa2_forward") == std::string::npos) return std::nullopt;
  const size_t p = mangled.find("Fa2TraitsI");
  if (p == std::string::npos) return std::nullopt;
  const auto v = mangled_template_values(mangled, p + 10);
  if (v.size() != 4) return std::nullopt;
  return Fa2Knobs{static_cast<int>(v[0]), static_cast<int>(v[1]), static_cast<int>(v[2]), v[3] != 0};
}

const Fa2Span* Fa2Analysis::find(const std::string& op) const {
  for (const auto& s : spans)
    if (s.op == op) return &s;
  return nullptr;
}

Fa2Analysis analyse_fa2(const Function& fn, const IssueModel& m) {
  const auto k = fa2_knobs(fn.mangled);
  if (!k) throw std::runtime_error(fn.name + ": not an fa2_forward instance");
  if (!k->trace) throw std::runtime_error(fn.name + ": the plain kernel has no clock reads to split spans at");
  Fa2Analysis a;
  a.function = &fn;
  a.knobs = *k;
  // The KV loop's two __syncthreads with the six clock reads of its compute spans between them.
  const std::vector<size_t> bars = barriers(fn);
  std::vector<size_t> clocks;
  size_t bar0 = 0, bar1 = 0;
  for (size_t b = 0; b + 1 < bars.size() && clocks.empty(); ++b) {
    std::vector<size_t> c;
    for (size_t i = bars[b] + 1; i < bars[b + 1]; ++i)
      if (fn.code[i].clock_read) c.push_back(i);
    if (c.size() == 6) clocks = c, bar0 = bars[b], bar1 = bars[b + 1];
  }
  if (clocks.empty())
    throw std::runtime_error(fn.name +
                             ": no two BAR.SYNC with the six clock reads of the KV loop's spans between them");
  const std::vector<Loop> loops = find_loops(fn);
  a.kv_loop_bytes = kv_loop_bytes(fn, loops, bar0, bar1);
  a.cold_icache = static_cast<int>(a.kv_loop_bytes) > m.icache_bytes;

  const char* ops[] = {"mma_qk", "softmax_max", "softmax_exp", "rescale_o", "mma_pv"};
  const int d = k->head_dim, rows = k->rows_per_warp();
  std::vector<std::vector<const Instr*>> paths;
  for (int s = 0; s < 5; ++s) {
    Fa2Span span;
    span.op = ops[s];
    const size_t first = clocks[s] + 1, last = clocks[s + 1];  // code [first, last)
    span.begin = fn.code[first].address;
    span.end = fn.code[last].address;
    for (const Loop& l : loops) {
      if (l.branch < first || l.branch >= last) continue;
      if (l.head < first)
        throw std::runtime_error(
            fmt::format("{}: loop at {:#x} starts before the {} span", fn.name, fn.code[l.branch].address, span.op));
      int n = 0;
      if (span.op == "mma_qk") {
        n = l.has_inner ? iterations(fn, span.op, l, k->scores_per_lane(), l.inner_loops, "inner loops (scores)")
                        : iterations(fn, span.op, l, d, count_in(fn, l.head, l.branch, "FFMA"), "FFMA (head_dim)");
      } else if (l.has_inner) {
        throw std::runtime_error(fmt::format("{}: nested loops in the {} span", fn.name, span.op));
      } else if (span.op == "softmax_max") {
        n = iterations(fn, span.op, l, k->bc / 2, count_in(fn, l.head, l.branch, "FMNMX"), "FMNMX (Bc / 2)");
      } else if (span.op == "softmax_exp") {
        n = iterations(fn, span.op, l, k->bc / 2, count_in(fn, l.head, l.branch, "MUFU.EX2"), "MUFU.EX2 (Bc / 2)");
      } else if (span.op == "rescale_o") {
        n = iterations(fn, span.op, l, rows * k->out_per_lane(), count_in(fn, l.head, l.branch, "FMUL"), "FMUL");
      } else {
        n = iterations(fn, span.op, l, rows * k->bc * k->out_per_lane(), count_in(fn, l.head, l.branch, "FFMA"),
                       "FFMA");
      }
      span.taken[fn.code[l.branch].address] = n - 1;
    }
    std::vector<const Instr*> path;
    for (const Instr* in : unroll_path(fn, span.begin, span.end, span.taken)) {
      if (in->base == "STG" && in->predicated) {  // the trace recorder's record store (lane 0 of traced warps)
        ++span.instrumentation;
        continue;
      }
      path.push_back(in);
    }
    paths.push_back(std::move(path));
    a.spans.push_back(std::move(span));
  }
  // One KV block's spans in a row: the fetch that runs ahead while one span waits serves the next.
  const auto times = issue_segments(paths, m, a.cold_icache);
  for (size_t s = 0; s < times.size(); ++s) a.spans[s].issue = times[s];

  // The K/V copy of the load warps: the clock interval two reads before the first __syncthreads
  // (copy start, copy end, then the barrier wait's start). Its steady state is the copy loops'
  // unrolled bodies (global load, shared store), each run tile rows x head_dim / 8 / 64 vectors
  // per lane (two warps copy) over the loads one pass issues; the setup and remainder code around
  // them is left out (the remainder runs no pass when the vectors divide evenly, as they must).
  std::vector<size_t> before;
  for (size_t i = 0; i < bar0; ++i)
    if (fn.code[i].clock_read) before.push_back(i);
  if (before.size() < 3) throw std::runtime_error(fn.name + ": no clock reads around the K/V copy");
  const size_t c0 = before[before.size() - 3], c1 = before[before.size() - 2];
  Fa2Span copy;
  copy.op = "copy_kv";
  copy.begin = fn.code[c0 + 1].address;
  copy.end = fn.code[c1].address;
  const int vectors = k->bc * (d / 8) / (32 * kLoadWarps);
  std::vector<const Instr*> path;
  for (const Loop& l : loops) {
    if (l.branch <= c0 || l.branch >= c1 || count_in(fn, l.head, l.branch, "LDG") == 0) continue;
    const int passes = iterations(fn, copy.op, l, vectors, count_in(fn, l.head, l.branch, "LDG"), "LDG (vectors)");
    copy.taken[fn.code[l.branch].address] = passes - 1;
    const auto body = unroll_path(fn, fn.code[l.head].address, fn.code[l.branch + 1].address,
                                  {{fn.code[l.branch].address, passes - 1}});
    path.insert(path.end(), body.begin(), body.end());
  }
  if (copy.taken.size() != 2)
    throw std::runtime_error(
        fmt::format("{}: {} copy loops with global loads, expected 2 (K and V)", fn.name, copy.taken.size()));
  copy.issue = issue_time(path, m, a.cold_icache);
  a.spans.insert(a.spans.begin(), std::move(copy));
  return a;
}

Fa2PlainLoop analyse_fa2_plain(const Function& fn, const IssueModel& m) {
  const auto k = fa2_knobs(fn.mangled);
  if (!k) throw std::runtime_error(fn.name + ": not an fa2_forward instance");
  if (k->trace) throw std::runtime_error(fn.name + ": a traced instance (analyse_fa2 splits its spans)");
  Fa2PlainLoop a;
  a.function = &fn;
  a.knobs = *k;
  const std::vector<Loop> loops = find_loops(fn);
  // The KV loop's two __syncthreads: consecutive BAR.SYNC inside one loop with the exp2 between.
  const std::vector<size_t> bars = barriers(fn);
  size_t bar0 = 0, bar1 = 0;
  for (size_t b = 0; b + 1 < bars.size() && bar1 == 0; ++b)
    if (count_in(fn, bars[b], bars[b + 1], "MUFU.EX2") > 0)
      for (const Loop& l : loops)
        if (l.head <= bars[b] && l.branch > bars[b + 1]) bar0 = bars[b], bar1 = bars[b + 1];
  if (bar1 == 0) throw std::runtime_error(fn.name + ": no two BAR.SYNC in a loop with the softmax's exp2 between them");
  a.cold_icache = static_cast<int>(kv_loop_bytes(fn, loops, bar0, bar1)) > m.icache_bytes;
  a.begin = fn.code[bar0 + 1].address;
  a.end = fn.code[bar1].address;

  const int d = k->head_dim, rows = k->rows_per_warp();
  const std::string op = "KV-loop";
  // The S = Q K^T nest: the region's first loop with loops inside it.
  const Loop* nest = nullptr;
  for (const Loop& l : loops)
    if (l.head > bar0 && l.branch < bar1 && l.has_inner && (!nest || l.head < nest->head)) nest = &l;
  for (const Loop& l : loops)
    if (l.head > bar0 && l.branch < bar1 && l.has_inner && &l != nest)
      throw std::runtime_error(
          fmt::format("{}: nested loops at {:#x} after S = Q K^T", fn.name, fn.code[l.branch].address));
  std::map<uint32_t, int> taken;
  for (const Loop& l : loops) {
    if (l.branch <= bar0 || l.branch >= bar1) continue;
    if (l.head <= bar0)
      throw std::runtime_error(fmt::format("{}: loop at {:#x} starts before the KV loop's __syncthreads", fn.name,
                                           fn.code[l.branch].address));
    const bool in_nest = nest && &l != nest && l.head >= nest->head && l.branch < nest->branch;
    int n = 0;
    if (&l == nest)
      n = iterations(fn, op, l, k->scores_per_lane(), l.inner_loops, "inner loops (scores)");
    else if (in_nest)
      n = iterations(fn, op, l, d, count_in(fn, l.head, l.branch, "FFMA"), "FFMA (head_dim)");
    else if (count_in(fn, l.head, l.branch, "FMNMX") > 0)
      n = iterations(fn, op, l, k->bc / 2, count_in(fn, l.head, l.branch, "FMNMX"), "FMNMX (Bc / 2)");
    else if (count_in(fn, l.head, l.branch, "MUFU.EX2") > 0)
      n = iterations(fn, op, l, k->bc / 2, count_in(fn, l.head, l.branch, "MUFU.EX2"), "MUFU.EX2 (Bc / 2)");
    else if (count_in(fn, l.head, l.branch, "FFMA") > 0)
      n = iterations(fn, op, l, rows * k->bc * k->out_per_lane(), count_in(fn, l.head, l.branch, "FFMA"), "FFMA");
    else
      n = iterations(fn, op, l, rows * k->out_per_lane(), count_in(fn, l.head, l.branch, "FMUL"), "FMUL");
    taken[fn.code[l.branch].address] = n - 1;
  }
  a.issue = issue_time(unroll_path(fn, a.begin, a.end, taken), m, a.cold_icache);
  return a;
}

}  // namespace attnsim::sass
