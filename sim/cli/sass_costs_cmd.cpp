// `attnsim sass-costs SASS.txt [--kernel S] [--hw HW] [--into configs/costs/X.json --origin TEXT] [--dry-run]`:
// critical paths of the compute spans of the traced SM90 kernels in a cuobjdump -sass listing
// (sim/calibrate/sass_paths.hpp), printed per span and optionally written into a cost file as
// each block's "chain". `--family sm100`: the instruction counts of the softmax and correction
// loops of the plain SM100 kernels (the per-element and per-row counts of
// configs/costs/sm100_softmax.json), printed only. `--family fa2`: the in-order issue times of the
// traced kernels/fa2 instances' compute spans; `--family blackflash`: the time of the plain
// kernels/blackflash instances' compute spans with their consumer warps issuing together
// (sim/cli/sass_costs_issue.cpp). `--barrier-ids`: per fa3_forward instance, the named barriers
// whose id register is reloaded from local memory (sim/calibrate/sass_barrier_ids.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <tuple>

#include "calibrate/sass_barrier_ids.hpp"
#include "calibrate/sass_base_code.hpp"
#include "calibrate/sass_loop_control.hpp"
#include "calibrate/sass_paths.hpp"
#include "cli/commands.hpp"
#include "cli/sass_costs_issue.hpp"
#include "lower/costs.hpp"
#include "model/hardware.hpp"
#include "model/json_format.hpp"
#include "model/json_reader.hpp"

namespace attnsim::cli {
namespace {

using sass::Class;

/// Elements per thread-row of a block at a kernel's tile shape, as the lowering passes them.
double elements_of(const std::string& block, const sass::Fa3Knobs& k) {
  if (block == "softmax_max" || block == "softmax_exp") return k.n_block / 2.0;
  return k.head_dim / 2.0;  // rescale_o, final_o: head_dim_v / 2 (head_dim_v = head_dim in kernels/sm90)
}

const std::vector<std::string> kChainBlocks = {"softmax_max", "softmax_exp", "rescale_o", "final_o"};

std::string short_name(const sass::Fa3Knobs& k) {
  std::string variant;
  if (k.rescale_milli >= 0) variant += fmt::format(" rescale>{:g}", k.rescale_milli / 1000.0);
  if (k.exp2_emu_freq > 0) variant += fmt::format(" exp2 emu {}/{}", k.exp2_emu_res, k.exp2_emu_freq);
  if (k.o_in_v) variant += " o_in_v";
  if (k.trim_last) variant += " trim_last";
  return fmt::format("fa3_forward<Traits<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}>>{}", k.head_dim, k.m_block, k.n_block,
                     k.kv_stage, k.pingpong, k.overlap, k.reg_consumer, k.reg_producer, k.trace, k.dynamic, variant);
}

/// "8 FMNMX + 2 SHFL + ..." in a fixed order of names, with the latency each is priced at.
std::string composition(const sass::CriticalPath& cp, const sass::Latencies& lat, bool with_latency) {
  std::vector<std::string> parts;
  std::map<std::string, Class> cls;
  for (const auto* in : cp.path) cls[in->cost_name] = in->cls;
  for (const auto& [name, n] : cp.by_name)
    parts.push_back(with_latency ? fmt::format("{} {} x{:.3g}", n, name, lat.of(cls[name]))
                                 : fmt::format("{} {}", n, name));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, " + "));
}

/// "177 FFMA, 161 FADD, ..." in the order of configs/costs/sm100_softmax.json, then the rest.
std::string sm100_counts(const std::map<std::string, int>& counts) {
  static const std::vector<std::string> order = {
      "FFMA",     "FADD", "FMUL",           "FFMA2",    "FADD2",    "FMUL2",    "FMNMX3",   "FMNMX",  "MUFU.EX2",
      "MUFU.RCP", "CVT",  "F2FP.BF16.PACK", "LDTM.x32", "LDTM.x16", "STTM.x32", "STTM.x16", "LDS.32", "STS.32",
      "STS.128",  "ALU",  "OTHER",          "barrier",  "spill"};
  std::vector<std::string> parts;
  for (const auto& name : order)
    if (counts.count(name)) parts.push_back(fmt::format("{} {}", counts.at(name), name));
  for (const auto& [name, n] : counts)
    if (std::find(order.begin(), order.end(), name) == order.end()) parts.push_back(fmt::format("{} {}", n, name));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ", "));
}

/// What the timed kernel runs, from a plain (untraced) fa3_forward instance: its per-tile code and
/// where its overlapped KV steps wait for the PV GEMM.
struct PlainInstance {
  sass::Fa3Knobs knobs;
  sass::TilePaths tile;
  std::vector<sass::PvWaitStep> pv_wait;
  sass::PlainKvLoop loop;
};

