#include "calibrate/sass_paths.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <istream>
#include <memory>
#include <set>
#include <stdexcept>

#include "model/hardware.hpp"

namespace attnsim::sass {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Operands split at top-level commas (commas inside [] do not split).
std::vector<std::string> split_operands(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.emplace_back(trim(cur));
  return out;
}

/// A register reference found in an operand: file, index (-1 for RZ/URZ/PT/UPT), and the
/// width its ".64"/".128" suffix gives (0 when it has none).
struct RegRef {
  Reg::File file;
  int index;
  int suffix_width;
};

std::vector<RegRef> find_registers(std::string_view s) {
  std::vector<RegRef> out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (ident_char(s[i - 1]) || s[i - 1] == '.')) continue;
    Reg::File file;
    size_t j = i;
    if (s.compare(i, 2, "UR") == 0) {
      file = Reg::UR, j += 2;
    } else if (s.compare(i, 2, "UP") == 0) {
      file = Reg::UP, j += 2;
    } else if (s[i] == 'R') {
      file = Reg::R, j += 1;
    } else if (s[i] == 'P') {
      file = Reg::P, j += 1;
    } else {
      continue;
    }
    const bool pred = file == Reg::P || file == Reg::UP;
    int index;
    if (j < s.size() && s[j] == (pred ? 'T' : 'Z')) {
      index = -1, ++j;
    } else if (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
      index = 0;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) index = index * 10 + (s[j++] - '0');
    } else {
      continue;
    }
    if (j < s.size() && ident_char(s[j])) continue;  // part of a longer word
    int width = 0;
    if (s.compare(j, 3, ".64") == 0 && (j + 3 == s.size() || !ident_char(s[j + 3]))) width = 2;
    if (s.compare(j, 4, ".128") == 0 && (j + 4 == s.size() || !ident_char(s[j + 4]))) width = 4;
    out.push_back({file, index, width});
    i = j - 1;
  }
  return out;
}

/// Registers of operand `op`; `width` applies to a register without a suffix when the operand
/// is a plain register (not an address or descriptor expression).
void add_registers(std::string_view op, int width, std::vector<Reg>& out) {
  const bool plain = op.find('[') == std::string_view::npos;
  for (const RegRef& r : find_registers(op)) {
    if (r.index < 0) continue;  // RZ, URZ, PT, UPT
    const bool vector_file = r.file == Reg::R || r.file == Reg::UR;
    const int w = !vector_file ? 1 : r.suffix_width > 0 ? r.suffix_width : plain ? width : 1;
    for (int k = 0; k < w; ++k) out.push_back({r.file, r.index + k});
  }
}

bool is_predicate_operand(std::string_view op) {
  if (!op.empty() && op.front() == '!') return false;
  const auto regs = find_registers(op);
  return regs.size() == 1 && (regs[0].file == Reg::P || regs[0].file == Reg::UP) &&
         (op == "PT" || op == "UPT" || op.front() == 'P' || op.front() == 'U');
}

bool is_register_operand(std::string_view op) {
  const auto regs = find_registers(op);
  return regs.size() == 1 && (regs[0].file == Reg::R || regs[0].file == Reg::UR) && op.find('[') == op.npos;
}

/// Modifiers of an opcode ("LDS.128" -> {"128"}).
std::vector<std::string> modifiers(const std::string& opcode) {
  std::vector<std::string> out;
  size_t p = opcode.find('.');
  while (p != std::string::npos) {
    const size_t q = opcode.find('.', p + 1);
    out.push_back(opcode.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1));
    p = q;
  }
  return out;
}

int width_of(const std::vector<std::string>& mods) {
  for (const auto& m : mods) {
    if (m == "64") return 2;
    if (m == "128") return 4;
  }
  return 1;
}

const std::set<std::string> kNoDst = {"ST",     "STG",          "STS",    "STL",    "STAS",      "RED",      "BRA",
                                      "BRX",    "JMP",          "JMX",    "CALL",   "RET",       "EXIT",     "BSSY",
                                      "BSYNC",  "BREAK",        "BPT",    "NOP",    "YIELD",     "WARPSYNC", "BAR",
                                      "MEMBAR", "FENCE",        "DEPBAR", "ERRBAR", "CCTL",      "UTMALDG",  "UTMASTG",
                                      "UTMAPF", "UTMACMDFLUSH", "UBLKCP", "UBLKPF", "WARPGROUP", "KILL",     "ARRIVES"};
// Opcodes whose first two operands are destinations when the first is a predicate
// (ISETP P0, PT, ...; LOP3.LUT P0, RZ, ...; SHFL.BFLY PT, R5, ...).
const std::set<std::string> kTwoDst = {"ISETP",  "FSETP", "DSETP", "HSETP2", "UISETP", "PLOP3",
                                       "UPLOP3", "LOP3",  "ULOP3", "SHFL",   "ELECT"};
const std::set<std::string> kFma = {"FFMA",  "FADD",  "FMUL",  "FFMA2", "FADD2",
                                    "FMUL2", "HFMA2", "HADD2", "HMUL2", "FSWZADD"};
const std::set<std::string> kCvt = {"F2FP", "F2F", "I2F", "F2I", "I2FP", "F2IP", "FRND"};
const std::set<std::string> kMemory = {"LD",  "LDG", "LDS",  "LDL",  "LDC",       "ULDC", "LDSM",  "LDGSTS",
                                       "ST",  "STG", "STS",  "STL",  "STAS",      "ATOM", "ATOMS", "ATOMG",
                                       "RED", "S2R", "S2UR", "CS2R", "LDGDEPBAR", "STSM", "LDCU"};
const std::set<std::string> kAsync = {"HGMMA",  "WARPGROUP", "SYNCS",   "BAR",        "MEMBAR",       "FENCE",
                                      "DEPBAR", "UTMALDG",   "UTMASTG", "UTMAPF",     "UTMACMDFLUSH", "UBLKCP",
                                      "UBLKPF", "ERRBAR",    "CCTL",    "USETMAXREG", "ARRIVES"};
const std::set<std::string> kControl = {"BRA",   "BRX", "JMP", "JMX",   "CALL",     "RET",  "EXIT", "BSSY",     "BSYNC",
                                        "BREAK", "BPT", "NOP", "YIELD", "WARPSYNC", "KILL", "BMOV", "NANOSLEEP"};

/// "0x..." as a 64-bit value (an instruction encoding word); nullopt if not hex.
std::optional<uint64_t> parse_hex64(std::string_view s) {
  s = trim(s);
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  uint64_t v = 0;
  for (size_t i = 2; i < s.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    if (std::isdigit(static_cast<unsigned char>(c)))
      v = v * 16 + static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v = v * 16 + static_cast<uint64_t>(c - 'a' + 10);
    else
      return std::nullopt;
  }
  return v;
}

std::optional<uint32_t> parse_hex(std::string_view s) {
  s = trim(s);
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  uint32_t v = 0;
  for (size_t i = 2; i < s.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    if (std::isdigit(static_cast<unsigned char>(c)))
      v = v * 16 + (c - '0');
    else if (c >= 'a' && c <= 'f')
      v = v * 16 + (c - 'a' + 10);
    else
      return std::nullopt;
  }
  return v;
}

}  // namespace

