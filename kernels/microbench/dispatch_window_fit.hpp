// Host-side analysis of `dispatch_window`: which of a neighbour warp's softmax phases slow a wgmma
// dispatch on its SMSP how much, and how much each phase slows while a dispatch or the tensor
// work it issued runs beside it. Plain C++ (Eigen's least squares), kept out of the .cu files.
#pragma once

#include <vector>

namespace mb {

/// One wgmma group of a dispatching warp, in cycles from its launch's first stamp: the dispatch
/// [begin, end) (wgmma.fence to commit_group) and the tensor work after it [end, done) (to the
/// return of wait_group 0); `smsp`: the warp's SMSP (warp index % 4).
struct DispatchWindow {
  double begin = 0, end = 0, done = 0;
  int smsp = 0;
};

/// One phase of a neighbour warp's softmax loop, [begin, end) in cycles from the same base;
/// `kind` indexes the phase names the benchmark reports (row max, exponentials, ...).
struct NeighbourPhase {
  double begin = 0, end = 0;
  int kind = 0;
  int smsp = 0;
};

/// Per phase kind k, the stretch s_k one neighbour warp in that phase adds to a dispatch: a
/// dispatch of `idle` cycles alone takes L = idle * (1 + sum_k s_k c_k / L), c_k the neighbour
/// cycles of kind k inside it (summed over its SMSP's neighbour warps), fitted by least squares
/// over every window. `cycles[k]`: c_k summed over the windows (how much data fixes s_k).
struct StretchFit {
  std::vector<double> stretch;
  std::vector<double> cycles;
  double rms_cycles = 0;  ///< root mean square of the fitted L's error, cycles
  int windows = 0;
};

/// Fits StretchFit over `windows` (SMSP-matched with `phases`). `kinds`: number of phase kinds;
/// `idle`: the dispatch's cycles with nothing beside it. Windows no phase touches are left out.
StretchFit fit_dispatch_stretch(const std::vector<DispatchWindow>& windows, const std::vector<NeighbourPhase>& phases,
                                int kinds, double idle);

/// One phase kind's duration against what ran beside it: duration = alone + per_dispatch *
/// (its cycles inside dispatches on its SMSP) + per_tensor * (its cycles inside their tensor
/// work), least squares over the kind's instances; `alone_median`: the median duration of the
/// instances with nothing beside.
struct PhaseSlowdown {
  double alone = 0, per_dispatch = 0, per_tensor = 0, alone_median = 0;
  int instances = 0, touched = 0;  ///< all instances, and those beside a dispatch or its tensor work
};

/// Fits PhaseSlowdown for each of `kinds` phase kinds.
std::vector<PhaseSlowdown> fit_phase_slowdown(const std::vector<DispatchWindow>& windows,
                                              const std::vector<NeighbourPhase>& phases, int kinds);

}  // namespace mb
