#include "core/pipe_sharing.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnsim {

PipeSharing::PipeSharing(const Hardware& hw, int num_warps) : slots_(static_cast<size_t>(num_warps)) {
  if (hw.smsp_per_sm > kMaxSmsp) throw std::invalid_argument("more SMSPs than the pipe model supports");
  for (int s = 0; s < hw.smsp_per_sm; ++s) {
    nominal_[s * kPipesPerSmsp + kIssuePipe] = hw.issue_per_clk_smsp;
    nominal_[s * kPipesPerSmsp + kFmaPipe] = hw.fma_lanes_per_clk_smsp;
    nominal_[s * kPipesPerSmsp + kAluPipe] = hw.alu_lanes_per_clk_smsp;
    nominal_[s * kPipesPerSmsp + kMufuPipe] = hw.mufu_lanes_per_clk_smsp;
    nominal_[s * kPipesPerSmsp + kMmaSyncPipe] = hw.mma_sync_flops_per_clk / hw.smsp_per_sm;
  }
  nominal_[kTmemResource] = hw.tmem_bytes_per_clk;
  nominal_[kSmemResource] = hw.smem_bytes_per_clk;
  beside_mma_ = {hw.fma_rate_beside_mma, hw.alu_rate_beside_mma, hw.mufu_rate_beside_mma};
}

bool PipeSharing::set_smsp_mma(int smsp, SmspMma mma, double now) {
  if (smsp_mma_[smsp] == mma) return false;
  smsp_mma_[smsp] = mma;
  bool affected = false;
  for (int w : active_) affected |= slots_[static_cast<size_t>(w)].smsp == smsp;
  if (!affected) return false;  // blocks started later read the state when they start
  advance(now);
  for (int w : active_)
    if (slots_[static_cast<size_t>(w)].smsp == smsp) refresh(slots_[static_cast<size_t>(w)]);
  solve(coupled(1u << smsp));
  return true;
}

bool PipeSharing::set_copies_landing(bool landing, double now) {
  if (copies_landing_ == landing) return false;
  copies_landing_ = landing;
  bool affected = false;
  for (int w : active_) {
    const Slot& s = slots_[static_cast<size_t>(w)];
    affected |= s.beside_copies[static_cast<size_t>(smsp_mma_[s.smsp])] != 1;
  }
  if (!affected) return false;
  advance(now);
  for (int w : active_) refresh(slots_[static_cast<size_t>(w)]);
  solve(kAllSmsps);
  return true;
}

void PipeSharing::refresh(Slot& s) const {
  const SmspMma mma = smsp_mma_[s.smsp];
  s.effective = s.demand;
  // Measured blocks stretch as a whole, holding their pipes as long: beside wgmma by its measured
  // slowdown, and while copies land by that one's on top.
  const double landing = copies_landing_ ? s.beside_copies[static_cast<size_t>(mma)] : 1.0;
  if (mma == SmspMma::idle) {
    if (landing != 1)
      for (double& d : s.effective) d *= landing;
    s.effective_standalone = s.standalone * landing;
    return;
  }
  if (s.beside[0] > 0) {
    const double k = s.beside[mma == SmspMma::ss ? 0 : 1] * landing;
    for (double& d : s.effective) d *= k;
    s.effective_standalone = s.standalone * k;
    return;
  }
  // Not measured: each CUDA-core pipe of the SMSP does its work at the pipe's rate beside wgmma.
  const int base = s.smsp * kPipesPerSmsp;
  s.effective[base + kFmaPipe] /= beside_mma_[0];
  s.effective[base + kAluPipe] /= beside_mma_[1];
  s.effective[base + kMufuPipe] /= beside_mma_[2];
  s.effective_standalone = 0;
  for (int r = 0; r < kNumResources; ++r)
    if (s.effective[r] > 0) s.effective_standalone = std::max(s.effective_standalone, s.effective[r] / nominal_[r]);
}

double PipeSharing::start(int warp, int smsp, const Work& w, double now, const MeasuredTiming& measured, int cta_rank) {
  advance(now);
  Slot& s = slots_[static_cast<size_t>(warp)];
  s = Slot{};
  s.smsp = smsp;
  s.rank = measured.with_residents ? 0 : cta_rank;
  const int base = smsp * kPipesPerSmsp;
  s.demand[base + kIssuePipe] = w.issue;
  s.demand[base + kFmaPipe] = w.fma_lanes;
  s.demand[base + kAluPipe] = w.alu_lanes;
  s.demand[base + kMufuPipe] = w.mufu_lanes;
  s.demand[base + kMmaSyncPipe] = w.mma_sync_flops;
  s.demand[kTmemResource] = w.tmem_bytes;
  s.demand[kSmemResource] = w.smem_bytes;
  for (int r = 0; r < kNumResources; ++r) {
    if (s.demand[r] <= 0) continue;
    if (nominal_[r] <= 0)
      throw std::runtime_error("a compute block uses a pipe this GPU does not have (e.g. TMEM on SM90)");
    s.standalone = std::max(s.standalone, s.demand[r] / nominal_[r]);
    consumed_[r] += s.demand[r];
    s.used[static_cast<size_t>(s.n_used++)] = static_cast<int8_t>(r);
    s.sm_wide |= r >= kTmemResource;  // past the SMSPs' pipes: TMEM, SMEM
  }
  if (measured.alone > 0) {
    s.standalone = std::max(s.standalone, measured.alone);
    s.beside = {measured.beside_ss, measured.beside_rs};
    s.beside_copies = measured.beside_copies;
  }
  refresh(s);
  s.active = true;
  s.remaining = 1;
  s.last = now;
  active_.push_back(warp);
  solve(coupled(1u << smsp));
  return s.standalone;
}

