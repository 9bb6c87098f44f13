#include "calibrate/sass_loop_control.hpp"

#include <algorithm>

namespace attnsim::sass {

bool same_instance(const Fa3Knobs& a, const Fa3Knobs& b, bool any_scheduler) {
  return a.head_dim == b.head_dim && a.m_block == b.m_block && a.n_block == b.n_block && a.kv_stage == b.kv_stage &&
         a.pingpong == b.pingpong && a.overlap == b.overlap && a.reg_consumer == b.reg_consumer &&
         a.reg_producer == b.reg_producer && (any_scheduler || a.dynamic == b.dynamic) && a.own_o == b.own_o &&
         a.rescale_milli == b.rescale_milli && a.exp2_emu_freq == b.exp2_emu_freq &&
         a.exp2_emu_res == b.exp2_emu_res && a.o_in_v == b.o_in_v && a.trim_last == b.trim_last;
}

namespace {
LoopControlCount gaps(const KernelAnalysis& a) {
  LoopControlCount c;
  for (const auto& sp : a.spans)
    if (sp.op == "-") c.instructions += static_cast<int>(sp.code.size()), c.issue_cycles += std::max(0, sp.issue_cycles);
  return c;
}
}  // namespace

LoopControlCount loop_control_count(const KernelAnalysis& ka, const std::vector<KernelAnalysis>& traced,
                                    const std::vector<PlainLoop>& plain) {
  if (!ka.knobs.dynamic) return gaps(ka);
  const auto stat = std::find_if(traced.begin(), traced.end(), [&](const KernelAnalysis& a) {
    return !a.knobs.dynamic && same_instance(a.knobs, ka.knobs, true);
  });
  const auto plain_of = [&](const Fa3Knobs& k) {
    return std::find_if(plain.begin(), plain.end(), [&](const PlainLoop& p) { return same_instance(p.first, k); });
  };
  if (stat == traced.end()) return gaps(ka);
  const auto dyn_loop = plain_of(ka.knobs), stat_loop = plain_of(stat->knobs);
  if (dyn_loop == plain.end() || stat_loop == plain.end() || dyn_loop->second.issue_cycles < 0 ||
      stat_loop->second.issue_cycles < 0)  // not found, or a listing without control codes
    return gaps(ka);
  LoopControlCount c = gaps(*stat);
  c.plain_over_static_instructions = dyn_loop->second.on_path - stat_loop->second.on_path;
  c.plain_over_static_issue_cycles = dyn_loop->second.issue_cycles - stat_loop->second.issue_cycles;
  return c;
}

}  // namespace attnsim::sass
