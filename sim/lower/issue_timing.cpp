#include "lower/issue_timing.hpp"

#include <map>
#include <mutex>

#include "model/hardware.hpp"
#include "model/json_reader.hpp"

namespace attnsim {

Work BlockIssue::work() const {
  Work w;
  w.issue = instructions;
  w.fma_lanes = 32 * ffma;
  w.alu_lanes = 32 * alu;
  w.mufu_lanes = 32 * mufu;
  w.smem_bytes = shared_bytes.value_or(128 * shared_loads);
  w.mma_sync_flops = 4096 * hmma;
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
    if (kr.optional_raw("knobs")) {
      JsonReader nr = kr.object("knobs");
      for (const auto& name : nr.keys()) k.knobs[name] = static_cast<int>(nr.integer(name, -1000000, 1000000));
      nr.finish();
    }
    if (kr.optional_raw("ctas_per_sm")) k.ctas_per_sm = static_cast<int>(kr.integer("ctas_per_sm", 1, 64));
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
      if (b.optional_raw("shared_bytes")) x.shared_bytes = b.number("shared_bytes", 0, 1e12);
      if (b.optional_raw("hmma")) x.hmma = b.number("hmma", 0, 1e9);
      // Where the cycles went: informative, checked for type only.
      for (const char* key : {"stall_cycles", "scoreboard_cycles", "pipe_cycles", "bank_cycles", "fetch_cycles"})
        b.number(key, 0, 1e9);
      if (b.optional_raw("alone_cycles")) b.number("alone_cycles", 0, 1e9);    // one warp alone, beside cycles
      if (b.optional_raw("traced_cycles")) b.number("traced_cycles", 0, 1e9);  // the traced instance's, beside cycles
      b.finish();
      k.blocks[name] = x;
    }
    kr.finish();
    for (const auto& o : t.kernels_)
      if (o.head_dim == k.head_dim && o.br == k.br && o.bc == k.bc && o.knobs == k.knobs &&
          o.ctas_per_sm == k.ctas_per_sm)
        kr.fail_at("kernel", "a second instance with the same head_dim, br, bc, knobs and ctas_per_sm");
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

const IssueTimings* IssueTimings::from_schedule(JsonReader& r, std::string& name) {
  const auto* f = r.optional_raw("issue_timing");
  if (!f) return nullptr;
  if (!f->is_string()) r.fail_at("issue_timing", "expected the path of an issue-timing file (configs/costs/...)");
  name = f->get<std::string>();
  std::string path = name;
  if (!path.empty() && path[0] != '/') path = project_root() + "/" + path;
  return &load(path);
}

const KernelIssue* IssueTimings::find(int head_dim, int br, int bc, const std::map<std::string, int>& knobs,
                                      int ctas_per_sm) const {
  for (const auto& k : kernels_)
    if (k.head_dim == head_dim && k.br == br && k.bc == bc && k.knobs == knobs && k.ctas_per_sm == ctas_per_sm)
      return &k;
  return nullptr;
}

}  // namespace attnsim
