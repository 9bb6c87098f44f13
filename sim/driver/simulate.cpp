#include "driver/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <tuple>

#include "core/pipe_sharing.hpp"
#include "plan/tile_scheduler.hpp"

namespace attnsim {

namespace {
// Tiles that cost the same: KV blocks, masked blocks, valid rows (not where they sit).
using Signature = std::vector<std::tuple<int, int, int>>;
Signature signature(const std::vector<TileWork>& tiles) {
  Signature s;
  for (const auto& t : tiles) s.emplace_back(t.n_blocks, t.masked_blocks, t.rows);
  return s;
}

/// predict() simulates the CTAs at the clock its quick pass predicts when that clock is more than
/// this fraction away from the clock under load (the L2 and HBM rates per cycle follow the SM
/// clock; a 1% clock error moves a memory-bound time by 1%).
constexpr double kResimulateClockTolerance = 0.01;

constexpr int kSampleBlocksLo = 8, kSampleBlocksHi = 16;
/// One-tile-per-CTA grids (causal LPT) give every CTA a different KV block count, so simulating
/// each exactly costs the square of the longest (blackflash hd64 s16k causal: 256 CTAs, 33k
/// blocks, 62 M events, 10 s). A one-tile CTA of more than kSteadyFrom blocks that is not the
/// longest takes its time as linear in the blocks through exact simulations of kSteadyFrom - 8
/// and kSteadyFrom blocks with the same masked tail: by then the KV loop has reached its periodic
/// steady state (every later block adds the same cycles). The longest CTA, whose timeline is
/// reported, is always simulated exactly. The dynamic LPT grid's per-tile estimates use the same
/// shortcut (the CTA it then simulates runs its whole list exactly). test_hopper bounds the
/// difference against exact runs.
constexpr int kSteadyFrom = 48;
/// A static persistent CTA of more than kTileSteadyFrom tiles alike (KV blocks, masked blocks,
/// rows), of more than kTileSteadyBlocks KV blocks in all, takes its time as linear in its
/// tiles through exact simulations of its first kTileSteadyFrom - 1 and kTileSteadyFrom tiles,
/// where each of those tiles added the same cycles as the one before it (within
/// kTileSteadyTolerance): the rings and the pingpong have reached their periodic state, and the
/// next tile's loads overlap the last one's end alike every time. Otherwise (warpgroups without
/// pingpong drift against each other over many tiles: hd64 s16k at 192 x 128 came out 9% slow
/// from 4 tiles) it is simulated exactly. hd64 s16k b2 at 192 x 128 in pingpong: 21 tiles of 128
/// blocks, 6 M events and 2.3 s exact. test_hopper bounds the difference against exact runs. The
/// timeline reported is the sample of kTileSteadyFrom tiles.
constexpr int kTileSteadyFrom = 4;
constexpr int kTileSteadyBlocks = 2048;
constexpr double kTileSteadyTolerance = 0.002;
/// Engine events per program op: 4 to 10 in every family's programs (measured on the bundled
/// schedules), so a CTA whose programs have more than budget / 4 ops cannot fit in the budget.
constexpr uint64_t kEventsPerOp = 4;
/// CTAs of at most this many KV blocks are lowered without estimating their size first.
constexpr double kSampledFrom = 4096;
/// Dynamic LPT grids: how many of the CTAs whose estimated finish is latest are simulated in full
/// (the estimate ranks them; each costs a simulation of a CTA's whole tile list). With 4 instead
/// of 1 the 36 committed H100 dynamic_lpt/base cases predicted the same times, in 3x the time.
constexpr size_t kDynamicCtasSimulated = 1;

/// Runs CTA simulations, each distinct one once.
class CtaRunner {
 public:
  CtaRunner(const Schedule& s, const Hardware& hw, const Problem& p, const EngineOptions& eo, int ctas_per_sm,
            Prediction& out)
      : s_(s), hw_(hw), p_(p), eo_(eo), ctas_per_sm_(ctas_per_sm), out_(out) {}

