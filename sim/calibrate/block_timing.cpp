#include "calibrate/block_timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <span>
#include <stdexcept>
#include <tuple>

#include "common/softmax_math.h"  // exp2_emulated_elements
#include "lower/costs.hpp"
#include "model/json_reader.hpp"

namespace attnsim {

namespace {
using json = nlohmann::json;

/// "GPU, driver, date" of a microbenchmark result, the date cut to `date_chars` characters.
std::string result_note(const json& doc, size_t date_chars) {
  return fmt::format("{}, driver {}, {}", doc.value("gpu", "?"), doc.value("driver_version", "?"),
                     doc.value("date", std::string("?")).substr(0, date_chars));
}

/// Cost file `costs_file` as an ordered document to rewrite; throws InputError if it does not load.
nlohmann::ordered_json read_costs_for_rewrite(const std::string& costs_file) {
  CostModel::load(costs_file);  // refuse to start from a broken file
  std::ifstream in(costs_file);
  return nlohmann::ordered_json::parse(in);
}

/// Spans the benchmark times, the block each times, and what their elements per thread-row count
/// (as fa3's lowering).
struct Span {
  const char* span;   ///< the span's name in the result file
  const char* block;  ///< the cost file's block it times
  bool per_head_dim;  ///< elements = head_dim / 2 (O), else n_block / 2 (scores)
  bool optional;      ///< absent from result files older than the span's benchmark (final_o: 2026-11-24)
};
constexpr Span kSpans[] = {{"softmax_max", "softmax_max", false, false},
                           {"softmax_exp", "softmax_exp", false, false},
                           {"rescale_o", "rescale_o", true, false},
                           {"final_o", "final_o", true, true}};
/// A shape timed with the conditional rescale ("rescale": {"conditional": true}; results since
/// 2026-12-01): its row max with the warp vote, and its rescale_o span, which packs P only.
constexpr Span kConditionalSpans[] = {{"softmax_max", "softmax_max_conditional", false, false},
                                      {"pack_p", "pack_p", false, false}};
}  // namespace

double beside_at_full_duty(double alone, double beside, double duty) {
  if (!(duty > 0 && duty <= 1)) throw std::invalid_argument(fmt::format("tensor duty {} outside (0, 1]", duty));
  return alone + (beside - alone) / duty;
}

std::vector<BlockTimingPoint> derive_block_timings(const std::string& file, std::string& note) {
  const json doc = load_json_file(file);
  if (!doc.is_object() || doc.value("benchmark", "") != "softmax_block")
    throw InputError(file, "/benchmark", "expected a kernels/microbench softmax_block result file");
  const json::json_pointer shapes("/results/shapes");
  if (!doc.contains(shapes) || !doc[shapes].is_object() || doc[shapes].empty())
    throw InputError(file, shapes.to_string(), "expected the timed tile shapes");
  std::map<std::tuple<std::string, double, double>, std::vector<BlockTimingPoint>> by_key;
  for (auto it = doc[shapes].begin(); it != doc[shapes].end(); ++it) {
    std::string key;  // the shape's name as a JSON pointer token
    for (char ch : it.key()) key += ch == '~' ? std::string("~0") : ch == '/' ? std::string("~1") : std::string(1, ch);
    const std::string at = shapes.to_string() + "/" + key;
    const double n_block = number_at(doc, file, at + "/n_block"), head_dim = number_at(doc, file, at + "/head_dim");
    // exp_scores with exp2 emulation: the share of the thread's n_block / 2 scores it emulates.
    double emu_share = 0;
    const bool emulated = doc.contains(json::json_pointer(at + "/exp2_emulation"));
    if (emulated) {
      const int freq = static_cast<int>(number_at(doc, file, at + "/exp2_emulation/freq"));
      const int res = static_cast<int>(number_at(doc, file, at + "/exp2_emulation/res"));
      const int n = static_cast<int>(n_block) / 2;
      emu_share = static_cast<double>(exp2_emulated_elements(n, freq, res)) / n;
    }
    // A span's figures, its beside ones at full tensor duty where the file has the duty it timed
    // them at ("tensor_duty_ss" / "_rs", results since 2026-12-01); else as timed (duty 1).
    auto span_point = [&](const std::string& sp) {
      BlockTimingPoint p;
      p.alone = number_at(doc, file, sp + "/alone_cycles");
      p.beside_ss = number_at(doc, file, sp + "/beside_wgmma_cycles");
      p.beside_rs = number_at(doc, file, sp + "/beside_wgmma_rs_cycles");
      for (auto [name, beside, duty] : {std::tuple{"/tensor_duty_ss", &p.beside_ss, &p.duty_ss},
                                        std::tuple{"/tensor_duty_rs", &p.beside_rs, &p.duty_rs}}) {
        if (!doc.contains(json::json_pointer(sp + name))) continue;
        *duty = number_at(doc, file, sp + name);
        if (!(*duty > 0 && *duty <= 1)) throw InputError(file, sp + name, "expected a tensor duty in (0, 1]");
        *beside = beside_at_full_duty(p.alone, *beside, *duty);
      }
      return p;
    };
    // A shape that compares SMSPs ("beside a waiting warp": per span its time on SMSP 0 and on
    // SMSPs 1-3, results since 2026-12-01) times no block for the model: skipped.
    if (doc.contains(json::json_pointer(at + "/spans/softmax_max/alone_smsp0_cycles"))) continue;
    // A tile's first block ("first_block": true, results since 2026-12-01): its rescale_o span packs
    // P only, a check of the lowering's instruction-priced pack (no block of its own): skipped.
    const json::json_pointer first_at(at + "/first_block");
    if (doc.contains(first_at) && doc[first_at].is_boolean() && doc[first_at]) continue;
    // A shape timed masked ("masked": true; results since 2026-12-01): its row max of a block
    // crossing the causal diagonal and the same block unmasked; their difference is the mask's
    // time (softmax_mask_select), alone and beside SS / RS wgmma.
    const json::json_pointer masked_at(at + "/masked");
    if (doc.contains(masked_at) && doc[masked_at].is_boolean() && doc[masked_at]) {
      const std::string with = at + "/spans/softmax_max", without = at + "/spans/softmax_max_unmasked";
      const BlockTimingPoint m = span_point(with), u = span_point(without);
      BlockTimingPoint p;
      p.block = "softmax_mask_select";
      p.elements = n_block / 2;
      p.alone = m.alone - u.alone;
      p.beside_ss = m.beside_ss - u.beside_ss;
      p.beside_rs = m.beside_rs - u.beside_rs;
      p.duty_ss = (m.duty_ss + u.duty_ss) / 2;
      p.duty_rs = (m.duty_rs + u.duty_rs) / 2;
      if (p.alone <= 0 || p.beside_ss <= 0 || p.beside_rs <= 0)
        throw InputError(file, with, "expected the masked row max to take longer than the unmasked one");
      p.shapes = {it.key()};
      by_key[{p.block, p.exp2_emu_share, p.elements}].push_back(p);
      continue;
    }
    const json::json_pointer conditional_at(at + "/rescale/conditional");
    const bool conditional = doc.contains(conditional_at) && doc[conditional_at].is_boolean() && doc[conditional_at];
    const auto spans = conditional ? std::span<const Span>(kConditionalSpans) : std::span<const Span>(kSpans);
    for (const auto& s : spans) {
      if (emulated && std::string(s.block) != "softmax_exp") continue;
      const std::string sp = at + "/spans/" + s.span;
      if (s.optional && !doc.contains(json::json_pointer(sp))) continue;
      BlockTimingPoint p = span_point(sp);
      p.block = s.block;
      p.elements = (s.per_head_dim ? head_dim : n_block) / 2;
      p.exp2_emu_share = emu_share;
      p.shapes = {it.key()};
      by_key[{p.block, p.exp2_emu_share, p.elements}].push_back(p);
    }
  }
  std::vector<BlockTimingPoint> out;
  for (auto& [key, same] : by_key) {  // ordered by block, then share of emulated exp2, then elements
    BlockTimingPoint m = same.front();
    m.shapes.clear();
    m.alone = m.beside_ss = m.beside_rs = m.duty_ss = m.duty_rs = 0;
    for (const auto& p : same) {
      m.alone += p.alone / same.size();
      m.beside_ss += p.beside_ss / same.size();
      m.beside_rs += p.beside_rs / same.size();
      m.duty_ss += p.duty_ss / same.size();
      m.duty_rs += p.duty_rs / same.size();
      m.shapes.push_back(p.shapes.front());
    }
    out.push_back(m);
  }
  note = result_note(doc, 10);
  return out;
}

void apply_block_timings(const std::string& costs_file, const std::vector<BlockTimingPoint>& points,
                         const std::string& note) {
  nlohmann::ordered_json doc = read_costs_for_rewrite(costs_file);
  std::map<std::string, nlohmann::ordered_json> measured;
  auto round1 = [](double v) { return std::round(v * 10) / 10; };
  // A point's slowdown while copies land comes from another benchmark: kept where the point stays.
  auto landing_of = [&](const BlockTimingPoint& p) -> nlohmann::ordered_json {
    const auto& block = doc["blocks"][p.block];
    if (!block.contains("measured")) return nullptr;
    for (const auto& old : block["measured"]["points"])
      if (old.value("elements", -1.0) == p.elements && old.value("exp2_emu_share", 0.0) == p.exp2_emu_share &&
          old.contains("while_copies_land"))
        return old["while_copies_land"];
    return nullptr;
  };
  for (const auto& p : points) {
    if (!doc["blocks"].contains(p.block))
      throw InputError(costs_file, "/blocks/" + p.block, "missing block that the measurement times");
    nlohmann::ordered_json j;
    j["elements"] = p.elements == std::floor(p.elements) ? nlohmann::ordered_json(std::llround(p.elements))
                                                         : nlohmann::ordered_json(p.elements);
    if (p.exp2_emu_share > 0) j["exp2_emu_share"] = std::round(p.exp2_emu_share * 1e6) / 1e6;
    j["alone_cycles"] = round1(p.alone);
    j["beside_wgmma_ss_cycles"] = round1(p.beside_ss);
    j["beside_wgmma_rs_cycles"] = round1(p.beside_rs);
    if (p.duty_ss < 1 || p.duty_rs < 1) {
      j["timed_at_tensor_duty_ss"] = std::round(p.duty_ss * 1000) / 1000;
      j["timed_at_tensor_duty_rs"] = std::round(p.duty_rs * 1000) / 1000;
    }
    if (auto landing = landing_of(p); !landing.is_null()) j["while_copies_land"] = landing;
    j["shapes"] = fmt::format("{}", fmt::join(p.shapes, "; "));
    measured[p.block]["points"].push_back(j);
  }
  // What the benchmark timed for each block, where it is not the span of the block's own name.
  auto span_of = [](const std::string& block) -> std::string {
    if (block == "softmax_max_conditional") return "softmax_max span with the conditional rescale's warp vote";
    if (block == "softmax_mask_select")
      return "masked softmax_max span (a block crossing the causal diagonal) less the unmasked one's";
    if (block == "pack_p")
      return "rescale_o span where the conditional rescale rescales nothing (P packed to bf16 only)";
    return block + " span";
  };
  for (auto& [block, m] : measured) {
    m["source"] = fmt::format(
        "kernels/microbench softmax_block on {}: the {} of kernels/sm90's own code, {}, alone and beside "
        "another warpgroup's back-to-back wgmma m64n128k16 (SS, RS) on the same SMSPs; mean cycles per block, median "
        "over the warps and over phase-varied launches; shapes with the same elements per thread-row averaged. Where "
        "a point has timed_at_tensor_duty_*, its beside figures are taken from that duty (the share of the time the "
        "benchmark's tensor cores ran) to 1: alone + (beside - alone) / duty, the slowdown growing linearly with the "
        "duty (kernels/microbench softmax_duty)",
        note, span_of(block),
        block == "final_o"
            ? "every consumer warpgroup of the tile's m_block at once (2 at m_block 128; 3 at hd64 before 2026-11-24)"
            : "one warp per SMSP");
    doc["blocks"][block]["measured"] = m;
  }
  CostModel::write(costs_file, doc);
}

std::vector<CopiesLandingPoint> derive_copies_landing(const std::string& file, std::string& note) {
  const json doc = load_json_file(file);
  if (!doc.is_object() || doc.value("benchmark", "") != "smem_beside_async")
    throw InputError(file, "/benchmark", "expected a kernels/microbench smem_beside_async result file");
  // Each condition with copies landing over the same condition without them.
  constexpr std::array<std::pair<const char*, const char*>, 3> kPairs{
      {{"beside_tma", "idle"}, {"beside_ss_tma", "beside_ss"}, {"beside_rs_tma", "beside_rs"}}};
  std::vector<CopiesLandingPoint> out;
  for (int head_dim : {64, 128, 256}) {
    const std::string figure = fmt::format("write_o_hd{}_cycles", head_dim);
    if (head_dim != 256 && !doc.contains(json::json_pointer("/results/configs/idle/" + figure)))
      continue;  // timed at head_dim 128 and 64 since 2026-11-30
    CopiesLandingPoint p;
    p.elements = head_dim / 2.0;
    for (size_t i = 0; i < kPairs.size(); ++i) {
      const double with = number_at(doc, file, fmt::format("/results/configs/{}/{}", kPairs[i].first, figure));
      const double without = number_at(doc, file, fmt::format("/results/configs/{}/{}", kPairs[i].second, figure));
      if (without <= 0)
        throw InputError(file, fmt::format("/results/configs/{}/{}", kPairs[i].second, figure),
                         "expected a positive time");
      p.ratio[i] = std::max(1.0, with / without);  // never faster with copies: noise counts as 1
    }
    out.push_back(p);
  }
  note = result_note(doc, 16);
  return out;
}

void apply_copies_landing(const std::string& costs_file, const std::vector<CopiesLandingPoint>& points,
                          const std::string& note) {
  nlohmann::ordered_json doc = read_costs_for_rewrite(costs_file);
  const std::string at = "/blocks/final_o/measured/points";
  if (!doc.contains(nlohmann::ordered_json::json_pointer(at)))
    throw InputError(costs_file, at, "final_o has no measured timing to add the copies' slowdown to");
  auto& pts = doc["blocks"]["final_o"]["measured"]["points"];
  auto round4 = [](double v) { return std::round(v * 1e4) / 1e4; };
  for (const auto& p : points) {
    bool found = false;
    for (auto& old : pts) {
      if (old.value("elements", -1.0) != p.elements || old.value("exp2_emu_share", 0.0) != 0) continue;
      nlohmann::ordered_json j;
      j["alone_ratio"] = round4(p.ratio[0]);
      j["beside_wgmma_ss_ratio"] = round4(p.ratio[1]);
      j["beside_wgmma_rs_ratio"] = round4(p.ratio[2]);
      j["source"] = fmt::format(
          "kernels/microbench smem_beside_async on {}: the kernel's write_o (O to shared memory and the async-proxy "
          "fence, most of this span) at head_dim {:g} while two 32 KB bulk copies land in shared memory, over without "
          "them: alone, beside SS, beside RS wgmma m64n128k16",
          note, 2 * p.elements);
      // In the point's own key order: before "shapes", after the times.
      nlohmann::ordered_json rebuilt;
      for (auto it = old.begin(); it != old.end(); ++it) {
        if (it.key() == "while_copies_land") continue;
        if (it.key() == "shapes") rebuilt["while_copies_land"] = j;
        rebuilt[it.key()] = it.value();
      }
      if (!rebuilt.contains("while_copies_land")) rebuilt["while_copies_land"] = j;
      old = rebuilt;
      found = true;
    }
    if (!found)
      throw InputError(costs_file, at,
                       fmt::format("no final_o point at {:g} elements (head_dim {:g}) for the copies' slowdown: time "
                                   "it with softmax_block first",
                                   p.elements, 2 * p.elements));
  }
  CostModel::write(costs_file, doc);
}

std::vector<LoadWarpTimingPoint> derive_load_warp(const std::string& file, std::string& note) {
  const json doc = load_json_file(file);
  if (!doc.is_object() || doc.value("benchmark", "") != "load_warp")
    throw InputError(file, "/benchmark", "expected a kernels/microbench load_warp result file");
  const json::json_pointer at("/results/instances");
  if (!doc.contains(at) || !doc.at(at).is_object() || doc.at(at).empty())
    throw InputError(file, at.to_string(), "expected an object of timed instances");
  std::vector<LoadWarpTimingPoint> out;
  for (const auto& item : doc.at(at).items()) {  // not a structured binding: the lambda below reads it
    const std::string& name = item.key();
    const json& inst = item.value();
    const std::string base = at.to_string() + "/" + name;
    auto flag = [&](const char* key) {
      if (!inst.contains(key) || !inst[key].is_boolean())
        throw InputError(file, base + "/" + key, "expected true or false (result files from 2026-12-01 on have it)");
      return inst[key].get<bool>();
    };
    LoadWarpTimingPoint p;
    p.name = name;
    if (!inst.contains("kernel") || !inst["kernel"].is_string())
      throw InputError(file, base + "/kernel", "expected the instance's kernel name");
    p.kernel = inst["kernel"].get<std::string>();
    p.head_dim = static_cast<int>(number_at(doc, file, base + "/head_dim"));
    p.n_block = static_cast<int>(number_at(doc, file, base + "/n_block"));
    p.pingpong = flag("pingpong");
    p.overlap = flag("overlap");
    p.dynamic = flag("dynamic");
    p.own_o = flag("own_o");
    p.block_gaps = number_at(doc, file, base + "/beside_softmax/block_gaps_cycles");
    p.block_load_spans = number_at(doc, file, base + "/beside_softmax/block_load_spans_cycles");
    p.tile_bookkeeping = number_at(doc, file, base + "/beside_softmax/tile_bookkeeping_cycles");
    p.alone_block_gaps = number_at(doc, file, base + "/alone/block_gaps_cycles");
    p.alone_tile_bookkeeping = number_at(doc, file, base + "/alone/tile_bookkeeping_cycles");
    p.recorded_entry_extra = number_at(doc, file, base + "/recorded_after_plain/entry_extra_cycles");
    out.push_back(p);
  }
  note = result_note(doc, 16);
  return out;
}

void apply_load_warp(const std::string& costs_file, const std::vector<LoadWarpTimingPoint>& points,
                     const std::string& note) {
  nlohmann::ordered_json doc = read_costs_for_rewrite(costs_file);
  nlohmann::ordered_json section;
  section["derivation"] =
      "The SM90 kernel's load warp outside its spans, per instance, cycles: per KV block (a tile's first one "
      "aside), the code between its waits and its TMA loads (block_gaps) and, for the record, its load_k + "
      "load_v spans (block_load_spans), in the traced build, whose recorded spans go through a cursor in shared "
      "memory; per tile, from its last V load to the next tile's first wait (tile_bookkeeping: the tile loop, the "
      "next tile's coordinates or the dynamic scheduler's ticket and tile slot, the sampling decision, and a recorded tile's "
      "cursor set-up); recorded_entry_extra: entering a recorded tile from a plain one (as trace sampling records "
      "one tile in N) over entering it from a recorded one, per tile (the dynamic grids' figure is noise about 0: "
      "their sampled run records tiles 1-5). Beside consumer warps running the kernel's softmax without pause, as "
      "they run most of a KV step in the kernel; medians. The simulator charges tile_bookkeeping in every "
      "prediction, block_gaps in its traced twin, and recorded_entry_extra there for the static grids "
      "(sim/lower/fa3/load.cpp).";
  section["source"] = fmt::format(
      "kernels/microbench load_warp on {} (the kernel's own load_warp<T>, one CTA, 8 tiles of 16 KV blocks, its "
      "stages freed as soon as they land; the alone_* figures with the consumer warps idle, for the record)",
      note);
  auto round1 = [](double v) { return std::round(v * 10) / 10; };
  nlohmann::ordered_json pts = nlohmann::ordered_json::array();
  for (const auto& p : points) {
    nlohmann::ordered_json j;
    j["kernel"] = p.kernel;
    j["head_dim"] = p.head_dim;
    j["pingpong"] = p.pingpong;
    j["overlap"] = p.overlap;
    j["dynamic"] = p.dynamic;
    j["own_o"] = p.own_o;
    j["n_block"] = p.n_block;
    j["block_gaps_cycles"] = round1(p.block_gaps);
    j["block_load_spans_cycles"] = round1(p.block_load_spans);
    j["tile_bookkeeping_cycles"] = round1(p.tile_bookkeeping);
    j["recorded_entry_extra_cycles"] = round1(p.recorded_entry_extra);
    j["alone_block_gaps_cycles"] = round1(p.alone_block_gaps);
    j["alone_tile_bookkeeping_cycles"] = round1(p.alone_tile_bookkeeping);
    pts.push_back(j);
  }
  section["points"] = pts;
  doc["load_warp"] = section;
  CostModel::write(costs_file, doc);
}

}  // namespace attnsim
