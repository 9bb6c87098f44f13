// `attnsim sass-costs LISTING --family fa2 [--into configs/costs/fa2_sm80_issue.json --origin TEXT]`:
// the in-order issue time of each compute span of the traced kernels/fa2 instances
// (sim/calibrate/sass_fa2.hpp), printed, and optionally written as the issue-timing file the
// fa2_sm80 lowering reads (sim/lower/issue_timing.hpp). `--family blackflash
// [--into configs/costs/blackflash_issue.json ...]`: the same for the plain kernels/blackflash
// instances, their consumer warps issuing together (sim/calibrate/sass_blackflash.hpp).
#include "cli/sass_costs_issue.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "calibrate/sass_blackflash.hpp"
#include "calibrate/sass_fa2.hpp"
#include "lower/blackflash/blackflash_schedule.hpp"
#include "lower/issue_timing.hpp"
#include "model/hardware.hpp"
#include "model/json_format.hpp"
#include "model/json_reader.hpp"

namespace attnsim::cli {

namespace {

std::string short_name(const sass::Fa2Knobs& k) {
  return fmt::format("fa2_forward<Fa2Traits<{}, {}, {}, {}>>", k.head_dim, k.br, k.bc, k.trace);
}

/// Writes `doc` to `file` if it parses as an issue-timing file; throws InputError if not.
void write_checked(const std::string& file, const nlohmann::ordered_json& doc) {
  IssueTimings::parse(nlohmann::json::parse(doc.dump()), file);
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw InputError(file, "", "cannot write the issue-timing file");
    out << format_json(doc, 0) << "\n";
  }
  std::filesystem::rename(tmp, file);
}

/// `x` to one decimal: cycles, for the file.
double tenths(double x) { return std::round(x * 10) / 10; }

/// The file's per-block fields of one issue time.
nlohmann::ordered_json block_json(const sass::IssueTime& t) {
  nlohmann::ordered_json b;
  b["cycles"] = tenths(t.cycles);
  b["instructions"] = t.instructions;
  b["ffma"] = t.ffma;
  b["alu"] = t.alu;
  b["mufu"] = t.mufu;
  b["shared_loads"] = t.shared_loads;
  b["stall_cycles"] = tenths(t.stall_cycles);
  b["scoreboard_cycles"] = tenths(t.scoreboard_cycles);
  b["pipe_cycles"] = tenths(t.pipe_cycles);
  b["bank_cycles"] = tenths(t.bank_cycles);
  b["fetch_cycles"] = tenths(t.fetch_cycles);
  return b;
}

/// Writes the document, or prints it with --dry-run.
int finish(const IssueCostOptions& o, const nlohmann::ordered_json& doc) {
  if (o.dry_run) {
    std::cout << format_json(doc, 0) << "\n";
    return 0;
  }
  write_checked(o.into, doc);
  std::cout << fmt::format("wrote {}\n", o.into);
  return 0;
}

void require_origin(const IssueCostOptions& o) {
  if (o.origin.empty())
    throw std::invalid_argument(
        "--into needs --origin: where the listing came from (\"cuobjdump -sass on an H100, "
        "2026-11-24\")");
}

}  // namespace