  const SimResult& exact(const std::vector<TileWork>& tiles) {
    const Signature sig = signature(tiles);
    auto it = done_.find(sig);
    if (it != done_.end()) return it->second;
    // Refuse before lowering a CTA whose programs would not fit in what is left of the budget (the
    // programs of a long CTA take gigabytes before the engine counts its first event).
    const uint64_t budget = eo_.max_events;
    if (out_.events + kEventsPerOp * estimated_ops(tiles) > budget) over_events(budget);
    // CTAs sharing an SM are assumed to run alike: simulate that many copies together.
    const CtaProgram one = s_.lower(hw_, p_, tiles);
    EngineOptions eo = eo_;
    eo.max_events = budget - out_.events;
    SimResult r;
    try {
      // (Not one conditional expression: its branches' common type would copy `one`, a long
      // CTA's programs of hundreds of MB: 5% of a 2 s prediction.)
      if (ctas_per_sm_ > 1)
        r = simulate_cta(hw_, merge_ctas(std::vector<CtaProgram>(ctas_per_sm_, one)), eo);
      else
        r = simulate_cta(hw_, one, eo);
    } catch (const BudgetError&) {
      over_events(budget);
    }
    out_.events += r.events;
    ++out_.ctas_simulated;
    return done_.emplace(sig, std::move(r)).first->second;
  }

  /// Cycles of a CTA running `tiles`, from its start on the SM to its end: its prologue (barrier
  /// init, setmaxnreg, descriptor prefetch: cta_prologue_cycles) and then its warps' programs.
  double cycles(const std::vector<TileWork>& tiles, bool extrapolate) {
    return hw_.cta_prologue_cycles + program_cycles(tiles, extrapolate);
  }

  /// Cycles of the warps' programs running `tiles`; extrapolated when they are T identical tiles
  /// of many blocks.
  double program_cycles(const std::vector<TileWork>& tiles, bool extrapolate) {
    const bool uniform = std::all_of(tiles.begin(), tiles.end(), [&](const TileWork& t) {
      return t.n_blocks == tiles[0].n_blocks && t.masked_blocks == tiles[0].masked_blocks;
    });
    const int T = static_cast<int>(tiles.size()), n = tiles.empty() ? 0 : tiles[0].n_blocks;
    if (!extrapolate || !uniform || (T <= 2 && n <= kSampleBlocksHi)) return exact(tiles).end_cycles;
    auto g = [&](int k) {  // k tiles of n blocks, linear in n between the two block samples
      auto f = [&](int blocks) {
        TileWork t = tiles[0];
        t.n_blocks = blocks;
        t.masked_blocks = std::min(t.masked_blocks, blocks);
        return exact(std::vector<TileWork>(static_cast<size_t>(k), t)).end_cycles;
      };
      if (n <= kSampleBlocksHi) return f(n);
      const double lo = f(kSampleBlocksLo), hi = f(kSampleBlocksHi);
      return lo + (n - kSampleBlocksLo) * (hi - lo) / (kSampleBlocksHi - kSampleBlocksLo);
    };
    if (T <= 2) return g(T);
    const double one = g(1);
    return one + (T - 1) * (g(2) - one);
  }

  /// Cycles of a static persistent CTA running `tiles`: from its periodic steady state over tiles
  /// when it has many like ones and a large program (kTileSteadyFrom), exactly otherwise.
  double persistent_cycles(const std::vector<TileWork>& tiles) {
    const int T = static_cast<int>(tiles.size());
    const bool alike = std::all_of(tiles.begin(), tiles.end(), [&](const TileWork& t) {
      return t.n_blocks == tiles[0].n_blocks && t.masked_blocks == tiles[0].masked_blocks && t.rows == tiles[0].rows;
    });
    if (T <= kTileSteadyFrom || !alike || static_cast<long long>(T) * tiles[0].n_blocks <= kTileSteadyBlocks)
      return cycles(tiles, false);
    const auto first = [&](int k) {
      return exact(std::vector<TileWork>(tiles.begin(), tiles.begin() + k)).end_cycles;
    };
    const double z = first(kTileSteadyFrom - 2), a = first(kTileSteadyFrom - 1), b = first(kTileSteadyFrom);
    if (std::abs((b - a) - (a - z)) > kTileSteadyTolerance * (b - a)) return cycles(tiles, false);
    sampled_by_[signature(tiles)] = signature(std::vector<TileWork>(tiles.begin(), tiles.begin() + kTileSteadyFrom));
    return hw_.cta_prologue_cycles + b + (T - kTileSteadyFrom) * (b - a);
  }