struct SassCosts : Command {
  std::string sass_file, kernel, hw_name = "h100_sxm", into, origin, family = "sm90";
  std::string only;  ///< with --into: the one section to write (a name --only accepts); empty: all
  bool dry_run = false, paths = false, listing = false, barrier_ids = false;

  /// Whether fa3_forward instance `fn` (knobs `k`) is one --kernel asks for: its name, mangled name
  /// or short name (short_name) contains the text; every instance without --kernel.
  bool selected(const sass::Function& fn, const sass::Fa3Knobs& k) const {
    return kernel.empty() || fn.name.find(kernel) != std::string::npos ||
           fn.mangled.find(kernel) != std::string::npos || short_name(k).find(kernel) != std::string::npos;
  }

  /// --barrier-ids: per fa3_forward instance (traced and plain), its LDLs, its named barriers with
  /// a register id and how many of those ids come straight from an LDL.
  int run_barrier_ids(const std::vector<sass::Function>& functions) const {
    int done = 0, total = 0, traced_total = 0;
    for (const auto& fn : functions) {
      const auto k = sass::fa3_knobs(fn.mangled);
      if (!k) continue;
      if (!selected(fn, *k)) continue;
      const sass::BarrierIds b = sass::barrier_ids(fn);
      ++done;
      total += b.reloaded;
      if (k->trace) traced_total += b.reloaded;
      std::cout << fmt::format("{}{} ({}): LDL {}, barriers with a register id {}, ids reloaded by LDL {}\n",
                               short_name(*k), k->own_o ? " own_o" : "", k->trace ? "traced" : "plain", b.ldl,
                               b.register_ids, b.reloaded);
    }
    if (done == 0)
      throw InputError(sass_file, "",
                       fmt::format("no fa3_forward instance{} among its {} functions (expected a cuobjdump -sass "
                                   "listing of the attnsim binary)",
                                   kernel.empty() ? "" : " matching \"" + kernel + "\"", functions.size()));
    std::cout << fmt::format("{}: {} fa3_forward instances, ids reloaded by LDL: {} ({} in traced instances)\n",
                             sass_file, done, total, traced_total);
    return 0;
  }

  /// --family sm100: the counted regions of every plain fa4_forward instance.
  int run_sm100(const std::vector<sass::Function>& functions) const {
    if (!into.empty()) throw std::invalid_argument("--family sm100 prints counts only: --into is for sm90 chains");
    int traced = 0, done = 0;
    for (const auto& fn : functions) {
      const auto k = sass::fa4_knobs(fn.mangled);
      if (!k) continue;
      if (k->trace) {
        ++traced;
        continue;
      }
      if (!kernel.empty() && fn.name.find(kernel) == std::string::npos && fn.mangled.find(kernel) == std::string::npos)
        continue;
      const sass::Sm100Analysis a = sass::analyse_sm100(fn);
      ++done;
      std::cout << fmt::format(
          "\n{}\n  hd{} q_stage {} kv_stage {} split {} exp2 emulation {}, {} rescale, correction warpgroup {}\n",
          fn.name, k->head_dim, k->q_stage, k->kv_stage, k->split,
          k->emu_freq ? fmt::format("{}/{}/{}", k->emu_freq, k->emu_res, k->emu_start_frg) : "off",
          k->conditional ? "conditional" : "unconditional", k->correction_wg ? "on" : "off");
      const std::map<std::string, std::string> per = {
          {"softmax", "KV block and row (128 S elements), steady state"},
          {"mask", "masked KV block and row (causal diagonal / seqlen_k tail only)"},
          {"correction", fmt::format("KV block of {} Q stage(s), no O rescale", k->q_stage)},
          {"rescale_o", fmt::format("16 O columns ({} chunk loops)", a.rescale_copies)},
          {"final_o", fmt::format("16 O columns ({} chunk loops)", a.final_copies)}};
      for (const auto& r : a.regions) {
        std::vector<std::string> off;
        for (const auto& [why, n] : r.off_path) off.push_back(fmt::format("{} {}", n, sass::skip_name(why)));
        std::cout << fmt::format("  {:<11} {:#07x}-{:#07x} {:>4} instructions per {}{}\n  {:<11} {}\n", r.name, r.begin,
                                 r.end, r.code.size(), per.at(r.name),
                                 off.empty() ? "" : fmt::format("; off the path: {}", fmt::join(off, ", ")), "",
                                 sm100_counts(r.counts));
        if (listing)
          for (const auto* in : r.code)
            std::cout << fmt::format("  {:<11}   {:<15} /*{:04x}*/ {}\n", "", sass::sm100_cost_name(*in), in->address,
                                     in->text);
      }
      if (!a.copies_agree) std::cout << "  (the other chunk loops' counts differ from the first one's)\n";
    }
    if (done == 0)
      throw InputError(sass_file, "",
                       fmt::format("no plain fa4_forward instance (Trace = 0){} among its {} functions",
                                   kernel.empty() ? "" : " matching \"" + kernel + "\"", functions.size()));
    std::cout << fmt::format("\n{}: {} plain fa4_forward instances counted, {} traced ones not\n", sass_file, done,
                             traced);
    return 0;
  }