int sass_costs_fa2(const std::vector<sass::Function>& functions, const IssueCostOptions& o) {
  const std::string hw_path = resolve_hardware_path(o.hw_name);
  const Hardware hw = load_hardware(hw_path);
  const sass::IssueModel m = sass::IssueModel::from(hw);
  std::vector<sass::Fa2Analysis> done;
  std::vector<double> plain_scale;  // per analysis: the plain twin's KV loop / the traced spans' sum
  for (const auto& fn : functions) {
    const auto k = sass::fa2_knobs(fn.mangled);
    if (!k || !k->trace) continue;
    if (!o.kernel.empty() && fn.name.find(o.kernel) == std::string::npos) continue;
    done.push_back(sass::analyse_fa2(fn, m));
    const auto& a = done.back();
    std::cout << fmt::format(
        "\n{}\n  hd{} Br {} Bc {}: one warp alone, in-order issue on {} ({} register banks, LDS "
        "{:.0f}, MUFU {:.0f}, SHFL {:.0f} cycles); KV loop {} KB of code, instruction cache {} KB: "
        "{}\n",
        fn.name, k->head_dim, k->br, k->bc, hw.name, m.register_banks, m.lds_latency, m.mufu_latency, m.shfl_latency,
        a.kv_loop_bytes / 1024, m.icache_bytes / 1024,
        a.cold_icache ? fmt::format("each span starts cold ({:.2f} cycles per instruction fetched)",
                                    m.ifetch_cycles_per_instruction)
                      : "the loop stays cached");
    std::cout << fmt::format("  {:<12} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7} {:>9} {:>8} {:>6} {:>6} {:>6}  loops\n",
                             "span", "cycles", "instrs", "FFMA", "ALU", "MUFU", "LDS", "static", "scorebd", "pipe",
                             "bank", "fetch");
    for (const auto& s : a.spans) {
      std::vector<std::string> loops;
      for (const auto& [at, n] : s.taken) loops.push_back(fmt::format("{:#x} x{}", at, n + 1));
      const auto& t = s.issue;
      std::cout << fmt::format(
          "  {:<12} {:>8.0f} {:>8} {:>7} {:>7} {:>7} {:>7} {:>9.0f} {:>8.0f} {:>6.0f} {:>6.0f} {:>6.0f}  {}\n", s.op,
          t.cycles, t.instructions, t.ffma, t.alu, t.mufu, t.shared_loads, t.stall_cycles, t.scoreboard_cycles,
          t.pipe_cycles, t.bank_cycles, t.fetch_cycles,
          loops.empty() ? "-" : fmt::format("{}", fmt::join(loops, ", ")));
    }
    int records = 0;
    for (const auto& s : a.spans) records += s.instrumentation;
    std::cout << fmt::format("  (trace-record stores left out of the paths: {})\n", records);
    // The timed launches run the plain twin: its KV loop sets the compute spans' total.
    const sass::Function* twin = nullptr;
    for (const auto& f : functions)
      if (const auto pk = sass::fa2_knobs(f.mangled);
          pk && !pk->trace && pk->head_dim == k->head_dim && pk->br == k->br && pk->bc == k->bc)
        twin = &f;
    if (!twin)
      throw InputError(o.sass_file, "",
                       fmt::format("no plain twin of {} (Fa2Traits<{}, {}, {}, false>): the timed launches run it",
                                   fn.name, k->head_dim, k->br, k->bc));
    const sass::Fa2PlainLoop p = sass::analyse_fa2_plain(*twin, m);
    double traced = 0;
    for (const auto& s : a.spans) traced += s.op == "copy_kv" ? 0.0 : s.issue.cycles;
    plain_scale.push_back(p.issue.cycles / traced);
    std::cout << fmt::format(
        "  plain twin's KV loop (what timed launches run): {:.0f} cycles ({} instructions, scoreboard {:.0f}, fetch "
        "{:.0f}) against the traced spans' {:.0f}: compute spans x {:.4f}\n",
        p.issue.cycles, p.issue.instructions, p.issue.scoreboard_cycles, p.issue.fetch_cycles, traced,
        plain_scale.back());
  }
  if (done.empty())
    throw InputError(o.sass_file, "",
                     fmt::format("no traced fa2_forward instance{} among its {} functions",
                                 o.kernel.empty() ? "" : " matching \"" + o.kernel + "\"", functions.size()));
  if (o.into.empty()) return 0;
  require_origin(o);
  nlohmann::ordered_json doc;
  doc["description"] =
      "In-order issue time of the compute blocks and the load warps' K/V copy (copy_kv) of the FA2-style kernel "
      "(kernels/fa2), per compiled instance: one warp alone on its SMSP issuing the block's SASS with ptxas's stall "
      "counts, its scoreboard waits on variable-latency results (shared and global loads, MUFU, shuffles), its pipes' "
      "occupancy, register bank conflicts and instruction fetch (sim/calibrate/sass_issue.hpp), and the block's "
      "instruction counts. The fa2_sm80 lowering takes cycles as the block's stand-alone time (the copy's whole "
      "time) and the counts as its pipe work. The timed launches run the plain instance, which ptxas schedules "
      "differently without the trace recorder's clock reads (more waits on shared-load results: ncu's short "
      "scoreboard stalls, H100, hd64 s2k b4: 0.30 per instruction plain, 0.13 traced): each compute block's cycles "
      "are its traced span's (traced_cycles, the split the measured spans show) times the plain instance's KV loop "
      "over the traced spans' sum, the two timed alike; the breakdown fields are the traced span's. Written by "
      "attnsim sass-costs --family fa2; do not edit by hand.";
  doc["hardware"] = std::filesystem::path(hw_path).filename().string();
  doc["source"] = fmt::format(
      "attnsim sass-costs --family fa2 on {} ({}), latencies and pipe rates of {}: the KV loop's spans between the two "
      "__syncthreads of each traced instance (the trace recorder's record stores left out), scaled to the plain "
      "twin's KV loop between the same __syncthreads, and the copy loops before them, loops run as the kernel's "
      "structure says",
      std::filesystem::path(o.sass_file).filename().string(), o.origin, hw.name);
  nlohmann::ordered_json ks = nlohmann::ordered_json::array();
  for (size_t i = 0; i < done.size(); ++i) {
    const auto& a = done[i];
    nlohmann::ordered_json k;
    k["kernel"] = short_name(a.knobs);
    k["head_dim"] = a.knobs.head_dim;
    k["br"] = a.knobs.br;
    k["bc"] = a.knobs.bc;
    nlohmann::ordered_json blocks;
    for (const auto& s : a.spans) {
      nlohmann::ordered_json b = block_json(s.issue);
      if (s.op != "copy_kv") {
        b["cycles"] = tenths(s.issue.cycles * plain_scale[i]);
        b["traced_cycles"] = tenths(s.issue.cycles);
      }
      blocks[s.op] = b;
    }
    k["blocks"] = blocks;
    ks.push_back(k);
  }
  doc["kernels"] = ks;
  return finish(o, doc);
}