  /// Cycles of a one-tile CTA of n > kSteadyFrom blocks from its periodic steady state (see
  /// kSteadyFrom); exact otherwise.
  double steady_cycles(const std::vector<TileWork>& tiles) {
    if (tiles.size() != 1 || tiles[0].n_blocks <= kSteadyFrom) return cycles(tiles, false);
    auto f = [&](int blocks) {
      TileWork t = tiles[0];
      t.n_blocks = blocks;
      t.masked_blocks = std::min(t.masked_blocks, blocks);
      return exact({t}).end_cycles;
    };
    const int lo = kSteadyFrom - 8, n = tiles[0].n_blocks;
    const double a = f(lo), b = f(kSteadyFrom);
    return hw_.cta_prologue_cycles + b + (n - kSteadyFrom) * (b - a) / (kSteadyFrom - lo);
  }

  /// Ops of the programs of a CTA running `tiles` (ctas_per_sm copies), estimated from the
  /// programs of one tile of 1 and 2 KV blocks and of two tiles of 1 block: ops are affine in the
  /// blocks of each tile. Small CTAs are not sampled (their count is the blocks, a lower bound).
  uint64_t estimated_ops(const std::vector<TileWork>& tiles) const {
    double blocks = 0;
    for (const auto& t : tiles) blocks += std::max(1, t.n_blocks);
    if (blocks * ctas_per_sm_ <= kSampledFrom) return static_cast<uint64_t>(blocks) * ctas_per_sm_;
    const auto ops = [&](std::vector<TileWork> sample, int n) {
      for (auto& t : sample) {
        t.n_blocks = n;
        t.masked_blocks = std::min(t.masked_blocks, n);
      }
      double count = 0;
      for (const auto& w : s_.lower(hw_, p_, sample).warps) count += static_cast<double>(w.ops.size());
      return count;
    };
    const double one = ops({tiles[0]}, 1), two = ops({tiles[0]}, 2), pair = ops({tiles[0], tiles[0]}, 1);
    const double per_block = std::max(0.0, two - one), per_tile = std::max(0.0, pair - one - per_block);
    const double fixed = std::max(0.0, one - per_tile - per_block);
    const double est = (fixed + per_tile * static_cast<double>(tiles.size()) + per_block * blocks) * ctas_per_sm_;
    return est >= 1e18 ? static_cast<uint64_t>(1e18) : static_cast<uint64_t>(est);
  }

  [[noreturn]] void over_events(uint64_t budget) const {
    throw BudgetError(s_.file(), fmt::format("expected a prediction within --max-events {} simulation events; {} on {} "
                                             "for {} needs more (about 5 million take a second): raise --max-events "
                                             "to run it",
                                             budget, s_.name(), hw_.name, p_.describe()));
  }

  /// Tiles of the sample that stands for `tiles` when persistent_cycles took them from their
  /// steady state, else 0.
  int sampled_tiles(const std::vector<TileWork>& tiles) const {
    const auto s = sampled_by_.find(signature(tiles));
    return s == sampled_by_.end() ? 0 : static_cast<int>(s->second.size());
  }

