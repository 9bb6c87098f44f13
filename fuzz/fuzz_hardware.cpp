// Fuzz target: hardware config JSON -> parse -> check, then every bundled schedule resolved and
// checked on it for a small problem, and its grid planned.
#include "fuzz_common.hpp"

using namespace attnsim;
using namespace attnsim::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  answer_or_refusal([&] {
    const Hardware hw = hardware_from_json(parse_json_text(text_of(data, size), "fuzz_hw.json"), "fuzz_hw.json");
    for (const std::string& text : bundled_schedules())
      answer_or_refusal([&] {
        const auto s = schedule_from_text(text, "schedule.json");
        const Problem p = small_problem(64);
        s->check(hw, p);
        (void)s->knob_lines(hw, p);
        (void)s->plan_grid(hw, p, 1 << 12);
      });
  });
  return 0;
}
