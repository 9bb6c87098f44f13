// Problem, timing and budget flags shared by the subcommands.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"

namespace attnsim::cli {

void ProblemFlags::add(CLI::App* app) {
  app->add_option("--problem", file, "problem JSON (default: configs/problems/default.json)");
  app->add_option("--batch", batch, "batch size");
  app->add_option("--heads", heads, "query heads");
  app->add_option("--kv-heads", kv_heads, "K/V heads (GQA/MQA; divides heads)");
  app->add_option("--seqlen", seqlen_q, "seqlen_q (and seqlen_k unless --seqlen-k)");
  app->add_option("--seqlen-k", seqlen_k, "seqlen_k");
  app->add_option("--head-dim", head_dim, "head_dim (and head_dim_v unless --head-dim-v)");
  app->add_option("--head-dim-v", head_dim_v, "head_dim of V");
  app->add_flag("--causal", causal, "causal mask");
  app->add_flag("--non-causal", non_causal, "no mask");
  app->add_option("--dtype", dtype, "bf16 | fp16");
  app->add_option("--rescale-rate", rescale_rate,
                  "fraction of (warp, KV block) steps that rescale O (default: from random N(0,1) scores)");
}

void TimingFlags::add(CLI::App* app, int min_reps) {
  app->add_option("--reps", reps,
                  fmt::format("timed repetitions (median of their per-launch times; default {}{})", reps,
                              min_reps > 1 ? fmt::format(", at least {}", min_reps) : ""))
      ->check(CLI::Range(min_reps, 100000));
  app->add_option(
         "--launches", launches,
         fmt::format("launches per repetition, enqueued back to back, timed by CUDA events (default {})", launches))
      ->check(CLI::Range(1, 100000));
  app->add_option("--warmup", warmup, fmt::format("untimed launches first (default {})", warmup))
      ->check(CLI::Range(0, 100000));
  app->add_option("--precondition-ms", precondition_ms,
                  fmt::format("untimed load after the warm-up, ms, so that the clock is the one the GPU holds under "
                              "sustained load (the power limit acts on power averaged over about a second; default "
                              "{:g}, 0: none)",
                              precondition_ms))
      ->check(CLI::Range(0.0, 600000.0));
  app->add_option("--min-timed-ms", min_timed_ms,
                  fmt::format("more repetitions than --reps where they would take less than this, ms, so that the "
                              "timed window spans the clock's swings under sustained load (period about 0.7 s; "
                              "default {:g}, 0: --reps only)",
                              min_timed_ms))
      ->check(CLI::Range(0.0, 600000.0));
}

void BudgetFlags::add(CLI::App* app) {
  app->add_option("--max-events", max_events,
                  fmt::format("stop a prediction that needs more simulation events than this (default {}; about 5 "
                              "million a second)",
                              max_events))
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 62));
  app->add_option("--max-tiles", max_tiles,
                  fmt::format("stop a prediction whose problem has more tiles than this (default {})", max_tiles))
      ->check(CLI::Range(1LL, 1LL << 62));
}

PredictOptions BudgetFlags::apply(PredictOptions o) const {
  o.max_events = max_events;
  o.max_tiles = max_tiles;
  return o;
}

Problem ProblemFlags::build() const {
  const std::string path = file.empty() ? project_root() + "/configs/problems/default.json" : file;
  return apply(load_json_file(path), path);
}

Problem ProblemFlags::apply(nlohmann::json j, const std::string& path) const {
  if (!j.is_object()) throw InputError(path, "", fmt::format("expected an object, got {}", j.type_name()));
  auto set = [&](const char* key, const auto& v) {
    if (v) j[key] = *v;
  };
  set("batch", batch);
  set("heads", heads);
  if (heads && !kv_heads && j.contains("kv_heads")) j.erase("kv_heads");
  set("kv_heads", kv_heads);
  if (seqlen_q) {
    j["seqlen_q"] = *seqlen_q;
    if (!seqlen_k) j.erase("seqlen_k");
  }
  set("seqlen_k", seqlen_k);
  if (head_dim) {
    j["head_dim"] = *head_dim;
    if (!head_dim_v) j.erase("head_dim_v");
  }
  set("head_dim_v", head_dim_v);
  if (causal) j["causal"] = true;
  if (non_causal) j["causal"] = false;
  set("dtype", dtype);
  set("rescale_rate", rescale_rate);
  return problem_from_json(
      j, path + (batch || heads || seqlen_q || head_dim || causal || non_causal ? " (with flags)" : ""));
}

}  // namespace attnsim::cli
