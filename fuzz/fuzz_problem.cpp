// Fuzz target: a problem file and problem flags. The input is the problem JSON, then a line "--",
// then command-line words (one per line) parsed by the same CLI11 options `simulate` has; the
// problem is then checked and its grid planned by every bundled schedule on every bundled GPU
// (the tile budget keeps huge problems cheap).
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "driver/simulate.hpp"
#include "fuzz_common.hpp"

using namespace attnsim;
using namespace attnsim::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = text_of(data, size);
  const size_t sep = input.find("\n--\n");
  const std::string json = input.substr(0, sep);
  std::vector<std::string> words;
  if (sep != std::string::npos) {
    std::string rest = input.substr(sep + 4), word;
    for (char c : rest) {
      if (c == '\n') {
        words.push_back(word);
        word.clear();
      } else {
        word += c;
      }
    }
    if (!word.empty()) words.push_back(word);
  }
  cli::ProblemFlags flags;
  CLI::App app{"fuzz"};
  flags.add(&app);
  std::vector<std::string> args(words.rbegin(), words.rend());  // CLI11 takes them reversed
  try {
    app.parse(args);
  } catch (const CLI::ParseError&) {
    return 0;  // the CLI answers these with its usage and exit 2
  }
  answer_or_refusal([&] {
    const Problem p = flags.apply(parse_json_text(json, "fuzz_problem.json"), "fuzz_problem.json");
    (void)p.describe();
    (void)p.flops();
    for (const std::string& text : bundled_schedules())
      for (const Hardware& hw : bundled_hardware())
        answer_or_refusal([&] {
          const auto s = schedule_from_text(text, "schedule.json");
          s->check(hw, p);
          (void)s->plan_grid(hw, p, 1 << 12);
        });
  });
  return 0;
}
