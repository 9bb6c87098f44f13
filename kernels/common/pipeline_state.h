// Position in an mbarrier pipeline, as CUTLASS's PipelineState keeps it: the stage (index into
// the ring), the phase parity that a wait at that stage expects, and the ring's depth. One type
// for the simulator's lowering (sim/lower/builder.hpp: producer_acquire / producer_commit /
// consumer_wait / consumer_release) and the kernels (kernels/sm90).
//
// A wait on an mbarrier with parity P returns once the phase of parity P has completed; a fresh
// barrier counts its (virtual) previous phase, parity 1, as completed. So a producer starts at
// phase 1 (its first acquire of every stage passes: the buffers start empty) and a consumer at
// phase 0 (its first wait needs the producer's first commit). Plain C++; callable from device code.
#pragma once

#include <cstdint>

#include "common/tile_order.h"  // ATTNSIM_HD

namespace attnsim {

/// Stage index and phase parity in a ring of `stages` mbarrier stages.
struct PipelineState {
  int index = 0;       ///< stage
  uint32_t phase = 0;  ///< parity a wait on this stage's barrier expects
  int stages = 1;      ///< ring depth

  /// A producer's first state: every stage starts free, so its first acquires pass at once.
  static ATTNSIM_HD PipelineState producer_start(int stages) { return {0, 1u, stages}; }
  /// A consumer's first state: its first wait needs the producer's first commit.
  static ATTNSIM_HD PipelineState consumer_start(int stages) { return {0, 0u, stages}; }
  /// Next stage; the phase flips when the ring wraps around.
  ATTNSIM_HD void advance() {
    if (++index == stages) {
      index = 0;
      phase ^= 1u;
    }
  }
};

}  // namespace attnsim
