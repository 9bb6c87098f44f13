#include "calibrate/sass_issue.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <list>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "model/hardware.hpp"

namespace attnsim::sass {

namespace {

/// Operands of an instruction's text, guard and opcode removed, split at top-level commas.
std::vector<std::string_view> operand_texts(std::string_view t) {
  if (!t.empty() && t.front() == '@') t.remove_prefix(std::min(t.size(), t.find(' ') + 1));
  const size_t sp = t.find(' ');
  std::vector<std::string_view> out;
  if (sp == std::string_view::npos) return out;
  t.remove_prefix(sp + 1);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= t.size(); ++i) {
    if (i < t.size() && t[i] == '[') ++depth;
    if (i < t.size() && t[i] == ']') --depth;
    if (i == t.size() || (t[i] == ',' && depth == 0)) {
      std::string_view o = t.substr(start, i - start);
      while (!o.empty() && o.front() == ' ') o.remove_prefix(1);
      while (!o.empty() && o.back() == ' ') o.remove_suffix(1);
      out.push_back(o);
      start = i + 1;
    }
  }
  return out;
}

/// A general-purpose register source operand: its index and whether it carries .reuse.
struct RegOperand {
  int index = -1;
  bool reuse = false;
};

/// "R52", "R52.reuse", "-R52", "|R52|", "-|R52|.reuse", "R52.H1": index 52; RZ, URn, addresses,
/// predicates and immediates: index -1.
RegOperand register_operand(std::string_view o) {
  while (!o.empty() && (o.front() == '-' || o.front() == '|' || o.front() == '!' || o.front() == '~'))
    o.remove_prefix(1);
  RegOperand r;
  if (o.size() < 2 || o[0] != 'R' || !std::isdigit(static_cast<unsigned char>(o[1]))) return r;
  size_t i = 1;
  int v = 0;
  while (i < o.size() && std::isdigit(static_cast<unsigned char>(o[i]))) v = v * 10 + (o[i++] - '0');
  r.index = v;
  r.reuse = o.find(".reuse") != std::string_view::npos;
  return r;
}

/// Register sources of a register-to-register instruction by operand slot (slot 0 is the first
/// source). Only instructions that read the register file through the operand collectors of
/// the math pipes are checked for bank conflicts: classes fma, alu and f2fp.
std::vector<RegOperand> bank_sources(const Instr& in) {
  std::vector<RegOperand> out;
  if (in.cls != Class::fma && in.cls != Class::alu && in.cls != Class::f2fp) return out;
  const auto ops = operand_texts(in.text);
  for (size_t i = 1; i < ops.size(); ++i) out.push_back(register_operand(ops[i]));
  return out;
}

}  // namespace

int pipe_of(const Instr& in) {
  if (in.cls == Class::fma || in.base == "IMAD") return kFmaPipe;  // IMAD runs on the FMA-heavy pipe (ncu pipe names)
  if (in.cls == Class::mufu) return kMufuPipe;
  if (in.cls == Class::alu || in.cls == Class::f2fp) return kAluPipe;
  return kNoPipe;
}

double result_latency(const Instr& in, const IssueModel& m) {
  if (in.base == "LDS" || in.base == "LDSM") return m.lds_latency;
  if (in.base == "LDG") return m.ldg_latency;
  if (in.base == "MUFU") return m.mufu_latency;
  if (in.base == "SHFL") return m.shfl_latency;
  return m.other_latency;
}

IssueModel IssueModel::from(const Hardware& hw) {
  IssueModel m;
  m.lds_latency = hw.lds_latency;
  m.ldg_latency = hw.ldg_latency;
  m.mufu_latency = hw.mufu_latency;
  m.shfl_latency = hw.shfl_latency;
  m.other_latency = hw.lds_latency;
  m.read_latency = hw.alu_latency;
  m.fma_interval = 32.0 / hw.fma_lanes_per_clk_smsp;
  m.alu_interval = 32.0 / hw.alu_lanes_per_clk_smsp;
  m.mufu_interval = 32.0 / hw.mufu_lanes_per_clk_smsp;
  m.register_banks = hw.register_banks;
  m.icache_bytes = hw.icache_bytes;
  m.ifetch_cycles_per_instruction = hw.ifetch_cycles_per_instruction;
  m.ifetch_runahead_bytes = hw.ifetch_runahead_bytes;
  return m;
}