std::string to_string(const Reg& r) {
  static const char* const names[] = {"R", "UR", "P", "UP"};
  return fmt::format("{}{}", names[r.file], r.index);
}

const char* class_name(Class c) {
  switch (c) {
    case Class::fma:
      return "fma";
    case Class::alu:
      return "alu";
    case Class::mufu:
      return "mufu";
    case Class::shfl:
      return "shfl";
    case Class::f2fp:
      return "f2fp";
    case Class::memory:
      return "memory";
    case Class::async:
      return "async";
    case Class::control:
      return "control";
  }
  return "?";
}

const char* skip_name(Skip s) {
  switch (s) {
    case Skip::none:
      return "none";
    case Skip::trace:
      return "trace record";
    case Skip::mask:
      return "mask";
    case Skip::wait_retry:
      return "wait retry";
    case Skip::slow_path:
      return "slow path";
    case Skip::inner_loop:
      return "inner loop";
  }
  return "?";
}

Instr parse_instruction(uint32_t address, std::string_view text_in) {
  std::string_view text = trim(text_in);
  if (!text.empty() && text.back() == ';') text = trim(text.substr(0, text.size() - 1));
  if (text.empty()) throw std::invalid_argument("empty SASS instruction");
  Instr in;
  in.address = address;
  in.text = std::string(text);
  std::string_view rest = text;
  std::optional<std::string> guard;
  if (rest.front() == '@') {
    const size_t sp = rest.find_first_of(" \t");
    if (sp == std::string_view::npos) throw std::invalid_argument(fmt::format("SASS: guard without opcode: {}", text));
    guard = std::string(rest.substr(1, sp - 1));
    rest = trim(rest.substr(sp));
  }
  const size_t sp = rest.find_first_of(" \t");
  in.opcode = std::string(rest.substr(0, sp));
  if (in.opcode.empty() || !std::isupper(static_cast<unsigned char>(in.opcode[0])))
    throw std::invalid_argument(fmt::format("SASS: not an instruction: {}", text));
  in.base = in.opcode.substr(0, in.opcode.find('.'));
  const std::vector<std::string> ops =
      sp == std::string_view::npos ? std::vector<std::string>{} : split_operands(rest.substr(sp));
  const auto mods = modifiers(in.opcode);

  if (guard) {
    std::string g = *guard;
    if (!g.empty() && g[0] == '!') g = g.substr(1);
    if (g != "PT" && g != "UPT") {
      in.predicated = true;
      in.guard = *guard;
      add_registers(g, 1, in.srcs);
    }
  }
  for (const auto& op : ops) {
    if (op.find("SR_CLOCK") != std::string::npos) in.clock_read = true;
    if (op.find("SR_GLOBALTIMER") != std::string::npos) in.reads_globaltimer = true;
  }
  if (in.base == "BRA" && !ops.empty()) in.target = parse_hex(ops.back());
  if (in.base == "BRA" && ops.size() > 1 && !in.predicated) {
    // A condition operand (BRA.U !UP0, target; BRA.DIV UR4, target): a conditional branch.
    in.predicated = true;
    in.guard = ops.front();  // read like every operand below
  }

  // Destinations: how many leading operands, and the width of the data operand.
  size_t ndst = 0;
  int dst_width = 1;
  const bool load = kMemory.count(in.base) && !in.base.starts_with("ST") && in.base != "RED" && in.base != "STSM";
  if (kNoDst.count(in.base) || ops.empty()) {
    ndst = 0;
  } else if (is_predicate_operand(ops[0])) {
    ndst = kTwoDst.count(in.base) && ops.size() > 1 ? 2 : 1;
  } else {
    ndst = 1;
    // Carry-out predicates right after the destination (IADD3 R2, P0, R4, ...; LEA R2, P0, ...).
    while (ndst < ops.size() && is_predicate_operand(ops[ndst]) && ndst + 1 < ops.size()) ++ndst;
    if (in.base == "CS2R" || in.opcode.find(".WIDE") != std::string::npos)
      dst_width = 2;
    else if (in.base == "LDSM" && !mods.empty())
      dst_width = std::max(1, std::atoi(mods.back().c_str()));  // LDSM.16.M88.4: 4 registers
    else if (load)
      dst_width = width_of(mods);
    if (in.base == "HGMMA") {
      // HGMMA.64xNx16.F32...: N/2 fp32 accumulator registers per thread (N/4 for f16 ones).
      int n = 0;
      if (!mods.empty()) {
        const auto& shape = mods[0];
        const size_t x1 = shape.find('x'), x2 = shape.find('x', x1 + 1);
        if (x1 != std::string::npos && x2 != std::string::npos)
          n = std::atoi(shape.substr(x1 + 1, x2 - x1 - 1).c_str());
      }
      const bool f32 = std::find(mods.begin(), mods.end(), "F32") != mods.end();
      dst_width = std::max(1, f32 ? n / 2 : n / 4);
    }
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    if (k < ndst) {
      add_registers(ops[k], k == 0 ? dst_width : 1, in.dsts);
      continue;
    }
    int w = 1;
    const bool last = k + 1 == ops.size();
    if ((in.base.starts_with("ST") && in.base != "STSM") && last) w = width_of(mods);  // store data
    if (in.opcode.find(".WIDE") != std::string::npos && k == 3) w = 2;                 // IMAD.WIDE addend
    if (in.base == "HGMMA" && k == ndst && is_register_operand(ops[k])) w = 4;         // A fragment
    if (in.base == "HGMMA" && k > ndst && is_register_operand(ops[k])) w = dst_width;  // accumulator input
    add_registers(ops[k], w, in.srcs);
  }

  // Class and cost name.
  if (in.clock_read || kControl.count(in.base)) {
    in.cls = Class::control;
  } else if (in.base == "CS2R" && ops.size() > 1 && ops[1] == "SRZ") {
    in.cls = Class::alu;  // zeroes a register pair
  } else if (kAsync.count(in.base)) {
    in.cls = Class::async;
  } else if (kMemory.count(in.base)) {
    in.cls = Class::memory;
  } else if (kFma.count(in.base)) {
    in.cls = Class::fma;
  } else if (in.base == "MUFU") {
    in.cls = Class::mufu;
  } else if (in.base == "SHFL") {
    in.cls = Class::shfl;
  } else if (kCvt.count(in.base)) {
    in.cls = Class::f2fp;
  } else {
    in.cls = Class::alu;
  }
  switch (in.cls) {
    case Class::fma:
      in.cost_name = in.base == "HFMA2" ? "FFMA" : in.base == "HADD2" ? "FADD" : in.base == "HMUL2" ? "FMUL" : in.base;
      break;
    case Class::alu:
      in.cost_name = in.base == "FMNMX" ? "FMNMX" : "ALU";
      break;
    case Class::mufu:
      in.cost_name = mods.empty() ? "MUFU" : "MUFU." + mods[0];
      break;
    case Class::shfl:
      in.cost_name = "SHFL";
      break;
    case Class::f2fp:
      in.cost_name = (in.base == "F2FP" && std::find(mods.begin(), mods.end(), "BF16") != mods.end() &&
                      std::find(mods.begin(), mods.end(), "PACK_AB") != mods.end())
                         ? "F2FP.BF16.PACK"
                         : in.base;
      break;
    default:
      in.cost_name = (in.base == "SYNCS" || in.base == "WARPGROUP" || in.base == "BAR") && !mods.empty()
                         ? in.base + "." + mods[0]
                         : in.base;
  }
  if (in.cls == Class::alu && !in.dsts.empty())
    for (size_t k = ndst; k < ops.size(); ++k)
      if (ops[k] == "-INF" || ops[k] == "-0x800000") in.writes_neg_inf = true;
  return in;
}