void PipeSharing::finish(int warp, double now) {
  advance(now);
  Slot& s = slots_[static_cast<size_t>(warp)];
  const uint32_t affected = coupled(1u << s.smsp);  // while it still couples what it shared with
  s.active = false;
  active_.erase(std::find(active_.begin(), active_.end(), warp));
  solve(affected);
}

void PipeSharing::rebalance(double now) {
  advance(now);
  solve(kAllSmsps);
}

uint32_t PipeSharing::coupled(uint32_t smsps) const {
  uint32_t sm_wide_users = 0;
  bool touched = false;
  for (int w : active_) {
    const Slot& s = slots_[static_cast<size_t>(w)];
    if (!s.sm_wide) continue;
    sm_wide_users |= 1u << s.smsp;
    touched |= ((smsps >> s.smsp) & 1u) != 0;
  }
  return touched ? smsps | sm_wide_users : smsps;
}

void PipeSharing::advance(double now) {
  for (int w : active_) {
    Slot& s = slots_[static_cast<size_t>(w)];
    if (s.effective_standalone > 0) s.remaining -= (now - s.last) * s.speed / s.effective_standalone;
    if (s.remaining < 0) s.remaining = 0;
    s.last = now;
  }
}

void PipeSharing::solve(uint32_t smsps) {
  // Only the SMSPs a change reached: re-rating every block of the SM at each start and finish was
  // half of a long prediction's time (perf, hd64 s16k b2 causal). Classes by CTA rank, oldest
  // first; each fills what the older ones left. The index lists are members reused from call to
  // call: three vectors allocated per call were a fifth of a long prediction's time (callgrind).
  resolved_ = smsps;
  auto in_scope = [&](const Slot& s) { return ((smsps >> s.smsp) & 1u) != 0; };
  std::vector<int>& ranks = ranks_;
  ranks.clear();
  for (int w : active_) {
    Slot& s = slots_[static_cast<size_t>(w)];
    if (!in_scope(s)) continue;
    s.speed = s.effective_standalone <= 0 ? 1 : 0;
    if (s.effective_standalone > 0) ranks.push_back(s.rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  // used_ and load_ are zero between calls (each loop below clears what it touched): zeroing
  // both arrays whole per call was a sixth of solve's time (perf).
  std::array<double, kNumResources>& used = used_;
  std::array<double, kNumResources>& load = load_;
  uint32_t ever_touched = 0;
  for (int rank : ranks) {
    // Progressive filling over a common speed level for the class's unfrozen blocks.
    std::vector<int>& open = open_;
    open.clear();
    for (int w : active_) {
      const Slot& s = slots_[static_cast<size_t>(w)];
      if (in_scope(s) && s.effective_standalone > 0 && s.rank == rank) open.push_back(w);
    }
    double level = 0;
    while (!open.empty()) {
      // Only the resources the open blocks use (a few of the 22, as bits): the loops over all of
      // them were much of solve's time on long predictions (perf, hd64 s16k b2 without pingpong).
      uint32_t touched = 0;
      for (int w : open) {
        const Slot& s = slots_[static_cast<size_t>(w)];
        for (int i = 0; i < s.n_used; ++i) {
          const int r = s.used[static_cast<size_t>(i)];
          touched |= 1u << r;
          load[r] += s.effective[r] / s.effective_standalone;
        }
      }
      ever_touched |= touched;
      double inc = 1 - level;
      for (uint32_t m = touched; m != 0; m &= m - 1) {
        const int r = std::countr_zero(m);
        if (load[r] > 0) inc = std::min(inc, (nominal_[r] - used[r]) / load[r]);
      }
      inc = std::max(inc, 0.0);
      level += inc;
      for (uint32_t m = touched; m != 0; m &= m - 1) {
        const int r = std::countr_zero(m);
        used[r] += inc * load[r];
        load[r] = 0;
      }
      std::vector<int>& still_open = still_open_;
      still_open.clear();
      for (int w : open) {
        Slot& s = slots_[static_cast<size_t>(w)];
        bool saturated = level >= 1 - 1e-12;
        for (int i = 0; i < s.n_used && !saturated; ++i) {
          const int r = s.used[static_cast<size_t>(i)];
          saturated = s.effective[r] > 0 && used[r] >= nominal_[r] * (1 - 1e-12);
        }
        if (saturated)
          s.speed = level;
        else
          still_open.push_back(w);
      }
      if (still_open.size() == open.size()) {  // numerical corner: freeze everything at this level
        for (int w : open) slots_[static_cast<size_t>(w)].speed = level;
        break;
      }
      open.swap(still_open);
    }
  }
  for (uint32_t m = ever_touched; m != 0; m &= m - 1) used[std::countr_zero(m)] = 0;
}

double PipeSharing::finish_time(int warp) const {
  const Slot& s = slots_[static_cast<size_t>(warp)];
  if (s.effective_standalone <= 0) return s.last;
  if (s.speed <= 0) return std::numeric_limits<double>::infinity();
  return s.last + s.remaining * s.effective_standalone / s.speed;
}

}  // namespace attnsim
