// Host side of one compiled BlackFlash kernel: TMA descriptors, grid (one CTA per 64-row Q tile),
// SMEM, launch. Included by the generated instance files (one explicit instantiation of
// launch<T> per knob set).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "blackflash/blackflash_kernel.cuh"
#include "common/cuda_check.cuh"
#include "common/launch_abi.h"
#include "common/tensor_map.cuh"

namespace attnsim::blackflash {

/// Launches blackflash_forward<T> asynchronously on `stream`; a LaunchFn
/// (kernels/common/launch_abi.h). One CTA per tile, longest first, as the simulator plans it:
/// `sched` must be TileScheduler::Lpt. A traced kernel (T::kTrace) needs `trace` (buffers for kWarps warps
/// per CTA). Throws std::invalid_argument when the shape does not fit (head_dim 64 only, GQA),
/// std::runtime_error on CUDA errors.
template <class T>
void launch(const Shape& sh, const Tensors& t, TileScheduler sched, const TraceBuffers* trace, void* stream,
            LaunchInfo* info) {
  check_launch(sh, T::kHeadDim, T::kTrace, trace);
  if (sched != TileScheduler::Lpt)
    throw std::invalid_argument(std::string("blackflash runs one CTA per tile (lpt), launched with ") +
                                tile_scheduler_name(sched));
  Params p{};
  p.tm_q = make_tensor_map(t.q, kTile, sh.seqlen_q, sh.heads, sh.batch, kTile);
  p.tm_k = make_tensor_map(t.k, kTile, sh.seqlen_k, sh.kv_heads, sh.batch, kTile);
  p.tm_v = make_tensor_map(t.v, kTile, sh.seqlen_k, sh.kv_heads, sh.batch, kTile);
  p.o = static_cast<__nv_bfloat16*>(t.o);
  p.lse = t.lse;
  p.batch = sh.batch;
  p.heads = sh.heads;
  p.group = sh.heads / sh.kv_heads;
  p.seqlen_q = sh.seqlen_q;
  p.seqlen_k = sh.seqlen_k;
  p.causal = sh.causal;
  p.scale_log2 = 1.4426950408889634f / std::sqrt(static_cast<float>(kTile));
  p.m_tiles = (sh.seqlen_q + kTile - 1) / kTile;
  set_trace_params(p, trace);
  const long long tiles = static_cast<long long>(p.m_tiles) * sh.batch * sh.heads;
  if (tiles > 0x7fffffffLL) throw std::invalid_argument("blackflash: more than 2^31 - 1 Q tiles");
  const int grid = static_cast<int>(tiles);
  constexpr int smem = T::kSmem.bytes;
  static bool configured = false;  // one attribute call per instantiation
  if (!configured) {
    cuda_check(cudaFuncSetAttribute(blackflash_forward<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
               "cudaFuncSetAttribute(max dynamic shared memory)");
    configured = true;
  }
  blackflash_forward<T><<<grid, kThreads, smem, static_cast<cudaStream_t>(stream)>>>(p);
  cuda_check(cudaGetLastError(), "launching blackflash_forward");
  if (info) *info = LaunchInfo{grid, kThreads, kWarps, smem, grid};
}

}  // namespace attnsim::blackflash
