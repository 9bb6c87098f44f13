// Host side of one compiled SM100 kernel: TMA descriptors, grid (tile_scheduler.h), launch.
// Included by the generated instance files (one explicit instantiation of launch<T> per knob set).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "common/cuda_check.cuh"
#include "common/launch_abi.h"
#include "common/tensor_map.cuh"  // make_tensor_map (one tensor-map encoder for every family)
#include "fa4_kernel.cuh"

namespace attnsim::sm90 {
// Defined in kernels/sm90/runner.cu (one SM count for every family).
int sm_count();
}  // namespace attnsim::sm90

namespace attnsim::sm100 {

/// Launches fa4_forward<T> on `stream`; `sched`: static persistent grid or one cluster per tile,
/// longest first (the dynamic scheduler is not implemented here). With cta_group 2 the grid is
/// launched in (2, 1, 1) clusters. Throws std::invalid_argument when the shape or the scheduler
/// does not fit the kernel, std::runtime_error on CUDA errors.
template <class T>
void launch(const Shape& sh, const Tensors& t, TileScheduler sched, const TraceBuffers* trace, void* stream,
            LaunchInfo* info) {
  check_launch(sh, T::kHeadDim, T::kTrace, trace);
  if (sched == TileScheduler::DynamicLpt)
    throw std::invalid_argument("the SM100 kernel has no dynamic tile scheduler (static_persistent or lpt)");
  const bool persistent = sched == TileScheduler::StaticPersistent;
  Params p{};
  p.tm_q = make_tensor_map(t.q, sh.head_dim, sh.seqlen_q, sh.heads, sh.batch, kMBlock);
  p.tm_k = make_tensor_map(t.k, sh.head_dim, sh.seqlen_k, sh.kv_heads, sh.batch, kNBlock / T::kCtaGroup);
  p.tm_v = make_tensor_map(t.v, sh.head_dim, sh.seqlen_k, sh.kv_heads, sh.batch, kNBlock);
  p.tm_o = make_tensor_map(t.o, sh.head_dim, sh.seqlen_q, sh.heads, sh.batch, kMBlock);
  p.lse = t.lse;
  p.group = sh.heads / sh.kv_heads;
  p.tiles = TileSpace{sh.batch, sh.heads,  sh.seqlen_q, sh.seqlen_k, T::kQStage * T::kCtaGroup * kMBlock,
                      kNBlock,  sh.causal, persistent,  T::kCtaGroup};
  const long long tiles = p.tiles.num_tiles();
  if (tiles > (1LL << 31) - 1) throw std::invalid_argument("more than 2^31 work tiles");
  p.num_tiles = static_cast<int>(tiles);
  p.scale_log2 = 1.4426950408889634f / std::sqrt(static_cast<float>(sh.head_dim));
  set_trace_params(p, trace);
  const int grid = static_cast<int>(p.tiles.grid(sm90::sm_count()));
  static bool configured = false;  // one attribute call per instantiation
  if (!configured) {
    cuda_check(cudaFuncSetAttribute(fa4_forward<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes),
               "cudaFuncSetAttribute(max dynamic shared memory)");
    configured = true;
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = T::kSmemBytes;
  cfg.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = T::kCtaGroup;
  cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
  cfg.attrs = &cluster;
  cfg.numAttrs = T::kCtaGroup > 1 ? 1 : 0;  // cta_group 1: no cluster
  cuda_check(cudaLaunchKernelEx(&cfg, fa4_forward<T>, p), "launching fa4_forward");
  if (info) *info = LaunchInfo{grid, kThreads, kWarps, T::kSmemBytes, p.num_tiles};
}

}  // namespace attnsim::sm100
