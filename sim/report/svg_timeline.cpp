#include "report/svg_timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <stdexcept>

#include "report/ascii_timeline.hpp"

namespace attnsim {
namespace {

/// Fill colour per op id (index = attnsim_op_id).
constexpr const char* kPalette[] = {
    "#d9d9d9" /*wait*/,         "#7f7f7f" /*arrive*/,          "#a6a6a6" /*compute*/,     "#1f77b4" /*load_q*/,
    "#17becf" /*load_k*/,       "#6baed6" /*load_v*/,          "#aec7e8" /*tma_load*/,    "#393b79" /*store_o*/,
    "#d62728" /*mma_qk*/,       "#ff7f0e" /*mma_pv*/,          "#ff9896" /*mma*/,         "#c49c94" /*mma_commit*/,
    "#8c564b" /*issue*/,        "#2ca02c" /*softmax_max*/,     "#98df8a" /*softmax_exp*/, "#bcbd22" /*softmax_sum*/,
    "#9467bd" /*rescale_o*/,    "#c5b0d5" /*correction_vote*/, "#e377c2" /*final_o*/,     "#f7b6d2" /*bar_sync*/,
    "#c7c7c7" /*loop_control*/, "#b0b0b0" /*tile_control*/,
};
static_assert(std::size(kPalette) == ATTNSIM_OP_COUNT, "one colour per op");

const char* color(int op) { return (op >= 0 && op < ATTNSIM_OP_COUNT) ? kPalette[op] : "#555555"; }

/// Text colour readable on `fill` ("#rrggbb"): dark on light fills, white on dark ones.
const char* text_on(const char* fill) {
  unsigned v = static_cast<unsigned>(std::strtoul(fill + 1, nullptr, 16));
  double luma = 0.299 * (v >> 16) + 0.587 * ((v >> 8) & 0xff) + 0.114 * (v & 0xff);
  return luma > 150 ? "#111111" : "#ffffff";
}

std::string xml(std::string_view s) {
  std::string r;
  for (char c : s) {
    switch (c) {
      case '&':
        r += "&amp;";
        break;
      case '<':
        r += "&lt;";
        break;
      case '>':
        r += "&gt;";
        break;
      case '"':
        r += "&quot;";
        break;
      default:
        r += c;
    }
  }
  return r;
}

/// Appends fmt-formatted text to `out`.
template <typename... T>
void put(std::string& out, fmt::format_string<T...> f, T&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<T>(args)...);
}

constexpr double kLeft = 150, kRight = 20, kTop = 48, kRowH = 18, kPitch = 22, kGroupGap = 6;

struct Canvas {
  const Timeline& tl;
  double t0, t1, plot_w;
  std::string& out;
  std::vector<bool>& used_ops;

  double x(double cycles) const { return kLeft + (cycles - t0) / (t1 - t0) * plot_w; }

  void track(const std::string& name, const std::vector<Span>& spans, double y, bool unit) {
    put(out, "<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"end\" class=\"row\">{}</text>\n", kLeft - 6, y + kRowH - 5,
        xml(name));
    for (const Span& s : spans) {
      bool zero = s.end <= s.start;
      if (zero ? (s.start < t0 || s.start > t1) : (s.end <= t0 || s.start >= t1)) continue;
      double a = std::max(s.start, t0), e = std::min(s.end, t1);
      double xa = x(a), w = std::max(0.5, x(e) - xa);
      bool wait = s.kind == SpanKind::Wait;
      const std::string& label = tl.label_of(s);
      if (!wait && s.op >= 0 && s.op < ATTNSIM_OP_COUNT) used_ops[static_cast<size_t>(s.op)] = true;
      std::string tip = wait ? "wait" : attnsim_op_name(s.op);
      if (!label.empty()) tip += " " + label;
      if (s.stage >= 0) tip += fmt::format("\nstage {}", s.stage);
      if (s.block >= 0) tip += fmt::format("\nblock {}", s.block);
      if (s.tile >= 0) tip += fmt::format("\ntile {}", s.tile);
      tip += fmt::format("\nstart {:.4f} us, dur {:.4f} us", tl.to_us(s.start), tl.to_us(s.end - s.start));
      put(out,
          "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
          "fill=\"{}\"><title>{}</title></rect>\n",
          unit   ? "unit"
          : wait ? "wait"
                 : "busy",
          xa, y, w, kRowH, wait ? "url(#hatch)" : color(s.op), xml(tip));
      std::string name = short_op_name(s);
      if (!wait && w >= 6.5 * static_cast<double>(name.size()) + 4)
        put(out, "<text x=\"{:.2f}\" y=\"{:.2f}\" class=\"op\" fill=\"{}\">{}</text>\n", xa + 2, y + kRowH - 5,
            text_on(color(s.op)), xml(name));
    }
  }
};

}  // namespace