std::vector<long long> mangled_template_values(const std::string& s, size_t pos) {
  std::vector<long long> out;
  while (pos + 3 < s.size() && s[pos] == 'L' && (s[pos + 1] == 'i' || s[pos + 1] == 'b')) {
    const size_t e = s.find('E', pos);
    if (e == std::string::npos) break;
    out.push_back(std::stoll(s.substr(pos + 2, e - pos - 2)));
    pos = e + 1;
  }
  return out;
}

void decode_control(uint64_t high_word, Instr& in) {
  const uint32_t c = static_cast<uint32_t>(high_word >> 41);
  in.stall = static_cast<int>(c & 0xF);
  in.yield = (c >> 4) & 1;
  in.write_barrier = static_cast<int>((c >> 5) & 7);
  in.read_barrier = static_cast<int>((c >> 8) & 7);
  in.wait_mask = static_cast<int>((c >> 11) & 0x3F);
}

int static_issue_cycles(const std::vector<const Instr*>& span) {
  int cycles = 0;
  for (const Instr* in : span) {
    if (in->stall < 0) return -1;
    cycles += std::max(1, in->stall);
  }
  return cycles;
}

std::vector<Function> parse_cuobjdump(std::istream& in) {
  std::vector<Function> out;
  std::string line;
  bool high_word_next = false;  // the line after an instruction holds its encoding's high word
  while (std::getline(in, line)) {
    const size_t f = line.find("Function : ");
    if (f != std::string::npos) {
      Function fn;
      fn.mangled = std::string(trim(std::string_view(line).substr(f + 11)));
      int status = 0;
      std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(fn.mangled.c_str(), nullptr, nullptr, &status),
                                               std::free);
      fn.name = status == 0 && d ? d.get() : fn.mangled;
      out.push_back(std::move(fn));
      continue;
    }
    // "        /*0350*/                   CS2R R2, SR_CLOCKLO ;      /* 0x0000... */"
    const std::string_view s = trim(line);
    if (out.empty() || s.size() < 5 || s.compare(0, 2, "/*") != 0) continue;
    const size_t close = s.find("*/");
    if (close == std::string_view::npos) continue;
    const auto addr = parse_hex("0x" + std::string(s.substr(2, close - 2)));
    if (!addr) {  // an encoding line "/* 0x000fe2... */"
      if (high_word_next && !out.back().code.empty()) {
        const auto word = parse_hex64(s.substr(2, close - 2));
        if (word) decode_control(*word, out.back().code.back());
      }
      high_word_next = false;
      continue;
    }
    high_word_next = false;
    std::string_view body = s.substr(close + 2);
    const size_t semi = body.find(';');
    if (semi == std::string_view::npos) continue;
    body = trim(body.substr(0, semi));
    if (body.empty()) continue;
    out.back().code.push_back(parse_instruction(*addr, body));
    high_word_next = true;
  }
  return out;
}

double Latencies::of(Class c) const {
  switch (c) {
    case Class::fma:
      return fma;
    case Class::alu:
      return alu;
    case Class::mufu:
      return mufu;
    case Class::shfl:
      return shfl;
    case Class::f2fp:
      return f2fp;
    default:
      return 0;
  }
}

Latencies Latencies::from(const Hardware& hw) {
  return {hw.fma_latency, hw.alu_latency, hw.mufu_latency, hw.shfl_latency, hw.f2fp_latency};
}

CriticalPath critical_path(const std::vector<const Instr*>& span, const Latencies& lat) {
  // Values a register may hold, oldest first: ready time, producer (span index, -1 for none),
  // and the guard they were written under ("P1#3": predicate, polarity, version; "" when none).
  struct Def {
    double ready = 0;
    int producer = -1;
    std::string guard;
  };
  std::map<Reg, std::vector<Def>> regs;
  std::map<Reg, int> version;  // predicate registers: bumped at every write
  auto guard_key = [&](const Instr& in) -> std::string {
    if (!in.predicated) return "";
    for (const Reg& r : in.srcs)  // the guard is the first source
      if (r.file == Reg::P || r.file == Reg::UP) return fmt::format("{}#{}", in.guard, version[r]);
    return in.guard;
  };
  std::vector<double> ready(span.size(), 0);
  std::vector<int> pred(span.size(), -1);
  for (size_t i = 0; i < span.size(); ++i) {
    const Instr& in = *span[i];
    const std::string g = guard_key(in);
    double start = 0;
    int from = -1;
    for (const Reg& r : in.srcs) {
      const auto it = regs.find(r);
      if (it == regs.end()) continue;
      const auto& defs = it->second;
      size_t first = 0;  // a reader under guard g sees nothing older than the last write under g
      if (!g.empty())
        for (size_t k = 0; k < defs.size(); ++k)
          if (defs[k].guard == g) first = k;
      for (size_t k = first; k < defs.size(); ++k)
        if (defs[k].ready > start) start = defs[k].ready, from = defs[k].producer;
    }
    const bool priced = on_chains(in.cls);
    ready[i] = priced ? start + lat.of(in.cls) : 0;
    pred[i] = priced ? from : -1;
    const Def d{ready[i], priced ? static_cast<int>(i) : -1, g};
    for (const Reg& r : in.dsts) {
      auto& defs = regs[r];
      if (g.empty()) {
        defs.assign(1, d);
      } else {
        std::erase_if(defs, [&](const Def& o) { return o.guard == g; });
        defs.push_back(d);
      }
    }
    for (const Reg& r : in.dsts)
      if (r.file == Reg::P || r.file == Reg::UP) ++version[r];
  }
  CriticalPath cp;
  int last = -1;
  for (size_t i = 0; i < span.size(); ++i)
    if (on_chains(span[i]->cls) && (last < 0 || ready[i] > cp.cycles)) cp.cycles = ready[i], last = static_cast<int>(i);
  for (int i = last; i >= 0; i = pred[i]) cp.path.push_back(span[i]);
  std::reverse(cp.path.begin(), cp.path.end());
  for (const Instr* in : cp.path) {
    ++cp.by_name[in->cost_name];
    ++cp.by_class[in->cls];
  }
  return cp;
}

