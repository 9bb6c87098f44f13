// Whole-problem prediction: the tile scheduler's plan (GridPlan) mapped onto CTA
// simulations. CTAs with the same work (same tile signatures in the same order) are
// simulated once and reused, so a full problem costs a handful of CTA simulations.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/engine.hpp"
#include "model/clock_power.hpp"
#include "model/hardware.hpp"
#include "model/problem.hpp"
#include "lower/schedule.hpp"

namespace attnsim {

/// Options of a whole-problem prediction.
struct PredictOptions {
  bool record_spans = true;  ///< keep the critical CTA's timeline
  /// Extrapolate instead of simulating every KV block and tile: a CTA of T identical tiles of
  /// n blocks is simulated with 8 and 16 blocks and 1 and 2 tiles, and its time taken as linear
  /// in n and in T from those samples (the pipeline reaches its periodic steady state within a
  /// few blocks). Used by `explore`; tests bound its error against exact runs.
  bool extrapolate = false;
  /// Simulate every CTA of a one-tile-per-CTA or dynamic LPT grid exactly, rather than taking a
  /// long CTA that is not the longest from its periodic steady state (sim/driver/simulate.cpp,
  /// kSteadyFrom), and every CTA of a static persistent grid whose list is not a prefix of
  /// another's, rather than one of those with the same tiles in another order or fewer rows, each
  /// over all of its tiles rather than from its steady state over like tiles (kTileSteadyFrom).
  /// Slower (quadratic in the longest CTA's blocks); tests compare the two.
  bool exact_every_cta = false;
  /// Budget: engine events over all CTA simulations of the prediction (--max-events). About 5
  /// million a second on one core; the bundled cases need at most 30 million.
  uint64_t max_events = 100'000'000;
  /// Budget: tiles of the problem the grid planner places (--max-tiles); its time and memory grow
  /// with them (the bundled cases have at most 65 thousand).
  long long max_tiles = 1LL << 22;
  /// The SM clock to simulate at and predict with, GHz; 0: the clock the schedule's activity
  /// holds (the power model). Kernels timed together share one clock (shared_clock_ghz), and a
  /// prediction at that clock is simulated at it.
  double clock_ghz = 0;
};

/// Predicted time of a kernel on a problem, and the CTA that bounds it.
struct Prediction {
  double time_us = 0;  ///< kernel time
  double cycles = 0;   ///< kernel time in SM cycles
  /// SM clock that turned cycles into time: for tensor-core schedules on a GPU with a power model,
  /// the clock the chip holds under `activity` (model/clock_power.hpp), else
  /// Hardware::clock_under the schedule's kind of load.
  double clock_ghz = 0;
  double tflops = 0;  ///< problem FLOP / time (dense FLOP, halved when causal)
  double flops = 0;
  /// Tensor-core FLOP the kernel executes (Schedule::executed_mma_flops: whole diagonal blocks and
  /// padded tiles, so at least `flops`), what the chip's activity counts.
  double mma_flops = 0;
  SimResult critical;      ///< the CTA that finishes last (its timeline when recorded)
  int critical_tiles = 0;  ///< tiles that CTA processed
  /// DynamicLpt: the place in the launch order (longest first, the kernel's tile index) of each of
  /// the critical CTA's tiles, its tile i at [i]; empty for the other grids.
  std::vector<long long> critical_tile_order;
  /// Of those, the first this many make up `critical` when the CTA's time was taken from its
  /// steady state over like tiles (sim/driver/simulate.cpp, kTileSteadyFrom); 0: all of them.
  int critical_sampled_tiles = 0;
  int ctas_simulated = 0;  ///< distinct CTA simulations run
  uint64_t events = 0;     ///< engine events over all of them
  GridPlan::Mode mode = GridPlan::Mode::Single;
  int resident_ctas = 1;
  int cta_group = 1;
  size_t total_tiles = 0;
  size_t cta_count = 0;  ///< CTAs launched
  int ctas_per_sm = 1;
  bool extrapolated = false;  ///< times came from PredictOptions::extrapolate
  double kv_sharing = 1;      ///< CTAs streaming each K/V tile at once (GridPlan::kv_sharing)
  /// Bytes the kernel moves to or from HBM: the problem's compulsory Q, K, V and O bytes, or for a
  /// schedule without a problem (explicit programs) the HBM traffic of the CTA it simulates.
  double hbm_bytes = 0;
  /// The kernel cannot finish before its HBM bytes have moved at hbm_bytes_per_s: true when that
  /// bound, not the CTA simulations, sets `cycles`.
  bool hbm_bound = false;
  /// The chip's mean activity per SM clock over the kernel, which its clock follows: from the
  /// critical CTA's work per tensor FLOP times the problem's FLOP (or, without tensor work, its
  /// rates times the SMs in use) over `cycles`.
  ChipActivity activity;
  /// The CTA simulations' makespan, cycles: `cycles` before the HBM bound and the launch.
  double grid_cycles = 0;
  /// The clock follows `activity` (a tensor-core schedule on a GPU with a power model): kernels
  /// timed together share one (shared_clock_ghz).
  bool power_clocked = false;
};

/// Sets p.clock_ghz to `ghz` and what follows from it: p.cycles (grid_cycles, or the HBM bound at
/// that clock when longer, plus the launch), hbm_bound, time_us, tflops and the critical CTA's
/// timeline clock. predict() ends with it; shared_clock_ghz's callers re-clock with it.
void set_clock(Prediction& p, const Hardware& hw, double ghz);

/// The clock the chip holds while kernels take turns within the power controller's averaging
/// window (validate times every kernel of a problem in turns of about 5 ms; the limit acts on power
/// averaged over about a second): the clock of their mean activity, each weighted by its share of
/// the time (its cycles). nullopt when any of them is not power_clocked.
std::optional<double> shared_clock_ghz(const Hardware& hw, const std::vector<const Prediction*>& together);

/// The chip's mean activity over a prediction (Prediction::activity): needs p.critical, p.flops and
/// p.mma_flops (the tensor work executed, whole tiles; 0: p.flops),
/// p.hbm_bytes, p.cycles (before the launch is added), p.resident_ctas and p.ctas_per_sm.
ChipActivity chip_activity(const Prediction& p, const Hardware& hw);

/// Compulsory HBM bytes of a problem: Q and K, V read once, O written once.
double compulsory_hbm_bytes(const Problem& problem);

/// Checks `schedule` against `hw` and `problem` (throws InputError), then predicts it.
/// Throws BudgetError (naming the schedule file and the flag to raise) when the problem has more
/// tiles than options.max_tiles or its CTA simulations would take more than options.max_events,
/// and DeadlockError / ProgramError from the engine.
Prediction predict(const Schedule& schedule, const Hardware& hw, const Problem& problem,
                   const PredictOptions& options = {});

}  // namespace attnsim
