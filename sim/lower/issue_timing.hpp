// Issue timings of a kernel family's compute blocks (and of a copy its warps make with their own
// loads, "copy_kv"), read from a file that `attnsim sass-costs
// --family fa2 --into` writes (configs/costs/fa2_sm80_issue.json): per compiled kernel instance
// (its tile shape) and block, the in-order issue time of one warp alone on its SMSP
// (sim/calibrate/sass_issue.hpp, from the kernel's SASS and the GPU's measured latencies) and
// the block's instruction counts. The lowering turns a block into Work (issue slots, FMA / ALU /
// MUFU lane-ops, SMEM wavefronts) and a stand-alone time floor (MeasuredTiming::alone), so that
// a latency-bound warp takes its issue time alone and shares its SMSP's pipes with other warps.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/program.hpp"

namespace attnsim {

/// One block of one kernel instance.
struct BlockIssue {
  double cycles = 0;                   ///< in-order issue time of one warp alone, cycles
  double instructions = 0;             ///< warp instructions
  double ffma = 0, alu = 0, mufu = 0;  ///< FMA-pipe, ALU-pipe and MUFU instructions
  double shared_loads = 0;             ///< LDS / LDSM instructions
  /// The block as pipe work: issue slots, 32 lane-ops per FMA / ALU / MUFU instruction, and one
  /// 128-byte SMEM wavefront per shared load (the kernel's loads are conflict-free or broadcast).
  Work work() const;
  MeasuredTiming timing() const { return MeasuredTiming{cycles, 1, 1}; }
};

/// One compiled kernel instance: its tile shape and its blocks.
struct KernelIssue {
  std::string kernel;  ///< e.g. "fa2_forward<Fa2Traits<64, 64, 64, true>>"
  int head_dim = 0, br = 0, bc = 0;
  std::map<std::string, BlockIssue> blocks;
};

/// All instances of one issue-timing file.
class IssueTimings {
 public:
  /// Reads `file`; throws InputError naming the file and JSON path. Cached per path.
  static const IssueTimings& load(const std::string& file);
  /// Parses a document (`file` names it in errors); throws InputError.
  static IssueTimings parse(const nlohmann::json& doc, const std::string& file);
  /// The instance with this tile shape, or nullptr.
  const KernelIssue* find(int head_dim, int br, int bc) const;
  const std::string& file() const { return file_; }

 private:
  std::vector<KernelIssue> kernels_;
  std::string file_;
};

}  // namespace attnsim
