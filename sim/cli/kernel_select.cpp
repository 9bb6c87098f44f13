#include "cli/kernel_select.hpp"

#include <fmt/format.h>

#include <ctime>

#include "measure/cudnn.hpp"
#include "lower/schedule.hpp"
#include "model/json_reader.hpp"

namespace attnsim::cli {

#if ATTNSIM_WITH_SM90
const sm90::CompiledKernel& select_kernel(const Schedule& schedule, const std::string& file, const std::string& variant,
                                          const Hardware& hw, const Problem& problem, TileScheduler* sched) {
  schedule.check(hw, problem);  // SMEM, registers, pipeline counts: the simulator's reasons first
  const std::string what = variant.empty() ? schedule.name() : fmt::format("{} variant {}", schedule.name(), variant);
  const KernelChoice c = schedule.real_kernel(hw, problem);
  if (!c.supported)
    throw InputError(file, "", fmt::format("{} has no real kernel for {}: {}", what, problem.describe(), c.why_not),
                     "kernel");
  const sm90::CompiledKernel* k = sm90::find_kernel(c.knobs);
  if (!k && schedule.family() == "fa4_sm100")
    throw InputError(file, "",
                     fmt::format("{} resolves for head_dim {} to the SM100 kernel [{}], which this build did not "
                                 "compile: the build instantiates the fa4_sm100 variants in ATTNSIM_SM100_VARIANTS at "
                                 "head_dim 64/128, causal and not; configure with -DATTNSIM_SM100_VARIANTS=all (or "
                                 "declare the schedule as a variant) and rebuild; `attnsim run --list` shows what is "
                                 "compiled",
                                 what, problem.head_dim, describe(c.knobs)),
                     "kernel");
  if (!k && !variant.empty())
    for (const VariantInfo& v : schedule_variants(file))
      if (v.name == variant && !v.kernels_from_sweep.empty())
        throw InputError(file, "/variants/" + variant,
                         fmt::format("{} resolves for head_dim {} to the kernel [{}], which this build did not "
                                     "compile: the variant's kernels come with its sweep; configure with "
                                     "-DATTNSIM_KERNEL_SWEEPS={} and rebuild (cmake --build build)",
                                     what, problem.head_dim, describe(c.knobs), v.kernels_from_sweep),
                         "kernel");
  if (!k)
    throw InputError(
        file, "",
        fmt::format("{} resolves for head_dim {} to the kernel [{}], which this build did not compile. Kernels are "
                    "instantiated at build time from the schedules in schedules/ and their variants: declare it as a "
                    "variant of a schedule file there (or configure with -DATTNSIM_KERNEL_SCHEDULES=<file.json>) and "
                    "rebuild (cmake --build build); `attnsim run --list` shows what is compiled",
                    what, problem.head_dim, describe(c.knobs)),
        "kernel");
  if (sched) *sched = c.scheduler;
  return *k;
}
#else
const sm90::CompiledKernel& select_kernel(const Schedule&, const std::string& file, const std::string&,
                                          const Hardware&, const Problem&, TileScheduler*) {
  throw InputError(file, "",
                   "this attnsim was built without a CUDA compiler, so it has no kernels to run; install the CUDA "
                   "toolkit (nvcc) and reconfigure",
                   "kernel");
}
#endif

sm90::Shape to_shape(const Problem& p) {
  return sm90::Shape{p.batch, p.heads, p.kv_heads, p.seqlen_q, p.seqlen_k, p.head_dim, p.causal};
}

Hardware hardware_for(const sm90::GpuInfo& gpu, const std::string& requested) {
  const std::string name = requested.empty() ? hardware_for_gpu(gpu.name) : requested;
  if (name.empty())
    throw InputError("", "",
                     fmt::format("no hardware config in configs/hw for the GPU {}; pass --hw NAME", gpu.name), "hw");
  return load_hardware(resolve_hardware_path(name));
}

std::string today_utc() {
  const std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%d", std::gmtime(&t));
  return b;
}

}  // namespace attnsim::cli
