#include "report/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/pipe_sharing.hpp"

namespace attnsim {

namespace {
std::string base_name(const std::string& barrier) {
  const auto b = barrier.find('[');
  return b == std::string::npos ? barrier : barrier.substr(0, b);
}
/// Name of wait slot b of WarpStats::wait_by_barrier: a barrier (stage index dropped), or an async wait.
std::string wait_name(const Timeline& tl, size_t b) {
  const size_t barriers = tl.labels.size() / 2 - 1;  // labels: 2 per barrier, then the two async waits
  return b < barriers ? base_name(tl.labels[2 * b]) : tl.labels[2 * barriers + (b - barriers)];
}
}  // namespace

Summary summarize(const Prediction& p, const Schedule& s, const Hardware& hw, const Problem& problem) {
  Summary out;
  out.schedule = s.name();
  out.hardware = hw.name;
  out.problem = problem.describe();
  out.knobs = s.knob_lines(hw, problem);
  out.time_us = p.time_us;
  out.tflops = p.tflops;
  out.cycles = p.cycles;
  out.clock_ghz = p.clock_ghz;
  out.activity = p.activity;
  out.ctas_simulated = p.ctas_simulated;
  out.events = p.events;
  switch (p.mode) {
    case GridPlan::Mode::StaticPersistent:
      out.grid = fmt::format("static persistent: {} CTAs ({}-CTA clusters), {} tiles; the critical CTA runs {} tiles",
                             p.resident_ctas, p.cta_group, p.total_tiles, p.critical_tiles);
      if (p.critical_sampled_tiles > 0)
        out.grid += fmt::format(" (simulated: its first {}, the others from their steady state)",
                                p.critical_sampled_tiles);
      break;
    case GridPlan::Mode::LptSingleTile:
      out.grid = fmt::format("LPT single-tile: {} tiles on {} CTA slots", p.total_tiles, p.resident_ctas);
      break;
    case GridPlan::Mode::DynamicLpt:
      out.grid = fmt::format("dynamic LPT persistent: {} CTAs take {} tiles longest first; the critical CTA runs {} tiles",
                             p.resident_ctas, p.total_tiles, p.critical_tiles);
      break;
    case GridPlan::Mode::PerHead:
      out.grid = fmt::format("one CTA per (batch, head) walking its Q tiles: {} CTAs on {} slots ({} per SM), {} tiles",
                             p.cta_count, p.resident_ctas, p.ctas_per_sm, p.total_tiles);
      break;
    case GridPlan::Mode::Single:
      out.grid = "one CTA";
      break;
  }

  const SimResult& r = p.critical;
  const bool schedule_has_problem = s.flops(problem) > 0;
  const double T = std::max(1.0, r.end_cycles);
  const auto& used = r.units.pipe_consumed;
  const auto& cap = r.units.pipe_capacity;
  auto pipe = [&](int offset) {
    double u = 0, c = 0;
    for (int sp = 0; sp < hw.smsp_per_sm; ++sp) {
      u += used[sp * kPipesPerSmsp + offset];
      c += cap[sp * kPipesPerSmsp + offset];
    }
    return c > 0 ? u / (c * T) : 0.0;
  };
  out.units.push_back(
      {"tensor_core", r.units.tensor_busy / T,
       fmt::format("{:.3g} GFLOP per CTA at {} FLOP/clk", r.units.tensor_flops / 1e9, hw.tensor_flops_per_clk)});
  out.units.push_back({"mufu", pipe(kMufuPipe), "ex2 lane-ops / (MUFU lanes x cycles), all SMSPs"});
  out.units.push_back({"fma", pipe(kFmaPipe), "FMA-pipe lane-ops / capacity, all SMSPs"});
  out.units.push_back({"alu", pipe(kAluPipe), "ALU-pipe lane-ops / capacity, all SMSPs"});
  out.units.push_back({"issue", pipe(kIssuePipe), "warp instructions / issue slots, all SMSPs"});
  if (pipe(kMmaSyncPipe) > 0)
    out.units.push_back({"mma_sync", pipe(kMmaSyncPipe), "mma.sync FLOP / per-SMSP tensor rate, all SMSPs"});
  if (hw.has_tmem())
    out.units.push_back({"tmem", used[kTmemResource] / (hw.tmem_bytes_per_clk * T), "tcgen05.ld/st bytes / datapath"});
  // Every figure is work done over the most the model lets that unit do in the same time, so it
  // lies in [0, 1]: SMEM counts the ld/st.shared bytes its bandwidth is shared among (MMA operand
  // reads and TMA writes are timed by the tensor core and the TMA, not by it); L2 the TMA bytes
  // of all resident CTAs against the chip-wide rate the TMA engines share; HBM the kernel's bytes
  // over its whole time, which the driver never lets be shorter than those bytes take.
  out.units.push_back({"smem", used[kSmemResource] / (hw.smem_bytes_per_clk * T),
                       fmt::format("ld/st.shared / bandwidth; besides: MMA operand reads {:.0f}, TMA {:.0f} B/clk",
                                   r.units.mma_smem_bytes / T, r.units.tma_bytes / T)});
  out.units.push_back({"tma", r.units.tma_busy / T,
                       fmt::format("{:.0f} B/clk per copy while it moves (the SM's port or its share of the chip)",
                                   r.tma_bytes_per_clk)});
  const int active_sms = std::min(hw.num_sms, std::max(1, p.resident_ctas));
  const double l2_rate = l2_bytes_per_clk(hw, p.kv_sharing);
  out.units.push_back({"l2", r.units.tma_bytes * active_sms / (l2_rate * T),
                       fmt::format("TMA bytes of all resident CTAs / L2 rate at this K/V sharing ({:.0f} B/clk)",
                                   l2_rate)});
  out.units.push_back({"hbm", p.hbm_bytes > 0 ? p.hbm_bytes / (hw.hbm_bytes_per_s * p.time_us * 1e-6) : 0.0,
                       p.hbm_bound ? "compulsory bytes / HBM bandwidth: the kernel time is HBM-bound"
                       : schedule_has_problem ? "compulsory Q, K, V, O bytes / HBM bandwidth"
                                              : "the CTA's HBM loads and stores / HBM bandwidth"});
  const auto top = std::max_element(out.units.begin(), out.units.end(),
                                    [](const UnitUse& a, const UnitUse& b) { return a.utilisation < b.utilisation; });
  out.bottleneck = top->name;
  out.bottleneck_utilisation = top->utilisation;

  // Roles, in the schedule's order.
  const auto& tracks = r.timeline.warps;
  for (const auto& role : s.roles()) {
    RoleUse ru;
    ru.role = role;
    std::map<std::string, double> waits;
    for (size_t w = 0; w < r.warps.size(); ++w) {
      const std::string& wrole = tracks.empty() ? std::string() : tracks[w].role;
      if (wrole != role) continue;
      ++ru.warps;
      ru.busy += r.warps[w].busy / T;
      ru.stall += r.warps[w].wait / T;
      for (size_t b = 0; b < r.warps[w].wait_by_barrier.size(); ++b)
        if (r.warps[w].wait_by_barrier[b] > 0) waits[wait_name(r.timeline, b)] += r.warps[w].wait_by_barrier[b];
    }
    if (ru.warps == 0) continue;
    ru.busy /= ru.warps;
    ru.stall /= ru.warps;
    for (const auto& [name, t] : waits)
      if (t / ru.warps / T > ru.top_wait_share) {
        ru.top_wait = name;
        ru.top_wait_share = t / ru.warps / T;
      }
    out.roles.push_back(ru);
  }
  return out;
}

std::string bound_by(const Summary& s) {
  if (s.bottleneck_utilisation >= kSaturated) return s.bottleneck;
  return fmt::format("dependencies ({} {:.0f}%)", s.bottleneck, 100 * s.bottleneck_utilisation);
}

std::string format_summary(const Summary& s) {
  std::string o;
  o += fmt::format("attnsim: {} on {} — {}\n", s.schedule, s.hardware, s.problem);
  for (const auto& k : s.knobs) o += fmt::format("  {}\n", k);
  o += fmt::format("  grid: {}\n\n", s.grid);
  o += fmt::format("predicted time  {:.1f} us   ({:.0f} cycles at {:.3f} GHz)\n", s.time_us, s.cycles, s.clock_ghz);
  o += fmt::format("throughput      {:.0f} TFLOPS\n", s.tflops);
  o += fmt::format("bottleneck      {}{}\n\n", s.bottleneck,
                   s.bottleneck_utilisation < kSaturated
                       ? fmt::format(" (only {:.0f}% busy: the dependency chain between warps bounds this run)",
                                     100 * s.bottleneck_utilisation)
                       : "");
  o += "unit utilisation (critical CTA)\n";
  for (const auto& u : s.units)
    o += fmt::format("  {:<12}{:6.1f}%  {}{}\n", u.name, 100 * u.utilisation,
                     u.name == s.bottleneck ? "<- bound  " : "", u.detail);
  o += "\nroles            warps   busy  stall  waited most on\n";
  for (const auto& r : s.roles)
    o += fmt::format("  {:<14}{:>5} {:5.1f}% {:5.1f}%  {}\n", r.role, r.warps, 100 * r.busy, 100 * r.stall,
                     r.top_wait.empty() ? "-" : fmt::format("{} ({:.1f}%)", r.top_wait, 100 * r.top_wait_share));
  o +=
      fmt::format("\n({} CTA simulation{}, {} events)\n", s.ctas_simulated, s.ctas_simulated == 1 ? "" : "s", s.events);
  return o;
}

nlohmann::ordered_json summary_json(const Summary& s) {
  nlohmann::ordered_json j;
  j["schedule"] = s.schedule;
  j["hardware"] = s.hardware;
  j["problem"] = s.problem;
  j["time_us"] = s.time_us;
  j["tflops"] = s.tflops;
  j["bottleneck"] = s.bottleneck;
  j["cycles"] = s.cycles;
  j["clock_ghz"] = s.clock_ghz;
  j["knobs"] = s.knobs;
  j["grid"] = s.grid;
  for (const auto& u : s.units) j["units"][u.name] = u.utilisation;
  for (const auto& r : s.roles)
    j["roles"][r.role] = {{"warps", r.warps},
                          {"busy", r.busy},
                          {"stall", r.stall},
                          {"top_wait", r.top_wait},
                          {"top_wait_share", r.top_wait_share}};
  j["activity"] = {{"tensor_duty", s.activity.tensor_duty},
                   {"issue_duty", s.activity.issue_duty},
                   {"l2_bytes_per_clk", s.activity.l2_bytes_per_clk},
                   {"hbm_bytes_per_clk", s.activity.hbm_bytes_per_clk}};
  j["ctas_simulated"] = s.ctas_simulated;
  j["events"] = s.events;
  return j;
}

}  // namespace attnsim
