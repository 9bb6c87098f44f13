// Host side of one compiled fa2_sm80 kernel: grid (one CTA per (batch, head)), SMEM, launch.
// Included by the generated instance files (one explicit instantiation of launch<T> per knob set).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "common/cuda_check.cuh"
#include "common/launch_abi.h"
#include "fa2/fa2_kernel.cuh"

namespace attnsim::fa2 {

/// Launches fa2_forward<T> asynchronously on `stream`; a LaunchFn (kernels/common/launch_abi.h).
/// `sched` is ignored (the grid is one CTA per (batch, head), walking its tiles). A traced kernel (T::kTrace)
/// needs `trace` (buffers for kWarps warps per CTA); a plain one ignores it, as the SM90
/// launcher does. Throws std::invalid_argument when the shape does not fit the kernel,
/// std::runtime_error on CUDA errors.
template <class T>
void launch(const Shape& sh, const Tensors& t, TileScheduler /*sched*/, const TraceBuffers* trace, void* stream,
            LaunchInfo* info) {
  check_launch(sh, T::kHeadDim, T::kTrace, trace);
  Fa2Params p{};
  p.q = static_cast<const __nv_bfloat16*>(t.q);
  p.k = static_cast<const __nv_bfloat16*>(t.k);
  p.v = static_cast<const __nv_bfloat16*>(t.v);
  p.o = static_cast<__nv_bfloat16*>(t.o);
  p.lse = t.lse;
  p.heads = sh.heads;
  p.group = sh.heads / sh.kv_heads;
  p.seqlen_q = sh.seqlen_q;
  p.seqlen_k = sh.seqlen_k;
  p.causal = sh.causal;
  p.scale_log2 = 1.4426950408889634f / std::sqrt(static_cast<float>(sh.head_dim));
  p.m_tiles = (sh.seqlen_q + T::kBr - 1) / T::kBr;
  set_trace_params(p, trace);
  const int grid = sh.batch * sh.heads;
  constexpr int smem = T::kSmem.bytes;
  static bool configured = false;  // one attribute call per instantiation
  if (!configured) {
    cuda_check(cudaFuncSetAttribute(fa2_forward<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
               "cudaFuncSetAttribute(max dynamic shared memory)");
    configured = true;
  }
  fa2_forward<T><<<grid, kThreads, smem, static_cast<cudaStream_t>(stream)>>>(p);
  cuda_check(cudaGetLastError(), "launching fa2_forward");
  if (info) *info = LaunchInfo{grid, kThreads, kWarps, smem, p.m_tiles * grid};
}

}  // namespace attnsim::fa2