  int run() override {
    std::ifstream in(sass_file);
    if (!in) throw InputError(sass_file, "", "cannot read the SASS listing");
    const auto functions = sass::parse_cuobjdump(in);
    if (barrier_ids) {
      if (family != "sm90" || !into.empty())
        throw std::invalid_argument("--barrier-ids reads the sm90 fa3_forward instances and writes nothing");
      return run_barrier_ids(functions);
    }
    if (family == "sm100") return run_sm100(functions);
    if (family == "fa2") return sass_costs_fa2(functions, {sass_file, kernel, hw_name, into, origin, dry_run});
    if (family == "blackflash")
      return sass_costs_blackflash(functions, {sass_file, kernel, hw_name, into, origin, dry_run});
    const Hardware hw = load_hardware(resolve_hardware_path(hw_name));
    const sass::Latencies lat = sass::Latencies::from(hw);
    std::vector<sass::KernelAnalysis> kernels;
    // The traced instances' overlapped steps: where their PV wait sits against the row max (their
    // clock reads may hold it elsewhere than in the plain instances), what their per-op spans show.
    std::vector<std::pair<sass::Fa3Knobs, std::vector<sass::PvWaitStep>>> traced_pv;
    // With --into, the cost file's points describe the base schedule's code: instances of variant
    // code paths (conditional rescale, exp2 emulation, O staging where the base stages it elsewhere)
    // are analysed only when not writing.
    const std::string base_schedule = project_root() + "/schedules/fa3_sm90.json";
    auto skip = [&](const sass::Fa3Knobs& k) {
      return !into.empty() && !sass::runs_schedule_code(k, hw, base_schedule);
    };
    for (const auto& fn : functions) {
      const auto k = sass::fa3_knobs(fn.mangled);
      if (!k || !k->trace || skip(*k)) continue;
      if (!selected(fn, *k)) continue;
      kernels.push_back(sass::analyse_kernel(fn, lat));
      traced_pv.emplace_back(*k, sass::pv_wait_steps(fn));
    }
    // The per-tile code of the plain instances (what the timed kernel runs).
    std::vector<PlainInstance> tiles;
    for (const auto& fn : functions) {
      const auto k = sass::fa3_knobs(fn.mangled);
      if (!k || k->trace || skip(*k)) continue;
      if (!selected(fn, *k)) continue;
      tiles.push_back({*k, sass::tile_paths(fn, lat), sass::pv_wait_steps(fn), sass::plain_kv_loop(fn)});
    }
    if (kernels.empty())
      throw InputError(sass_file, "",
                       fmt::format("no traced fa3_forward instance (Trace = 1){} among its {} functions",
                                   kernel.empty() ? "" : " matching \"" + kernel + "\"", functions.size()));
    std::cout << fmt::format("{}: {} functions, {} traced fa3_forward instances analysed\n", sass_file,
                             functions.size(), kernels.size());
    std::cout << fmt::format("latencies ({}): fma {:.4g}, alu {:.4g}, mufu {:.4g}, shfl {:.4g}, f2fp {:.4g} cycles\n",
                             hw.file, lat.fma, lat.alu, lat.mufu, lat.shfl, lat.f2fp);
    std::cout << "issue: cycles one warp alone spends issuing the span by ptxas's control codes (sum of max(1, "
                 "stall)), before any scoreboard wait; path: its longest dependency chain at those latencies\n";
    for (const auto& ka : kernels) print(ka, lat);
    std::cout << "\ntile control (plain instances): per consumer warp and work tile, the code after the TMA store of "
                 "O to the tile loop's branch (tail) and from the loop's top to the first turn, K wait or GEMM "
                 "(head), the q.full wait left out; instructions and static issue cycles\n";
    for (const auto& [k, tc, pv, loop] : tiles) {
      std::cout << fmt::format(
          "  {}{}: tail {:#x}: {} instructions, {} cycles, chain {:.0f} ({}); head {:#x}-{:#x}: "
          "{} instructions, {} cycles, chain {:.0f} ({})\n",
          short_name(k), k.own_o ? " own_o" : "", tc.tail_begin, tc.tail.size(), tc.tail_issue_cycles,
          tc.tail_chain.cycles, composition(tc.tail_chain, lat, false), tc.loop_top, tc.head_end, tc.head.size(),
          tc.head_issue_cycles, tc.head_chain.cycles, composition(tc.head_chain, lat, false));
      if (listing) {
        for (const auto* in : tc.tail) std::cout << fmt::format("    tail /*{:04x}*/ {}\n", in->address, in->text);
        for (const auto* in : tc.head) std::cout << fmt::format("    head /*{:04x}*/ {}\n", in->address, in->text);
      }
    }
    // One instance's overlapped steps: address, masked / clocked, FMNMX before the PV wait / all.
    auto steps_text = [](const std::vector<sass::PvWaitStep>& pv) {
      std::vector<std::string> at;
      for (const auto& st : pv)
        at.push_back(fmt::format("{:#x}{}{} {}/{} ex2 {}/{}", st.address, st.masked ? " masked" : "",
                                 st.clocked ? " clocked" : "", st.max_before, st.max_total, st.ex2_before,
                                 st.ex2_total));
      return fmt::format("{}", fmt::join(at, ", "));
    };
    std::cout << "\npv wait (plain instances with overlap): per overlapped KV step, the row max (FMNMX) before the "
                 "PV's wgmma wait (WARPGROUP.DEPBAR.LE gsb0, 0x0) / all the step's FMNMX, and the same of its "
                 "exponentials (MUFU.EX2)\n";
    for (const auto& [k, tc, pv, loop] : tiles)
      if (!pv.empty())
        std::cout << fmt::format("  {}{}: {}; before the wait: {:.2f} of the max, {:.2f} of the exponentials\n",
                                 short_name(k), k.own_o ? " own_o" : "", steps_text(pv), sass::max_before_pv_wait(pv),
                                 std::max(0.0, sass::exp_before_pv_wait(pv)));
    std::cout << "\npv wait (traced instances with overlap; both their recorded and their plain tiles' steps, "
                 "clocked: a recorded tile's): the same count\n";
    for (const auto& [k, pv] : traced_pv)
      if (!pv.empty()) std::cout << fmt::format("  {}{}: {}\n", short_name(k), k.own_o ? " own_o" : "", steps_text(pv));
    if (!into.empty()) write(kernels, tiles);
    return 0;
  }