int bank_conflict_cycles(const Instr& in, const Instr* previous, int banks) {
  const auto srcs = bank_sources(in);
  if (srcs.empty() || banks < 2) return 0;
  const auto prev = previous ? bank_sources(*previous) : std::vector<RegOperand>{};
  std::vector<int> read;  // distinct registers read from the file
  for (size_t slot = 0; slot < srcs.size(); ++slot) {
    const RegOperand& s = srcs[slot];
    if (s.index < 0) continue;
    if (slot < prev.size() && prev[slot].reuse && prev[slot].index == s.index) continue;  // operand reuse cache
    if (std::find(read.begin(), read.end(), s.index) == read.end()) read.push_back(s.index);
  }
  std::vector<int> per_bank(static_cast<size_t>(banks), 0);
  for (int r : read) ++per_bank[static_cast<size_t>(r % banks)];
  const int busiest = *std::max_element(per_bank.begin(), per_bank.end());
  return std::max(0, busiest - 1);
}

std::vector<IssueTime> issue_segments(const std::vector<std::vector<const Instr*>>& segments, const IssueModel& m,
                                      bool cold_icache) {
  std::vector<IssueTime> out;
  // Instruction cache: 128-byte lines, least recently used first out; fetch runs ahead of issue.
  constexpr uint32_t kLine = 128, kInstrBytes = 16;
  const size_t lines = static_cast<size_t>(std::max(0, m.icache_bytes)) / kLine;
  std::list<uint32_t> lru;  // most recent first
  std::unordered_map<uint32_t, std::list<uint32_t>::iterator> cached;
  double fetched = 0;  // time by which the fetch unit has brought in everything so far
  // Issue times of the last `ahead` instructions: fetch for instruction i starts no earlier than
  // the issue of instruction i - ahead (the run-ahead window).
  const size_t ahead = static_cast<size_t>(std::max(0.0, m.ifetch_runahead_bytes) / kInstrBytes);
  std::vector<double> recent(ahead + 1, 0.0);
  size_t issued = 0;
  std::array<double, 8> scoreboard{};  // release time per scoreboard (index 7: none)
  std::array<double, kNumPipes> pipe_free{};
  const std::array<double, kNumPipes> interval = {m.fma_interval, m.alu_interval, m.mufu_interval};
  double t = 0;  // earliest issue of the next instruction by the static schedule
  const Instr* previous = nullptr;
  for (const auto& seq : segments) {
    IssueTime r;
    const double start = t;
    for (const Instr* in : seq) {
      if (in->stall < 0)
        throw std::invalid_argument(
            fmt::format("no scheduling control for /*{:04x}*/ {}: the listing needs encodings", in->address, in->text));
      double issue = t;
      if (cold_icache && m.ifetch_cycles_per_instruction > 0) {
        const uint32_t line = in->address / kLine;
        auto it = cached.find(line);
        if (it != cached.end()) {
          lru.splice(lru.begin(), lru, it->second);
        } else {
          const double window = issued >= ahead ? recent[(issued - ahead) % recent.size()] : 0.0;
          fetched = std::max(fetched, window) + m.ifetch_cycles_per_instruction * (kLine / kInstrBytes);
          ++r.fetched_lines;
          lru.push_front(line);
          cached[line] = lru.begin();
          if (cached.size() > lines) {
            cached.erase(lru.back());
            lru.pop_back();
          }
        }
        if (fetched > issue) {
          r.fetch_cycles += fetched - issue;
          issue = fetched;
        }
      }
      const double after_fetch = issue;
      for (int b = 0; b < 6; ++b)
        if ((in->wait_mask >> b) & 1) issue = std::max(issue, scoreboard[static_cast<size_t>(b)]);
      r.scoreboard_cycles += issue - after_fetch;
      const int p = pipe_of(*in);
      if (p != kNoPipe) {
        const double ready = std::max(issue, pipe_free[p]);
        r.pipe_cycles += ready - issue;
        issue = ready;
        pipe_free[p] = issue + interval[p];
      }
      const int bank = bank_conflict_cycles(*in, previous, m.register_banks);
      issue += bank;
      r.bank_cycles += bank;
      if (in->write_barrier < 6) {
        double& s = scoreboard[static_cast<size_t>(in->write_barrier)];
        s = std::max(s, issue + result_latency(*in, m));
      }
      if (in->read_barrier < 6) {
        double& s = scoreboard[static_cast<size_t>(in->read_barrier)];
        s = std::max(s, issue + m.read_latency);
      }
      r.stall_cycles += std::max(1, in->stall);
      t = issue + std::max(1, in->stall);
      recent[issued++ % recent.size()] = issue;
      ++r.instructions;
      if (in->base == "LDS" || in->base == "LDSM") ++r.shared_loads;
      if (p == kFmaPipe) ++r.ffma;
      if (p == kAluPipe) ++r.alu;
      if (p == kMufuPipe) ++r.mufu;
      previous = in;
    }
    r.cycles = t - start;
    out.push_back(std::move(r));
  }
  return out;
}

