#include "measure/microbench_replay.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "driver/simulate.hpp"
#include "lower/fa3/turn_costs.hpp"
#include "lower/schedule.hpp"
#include "model/json_reader.hpp"
#include "sm90/structure.h"  // kPingpongThreads

namespace attnsim {
namespace {

using json = nlohmann::json;

/// Cycles every warpgroup waits before its case starts, so that the load warp's commits of the K
/// and V stages (the benchmark's barriers, completed before its loop) have landed.
constexpr double kLead = 100;

/// The benchmark's case: which consumer warpgroups issue GEMMs or run a neighbour's work (a softmax
/// block or an FFMA burst), and when.
struct Case {
  std::string name;
  bool pingpong = false;
  bool neighbour = false;  ///< warpgroups 1.. run a softmax block (or the FFMA burst) beside warpgroup 0
  bool all_gemm = false;   ///< every consumer warpgroup issues GEMMs (else warpgroup 0 only)
  bool gemm = true;        ///< warpgroup 0 issues GEMMs (softmax_alone: none does)
  int ffma_burst = 0;      ///< warpgroups 1.. issue this many independent FFMAs instead of a softmax block
  double delay_others = 0, delay_first = 0;  ///< cycles warpgroups 1.. / warpgroup 0 start late
};

/// The case a gemm_turn instance's member `key` holds ("solo", "pingpong_delay_D",
/// "beside_softmax_delay_D", "beside_softmax_turn_late_D", "beside_ffmaB_delay_D",
/// "softmax_alone"); none for its other members (head_dim, m_block, ...).
std::optional<Case> parse_case(const std::string& key) {
  auto suffix = [&](const std::string& prefix) -> std::optional<double> {
    if (key.rfind(prefix, 0) != 0) return std::nullopt;
    return std::stod(key.substr(prefix.size()));
  };
  Case c;
  c.name = key;
  if (key == "solo") return c;
  if (key == "softmax_alone") {
    c.neighbour = true;
    c.gemm = false;
    return c;
  }
  if (auto d = suffix("pingpong_delay_")) {
    c.pingpong = c.all_gemm = true;
    c.delay_others = *d;
    return c;
  }
  if (auto d = suffix("beside_softmax_delay_")) {
    c.neighbour = true;
    c.delay_others = *d;
    return c;
  }
  if (auto d = suffix("beside_softmax_turn_late_")) {
    c.neighbour = true;
    c.delay_first = *d;
    return c;
  }
  if (key.rfind("beside_ffma", 0) == 0) {  // beside_ffmaB_delay_D
    const size_t at = key.find("_delay_");
    if (at == std::string::npos) return std::nullopt;
    c.neighbour = true;
    c.ffma_burst = std::stoi(key.substr(11, at - 11));
    c.delay_others = std::stod(key.substr(at + 7));
    return c;
  }
  return std::nullopt;  // an instance's other fields (head_dim, ...)
}

/// An explicit-schedule compute op named `op` doing `w`, with its tail latency, dependency chain and
/// measured timing (cycles).
json compute_op(int op, const Work& w, double latency, double chain, const MeasuredTiming& m) {
  json o = {{"op", "compute"}, {"name", attnsim_op_name(op)}};
  auto put = [&](const char* k, double v) {
    if (v > 0) o[k] = v;
  };
  put("issue", w.issue);
  put("fma_lanes", w.fma_lanes);
  put("alu_lanes", w.alu_lanes);
  put("mufu_lanes", w.mufu_lanes);
  put("mma_sync_flops", w.mma_sync_flops);
  put("tmem_bytes", w.tmem_bytes);
  put("smem_bytes", w.smem_bytes);
  put("latency", latency);
  put("chain", chain);
  if (m.alone > 0) o["measured"] = {{"alone_cycles", m.alone}, {"beside_ss", m.beside_ss}, {"beside_rs", m.beside_rs}};
  return o;
}

/// A wait of `cycles` before the case starts: one instruction whose block lasts that long.
json delay_op(double cycles) {
  Work w;
  w.issue = 1;
  return compute_op(ATTNSIM_OP_COMPUTE, w, 0, cycles, {});
}

/// The GEMMs of one turn as kernels/sm90 Consumer::issue_qk / issue_pv run them.
void gemm_turn(json& program, const fa3::GemmGroup& g, int op, const char* pipeline) {
  program.push_back({{"op", "consumer_wait"}, {"pipeline", pipeline}});
  program.push_back(compute_op(op, g.issue, 0, g.chain, {}));
  json mma = {{"op", "mma"},          {"name", attnsim_op_name(op)}, {"flops", g.flops},
              {"smem_bytes", g.smem}, {"instructions", g.wgmmas},    {"a_in_registers", g.a_in_registers}};
  program.push_back(mma);
}

/// A softmax block of the fa3_sm90 lowering as an explicit-schedule compute op.
json softmax_op(int op, const fa3::SoftmaxBlock& b) { return compute_op(op, b.work, b.latency, b.chain, b.measured); }

/// An explicit schedule of `warps` with the K and V pipelines every replayed case declares.
json explicit_schedule(const std::string& name, const char* benchmark, const json& warps) {
  return {{"name", name},
          {"family", "explicit"},
          {"arch", "any"},
          {"description",
           fmt::format("a case of kernels/microbench {}, replayed (sim/measure/microbench_replay.cpp)", benchmark)},
          {"pipelines",
           {{"k", {{"stages", 1}, {"full_count", 1}, {"empty_count", 1}}},
            {"v", {{"stages", 1}, {"full_count", 1}, {"empty_count", 1}}}}},
          {"warps", warps}};
}

/// The three softmax blocks of an unmasked KV block, as the fa3_sm90 lowering emits them.
void softmax_blocks(json& program, const CostModel& costs, const Hardware& hw, int head_dim, int n_block) {
  program.push_back(softmax_op(ATTNSIM_OP_SOFTMAX_MAX, fa3::softmax_max_block(costs, hw, n_block)));
  program.push_back(softmax_op(ATTNSIM_OP_SOFTMAX_EXP, fa3::softmax_exp_block(costs, hw, n_block, 0)));
  program.push_back(softmax_op(ATTNSIM_OP_RESCALE_O, fa3::rescale_block(costs, hw, head_dim, n_block)));
}

/// The predicted timeline of a replayed case's schedule text (`where` names it in errors).
Timeline predict_case(const std::string& text, const std::string& where, const Hardware& hw) {
  const auto schedule = schedule_from_text(text, where);
  return predict(*schedule, hw, Problem{}, PredictOptions{}).critical.timeline;
}

/// Warp `warp`'s track in `tl` (every replayed warp has one).
const WarpTrack& warp_track(const Timeline& tl, int warp) {
  for (const WarpTrack& t : tl.warps)
    if (t.warp == warp) return t;
  throw std::logic_error(fmt::format("microbench replay: warp {} has no track", warp));
}

/// The first warp of consumer warpgroup `g` (after the load warpgroup, as in the kernel).
int first_warp(int g) { return sm90::first_consumer_warp() + sm90::kWarpsPerWarpgroup * g; }

/// The explicit schedule of one case of instance (head_dim, m_block, n_block).
std::string case_schedule(const Case& c, const Hardware& hw, const CostModel& costs, int head_dim, int m_block,
                          int n_block) {
  const int groups = sm90::consumer_warpgroups(m_block);
  // bf16 operands (2 bytes), as the benchmark's.
  const fa3::GemmGroup qk = fa3::qk_group(hw, head_dim, n_block, 2), pv = fa3::pv_group(hw, head_dim, n_block, 2);
  json warps = json::array();
  // The load warp completes phase 0 of K's and V's full barriers, as the benchmark does before its loop.
  warps.push_back({{"warp", 0},
                   {"role", "load"},
                   {"program",
                    {{{"op", "producer_acquire"}, {"pipeline", "k"}},
                     {{"op", "producer_commit"}, {"pipeline", "k"}},
                     {{"op", "producer_acquire"}, {"pipeline", "v"}},
                     {{"op", "producer_commit"}, {"pipeline", "v"}}}}});
  for (int g = 0; g < groups; ++g) {
    const bool gemm = c.gemm && (g == 0 || c.all_gemm);
    if (!gemm && !(c.neighbour && g > 0)) continue;
    json program = json::array();
    // The last warpgroup gives warpgroup 0 the first turn before the benchmark's loop (as the
    // kernel's Consumer::run does): before any delay of the case.
    if (gemm && c.pingpong && g == groups - 1) program.push_back({{"op", "bar_arrive"}, {"barrier", "pingpong0"}});
    program.push_back(delay_op(kLead + (g == 0 ? c.delay_first : c.delay_others)));
    if (gemm) {
      if (c.pingpong) program.push_back({{"op", "bar_sync"}, {"barrier", fmt::format("pingpong{}", g)}});
      gemm_turn(program, qk, ATTNSIM_OP_MMA_QK, "k");
      gemm_turn(program, pv, ATTNSIM_OP_MMA_PV, "v");
      if (c.pingpong)
        program.push_back({{"op", "bar_arrive"}, {"barrier", fmt::format("pingpong{}", (g + 1) % groups)}});
      program.push_back({{"op", "wait_mma"}, {"pending", 0}});
    } else if (c.ffma_burst > 0) {
      Work burst;  // independent FFMAs: one issue slot and one FMA-pipe warp instruction each
      burst.issue = c.ffma_burst;
      burst.fma_lanes = 32.0 * c.ffma_burst;
      program.push_back(compute_op(ATTNSIM_OP_COMPUTE, burst, 0, 0, {}));
    } else {
      softmax_blocks(program, costs, hw, head_dim, n_block);
    }
    for (int w = 0; w < 4; ++w)
      warps.push_back({{"warp", first_warp(g) + w}, {"role", fmt::format("wg{}", g)}, {"program", program}});
  }
  json s = explicit_schedule(fmt::format("gemm_turn hd{} {}", head_dim, c.name), "gemm_turn", warps);
  if (c.pingpong) {
    json bars = json::object();
    for (int g = 0; g < groups; ++g) bars[fmt::format("pingpong{}", g)] = {{"threads", sm90::kPingpongThreads}};
    s["named_barriers"] = bars;
  }
  return s.dump();
}

/// A warpgroup's predicted times, from the spans of its first warp (cycles).
struct Predicted {
  double start = 0;                      ///< its case starts: the end of its delay block
  double turn = 0;                       ///< its turn: the end of its wait on the pingpong barrier (or its start)
  double qk = 0, pv = 0, done = 0;       ///< QK group issued, PV group issued, the last span's end
  double max = 0, exp = 0, rescale = 0;  ///< softmax spans, cycles
};

/// The times of warp track `t` of timeline `tl` (its labels name the barriers its waits were on).
Predicted read_warp(const Timeline& tl, const WarpTrack& t) {
  Predicted p;
  // The delay block: the first busy span (a bar.arrive before it records none).
  size_t i = 0;
  while (i < t.spans.size() && t.spans[i].kind != SpanKind::Busy) ++i;
  if (i == t.spans.size()) return p;
  p.start = p.turn = t.spans[i].end;
  for (++i; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (s.kind == SpanKind::Wait && tl.label_of(s).rfind("bar.", 0) == 0) p.turn = s.end;
    switch (s.op) {
      case ATTNSIM_OP_MMA_QK:
        p.qk = s.end;
        break;
      case ATTNSIM_OP_MMA_PV:
        p.pv = s.end;
        break;
      case ATTNSIM_OP_SOFTMAX_MAX:
        p.max += s.end - s.start;
        break;
      case ATTNSIM_OP_SOFTMAX_EXP:
        p.exp += s.end - s.start;
        break;
      case ATTNSIM_OP_RESCALE_O:
        p.rescale += s.end - s.start;
        break;
      default:
        break;
    }
    p.done = s.end;
  }
  return p;
}

}  // namespace

namespace {

/// The benchmark a result document names ("" when it names none).
std::string benchmark_of(const json& doc) { return doc.is_object() ? doc.value("benchmark", "") : ""; }

/// replay_gemm_turn on `doc`, read from `result_file`.
std::vector<ReplayRow> gemm_turn_rows(const json& doc, const std::string& result_file, const Hardware& hw,
                                      const CostModel& costs) {
  if (benchmark_of(doc) != "gemm_turn")
    throw InputError(result_file, "/benchmark", "expected a kernels/microbench gemm_turn result file");
  const json::json_pointer at_instances("/results/instances");
  if (!doc.contains(at_instances) || !doc[at_instances].is_object() || doc[at_instances].empty())
    throw InputError(result_file, at_instances.to_string(), "expected the benchmark's kernel instances");
  std::vector<ReplayRow> rows;
  for (auto inst = doc[at_instances].begin(); inst != doc[at_instances].end(); ++inst) {
    const std::string ipath = at_instances.to_string() + "/" + inst.key();
    JsonReader ir(inst.value(), result_file, ipath);
    const int head_dim = static_cast<int>(ir.integer("head_dim", 16, 512));
    const int m_block = static_cast<int>(ir.integer("m_block", 64, 192));
    const int n_block = static_cast<int>(ir.integer("n_block", 16, 256));
    for (auto cit = inst.value().begin(); cit != inst.value().end(); ++cit) {
      const std::optional<Case> c = parse_case(cit.key());
      if (!c) continue;
      JsonReader cr(cit.value(), result_file, ipath + "/" + cit.key());
      auto stamp = [&](const std::string& k) { return cr.number(k, -1e9, 1e12); };
      const Timeline tl = predict_case(case_schedule(*c, hw, costs, head_dim, m_block, n_block),
                                       fmt::format("{} {}/{}", result_file, ipath, cit.key()), hw);
      auto add = [&](int g, const char* quantity, double measured, double predicted) {
        rows.push_back({inst.key(), cit.key(), g, quantity, measured, predicted});
      };
      const int groups = sm90::consumer_warpgroups(m_block);
      for (int g = 0; g < groups; ++g) {
        const bool gemm = c->gemm && (g == 0 || c->all_gemm);
        const std::string wg = fmt::format("wg{}_", g);
        if (gemm) {
          const Predicted pr = read_warp(tl, warp_track(tl, first_warp(g)));
          const double turn = pr.turn;
          const double start = stamp(wg + "start_cycles"), mturn = stamp(wg + "turn_cycles");
          const double qk = stamp(wg + "qk_issued_cycles"), pv = stamp(wg + "pv_issued_cycles");
          const double done = stamp(wg + "done_cycles");
          if (c->pingpong) add(g, "turn_wait", mturn - start, turn - pr.start);
          add(g, "qk_dispatch", qk - mturn, pr.qk - turn);
          add(g, "pv_dispatch", pv - qk, pr.pv - pr.qk);
          add(g, "done", done - mturn, pr.done - turn);
        } else if (c->ffma_burst > 0 && g == 1) {  // the benchmark stamps warpgroup 1's burst
          const Predicted pr = read_warp(tl, warp_track(tl, first_warp(1)));
          add(g, "ffma_burst", stamp("ffma_end_cycles") - stamp("ffma_start_cycles"), pr.done - pr.start);
        } else if (c->neighbour && g == 1) {  // the benchmark stamps warpgroup 1's softmax
          const Predicted pr = read_warp(tl, warp_track(tl, first_warp(1)));
          const double s0 = stamp("softmax_start_cycles"), s1 = stamp("softmax_max_end_cycles");
          const double s2 = stamp("softmax_exp_end_cycles"), s3 = stamp("softmax_end_cycles");
          add(g, "softmax_max", s1 - s0, pr.max);
          add(g, "softmax_exp", s2 - s1, pr.exp);
          add(g, "rescale_o", s3 - s2, pr.rescale);
        }
      }
    }
  }
  return rows;
}

/// softmax_pair times the kernel's hd128 fragments (kernels/microbench/softmax_pair.cu: kN, kD).
constexpr int kPairNBlock = 128, kPairHeadDim = 128;

/// One softmax_pair case: warpgroups 1 and 2 (warps 4-7, 8-11) each run one softmax block, the one
/// that is not `leader` starting `delay` cycles later; warpgroup 0 streams SS wgmma (`beside`) or idles.
std::string pair_schedule(const Hardware& hw, const CostModel& costs, bool beside, int leader, double delay) {
  json warps = json::array();
  if (beside) {
    // wgmma m64n128k16 SS back to back for longer than the blocks take: one long group per warp.
    const fa3::GemmGroup g = fa3::qk_group(hw, 128, 128, 2);
    const json program = {{{"op", "mma"},
                           {"name", attnsim_op_name(ATTNSIM_OP_MMA_QK)},
                           {"flops", 64 * g.flops},
                           {"smem_bytes", 64 * g.smem},
                           {"instructions", 8}},
                          {{"op", "wait_mma"}, {"pending", 0}}};
    for (int w = 0; w < 4; ++w) warps.push_back({{"warp", w}, {"role", "wgmma"}, {"program", program}});
  }
  for (int group : {1, 2}) {
    json program = json::array();
    program.push_back(delay_op(kLead + (group == leader ? 0 : delay)));
    softmax_blocks(program, costs, hw, kPairHeadDim, kPairNBlock);
    for (int w = 0; w < 4; ++w)
      warps.push_back({{"warp", sm90::kWarpsPerWarpgroup * group + w},
                       {"role", fmt::format("softmax{}", group)},
                       {"program", program}});
  }
  return explicit_schedule(fmt::format("softmax_pair leader {} delay {}", leader, delay), "softmax_pair", warps).dump();
}

/// replay_softmax_pair on `doc`, read from `result_file`.
std::vector<ReplayRow> softmax_pair_rows(const json& doc, const std::string& result_file, const Hardware& hw,
                                         const CostModel& costs) {
  if (benchmark_of(doc) != "softmax_pair")
    throw InputError(result_file, "/benchmark", "expected a kernels/microbench softmax_pair result file");
  std::vector<ReplayRow> rows;
  for (const char* env : {"alone", "beside_wgmma"}) {
    const std::string epath = std::string("/results/") + env;
    const json::json_pointer at(epath);
    if (!doc.contains(at) || !doc[at].is_object())
      throw InputError(result_file, epath, "expected the cases with warpgroup 0 " + std::string(env));
    for (int leader : {1, 2}) {
      const std::string lkey = fmt::format("leader_warpgroup_{}", leader);
      if (!doc[at].contains(lkey)) throw InputError(result_file, epath + "/" + lkey, "missing required field");
      for (auto cit = doc[at][lkey].begin(); cit != doc[at][lkey].end(); ++cit) {
        if (cit.key().rfind("delay_", 0) != 0) continue;
        const double delay = std::stod(cit.key().substr(6));
        const std::string cpath = epath + "/" + lkey + "/" + cit.key();
        JsonReader cr(cit.value(), result_file, cpath);
        const Timeline tl = predict_case(pair_schedule(hw, costs, std::string(env) == "beside_wgmma", leader, delay),
                                         result_file + " " + cpath, hw);
        for (int group : {1, 2}) {
          const Predicted pr = read_warp(tl, warp_track(tl, sm90::kWarpsPerWarpgroup * group));
          const std::string wg = fmt::format("wg{}_", group);
          auto add = [&](const char* q, const std::string& field, double predicted) {
            rows.push_back({env, lkey + "/" + cit.key(), group, q, cr.number(wg + field, 0, 1e12), predicted});
          };
          add("softmax_max", "softmax_max_cycles", pr.max);
          add("softmax_exp", "softmax_exp_cycles", pr.exp);
          add("block", "block_cycles", pr.done - pr.start);
        }
      }
    }
  }
  return rows;
}

}  // namespace

std::vector<ReplayRow> replay_gemm_turn(const std::string& result_file, const Hardware& hw, const CostModel& costs) {
  return gemm_turn_rows(load_json_file(result_file), result_file, hw, costs);
}

std::vector<ReplayRow> replay_softmax_pair(const std::string& result_file, const Hardware& hw, const CostModel& costs) {
  return softmax_pair_rows(load_json_file(result_file), result_file, hw, costs);
}

std::vector<ReplayRow> replay_microbench(const std::string& result_file, const Hardware& hw, const CostModel& costs) {
  const json doc = load_json_file(result_file);
  const std::string bench = benchmark_of(doc);
  if (bench == "gemm_turn") return gemm_turn_rows(doc, result_file, hw, costs);
  if (bench == "softmax_pair") return softmax_pair_rows(doc, result_file, hw, costs);
  throw InputError(result_file, "/benchmark",
                   "expected a kernels/microbench result the model can replay: gemm_turn or softmax_pair");
}

ReplaySummary summarize_replay(const std::vector<ReplayRow>& rows) {
  ReplaySummary s;
  for (const auto& r : rows) {
    s.mean_abs_error_pct[r.quantity] += std::abs(r.error_pct());
    s.mean_abs_error_cycles[r.quantity] += std::abs(r.predicted - r.measured);
    ++s.rows[r.quantity];
  }
  for (const auto& [q, n] : s.rows) {
    s.mean_abs_error_pct[q] /= n;
    s.mean_abs_error_cycles[q] /= n;
  }
  return s;
}

std::vector<std::string> replay_regressions(const ReplaySummary& now, const std::string& baseline_file) {
  const nlohmann::json doc = load_json_file(baseline_file);
  JsonReader r(doc, baseline_file);
  JsonReader errors = r.object("mean_abs_error_pct");
  std::vector<std::string> out;
  for (const auto& [q, pct] : now.mean_abs_error_pct) {
    if (!errors.has(q)) continue;  // a quantity the baseline did not know: new
    const double before = errors.number(q, 0, 1e9);
    if (pct > before + kReplayTolerancePts)
      out.push_back(
          fmt::format("{}: baseline {:.2f}%, now {:.2f}% (grew by {:.2f} points)", q, before, pct, pct - before));
  }
  return out;
}

void write_replay_baseline(const ReplaySummary& now, const std::string& result_file, const std::string& hardware,
                           const std::string& baseline_file) {
  nlohmann::ordered_json doc;
  doc["description"] =
      "The model's mean |error| per quantity replaying this microbenchmark result (attnsim replay RESULT "
      "--update BASELINE writes it). `attnsim replay RESULT --baseline BASELINE` exits 1 when a quantity's mean "
      "|error| grows by more than 0.5 percentage points; a model change that moves it on purpose rewrites this file.";
  doc["result"] = std::filesystem::path(result_file).filename().string();
  doc["hardware"] = hardware;
  for (const auto& [q, v] : now.mean_abs_error_pct) doc["mean_abs_error_pct"][q] = std::round(v * 1e4) / 1e4;
  for (const auto& [q, v] : now.mean_abs_error_cycles) doc["mean_abs_error_cycles"][q] = std::round(v * 10) / 10;
  for (const auto& [q, n] : now.rows) doc["rows"][q] = n;
  std::ofstream f(baseline_file);
  if (!f) throw std::runtime_error("cannot write " + baseline_file);
  f << doc.dump(2) << "\n";
}

}  // namespace attnsim
