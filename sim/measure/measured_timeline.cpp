#include "measured_timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "common/op_names.h"
#include "report/chrome_trace.hpp"
#include "report/window.hpp"

namespace attnsim {

namespace {

/// The simulator's label text for what a measured WAIT span waited on.
std::string wait_label(const attnsim_trace_record& r) {
  const char* name = attnsim_wait_name(r.wait_on);
  if (attnsim_wait_is_mbarrier(r.wait_on)) return fmt::format("{}[{}] phase {}", name, r.stage, r.phase);
  if (r.wait_on == ATTNSIM_WAIT_PINGPONG || r.wait_on == ATTNSIM_WAIT_EPILOGUE || r.wait_on == ATTNSIM_WAIT_ORDER_BAR ||
      r.wait_on == ATTNSIM_WAIT_O_STAGED)
    return fmt::format("{}[{}]", name, r.stage);
  // The SM100 kernel's softmax -> correction barriers, one per (Q stage, warp): stage = 4 s + w.
  if (r.wait_on == ATTNSIM_WAIT_STATS_BAR) return fmt::format("{}[s{}w{}]", name, r.stage / 4, r.stage % 4);
  return name;
}

/// "wait pipeline_k.full" from "pipeline_k.full[1] phase 0"; named barriers keep their index.
std::string op_key(const Timeline& tl, const Span& s) {
  if (s.kind != SpanKind::Wait) return attnsim_op_name(s.op);
  std::string l = tl.label_of(s);
  if (l.empty()) return "wait";
  if (const auto p = l.find(" phase "); p != std::string::npos) {
    l = l.substr(0, p);
    if (const auto b = l.rfind('['); b != std::string::npos) l = l.substr(0, b);
  }
  if (const auto b = l.find('['); b != std::string::npos) l = l.substr(0, b);
  return "wait " + l;
}

}  // namespace

namespace {

/// Spans warp `w` of a CTA ran but did not keep (0 for warps that do not record).
uint64_t dropped_of(const sm90::MeasuredTrace& rec, size_t slot, int w) {
  if (w >= 32 || !((rec.trace_warps >> w) & 1u)) return 0;
  const uint32_t n = rec.counts.at(slot), kept = std::min(n, rec.cap);
  const uint32_t ran = rec.spans.empty() ? n : std::max(n, rec.spans.at(slot));
  return ran - kept;
}

}  // namespace

uint64_t dropped_spans(const sm90::MeasuredTrace& rec) {
  uint64_t d = 0;
  for (size_t slot = 0; slot < rec.counts.size(); ++slot)
    d += dropped_of(rec, slot, static_cast<int>(slot % std::max(1, rec.warps_per_cta)));
  return d;
}

bool cta_recorded(const sm90::MeasuredTrace& rec, int cta) { return rec.ctas.at(cta).ns1 != 0; }

double median_cta_clock_ghz(const std::vector<MeasuredCta>& ctas) {
  std::vector<double> ghz;
  for (const auto& mc : ctas) ghz.push_back(mc.timeline.clock_ghz);
  if (ghz.empty()) return 0;
  std::nth_element(ghz.begin(), ghz.begin() + ghz.size() / 2, ghz.end());
  return ghz[ghz.size() / 2];
}

MeasuredCta measured_cta(const sm90::MeasuredTrace& rec, int cta, double fallback_ghz) {
  if (cta < 0 || static_cast<size_t>(cta) >= rec.ctas.size())
    throw std::out_of_range(fmt::format("CTA {} not in the trace ({} CTAs)", cta, rec.ctas.size()));
  const attnsim_cta_clock& c = rec.ctas[cta];
  unsigned long long first_ns = c.ns0;
  for (const auto& x : rec.ctas) first_ns = std::min(first_ns, x.ns0);
  MeasuredCta m;
  m.index = cta;
  m.sm = static_cast<int>(c.smid);
  m.tiles = static_cast<int>(c.tiles);
  m.start_ns = static_cast<double>(c.ns0 - first_ns);
  Timeline& tl = m.timeline;
  if (!cta_recorded(rec, cta)) {
    m.end_ns = m.start_ns;
    tl.clock_ghz = fallback_ghz;
    return m;
  }
  m.end_ns = static_cast<double>(c.ns1 - first_ns);
  const double ns = static_cast<double>(c.ns1 - c.ns0), cycles = static_cast<double>(c.clk1 - c.clk0);
  tl.clock_ghz = ns >= 20000 && cycles > 0 ? cycles / ns : fallback_ghz;
  tl.end_cycles = cycles;
  std::map<std::string, int> label_ids;
  for (int w = 0; w < rec.warps_per_cta; ++w) {
    const size_t slot = static_cast<size_t>(cta) * rec.warps_per_cta + w;
    const uint32_t n = rec.counts.at(slot);
    const uint32_t kept = std::min(n, rec.cap);
    m.dropped += dropped_of(rec, slot, w);
    if (kept == 0) continue;
    WarpTrack t;
    t.warp = w;
    t.smsp = w % 4;
    t.role = kernel_warp_role(rec.knobs, w);  // as the simulator names them (the family's structure.h)
    for (uint32_t i = 0; i < kept; ++i) {
      const attnsim_trace_record& r = rec.records.at(slot * rec.cap + i);
      Span s;
      s.start = r.t0;
      s.end = std::max(r.t0, r.t1);
      s.op = r.op;
      s.kind = r.op == ATTNSIM_OP_WAIT ? SpanKind::Wait : SpanKind::Busy;
      s.stage = r.stage == 0xff ? -1 : static_cast<int8_t>(r.stage);
      s.block = r.block;
      s.tile = r.tile;
      if (s.kind == SpanKind::Wait) {
        const std::string label = wait_label(r);
        auto [it, fresh] = label_ids.emplace(label, static_cast<int>(tl.labels.size()));
        if (fresh) tl.labels.push_back(label);
        s.label = it->second;
      }
      t.spans.push_back(s);
    }
    tl.warps.push_back(std::move(t));
  }
  return m;
}

namespace {
/// Whether a span of `tl` belongs to a tile of [first_tile, end_tile).
bool tiles_present(const Timeline& tl, int first_tile, int end_tile) {
  for (const auto& w : tl.warps)
    for (const auto& s : w.spans)
      if (s.tile >= first_tile && s.tile < end_tile) return true;
  return false;
}

/// Over the warps `keep` accepts, the spans of tiles [first_tile, end_tile) (and those of no tile);
/// of every tile in a timeline that holds none of that range.
template <class Keep>
std::map<std::string, OpStat> means(const std::vector<const Timeline*>& tls, Keep keep, int first_tile = 0,
                                    int end_tile = std::numeric_limits<int>::max()) {
  std::map<std::string, OpStat> out;
  for (const Timeline* tl : tls) {
    const bool all_tiles =
        (first_tile <= 0 && end_tile == std::numeric_limits<int>::max()) || !tiles_present(*tl, first_tile, end_tile);
    for (const auto& w : tl->warps) {
      if (!keep(w.warp)) continue;
      for (const auto& s : w.spans) {
        if (s.kind == SpanKind::Busy && s.op == ATTNSIM_OP_ARRIVE) continue;
        if (!all_tiles && s.tile >= 0 && (s.tile < first_tile || s.tile >= end_tile)) continue;
        OpStat& o = out[op_key(*tl, s)];
        o.total_ns += (s.end - s.start) / tl->clock_ghz;
        ++o.count;
      }
    }
  }
  for (auto& [k, o] : out) o.mean_ns = o.count ? o.total_ns / o.count : 0;
  return out;
}
}  // namespace

std::map<std::string, OpStat> op_means(const std::vector<const Timeline*>& tls) {
  return means(tls, [](int) { return true; });
}

std::map<std::string, OpStat> op_means(const Timeline& tl) { return op_means(std::vector<const Timeline*>{&tl}); }

std::map<std::string, OpStat> op_means_first_warps(const Timeline& tl, int first_tile, int end_tile) {
  return means(
      {&tl}, [](int warp) { return warp % 4 == 0; }, first_tile, end_tile);
}

std::map<std::string, OpStat> op_means_of_warps(const Timeline& tl, uint32_t warp_mask, int first_tile, int end_tile) {
  return means(
      {&tl}, [warp_mask](int warp) { return warp >= 0 && warp < 32 && ((warp_mask >> warp) & 1u); }, first_tile,
      end_tile);
}

std::vector<int> default_trace_ctas(const sm90::MeasuredTrace& rec, int count) {
  std::vector<int> out;
  if (rec.ctas.empty() || count <= 0) return out;
  int last = 0;
  for (size_t i = 1; i < rec.ctas.size(); ++i)
    if (rec.ctas[i].ns1 > rec.ctas[last].ns1) last = static_cast<int>(i);
  out.push_back(last);
  // Then the lowest-numbered other CTAs that recorded (with a trace sample, which ones depends on
  // the grid: kernels/sm90/trace_sampling.h).
  const int n = static_cast<int>(rec.ctas.size());
  for (int i = 0; static_cast<int>(out.size()) < count && i < n; ++i)
    if (i != last && cta_recorded(rec, i)) out.push_back(i);
  return out;
}

void write_measured_trace(const sm90::MeasuredTrace& rec, const std::vector<int>& ctas, bool full, double fallback_ghz,
                          const std::string& title, std::ostream& out) {
  std::vector<MeasuredCta> m;
  m.reserve(ctas.size());
  for (int c : ctas) m.push_back(measured_cta(rec, c, fallback_ghz));
  std::vector<std::pair<const Timeline*, TraceOptions>> parts;
  for (const auto& x : m) {
    TraceOptions o;
    o.t1_cycles = full ? -1 : first_tile_end(x.timeline);
    o.pid = x.index + 1;
    o.offset_us = x.start_ns / 1000.0;
    o.process_name = fmt::format("{} CTA {} (SM {}, {} tiles)", title, x.index, x.sm, x.tiles);
    parts.emplace_back(&x.timeline, o);
  }
  write_chrome_trace(parts, out);
}

}  // namespace attnsim