namespace {
/// The int and bool template arguments of the first Traits<...> in a mangled name ("TraitsILi128ELb1E...";
/// a negative int is mangled with an 'n': "Lin1E" is -1).
std::vector<int> traits_args(const std::string& mangled) {
  std::vector<int> v;
  const size_t t = mangled.find("TraitsI");
  if (t == std::string::npos) return v;
  size_t p = t + 7;
  while (p + 2 < mangled.size() && mangled[p] == 'L' && (mangled[p + 1] == 'i' || mangled[p + 1] == 'b')) {
    const size_t e = mangled.find('E', p);
    if (e == std::string::npos) return {};
    const std::string digits = mangled.substr(p + 2, e - p - 2);
    v.push_back(!digits.empty() && digits[0] == 'n' ? -std::atoi(digits.c_str() + 1) : std::atoi(digits.c_str()));
    p = e + 1;
  }
  return v;
}
}  // namespace

std::optional<Fa3Knobs> fa3_knobs(const std::string& mangled) {
  // _ZN7attnsim4sm9011fa3_forwardINS0_6TraitsILi128ELi128ELi128ELi3ELb1ELb1ELi240ELi24ELb1EEEEEvNS0_6ParamsE
  if (mangled.find("fa3_forward") == std::string::npos) return std::nullopt;
  const std::vector<int> v = traits_args(mangled);
  // kDynamic, kOwnO, kL2SectionMiB, kRescaleMilli, kExp2EmuFreq, kExp2EmuRes, kOInV, kTrimLast: the
  // 10th to 17th (defaulted) arguments.
  if (v.size() < 9 || v.size() > 17) return std::nullopt;
  Fa3Knobs k{v[0], v[1], v[2], v[3], v[4] != 0, v[5] != 0, v[6], v[7], v[8] != 0};
  k.dynamic = v.size() >= 10 && v[9] != 0;
  k.own_o = v.size() >= 11 && v[10] != 0;
  if (v.size() >= 13) k.rescale_milli = v[12];
  if (v.size() >= 15) k.exp2_emu_freq = v[13], k.exp2_emu_res = v[14];
  k.o_in_v = v.size() >= 16 && v[15] != 0;
  k.trim_last = v.size() >= 17 && v[16] != 0;
  k.args = static_cast<int>(v.size());
  return k;
}

const Span* KernelAnalysis::find(const std::string& op) const {
  for (const auto& s : spans)
    if (s.op == op) return &s;
  return nullptr;
}

std::vector<std::string> consumer_loop_spans(bool pingpong, bool overlap, bool both_waits_first) {
  // The label of the code that follows each tr.now() of one KV-loop iteration, in the order
  // Consumer::run (kernels/sm90/consumer.cuh) calls them. "-": between spans (records, releases).
  std::vector<std::string> s;
  auto turn_start = [&] {
    if (pingpong) s.insert(s.end(), {"wait pingpong", "-"});  // now; bar.sync; now
  };
  auto issue_qk = [&] { s.insert(s.end(), {"wait k_full", "mma_qk", "-"}); };  // wait: now, now; wgmma; now
  auto issue_pv = [&] { s.insert(s.end(), {"wait v_full", "mma_pv", "-"}); };
  auto wait_mma = [&] { s.insert(s.end(), {"wait wgmma", "-"}); };
  auto softmax = [&] { s.insert(s.end(), {"softmax_max", "softmax_exp", "-"}); };
  auto rescale_and_pack = [&] { s.insert(s.end(), {"rescale_o", "-"}); };
  if (overlap) {
    // wait_group 1 frees K_j, wait_group 0 frees V_j+1 and its P registers, both before the softmax.
    if (both_waits_first)
      turn_start(), issue_qk(), issue_pv(), wait_mma(), wait_mma(), softmax(), rescale_and_pack();
    else
      turn_start(), issue_qk(), issue_pv(), wait_mma(), softmax(), wait_mma(), rescale_and_pack();
  } else {
    turn_start(), issue_qk(), wait_mma(), softmax(), rescale_and_pack();
    turn_start(), issue_pv(), wait_mma();
  }
  return s;
}

namespace {

/// Walks code[b, e) along the steady-state path (see analyse_kernel); `on` receives the indices
/// of the instructions on it, `off` those skipped with the reason, `record_branch` the on-path
/// branches that skip a trace record (and the record's instruction indices).
struct Walk {
  const std::vector<Instr>& code;
  std::map<uint32_t, size_t> index;
  /// SM100: a skipped region may hold a loop of its own (Skip::inner_loop); otherwise every
  /// backward branch in a skipped region is a wait's retry loop.
  bool inner_loops = false;
  /// Instructions of a BRA.DIV's fallback (the warp-wide operation for a diverged warp, which
  /// ptxas places after the kernel's body): from its target to the unconditional branch back to
  /// the instruction after the BRA.DIV. That branch is backward but closes no loop.
  std::vector<bool> fallback;
  explicit Walk(const std::vector<Instr>& c) : code(c), fallback(c.size(), false) {
    for (size_t i = 0; i < c.size(); ++i) index[c[i].address] = i;
    for (const Instr& in : c) {
      if (!in.target || !in.opcode.starts_with("BRA.DIV")) continue;
      const auto it = index.find(*in.target);
      if (it == index.end()) continue;
      for (size_t k = it->second; k < c.size(); ++k) {
        fallback[k] = true;
        if (c[k].base == "BRA" && !c[k].predicated && !c[k].opcode.starts_with("BRA.DIV")) break;
      }
    }
  }
  /// Whether code[i] closes a loop: a backward branch, not a BRA.DIV fallback's way back.
  bool loop_back(size_t i) const { return code[i].backward() && !fallback[i]; }
  struct Path {
    std::vector<size_t> on;
    std::vector<std::pair<size_t, Skip>> off;
    std::map<size_t, std::vector<size_t>> records;  // on-path branch -> skipped record instructions
  };

  Skip skip_reason(size_t b, size_t e) const {
    bool record = false, retry = false, mask = false, loop = false, wait = false;
    for (size_t k = b; k < e; ++k) {
      const Instr& in = code[k];
      if (in.base == "STG" && in.opcode.find(".128") != std::string::npos) record = true;
      if (in.reads_globaltimer) retry = true;
      if (in.backward()) loop = true;
      if (in.base == "SYNCS" && in.opcode.find("TRYWAIT") != std::string::npos) wait = true;
      if (in.writes_neg_inf) mask = true;
    }
    if (loop && (!inner_loops || wait)) retry = true;
    if (record) return Skip::trace;
    if (retry) return Skip::wait_retry;
    if (mask) return Skip::mask;
    if (loop) return Skip::inner_loop;
    Path sub;
    walk(b, e, sub);
    for (size_t k : sub.on)
      if (code[k].base == "CALL") return Skip::slow_path;
    return Skip::none;
  }

