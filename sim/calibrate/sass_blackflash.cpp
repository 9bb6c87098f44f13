#include "calibrate/sass_blackflash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace attnsim::sass {

namespace {

constexpr int kBlocks = 6;       ///< KV blocks simulated
constexpr int kSteadyBlock = 4;  ///< the block whose spans are taken (the earlier ones warm up)

size_t index_of(const Function& fn, uint32_t address) {
  for (size_t i = 0; i < fn.code.size(); ++i)
    if (fn.code[i].address == address) return i;
  throw std::runtime_error(fmt::format("{}: no instruction at {:#x}", fn.name, address));
}

bool is_bar_sync(const Instr& in) { return in.base == "BAR" && in.opcode.find("SYNC") != std::string::npos; }
bool conditional_forward(const Instr& in) { return in.is_branch() && !in.backward() && in.predicated; }

/// Instructions of code [from, to) that write -INF (the mask's selects; the row max's start too).
int neg_inf_writes(const Function& fn, size_t from, size_t to) {
  int n = 0;
  for (size_t i = from; i < to && i < fn.code.size(); ++i) n += fn.code[i].writes_neg_inf;
  return n;
}

/// Per warp and segment, the times of kBlocks KV blocks of `block` run by `ctas` CTAs that start together.
std::vector<std::vector<SegmentTime>> run_blocks(const std::vector<Segment>& block, const SmIssueModel& m, int ctas) {
  std::vector<WarpRun> warps;
  for (int c = 0; c < ctas; ++c)
    for (int i = 0; i < kBlackFlashConsumers; ++i) {
      WarpRun w;
      w.smsp = (c * (kBlackFlashConsumers + 1) + 1 + i) % m.smsp;
      w.group = c;
      for (int b = 0; b < kBlocks; ++b) w.segments.insert(w.segments.end(), block.begin(), block.end());
      warps.push_back(std::move(w));
    }
  return issue_on_sm(warps, m);
}

/// Mean over warps of the steady block's segment times, and the period from its start to the next.
std::pair<std::vector<double>, double> steady(const std::vector<std::vector<SegmentTime>>& t, size_t per_block) {
  std::vector<double> spans(per_block, 0.0);
  double period = 0;
  for (const auto& w : t) {
    const size_t first = kSteadyBlock * per_block;
    for (size_t s = 0; s < per_block; ++s) spans[s] += w[first + s].end - w[first + s].start;
    period += w[first + per_block].start - w[first].start;
  }
  for (double& s : spans) s /= static_cast<double>(t.size());
  return {spans, period / static_cast<double>(t.size())};
}

}  // namespace

std::optional<BlackFlashKnobs> blackflash_knobs(const std::string& mangled) {
  if (mangled.find("blackflash_forward") == std::string::npos) return std::nullopt;
  const size_t p = mangled.find("BfTraitsI");
  if (p == std::string::npos) return std::nullopt;
  const auto v = mangled_template_values(mangled, p + 9);
  if (v.size() != 4) return std::nullopt;
  return BlackFlashKnobs{static_cast<int>(v[0]), v[1] != 0, static_cast<int>(v[2]), v[3] != 0};
}

const BlackFlashSpan* BlackFlashAnalysis::find(const std::string& op) const {
  for (const auto& s : spans)
    if (s.op == op) return &s;
  return nullptr;
}

