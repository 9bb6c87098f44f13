#include "model/problem.hpp"

#include <fmt/format.h>

#include "model/json_reader.hpp"

namespace attnsim {

double Problem::flops() const {
  const double f = 2.0 * batch * heads * static_cast<double>(seqlen_q) * seqlen_k * (head_dim + head_dim_v);
  return causal ? f / 2 : f;
}

std::string Problem::describe() const {
  return fmt::format("{} b{} h{}/{} sq{} sk{} d{}{} {}", dtype, batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim,
                     head_dim_v != head_dim ? fmt::format("/{}", head_dim_v) : "", causal ? "causal" : "non-causal");
}

Problem problem_from_json(const nlohmann::json& j, const std::string& file, const std::string& path) {
  JsonReader r(j, file, path);
  Problem p;
  r.string_or("description", "");
  p.batch = static_cast<int>(r.integer("batch", 1, 1 << 20));
  p.heads = static_cast<int>(r.integer("heads", 1, 1 << 16));
  p.kv_heads = static_cast<int>(r.integer_or("kv_heads", p.heads, 1, 1 << 16));
  p.seqlen_q = static_cast<int>(r.integer("seqlen_q", 1, 1 << 24));
  p.seqlen_k = static_cast<int>(r.integer_or("seqlen_k", p.seqlen_q, 1, 1 << 24));
  p.head_dim = static_cast<int>(r.integer("head_dim", 16, 512));
  p.head_dim_v = static_cast<int>(r.integer_or("head_dim_v", p.head_dim, 16, 512));
  p.causal = r.boolean_or("causal", false);
  p.dtype = r.choice_or("dtype", "bf16", {"bf16", "fp16"});
  if (r.optional_raw("rescale_rate")) p.rescale_rate = r.number("rescale_rate", 0, 1);
  r.string_or("label", "");
  r.finish();
  validate_problem(p, file);
  return p;
}

Problem load_problem(const std::string& file) { return problem_from_json(load_json_file(file), file); }

std::vector<LabeledProblem> load_problem_set(const std::string& file) {
  const nlohmann::json j = load_json_file(file);
  if (!j.is_object() || !j.contains("problems") || !j["problems"].is_array() || j["problems"].empty())
    throw InputError(file, "/problems", "expected a non-empty array of problems", "input");
  std::vector<LabeledProblem> out;
  for (size_t i = 0; i < j["problems"].size(); ++i) {
    nlohmann::json p = j["problems"][i];
    const std::string path = fmt::format("/problems/{}", i);
    if (!p.is_object() || !p.contains("label") || !p["label"].is_string())
      throw InputError(file, path + "/label", "expected a string label for each problem", "input");
    const std::string label = p["label"];
    p.erase("label");
    out.push_back({label, problem_from_json(p, file, path)});
  }
  return out;
}

void validate_problem(const Problem& p, const std::string& origin) {
  if (p.heads % p.kv_heads != 0)
    throw InputError(origin, "/kv_heads", fmt::format("expected a divisor of heads ({}), got {}", p.heads, p.kv_heads));
  if (p.head_dim % 16 != 0)
    throw InputError(origin, "/head_dim", fmt::format("expected a multiple of 16, got {}", p.head_dim));
  if (p.head_dim_v % 16 != 0)
    throw InputError(origin, "/head_dim_v", fmt::format("expected a multiple of 16, got {}", p.head_dim_v));
  if (p.causal && p.seqlen_q > p.seqlen_k)
    throw InputError(origin, "/seqlen_q", "causal problems need seqlen_q <= seqlen_k (bottom-right aligned mask)");
}

}  // namespace attnsim