  void walk(size_t b, size_t e, Path& out) const {
    for (size_t i = b; i < e;) {
      const Instr& in = code[i];
      out.on.push_back(i);
      // BRA.DIV jumps to a fallback only when the warp has diverged (ptxas's check before a
      // warp-wide operation such as a shuffle): converged warps, the steady state, go on.
      if (in.target && in.opcode.starts_with("BRA.DIV")) {
        ++i;
        continue;
      }
      if (in.target) {
        const auto it = index.find(*in.target);
        const size_t t = it == index.end() ? code.size() : it->second;
        const bool forward_inside = it != index.end() && t > i && t <= e;
        if (!in.predicated) {
          if (!forward_inside) break;  // leaves the region: the path ends here
          for (size_t k = i + 1; k < t; ++k) out.off.push_back({k, Skip::none});
          i = t;
          continue;
        }
        if (forward_inside) {
          Skip why = skip_reason(i + 1, t);
          // `if (a && b) { loop }`: two guards jump to the same place; the steady state passes
          // the first (a: not the first KV block) and the last one decides (b: the vote).
          for (size_t k = i + 1; why == Skip::inner_loop && k < t; ++k)
            if (code[k].predicated && code[k].target == in.target) why = Skip::none;
          if (why != Skip::none) {
            for (size_t k = i + 1; k < t; ++k) {
              out.off.push_back({k, why});
              if (why == Skip::trace) out.records[i].push_back(k);
            }
            i = t;
            continue;
          }
        }
      }
      ++i;
    }
  }
};

/// Marks the trace recorder's instructions on `path` (positions into path.on): clock reads,
/// record branches, and, to a fixpoint, instructions whose every reader (up to the next
/// unpredicated write of the register, wrapping around when `cyclic`) is instrumentation or a
/// skipped record instruction.
std::vector<bool> instrumentation(const std::vector<Instr>& code, const Walk::Path& path, bool cyclic) {
  const size_t n = path.on.size();
  std::vector<bool> mark(n, false);
  for (size_t p = 0; p < n; ++p) {
    const Instr& in = code[path.on[p]];
    if (in.clock_read || path.records.count(path.on[p])) mark[p] = true;
  }
  const auto reads = [](const Instr& in, const Reg& r) {
    return std::find(in.srcs.begin(), in.srcs.end(), r) != in.srcs.end();
  };
  const auto kills = [](const Instr& in, const Reg& r) {
    return !in.predicated && std::find(in.dsts.begin(), in.dsts.end(), r) != in.dsts.end();
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t p = 0; p < n; ++p) {
      const Instr& in = code[path.on[p]];
      if (mark[p] || in.dsts.empty() || in.is_branch() || in.cls == Class::async) continue;
      bool any = false, only_instr = true;
      for (const Reg& r : in.dsts) {
        const size_t steps = cyclic ? n - 1 : n - 1 - p;
        for (size_t s = 1; s <= steps && only_instr; ++s) {
          const size_t q = (p + s) % n;
          const Instr& other = code[path.on[q]];
          if (reads(other, r)) {
            any = true;
            if (!mark[q]) only_instr = false;
          }
          const auto rec = path.records.find(path.on[q]);
          if (rec != path.records.end())
            for (size_t k : rec->second) any = any || reads(code[k], r);
          if (kills(other, r)) break;
        }
        if (!only_instr) break;
      }
      if (any && only_instr) mark[p] = true, changed = true;
    }
  }
  return mark;
}

/// Spans of a path split at its clock reads. `cyclic`: the interval after the last clock read
/// wraps around to the first (a loop body); otherwise code before the first and after the last
/// clock read is dropped.
std::vector<Span> split_spans(const std::vector<Instr>& code, const Walk::Path& path, const std::vector<bool>& mark,
                              bool cyclic) {
  const size_t n = path.on.size();
  std::vector<size_t> clocks;
  for (size_t p = 0; p < n; ++p)
    if (code[path.on[p]].clock_read) clocks.push_back(p);
  std::map<size_t, std::vector<Skip>> off_after;  // skipped instructions, attributed to the on-path branch before
  {
    std::map<size_t, size_t> pos;
    for (size_t p = 0; p < n; ++p) pos[path.on[p]] = p;
    for (const auto& [k, why] : path.off) {
      auto it = pos.upper_bound(k);  // the last on-path instruction before k: the branch that skipped it
      if (it == pos.begin()) continue;
      --it;
      off_after[it->second].push_back(why);
    }
  }
  std::vector<Span> spans;
  const size_t count = cyclic ? clocks.size() : (clocks.empty() ? 0 : clocks.size() - 1);
  for (size_t c = 0; c < count; ++c) {
    Span s;
    const size_t from = clocks[c], to = c + 1 < clocks.size() ? clocks[c + 1] : clocks[0] + n;
    s.begin = code[path.on[from]].address;
    s.end = code[path.on[to % n]].address;
    for (size_t q = from; q < to; ++q) {
      const size_t p = q % n;
      if (auto it = off_after.find(p); it != off_after.end())
        for (Skip why : it->second)
          if (why != Skip::none) ++s.off_path[why];
      if (q == from) continue;  // the opening clock read
      if (mark[p]) {
        ++s.instrumentation;
        continue;
      }
      const Instr& in = code[path.on[p]];
      s.code.push_back(&in);
      ++s.counts[in.cost_name];
    }
    ++s.instrumentation;  // the opening clock read
    spans.push_back(std::move(s));
  }
  return spans;
}

bool has(const Span& s, const std::string& base, const std::string& opcode_part = "") {
  for (const Instr* in : s.code)
    if (in->base == base && in->opcode.find(opcode_part) != std::string::npos) return true;
  return false;
}

/// HGMMA with both operands from shared memory (QK: "HGMMA... R24, gdesc[UR20], RZ").
bool has_ss_hgmma(const Span& s) {
  for (const Instr* in : s.code)
    if (in->base == "HGMMA") {
      const size_t comma = in->text.find(',');
      if (comma != std::string::npos && trim(std::string_view(in->text).substr(comma + 1)).starts_with("gdesc"))
        return true;
    }
  return false;
}

bool has_rs_hgmma(const Span& s) {
  for (const Instr* in : s.code)
    if (in->base == "HGMMA" && !in->srcs.empty() && in->srcs.front().file == Reg::R) return true;
  return false;
}

/// Whether span `s` holds what a span named `op` must hold.
bool matches(const Span& s, const std::string& op) {
  if (op == "mma_qk") return has_ss_hgmma(s);
  if (op == "mma_pv") return has_rs_hgmma(s);
  if (op == "wait pingpong") return has(s, "BAR", "SYNC");
  if (op == "wait k_full" || op == "wait v_full") return has(s, "SYNCS", "PHASECHK");
  if (op == "wait wgmma") return has(s, "WARPGROUP", "DEPBAR");
  if (op == "softmax_max") return has(s, "FMNMX") && has(s, "SHFL");
  if (op == "softmax_exp") return has(s, "MUFU", "EX2");
  if (op == "rescale_o") return has(s, "F2FP");
  return !has(s, "HGMMA") && !has(s, "MUFU");  // "-": records and releases only
}

}  // namespace

