#include "report/chrome_trace.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>

namespace attnsim {
namespace {

using Buf = fmt::memory_buffer;

/// Appends `s` as a JSON string literal (with quotes); nlohmann::json does the escaping.
void put_str(Buf& b, std::string_view s) { b.append(nlohmann::json(std::string(s)).dump()); }

/// Time in units of 0.1 ns (1e-4 us), so ts + dur of abutting spans meet exactly.
long long ticks(const Timeline& tl, double cycles) { return std::llround(tl.to_us(cycles) * 1e4); }

void put_us(Buf& b, long long t) { fmt::format_to(std::back_inserter(b), "{:.4f}", t / 1e4); }

void put_meta(Buf& b, const char* name, int pid, int tid, std::string_view key, std::string_view str, long long num) {
  fmt::format_to(std::back_inserter(b), "{{\"name\":\"{}\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"{}\":", name,
                 pid, tid, key);
  if (key == "name")
    put_str(b, str);
  else
    fmt::format_to(std::back_inserter(b), "{}", num);
  b.append(std::string_view("}},\n"));
}

struct Writer {
  const Timeline& tl;
  double t0, t1;
  int pid;
  long long offset;  // ticks added to every timestamp
  Buf& b;

  void span(const Span& s, int tid, bool unit) {
    bool zero = s.end <= s.start;
    if (zero ? (s.start < t0 || s.start > t1) : (s.end <= t0 || s.start >= t1)) return;
    long long a = ticks(tl, std::max(s.start, t0)) + offset, e = ticks(tl, std::min(s.end, t1)) + offset;
    const std::string& label = tl.label_of(s);
    bool wait = s.kind == SpanKind::Wait;
    b.append(std::string_view("{\"name\":"));
    if (wait)
      put_str(b, label.empty() ? std::string("wait") : "wait " + label);
    else
      put_str(b, attnsim_op_name(s.op));
    fmt::format_to(std::back_inserter(b), ",\"cat\":\"{}\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":",
                   unit   ? "unit"
                   : wait ? "wait"
                          : "busy",
                   pid, tid);
    put_us(b, a);
    b.append(std::string_view(",\"dur\":"));
    put_us(b, std::max(0LL, e - a));
    b.append(std::string_view(",\"args\":{"));
    const char* sep = "";
    auto arg = [&](const char* k, long long v) {
      if (v < 0) return;
      fmt::format_to(std::back_inserter(b), "{}\"{}\":{}", sep, k, v);
      sep = ",";
    };
    arg("stage", s.stage);
    arg("block", s.block);
    arg("tile", s.tile);
    if (!label.empty()) {
      fmt::format_to(std::back_inserter(b), "{}\"label\":", sep);
      put_str(b, label);
    }
    b.append(std::string_view("}},\n"));
  }
};

}  // namespace

void write_chrome_trace(const Timeline& tl, const TraceOptions& opt, std::ostream& out) {
  write_chrome_trace({{&tl, opt}}, out);
}

void write_chrome_trace(const std::vector<std::pair<const Timeline*, TraceOptions>>& ctas, std::ostream& out) {
  if (ctas.empty()) throw std::invalid_argument("no timeline to write");
  Buf b;
  b.append(std::string_view("{\"traceEvents\":[\n"));
  double first_t0 = 0, first_t1 = 0;
  for (size_t c = 0; c < ctas.size(); ++c) {
    const Timeline& tl = *ctas[c].first;
    const TraceOptions& opt = ctas[c].second;
    double end = tl.end_cycles;
    for (const auto& w : tl.warps)
      for (const auto& s : w.spans) end = std::max(end, s.end);
    for (const auto& u : tl.units)
      for (const auto& s : u.spans) end = std::max(end, s.end);
    double t0 = opt.t0_cycles, t1 = opt.t1_cycles < 0 ? end : opt.t1_cycles;
    if (t1 < t0) throw std::invalid_argument(fmt::format("trace window [{}, {}] is empty", t0, t1));
    if (c == 0) {
      first_t0 = t0;
      first_t1 = t1;
    }
    int unit_tid0 = 1000;
    for (const auto& w : tl.warps) unit_tid0 = std::max(unit_tid0, w.warp + 1);
    put_meta(b, "process_name", opt.pid, 0, "name", opt.process_name, 0);
    put_meta(b, "process_sort_index", opt.pid, 0, "sort_index", "", opt.pid);
    for (const auto& w : tl.warps) {
      put_meta(b, "thread_name", opt.pid, w.warp, "name", fmt::format("{} w{}", w.role, w.warp), 0);
      put_meta(b, "thread_sort_index", opt.pid, w.warp, "sort_index", "", w.warp);
    }
    for (size_t i = 0; i < tl.units.size(); ++i) {
      int tid = unit_tid0 + static_cast<int>(i);
      put_meta(b, "thread_name", opt.pid, tid, "name", tl.units[i].name, 0);
      put_meta(b, "thread_sort_index", opt.pid, tid, "sort_index", "", tid);
    }
    Writer wr{tl, t0, t1, opt.pid, std::llround(opt.offset_us * 1e4), b};
    for (const auto& w : tl.warps)
      for (const auto& s : w.spans) wr.span(s, w.warp, false);
    for (size_t i = 0; i < tl.units.size(); ++i)
      for (const auto& s : tl.units[i].spans) wr.span(s, unit_tid0 + static_cast<int>(i), true);
  }
  b.resize(b.size() - 2);  // drop the last ",\n" (there is always at least one event)
  const Timeline& tl = *ctas[0].first;
  fmt::format_to(std::back_inserter(b),
                 "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{{\"generator\":\"attnsim\","
                 "\"clock_ghz\":{:.4f},\"window_t0_cycles\":{:.2f},\"window_t1_cycles\":{:.2f},"
                 "\"window_t0_us\":{:.4f},\"window_t1_us\":{:.4f}}}}}\n",
                 tl.clock_ghz, first_t0, first_t1, tl.to_us(first_t0), tl.to_us(first_t1));
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

}  // namespace attnsim