  void print(const sass::KernelAnalysis& ka, const sass::Latencies& lat) const {
    const auto& k = ka.knobs;
    std::cout << fmt::format("\n{}\n  hd{} m{} n{} kv_stage {}{}{}; KV loop {:#x}-{:#x}: {} instructions",
                             short_name(k), k.head_dim, k.m_block, k.n_block, k.kv_stage,
                             k.pingpong ? ", pingpong" : "", k.overlap ? ", overlap" : "", ka.loop_begin, ka.loop_end,
                             ka.loop_instructions);
    std::vector<std::string> off;
    for (const auto& [why, n] : ka.loop_off_path) off.push_back(fmt::format("{} {}", n, sass::skip_name(why)));
    std::cout << fmt::format(", off the steady-state path: {}; trace instrumentation on it: {}\n",
                             off.empty() ? "none" : fmt::format("{}", fmt::join(off, ", ")), ka.loop_instrumentation);
    const std::vector<std::string> cols = {"FMNMX",    "FFMA", "FADD",           "FMUL", "MUFU.EX2",
                                           "MUFU.RCP", "SHFL", "F2FP.BF16.PACK", "ALU"};
    std::cout << fmt::format("  {:<14}{:>6}{:>6}{:>5}{:>5}{:>5}{:>5}{:>5}{:>5}{:>5}{:>5}{:>6}  {:>6}  {:>6}  {}\n",
                             "span", "instr", "FMNMX", "FFMA", "FADD", "FMUL", "EX2", "RCP", "SHFL", "F2FP", "ALU",
                             "other", "issue", "path", "on the critical path (cycles each)");
    std::map<std::string, int> loop_total;
    for (const auto& s : ka.spans) {
      std::map<std::string, int> other;
      int n = 0, n_other = 0;
      for (const auto* in : s.code) {
        ++n;
        if (!sass::on_chains(in->cls)) ++other[in->cost_name], ++n_other;
      }
      std::string row = fmt::format("  {:<14}{:>6}", s.op, n);
      for (const auto& c : cols) {
        const auto it = s.counts.find(c);
        const int v = it == s.counts.end() ? 0 : it->second;
        row += c == "FMNMX" ? fmt::format("{:>6}", v) : fmt::format("{:>5}", v);
      }
      int named = 0;
      for (const auto& c : cols)
        if (s.counts.count(c)) named += s.counts.at(c);
      const int unnamed_chain = n - n_other - named;  // chain-class instructions outside the columns
      row += fmt::format("{:>6}  {:>6}  {:>6.1f}  {}", n_other + unnamed_chain,
                         s.issue_cycles < 0 ? std::string("-") : std::to_string(s.issue_cycles), s.chain.cycles,
                         composition(s.chain, lat, true));
      std::cout << row << "\n";
      const bool compute = std::find(kChainBlocks.begin(), kChainBlocks.end(), s.op) != kChainBlocks.end();
      if (compute) {
        std::vector<std::string> o;
        for (const auto& [name, c] : other) o.push_back(fmt::format("{} {}", c, name));
        for (const auto& [name, c] : s.counts)
          if (std::find(cols.begin(), cols.end(), name) == cols.end() && !other.count(name))
            o.push_back(fmt::format("{} {}", c, name));
        std::vector<std::string> skipped;
        for (const auto& [why, c] : s.off_path) skipped.push_back(fmt::format("{} {}", c, sass::skip_name(why)));
        std::cout << fmt::format("  {:<14}other: {}; off path: {}; instrumentation: {}\n", "",
                                 o.empty() ? "-" : fmt::format("{}", fmt::join(o, ", ")),
                                 skipped.empty() ? "-" : fmt::format("{}", fmt::join(skipped, ", ")),
                                 s.instrumentation);
        if (listing)
          for (const auto* in : s.code)
            std::cout << fmt::format("  {:<14}  {:>5}  /*{:04x}*/ {}\n", "", sass::class_name(in->cls), in->address,
                                     in->text);
        if (paths) {
          double t = 0;
          for (const auto* in : s.chain.path) {
            t += lat.of(in->cls);
            std::cout << fmt::format("  {:<14}  {:>6.1f}  /*{:04x}*/ {}\n", "", t, in->address, in->text);
          }
        }
        if (s.op != "final_o")
          for (const auto& [name, c] : s.counts) loop_total[name] += c;
      }
    }
    std::vector<std::string> tot;
    for (const auto& c : cols)
      if (loop_total.count(c)) tot.push_back(fmt::format("{} {}", loop_total[c], c));
    std::cout << fmt::format("  KV loop compute spans (softmax_max + softmax_exp + rescale_o), per warp: {}\n",
                             fmt::join(tot, ", "));
  }

