#include "lower/issue_timing.hpp"

#include <map>
#include <mutex>

#include "model/json_reader.hpp"

namespace attnsim {

Work BlockIssue::work() const {
  Work w;
  w.issue = instructions;
  w.fma_lanes = 32 * ffma;
  w.alu_lanes = 32 * alu;
  w.mufu_lanes = 32 * mufu;
  w.smem_bytes = 128 * shared_loads;
  return w;
}

IssueTimings IssueTimings::parse(const nlohmann::json& doc, const std::string& file) {
  IssueTimings t;
  t.file_ = file;
  JsonReader r(doc, file);
  r.string("description");
  r.string("hardware");  // the config whose latencies timed the blocks (informative)
  r.string("source");
  const auto& ks = r.raw("kernels");
  if (!ks.is_array() || ks.empty()) r.fail_at("kernels", "expected a non-empty array of kernel instances");
  for (size_t i = 0; i < ks.size(); ++i) {
    JsonReader kr(ks[i], file, "/kernels/" + std::to_string(i));
    KernelIssue k;
    k.kernel = kr.string("kernel");
    k.head_dim = static_cast<int>(kr.integer("head_dim", 8, 1024));
    k.br = static_cast<int>(kr.integer("br", 1, 1024));
    k.bc = static_cast<int>(kr.integer("bc", 1, 1024));
    JsonReader br = kr.object("blocks");
    for (const auto& name : br.keys()) {
      JsonReader b = br.object(name);
      BlockIssue x;
      x.cycles = b.number("cycles", 1, 1e9);
      x.instructions = b.number("instructions", 1, 1e9);
      x.ffma = b.number("ffma", 0, 1e9);
      x.alu = b.number("alu", 0, 1e9);
      x.mufu = b.number("mufu", 0, 1e9);
      x.shared_loads = b.number("shared_loads", 0, 1e9);
      // Where the cycles went: informative, checked for type only.
      for (const char* key : {"stall_cycles", "scoreboard_cycles", "pipe_cycles", "bank_cycles", "fetch_cycles"})
        b.number(key, 0, 1e9);
      b.finish();
      k.blocks[name] = x;
    }
    kr.finish();
    for (const auto& o : t.kernels_)
      if (o.head_dim == k.head_dim && o.br == k.br && o.bc == k.bc)
        kr.fail_at("kernel", "a second instance with the same head_dim, br and bc");
    t.kernels_.push_back(std::move(k));
  }
  r.finish();
  return t;
}

const IssueTimings& IssueTimings::load(const std::string& file) {
  static std::mutex mu;
  static std::map<std::string, IssueTimings> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(file);
  if (it == cache.end()) it = cache.emplace(file, parse(load_json_file(file), file)).first;
  return it->second;
}

const KernelIssue* IssueTimings::find(int head_dim, int br, int bc) const {
  for (const auto& k : kernels_)
    if (k.head_dim == head_dim && k.br == br && k.bc == bc) return &k;
  return nullptr;
}

}  // namespace attnsim
