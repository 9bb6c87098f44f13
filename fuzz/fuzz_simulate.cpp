// Fuzz target: schedule JSON -> parse -> predict one small problem (a few tiles) on each bundled
// GPU it accepts, under an event budget, and summarise it: times finite, every utilisation a
// fraction in [0, 1], and the ASCII timeline rendered.
#include <cmath>

#include "driver/simulate.hpp"
#include "fuzz_common.hpp"
#include "report/ascii_timeline.hpp"
#include "report/summary.hpp"
#include "report/window.hpp"

using namespace attnsim;
using namespace attnsim::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  answer_or_refusal([&] {
    const auto s = schedule_from_text(text_of(data, size), "fuzz.json");
    for (const Hardware& hw : bundled_hardware())
      answer_or_refusal([&] {
        Problem p = small_problem(64);
        p.heads = p.kv_heads = 1;
        PredictOptions o;
        o.max_events = 200'000;
        o.max_tiles = 16;
        const Prediction pr = predict(*s, hw, p, o);
        if (!std::isfinite(pr.time_us) || pr.time_us < 0 || !std::isfinite(pr.tflops)) __builtin_trap();
        const Summary sum = summarize(pr, *s, hw, p);
        for (const UnitUse& u : sum.units)
          if (!(u.utilisation >= 0 && u.utilisation <= 1 + 1e-9)) __builtin_trap();
        for (const RoleUse& r : sum.roles)
          if (!(r.busy >= 0 && r.busy <= 1 + 1e-9 && r.stall >= 0 && r.stall <= 1 + 1e-9)) __builtin_trap();
        const auto [t0, t1] = steady_state_window(pr.critical.timeline);
        AsciiOptions ao;
        ao.t0_cycles = t0;
        ao.t1_cycles = t1;
        ao.width = 60;
        (void)render_ascii(pr.critical.timeline, ao);
      });
  });
  return 0;
}