  void write(const std::vector<sass::KernelAnalysis>& kernels, const std::vector<PlainInstance>& tiles) const;
};

void SassCosts::write(const std::vector<sass::KernelAnalysis>& kernels, const std::vector<PlainInstance>& tiles) const {
  if (origin.empty())
    throw std::invalid_argument(
        "--into needs --origin: where the listing came from (\"cuobjdump -sass on an H200, "
        "2026-11-23\"), for the chains' source text");
  std::ifstream in(into);
  if (!in) throw InputError(into, "", "cannot read the cost file");
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) { throw InputError(into, "", e.what()); }
  if (!doc.contains("instructions") || !doc.contains("blocks"))
    throw InputError(into, "", "not a cost file (no instructions, blocks)");
  // Instances in order of preference: fa3_sm90's defaults first (intra-warpgroup overlap, 2 K/V stages,
  // the static tile scheduler), then file order.
  std::vector<const sass::KernelAnalysis*> order;
  for (const auto& k : kernels) order.push_back(&k);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    if (a->knobs.overlap != b->knobs.overlap) return a->knobs.overlap;
    if (a->knobs.kv_stage != b->knobs.kv_stage) return a->knobs.kv_stage < b->knobs.kv_stage;
    return !a->knobs.dynamic && b->knobs.dynamic;
  });
  std::cout << fmt::format("\nchains for {}{}\n", into, dry_run ? " (dry run: nothing written)" : "");
  for (const auto& block : kChainBlocks) {
    if (!only.empty() && only != "chains") break;
    if (!doc["blocks"].contains(block)) throw InputError(into, "/blocks/" + block, "missing block");
    struct Point {
      double elements;
      std::map<std::string, int> counts;
      double cycles;
      std::vector<std::string> shapes, kernels;
    };
    std::map<double, Point> points;
    std::set<std::string> shapes_done;
    for (const auto* ka : order) {
      const auto& k = ka->knobs;
      const std::string shape = fmt::format("hd{} n{}", k.head_dim, k.n_block);
      const sass::Span* s = ka->find(block);
      if (!s) continue;
      const Point p{elements_of(block, k), s->chain.by_name, s->chain.cycles, {shape}, {short_name(k)}};
      if (shapes_done.count(shape)) {
        const Point& used = points.at(p.elements);
        if (used.counts != p.counts)
          std::cout << fmt::format(
              "  {}: {} has a different chain ({:.1f} cycles) from the preferred instance of {}; "
              "not used\n",
              block, short_name(k), p.cycles, shape);
        continue;
      }
      shapes_done.insert(shape);
      auto it = points.find(p.elements);
      if (it == points.end()) {
        points.emplace(p.elements, p);
      } else if (it->second.counts == p.counts) {
        it->second.shapes.push_back(shape);
        it->second.kernels.push_back(short_name(k));
      } else {
        std::cout << fmt::format("  {}: {} and {} differ at {:g} elements; keeping the longer chain\n", block,
                                 fmt::join(it->second.shapes, ", "), shape, p.elements);
        if (p.cycles > it->second.cycles) it->second = p;
      }
    }
    nlohmann::ordered_json pts = nlohmann::ordered_json::array();
    for (const auto& [e, p] : points) {
      nlohmann::ordered_json j;
      j["elements"] =
          e == std::floor(e) ? nlohmann::ordered_json(static_cast<long long>(e)) : nlohmann::ordered_json(e);
      for (const auto& [name, n] : p.counts) {
        auto& instr = doc["instructions"];
        if (!instr.contains(name))
          throw InputError(into, "/instructions/" + name,
                           fmt::format("the {} chain has {} on it: add the instruction to the table", block, name));
        j[name] = n;
      }
      j["kernel"] = fmt::format("{}", fmt::join(p.kernels, "; "));
      pts.push_back(j);
      std::cout << fmt::format("  {:<12} {:>5g} elements ({}): {:.1f} cycles on {}\n", block, e,
                               fmt::join(p.shapes, ", "), p.cycles, hw_name);
    }
    nlohmann::ordered_json chain;
    chain["points"] = pts;
    const std::map<std::string, std::string> where = {
        {"softmax_max", "span (mask, row max, rescale factor) of the steady-state KV loop of an unmasked block"},
        {"softmax_exp", "span (exp2, row sums) of the steady-state KV loop"},
        {"rescale_o", "span (O rescale and the bf16 pack of P) of the steady-state KV loop"},
        {"final_o", "span (sum shuffles, 1/sum, O scale, pack, stores) of the epilogue after the KV loop"}};
    chain["source"] = fmt::format(
        "critical path (longest chain of register dependencies; loads, stores, wgmma, barriers not on it) of the {} {} "
        "in the traced kernels/sm90 instances named per point (\"kernel\"), found by attnsim sass-costs in {}; {}",
        block, where.at(block), std::filesystem::path(sass_file).filename().string(), origin);
    doc["blocks"][block]["chain"] = chain;
  }
  // The code between each iteration's spans ("-" intervals: releases, pipeline indices, loop
  // branch), per instance knobs, the preferred instance first.
  // The fields a loop_control or tile_control point names its kernel instance by.
  auto instance = [](const sass::Fa3Knobs& k) {
    nlohmann::ordered_json j;
    j["kernel"] = short_name(k);
    j["head_dim"] = k.head_dim;
    j["pingpong"] = k.pingpong;
    j["overlap"] = k.overlap;
    j["dynamic"] = k.dynamic;
    j["n_block"] = k.n_block;
    return j;
  };
  std::vector<sass::PlainLoop> plain_loops;
  for (const auto& t : tiles) plain_loops.emplace_back(t.knobs, t.loop);
  nlohmann::ordered_json lc_points = nlohmann::ordered_json::array();
  std::set<std::tuple<int, int, bool, bool, bool>> lc_done;
  for (const auto* ka : order) {
    const auto& k = ka->knobs;
    if (!lc_done.insert({k.head_dim, k.n_block, k.pingpong, k.overlap, k.dynamic}).second) continue;
    const sass::LoopControlCount lcc = sass::loop_control_count(*ka, kernels, plain_loops);
    nlohmann::ordered_json j = instance(k);
    j["instructions"] = lcc.instructions;
    j["issue_cycles"] = lcc.issue_cycles;
    std::string note;
    if (lcc.plain_over_static_instructions) {
      j["plain_over_static_instructions"] = *lcc.plain_over_static_instructions;
      j["plain_over_static_issue_cycles"] = *lcc.plain_over_static_issue_cycles;
      note = fmt::format(" (the static twin's), {:+} instructions and {:+} cycles in the plain loop over the static one's",
                         *lcc.plain_over_static_instructions, *lcc.plain_over_static_issue_cycles);
    }
    lc_points.push_back(j);
    std::cout << fmt::format("  {:<12} {}: {} instructions, {} cycles of static issue per KV iteration{}\n",
                             "loop_control", short_name(k), lcc.instructions, lcc.issue_cycles, note);
  }
  nlohmann::ordered_json lc;
  lc["derivation"] =
      "per consumer warp and KV iteration: the instructions between its traced spans (stage-release arrives, "
      "pipeline indices and phases, the pingpong arrive, the loop branch), trace instrumentation and wait retries "
      "left out, and their static issue time (sum of max(1, stall count)); no span records them, so a measured "
      "timeline shows them as gaps. Dynamic scheduler instances: their static twin's gaps, and "
      "plain_over_static_*: the steady-state KV loop of the dynamic plain (untraced) instance less that of the "
      "static plain one (the tile's values in vector registers, warp-uniform guards, descriptors moved to uniform "
      "registers: code the traced build does not have), which the model runs in the same gaps";
  // Where the loop and tile control counts came from.
  const std::string counted_in =
      fmt::format("attnsim sass-costs in {}; {}", std::filesystem::path(sass_file).filename().string(), origin);
  lc["source"] = counted_in;
  lc["points"] = lc_points;
  if (only.empty() || only == "loop_control") doc["loop_control"] = lc;
  // The plain instances' sections: one point per instance (instances that differ only in their L2
  // sections give one), each written where --only names it or names nothing.
  auto plain_instance = [&](const sass::Fa3Knobs& k) {
    nlohmann::ordered_json j = instance(k);
    j["own_o"] = k.own_o;
    return j;
  };
  auto plain_key = [](const sass::Fa3Knobs& k) { return short_name(k) + (k.own_o ? " own_o" : ""); };
  auto write_section = [&](const char* name, const char* derivation, const nlohmann::ordered_json& points,
                           const char* none) {
    if (points.empty() && only == name)
      throw InputError(sass_file, "", fmt::format("--only {}: the listing has no {}", name, none));
    if (points.empty() || !(only.empty() || only == name)) return;
    nlohmann::ordered_json section;
    section["derivation"] = derivation;
    section["source"] = counted_in;
    section["points"] = points;
    doc[name] = section;
  };
  // The code a consumer warp runs once per work tile outside the spans.
  nlohmann::ordered_json tc_points = nlohmann::ordered_json::array();
  std::set<std::string> tc_done;
  for (const auto& [k, tc, pv, loop] : tiles) {
    if (!tc_done.insert(plain_key(k)).second) continue;
    if (tc.tail_issue_cycles < 0 || tc.head_issue_cycles < 0)
      throw InputError(sass_file, "", fmt::format("{}: the listing has no control codes (encodings)", short_name(k)));
    nlohmann::ordered_json j = plain_instance(k);
    j["head_instructions"] = tc.head.size();
    j["head_issue_cycles"] = tc.head_issue_cycles;
    j["tail_instructions"] = tc.tail.size();
    j["tail_issue_cycles"] = tc.tail_issue_cycles;
    tc_points.push_back(j);
  }
  write_section(
      "tile_control",
      "per consumer warp and work tile, in the plain (untraced) instances: the tail, from the epilogue's last "
      "TMA store of O to the tile loop's branch (the LSE, the loop's bookkeeping), and the head, from the "
      "loop's top to the tile's first pingpong turn, K wait or GEMM (the tile slot or the tile's "
      "coordinates, its KV block count, the exit test), the pipeline_q.full wait left out; along the "
      "steady-state path (predicated branches fall through but over a wait's retry loop); instructions and "
      "their static issue time (sum of max(1, stall count)). Scoreboard waits (shared-memory and constant "
      "loads, the tile slot's atomics) are not in it",
      tc_points, "plain fa3_forward instance (Trace = 0)");
  // Where the overlapped KV steps wait for the PV GEMM (plain instances with overlap).
  nlohmann::ordered_json pv_points = nlohmann::ordered_json::array();
  std::set<std::string> pv_done;
  for (const auto& [k, tc, pv, loop] : tiles) {
    if (pv.empty() || !pv_done.insert(plain_key(k)).second) continue;
    nlohmann::ordered_json j = plain_instance(k);
    j["max_before_pv_wait"] = std::round(sass::max_before_pv_wait(pv) * 1000) / 1000;
    pv_points.push_back(j);
  }
  write_section("pv_wait",
                "per plain (untraced) instance with intra-warpgroup overlap: the fraction of the row max (FMNMX) that "
                "ptxas scheduled before the PV GEMM's wait (WARPGROUP.DEPBAR.LE gsb0, 0x0) in an overlapped KV step, "
                "between the QK's wait (gsb0, 0x1) and the step's end; the mean over the unmasked steps. The source "
                "waits for the PV before the softmax; what runs before the wait in the SASS runs under the PV",
                pv_points, "plain fa3_forward instance with overlap");
  // Every instruction a chain names needs its latency class.
  const std::map<std::string, std::string> classes = {
      {"FFMA", "fma"},  {"FADD", "fma"},      {"FMUL", "fma"},      {"FMNMX", "alu"},          {"ALU", "alu"},
      {"SHFL", "shfl"}, {"MUFU.EX2", "mufu"}, {"MUFU.RCP", "mufu"}, {"F2FP.BF16.PACK", "f2fp"}};
  for (auto& [name, entry] : doc["instructions"].items()) {
    auto c = classes.find(name);
    if (c == classes.end() || entry.contains("latency_class")) continue;
    // Insert after "lanes" to keep the pipe, lanes, latency_class, provenance, source order.
    nlohmann::ordered_json updated;
    for (auto& [key, v] : entry.items()) {
      updated[key] = v;
      if (key == "lanes") updated["latency_class"] = c->second;
    }
    if (!updated.contains("latency_class")) updated["latency_class"] = c->second;
    entry = updated;
  }
  if (dry_run) {
    for (const auto& block : kChainBlocks)
      std::cout << fmt::format("  \"{}\": {{... \"chain\": {}}}\n", block,
                               format_json(doc["blocks"][block]["chain"], 2));
    std::cout << fmt::format("  \"loop_control\": {}\n", format_json(doc["loop_control"], 2));
    for (const char* section : {"tile_control", "pv_wait"})
      if (doc.contains(section)) std::cout << fmt::format("  \"{}\": {}\n", section, format_json(doc[section], 2));
    return;
  }
  CostModel::write(into, doc);
  std::cout << fmt::format("wrote {}\n", into);
}

}  // namespace