namespace {
/// A KV loop candidate: a backward branch (`back`) to `head` over HGMMA and MUFU.EX2.
struct Loop {
  size_t head, back;
  int clocks;  ///< trace clock reads in it
};

/// The consumer's steady-state KV loop of `fn`: of the innermost loops with HGMMA and MUFU.EX2,
/// the one with the most clock reads (a traced instance's recorded loop), then the fewest -INF
/// writes (the unmasked blocks' loop, where the kernel has a masked one too).
Loop steady_kv_loop(const Function& fn, const Walk& walk) {
  const auto& code = fn.code;
  std::vector<Loop> loops;
  for (size_t i = 0; i < code.size(); ++i) {
    if (!walk.loop_back(i)) continue;
    const auto it = walk.index.find(*code[i].target);
    if (it == walk.index.end()) continue;
    bool hgmma = false, ex2 = false;
    int clocks = 0;
    for (size_t k = it->second; k <= i; ++k) {
      hgmma = hgmma || code[k].base == "HGMMA";
      ex2 = ex2 || code[k].opcode == "MUFU.EX2";
      clocks += code[k].clock_read;
    }
    if (hgmma && ex2) loops.push_back({it->second, i, clocks});
  }
  std::vector<Loop> inner;
  for (const Loop& l : loops) {
    bool contains_other = false;
    for (const Loop& o : loops)
      if (&o != &l && o.head >= l.head && o.back <= l.back && (o.head != l.head || o.back != l.back))
        contains_other = true;
    if (!contains_other) inner.push_back(l);
  }
  if (inner.empty()) throw std::runtime_error(fmt::format("{}: no loop with HGMMA and MUFU.EX2", fn.name));
  // The traced loop with the most clock reads; of several (the kernel's masked and unmasked KV
  // loops), the one with the fewest -INF writes: unmasked blocks are the steady state.
  auto neg_inf = [&](const Loop& l) {
    int n = 0;
    for (size_t k = l.head; k <= l.back; ++k) n += code[k].writes_neg_inf;
    return n;
  };
  return *std::min_element(inner.begin(), inner.end(), [&](const Loop& a, const Loop& b) {
    return a.clocks != b.clocks ? a.clocks > b.clocks : neg_inf(a) < neg_inf(b);
  });
}
}  // namespace

PlainKvLoop plain_kv_loop(const Function& fn) {
  const auto& code = fn.code;
  const Walk walk(code);
  const Loop loop = steady_kv_loop(fn, walk);
  Walk::Path path;
  walk.walk(loop.head, loop.back + 1, path);
  PlainKvLoop out;
  out.begin = code[loop.head].address;
  out.end = code[loop.back].address;
  out.on_path = static_cast<int>(path.on.size());
  std::vector<const Instr*> on;
  for (size_t k : path.on) on.push_back(&code[k]);
  out.issue_cycles = static_issue_cycles(on);
  return out;
}

KernelAnalysis analyse_kernel(const Function& fn, const Latencies& lat) {
  KernelAnalysis ka;
  ka.function = &fn;
  const auto knobs = fa3_knobs(fn.mangled);
  if (!knobs) throw std::runtime_error(fmt::format("{}: not an attnsim::sm90::fa3_forward instance", fn.name));
  if (!knobs->trace)
    throw std::runtime_error(fmt::format("{}: not a traced instance (Trace = 0): no clock reads", fn.name));
  ka.knobs = *knobs;
  const auto& code = fn.code;
  Walk walk(code);
  const Loop loop = steady_kv_loop(fn, walk);
  ka.loop_begin = code[loop.head].address;
  ka.loop_end = code[loop.back].address;
  ka.loop_instructions = static_cast<int>(loop.back - loop.head + 1);

  Walk::Path path;
  walk.walk(loop.head, loop.back + 1, path);
  for (const auto& [k, why] : path.off)
    if (why != Skip::none) ++ka.loop_off_path[why];
  const auto mark = instrumentation(code, path, true);
  for (bool m : mark) ka.loop_instrumentation += m;
  std::vector<Span> spans = split_spans(code, path, mark, true);

  const auto labels = consumer_loop_spans(knobs->pingpong, knobs->overlap);
  if (spans.size() != labels.size())
    throw std::runtime_error(
        fmt::format("{}: the KV loop at {:#x} has {} clock reads; consumer.cuh emits {} per iteration", fn.name,
                    ka.loop_begin, spans.size(), labels.size()));
  const size_t qk_label = std::find(labels.begin(), labels.end(), "mma_qk") - labels.begin();
  std::optional<size_t> qk_span;
  for (size_t i = 0; i < spans.size(); ++i)
    if (has_ss_hgmma(spans[i])) {
      if (qk_span) throw std::runtime_error(fmt::format("{}: two clock intervals with the QK HGMMA", fn.name));
      qk_span = i;
    }
  if (!qk_span) throw std::runtime_error(fmt::format("{}: no clock interval with the QK HGMMA", fn.name));
  const size_t n = spans.size();
  // The current order, else (listings of kernels built before a5f1bb0) the older one; the first
  // label the code does not hold is reported.
  std::string mismatch;
  for (bool both_waits_first : {true, false}) {
    const auto order = consumer_loop_spans(knobs->pingpong, knobs->overlap, both_waits_first);
    size_t l = 0;
    while (l < n && matches(spans[(*qk_span + n - qk_label + l) % n], order[l])) ++l;
    if (l < n) {
      if (mismatch.empty()) {
        const Span& s = spans[(*qk_span + n - qk_label + l) % n];
        mismatch = fmt::format(
            "{}: the clock interval {:#x}-{:#x} should be {} (consumer.cuh order) "
            "but does not hold its instructions",
            fn.name, s.begin, s.end, order[l]);
      }
      continue;
    }
    for (l = 0; l < n; ++l) {
      Span s = std::move(spans[(*qk_span + n - qk_label + l) % n]);
      s.op = order[l];
      s.chain = critical_path(s.code, lat);
      s.issue_cycles = static_issue_cycles(s.code);
      ka.spans.push_back(std::move(s));
    }
    break;
  }
  if (ka.spans.empty()) throw std::runtime_error(mismatch);

  // final_o: the epilogue after the loop.
  Walk::Path after;
  walk.walk(loop.back + 1, code.size(), after);
  const auto after_mark = instrumentation(code, after, false);
  for (Span& s : split_spans(code, after, after_mark, false)) {
    const bool store = has(s, "ST") || has(s, "STS");
    if (store && has(s, "F2FP") && has(s, "MUFU", "RCP")) {
      s.op = "final_o";
      s.chain = critical_path(s.code, lat);
      s.issue_cycles = static_issue_cycles(s.code);
      ka.spans.push_back(std::move(s));
      break;
    }
  }
  if (!ka.find("final_o"))
    throw std::runtime_error(
        fmt::format("{}: no clock interval after the KV loop with MUFU.RCP, F2FP and a store", fn.name));
  return ka;
}