IssueTime issue_time(const std::vector<const Instr*>& seq, const IssueModel& m, bool cold_icache) {
  return issue_segments({seq}, m, cold_icache).front();
}

std::vector<const Instr*> unroll_path(const Function& fn, uint32_t begin, uint32_t end,
                                      const std::map<uint32_t, int>& taken, size_t max_instructions,
                                      const std::map<uint32_t, bool>& forward) {
  std::map<uint32_t, size_t> index;
  for (size_t i = 0; i < fn.code.size(); ++i) index[fn.code[i].address] = i;
  auto at = [&](uint32_t a) {
    const auto it = index.find(a);
    if (it == index.end()) throw std::runtime_error(fmt::format("{}: no instruction at {:#x}", fn.name, a));
    return it->second;
  };
  std::vector<const Instr*> out;
  std::map<uint32_t, int> left;  // backward branches of loops being run: passes still to take
  size_t i = at(begin);
  while (i < fn.code.size() && fn.code[i].address != end) {
    const Instr& in = fn.code[i];
    if (out.size() >= max_instructions)
      throw std::runtime_error(fmt::format("{}: the path from {:#x} to {:#x} exceeds {} instructions", fn.name, begin,
                                           end, max_instructions));
    out.push_back(&in);
    if (in.base == "EXIT" || in.base == "RET")
      throw std::runtime_error(
          fmt::format("{}: the path from {:#x} leaves at {:#x} before {:#x}", fn.name, begin, in.address, end));
    if (!in.is_branch()) {
      ++i;
      continue;
    }
    if (in.backward()) {
      if (!in.predicated) throw std::runtime_error(fmt::format("{}: unconditional loop at {:#x}", fn.name, in.address));
      auto it = left.find(in.address);
      if (it == left.end()) {
        const auto t = taken.find(in.address);
        it = left.emplace(in.address, t == taken.end() ? 0 : t->second).first;
      }
      if (it->second > 0) {
        --it->second;
        i = at(*in.target);
      } else {
        left.erase(it);  // the loop is left; a later entry starts counting again
        ++i;
      }
    } else if (!in.predicated) {
      i = at(*in.target);
    } else if (const auto f = forward.find(in.address); f != forward.end()) {
      i = f->second ? at(*in.target) : i + 1;
    } else {
      throw std::runtime_error(fmt::format("{}: conditional forward branch at {:#x} ({}) inside {:#x}..{:#x}", fn.name,
                                           in.address, in.text, begin, end));
    }
  }
  if (i >= fn.code.size())
    throw std::runtime_error(fmt::format("{}: the path from {:#x} never reaches {:#x}", fn.name, begin, end));
  return out;
}

}  // namespace attnsim::sass
