#include "measure/cudnn.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/hardware.hpp"

namespace attnsim {

CudnnTimes read_cudnn_results(const nlohmann::json& j, size_t n) {
  CudnnTimes t;
  t.us.assign(n, 0.0);
  t.errors.assign(n, "");
  t.kv_heads_timed.assign(n, 0);
  t.gpu = j.value("gpu", "");
  t.torch_version = j.value("torch", "");
  const auto& rows = j.at("results");
  for (size_t i = 0; i < rows.size() && i < n; ++i) {
    if (rows[i].contains("time_us")) {
      t.us[i] = rows[i].at("time_us").get<double>();
      t.kv_heads_timed[i] = rows[i].contains("kv_heads_timed") ? rows[i]["kv_heads_timed"].get<int>()
                                                                 : rows[i].value("heads", 0);
    } else if (rows[i].contains("error")) {
      t.errors[i] = rows[i]["error"].get<std::string>();
    }
  }
  return t;
}

CudnnTimes time_cudnn(const std::vector<Problem>& problems, const std::string& work_dir, const CudnnTiming& timing) {
  CudnnTimes t;
  t.us.assign(problems.size(), 0.0);
  t.errors.assign(problems.size(), "");
  t.kv_heads_timed.assign(problems.size(), 0);
  std::filesystem::create_directories(work_dir);
  const std::string shapes = work_dir + "/cudnn_shapes.json", out = work_dir + "/cudnn_sdpa.json";
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : problems)
    list.push_back({{"batch", p.batch}, {"heads", p.heads}, {"kv_heads", p.kv_heads}, {"seqlen_q", p.seqlen_q},
                    {"seqlen_k", p.seqlen_k}, {"head_dim", p.head_dim}, {"causal", p.causal}});
  std::ofstream(shapes) << list.dump(1);
  std::filesystem::remove(out);
  const std::string cmd = fmt::format(
      "python3 '{}/scripts/bench_cudnn_sdpa.py' '{}' '{}' {} {} {} {} {} > '{}/cudnn_log.txt' 2>&1", project_root(),
      out, shapes, timing.warmup, timing.reps, timing.launches, timing.precondition_ms, timing.min_timed_ms, work_dir);
  const int rc = std::system(cmd.c_str());
  std::ifstream in(out);
  if (rc != 0 || !in) {
    t.note = fmt::format("cuDNN not timed: `{}` failed (rc {}; needs python3 with PyTorch and a GPU; log in {}/cudnn_log.txt)",
                         cmd.substr(0, cmd.find(" > ")), rc, work_dir);
    return t;
  }
  try {
    t = read_cudnn_results(nlohmann::json::parse(in), problems.size());
  } catch (const std::exception& e) {
    t.note = fmt::format("cuDNN results unreadable ({}): {}", out, e.what());
  }
  return t;
}

std::string hardware_for_gpu(const std::string& gpu) {
  if (gpu.find("H200") != std::string::npos) return "h200";
  if (gpu.find("H100") != std::string::npos) return "h100_sxm";
  if (gpu.find("B200") != std::string::npos) return "b200";
  return "";
}

}  // namespace attnsim
