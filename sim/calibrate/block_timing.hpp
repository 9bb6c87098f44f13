// `attnsim calibrate --costs`: folds kernels/microbench softmax_block results (the SM90 kernel's
// own softmax spans timed alone and beside another warpgroup's SS / RS wgmma) into a cost file as
// each block's "measured" timing points (lower/costs.hpp, TimingPoint).
#pragma once
#include <array>
#include <string>
#include <vector>

namespace attnsim {

/// One block's timing at one tile shape, as derived from a softmax_block result, cycles.
struct BlockTimingPoint {
  std::string block;    ///< "softmax_max", "softmax_exp", "rescale_o", "final_o"; "softmax_max_conditional", "pack_p",
                        ///< "softmax_mask_select"
  double elements = 0;  ///< elements per thread-row as the lowering passes them (n_block / 2 or head_dim / 2)
  double exp2_emu_share = 0;  ///< fraction of the exp2 emulated (shapes timed with "exp2_emulation"; softmax_exp only)
  /// Cycles alone and while the SMSP's tensor core runs SS / RS wgmma the whole time: the
  /// benchmark's beside figures taken to a duty of 1 (beside_at_full_duty), where it recorded the
  /// duty it timed them at.
  double alone = 0, beside_ss = 0, beside_rs = 0;
  /// The tensor cores' duty the beside figures were timed at (mean over the averaged shapes; 1
  /// where the result file predates the duty, 2026-12-01).
  double duty_ss = 1, duty_rs = 1;
  std::vector<std::string> shapes;  ///< the benchmark's tile shapes averaged into this point
};

/// A span's cycles while the tensor core runs wgmma the whole time, from `beside` cycles timed at
/// tensor-core duty `duty` (the share of the time it ran) and `alone` cycles: alone + (beside -
/// alone) / duty. The slowdown grows linearly with the duty (kernels/microbench softmax_duty, H200
/// 2026-12-01: the hd128 exp block 592 cycles alone, 626 / 660 / 712 / 742 / 764 at duty 0.18 /
/// 0.38 / 0.55 / 0.66 / 0.80). Throws std::invalid_argument unless 0 < duty <= 1.
double beside_at_full_duty(double alone, double beside, double duty);

/// Reads one softmax_block result file: a point per block, elements and share of emulated exp2
/// (shapes with the same elements per thread-row and share are averaged; a shape timed with
/// "exp2_emulation" {freq, res} gives only its softmax_exp point; one timed with "rescale":
/// {"conditional": true} its softmax_max_conditional and pack_p points; one timed "masked" its
/// softmax_mask_select point, the masked row max less the unmasked one). `note` receives "GPU, driver,
/// date". Throws InputError naming the file and JSON path when the file is not a softmax_block
/// result or lacks a figure.
std::vector<BlockTimingPoint> derive_block_timings(const std::string& results_file, std::string& note);

/// Writes the points into cost file `costs_file` (rewritten in place, in its own layout) as
/// /blocks/<block>/measured, replacing earlier ones; a replaced point's "while_copies_land" (from
/// smem_beside_async, apply_copies_landing) is kept. The result must load (CostModel).
void apply_block_timings(const std::string& costs_file, const std::vector<BlockTimingPoint>& points,
                         const std::string& note);

/// The epilogue's O stores (the SM90 kernel's write_o, most of the final_o span) timed while TMA
/// copies land in shared memory, over the same without them, at one head_dim: alone, beside SS
/// and beside RS wgmma (kernels/microbench smem_beside_async).
struct CopiesLandingPoint {
  double elements = 0;                   ///< head_dim / 2: final_o's elements per thread-row
  std::array<double, 3> ratio{1, 1, 1};  ///< alone, beside SS, beside RS
};

/// Reads one smem_beside_async result file: a point per head_dim it timed write_o at (256 always;
/// 128 and 64 in results since 2026-11-30). `note` receives "GPU, driver, date". Throws InputError
/// naming the file and JSON path when it is not such a result or lacks a figure.
std::vector<CopiesLandingPoint> derive_copies_landing(const std::string& results_file, std::string& note);

/// Writes the points into cost file `costs_file` as /blocks/final_o/measured/points/i/while_copies_land
/// of the point with the same elements (exp2 not emulated). Throws InputError when final_o has no
/// measured point at a point's elements (time the block with softmax_block first).
void apply_copies_landing(const std::string& costs_file, const std::vector<CopiesLandingPoint>& points,
                          const std::string& note);

/// One instance's load warp from a kernels/microbench load_warp result: the kernel's own load code
/// beside consumer warps running the softmax (and alone, for the record), cycles.
struct LoadWarpTimingPoint {
  std::string name;    ///< the result's instance key ("hd128", "hd128_dynamic", ...)
  std::string kernel;  ///< the instance as sass-costs names it
  int head_dim = 0, n_block = 0;
  bool pingpong = false, overlap = false, dynamic = false, own_o = false;
  double block_gaps = 0, block_load_spans = 0, tile_bookkeeping = 0;  ///< beside the softmax
  double alone_block_gaps = 0, alone_tile_bookkeeping = 0;            ///< alone
  /// Entering a recorded tile from a plain one over entering it from a recorded one (beside the
  /// softmax; recorded_after_plain/entry_extra_cycles).
  double recorded_entry_extra = 0;
};

/// Reads one load_warp result file: a point per instance. `note` receives "GPU, driver, date".
/// Throws InputError naming the file and JSON path when it is not such a result or lacks a figure.
std::vector<LoadWarpTimingPoint> derive_load_warp(const std::string& results_file, std::string& note);

/// Writes the points into cost file `costs_file` as its "load_warp" section (replacing an earlier
/// one). The result must load (CostModel).
void apply_load_warp(const std::string& costs_file, const std::vector<LoadWarpTimingPoint>& points,
                     const std::string& note);

}  // namespace attnsim
