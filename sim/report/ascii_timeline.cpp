#include "report/ascii_timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

namespace attnsim {

double timeline_end(const Timeline& tl) {
  double end = tl.end_cycles;
  for (const auto& w : tl.warps)
    for (const auto& s : w.spans) end = std::max(end, s.end);
  for (const auto& u : tl.units)
    for (const auto& s : u.spans) end = std::max(end, s.end);
  return end;
}

static const char* const kRoles[] = {"load", "mma", "softmax0", "softmax1", "correction", "epilogue"};
static const char* const kRowNames[] = {"LOAD", "MMA", "SOFT0", "SOFT1", "CORR", "EPI"};

int role_rank(const std::string& role) {
  for (int i = 0; i < 6; ++i)
    if (role == kRoles[i]) return i;
  return 6;
}

std::vector<size_t> warp_row_order(const Timeline& tl) {
  std::map<std::string, int> first_warp;  // lowest warp index per role
  std::vector<size_t> idx;
  for (size_t i = 0; i < tl.warps.size(); ++i) {
    const auto& w = tl.warps[i];
    if (w.role == "empty") continue;
    auto [it, fresh] = first_warp.emplace(w.role, w.warp);
    if (!fresh) it->second = std::min(it->second, w.warp);
    idx.push_back(i);
  }
  auto key = [&](size_t i) {
    const auto& w = tl.warps[i];
    return std::make_tuple(role_rank(w.role), first_warp[w.role], w.role, w.warp, i);
  };
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return idx;
}

std::string short_op_name(const Span& s) {
  auto num = [](const char* p, int v) { return v >= 0 ? fmt::format("{}{}", p, v) : std::string(p); };
  switch (s.op) {
    case ATTNSIM_OP_MMA_QK:
      return num("QK", s.stage);
    case ATTNSIM_OP_MMA_PV:
      return num("PV", s.stage);
    case ATTNSIM_OP_LOAD_K:
      return num("K", s.block);
    case ATTNSIM_OP_LOAD_V:
      return num("V", s.block);
    case ATTNSIM_OP_LOAD_Q:
      return num("Q", s.stage);
    case ATTNSIM_OP_SOFTMAX_EXP:
      return "exp";
    case ATTNSIM_OP_SOFTMAX_MAX:
      return "max";
    case ATTNSIM_OP_RESCALE_O:
      return num("O", s.stage);
    case ATTNSIM_OP_FINAL_O:
      return "fin";
    case ATTNSIM_OP_STORE_O:
      return "st";
    default:
      return attnsim_op_name(s.op);
  }
}

namespace {

/// Row label of a role outside the FA4 names: uppercased, at most 6 characters, keeping a
/// trailing index ("consumer1" -> "CONSU1") so numbered warpgroups stay apart.
std::string upper6(const std::string& s) {
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[s.size() - 1 - digits]))) ++digits;
  std::string r = s.size() <= 6
                      ? s
                      : s.substr(0, 6 - std::min<size_t>(digits, 3)) + s.substr(s.size() - std::min<size_t>(digits, 3));
  for (char& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}

/// The time grid of the window: cell c covers [at(c), at(c + 1)).
struct Grid {
  double t0, t1;
  int width;
  double at(int c) const { return t0 + (t1 - t0) * c / width; }
  double cell() const { return (t1 - t0) / width; }
  int cell_of(double t) const { return std::clamp(static_cast<int>(std::floor((t - t0) / cell())), 0, width - 1); }
};

/// One row of cells (UTF-8 glyphs) for `spans`; `waits` = false for unit tracks.
std::string cells(const Grid& g, const std::vector<Span>& spans, bool waits) {
  std::vector<double> busy(g.width, 0.0), wait(g.width, 0.0);
  for (const Span& s : spans) {
    double a = std::max(s.start, g.t0), e = std::min(s.end, g.t1);
    if (e <= a) continue;
    auto& acc = (s.kind == SpanKind::Wait) ? wait : busy;
    for (int c = g.cell_of(a); c < g.width && g.at(c) < e; ++c)
      acc[c] += std::min(e, g.at(c + 1)) - std::max(a, g.at(c));
  }
  std::string row;
  for (int c = 0; c < g.width; ++c) {
    double half = 0.5 * (g.at(c + 1) - g.at(c)) * (1 - 1e-9);
    double b = busy[c], w = waits ? wait[c] : 0.0;
    if (b >= half || (b + w >= half && b >= w))
      row += "█";
    else if (w >= half || b + w >= half)
      row += "░";
    else
      row += ' ';
  }
  return row;
}

