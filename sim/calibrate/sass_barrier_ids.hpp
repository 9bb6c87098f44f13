// Named barriers whose id ptxas reloads from local memory. A bar.sync / bar.arrive with a register
// id (BAR.SYNC R0, 0x100) waits for that register; where ptxas spilled the id, an LDL right before
// the barrier puts a local-memory load (an L1 miss under an attention kernel's traffic: hundreds of
// ns) on the barrier's path, and in a traced build between the clock reads that time its wait:
// the traced head_dim 256 SM90 kernels did so before each pingpong and epilogue barrier until they
// read the ids afresh (Traits::kFreshBarrierIds, kernels/sm90/README.md). `attnsim sass-costs
// --barrier-ids` prints this per fa3_forward instance of a cuobjdump -sass listing.
#pragma once
#include "calibrate/sass_paths.hpp"

namespace attnsim::sass {

/// One function's named barriers and their ids.
struct BarrierIds {
  int ldl = 0;           ///< local-memory loads (LDL*) anywhere in the function
  int register_ids = 0;  ///< BAR.SYNC / BAR.ARV whose barrier id is a register (not an immediate)
  int reloaded = 0;      ///< of those, the ids last written (program order, backwards) by an LDL
};

/// The barriers of `fn` and which of their id registers come straight from a local-memory load:
/// for each BAR.SYNC / BAR.ARV with a register id, the closest earlier instruction in program
/// order that writes that register (branches are not followed).
BarrierIds barrier_ids(const Function& fn);

}  // namespace attnsim::sass
