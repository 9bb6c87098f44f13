// The compute spans of the traced FA2-style kernel (kernels/fa2, Fa2Traits<..., kTrace = true>)
// in a cuobjdump -sass listing, and each one's in-order issue time (sass_issue.hpp); and the KV
// loop of the plain instance (kTrace = false), the code timed launches run, as one stream.
//
// One warp per SMSP runs this kernel (4 warps per CTA, usually one CTA per SM), so nothing hides
// its instruction latencies: a span's time is the time its warp takes to issue it. The spans are
// the clock intervals between the two __syncthreads of the KV loop, in the kernel's order:
// mma_qk, softmax_max, softmax_exp, rescale_o, mma_pv. Their loops run as the kernel's structure
// says: each loop's trip count is the work of its level divided by the work one pass of its body
// does (S = Q K^T: head_dim FFMA per score, scores_per_lane scores; softmax: Bc / 2 elements per
// lane; P V: rows x Bc x head_dim / 32 FFMA), and a count that does not divide is an error, so a
// change in the kernel's code shape is caught here rather than priced wrong. Each span starts
// with none of its own code cached when the KV loop's code is larger than the cache; the five
// spans are timed as one stream (issue_segments), starting cold at mma_qk, so that instructions
// fetched while one span waits are ready for the next. The load warps' K/V copy (copy_kv) is
// timed too: its loops of 16-byte global loads and shared stores wait out the L2 latency of each
// group of loads ptxas issues together.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/sass_issue.hpp"

namespace attnsim::sass {

/// Template arguments of an attnsim::fa2::fa2_forward<Fa2Traits<head_dim, Br, Bc, trace>> instance.
struct Fa2Knobs {
  int head_dim = 0, br = 0, bc = 0;
  bool trace = false;
  int rows_per_warp() const { return br / 4; }  ///< 4 warps share the Br rows
  int scores_per_lane() const { return rows_per_warp() * bc / 32; }
  int out_per_lane() const { return head_dim / 32; }  ///< O columns per lane and row
};
/// The knobs of `mangled` when it is an fa2_forward instance.
std::optional<Fa2Knobs> fa2_knobs(const std::string& mangled);

/// One span of the KV loop.
struct Fa2Span {
  std::string op;                 ///< copy_kv (the load warps' K and V copy), mma_qk, softmax_max, softmax_exp,
                                  ///< rescale_o, mma_pv
  uint32_t begin = 0, end = 0;    ///< first instruction, closing clock read
  std::map<uint32_t, int> taken;  ///< backward branch -> times taken per entry into its loop
  IssueTime issue;                ///< of the dynamic path, instrumentation removed
  int instrumentation = 0;        ///< trace-record stores left out of the path
};

/// The compute spans of one traced fa2_forward instance.
struct Fa2Analysis {
  const Function* function = nullptr;
  Fa2Knobs knobs;
  uint32_t kv_loop_bytes = 0;  ///< code of the KV loop (both __syncthreads, the copies, every span)
  /// Whether the spans start with none of their code cached: the KV loop runs more code than the
  /// instruction cache holds (kv_loop_bytes > IssueModel::icache_bytes), so by the time the KV
  /// block's spans come round again the rest of the loop has pushed them out.
  bool cold_icache = false;
  std::vector<Fa2Span> spans;
  const Fa2Span* find(const std::string& op) const;
};

/// Finds the KV loop's compute spans of a traced fa2_forward instance (the two BAR.SYNC with six
/// clock reads between them) and its K/V copy (the clock interval before the first) and times
/// each with `m`. Throws std::runtime_error when the code does
/// not have that shape or a loop's trip count does not divide its work.
Fa2Analysis analyse_fa2(const Function& fn, const IssueModel& m);

/// The KV loop of a plain (untraced) fa2_forward instance, the code a timed launch runs.
struct Fa2PlainLoop {
  const Function* function = nullptr;
  Fa2Knobs knobs;
  uint32_t begin = 0, end = 0;  ///< after the first __syncthreads, up to the second
  bool cold_icache = false;     ///< as Fa2Analysis::cold_icache
  IssueTime issue;              ///< of its dynamic path from the first __syncthreads to the second
};

/// Times the compute between the KV loop's two __syncthreads of a plain fa2_forward instance as
/// one stream (the traced instance's five spans, without the clock reads and record stores that
/// split them: ptxas schedules the same source differently around them). Each loop runs as the
/// kernel's structure says, told apart by what it holds: the S = Q K^T loop nest (the loop with
/// inner loops, and the FFMA loops inside it), the row max (FMNMX), the exp2 (MUFU.EX2), and any
/// other FFMA or FMUL loop as P V or the O rescale. Throws std::runtime_error when the code does
/// not have that shape or a loop's trip count does not divide its work.
Fa2PlainLoop analyse_fa2_plain(const Function& fn, const IssueModel& m);

}  // namespace attnsim::sass
