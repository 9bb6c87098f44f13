// `attnsim explore SWEEP`: evaluates a sweep file's candidates on every core, with a
// progress bar (plain lines when not on a terminal); Ctrl-C stops after the candidates in
// flight and keeps what finished. Writes results.csv, results.json and best_schedule.json.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/commands.hpp"
#include "explore/sweep.hpp"
#include "explore/sweep_report.hpp"
#include "model/json_reader.hpp"

namespace attnsim::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) { g_stop.store(true); }

/// Progress on stderr: a redrawn bar on a terminal, a line every 10% otherwise.
class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0), start_(clock::now()) {}
  void operator()(size_t done, size_t total) {
    if (quiet_ || total == 0) return;
    const double secs = std::chrono::duration<double>(clock::now() - start_).count();
    const double rate = secs > 0 ? done / secs : 0;
    const double eta = rate > 0 ? (total - done) / rate : 0;
    if (tty_) {
      const int width = 40, fill = static_cast<int>(width * done / total);
      std::cerr << fmt::format("\r[{}{}] {}/{} {:.1f}/s ETA {:.0f}s ", std::string(fill, '#'),
                               std::string(width - fill, '.'), done, total, rate, eta)
                << std::flush;
      if (done == total) std::cerr << "\n";
    } else if (done * 10 / total != last_decile_ || done == total) {
      last_decile_ = done * 10 / total;
      std::cerr << fmt::format("{}/{} candidates, {:.1f}/s, ETA {:.0f}s\n", done, total, rate, eta);
    }
  }

 private:
  using clock = std::chrono::steady_clock;
  bool quiet_, tty_;
  clock::time_point start_;
  size_t last_decile_ = 0;
};

struct Explore : Command {
  std::string sweep, out_dir, strategy;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  size_t top = 10;
  size_t max_candidates = 1'000'000;
  bool quiet = false;
  BudgetFlags budget;

  int run() override {
    SweepSpec spec = load_sweep(sweep);
    if (!strategy.empty()) spec.search.strategy = strategy;
    spec.max_events = budget.max_events;
    spec.max_tiles = budget.max_tiles;
    const SweepEvaluator ev(std::move(spec));
    if (ev.grid_size() > max_candidates)
      throw InputError(sweep, "/axes",
                       fmt::format("expected a grid of at most --max-candidates {} candidates; the axes make {}: use "
                                   "fewer values or split the sweep, or raise --max-candidates to run it",
                                   max_candidates,
                                   ev.grid_size() == SIZE_MAX ? std::string("more than 2^64")
                                                              : std::to_string(ev.grid_size())));
    const std::vector<size_t> admitted = grid_candidates(ev);
    std::signal(SIGINT, on_sigint);
    Progress progress(quiet);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Evaluation> evals = ev.spec().search.strategy == "local_search"
                                        ? local_search(ev, threads, &g_stop, std::ref(progress))
                                        : evaluate_all(ev, admitted, threads, &g_stop, std::ref(progress));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::signal(SIGINT, SIG_DFL);
    const bool interrupted = g_stop.load();

    const std::string dir = out_dir.empty() ? "explore_out/" + ev.spec().name : out_dir;
    std::filesystem::create_directories(dir);
    {
      std::ofstream csv(dir + "/results.csv");
      write_sweep_csv(ev, evals, csv);
      std::ofstream js(dir + "/results.json");
      js << sweep_json(ev, evals, admitted.size(), interrupted).dump(2) << "\n";
    }
    std::cout << format_sweep_table(ev, evals, admitted.size(), top);
    const auto ranked = rank(evals);
    if (!ranked.empty()) {
      std::ofstream best(dir + "/best_schedule.json");
      best << best_schedule(ev, *ranked.front()).dump(2) << "\n";
    }
    std::cout << fmt::format("\n{} evaluations in {:.1f} s on {} threads ({:.0f}/s){}\n", evals.size(), secs, threads,
                             evals.size() / std::max(secs, 1e-9),
                             interrupted ? "; interrupted, finished rows kept" : "");
    std::cout << fmt::format(
        "wrote {0}/results.csv, {0}/results.json{1}\n", dir,
        ranked.empty() ? "" : fmt::format(", {}/best_schedule.json (attnsim simulate accepts it)", dir));
    return interrupted ? 130 : 0;
  }
};

}  // namespace

std::unique_ptr<Command> add_explore(CLI::App& app, CLI::App*& sub) {
  auto c = std::make_unique<Explore>();
  sub = app.add_subcommand("explore", "evaluate and rank the candidates of a sweep file (configs/sweeps)");
  sub->add_option("sweep", c->sweep, "sweep JSON")->required();
  sub->add_option("--threads", c->threads, "worker threads (default: all cores)")->check(CLI::Range(1, 1024));
  sub->add_option("--out", c->out_dir, "output folder (default: explore_out/<sweep name>)");
  sub->add_option("--strategy", c->strategy, "override the sweep's search strategy")
      ->check(CLI::IsMember({"grid", "local_search"}));
  sub->add_option("--top", c->top, "rows of the ranked table");
  sub->add_flag("--quiet", c->quiet, "no progress output");
  sub->add_option("--max-candidates", c->max_candidates, "refuse a sweep whose grid has more candidates (default 1000000)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 62));
  c->budget.add(sub);
  return c;
}

}  // namespace attnsim::cli
