#include "lower/costs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "model/hardware.hpp"
#include "model/json_format.hpp"
#include "model/json_reader.hpp"

namespace attnsim {

namespace {
struct Instr {
  std::string pipe;
  double lanes = 0, tmem = 0, smem = 0;
  int latency_class = -1;  ///< LatencyClass, or -1 when it has none (cannot be on a chain)
};

const std::vector<std::string> kLatencyClassNames = {"fma", "alu", "mufu", "shfl", "f2fp"};

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

namespace {
/// A SASS-counted section (loop_control, tile_control, pv_wait): its derivation, source and per-instance
/// points, each read by `point` (the point's own fields; unknown ones are errors).
template <class Point>
void read_points(JsonReader& section, const std::string& file, Point point) {
  section.string("derivation");
  section.string("source");
  const nlohmann::json& pts = section.raw("points");
  if (!pts.is_array() || pts.empty()) section.fail_at("points", "expected a non-empty array of instances");
  for (size_t i = 0; i < pts.size(); ++i) {
    const std::string at = section.child_path("points") + "/" + std::to_string(i);
    if (!pts[i].is_object()) throw InputError(file, at, "expected an object per kernel instance");
    JsonReader pr(pts[i], file, at);
    point(pr);
    pr.finish();
  }
  section.finish();
}
}  // namespace

/// A point's kernel instance: its name (kept for the reader) and knobs; own_o where the section has it.
CostModel::InstanceKnobs CostModel::read_instance(JsonReader& pr, bool with_own_o) {
  InstanceKnobs k;
  pr.string("kernel");
  k.head_dim = static_cast<int>(pr.integer("head_dim", 8, 1024));
  k.pingpong = pr.boolean("pingpong");
  k.overlap = pr.boolean("overlap");
  k.dynamic = pr.boolean("dynamic");
  if (with_own_o) k.own_o = pr.boolean("own_o");
  k.n_block = static_cast<int>(pr.integer_or("n_block", 0, 8, 1024));
  return k;
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
    const std::string lc = e.choice_or("latency_class", "", kLatencyClassNames);
    if (!lc.empty())
      in.latency_class = static_cast<int>(std::find(kLatencyClassNames.begin(), kLatencyClassNames.end(), lc) -
                                          kLatencyClassNames.begin());
    e.choice("provenance", {"published", "measured", "derived", "assumed"});
    e.string("source");
    e.string_or("was", "");  // what a measurement replaced, for the record
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
    if (auto ch = b.optional_object("chain")) {
      ch->string("source");
      const nlohmann::json& pts = ch->raw("points");
      if (!pts.is_array() || pts.empty()) ch->fail_at("points", "expected a non-empty array of chain points");
      for (size_t i = 0; i < pts.size(); ++i) {
        const std::string at = ch->child_path("points") + "/" + std::to_string(i);
        if (!pts[i].is_object())
          throw InputError(file, at, "expected an object {\"elements\": n, \"<instruction>\": count, ...}");
        JsonReader pr(pts[i], file, at);
        ChainPoint p;
        p.elements = pr.number("elements", 1e-9, 1e6);
        if (!c.chain.empty() && p.elements <= c.chain.back().elements)
          pr.fail_at("elements", "chain points must be in increasing order of elements");
        pr.string_or("kernel", "");
        for (const auto& iname : pr.keys()) {
          if (iname == "elements" || iname == "kernel") continue;
          auto it = instrs.find(iname);
          if (it == instrs.end())
            pr.fail_at(iname, "unknown instruction: expected one of the names under /instructions");
          if (it->second.latency_class < 0)
            pr.fail_at(iname, "instruction without a latency_class under /instructions: it cannot be on a chain");
          p.per_class[it->second.latency_class] += pr.number(iname, 0, 1e6);
        }
        pr.finish();
        c.chain.push_back(p);
      }
      ch->finish();
    }
    if (auto ms = b.optional_object("measured")) {
      ms->string("source");
      const nlohmann::json& pts = ms->raw("points");
      if (!pts.is_array() || pts.empty()) ms->fail_at("points", "expected a non-empty array of timing points");
      for (size_t i = 0; i < pts.size(); ++i) {
        const std::string at = ms->child_path("points") + "/" + std::to_string(i);
        if (!pts[i].is_object())
          throw InputError(file, at, "expected an object {\"elements\": n, \"alone_cycles\": c, ...}");
        JsonReader pr(pts[i], file, at);
        TimingPoint p;
        p.elements = pr.number("elements", 1e-9, 1e6);
        p.exp2_emu_share = pr.number_or("exp2_emu_share", 0, 0, 1);
        if (!c.measured.empty() && std::pair(p.exp2_emu_share, p.elements) <=
                                       std::pair(c.measured.back().exp2_emu_share, c.measured.back().elements))
          pr.fail_at("elements", "timing points must be in increasing order of (exp2_emu_share, elements)");
        p.alone = pr.number("alone_cycles", 1e-9, 1e9);
        p.beside_ss = pr.number("beside_wgmma_ss_cycles", 1e-9, 1e9);
        p.beside_rs = pr.number("beside_wgmma_rs_cycles", 1e-9, 1e9);
        // For the record: the tensor duty the benchmark timed the beside figures at, which
        // calibrate took to 1 (beside_at_full_duty); the figures above are already at 1.
        pr.number_or("timed_at_tensor_duty_ss", 1, 1e-3, 1);
        pr.number_or("timed_at_tensor_duty_rs", 1, 1e-3, 1);
        if (auto cl = pr.optional_object("while_copies_land")) {
          p.beside_copies = {cl->number("alone_ratio", 1, 100), cl->number("beside_wgmma_ss_ratio", 1, 100),
                             cl->number("beside_wgmma_rs_ratio", 1, 100)};
          cl->string("source");
          cl->finish();
        }
        pr.string_or("shapes", "");
        pr.finish();
        c.measured.push_back(p);
      }
      ms->finish();
    }
    b.string("derivation");
    // Counts read from a kernel's SASS say so: provenance, where they were counted, what they replaced.
    if (!b.choice_or("provenance", "", {"published", "measured", "derived", "assumed"}).empty()) b.string("source");
    b.string_or("was", "");
    b.finish();
    m.blocks_[name] = c;
  }
  if (auto lc = r.optional_object("loop_control"))
    read_points(*lc, file, [&](JsonReader& pr) {
      LoopControlPoint p;
      p.knobs = read_instance(pr, false);
      p.cost.instructions = pr.number("instructions", 0, 1e6);
      p.cost.issue_cycles = pr.number("issue_cycles", 0, 1e7);
      // The dynamic scheduler's kernels: what their plain loop holds over the static twin's (whose
      // traced gaps "instructions" then are), run in the same gaps.
      p.cost.instructions += pr.number_or("plain_over_static_instructions", 0, -1e6, 1e6);
      p.cost.issue_cycles += pr.number_or("plain_over_static_issue_cycles", 0, -1e7, 1e7);
      if (p.cost.instructions < 0 || p.cost.issue_cycles < 0)
        pr.fail_at("plain_over_static_instructions", "a loop control of at least 0 instructions and cycles");
      m.loop_control_.push_back(p);
    });
  if (auto tc = r.optional_object("tile_control"))
    read_points(*tc, file, [&](JsonReader& pr) {
      TileControlPoint p;
      p.knobs = read_instance(pr, true);
      p.cost.head.instructions = pr.number("head_instructions", 0, 1e6);
      p.cost.head.issue_cycles = pr.number("head_issue_cycles", 0, 1e7);
      p.cost.tail.instructions = pr.number("tail_instructions", 0, 1e6);
      p.cost.tail.issue_cycles = pr.number("tail_issue_cycles", 0, 1e7);
      m.tile_control_.push_back(p);
    });
  if (auto pw = r.optional_object("pv_wait"))
    read_points(*pw, file, [&](JsonReader& pr) {
      PvWaitPoint p;
      p.knobs = read_instance(pr, true);
      p.cost = pr.number("max_before_pv_wait", 0, 1);
      m.pv_wait_.push_back(p);
    });
  if (auto lw = r.optional_object("load_warp"))
    read_points(*lw, file, [&](JsonReader& pr) {
      LoadWarpPoint p;
      p.knobs = read_instance(pr, true);
      p.cost.block_gaps = pr.number("block_gaps_cycles", 0, 1e6);
      p.cost.tile_bookkeeping = pr.number("tile_bookkeeping_cycles", 0, 1e7);
      // (Cost files written before 2026-12-01 06:16 have none.)
      p.cost.recorded_entry_extra = pr.number_or("recorded_entry_extra_cycles", 0, -1e6, 1e6);
      // For the record: the load spans (the model keeps its own, load.cpp) and the code alone.
      pr.number_or("block_load_spans_cycles", 0, 0, 1e6);
      pr.number_or("alone_block_gaps_cycles", 0, 0, 1e6);
      pr.number_or("alone_tile_bookkeeping_cycles", 0, 0, 1e7);
      m.load_warp_.push_back(p);
    });
  r.finish();
  return m;
}

namespace {
/// The cost of `points` for an instance: the mean of the first non-empty group of `tiers` (each a
/// predicate on a point, from the closest match to the loosest), else the mean of all; `zero` when
/// there are none. `add`/`scale` sum and divide costs.
template <class Point, class Cost, class Add, class Scale>
Cost pick_point(const std::vector<Point>& points, const std::vector<std::function<bool(const Point&)>>& tiers, Add add,
                Scale scale) {
  auto mean_of = [&](auto keep) {
    Cost sum{};
    int n = 0;
    for (const auto& p : points)
      if (keep(p)) add(sum, p.cost), ++n;
    if (n > 0) scale(sum, 1.0 / n);
    return std::pair{sum, n};
  };
  for (const auto& tier : tiers)
    if (const auto [c, n] = mean_of(tier); n > 0) return c;
  return mean_of([](const Point&) { return true; }).first;
}
void add_lc(LoopControl& a, const LoopControl& b) {
  a.instructions += b.instructions, a.issue_cycles += b.issue_cycles;
}
void scale_lc(LoopControl& a, double f) { a.instructions *= f, a.issue_cycles *= f; }
}  // namespace

LoopControl CostModel::loop_control(int head_dim, bool pingpong, bool overlap, bool dynamic, int n_block) const {
  using P = LoopControlPoint;
  const auto same = [=](const P& p) { return p.knobs.same_structure(pingpong, overlap, dynamic); };
  const auto own = [=](const P& p) { return same(p) && p.knobs.head_dim == head_dim; };
  return pick_point<P, LoopControl>(
      loop_control_, {[=](const P& p) { return own(p) && p.knobs.same_width(n_block); }, own, same}, add_lc, scale_lc);
}

TileControl CostModel::tile_control(int head_dim, bool pingpong, bool overlap, bool dynamic, bool own_o,
                                    int n_block) const {
  using P = TileControlPoint;
  const auto same = [=](const P& p) { return p.knobs.same_structure(pingpong, overlap, dynamic) && p.knobs.own_o == own_o; };
  const auto own = [=](const P& p) { return same(p) && p.knobs.head_dim == head_dim; };
  return pick_point<P, TileControl>(
      tile_control_, {[=](const P& p) { return own(p) && p.knobs.same_width(n_block); }, own, same},
      [](TileControl& a, const TileControl& b) { add_lc(a.head, b.head), add_lc(a.tail, b.tail); },
      [](TileControl& a, double f) { scale_lc(a.head, f), scale_lc(a.tail, f); });
}

LoadWarpCost CostModel::load_warp(int head_dim, bool dynamic, bool own_o, int n_block) const {
  using P = LoadWarpPoint;
  // The load warp's code follows the scheduler (static tile loop, or the ticket and tile slot), the
  // head dimension (TMA boxes per tile) and the O staging (the V ring's barrier), not the consumers' knobs.
  const auto sched = [=](const P& p) { return p.knobs.dynamic == dynamic; };
  const auto dim = [=](const P& p) { return sched(p) && p.knobs.head_dim == head_dim; };
  const auto own = [=](const P& p) { return dim(p) && p.knobs.own_o == own_o; };
  return pick_point<P, LoadWarpCost>(
      load_warp_, {[=](const P& p) { return own(p) && p.knobs.same_width(n_block); }, own, dim, sched},
      [](LoadWarpCost& a, const LoadWarpCost& b) {
        a.block_gaps += b.block_gaps, a.tile_bookkeeping += b.tile_bookkeeping;
        a.recorded_entry_extra += b.recorded_entry_extra;
      },
      [](LoadWarpCost& a, double f) {
        a.block_gaps *= f, a.tile_bookkeeping *= f, a.recorded_entry_extra *= f;
      });
}

double CostModel::max_before_pv_wait(int head_dim, bool pingpong, bool overlap, bool dynamic, bool own_o,
                                     int n_block) const {
  // ptxas's placement follows the code of the head dimension, the tile and the O staging (register
  // pressure), less the other knobs; with no instance of this head dimension, the source's order.
  auto mean_of = [&](auto keep) {
    double sum = 0;
    int n = 0;
    for (const auto& p : pv_wait_)
      if (keep(p.knobs)) sum += p.cost, ++n;
    return n > 0 ? std::optional<double>(sum / n) : std::nullopt;
  };
  const auto own = [&](const InstanceKnobs& k) {
    return k.head_dim == head_dim && k.own_o == own_o && k.same_structure(pingpong, overlap, dynamic);
  };
  if (auto v = mean_of([&](const InstanceKnobs& k) { return own(k) && k.same_width(n_block); })) return *v;
  if (auto v = mean_of(own)) return *v;
  if (auto v = mean_of([&](const InstanceKnobs& k) { return k.head_dim == head_dim && k.own_o == own_o; })) return *v;
  return mean_of([&](const InstanceKnobs& k) { return k.head_dim == head_dim; }).value_or(0.0);
}

void CostModel::write(const std::string& file, const nlohmann::ordered_json& doc) {
  const std::string tmp = file + ".tmp";
  std::ofstream(tmp) << format_json(doc) + "\n";
  try {
    read(tmp);  // the result must load; not load(), whose cache would answer for a reused path
  } catch (...) {
    std::filesystem::remove(tmp);
    throw;
  }
  std::filesystem::rename(tmp, file);
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

MeasuredTiming CostModel::measured_timing(const std::string& name, double elements, double exp2_emu_share) const {
  std::vector<TimingPoint> points;
  for (const auto& p : block(name).measured)
    if (std::abs(p.exp2_emu_share - exp2_emu_share) < 1e-6) points.push_back(p);
  if (points.empty()) return {};
  // A block never runs faster beside wgmma than alone: a noisy point below 1 counts as 1.
  auto timing = [](const TimingPoint& p, double alone) {
    MeasuredTiming m{alone, std::max(1.0, p.beside_ss / p.alone), std::max(1.0, p.beside_rs / p.alone)};
    m.beside_copies = p.beside_copies;
    return m;
  };
  const TimingPoint &first = points.front(), &last = points.back();
  if (elements <= first.elements) return timing(first, first.alone * elements / first.elements);
  if (elements >= last.elements) return timing(last, last.alone * elements / last.elements);
  size_t i = 0;
  while (points[i + 1].elements < elements) ++i;
  const double t = (elements - points[i].elements) / (points[i + 1].elements - points[i].elements);
  const MeasuredTiming a = timing(points[i], points[i].alone), b = timing(points[i + 1], points[i + 1].alone);
  MeasuredTiming m{a.alone * (1 - t) + b.alone * t, a.beside_ss * (1 - t) + b.beside_ss * t,
                   a.beside_rs * (1 - t) + b.beside_rs * t};
  for (size_t k = 0; k < m.beside_copies.size(); ++k)
    m.beside_copies[k] = a.beside_copies[k] * (1 - t) + b.beside_copies[k] * t;
  return m;
}

double class_latency(LatencyClass c, const Hardware& hw) {
  switch (c) {
    case LatencyClass::fma:
      return hw.fma_latency;
    case LatencyClass::alu:
      return hw.alu_latency;
    case LatencyClass::mufu:
      return hw.mufu_latency;
    case LatencyClass::shfl:
      return hw.shfl_latency;
    case LatencyClass::f2fp:
      return hw.f2fp_latency;
  }
  return 0;
}

const char* latency_class_name(LatencyClass c) { return kLatencyClassNames[static_cast<int>(c)].c_str(); }

double CostModel::chain_latency(const std::string& name, double elements, const Hardware& hw) const {
  const auto& points = block(name).chain;
  if (points.empty()) return 0;
  auto cycles = [&](const ChainPoint& p) {
    double t = 0;
    for (int k = 0; k < kLatencyClasses; ++k) t += p.per_class[k] * class_latency(static_cast<LatencyClass>(k), hw);
    return t;
  };
  if (elements <= points.front().elements) return cycles(points.front()) * elements / points.front().elements;
  if (elements >= points.back().elements) return cycles(points.back()) * elements / points.back().elements;
  size_t i = 0;
  while (points[i + 1].elements < elements) ++i;
  const ChainPoint &a = points[i], &b = points[i + 1];
  const double t = (elements - a.elements) / (b.elements - a.elements);
  return cycles(a) * (1 - t) + cycles(b) * t;
}

}  // namespace attnsim
