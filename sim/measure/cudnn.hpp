// cuDNN's fused attention as the state-of-the-art reference beside our kernels: timed in the same
// GPU run through PyTorch's SDPA cuDNN backend (scripts/bench_cudnn_sdpa.py). Validation data,
// never fitted.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/problem.hpp"

namespace attnsim {

/// How cuDNN is timed, as sm90::TimingOptions times our kernels: `warmup` untimed calls, untimed
/// calls for about `precondition_ms` (the power controller settles), then the median per-call
/// time of `reps` repetitions of `launches` back-to-back calls between one CUDA event pair.
struct CudnnTiming {
  int warmup = 5, reps = 20, launches = 10;
  double precondition_ms = 0;
  double min_timed_ms = 0;  ///< more repetitions where `reps` would take less than this (sm90::TimingOptions)
};

/// cuDNN times of a list of problems.
struct CudnnTimes {
  std::vector<double> us;           ///< per problem, microseconds; 0 when cuDNN refused it or the script failed
  std::vector<std::string> errors;  ///< per problem: the script's error when cuDNN refused the shape, else ""
  std::vector<int> kv_heads_timed;  ///< per problem: KV heads of the K/V cuDNN ran on (heads when a GQA shape
                                    ///< had to be expanded); 0 when not timed
  std::string note;                 ///< what went wrong with the whole run, if anything ("python3 with torch not found", ...)
  std::string gpu, torch_version;
};

/// Runs `python3 scripts/bench_cudnn_sdpa.py OUT SHAPES WARMUP REPS LAUNCHES PRECONDITION_MS MIN_TIMED_MS`
/// for `problems`,
/// timed as `timing` says, using `work_dir` for the two JSON files and the script's log. A GQA
/// problem is timed with K/V of kv_heads heads where SDPA's cuDNN backend takes them, else with
/// K/V of `heads` heads (kv_heads_timed says which). Never throws for a missing python or torch:
/// `note` says so, and every time is 0.
CudnnTimes time_cudnn(const std::vector<Problem>& problems, const std::string& work_dir, const CudnnTiming& timing = {});

/// The per-problem part of the script's output JSON ({"gpu", "torch", "results": [{"time_us" |
/// "error", "kv_heads_timed"}, ...]}) for `n` problems, in order; rows past `n` are ignored,
/// missing rows stay untimed. Throws nlohmann::json::exception when `j` is not shaped so.
CudnnTimes read_cudnn_results(const nlohmann::json& j, size_t n);

/// The configs/hw name for a GPU name: "H100" -> h100_sxm, "H200" -> h200; "" when unknown.
std::string hardware_for_gpu(const std::string& gpu_name);

}  // namespace attnsim