/// Label line: short op names at the start cell of busy spans at least len+1 cells wide.
std::string label_line(const Grid& g, const std::vector<Span>& spans) {
  std::string line(static_cast<size_t>(g.width), ' ');
  int free_from = 0;  // first cell not taken by a previous label (+1 gap)
  for (const Span& s : spans) {
    if (s.kind != SpanKind::Busy) continue;
    double a = std::max(s.start, g.t0), e = std::min(s.end, g.t1);
    if (e <= a) continue;
    std::string name = short_op_name(s);
    int c = g.cell_of(a);
    if ((e - a) / g.cell() < static_cast<double>(name.size() + 1) || c < free_from ||
        c + static_cast<int>(name.size()) > g.width)
      continue;
    line.replace(static_cast<size_t>(c), name.size(), name);
    free_from = c + static_cast<int>(name.size()) + 1;
  }
  line.erase(line.find_last_not_of(' ') + 1);
  return line.empty() ? line : "       " + line;  // under the 6-char label and '│'
}

std::string row(const std::string& label, const std::string& body) { return fmt::format("{:<6}│{}│\n", label, body); }

}  // namespace

std::string render_ascii(const Timeline& tl, const AsciiOptions& opt) {
  Grid g{opt.t0_cycles, opt.t1_cycles < 0 ? timeline_end(tl) : opt.t1_cycles, opt.width};
  if (g.width < 1) throw std::invalid_argument("ascii timeline: width must be >= 1");
  if (!(g.t1 > g.t0)) throw std::invalid_argument(fmt::format("ascii timeline: empty window [{}, {}]", g.t0, g.t1));

  double span_us = tl.to_us(g.t1 - g.t0);
  int prec = std::clamp(3 - static_cast<int>(std::floor(std::log10(span_us))), 1, 7);
  std::string t0s = fmt::format("{:.{}f}", tl.to_us(g.t0), prec);
  std::string t1s = fmt::format("{:.{}f}", tl.to_us(g.t1), prec);
  // "TIME (us) " + t0 + " " + dashes + "▶ " + t1, ending near the closing '│'.
  int dashes = std::max(3, 6 + 1 + g.width + 1 - 10 - static_cast<int>(t0s.size()) - 3 - static_cast<int>(t1s.size()));
  std::string out = "TIME (us) " + t0s + " ";
  for (int i = 0; i < dashes; ++i) out += "─";
  out += "▶ " + t1s + "\n";

  const UnitTrack* tc = nullptr;
  for (const auto& u : tl.units)
    if (u.name == "tensor_core") tc = &u;

  std::map<std::string, bool> done;
  for (size_t i : warp_row_order(tl)) {
    const WarpTrack& w = tl.warps[i];
    if (done[w.role]) continue;  // first (lowest) warp of each role only
    done[w.role] = true;
    int r = role_rank(w.role);
    std::string label = r < 6 ? kRowNames[r] : w.role.empty() ? fmt::format("W{}", w.warp) : upper6(w.role);
    out += row(label, cells(g, w.spans, true));
    if (opt.labels) {
      std::string l = label_line(g, (w.role == "mma" && tc) ? tc->spans : w.spans);
      if (!l.empty()) out += l + "\n";
    }
  }
  for (const auto& u : tl.units) {
    std::string label = u.name == "tensor_core" ? "TC" : u.name == "tma" ? "TMA" : upper6(u.name);
    out += row(label, cells(g, u.spans, false));
  }
  out += "█ busy  ░ waiting\n";
  return out;
}

}  // namespace attnsim