  /// The recorded CTA simulation that best represents `tiles`: itself when simulated exactly, the
  /// sample of its first tiles when taken from its steady state (persistent_cycles).
  SimResult take(const std::vector<TileWork>& tiles) {
    const Signature sig = signature(tiles);
    auto it = done_.find(sig);
    if (const auto s = sampled_by_.find(sig); it == done_.end() && s != sampled_by_.end()) it = done_.find(s->second);
    if (it == done_.end()) it = std::prev(done_.end());  // extrapolated: the largest sample kept
    return std::move(it->second);
  }

 private:
  const Schedule& s_;
  const Hardware& hw_;
  const Problem& p_;
  EngineOptions eo_;
  int ctas_per_sm_;
  Prediction& out_;
  std::map<Signature, SimResult> done_;
  std::map<Signature, Signature> sampled_by_;  ///< a CTA's tiles -> the sample of them simulated
};
}  // namespace

ChipActivity chip_activity(const Prediction& p, const Hardware& hw) {
  ChipActivity a;
  const UnitStats& u = p.critical.units;
  const double T = std::max(1.0, p.critical.end_cycles);
  double issued = 0;
  for (int sp = 0; sp < hw.smsp_per_sm; ++sp)
    if (static_cast<size_t>(sp * kPipesPerSmsp + kIssuePipe) < u.pipe_consumed.size())
      issued += u.pipe_consumed[sp * kPipesPerSmsp + kIssuePipe];
  const double cycles = std::max(1.0, p.cycles);
  const double sm_cycles = hw.num_sms * cycles;
  // The tensor work the chip executes: whole tiles, diagonal blocks' masked elements included.
  const double executed = p.mma_flops > 0 ? p.mma_flops : p.flops;
  if (u.tensor_flops > 0 && executed > 0) {
    // The problem's work in CTAs like the critical one (tails, short CTAs and idle SMs count as idle).
    const double ctas = executed / u.tensor_flops;
    a.tensor_duty = executed / hw.tensor_flops_per_clk / sm_cycles;
    a.issue_duty = issued * ctas / (hw.smsp_per_sm * sm_cycles);
    a.l2_bytes_per_clk = u.tma_bytes * ctas / cycles;
  } else {
    const double busy_sms = std::min<double>(hw.num_sms, std::max(1, p.resident_ctas) / std::max(1, p.ctas_per_sm));
    a.tensor_duty = u.tensor_busy / T * busy_sms / hw.num_sms;
    a.issue_duty = issued / (hw.smsp_per_sm * T) * busy_sms / hw.num_sms;
    a.l2_bytes_per_clk = u.tma_bytes / T * busy_sms;
  }
  a.hbm_bytes_per_clk = p.hbm_bytes / cycles;
  return a;
}

double compulsory_hbm_bytes(const Problem& problem) {
  return static_cast<double>(problem.elem_bytes()) * problem.batch *
         (static_cast<double>(problem.heads) * problem.seqlen_q * (problem.head_dim + problem.head_dim_v) +
          static_cast<double>(problem.kv_heads) * problem.seqlen_k * (problem.head_dim + problem.head_dim_v));
}

namespace {
/// predict() with the CTAs simulated at `sim_ghz`: the SM clock that turns the chip's L2 and HBM
/// rates (bytes per second) into bytes per cycle.
Prediction predict_at(const Schedule& schedule, const Hardware& hw_in, const Problem& problem,
                      const PredictOptions& opt, double sim_ghz) {
  Hardware hw = hw_in;
  hw.clock_ghz = sim_ghz;
  schedule.check(hw, problem);
  const GridPlan plan = schedule.plan_grid(hw, problem, opt.max_tiles);
  if (plan.over_budget)
    throw BudgetError(schedule.file(),
                      fmt::format("expected a problem of at most --max-tiles {} tiles; {} places {} tiles for {} (the "
                                  "planner's time and memory grow with them): raise --max-tiles to run it",
                                  opt.max_tiles, schedule.name(), plan.tiles, problem.describe()));
  EngineOptions eo;
  eo.max_events = opt.max_events;
  eo.active_sms = std::min(hw.num_sms, std::max(1, plan.resident_ctas));
  eo.kv_sharing = plan.kv_sharing;
  eo.record_spans = opt.record_spans;

  Prediction p;
  p.mode = plan.mode;
  p.resident_ctas = plan.resident_ctas;
  p.cta_group = plan.cta_group;
  p.extrapolated = opt.extrapolate;
  for (const auto& l : plan.cta_tiles) p.total_tiles += l.size();
  p.cta_count = plan.cta_tiles.size();
  p.ctas_per_sm = plan.ctas_per_sm;
  CtaRunner runner(schedule, hw, problem, eo, plan.ctas_per_sm, p);

  const std::vector<TileWork>* critical = nullptr;
  if (plan.mode == GridPlan::Mode::LptSingleTile || plan.mode == GridPlan::Mode::PerHead) {
    // Launch order is longest first; a CTA slot takes the next tile when it frees (list scheduling).
    std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
    const int slots = std::max(1, plan.resident_ctas / plan.cta_group);  // includes ctas_per_sm
    for (int i = 0; i < slots; ++i) free_at.push(0);
    double makespan = 0, longest = -1;
    int most_blocks = 0;
    for (const auto& tiles : plan.cta_tiles)
      for (const auto& t : tiles) most_blocks = std::max(most_blocks, t.n_blocks);
    for (const auto& tiles : plan.cta_tiles) {
      const bool longest_cta = tiles.size() == 1 && tiles[0].n_blocks == most_blocks;
      const double d = opt.extrapolate || opt.exact_every_cta || longest_cta ? runner.cycles(tiles, opt.extrapolate)
                                                                             : runner.steady_cycles(tiles);
      // A slot freed by a finished CTA takes the next one after the CTA launch gap.
      const double start = free_at.top() > 0 ? free_at.top() + hw.cta_launch_cycles : 0;
      free_at.pop();
      free_at.push(start + d);
      makespan = std::max(makespan, start + d);
      if (d > longest) {
        longest = d;
        critical = &tiles;
      }
    }
    p.cycles = makespan;
  } else if (plan.mode == GridPlan::Mode::DynamicLpt) {
    // Each resident CTA takes the next tile (launch order: longest first) when
    // plan.next_tile_lead_blocks KV blocks of its current one are left to compute, and starts it
    // when that one is done. Who asks first is decided by list scheduling with each tile's cost
    // alone (a CTA of that one tile, less the prologue every CTA pays once; its last blocks a
    // share of it by count); then the kDynamicCtasSimulated CTAs whose lists finish last are
    // simulated as persistent CTAs running their lists, and the latest is the time. (The atomic
    // that fetches a tile runs under those last blocks and is not modelled.)
    const size_t ctas = static_cast<size_t>(std::max(1, plan.resident_ctas / plan.cta_group));
    std::vector<double> cost;
    std::vector<int> n_blocks;
    for (const auto& one : plan.cta_tiles) {
      cost.push_back(opt.extrapolate || opt.exact_every_cta ? runner.program_cycles(one, opt.extrapolate)
                                                            : runner.steady_cycles(one) - hw.cta_prologue_cycles);
      n_blocks.push_back(one.front().n_blocks);
    }
    std::vector<double> est;  // when each CTA is done with its list
    const auto picks =
        assign_dynamic_tiles(cost, n_blocks, ctas, plan.next_tile_lead_blocks, hw.cta_prologue_cycles, &est);
    std::vector<std::vector<TileWork>> lists(ctas);
    for (size_t c = 0; c < ctas; ++c)
      for (size_t i : picks[c]) lists[c].push_back(plan.cta_tiles[i].front());
    std::vector<size_t> order(ctas);
    for (size_t i = 0; i < ctas; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return est[a] > est[b]; });
    double worst = -1;
    for (size_t i = 0; i < std::min(ctas, kDynamicCtasSimulated); ++i) {
      const auto& tiles = lists[order[i]];
      if (tiles.empty()) continue;
      const double d = runner.cycles(tiles, opt.extrapolate);
      if (d > worst) {
        worst = d;
        critical = &tiles;
        p.critical_tile_order.assign(picks[order[i]].begin(), picks[order[i]].end());
      }
    }
    p.cycles = worst;
    p.critical = runner.take(*critical);  // before `lists` goes out of scope
    p.critical_tiles = static_cast<int>(critical->size());
    critical = nullptr;
  } else {
    // A CTA whose tiles are a prefix of another CTA's tiles cannot finish later than it (the
    // other runs the same tiles first, then more), so only the longest lists are simulated. Nor
    // can a CTA whose tiles, in any order, match tiles of another one of as many KV blocks and
    // masked blocks and at least as many rows: where m_block does not divide seqlen_q, the tile
    // of fewer rows at the tail lands at a different place in each CTA's list (the kernel runs
    // it as a full one, its TMA loading fewer rows), and the order of a CTA's tiles moves its
    // time by a pipeline fill at most. Simulating every such list cost 132 exact CTAs, 13 s at
    // hd64 s8k with 192-row tiles; one of each set of equal lists stands for them.
    std::vector<Signature> sigs, work;  // work: a CTA's tiles, largest first (a multiset)
    for (const auto& tiles : plan.cta_tiles) {
      sigs.push_back(signature(tiles));
      work.push_back(sigs.back());
      std::sort(work.back().begin(), work.back().end(), std::greater<>());
    }
    auto is_strict_prefix = [](const Signature& a, const Signature& b) {
      return a.size() < b.size() && std::equal(a.begin(), a.end(), b.begin());
    };
    // Tile k of a matches tile k of b: the same KV and masked blocks, no more rows.
    auto covered_by = [](const Signature& a, const Signature& b) {
      if (a.size() > b.size()) return false;
      for (size_t k = 0; k < a.size(); ++k)
        if (std::get<0>(a[k]) != std::get<0>(b[k]) || std::get<1>(a[k]) != std::get<1>(b[k]) ||
            std::get<2>(a[k]) > std::get<2>(b[k]))
          return false;
      return true;
    };
    double worst = -1;
    for (size_t i = 0; i < plan.cta_tiles.size(); ++i) {
      bool dominated = false;
      for (size_t j = 0; j < sigs.size() && !dominated; ++j) dominated = is_strict_prefix(sigs[i], sigs[j]);
      // Covered by a list of more work, or equal to an earlier one (unless every CTA is to run).
      for (size_t j = 0; j < work.size() && !dominated && !opt.exact_every_cta; ++j)
        dominated = j != i && covered_by(work[i], work[j]) && (j < i || !covered_by(work[j], work[i]));
      if (dominated) continue;
      const double d = opt.extrapolate      ? runner.cycles(plan.cta_tiles[i], true)
                       : opt.exact_every_cta ? runner.cycles(plan.cta_tiles[i], false)
                                             : runner.persistent_cycles(plan.cta_tiles[i]);
      if (d > worst) {
        worst = d;
        critical = &plan.cta_tiles[i];
      }
    }
    p.cycles = worst;
  }
  if (critical) {
    p.critical_sampled_tiles = runner.sampled_tiles(*critical);
    p.critical = runner.take(*critical);
    p.critical_tiles = static_cast<int>(critical->size());
  }
  p.kv_sharing = plan.kv_sharing;
  p.flops = schedule.flops(problem);
  // A schedule that works on the problem moves at least its compulsory bytes; one without a problem
  // (flops 0: explicit programs, one CTA) moves what its CTA loads from and stores to HBM.
  p.hbm_bytes = p.flops > 0 ? compulsory_hbm_bytes(problem) : p.critical.units.hbm_bytes;
  if (p.flops <= 0) p.flops = p.critical.units.tensor_flops;
  p.mma_flops = std::max(p.flops, schedule.executed_mma_flops(hw, problem, plan));
  p.grid_cycles = p.cycles;
  p.activity = chip_activity(p, hw);
  // The clock the chip holds under this activity (power limit, tensor-core ceiling). The CTAs were
  // simulated at sim_ghz (hw.clock_ghz here): memory rates per cycle are taken at that clock, which
  // predict() chooses close to this one.
  p.power_clocked = schedule.clock_load() == Hardware::ClockLoad::tensor_core && hw.clock_power_limit_w > 0;
  set_clock(p, hw,
            schedule.clock_load() == Hardware::ClockLoad::tensor_core
                ? clock_under_activity(hw, p.activity, hw.clock_ghz)
                : hw.clock_ghz);
  return p;
}
}  // namespace

