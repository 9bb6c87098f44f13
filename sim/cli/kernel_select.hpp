// The bridge from a schedule to a compiled SM90 kernel, shared by `run`, `validate` and `bench`.
#pragma once
#include <string>

#include "model/hardware.hpp"
#include "model/problem.hpp"
#include "lower/schedule.hpp"
#include "sm90/fa3_api.h"

namespace attnsim::cli {

/// Exit code of `run` / `validate` / `bench` when this machine has no usable GPU (ctest: skipped).
constexpr int kNoGpuExit = 77;

/// The compiled kernel `schedule` (read from `file`, with `variant`) resolves to for `problem`,
/// and its tile scheduler (into `sched`). Throws InputError naming the schedule when it does not fit
/// the GPU (Schedule::check), when the kernels do not implement it, or when it was not compiled
/// into this build (saying how to compile it).
const sm90::CompiledKernel& select_kernel(const Schedule& schedule, const std::string& file, const std::string& variant,
                                          const Hardware& hw, const Problem& problem, TileScheduler* sched);

/// The kernels' shape of a problem.
sm90::Shape to_shape(const Problem& p);

/// The hardware config for the GPU at hand (`requested` if not empty); throws InputError when the
/// GPU has no config.
Hardware hardware_for(const sm90::GpuInfo& gpu, const std::string& requested);

/// Today's UTC date, YYYY-MM-DD, for a measurement's metadata.
std::string today_utc();

}  // namespace attnsim::cli