BlackFlashAnalysis analyse_blackflash(const Function& fn, const SmIssueModel& m, int ctas_per_sm) {
  const auto k = blackflash_knobs(fn.mangled);
  if (!k) throw std::runtime_error(fn.name + ": not a blackflash_forward instance");
  if (k->trace) throw std::runtime_error(fn.name + ": a traced instance (its spills and records are not the kernel's)");
  if (ctas_per_sm < 1) throw std::runtime_error("ctas_per_sm must be at least 1");
  BlackFlashAnalysis a;
  a.function = &fn;
  a.knobs = *k;
  a.ctas_per_sm = ctas_per_sm;
  const auto& code = fn.code;
  // The consumer KV loop: the innermost loop around two consecutive bar.sync.
  std::vector<size_t> bars;
  for (size_t i = 0; i < code.size(); ++i)
    if (is_bar_sync(code[i])) bars.push_back(i);
  size_t head = 0, back = 0, bar0 = 0, bar1 = 0;
  for (size_t b = 0; b + 1 < bars.size() && back == 0; ++b)
    for (size_t i = bars[b + 1]; i < code.size(); ++i) {
      if (!code[i].is_branch() || !code[i].backward()) continue;
      const size_t h = index_of(fn, *code[i].target);
      if (h > bars[b] || (back != 0 && i - h >= back - head)) continue;
      head = h, back = i, bar0 = bars[b], bar1 = bars[b + 1];
    }
  if (back == 0) throw std::runtime_error(fn.name + ": no loop around two consecutive bar.sync (the consumer KV loop)");
  a.kv_loop_bytes = code[back].address - code[head].address + 16;
  if (m.warp.icache_bytes > 0 && static_cast<int>(a.kv_loop_bytes) > m.warp.icache_bytes)
    throw std::runtime_error(fmt::format("{}: the KV loop ({} B) exceeds the instruction cache ({} B)", fn.name,
                                         a.kv_loop_bytes, m.warp.icache_bytes));

  // The stage's try-wait: taken as complete (its branch to the wait's exit taken).
  size_t wait = head;
  while (wait < bar0 && code[wait].opcode.find("TRYWAIT") == std::string::npos) ++wait;
  if (wait >= bar0 || !conditional_forward(code[wait + 1]))
    throw std::runtime_error(fn.name + ": no mbarrier try-wait with a branch to its exit before the first bar.sync");
  const uint32_t wait_exit = *code[wait + 1].target;
  // The mask branch: the first conditional forward branch after the first HMMA.
  size_t hmma = index_of(fn, wait_exit);
  while (hmma < bar0 && code[hmma].base != "HMMA") ++hmma;
  size_t mask = hmma;
  while (mask < bar0 && !conditional_forward(code[mask])) ++mask;
  if (hmma >= bar0 || mask >= bar0)
    throw std::runtime_error(fn.name + ": no HMMA followed by the mask branch before the first bar.sync");
  // The branch falls into one arm, which ends with a jump over the other to where they join.
  const size_t target = index_of(fn, *code[mask].target);
  const Instr& over = code[target - 1];
  if (!over.is_branch() || over.predicated || over.backward())
    throw std::runtime_error(fmt::format("{}: the branch at {:#x} has no second arm", fn.name, code[mask].address));
  const size_t join = index_of(fn, *over.target);
  // The arm that writes -INF more often is the masked one (both start their row max at -INF).
  const int fall_inf = neg_inf_writes(fn, mask + 1, target), target_inf = neg_inf_writes(fn, target, join);
  const bool target_masked = target_inf > fall_inf;
  if (target_inf == fall_inf)
    throw std::runtime_error(
        fmt::format("{}: cannot tell the masked arm of the branch at {:#x}", fn.name, code[mask].address));
  // The rescale branch: the first conditional forward branch after the second bar.sync; its
  // fall-through (j > 0) multiplies O.
  size_t rescale = bar1 + 1;
  while (rescale < back && !conditional_forward(code[rescale])) ++rescale;
  if (rescale >= back) throw std::runtime_error(fn.name + ": no rescale branch after the second bar.sync");
  const uint32_t rescale_end = *code[rescale].target;
  bool multiplies = false;
  for (size_t i = rescale + 1; i < index_of(fn, rescale_end); ++i) multiplies |= code[i].base == "FMUL";
  if (!multiplies)
    throw std::runtime_error(
        fmt::format("{}: the branch at {:#x} skips no FMUL: not the rescale of O", fn.name, code[rescale].address));

  const uint32_t mask_at = code[mask].address;
  auto path = [&](uint32_t from, uint32_t to, bool masked) {
    return unroll_path(fn, from, to, {}, 100000, {{mask_at, masked == target_masked}, {code[rescale].address, false}});
  };
  std::vector<const Instr*> qk = path(code[head].address, code[wait].address, false);
  const auto after_wait = path(wait_exit, mask_at, false);
  qk.insert(qk.end(), after_wait.begin(), after_wait.end());
  const uint32_t after_loop = code[back + 1].address;
  auto span = [](const char* op, std::vector<const Instr*> p) {
    BlackFlashSpan s;
    s.op = op;
    s.path = std::move(p);
    return s;
  };
  a.spans = {span("mma_qk", qk),
             span("softmax_max", path(mask_at, code[bar0].address, false)),
             span("softmax_exp", path(code[bar0 + 1].address, code[bar1].address, false)),
             span("rescale_o", path(code[bar1 + 1].address, rescale_end, false)),
             span("mma_pv", path(rescale_end, after_loop, false)),
             span("softmax_max_masked", path(mask_at, code[bar0].address, true))};
  for (auto& s : a.spans)
    for (const Instr* in : s.path) {
      s.shared_bytes += shared_bytes(*in);
      s.hmma += in->base == "HMMA";
    }

  // One warp alone, one KV block as one stream (the loop is cached: warm).
  std::vector<std::vector<const Instr*>> one;
  for (size_t s = 0; s < 5; ++s) one.push_back(a.spans[s].path);
  auto alone = issue_segments(one, m.warp);
  for (size_t s = 0; s < 5; ++s) a.spans[s].alone = alone[s];
  one[1] = a.spans[5].path;
  a.spans[5].alone = issue_segments(one, m.warp)[1];

  // The resident warps together.
  auto block = [&](bool masked) {
    return std::vector<Segment>{{a.spans[0].path, false},
                                {a.spans[masked ? 5 : 1].path, false},
                                {a.spans[2].path, true},
                                {a.spans[3].path, true},
                                {a.spans[4].path, false}};
  };
  const auto [spans, period] = steady(run_blocks(block(false), m, ctas_per_sm), 5);
  const auto [masked_spans, masked_period] = steady(run_blocks(block(true), m, ctas_per_sm), 5);
  for (size_t s = 0; s < 5; ++s) a.spans[s].cycles = spans[s];
  a.spans[5].cycles = masked_spans[1];
  a.period = period;
  a.period_masked = masked_period;
  return a;
}

}  // namespace attnsim::sass