Prediction predict(const Schedule& schedule, const Hardware& hw, const Problem& problem, const PredictOptions& opt) {
  if (opt.clock_ghz > 0) {
    Prediction p = predict_at(schedule, hw, problem, opt, opt.clock_ghz);
    set_clock(p, hw, opt.clock_ghz);
    return p;
  }
  // Cycles turn into time at the clock the chip holds under this schedule's kind of work: power
  // management lets it run faster without tensor-core load (kernels/microbench clock_under_*).
  double sim_ghz = hw.clock_under(schedule.clock_load());
  // Under a power limit that clock follows the kernel's own activity, which the simulation gives:
  // a quick pass (extrapolated, no spans) finds it, and the CTAs are simulated at it, since L2 and
  // HBM move bytes per second, not per SM cycle (a memory-bound kernel at 1.41 GHz takes 12% fewer
  // cycles than at 1.61 GHz).
  if (schedule.clock_load() == Hardware::ClockLoad::tensor_core && hw.clock_power_limit_w > 0) {
    PredictOptions quick = opt;
    quick.extrapolate = true;
    quick.record_spans = false;
    const double guess = predict_at(schedule, hw, problem, quick, sim_ghz).clock_ghz;
    if (std::fabs(guess / sim_ghz - 1) > kResimulateClockTolerance) sim_ghz = guess;
  }
  return predict_at(schedule, hw, problem, opt, sim_ghz);
}

