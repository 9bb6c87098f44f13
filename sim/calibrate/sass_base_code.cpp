#include "calibrate/sass_base_code.hpp"

#include <fmt/format.h>

#include <vector>

#include "lower/fa3/fa3_schedule.hpp"
#include "lower/schedule.hpp"
#include "model/problem.hpp"

namespace attnsim::sass {

bool runs_schedule_code(const Fa3Knobs& k, const Hardware& hw, const std::string& schedule_file) {
  const std::vector<std::string> sets = {
      fmt::format("/tile={{\"m_block\":{},\"n_block\":{}}}", k.m_block, k.n_block),
      fmt::format("/kv_stage={}", k.kv_stage), fmt::format("/pingpong={}", k.pingpong),
      fmt::format("/intra_warpgroup_overlap={}", k.overlap)};
  const auto schedule = load_schedule(schedule_file, sets);
  const auto* fa3 = dynamic_cast<const fa3::Fa3Schedule*>(schedule.get());
  if (!fa3) return false;
  Problem p;
  p.head_dim = p.head_dim_v = k.head_dim;
  p.causal = k.dynamic;  // the auto scheduler is dynamic on causal problems
  const fa3::Resolved r = fa3->resolve(hw, p);
  // A knob the instance's name does not carry (a listing older than the knob) was no choice then.
  const bool o_staging = k.args < 11 || (r.own_o_buffer == k.own_o && (k.args < 16 || r.o_in_v_ring == k.o_in_v));
  const bool rescale = k.args < 13 || r.conditional_rescale == (k.rescale_milli >= 0);
  const bool exp2 = k.args < 15 || (r.exp2_emu_freq > 0) == (k.exp2_emu_freq > 0);
  const bool trim = k.args < 17 || r.trim_last_block == k.trim_last;
  return o_staging && rescale && exp2 && trim;
}

}  // namespace attnsim::sass
