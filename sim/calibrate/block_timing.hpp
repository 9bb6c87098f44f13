// `attnsim calibrate --costs`: folds kernels/microbench softmax_block results (the SM90 kernel's
// own softmax spans timed alone and beside another warpgroup's SS / RS wgmma) into a cost file as
// each block's "measured" timing points (lower/costs.hpp, TimingPoint).
#pragma once
#include <string>
#include <vector>

namespace attnsim {

/// One block's timing at one tile shape, as derived from a softmax_block result, cycles.
struct BlockTimingPoint {
  std::string block;    ///< "softmax_max", "softmax_exp", "rescale_o"
  double elements = 0;  ///< elements per thread-row as the lowering passes them (n_block / 2 or head_dim / 2)
  double exp2_emu_share = 0;  ///< fraction of the exp2 emulated (shapes timed with "exp2_emulation"; softmax_exp only)
  double alone = 0, beside_ss = 0, beside_rs = 0;
  std::vector<std::string> shapes;  ///< the benchmark's tile shapes averaged into this point
};

/// Reads one softmax_block result file: a point per block, elements and share of emulated exp2
/// (shapes with the same elements per thread-row and share are averaged; a shape timed with
/// "exp2_emulation" {freq, res} gives only its softmax_exp point). `note` receives "GPU, driver,
/// date". Throws InputError naming the file and JSON path when the file is not a softmax_block
/// result or lacks a figure.
std::vector<BlockTimingPoint> derive_block_timings(const std::string& results_file, std::string& note);

/// Writes the points into cost file `costs_file` (rewritten in place, in its own layout) as
/// /blocks/<block>/measured, replacing earlier ones. The result must load (CostModel).
void apply_block_timings(const std::string& costs_file, const std::vector<BlockTimingPoint>& points,
                         const std::string& note);

}  // namespace attnsim
