// One vocabulary of op names, shared by the simulator (sim/) and the kernels'
// instrumentation (kernels/): a predicted span and a measured span of the same
// step carry the same id and the same name. Plain C/C++ so nvcc and g++ both read it.
#pragma once

// X(ENUM, "name", "what it is")
#define ATTNSIM_OP_LIST(X)                                                         \
  X(WAIT, "wait", "blocked on an mbarrier phase or a named barrier")            \
  X(ARRIVE, "arrive", "mbarrier / named-barrier arrive (no time)")             \
  X(COMPUTE, "compute", "generic compute block (explicit schedules)")          \
  X(LOAD_Q, "load_q", "TMA load of a Q tile")                                   \
  X(LOAD_K, "load_k", "TMA load of a K block")                                  \
  X(LOAD_V, "load_v", "TMA load of a V block")                                  \
  X(TMA_LOAD, "tma_load", "generic TMA load (explicit schedules)")             \
  X(STORE_O, "store_o", "TMA store of an O tile, waited to completion")        \
  X(MMA_QK, "mma_qk", "S = Q K^T (tcgen05.mma / wgmma group)")                  \
  X(MMA_PV, "mma_pv", "O += P V (tcgen05.mma / wgmma group)")                   \
  X(MMA, "mma", "generic MMA group (explicit schedules)")                        \
  X(MMA_COMMIT, "mma_commit", "tcgen05.commit: arrive when prior MMAs finish")  \
  X(ISSUE, "issue", "instruction issue of async work (MMA/TMA descriptors)")   \
  X(SOFTMAX_MAX, "softmax_max", "tcgen05.ld S, mask, row max, rescale vote")   \
  X(SOFTMAX_EXP, "softmax_exp", "scale, exp2 (MUFU/emulated), cvt, st P chunk") \
  X(SOFTMAX_SUM, "softmax_sum", "row-sum update")                               \
  X(RESCALE_O, "rescale_o", "O *= acc_scale in TMEM (ld, mul, st)")             \
  X(CORRECTION_VOTE, "correction_vote", "read acc_scale, ballot")               \
  X(FINAL_O, "final_o", "O * 1/row_sum, cvt, store to SMEM")                    \
  X(BAR_SYNC, "bar_sync", "named barrier sync")                                 \
  X(LOOP_CONTROL, "loop_control", "KV-loop code between a warp's spans (not recorded)") \
  X(TILE_CONTROL, "tile_control", "work-tile code outside the spans: LSE, next tile (not recorded)")

/// Op ids: index into the shared vocabulary (ATTNSIM_OP_LIST).
enum attnsim_op_id {
#define ATTNSIM_X_ENUM(e, n, d) ATTNSIM_OP_##e,
  ATTNSIM_OP_LIST(ATTNSIM_X_ENUM)
#undef ATTNSIM_X_ENUM
      ATTNSIM_OP_COUNT
};

/// Name of op id `id` (as written in traces), or "?" when out of range.
static inline const char* attnsim_op_name(int id) {
  static const char* const names[] = {
#define ATTNSIM_X_NAME(e, n, d) n,
      ATTNSIM_OP_LIST(ATTNSIM_X_NAME)
#undef ATTNSIM_X_NAME
  };
  return (id >= 0 && id < ATTNSIM_OP_COUNT) ? names[id] : "?";
}
