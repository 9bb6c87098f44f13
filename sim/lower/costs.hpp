// Instruction-count cost model of compute blocks, read from configs/costs/*.json:
// for each named block, instructions per element and per row of the thread's row,
// turned into the Work (issue slots, pipe lane-ops, TMEM/SMEM bytes) of one warp
// (32 rows). Counts are derived from the schedule's arithmetic or counted in a kernel's SASS
// (`attnsim sass-costs`); the file says which. A block may say so with "provenance" and
// "source", and keep what a count replaced under "was" (instructions too).
// A block may also carry its dependency chain (the critical path found in a kernel's SASS by
// `attnsim sass-costs`): instructions of each latency class on it, per tile shape; and its
// timing measured on the GPU with the kernel's own code (kernels/microbench softmax_block, folded
// in by `attnsim calibrate --costs`): cycles alone and beside another warp's SS / RS wgmma.
#pragma once
#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/program.hpp"

namespace attnsim {

struct Hardware;

/// Dependency-chain latency class of an instruction: the Hardware constant that prices one
/// instruction of it on a chain (fma -> fma_latency, alu -> alu_latency, ...).
enum class LatencyClass { fma, alu, mufu, shfl, f2fp };
inline constexpr int kLatencyClasses = 5;
/// Hardware::<c>_latency, cycles.
double class_latency(LatencyClass c, const Hardware& hw);
/// "fma", "alu", "mufu", "shfl", "f2fp".
const char* latency_class_name(LatencyClass c);

/// One tile shape's critical path: instructions on it, per latency class.
struct ChainPoint {
  double elements = 0;                              ///< elements per thread-row at this tile shape
  std::array<double, kLatencyClasses> per_class{};  ///< instructions on the path, by LatencyClass
};

/// One tile shape's measured timing of a block (kernels/microbench softmax_block), cycles.
struct TimingPoint {
  double elements = 0;        ///< elements per thread-row at this tile shape
  double exp2_emu_share = 0;  ///< fraction of the span's exp2 emulated on the FMA pipe (fa3_sm90 "exp2_emulation")
  double alone = 0;           ///< the span alone on its SMSP
  double beside_ss = 0;       ///< beside another warpgroup's back-to-back SS wgmma on the same SMSPs
  double beside_rs = 0;       ///< beside RS wgmma
  /// Time while TMA copies land in shared memory over time without them: alone, beside SS, beside RS
  /// wgmma (kernels/microbench smem_beside_async); 1 where not measured.
  std::array<double, 3> beside_copies{1, 1, 1};
};

/// Work of one named block, for one warp: per element of a row, per row, and a fixed latency.
struct BlockCost {
  Work per_element;               ///< warp work per column of the 32 rows
  Work per_row;                   ///< warp work once per row set (32 rows)
  double latency = 0;             ///< cycles after the pipe work (dependency tail)
  std::vector<ChainPoint> chain;  ///< critical path per tile shape, by increasing elements (may be empty)
  std::vector<TimingPoint> measured;  ///< measured timing per tile shape, by increasing (exp2_emu_share, elements)
};

/// The code of one KV-loop iteration that lies between a consumer warp's spans (stage-release
/// arrives, pipeline indices and phases, the pingpong arrive, the loop branch), per warp, from the
/// kernel's SASS (`attnsim sass-costs`): no span records it, so a measured timeline shows it as gaps.
struct LoopControl {
  double instructions = 0;  ///< warp instructions
  double issue_cycles = 0;  ///< static issue time: sum of max(1, stall) over them
};

/// The code a consumer warp runs once per work tile outside the spans the simulator charges, from
/// the plain kernel's SASS (`attnsim sass-costs`, sass::tile_paths): the tail after the TMA store
/// of O (LSE, the tile loop's bookkeeping) and the head before the tile's first turn (the tile
/// slot or coordinates, its KV block count, the exit test). A measured timeline shows them as
/// gaps around a tile's epilogue and its pipeline_q.full wait.
struct TileControl {
  LoopControl head, tail;
};

/// What the SM90 kernel's load warp spends outside its spans, beside consumer warps running the
/// softmax on its SMSP, cycles, from the kernel's own load code timed by kernels/microbench
/// load_warp (folded in by `attnsim calibrate --costs`). Its traced build's code: the records go
/// through a cursor in shared memory (a shared load, a global store and a shared store per span).
struct LoadWarpCost {
  double block_gaps = 0;  ///< per KV block: the code between its waits and loads (traced build)
  /// Per tile: from its last V load to the next tile's first wait (the tile loop, the next tile's
  /// coordinates or ticket, the sampling decision): the plain kernel's code but for a recorded
  /// tile's cursor set-up (a shared load and a compare).
  double tile_bookkeeping = 0;
  /// The traced kernel's recorded tile entered from a plain one (as trace sampling records: one
  /// tile in N): what that entry costs over entering it from a recorded tile, per tile.
  double recorded_entry_extra = 0;
};

class JsonReader;

/// All blocks of one cost file.
class CostModel {
 public:
  /// Reads `file` (configs/costs/...); throws InputError with file and JSON path.
  static CostModel load(const std::string& file);  // cached per file
  /// Reads a schedule's "costs" field (a path relative to the project root) and loads it.
  static CostModel from_schedule(JsonReader& schedule);
  /// Warp work of block `name`: its per-element work x `elements` (columns of the 32 rows) plus its
  /// per-row work x `rows` (row sets). Throws InputError for an unknown block.
  Work work(const std::string& name, double elements, double rows = 1) const;
  /// The block's "latency_cycles" (0 when it has none, e.g. when a chain replaced it).
  double latency(const std::string& name) const;
  /// Dependency-chain latency of block `block` over `elements` elements per thread-row (as the
  /// lowering passes them to work(): n_block / 2 for the softmax blocks, head_dim_v / 2 for
  /// rescale_o and final_o), cycles: the sum over latency classes of (instructions of that class
  /// on the block's critical path) x (the class's latency on `hw`). Between two chain points the
  /// latency is interpolated linearly in `elements`; outside them, the nearest point's counts
  /// are scaled by elements / point.elements. 0 when the block has no chain.
  double chain_latency(const std::string& block, double elements, const Hardware& hw) const;
  /// Measured timing of block `block` at `elements` elements per thread-row (as for
  /// chain_latency): alone cycles interpolated linearly between points and scaled by
  /// elements / point.elements outside them; the slowdowns beside wgmma (beside / alone)
  /// interpolated between points and held at the nearest point outside. All-default (alone 0)
  /// when the block has no measurement. `exp2_emu_share`: only the points of that share of
  /// emulated exp2 count (all-default when none was measured at it: the pipes' throughput and
  /// the chain decide).
  MeasuredTiming measured_timing(const std::string& block, double elements, double exp2_emu_share = 0) const;
  const BlockCost& block(const std::string& name) const;
  /// The loop control of the instance with these knobs: the mean of the points of the same
  /// head_dim, pingpong, overlap and scheduler counted at KV block width `n_block` (or naming
  /// none; n_block 0: any width), else of those at any width, else of the points with the same
  /// pingpong, overlap and scheduler, else of all; zeros when the file has none ("loop_control" is
  /// optional).
  LoopControl loop_control(int head_dim, bool pingpong, bool overlap, bool dynamic, int n_block = 0) const;
  /// The tile control of the plain instance with these knobs, chosen as loop_control's point (own
  /// O buffer part of the match); zeros when the file has none ("tile_control" is optional).
  TileControl tile_control(int head_dim, bool pingpong, bool overlap, bool dynamic, bool own_o, int n_block = 0) const;
  /// The fraction of the row max that the plain instance with these knobs runs before its wait
  /// for the PV GEMM in an overlapped KV step (ptxas's placement, `attnsim sass-costs`): the point
  /// with all these knobs (at this KV block width where one was counted at it), else the mean of
  /// those with this head_dim and O staging, else of those with this head_dim; 0 (the source's
  /// order: the wait before the softmax) when there is none ("pv_wait" is optional).
  double max_before_pv_wait(int head_dim, bool pingpong, bool overlap, bool dynamic, bool own_o,
                            int n_block = 0) const;
  /// The load warp's costs for the instance with these knobs: the mean of the "load_warp" points
  /// with the same head_dim, scheduler and O staging (at this KV block width where one was timed
  /// at it), else with the same head_dim and scheduler, else the same scheduler, else all; zeros
  /// when the file has none ("load_warp" is optional).
  LoadWarpCost load_warp(int head_dim, bool dynamic, bool own_o, int n_block = 0) const;
  const std::string& file() const { return file_; }
  /// Writes `doc` to cost file `file` in the files' own layout (format_json), replacing it only
  /// if the result loads (read uncached); throws InputError naming the file and JSON path if not.
  static void write(const std::string& file, const nlohmann::ordered_json& doc);

