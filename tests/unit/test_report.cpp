// Tests of the timeline reports: Chrome trace JSON, ASCII rows, SVG.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "report/ascii_timeline.hpp"
#include "report/chrome_trace.hpp"
#include "report/svg_timeline.hpp"

using namespace attnsim;

namespace {

Span busy(double a, double b, int op, int stage = -1, int block = -1) {
  Span s;
  s.start = a;
  s.end = b;
  s.op = static_cast<int16_t>(op);
  s.stage = static_cast<int8_t>(stage);
  s.block = block;
  s.tile = 0;
  return s;
}

Span wait(double a, double b, int label = -1) {
  Span s;
  s.start = a;
  s.end = b;
  s.op = ATTNSIM_OP_WAIT;
  s.kind = SpanKind::Wait;
  s.label = label;
  return s;
}

/// 1 GHz, so 1 cycle = 0.001 us. Warps listed out of row order on purpose.
/// Window [0,100] holds 11 spans; 2 lie beyond 100 (softmax_max, third tensor-core MMA).
Timeline sample() {
  Timeline tl;
  tl.clock_ghz = 1.0;
  tl.end_cycles = 200;
  tl.labels = {"pipeline_kv.empty[0] phase 1", "pipeline_kv.full[0] phase 0", "pipeline_s.full[0] phase 0"};
  tl.warps.push_back(
      {2,
       0,
       "softmax0",
       {busy(0, 50, ATTNSIM_OP_SOFTMAX_EXP, 0), wait(50, 100, 2), busy(150, 160, ATTNSIM_OP_SOFTMAX_MAX, 0)}});
  tl.warps.push_back(
      {1,
       1,
       "mma",
       {wait(0, 20, 1), busy(20, 22, ATTNSIM_OP_ISSUE, 0), busy(60, 62, ATTNSIM_OP_ISSUE, 0), wait(62, 100)}});
  tl.warps.push_back(
      {0,
       2,
       "load",
       {busy(0, 20, ATTNSIM_OP_LOAD_K, -1, 3), wait(20, 50, 0), busy(50, 130, ATTNSIM_OP_LOAD_V, -1, 3)}});
  tl.warps.push_back({3, 3, "empty", {}});
  tl.units.push_back({"tensor_core",
                      {busy(20, 60, ATTNSIM_OP_MMA_QK, 0, 3), busy(60, 90, ATTNSIM_OP_MMA_PV, 0, 3),
                       busy(150, 200, ATTNSIM_OP_MMA_QK, 1, 2)}});
  return tl;
}

std::string trace(const Timeline& tl, TraceOptions opt = {}) {
  std::ostringstream os;
  write_chrome_trace(tl, opt, os);
  return os.str();
}

std::vector<nlohmann::json> events(const nlohmann::json& j, const std::string& ph) {
  std::vector<nlohmann::json> r;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == ph) r.push_back(e);
  return r;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> r;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);) r.push_back(l);
  return r;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

/// True when every <tag> is closed in order (self-closing tags allowed).
bool tags_balanced(const std::string& s) {
  std::vector<std::string> stack;
  for (size_t p = s.find('<'); p != std::string::npos; p = s.find('<', p + 1)) {
    size_t q = s.find('>', p);
    if (q == std::string::npos) return false;
    std::string tag = s.substr(p + 1, q - p - 1);
    if (tag.empty()) return false;
    if (tag.back() == '/') continue;
    std::string name = tag.substr(tag[0] == '/' ? 1 : 0);
    name = name.substr(0, name.find_first_of(" \n"));
    if (tag[0] != '/') {
      stack.push_back(name);
    } else {
      if (stack.empty() || stack.back() != name) return false;
      stack.pop_back();
    }
  }
  return stack.empty();
}

}  // namespace

TEST_CASE("chrome trace: valid JSON with metadata per warp and unit", "[report]") {
  auto j = nlohmann::json::parse(trace(sample()));
  CHECK(j.at("displayTimeUnit") == "ns");
  CHECK(j.at("otherData").at("clock_ghz").get<double>() == Approx(1.0));
  std::map<int, std::string> names;
  for (const auto& e : events(j, "M"))
    if (e.at("name") == "thread_name") names[e.at("tid").get<int>()] = e.at("args").at("name");
  CHECK(names[0] == "load w0");
  CHECK(names[1] == "mma w1");
  CHECK(names[2] == "softmax0 w2");
  CHECK(names[3] == "empty w3");
  CHECK(names[1000] == "tensor_core");
  CHECK(events(j, "X").size() == 13);  // no window: every span
}

TEST_CASE("chrome trace: window drops and clips spans - times in us", "[report]") {
  TraceOptions opt;
  opt.t0_cycles = 10;
  opt.t1_cycles = 100;
  auto j = nlohmann::json::parse(trace(sample(), opt));
  auto xs = events(j, "X");
  REQUIRE(xs.size() == 11);
  auto find = [&](int tid, const std::string& name) {
    for (const auto& e : xs)
      if (e.at("tid") == tid && e.at("name") == name) return e;
    FAIL("no event " << name << " on tid " << tid);
    return nlohmann::json();
  };
  auto k = find(0, "load_k");  // [0,20) clipped to [10,20)
  CHECK(k.at("ts").get<double>() == Approx(0.010));
  CHECK(k.at("dur").get<double>() == Approx(0.010));
  CHECK(k.at("cat") == "busy");
  CHECK(k.at("args").at("block") == 3);
  CHECK(!k.at("args").contains("stage"));
  auto v = find(0, "load_v");  // [50,130) clipped to [50,100)
  CHECK(v.at("ts").get<double>() == Approx(0.050));
  CHECK(v.at("dur").get<double>() == Approx(0.050));
  auto w = find(0, "wait pipeline_kv.empty[0] phase 1");
  CHECK(w.at("cat") == "wait");
  CHECK(w.at("ts").get<double>() == Approx(0.020));
  CHECK(w.at("dur").get<double>() == Approx(0.030));
  CHECK(find(1, "wait").at("dur").get<double>() == Approx(0.038));
  auto qk = find(1000, "mma_qk");
  CHECK(qk.at("cat") == "unit");
  CHECK(qk.at("args").at("stage") == 0);
  for (const auto& e : xs) CHECK(e.at("name") != "softmax_max");  // [150,160) is outside
}