std::vector<PvWaitStep> pv_wait_steps(const Function& fn) {
  const auto& code = fn.code;
  auto depbar = [&](size_t i, const char* pending) {
    const std::string& t = code[i].text;
    return code[i].opcode == "WARPGROUP.DEPBAR.LE" && t.find("gsb0") != std::string::npos && t.size() >= 3 &&
           t.compare(t.size() - 3, 3, pending) == 0;
  };
  std::vector<PvWaitStep> steps;
  for (size_t i = 0; i < code.size(); ++i) {
    if (!depbar(i, "0x1")) continue;
    PvWaitStep s;
    int neg_inf = 0;  // scores set to -INF: the mask's selects (an unmasked step has a few at most)
    size_t k = i + 1;
    for (; k < code.size(); ++k) {
      const Instr& in = code[k];
      if (in.base == "HGMMA" || (in.base == "BAR" && in.opcode.find("SYNC") != std::string::npos) || in.backward())
        break;
      if (depbar(k, "0x0") && s.address == 0) {
        s.address = in.address;
        s.max_before = s.max_total;
        s.ex2_before = s.ex2_total;
      }
      s.max_total += in.base == "FMNMX";
      s.ex2_total += in.opcode.rfind("MUFU.EX2", 0) == 0;
      neg_inf += in.writes_neg_inf;
      s.clocked = s.clocked || in.clock_read;
    }
    s.masked = neg_inf > s.max_total / 4;
    if (s.address != 0) steps.push_back(s);
    i = k > i ? k - 1 : i;
  }
  return steps;
}

namespace {
/// The mean of `before(s) / total(s)` over the unmasked steps (over all where every one is
/// masked); -1 when no step has any of those instructions.
template <class Before, class Total>
double share_before_pv_wait(const std::vector<PvWaitStep>& steps, Before before, Total total) {
  const bool any_unmasked = std::any_of(steps.begin(), steps.end(), [](const PvWaitStep& s) { return !s.masked; });
  double sum = 0;
  int n = 0;
  for (const auto& s : steps)
    if ((!s.masked || !any_unmasked) && total(s) > 0) sum += static_cast<double>(before(s)) / total(s), ++n;
  return n > 0 ? sum / n : -1;
}
}  // namespace

double max_before_pv_wait(const std::vector<PvWaitStep>& steps) {
  return share_before_pv_wait(
      steps, [](const PvWaitStep& s) { return s.max_before; }, [](const PvWaitStep& s) { return s.max_total; });
}

double exp_before_pv_wait(const std::vector<PvWaitStep>& steps) {
  return share_before_pv_wait(
      steps, [](const PvWaitStep& s) { return s.ex2_before; }, [](const PvWaitStep& s) { return s.ex2_total; });
}

TilePaths tile_paths(const Function& fn, const Latencies& lat) {
  const auto& code = fn.code;
  std::map<uint32_t, size_t> index;
  for (size_t i = 0; i < code.size(); ++i) index[code[i].address] = i;
  auto is_wait = [](const Instr& in) { return in.base == "SYNCS" && in.opcode.find("TRYWAIT") != std::string::npos; };
  // A predicated forward branch over a wait's retry loop is taken (the data is there in the steady
  // state); over anything else (a lane's LSE, the exit test around the tile body) it falls through.
  auto over_retry = [&](size_t b, size_t e) {
    bool retry = false;
    for (size_t k = b; k < e; ++k) {
      if (code[k].base == "HGMMA") return false;
      retry = retry || is_wait(code[k]) || code[k].backward();
    }
    return retry;
  };
  constexpr size_t kMaxPath = 4000;
  // Follows the path from `i`; `stop(i)` ends it before instruction i. Returns where it ended, or,
  // with `looped` set, the target of the tile loop's back edge (an unpredicated backward branch,
  // or a predicated one over an HGMMA).
  auto follow = [&](size_t i, std::vector<const Instr*>& out, auto stop, bool& looped) {
    looped = false;
    while (i < code.size()) {
      const Instr& in = code[i];
      if (stop(i)) return i;
      if (out.size() >= kMaxPath)
        throw std::runtime_error(
            fmt::format("{}: a tile path of over {} instructions at {:#x}", fn.name, kMaxPath, in.address));
      if (in.base == "EXIT" || in.base == "BPT")
        throw std::runtime_error(fmt::format("{}: the tile path reaches {} at {:#x}", fn.name, in.opcode, in.address));
      if (!is_wait(in)) out.push_back(&in);
      if (!in.target) {
        ++i;
        continue;
      }
      const auto it = index.find(*in.target);
      if (it == index.end())
        throw std::runtime_error(
            fmt::format("{}: a branch at {:#x} to {:#x}, outside the function", fn.name, in.address, *in.target));
      const size_t t = it->second;
      // A backward branch over a GEMM is the tile loop's (predicated where the loop tests the
      // tile index at its end): taken. Other backward branches (retries, a TMA instruction's
      // uniform loop) fall through, as do predicated forward ones but over a retry loop.
      const bool loop_back =
          t <= i && std::any_of(code.begin() + t, code.begin() + i, [](const Instr& x) { return x.base == "HGMMA"; });
      if (loop_back || (!in.predicated && t <= i)) {
        looped = true;
        return t;
      }
      if (!in.predicated)
        i = t;
      else
        i = t > i && over_retry(i + 1, t) ? t : i + 1;
    }
    throw std::runtime_error(fmt::format("{}: the tile path runs off the end of the function", fn.name));
  };
  size_t store = code.size();
  for (size_t i = 0; i < code.size(); ++i)
    if (code[i].base == "UTMASTG") store = i;
  if (store == code.size()) throw std::runtime_error(fmt::format("{}: no UTMASTG (the TMA store of O)", fn.name));
  TilePaths tc;
  tc.tail_begin = store + 1 < code.size() ? code[store + 1].address : 0;
  bool looped = false;
  const size_t top = follow(
      store + 1, tc.tail, [](size_t) { return false; }, looped);
  if (!looped) throw std::runtime_error(fmt::format("{}: no tile loop branch after the TMA store of O", fn.name));
  tc.loop_top = code[top].address;
  // The head: past the tile's pipeline_q.full wait (its retry loop repeats the try_wait on the
  // same barrier operand), up to its first turn, another barrier's wait, or GEMM.
  std::string q_full;
  const size_t end = follow(
      top, tc.head,
      [&](size_t i) {
        const Instr& in = code[i];
        if (is_wait(in)) {
          const std::string bar = in.text.substr(in.text.find('['));
          if (q_full.empty()) q_full = bar;
          if (bar != q_full) return true;
        }
        return (in.base == "BAR" && in.opcode.find("SYNC") != std::string::npos) || in.base == "HGMMA";
      },
      looped);
  if (looped)
    throw std::runtime_error(fmt::format("{}: the tile loop's head loops back at {:#x}", fn.name, code[end].address));
  tc.head_end = code[end].address;
  tc.tail_issue_cycles = static_issue_cycles(tc.tail);
  tc.head_issue_cycles = static_issue_cycles(tc.head);
  tc.tail_chain = critical_path(tc.tail, lat);
  tc.head_chain = critical_path(tc.head, lat);
  return tc;
}

// ---- SM100 ------------------------------------------------------------------------------------

