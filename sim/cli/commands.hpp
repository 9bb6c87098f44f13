// The attnsim subcommands. Each registers its options on a CLI11 subcommand and runs
// from main() (sim/cli/main.cpp), which maps exceptions to exit codes.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "driver/simulate.hpp"
#include "model/problem.hpp"

namespace attnsim::cli {

/// Problem flags; each one set overrides the problem file's field.
struct ProblemFlags {
  std::string file;
  std::optional<int> batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim, head_dim_v;
  bool causal = false, non_causal = false;
  std::optional<std::string> dtype;
  std::optional<double> rescale_rate;

  /// Registers the flags on `app`.
  void add(CLI::App* app);
  /// The problem: the file (or the default) with the flags applied; throws InputError.
  Problem build() const;
  /// The problem of document `j` (read from `path`) with the flags applied; throws InputError.
  Problem apply(nlohmann::json j, const std::string& path) const;
};

/// The budget of each prediction; a prediction beyond it stops with a message naming the flag.
struct BudgetFlags {
  uint64_t max_events = PredictOptions{}.max_events;
  long long max_tiles = PredictOptions{}.max_tiles;

  /// Registers --max-events and --max-tiles on `app`.
  void add(CLI::App* app);
  /// `o` with this budget.
  PredictOptions apply(PredictOptions o) const;
};

/// How `run`, `validate` and `bench` time a kernel (and cuDNN, in `bench` and `validate --cudnn`):
/// --warmup untimed launches, --precondition-ms of untimed load, then the median per-launch time
/// of --reps repetitions of --launches back-to-back launches between one CUDA event pair (README,
/// "How a time is measured").
struct TimingFlags {
  int warmup = 5, reps = 20, launches = 10;
  /// Untimed load before the timed repetitions, ms: the power limit acts on the board's power
  /// averaged over about a second (an H100 held its clock until ~0.8 s into our kernel's load), so
  /// 2 s puts every problem, short or long, at the clock it holds under sustained load.
  double precondition_ms = 2000;
  /// Repetitions are added until the timed turns last about this long, ms: the clock the power
  /// controller holds under sustained load swings with a period of about 0.7 s (clock_under_load).
  double min_timed_ms = 2000;

  /// Registers --warmup, --reps (at least `min_reps`) and --launches on `app`; the members'
  /// values are the defaults.
  void add(CLI::App* app, int min_reps = 1);
};

/// A subcommand: registers its options, then runs once parsed. run() returns the exit code.
struct Command {
  virtual ~Command() = default;
  virtual int run() = 0;
};

/// `simulate`: predict and show one schedule on one problem.
std::unique_ptr<Command> add_simulate(CLI::App& app, CLI::App*& sub);
/// `explore`: run a sweep file.
std::unique_ptr<Command> add_explore(CLI::App& app, CLI::App*& sub);
/// `explain`: switch off each design choice of a schedule.
std::unique_ptr<Command> add_explain(CLI::App& app, CLI::App*& sub);
/// `calibrate`: fold microbenchmark results into a hardware config.
std::unique_ptr<Command> add_calibrate(CLI::App& app, CLI::App*& sub);
/// `run`: the real SM90 kernel of a schedule on the GPU at hand, timed and optionally traced.
std::unique_ptr<Command> add_run(CLI::App& app, CLI::App*& sub);
/// `validate`: predicted against measured times over schedules x problems (or a sweep).
std::unique_ptr<Command> add_validate(CLI::App& app, CLI::App*& sub);
/// `bench`: our SM90 kernel beside cuDNN, timed in the same run, over a problem set.
std::unique_ptr<Command> add_bench(CLI::App& app, CLI::App*& sub);
/// `sass-costs`: critical paths of the compute spans in the SASS of the traced SM90 kernels.
std::unique_ptr<Command> add_sass_costs(CLI::App& app, CLI::App*& sub);
/// `fidelity`: the committed validation measurements re-predicted, checked against their baseline.
std::unique_ptr<Command> add_fidelity(CLI::App& app, CLI::App*& sub);
/// `attnsim replay`: a microbenchmark result predicted by the model, beside what the GPU measured.
std::unique_ptr<Command> add_replay(CLI::App& app, CLI::App*& sub);

}  // namespace attnsim::cli
