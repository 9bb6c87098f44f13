// The compile-time knobs of a real kernel of any family (with the kernel registry, fa3_api.h), as the schedules resolve them
// (Schedule::real_kernel) and the build instantiates them (attnsim_kernelgen). Plain C++.
#pragma once

#include <string>
#include <variant>

#include "blackflash/structure.h"
#include "fa2/structure.h"
#include "sm90/structure.h"

namespace attnsim {

/// kernels/sm90 (fa3_sm90 schedules), kernels/fa2 (fa2_sm80) or kernels/blackflash (blackflash).
using AnyKernelKnobs = std::variant<sm90::KernelKnobs, fa2::KernelKnobs, blackflash::KernelKnobs>;

/// The schedule family whose kernels take these knobs: "fa3_sm90", "fa2_sm80" or "blackflash".
inline std::string kernel_family(const AnyKernelKnobs& k) {
  if (std::holds_alternative<sm90::KernelKnobs>(k)) return "fa3_sm90";
  return std::holds_alternative<fa2::KernelKnobs>(k) ? "fa2_sm80" : "blackflash";
}
/// "fa3_sm90 hd128 m128 n128 kv2 pingpong overlap reg 240/24", "fa2_sm80 hd64 br64 bc64 fma",
/// "blackflash hd64 kv2 p_over_k reg 128".
inline std::string describe(const AnyKernelKnobs& k) {
  return kernel_family(k) + " " + std::visit([](const auto& x) { return x.describe(); }, k);
}
/// The role name of warp `warp` of a kernel of these knobs, as the simulator's timelines print it
/// (sm90: "load", "idle", "consumer<g>"; fa2: "worker"; blackflash: "load", "consumer").
inline std::string kernel_warp_role(const AnyKernelKnobs& k, int warp) {
  if (std::holds_alternative<sm90::KernelKnobs>(k)) return sm90::warp_role_name(warp);
  return std::holds_alternative<fa2::KernelKnobs>(k) ? std::string(fa2::kWarpRole) : blackflash::warp_role(warp);
}
/// The head_dim a kernel is compiled for.
inline int kernel_head_dim(const AnyKernelKnobs& k) {
  return std::visit([](const auto& x) { return x.head_dim; }, k);
}

}  // namespace attnsim
