// The discrete-event engine: runs one CTA's warp programs on a model of one SM
// (SMSP pipes shared by processor sharing, a tensor-core FIFO, a TMA FIFO, mbarriers,
// named barriers) and records the Timeline. One representative CTA per SM; the
// memory system is shared with `active_sms` - 1 other SMs running alike (mean field: they
// transfer as often as this one does).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/program.hpp"
#include "core/timeline.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"

namespace attnsim {

/// Engine settings.
struct EngineOptions {
  int active_sms = 1;               ///< SMs sharing L2 bandwidth with this one
  double kv_sharing = 1;            ///< CTAs streaming each K/V tile at once (GridPlan::kv_sharing)
  bool record_spans = true;         ///< fill Timeline spans (stats are always kept)
  uint64_t max_events = 200000000;  ///< budget: exceeding it throws BudgetError, never a hang
};

/// A prediction would take longer than the budget the user can raise (--max-events, --max-tiles):
/// bad input in the CLI's terms (exit 2), counted as "budget" by explore.
class BudgetError : public InputError {
 public:
  BudgetError(std::string file, const std::string& message) : InputError(std::move(file), "", message, "budget") {}
};

/// Per-warp accounting, cycles.
struct WarpStats {
  double busy = 0;                      ///< executing compute / issue ops
  double wait = 0;                      ///< blocked on barriers (incl. TMA store waits)
  double end = 0;                       ///< when its program finished
  std::vector<double> wait_by_barrier;  ///< blocked time per barrier id, then wgmma.wait_group, cp.async.wait_group
};

/// Totals per unit over the run.
struct UnitStats {
  std::vector<double> pipe_consumed;  ///< per PipeSharing resource (lane-ops / instrs / bytes)
  std::vector<double> pipe_capacity;  ///< per resource per cycle
  double tensor_busy = 0;             ///< cycles the tensor core was executing MMAs
  double tensor_flops = 0;
  double tma_busy = 0;  ///< cycles the TMA engine was moving bytes
  double tma_bytes = 0;
  double hbm_bytes = 0;       ///< TMA bytes to or from HBM: loads of tiles no other CTA reads, and stores
  double mma_smem_bytes = 0;  ///< SMEM operand bytes read by MMAs
};

/// Result of one run.
struct SimResult {
  Timeline timeline;
  std::vector<WarpStats> warps;  ///< indexed like CtaProgram::warps
  UnitStats units;
  double end_cycles = 0;
  uint64_t events = 0;
  double tma_bytes_per_clk = 0;  ///< mean rate of the SM's TMA copies while moving bytes (bytes per cycle)
};

/// One warp in a deadlock report.
struct BlockedWarp {
  int warp = 0;
  std::string role;
  std::string barrier;  ///< what it waits on ("pipeline_kv.full[1]")
  int parity = 0;       ///< phase parity awaited
  int op_index = 0;     ///< position in its program
};

/// Thrown when the event queue empties while warps still wait. what() is the full report:
/// every waiting warp, what it waits on (barrier, stage, phase), and the wait-for cycle.
class DeadlockError : public std::runtime_error {
 public:
  DeadlockError(std::string report, std::vector<BlockedWarp> blocked, std::vector<int> cycle, double time)
      : std::runtime_error(std::move(report)), blocked(std::move(blocked)), cycle(std::move(cycle)), time(time) {}
  std::vector<BlockedWarp> blocked;
  std::vector<int> cycle;  ///< warps of the wait-for cycle, first warp repeated at the end; empty if none
  double time;             ///< cycle at which everything stopped
};

/// Thrown when a program breaks a barrier's rules (e.g. more arrivals than its count).
class ProgramError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The chip-wide L2 rate of TMA loads when `sharing` CTAs stream each K/V tile, in bytes per SM
/// clock: 1 / (1 / l2_hit_bytes_per_s + 1 / (sharing x kv_fill_bytes_per_s)) (every distinct byte is
/// filled into L2 once, then served `sharing` times; fitted on kernels/microbench tma_sharing), in
/// bytes/s over the SM clock since L2 runs in its own clock domain. The engine shares it among the
/// SMs that transfer at the same moment.
double l2_bytes_per_clk(const Hardware& hw, double sharing);

/// Runs `program` on `hw`. Throws DeadlockError or ProgramError.
SimResult simulate_cta(const Hardware& hw, const CtaProgram& program, const EngineOptions& options = {});

}  // namespace attnsim