int sass_costs_blackflash(const std::vector<sass::Function>& functions, const IssueCostOptions& o) {
  const std::string hw_path = resolve_hardware_path(o.hw_name);
  const Hardware hw = load_hardware(hw_path);
  const sass::SmIssueModel m = sass::SmIssueModel::from(hw);
  std::vector<sass::BlackFlashAnalysis> done;
  for (const auto& fn : functions) {
    const auto k = sass::blackflash_knobs(fn.mangled);
    if (!k || k->trace) continue;
    if (!o.kernel.empty() && fn.name.find(o.kernel) == std::string::npos) continue;
    const int fit = blackflash::occupancy(hw, k->kv_stage, k->p_over_k, k->registers);
    for (int ctas = 1; ctas <= fit; ++ctas) {
      done.push_back(sass::analyse_blackflash(fn, m, ctas));
      const auto& a = done.back();
      std::cout << fmt::format(
          "\n{}\n  kv_stage {}, P {}, {} registers: {} CTA{} per SM ({} consumer warps per SMSP) on {}; KV loop {} B "
          "of code (cached); steady KV block {:.0f} cycles ({:.0f} masked)\n",
          fn.name, k->kv_stage, k->p_over_k ? "over K" : "own tile", k->registers, ctas, ctas > 1 ? "s" : "",
          ctas * sass::kBlackFlashConsumers / m.smsp, hw.name, a.kv_loop_bytes, a.period, a.period_masked);
      std::cout << fmt::format("  {:<19} {:>7} {:>7} {:>7} {:>5} {:>5} {:>5} {:>5} {:>7}\n", "span", "cycles", "alone",
                               "instrs", "FFMA", "ALU", "MUFU", "HMMA", "SMEM B");
      for (const auto& s : a.spans)
        std::cout << fmt::format("  {:<19} {:>7.0f} {:>7.0f} {:>7} {:>5} {:>5} {:>5} {:>5} {:>7.0f}\n", s.op, s.cycles,
                                 s.alone.cycles, s.alone.instructions, s.alone.ffma, s.alone.alu, s.alone.mufu, s.hmma,
                                 s.shared_bytes);
    }
  }
  if (done.empty())
    throw InputError(o.sass_file, "",
                     fmt::format("no plain blackflash_forward instance{} among its {} functions",
                                 o.kernel.empty() ? "" : " matching \"" + o.kernel + "\"", functions.size()));
  if (o.into.empty()) return 0;
  require_origin(o);
  nlohmann::ordered_json doc;
  doc["description"] =
      "Time of the compute blocks of the BlackFlash kernel's consumer warps (kernels/blackflash), per compiled plain "
      "instance and number of resident CTAs per SM: every consumer warp of the SM's CTAs issuing the KV loop's SASS "
      "together (sim/calibrate/sm_issue.hpp: ptxas's stall counts, scoreboard waits, register bank conflicts, each "
      "SMSP's dispatch, pipes and mma.sync tensor core shared, the SM's shared memory served in turn, bar.sync among a "
      "CTA's consumers); cycles is a block's mean steady-state time per warp, alone_cycles one warp alone. The "
      "blackflash lowering takes cycles as the block's time floor and the counts as its pipe work. Written by attnsim "
      "sass-costs --family blackflash; do not edit by hand.";
  doc["hardware"] = std::filesystem::path(hw_path).filename().string();
  doc["source"] = fmt::format(
      "attnsim sass-costs --family blackflash on {} ({}), latencies and rates of {}: the consumer KV loop of each plain "
      "instance, cut into spans where the traced kernel records them, unmasked and masked",
      std::filesystem::path(o.sass_file).filename().string(), o.origin, hw.name);
  nlohmann::ordered_json ks = nlohmann::ordered_json::array();
  for (const auto& a : done) {
    nlohmann::ordered_json k;
    k["kernel"] = fmt::format("blackflash_forward<BfTraits<{}, {}, {}, false>>", a.knobs.kv_stage, a.knobs.p_over_k,
                              a.knobs.registers);
    k["head_dim"] = blackflash::kTile;
    k["br"] = blackflash::kTile;
    k["bc"] = blackflash::kTile;
    k["knobs"] = {{"kv_stage", a.knobs.kv_stage}, {"p_over_k", a.knobs.p_over_k ? 1 : 0}, {"registers", a.knobs.registers}};
    k["ctas_per_sm"] = a.ctas_per_sm;
    nlohmann::ordered_json blocks;
    for (const auto& s : a.spans) {
      nlohmann::ordered_json b = block_json(s.alone);
      b["cycles"] = tenths(s.cycles);
      b["alone_cycles"] = tenths(s.alone.cycles);
      b["shared_bytes"] = s.shared_bytes;
      b["hmma"] = s.hmma;
      blocks[s.op] = b;
    }
    k["blocks"] = blocks;
    ks.push_back(k);
  }
  doc["kernels"] = ks;
  return finish(o, doc);
}

}  // namespace attnsim::cli
