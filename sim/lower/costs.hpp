// Instruction-count cost model of compute blocks, read from configs/costs/*.json:
// for each named block, instructions per element and per row of the thread's row,
// turned into the Work (issue slots, pipe lane-ops, TMEM/SMEM bytes) of one warp
// (32 rows). Counts are derived from the schedule's arithmetic; the file says how.
#pragma once
#include <map>
#include <string>

#include "core/program.hpp"

namespace attnsim {

/// Work of one named block, for one warp: per element of a row, per row, and a fixed latency.
struct BlockCost {
  Work per_element;    ///< warp work per column of the 32 rows
  Work per_row;        ///< warp work once per row set (32 rows)
  double latency = 0;  ///< cycles after the pipe work (dependency tail)
};

class JsonReader;

/// All blocks of one cost file.
class CostModel {
 public:
  /// Reads `file` (configs/costs/...); throws InputError with file and JSON path.
  static CostModel load(const std::string& file);  // cached per file
  /// Reads a schedule's "costs" field (a path relative to the project root) and loads it.
  static CostModel from_schedule(JsonReader& schedule);
  /// Warp work of block `name` over a row of `elements` columns (scaled by `share` per element).
  Work work(const std::string& name, double elements, double rows = 1) const;
  double latency(const std::string& name) const;
  const BlockCost& block(const std::string& name) const;
  const std::string& file() const { return file_; }

 private:
  static CostModel read(const std::string& file);
  std::map<std::string, BlockCost> blocks_;
  std::string file_;
};

}  // namespace attnsim