TEST_CASE("chrome trace: byte-identical output - bad window throws", "[report]") {
  TraceOptions opt;
  opt.t0_cycles = 5;
  opt.t1_cycles = 95;
  CHECK(trace(sample(), opt) == trace(sample(), opt));
  opt.t1_cycles = 1;
  CHECK_THROWS_AS(trace(sample(), opt), std::invalid_argument);
}

TEST_CASE("chrome trace: 100k spans", "[report]") {
  Timeline tl;
  tl.warps.push_back({0, 0, "load", {}});
  for (int i = 0; i < 100000; ++i) tl.warps[0].spans.push_back(busy(i * 10.0, i * 10.0 + 7, ATTNSIM_OP_LOAD_K, 0, i));
  auto j = nlohmann::json::parse(trace(tl));
  CHECK(events(j, "X").size() == 100000);
}

TEST_CASE("ascii: cells - rows in role order - units last", "[report]") {
  AsciiOptions opt;
  opt.t0_cycles = 0;
  opt.t1_cycles = 100;
  opt.width = 10;
  opt.labels = false;
  auto l = lines(render_ascii(sample(), opt));
  REQUIRE(l.size() == 6);
  CHECK(l[0].rfind("TIME (us) 0.000", 0) == 0);
  CHECK(l[1] == "LOAD  │██░░░█████│");
  CHECK(l[2] == "MMA   │░░    ░░░░│");
  CHECK(l[3] == "SOFT0 │█████░░░░░│");
  CHECK(l[4] == "TC    │  ███████ │");
  CHECK(l[5] == "█ busy  ░ waiting");
}

TEST_CASE("ascii: first warp per role - other roles - labels", "[report]") {
  Timeline tl = sample();
  tl.warps.push_back({5, 1, "softmax0", {wait(0, 100)}});  // not the first softmax0 warp
  tl.warps.push_back({4, 0, "scheduler", {busy(0, 100, ATTNSIM_OP_COMPUTE)}});
  AsciiOptions opt;
  opt.t0_cycles = 0;
  opt.t1_cycles = 100;
  opt.width = 100;
  auto out = render_ascii(tl, opt);
  CHECK(out == render_ascii(tl, opt));
  auto l = lines(out);
  std::vector<std::string> rows;
  for (const auto& s : l)
    if (s.find("│") != std::string::npos) rows.push_back(s.substr(0, 6));
  CHECK(rows == std::vector<std::string>{"LOAD  ", "MMA   ", "SOFT0 ", "SCHEDU", "TC    "});
  auto soft = std::find_if(l.begin(), l.end(), [](const std::string& s) { return s.rfind("SOFT0", 0) == 0; });
  REQUIRE(soft + 1 != l.end());
  CHECK(soft->find("█") == 9);  // after "SOFT0 │" (│ is 3 bytes): warp 2 (busy first), not warp 5 (waiting)
  CHECK(soft[1] == "       exp");
  auto mma = std::find_if(l.begin(), l.end(), [](const std::string& s) { return s.rfind("MMA", 0) == 0; });
  CHECK(mma[1].find("QK0") == 7 + 20);  // labels of the MMA row come from the tensor core
  CHECK(mma[1].find("PV0") == 7 + 60);
  auto load = std::find_if(l.begin(), l.end(), [](const std::string& s) { return s.rfind("LOAD", 0) == 0; });
  CHECK(load[1] == "       K3" + std::string(48, ' ') + "V3");
}

TEST_CASE("short op names", "[report]") {
  CHECK(short_op_name(busy(0, 1, ATTNSIM_OP_MMA_QK, 1)) == "QK1");
  CHECK(short_op_name(busy(0, 1, ATTNSIM_OP_LOAD_V, -1, 7)) == "V7");
  CHECK(short_op_name(busy(0, 1, ATTNSIM_OP_RESCALE_O, 0)) == "O0");
  CHECK(short_op_name(busy(0, 1, ATTNSIM_OP_STORE_O)) == "st");
  CHECK(short_op_name(busy(0, 1, ATTNSIM_OP_BAR_SYNC)) == "bar_sync");
}

TEST_CASE("svg: one rect per span in the window - well formed - deterministic", "[report]") {
  SvgOptions opt;
  opt.t0_cycles = 0;
  opt.t1_cycles = 100;
  auto svg = render_svg(sample(), opt);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(count(svg, "<rect class=\"busy\"") + count(svg, "<rect class=\"wait\"") + count(svg, "<rect class=\"unit\"") ==
        11);
  CHECK(count(svg, "<rect class=\"wait\"") == 4);
  CHECK(count(svg, "<title>") == 11);
  CHECK(tags_balanced(svg));
  CHECK(svg.find("softmax0 w2") != std::string::npos);
  CHECK(svg.find("empty w3") == std::string::npos);
  CHECK(svg.find("wait pipeline_kv.empty[0] phase 1") != std::string::npos);
  CHECK(svg.find("softmax_max") == std::string::npos);  // only outside the window
  CHECK(svg == render_svg(sample(), opt));
}
