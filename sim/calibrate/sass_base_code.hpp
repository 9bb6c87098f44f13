// Which compiled fa3_forward instances run the base schedule's code, for `attnsim sass-costs
// --into`: the cost file's SASS-counted points describe the code schedules/fa3_sm90.json runs, not
// that of its variants.
#pragma once
#include <string>

#include "calibrate/sass_paths.hpp"
#include "model/hardware.hpp"

namespace attnsim::sass {

/// Whether instance `k` runs the code of the schedule in `schedule_file` (an fa3_sm90 schedule):
/// its conditional rescale, exp2 emulation and O staging are what that schedule resolves to for a
/// problem of the instance's head_dim, with the instance's tile, K/V stages, pingpong and
/// intra-warpgroup overlap (a causal problem where the instance has the dynamic scheduler). The
/// base takes some such knobs at some head dims (hd256: the conditional rescale and O in the V
/// ring), so having one does not make an instance a variant's. Knobs the instance's name does
/// not carry (a listing older than them: Fa3Knobs::args) are not compared. False for a schedule of
/// another family. Throws InputError when the schedule file cannot be read.
bool runs_schedule_code(const Fa3Knobs& k, const Hardware& hw, const std::string& schedule_file);

}  // namespace attnsim::sass
