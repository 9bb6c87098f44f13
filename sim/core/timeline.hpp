// The output of a simulation (and, later, of an instrumented GPU run): spans per
// warp and per unit, in SM clock cycles. Reports (summary, Chrome trace, ASCII,
// SVG) read only this structure, so predicted and measured timelines share them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/op_names.h"

namespace attnsim {

/// What a warp was doing during a span.
enum class SpanKind : uint8_t {
  Busy,  ///< executing an op (compute block, issuing async work)
  Wait,  ///< blocked on an mbarrier phase or a named barrier (░ in the timelines)
};

/// One interval on a track. Times in cycles from the start of the simulated CTA.
struct Span {
  double start = 0, end = 0;
  int16_t op = ATTNSIM_OP_COMPUTE;  ///< attnsim_op_id (kernels/common/op_names.h)
  SpanKind kind = SpanKind::Busy;
  int8_t stage = -1;   ///< Q stage (or pipeline stage), -1 when not applicable
  int32_t block = -1;  ///< KV block index n_block, -1 when not applicable
  int32_t tile = -1;   ///< index of the CTA's work tile (0 = first), -1 when not applicable
  int32_t label = -1;  ///< index into Timeline::labels (e.g. "pipeline_kv.full[2] phase 0"), -1 = none
};

/// The spans of one warp, in time order, non-overlapping.
struct WarpTrack {
  int warp = 0;      ///< warp index in the CTA
  int smsp = 0;      ///< SM sub-partition it runs on
  std::string role;  ///< role name from the schedule ("softmax0", "mma", ...)
  std::vector<Span> spans;
};

/// Work executed by a shared unit (tensor core, TMA engine). Spans may abut but never overlap.
struct UnitTrack {
  std::string name;  ///< "tensor_core", "tma"
  std::vector<Span> spans;
};

/// Everything recorded for one simulated CTA (the representative of a group of CTAs).
struct Timeline {
  std::vector<WarpTrack> warps;
  std::vector<UnitTrack> units;
  std::vector<std::string> labels;  ///< strings referenced by Span::label
  double end_cycles = 0;            ///< makespan of the simulated CTA
  double clock_ghz = 1;             ///< converts cycles to time: us = cycles / (clock_ghz * 1e3)

  /// Label text of a span ("" when none).
  const std::string& label_of(const Span& s) const {
    static const std::string empty;
    return s.label >= 0 ? labels[static_cast<size_t>(s.label)] : empty;
  }
  double to_us(double cycles) const { return cycles / (clock_ghz * 1e3); }
};

}  // namespace attnsim
