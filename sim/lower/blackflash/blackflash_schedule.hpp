// BlackFlash (github.com/fms-zth/BlackFlash, README): FA2 forward with Br = Bc = d = 64,
// 288 threads = 1 TMA producer warp + 8 consumer warps in a 4 x 2 grid (a pair owns 16 Q rows,
// its two halves split the columns), a 2-stage K/V double buffer on mbarriers (empty count
// 256), mma.sync m16n8k16 with ldmatrix, P written back to SMEM over the K buffer, row max and
// sum exchanged between the halves through SMEM with bar.sync among the 256 consumers.
// One CTA per 64-row Q tile; several CTAs share an SM as occupancy allows. The warp layout, the
// SMEM layout and the knobs are kernels/blackflash/structure.h's, shared with the real kernel
// (kernels/blackflash), which this family lowers op for op.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "blackflash/structure.h"
#include "lower/costs.hpp"
#include "lower/issue_timing.hpp"
#include "lower/pipeline_decl.hpp"
#include "lower/schedule.hpp"

namespace attnsim::blackflash {

/// CTAs of one configuration that fit on an SM (at least 1): by SMEM (structure.h's layout), by
/// registers (allocated per SMSP: Hardware::ctas_per_sm_by_registers) and by warps.
int occupancy(const Hardware& hw, int kv_stage, bool p_over_k, int registers);

/// The consumer blocks an issue-timing file must give for each instance.
inline constexpr const char* kTimedBlocks[] = {"mma_qk",    "softmax_max", "softmax_max_masked",
                                               "softmax_exp", "rescale_o",   "mma_pv"};

/// Knobs resolved for a problem.
struct Resolved {
  int kv_stage, ctas_per_sm, occupancy, registers;
  bool p_over_k;         ///< P written over the stage's K tile (false: its own SMEM tile)
  long long smem_bytes;  ///< the dynamic SMEM the kernel requests (structure.h's smem_layout)
};

/// The blackflash family: parses the JSON, checks head_dim and occupancy, plans one CTA per
/// 64-row Q tile and lowers the load and consumer warps. Throws InputError on bad input.
class BlackFlashSchedule : public Schedule {
 public:
  explicit BlackFlashSchedule(JsonReader& r);
  void check(const Hardware& hw, const Problem& problem) const override;
  GridPlan plan_grid(const Hardware& hw, const Problem& problem, long long max_tiles) const override;
  CtaProgram lower(const Hardware& hw, const Problem& problem, const std::vector<TileWork>& tiles) const override;
  std::vector<std::string> knob_lines(const Hardware& hw, const Problem& problem) const override;
  std::vector<std::string> roles() const override { return {warp_role(kLoadWarp), warp_role(kLoadWarp + 1)}; }
  /// GEMMs on mma.sync: the chip holds a higher clock than under wgmma.
  Hardware::ClockLoad clock_load() const override { return Hardware::ClockLoad::mma_sync; }
  std::map<std::string, double> resources(const Hardware& hw, const Problem& problem) const override;
  /// kernels/blackflash with this schedule's kv_stage, p_over_k and registers_per_thread
  /// (head_dim 64, bf16 only).
  KernelChoice real_kernel(const Hardware& hw, const Problem& problem) const override;
  Resolved resolve(const Hardware& hw, const Problem& problem) const;

 private:
  int kv_stage_ = 2, registers_ = 128;
  bool p_over_k_ = true;
  std::optional<int> ctas_per_sm_;
  std::map<std::string, RoleDecl> roles_;
  std::map<std::string, PipelineDecl> pipelines_;
  CostModel costs_;
  const IssueTimings* issue_ = nullptr;  ///< the consumer blocks timed from the SASS (optional "issue_timing")
  std::string issue_name_;               ///< its path as the schedule gives it
};

/// What the role emitters need.
struct Context {
  const Hardware& hw;
  const Problem& problem;
  const Resolved& k;
  const CostModel& costs;
  const std::vector<TileWork>& tiles;
  Pipe &q, &kv;
  int consumers_bar;  ///< bar.sync 1, 256: the consumer warps
  /// The instance's consumer blocks timed from its SASS with this many CTAs per SM, or nullptr
  /// (then the cost file's counts price them).
  const KernelIssue* sass = nullptr;
};

/// Warp 0: TMA loads of Q, then K_j and V_j into the K/V ring (load.cpp).
void emit_load(Context& c, WarpBuilder& w);
/// Consumer warp `index` (0..7): pair index / 2 owns 16 rows, index % 2 the column half (consumer.cpp).
void emit_consumer(Context& c, WarpBuilder& w, int index);

}  // namespace attnsim::blackflash
