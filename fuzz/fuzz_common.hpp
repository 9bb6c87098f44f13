// Shared by the fuzz targets (libFuzzer, built with ASan and UBSan; see fuzz/README.md). An input
// may be refused with InputError (bad input, budgets), DeadlockError or ProgramError: those are
// answers. Any other exception escapes LLVMFuzzerTestOneInput and aborts, and a sanitizer report,
// a crash, a leak or a hang is a finding too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/engine.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"
#include "model/problem.hpp"
#include "lower/schedule.hpp"

namespace attnsim::fuzz {

/// The bundled hardware configs (configs/hw of the source tree), read once.
inline const std::vector<Hardware>& bundled_hardware() {
  static const std::vector<Hardware> hw = {load_hardware(project_root() + "/configs/hw/b200.json"),
                                           load_hardware(project_root() + "/configs/hw/h100_sxm.json"),
                                           load_hardware(project_root() + "/configs/hw/h200.json")};
  return hw;
}

/// The bundled schedules, as text (schedules/*.json of the source tree), read once.
inline const std::vector<std::string>& bundled_schedules() {
  static const std::vector<std::string> s = [] {
    std::vector<std::string> out;
    for (const char* name : {"fa4_sm100", "fa3_sm90", "fa2_sm80", "blackflash"})
      out.push_back(read_text_file(project_root() + "/schedules/" + name + ".json"));
    return out;
  }();
  return s;
}

/// A problem small enough that its grid is one tile per head: b1 h2 (GQA 2:1 off), seqlen 128/256.
inline Problem small_problem(int head_dim = 64) {
  Problem p;
  p.batch = 1;
  p.heads = p.kv_heads = 2;
  p.seqlen_q = 128;
  p.seqlen_k = 256;
  p.head_dim = p.head_dim_v = head_dim;
  p.rescale_rate = 0.25;  // skip the Eigen score model: the fuzzers exercise the inputs
  return p;
}

/// Runs `f`, treating the refusals attnsim reports to its user as answers.
template <class F>
void answer_or_refusal(F&& f) {
  try {
    f();
  } catch (const InputError&) {
  } catch (const DeadlockError&) {
  } catch (const ProgramError&) {
  }
}

/// The input as text.
inline std::string text_of(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

}  // namespace attnsim::fuzz
