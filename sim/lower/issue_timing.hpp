// Issue timings of a kernel family's compute blocks (and of a copy its warps make with their own
// loads, "copy_kv"), read from a file that `attnsim sass-costs --family fa2|blackflash --into`
// writes (configs/costs/fa2_sm80_issue.json, blackflash_issue.json): per compiled kernel instance
// (its tile shape, its other knobs, and the CTAs per SM it was timed with) and block, the time
// its warp takes to issue the block's SASS (sim/calibrate/sass_issue.hpp for one warp alone,
// sim/calibrate/sm_issue.hpp for the SM's resident warps together; from the kernel's SASS and
// the GPU's measured latencies and rates) and the block's instruction counts. The lowering turns
// a block into Work (issue slots, FMA / ALU / MUFU lane-ops, SMEM bytes, mma.sync FLOP) and a
// time floor (MeasuredTiming::alone), so that a latency-bound warp takes its issue time and
// shares its SMSP's pipes with other warps.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/program.hpp"
#include "model/json_reader.hpp"

namespace attnsim {

/// One block of one kernel instance.
struct BlockIssue {
  double cycles = 0;                   ///< in-order issue time of one warp alone, cycles
  double instructions = 0;             ///< warp instructions
  double ffma = 0, alu = 0, mufu = 0;  ///< FMA-pipe, ALU-pipe and MUFU instructions
  double shared_loads = 0;             ///< LDS / LDSM instructions
  std::optional<double> shared_bytes;  ///< SMEM bytes its loads and stores move, where the file says
  double hmma = 0;                     ///< HMMA.16816 (mma.sync m16n8k16) instructions, 4096 FLOP each
  /// The block as pipe work: issue slots, 32 lane-ops per FMA / ALU / MUFU instruction, its SMEM
  /// bytes (where not given, one 128-byte wavefront per shared load: the kernel's loads are
  /// conflict-free or broadcast), and 4096 FLOP per HMMA on the mma.sync pipe.
  Work work() const;
  /// The cycles as the block's time floor; `with_residents`: they were timed with other resident
  /// CTAs issuing beside it (KernelIssue::ctas_per_sm > 1).
  MeasuredTiming timing(bool with_residents = false) const { return MeasuredTiming{cycles, 1, 1, with_residents}; }
};

/// One compiled kernel instance, as timed with some CTAs per SM: its tile shape and its blocks.
struct KernelIssue {
  std::string kernel;  ///< e.g. "fa2_forward<Fa2Traits<64, 64, 64, true>>"
  int head_dim = 0, br = 0, bc = 0;
  std::map<std::string, int> knobs;  ///< the instance's other template knobs ("kv_stage", "registers", ...)
  int ctas_per_sm = 1;               ///< resident CTAs the blocks were timed with
  std::map<std::string, BlockIssue> blocks;
};

/// All instances of one issue-timing file.
class IssueTimings {
 public:
  /// Reads `file`; throws InputError naming the file and JSON path. Cached per path.
  static const IssueTimings& load(const std::string& file);
  /// The file a schedule names in its optional "issue_timing" field (a path relative to the
  /// project root, or absolute), loaded; nullptr when the field is absent. `name` receives the
  /// path as the schedule gives it. Throws InputError (at /issue_timing) when it is not a string
  /// or the file does not parse.
  static const IssueTimings* from_schedule(JsonReader& r, std::string& name);
  /// Parses a document (`file` names it in errors); throws InputError.
  static IssueTimings parse(const nlohmann::json& doc, const std::string& file);
  /// The instance with this tile shape and these knobs, timed with `ctas_per_sm` CTAs per SM, or nullptr.
  const KernelIssue* find(int head_dim, int br, int bc, const std::map<std::string, int>& knobs = {},
                          int ctas_per_sm = 1) const;
  const std::string& file() const { return file_; }

 private:
  std::vector<KernelIssue> kernels_;
  std::string file_;
};

}  // namespace attnsim
