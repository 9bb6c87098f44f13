#include "lower/costs.hpp"

#include <fmt/format.h>

#include <mutex>
#include <stdexcept>

#include "model/hardware.hpp"
#include "model/json_reader.hpp"

namespace attnsim {

namespace {
struct Instr {
  std::string pipe;
  double lanes = 0, tmem = 0, smem = 0;
};

Work instr_work(const Instr& in, double count) {
  Work w;
  w.issue = count;
  if (in.pipe == "fma") w.fma_lanes = count * in.lanes;
  if (in.pipe == "alu") w.alu_lanes = count * in.lanes;
  if (in.pipe == "mufu") w.mufu_lanes = count * in.lanes;
  w.tmem_bytes = count * in.tmem;
  w.smem_bytes = count * in.smem;
  return w;
}
}  // namespace

CostModel CostModel::load(const std::string& file) {
  // Sweeps parse thousands of candidates that name the same cost file: read it once.
  static std::mutex mu;
  static std::map<std::string, CostModel> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(file);
    if (it != cache.end()) return it->second;
  }
  CostModel m = read(file);
  std::lock_guard<std::mutex> lock(mu);
  return cache.emplace(file, std::move(m)).first->second;
}

CostModel CostModel::read(const std::string& file) {
  const nlohmann::json doc = load_json_file(file);
  JsonReader r(doc, file);
  r.string("description");
  std::map<std::string, Instr> instrs;
  JsonReader ir = r.object("instructions");
  for (const auto& name : ir.keys()) {
    JsonReader e = ir.object(name);
    Instr in;
    in.pipe = e.choice("pipe", {"fma", "alu", "mufu", "none"});
    in.lanes = e.number("lanes", 0, 128);
    in.tmem = e.number_or("tmem_bytes", 0, 0, 1 << 20);
    in.smem = e.number_or("smem_bytes", 0, 0, 1 << 20);
    e.choice("provenance", {"published", "measured", "derived", "assumed"});
    e.string("source");
    e.finish();
    instrs[name] = in;
  }
  CostModel m;
  m.file_ = file;
  JsonReader br = r.object("blocks");
  for (const auto& name : br.keys()) {
    JsonReader b = br.object(name);
    BlockCost c;
    for (const char* part : {"per_element", "per_row"}) {
      auto pr = b.optional_object(part);
      if (!pr) continue;
      for (const auto& iname : pr->keys()) {
        auto it = instrs.find(iname);
        if (it == instrs.end())
          pr->fail_at(iname, "unknown instruction: expected one of the names under /instructions");
        Work w = instr_work(it->second, pr->number(iname, 0, 1e6));
        (std::string(part) == "per_element" ? c.per_element : c.per_row) += w;
      }
      pr->finish();
    }
    c.latency = b.number_or("latency_cycles", 0, 0, 1e6);
    if (c.latency > 0) b.string("latency_provenance");
    b.string("derivation");
    b.finish();
    m.blocks_[name] = c;
  }
  r.finish();
  return m;
}

CostModel CostModel::from_schedule(JsonReader& r) {
  std::string path = r.string("costs");
  if (!path.empty() && path[0] != '/') path = project_root() + "/" + path;
  return load(path);
}

const BlockCost& CostModel::block(const std::string& name) const {
  auto it = blocks_.find(name);
  if (it == blocks_.end()) throw InputError(file_, "/blocks/" + name, "missing block that the schedule family needs");
  return it->second;
}

Work CostModel::work(const std::string& name, double elements, double rows) const {
  const BlockCost& b = block(name);
  Work w = b.per_element.scaled(elements);
  w += b.per_row.scaled(rows);
  return w;
}

double CostModel::latency(const std::string& name) const { return block(name).latency; }

}  // namespace attnsim
