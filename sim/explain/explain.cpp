#include "explain/explain.hpp"

#include <fmt/format.h>

#include <sstream>

#include "model/json_reader.hpp"
#include "report/ascii_timeline.hpp"
#include "report/summary.hpp"
#include "report/window.hpp"

namespace attnsim {

namespace {
PredictOptions options(const PredictOptions& budget) {
  PredictOptions o = budget;
  o.extrapolate = true;  // within 0.01% of exact runs (tests/unit/test_explore.cpp); the samples keep spans
  o.record_spans = true;
  return o;
}

std::string bottleneck_of(const Prediction& p, const Schedule& s, const Hardware& hw, const Problem& problem) {
  return bound_by(summarize(p, s, hw, problem));
}

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // count UTF-8 lead bytes
  return n;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string steady_timeline(const Prediction& p, int width) {
  const Timeline& tl = p.critical.timeline;
  const auto [t0, t1] = steady_state_window(tl);
  AsciiOptions o;
  o.t0_cycles = t0;
  o.t1_cycles = t1;
  o.width = width;
  return render_ascii(tl, o);
}
}  // namespace

Explanation explain(const std::string& schedule_file, const std::vector<std::string>& overrides, const Hardware& hw,
                    const Problem& problem, const PredictOptions& budget) {
  Explanation e;
  const auto base = load_schedule(schedule_file, overrides);
  e.schedule = base->name();
  e.hardware = hw.name;
  e.problem = problem.describe();
  e.base = predict(*base, hw, problem, options(budget));
  e.base_bottleneck = bottleneck_of(e.base, *base, hw, problem);
  for (const auto& v : schedule_variants(schedule_file)) {
    Ablation a;
    a.variant = v;
    try {
      const auto s = load_schedule(schedule_file, overrides, v.name);
      a.prediction = predict(*s, hw, problem, options(budget));
      a.slowdown = a.prediction.time_us / e.base.time_us - 1;
      a.bottleneck = bottleneck_of(a.prediction, *s, hw, problem);
      a.ok = true;
    } catch (const std::exception& err) { a.error = err.what(); }
    e.ablations.push_back(std::move(a));
  }
  return e;
}

std::string side_by_side(const std::string& left, const std::string& right, int left_width, const std::string& sep) {
  const auto l = lines(left), r = lines(right);
  std::string out;
  for (size_t i = 0; i < std::max(l.size(), r.size()); ++i) {
    std::string a = i < l.size() ? l[i] : "";
    const size_t w = display_width(a);
    if (w < static_cast<size_t>(left_width)) a += std::string(left_width - w, ' ');
    out += a + sep + (i < r.size() ? r[i] : "") + "\n";
  }
  return out;
}

std::string format_explanation(const Explanation& e, int width, bool timelines) {
  std::string o = fmt::format("attnsim explain: {} on {} — {}\n", e.schedule, e.hardware, e.problem);
  o += fmt::format("base: {:.1f} us, {:.0f} TFLOPS, bound by {}\n\n", e.base.time_us, e.base.tflops, e.base_bottleneck);
  o += fmt::format("{:<62} {:<24} {:>9} {:>8} {:>9}  {}\n", "question", "switched (variant)", "time us", "TFLOPS",
                   "slowdown", "bottleneck");
  for (const auto& a : e.ablations) {
    const std::string q = a.variant.question.empty() ? a.variant.description : a.variant.question;
    if (!a.ok) {
      o += fmt::format("{:<62} {:<24} rejected: {}\n", q, a.variant.name, a.error);
      continue;
    }
    o += fmt::format("{:<62} {:<24} {:>9.1f} {:>8.0f} {:>+8.1f}%  {} -> {}\n", q, a.variant.name, a.prediction.time_us,
                     a.prediction.tflops, 100 * a.slowdown, e.base_bottleneck, a.bottleneck);
  }
  if (!timelines) return o;
  const std::string before = steady_timeline(e.base, width);
  for (const auto& a : e.ablations) {
    if (!a.ok) continue;
    o += fmt::format("\n{} ({}): {:+.1f}%\n", a.variant.name, a.variant.description, 100 * a.slowdown);
    std::string head_l = fmt::format("before: {}", e.schedule), head_r = fmt::format("after: {}", a.variant.name);
    o += side_by_side(head_l + "\n" + before, head_r + "\n" + steady_timeline(a.prediction, width), width + 9, " ┃ ");
  }
  return o;
}

nlohmann::ordered_json explanation_json(const Explanation& e) {
  nlohmann::ordered_json j;
  j["schedule"] = e.schedule;
  j["hardware"] = e.hardware;
  j["problem"] = e.problem;
  j["base"] = {{"time_us", e.base.time_us}, {"tflops", e.base.tflops}, {"bottleneck", e.base_bottleneck}};
  j["ablations"] = nlohmann::ordered_json::array();
  for (const auto& a : e.ablations) {
    nlohmann::ordered_json r;
    r["variant"] = a.variant.name;
    r["question"] = a.variant.question;
    r["description"] = a.variant.description;
    if (a.ok) {
      r["time_us"] = a.prediction.time_us;
      r["tflops"] = a.prediction.tflops;
      r["slowdown"] = a.slowdown;
      r["bottleneck"] = a.bottleneck;
    } else {
      r["error"] = a.error;
    }
    j["ablations"].push_back(r);
  }
  return j;
}

}  // namespace attnsim