std::optional<Fa4Knobs> fa4_knobs(const std::string& mangled) {
  // _ZN7attnsim5sm10011fa4_forwardINS0_6TraitsILi128ELi2ELi3ELi1ELi96ELi16ELi4ELi1ELi8000ELb1ELb1ELi192...ELb0EEEEEvNS0_6ParamsE
  if (mangled.find("sm100") == std::string::npos || mangled.find("fa4_forward") == std::string::npos)
    return std::nullopt;
  const std::vector<int> v = traits_args(mangled);
  if (v.size() != 23) return std::nullopt;
  Fa4Knobs k;
  k.head_dim = v[0], k.q_stage = v[1], k.kv_stage = v[2], k.cta_group = v[3], k.split = v[4];
  k.emu_freq = v[5], k.emu_res = v[6], k.emu_start_frg = v[7];
  k.conditional = v[9] != 0, k.correction_wg = v[10] != 0, k.exp_order = v[14] != 0, k.trace = v[22] != 0;
  return k;
}

std::string sm100_cost_name(const Instr& in) {
  static const std::set<std::string> named = {"FFMA",  "FADD",  "FMUL",   "FFMA2", "FADD2",
                                              "FMUL2", "FMNMX", "FMNMX3", "LDTM",  "STTM"};
  const std::string& b = in.base;
  if (b == "LDTM" || b == "STTM") return in.opcode;  // LDTM.x32
  if (named.count(b)) return b;
  if (b == "MUFU" || (b == "F2FP" && in.cost_name == "F2FP.BF16.PACK")) return in.cost_name;
  if (kCvt.count(b)) return "CVT";
  if (b == "LDS" || b == "STS") return in.opcode == b ? b + ".32" : in.opcode;
  if (b == "LDL" || b == "STL") return "spill";
  if (b == "SYNCS" || b == "BAR") return "barrier";
  if (in.cls == Class::alu) return "ALU";
  return "OTHER";
}

const Region* Sm100Analysis::find(const std::string& name) const {
  for (const auto& r : regions)
    if (r.name == name) return &r;
  return nullptr;
}

namespace {

struct LoopRange {
  size_t head = 0, back = 0;
  bool contains(const LoopRange& o) const {
    return head <= o.head && o.back <= back && (head != o.head || back != o.back);
  }
};

/// The loops of `w.code` that satisfy `want`, less those that contain another one that does.
template <class Pred>
std::vector<LoopRange> innermost_loops(const Walk& w, Pred want) {
  std::vector<LoopRange> all, out;
  for (size_t i = 0; i < w.code.size(); ++i) {
    if (!w.loop_back(i)) continue;
    const auto it = w.index.find(*w.code[i].target);
    if (it != w.index.end() && want(LoopRange{it->second, i})) all.push_back({it->second, i});
  }
  for (const auto& l : all)
    if (std::none_of(all.begin(), all.end(), [&](const LoopRange& o) { return l.contains(o); })) out.push_back(l);
  return out;
}

/// Region `name` of `r`: the steady-state path of the loop's body.
Region count_loop(const Walk& w, const LoopRange& r, const std::string& name, Walk::Path* path_out = nullptr) {
  Walk::Path path;
  w.walk(r.head, r.back + 1, path);
  Region g;
  g.name = name;
  g.begin = w.code[r.head].address, g.end = w.code[r.back].address;
  for (size_t k : path.on) {
    g.code.push_back(&w.code[k]);
    ++g.counts[sm100_cost_name(w.code[k])];
  }
  for (const auto& [k, why] : path.off)
    if (why != Skip::none) ++g.off_path[why];
  if (path_out) *path_out = std::move(path);
  return g;
}

}  // namespace

Sm100Analysis analyse_sm100(const Function& fn) {
  Sm100Analysis a;
  a.function = &fn;
  const auto knobs = fa4_knobs(fn.mangled);
  if (!knobs) throw std::runtime_error(fmt::format("{}: not an attnsim::sm100::fa4_forward instance", fn.name));
  a.knobs = *knobs;
  Walk w(fn.code);
  w.inner_loops = true;
  const auto holds = [&](const LoopRange& l, std::initializer_list<const char*> prefixes) {
    for (const char* p : prefixes) {
      bool found = false;
      for (size_t k = l.head; k <= l.back && !found; ++k) found = fn.code[k].opcode.starts_with(p);
      if (!found) return false;
    }
    return true;
  };
  const auto require = [&](const std::vector<LoopRange>& loops, const char* what) {
    if (loops.empty()) throw std::runtime_error(fmt::format("{}: no {}", fn.name, what));
    return loops.front();
  };

  const auto softmax = innermost_loops(w, [&](const LoopRange& l) { return holds(l, {"LDTM.x32", "MUFU.EX2"}); });
  if (softmax.size() > 1)
    throw std::runtime_error(fmt::format("{}: {} innermost loops with LDTM.x32 and MUFU.EX2", fn.name, softmax.size()));
  Walk::Path path;
  Region sm = count_loop(w, require(softmax, "softmax KV loop (LDTM.x32 and MUFU.EX2)"), "softmax", &path);
  Region mask;
  mask.name = "mask";
  for (const auto& [k, why] : path.off)
    if (why == Skip::mask) {
      if (mask.code.empty()) mask.begin = fn.code[k].address;
      mask.end = fn.code[k].address;
      mask.code.push_back(&fn.code[k]);
      ++mask.counts[sm100_cost_name(fn.code[k])];
    }

  const auto rescale = innermost_loops(w, [&](const LoopRange& l) {
    return holds(l, {"LDTM.x16", "STTM.x16", "FMUL"}) && !holds(l, {"MUFU.EX2"});
  });
  const auto final_o = innermost_loops(w, [&](const LoopRange& l) { return holds(l, {"LDTM.x16", "STS.128"}); });
  const LoopRange r0 = require(rescale, "O rescale chunk loop (LDTM.x16, STTM.x16, FMUL)");
  const LoopRange f0 = require(final_o, "final O chunk loop (LDTM.x16, STS.128)");
  a.rescale_copies = static_cast<int>(rescale.size());
  a.final_copies = static_cast<int>(final_o.size());
  Region rs = count_loop(w, r0, "rescale_o"), fo = count_loop(w, f0, "final_o");
  for (const auto& l : rescale) a.copies_agree = a.copies_agree && count_loop(w, l, "").counts == rs.counts;
  for (const auto& l : final_o) a.copies_agree = a.copies_agree && count_loop(w, l, "").counts == fo.counts;

  a.regions.push_back(std::move(sm));
  a.regions.push_back(std::move(mask));
  if (knobs->correction_wg) {
    const auto corr = innermost_loops(w, [&](const LoopRange& l) {
      return holds(l, {"BAR.SYNC"}) &&
             std::any_of(rescale.begin(), rescale.end(), [&](const LoopRange& r) { return l.contains(r); });
    });
    a.regions.push_back(
        count_loop(w, require(corr, "correction KV loop (BAR.SYNC around the O rescale)"), "correction"));
  }
  a.regions.push_back(std::move(rs));
  a.regions.push_back(std::move(fo));
  return a;
}

}  // namespace attnsim::sass