void set_clock(Prediction& p, const Hardware& hw, double ghz) {
  // Roofline: the grid cannot finish before those bytes have crossed the HBM interface.
  const double hbm_cycles = p.hbm_bytes / hw.hbm_bytes_per_s * ghz * 1e9;
  p.hbm_bound = hbm_cycles > p.grid_cycles;
  // Back-to-back launches: each kernel also pays the launch and grid setup/teardown of an empty
  // kernel of the same shape (launch_ns).
  p.cycles = std::max(p.grid_cycles, hbm_cycles) + hw.launch_ns * ghz;
  p.clock_ghz = ghz;
  // The critical CTA's spans turn into time at the same clock as the prediction (the engine
  // recorded them at clock_under_load), so that a trace's or an op's predicted ns add up to it.
  p.critical.timeline.clock_ghz = ghz;
  p.time_us = p.cycles / (ghz * 1e3);
  p.tflops = p.time_us > 0 ? p.flops / (p.time_us * 1e-6) / 1e12 : 0;  // 0 us: empty programs, no fixed costs
}

std::optional<double> shared_clock_ghz(const Hardware& hw, const std::vector<const Prediction*>& together) {
  ChipActivity mean;
  double total = 0;
  for (const Prediction* p : together) {
    if (!p->power_clocked) return std::nullopt;
    total += p->cycles;
  }
  if (together.empty() || total <= 0) return std::nullopt;
  for (const Prediction* p : together) {
    const double w = p->cycles / total;  // its share of the turns' time
    mean.tensor_duty += w * p->activity.tensor_duty;
    mean.issue_duty += w * p->activity.issue_duty;
    mean.l2_bytes_per_clk += w * p->activity.l2_bytes_per_clk;
    mean.hbm_bytes_per_clk += w * p->activity.hbm_bytes_per_clk;
  }
  return clock_under_activity(hw, mean, hw.clock_ghz);
}

}  // namespace attnsim
