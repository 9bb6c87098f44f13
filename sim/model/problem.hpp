// The attention problem being simulated: shapes, masking, dtype.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace attnsim {

/// One forward-attention problem. Q: (batch, heads, seqlen_q, head_dim);
/// K, V: (batch, kv_heads, seqlen_k, head_dim / head_dim_v).
struct Problem {
  int batch = 4;
  int heads = 16;
  int kv_heads = 16;  ///< divides heads (GQA/MQA)
  int seqlen_q = 8192;
  int seqlen_k = 8192;
  int head_dim = 128;
  int head_dim_v = 128;
  bool causal = false;
  std::string dtype = "bf16";  ///< bf16 | fp16 (2 bytes per element)
  /// Fraction of (warp, KV block) steps that need an O rescale. Unset: derived from
  /// random N(0,1) Q and K scores (sim/lower/rescale_model.hpp), as benchmarks use.
  std::optional<double> rescale_rate;

  int elem_bytes() const { return 2; }
  /// Attention FLOP as FlashAttention counts them: 4 * b * h * sq * sk * d (halved when causal).
  double flops() const;
  std::string describe() const;
};

/// Reads a problem from JSON (configs/problems/*.json); throws InputError with file and path.
Problem problem_from_json(const nlohmann::json& j, const std::string& file, const std::string& path = "");
/// Reads configs/problems/*.json; throws InputError with file and path.
Problem load_problem(const std::string& file);
/// A problem of a problem set, with its label ("hd128 s8k b2").
struct LabeledProblem {
  std::string label;
  Problem problem;
};
/// Reads a problem-set file (configs/validation/problems_sm90.json, configs/bench/*.json):
/// {"description": ..., "problems": [{"label": "...", ...problem fields}, ...]}, in file order.
/// Throws InputError with file and JSON path when the list is missing or empty, a label is not
/// a string, or a problem is invalid.
std::vector<LabeledProblem> load_problem_set(const std::string& file);
/// Checks ranges and relations (kv_heads divides heads, ...); throws InputError naming `origin`.
void validate_problem(const Problem& p, const std::string& origin);

}  // namespace attnsim
