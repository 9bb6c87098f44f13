// Hand-written SASS for the issue-model tests (test_sass_issue.cpp, test_sm_issue.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "calibrate/sass_paths.hpp"

namespace attnsim::test {

/// An instruction with its scheduling control set: stall count, write / read scoreboard (7: none),
/// scoreboards waited on (bit b: scoreboard b).
inline sass::Instr instr(uint32_t address, const char* text, int stall, int wb = 7, int rb = 7, int wait = 0) {
  sass::Instr in = sass::parse_instruction(address, text);
  in.stall = stall;
  in.write_barrier = wb;
  in.read_barrier = rb;
  in.wait_mask = wait;
  return in;
}

/// Pointers to `v`'s instructions, in order (what issue_time and issue_on_sm take).
inline std::vector<const sass::Instr*> ptrs(const std::vector<sass::Instr>& v) {
  std::vector<const sass::Instr*> out;
  for (const auto& in : v) out.push_back(&in);
  return out;
}

}  // namespace attnsim::test
