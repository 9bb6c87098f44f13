// Fuzz target: sweep JSON -> parse (its schedule and hardware read from the source tree) -> the
// grid's candidates decoded, admitted and turned into documents; the first two admitted candidates
// evaluated under a small budget (rejections are answers, as in `explore`).
#include "explore/sweep.hpp"
#include "fuzz_common.hpp"

using namespace attnsim;
using namespace attnsim::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  answer_or_refusal([&] {
    SweepSpec spec = sweep_from_json(parse_json_text(text_of(data, size), "fuzz_sweep.json"), "fuzz_sweep.json");
    spec.max_events = 200'000;
    spec.max_tiles = 1 << 10;
    const SweepEvaluator ev(std::move(spec));
    if (ev.grid_size() > 256) return;  // explore refuses large grids above --max-candidates
    int evaluated = 0;
    for (size_t i = 0; i < ev.grid_size(); ++i) {
      if (ev.encode(ev.decode(i)) != i) __builtin_trap();
      if (!ev.admitted(i)) continue;
      (void)ev.document(i);
      if (evaluated++ < 2) {
        const Evaluation e = ev.evaluate(i);
        if (e.feasible && !(e.objective > 0)) __builtin_trap();  // a feasible candidate has a positive TFLOPS figure
      }
    }
  });
  return 0;
}