std::string render_svg(const Timeline& tl, const SvgOptions& opt) {
  double t0 = opt.t0_cycles, t1 = opt.t1_cycles < 0 ? timeline_end(tl) : opt.t1_cycles;
  if (!(t1 > t0)) throw std::invalid_argument(fmt::format("svg timeline: empty window [{}, {}]", t0, t1));
  if (opt.width_px < 300) throw std::invalid_argument("svg timeline: width_px must be >= 300");
  double width = opt.width_px, plot_w = width - kLeft - kRight;

  // Rows: warps in role order (a gap between role groups), then units.
  struct Row {
    std::string name;
    const std::vector<Span>* spans;
    double y;
    bool unit;
  };
  std::vector<Row> rows;
  double y = kTop;
  const std::string* prev_role = nullptr;
  for (size_t i : warp_row_order(tl)) {
    const WarpTrack& w = tl.warps[i];
    if (prev_role && *prev_role != w.role) y += kGroupGap;
    prev_role = &w.role;
    rows.push_back({fmt::format("{} w{}", w.role, w.warp), &w.spans, y, false});
    y += kPitch;
  }
  if (!rows.empty()) y += kGroupGap;
  for (const auto& u : tl.units) {
    rows.push_back({u.name, &u.spans, y, true});
    y += kPitch;
  }

  std::string out;  // body; the <svg> header goes in front once the height is known
  put(out,
      "<text x=\"10\" y=\"16\" font-weight=\"bold\">attnsim timeline: {:.4f} .. {:.4f} us "
      "({:.0f} .. {:.0f} cycles @ {:.3f} GHz)</text>\n",
      tl.to_us(t0), tl.to_us(t1), t0, t1, tl.clock_ghz);

  // Time axis: ticks at 1/2/5 x 10^k us, about 10 of them, with grid lines over the rows.
  double u0 = tl.to_us(t0), u1 = tl.to_us(t1), raw = (u1 - u0) / 10;
  double mag = std::pow(10.0, std::floor(std::log10(raw))), step = 10 * mag;
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  int prec = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  put(out, "<text x=\"{:.2f}\" y=\"34\" class=\"tick\" text-anchor=\"end\">time (µs)</text>\n", kLeft - 24);
  for (long long k = static_cast<long long>(std::ceil(u0 / step - 1e-9)); k * step <= u1 + 1e-9 * step; ++k) {
    double xs = kLeft + (k * step - u0) / (u1 - u0) * plot_w;
    put(out,
        "<line class=\"grid\" x1=\"{0:.2f}\" y1=\"38\" x2=\"{0:.2f}\" y2=\"{1:.2f}\"/>\n"
        "<text x=\"{0:.2f}\" y=\"34\" class=\"tick\" text-anchor=\"middle\">{2:.{3}f}</text>\n",
        xs, y, k * step, prec);
  }
  put(out, "<line x1=\"{:.2f}\" y1=\"38\" x2=\"{:.2f}\" y2=\"38\" stroke=\"#444\"/>\n", kLeft, kLeft + plot_w);

  std::vector<bool> used_ops(ATTNSIM_OP_COUNT, false);
  Canvas canvas{tl, t0, t1, plot_w, out, used_ops};
  for (const Row& r : rows) canvas.track(r.name, *r.spans, r.y, r.unit);

  // Legend: ops that appear in the window, then the wait swatch; wraps at the right edge.
  double lx = 10, ly = y + 16;
  auto key = [&](const char* fill, const char* name) {
    double w = 14 + 7 * static_cast<double>(std::string_view(name).size()) + 14;
    if (lx > 10 && lx + w > width - kRight) {
      lx = 10;
      ly += 20;
    }
    put(out,
        "<rect class=\"key\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
        "<text x=\"{:.2f}\" y=\"{:.2f}\">{}</text>\n",
        lx, ly, fill, lx + 14, ly + 9, name);
    lx += w;
  };
  for (int op = 0; op < ATTNSIM_OP_COUNT; ++op)
    if (used_ops[static_cast<size_t>(op)]) key(color(op), attnsim_op_name(op));
  key("url(#hatch)", "wait");
  double height = ly + 24;

  std::string head = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1:.0f}\" viewBox=\"0 0 {0} {1:.0f}\" "
      "font-family=\"monospace\" font-size=\"11\">\n"
      "<style>.row{{fill:#222}} .op{{font-size:10px;pointer-events:none}} "
      ".tick{{fill:#444;font-size:10px}} .grid{{stroke:#e4e4e4;stroke-width:1}}</style>\n"
      "<defs><pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
      "patternTransform=\"rotate(45)\"><path d=\"M0,0h6v6h-6z\" fill=\"#f0f0f0\"/>"
      "<path d=\"M0,0v6\" stroke=\"#c0c0c0\" stroke-width=\"2\"/></pattern></defs>\n"
      "<rect class=\"bg\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
      opt.width_px, height);
  return head + out + "</svg>\n";
}

}  // namespace attnsim
