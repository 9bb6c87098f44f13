// The compile-time knobs of a real kernel of any family (with the kernel registry, fa3_api.h), as the schedules resolve them
// (Schedule::real_kernel) and the build instantiates them (attnsim_kernelgen). Plain C++.
#pragma once

#include <string>
#include <variant>

#include "blackflash/structure.h"
#include "fa2/structure.h"
#include "sm100/structure.h"
#include "sm90/structure.h"

namespace attnsim {

/// kernels/sm90 (fa3_sm90 schedules), kernels/fa2 (fa2_sm80 schedules), kernels/sm100
/// (fa4_sm100 schedules) or kernels/blackflash (blackflash schedules).
using AnyKernelKnobs = std::variant<sm90::KernelKnobs, fa2::KernelKnobs, sm100::KernelKnobs, blackflash::KernelKnobs>;

/// The schedule family whose kernels take these knobs: "fa3_sm90", "fa2_sm80", "fa4_sm100" or
/// "blackflash".
inline std::string kernel_family(const AnyKernelKnobs& k) {
  if (std::holds_alternative<sm90::KernelKnobs>(k)) return "fa3_sm90";
  if (std::holds_alternative<fa2::KernelKnobs>(k)) return "fa2_sm80";
  return std::holds_alternative<sm100::KernelKnobs>(k) ? "fa4_sm100" : "blackflash";
}
/// The GPU architecture a kernel of these knobs is compiled for and runs on: "sm_100a" for
/// kernels/sm100, "sm_90a" for the others (kernels/fa2 is built for the H100/H200 at hand;
/// kernels/blackflash also has an sm_120a image, which nothing runs yet).
inline std::string kernel_arch(const AnyKernelKnobs& k) {
  return std::holds_alternative<sm100::KernelKnobs>(k) ? "sm_100a" : "sm_90a";
}
/// The compute capability major version of the GPUs a kernel of these knobs runs on (10 or 9).
inline int kernel_cc_major(const AnyKernelKnobs& k) { return std::holds_alternative<sm100::KernelKnobs>(k) ? 10 : 9; }
/// "fa3_sm90 hd128 m128 n128 kv2 pingpong overlap reg 240/24", "fa2_sm80 hd64 br64 bc64 fma",
/// "blackflash hd64 kv2 p_over_k reg 128".
inline std::string describe(const AnyKernelKnobs& k) {
  return kernel_family(k) + " " + std::visit([](const auto& x) { return x.describe(); }, k);
}
/// The role name of warp `warp` of a kernel of these knobs, as the simulator's timelines print it
/// (sm90: "load", "idle", "consumer<g>"; fa2: "worker"; sm100: "softmax0", "correction", "mma", ...;
/// blackflash: "load", "consumer").
inline std::string kernel_warp_role(const AnyKernelKnobs& k, int warp) {
  if (std::holds_alternative<sm100::KernelKnobs>(k)) return sm100::warp_role_name(warp);
  if (std::holds_alternative<blackflash::KernelKnobs>(k)) return blackflash::warp_role(warp);
  return std::holds_alternative<sm90::KernelKnobs>(k) ? sm90::warp_role_name(warp) : std::string(fa2::kWarpRole);
}
/// The head_dim a kernel is compiled for.
inline int kernel_head_dim(const AnyKernelKnobs& k) {
  return std::visit([](const auto& x) { return x.head_dim; }, k);
}

}  // namespace attnsim
