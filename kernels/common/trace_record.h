// Measured-timeline records written by instrumented kernels (kernels/sm90, kernels/fa2,
// kernels/sm100 and kernels/blackflash, built with tracing on) and read by `attnsim run` /
// `attnsim validate` (sim/measure). One format on both sides, plain C so nvcc and g++ read it. Op
// ids come from op_names.h; waits name what they waited on with the same pipeline and barrier
// names the simulator uses in its traces.
#pragma once
#include <stdint.h>

/// What a WAIT span waited on. X(ENUM, "name as in simulator traces"); mbarrier waits are
/// printed as "<name>[stage] phase <parity>", named barriers as "<name>[index]" (bar.syncthreads,
/// the fa2 kernel's __syncthreads and the blackflash consumers' bar.sync 1, 256, as "<name>"; the
/// SM100 kernel's bar.softmax_stats, recorded with stage = 4 x Q stage + warp, as
/// "<name>[s<stage>w<warp>]"). New targets go at the end: ids are stored.
#define ATTNSIM_WAIT_LIST(X)              \
  X(NONE, "")                             \
  X(Q_FULL, "pipeline_q.full")            \
  X(Q_EMPTY, "pipeline_q.empty")          \
  X(K_FULL, "pipeline_k.full")            \
  X(K_EMPTY, "pipeline_k.empty")          \
  X(V_FULL, "pipeline_v.full")            \
  X(V_EMPTY, "pipeline_v.empty")          \
  X(PINGPONG, "bar.pingpong")             \
  X(EPILOGUE, "bar.epilogue")             \
  X(WGMMA, "wgmma.wait_group")            \
  X(SYNCTHREADS, "bar.syncthreads")       \
  X(CP_ASYNC, "cp.async.wait_group")       \
  X(KV_FULL, "pipeline_kv.full")          \
  X(KV_EMPTY, "pipeline_kv.empty")        \
  X(SPO_FULL, "pipeline_s_p_o.full")      \
  X(SPO_EMPTY, "pipeline_s_p_o.empty")    \
  X(LASTSPLIT_FULL, "pipeline_p_lastsplit.full") \
  X(OACC_FULL, "pipeline_o_acc.full")     \
  X(OACC_EMPTY, "pipeline_o_acc.empty")   \
  X(SMSTATS_EMPTY, "pipeline_sm_stats.empty") \
  X(OEPI_FULL, "pipeline_o_epi.full")     \
  X(OEPI_EMPTY, "pipeline_o_epi.empty")   \
  X(STATS_BAR, "bar.softmax_stats")       \
  X(ORDER_BAR, "bar.exp_order")           \
  X(MBAR_Q_FULL, "mbar_q.full")           \
  X(MBAR_KV_FULL, "mbar_kv.full")         \
  X(MBAR_KV_EMPTY, "mbar_kv.empty")       \
  X(BAR_CONSUMERS, "bar.consumers")      \
  X(BARRIER_O, "barrier_o")               \
  X(O_STAGED, "bar.o_staged")

/// Wait-target ids (ATTNSIM_WAIT_LIST).
enum attnsim_wait_on {
#define ATTNSIM_X_WAIT(e, n) ATTNSIM_WAIT_##e,
  ATTNSIM_WAIT_LIST(ATTNSIM_X_WAIT)
#undef ATTNSIM_X_WAIT
      ATTNSIM_WAIT_COUNT
};

/// Name of wait target `id` ("" for NONE or out of range).
static inline const char* attnsim_wait_name(int id) {
  static const char* const names[] = {
#define ATTNSIM_X_WAIT(e, n) n,
      ATTNSIM_WAIT_LIST(ATTNSIM_X_WAIT)
#undef ATTNSIM_X_WAIT
  };
  return (id >= 0 && id < ATTNSIM_WAIT_COUNT) ? names[id] : "";
}

/// True for wait targets that are mbarriers (printed with stage and phase), false for named
/// barriers, wgmma.wait_group and cp.async.wait_group.
static inline int attnsim_wait_is_mbarrier(int id) {
  return (id >= ATTNSIM_WAIT_Q_FULL && id <= ATTNSIM_WAIT_V_EMPTY) ||
         (id >= ATTNSIM_WAIT_KV_FULL && id <= ATTNSIM_WAIT_OEPI_EMPTY) ||
         (id >= ATTNSIM_WAIT_MBAR_Q_FULL && id <= ATTNSIM_WAIT_MBAR_KV_EMPTY) || id == ATTNSIM_WAIT_BARRIER_O;
}

/// One span of one warp, recorded by its lane 0. 16 bytes (one vector store).
/// t0/t1: SM cycles since the CTA's clk0 (attnsim_cta_clock). The kernel stores the raw 32-bit
/// %clock (the low half of %clock64, no arithmetic on the warp it times); the host rebases them
/// (sm90::trace_kernel), so readers always see cycles since clk0.
struct attnsim_trace_record {
  uint8_t op;       ///< attnsim_op_id
  uint8_t wait_on;  ///< attnsim_wait_on (WAIT spans), else NONE
  uint8_t stage;    ///< pipeline stage or barrier index; 0xff = none
  uint8_t phase;    ///< mbarrier parity waited for (0/1); 0xff = none
  int16_t block;    ///< KV block n_block index, -1 = none
  int16_t tile;     ///< the CTA's work tile (0 = its first), -1 = none
  uint32_t t0, t1;
};

/// Per-CTA clock anchors, written by thread 0: clock64 and %globaltimer (ns, common to all SMs)
/// at the start (before the first barrier, so every span starts after it) and at the end of the
/// CTA, so cycle stamps of different SMs map to one time axis.
struct attnsim_cta_clock {
  long long clk0, clk1;
  unsigned long long ns0, ns1;
  uint32_t smid;
  uint32_t tiles;  ///< work tiles this CTA ran
};