 private:
  static CostModel read(const std::string& file);
  std::map<std::string, BlockCost> blocks_;
  /// The kernel instance a SASS-counted point (loop_control, tile_control, pv_wait) was counted in.
  struct InstanceKnobs {
    int head_dim = 0;
    bool pingpong = false, overlap = false, dynamic = false, own_o = false;
    int n_block = 0;  ///< the instance's KV block width (0: not recorded, files written before it was)
    bool same_structure(bool pp, bool ov, bool dyn) const { return pingpong == pp && overlap == ov && dynamic == dyn; }
    /// Counted at KV block width `n` (or at an unrecorded one; n = 0 asks for any).
    bool same_width(int n) const { return n == 0 || n_block == 0 || n_block == n; }
  };
  static InstanceKnobs read_instance(JsonReader& point, bool with_own_o);
  struct LoopControlPoint {
    InstanceKnobs knobs;
    LoopControl cost;
  };
  std::vector<LoopControlPoint> loop_control_;
  struct TileControlPoint {
    InstanceKnobs knobs;
    TileControl cost;
  };
  std::vector<TileControlPoint> tile_control_;
  struct PvWaitPoint {
    InstanceKnobs knobs;
    double cost = 0;  ///< max_before_pv_wait
  };
  std::vector<PvWaitPoint> pv_wait_;
  struct LoadWarpPoint {
    InstanceKnobs knobs;
    LoadWarpCost cost;
  };
  std::vector<LoadWarpPoint> load_warp_;
  std::string file_;
};

}  // namespace attnsim
