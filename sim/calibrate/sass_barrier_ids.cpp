#include "calibrate/sass_barrier_ids.hpp"

#include <algorithm>

namespace attnsim::sass {

BarrierIds barrier_ids(const Function& fn) {
  BarrierIds out;
  const auto& code = fn.code;
  for (size_t i = 0; i < code.size(); ++i) {
    const Instr& in = code[i];
    if (in.base == "LDL") ++out.ldl;
    if (in.base != "BAR" || (in.opcode.rfind("BAR.SYNC", 0) != 0 && in.opcode.rfind("BAR.ARV", 0) != 0)) continue;
    // The id is the first operand; a vector register read is it (the guard is a predicate).
    const auto id = std::find_if(in.srcs.begin(), in.srcs.end(), [](const Reg& r) { return r.file == Reg::R; });
    if (id == in.srcs.end()) continue;
    ++out.register_ids;
    for (size_t j = i; j-- > 0;) {
      const auto& d = code[j].dsts;
      if (std::find(d.begin(), d.end(), *id) == d.end()) continue;
      if (code[j].base == "LDL") ++out.reloaded;
      break;
    }
  }
  return out;
}

}  // namespace attnsim::sass
