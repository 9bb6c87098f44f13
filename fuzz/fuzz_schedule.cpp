// Fuzz target: schedule JSON of any family -> parse -> each declared variant -> resolve and check
// against every bundled hardware config, plan the grid of a small problem, list knobs and resources.
#include "driver/simulate.hpp"
#include "fuzz_common.hpp"

using namespace attnsim;
using namespace attnsim::fuzz;

namespace {
void check_everywhere(const Schedule& s) {
  for (const Hardware& hw : bundled_hardware())
    for (int hd : {64, 128})
      answer_or_refusal([&] {
        const Problem p = small_problem(hd);
        s.check(hw, p);
        (void)s.knob_lines(hw, p);
        (void)s.resources(hw, p);
        (void)s.plan_grid(hw, p, 1 << 12);
      });
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = text_of(data, size);
  answer_or_refusal([&] {
    check_everywhere(*schedule_from_text(text, "fuzz.json"));
    const auto variants = schedule_variants_from_text(text, "fuzz.json");
    for (size_t i = 0; i < variants.size() && i < 3; ++i)
      answer_or_refusal([&] { check_everywhere(*schedule_from_text(text, "fuzz.json", {}, variants[i].name)); });
  });
  return 0;
}
