// cuDNN's fused attention as the state-of-the-art reference beside our kernels: timed in the same
// GPU run through PyTorch's SDPA cuDNN backend (scripts/bench_cudnn_sdpa.py). Validation data,
// never fitted.
#pragma once
#include <string>
#include <vector>

#include "model/problem.hpp"

namespace attnsim {

/// cuDNN times of a list of problems.
struct CudnnTimes {
  std::vector<double> us;  ///< per problem; 0 when cuDNN refused it or the script failed
  std::string note;        ///< what went wrong, if anything ("python3 with torch not found", ...)
  std::string gpu, torch_version;
};

/// Runs `python3 scripts/bench_cudnn_sdpa.py OUT SHAPES` for `problems` (GQA problems are timed
/// with kv_heads = heads: SDPA's cuDNN path takes equal head counts), using `work_dir` for the
/// two JSON files. Never throws for a missing python or torch: `note` says so.
CudnnTimes time_cudnn(const std::vector<Problem>& problems, const std::string& work_dir);

/// The configs/hw name for a GPU name: "H100" -> h100_sxm, "H200" -> h200; "" when unknown.
std::string hardware_for_gpu(const std::string& gpu_name);

}  // namespace attnsim
