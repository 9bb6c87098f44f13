#include "measure/kernel_knobs.hpp"

#include <fmt/format.h>

#include "lower/fa3/fa3_schedule.hpp"

namespace attnsim {

KernelChoice sm90_kernel_for(const Schedule& schedule, const Hardware& hw, const Problem& p) {
  KernelChoice c;
  const auto* fa3 = dynamic_cast<const fa3::Fa3Schedule*>(&schedule);
  if (!fa3) {
    c.why_not = fmt::format("family {}: only fa3_sm90 schedules have a real kernel (kernels/sm90)", schedule.family());
    return c;
  }
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256) {
    c.why_not = fmt::format("head_dim {}: the kernels are built for 64, 128 and 256", p.head_dim);
    return c;
  }
  if (p.head_dim_v != p.head_dim) {
    c.why_not = "head_dim_v != head_dim is not implemented in kernels/sm90";
    return c;
  }
  if (p.dtype != "bf16") {
    c.why_not = fmt::format("dtype {}: kernels/sm90 is bf16 only", p.dtype);
    return c;
  }
  const fa3::Resolved k = fa3->resolve(hw, p);
  if (!k.warp_specialization) {
    c.why_not = "warp_specialization false (consumers issue the loads) is modelled but not implemented in kernels/sm90";
    return c;
  }
  c.supported = true;
  c.knobs = sm90::KernelKnobs{p.head_dim, k.m_block, k.n_block, k.kv_stage, k.pingpong, k.overlap,
                              k.reg_consumer, k.reg_producer};
  c.persistent = k.persistent;
  return c;
}

}  // namespace attnsim
