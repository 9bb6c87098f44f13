// Which real kernel (kernels/sm90) a schedule runs as: the fa3_sm90 family's knobs, resolved for
// a problem exactly as the simulator resolves them (Fa3Schedule::resolve), become the template
// parameters of one compiled kernel. Used by the build-time instance generator and by `run`.
#pragma once
#include <string>

#include "model/hardware.hpp"
#include "model/problem.hpp"
#include "model/schedule.hpp"
#include "sm90/fa3_api.h"

namespace attnsim {

/// A schedule resolved to SM90 kernel knobs for one problem.
struct KernelChoice {
  bool supported = false;
  std::string why_not;  ///< when !supported: what the kernels do not implement
  sm90::KernelKnobs knobs;
  bool persistent = false;  ///< static persistent grid (the schedule's tile_scheduler)
};

/// Resolves `schedule` for `problem` on `hw` to kernel knobs. Unsupported (with the reason):
/// families other than fa3_sm90, warp_specialization off, head_dim other than 64/128/256,
/// head_dim_v != head_dim, fp16.
KernelChoice sm90_kernel_for(const Schedule& schedule, const Hardware& hw, const Problem& problem);

}  // namespace attnsim