std::unique_ptr<Command> add_sass_costs(CLI::App& app, CLI::App*& sub) {
  auto c = std::make_unique<SassCosts>();
  sub = app.add_subcommand("sass-costs",
                           "critical paths of the softmax / rescale / epilogue spans in the SASS of the traced SM90 "
                           "kernels; optionally written into a cost file as each block's chain");
  sub->add_option("sass", c->sass_file, "cuobjdump -sass listing of the attnsim binary")->required();
  sub->add_option("--kernel", c->kernel, "analyse only instances whose name contains this");
  sub->add_option("--hw", c->hw_name, "hardware config whose latencies price the chains (default h100_sxm)");
  sub->add_option("--into", c->into, "cost file to write the chains into, e.g. configs/costs/sm90_softmax.json");
  sub->add_option("--origin", c->origin,
                  "where the listing came from, for the chains' source text (required with --into), e.g. "
                  "\"cuobjdump -sass on an H200, 2026-11-23\"");
  sub->add_flag("--paths", c->paths, "print the instructions on each compute span's critical path");
  sub->add_flag("--listing", c->listing, "print each compute span's instructions on the steady-state path");
  sub->add_flag("--dry-run", c->dry_run, "with --into: print the chains that would be written, write nothing");
  sub->add_flag("--barrier-ids", c->barrier_ids,
                "per fa3_forward instance (traced and plain): the named barriers whose id register is reloaded from "
                "local memory (LDL) right before them; prints only");
  sub->add_option(
         "--only", c->only,
         "with --into: write only this section (the blocks' chains, loop_control, tile_control or pv_wait) and "
         "keep the others as they are (each section names the listing it came from)")
      ->check(CLI::IsMember({"chains", "loop_control", "tile_control", "pv_wait"}));
  sub->add_option("--family", c->family,
                  "sm90 (default): chains of the traced kernels/sm90 instances; sm100: instruction counts of the "
                  "softmax and correction loops of the plain kernels/sm100 instances; fa2: in-order issue times of "
                  "the traced kernels/fa2 instances' compute spans (--into writes an issue-timing file); blackflash: the "
                  "plain kernels/blackflash instances' compute spans, their consumer warps issuing together (--into "
                  "likewise)")
      ->check(CLI::IsMember({"sm90", "sm100", "fa2", "blackflash"}));
  return c;
}

}  // namespace attnsim::cli
