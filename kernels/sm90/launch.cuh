// Host side of one compiled kernel: TMA descriptors, grid, launch. Included by the generated
// instance files (one explicit instantiation of launch<T> per schedule knob set).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/cuda_check.cuh"
#include "common/tensor_map.cuh"
#include "fa3_api.h"
#include "fa3_kernel.cuh"

namespace attnsim::sm90 {

using attnsim::make_tensor_map;  // kernels/common/tensor_map.cuh

/// Number of SMs of the current device (cached).
int sm_count();

/// The dynamic tile scheduler's counters (Params::tile_counter): two ints of device memory,
/// zeroed once per process; each launch leaves them at 0 again (next_tile).
int* tile_counter();

template <class T>
void launch(const Shape& sh, const Tensors& t, TileScheduler sched, const TraceBuffers* trace, void* stream,
            LaunchInfo* info) {
  check_launch(sh, T::kHeadDim, T::kTrace, trace);
  Params p{};
  p.tm_q = make_tensor_map(t.q, sh.head_dim, sh.seqlen_q, sh.heads, sh.batch, T::kMBlock);
  p.tm_k = make_tensor_map(t.k, sh.head_dim, sh.seqlen_k, sh.kv_heads, sh.batch, T::kNBlock);
  p.tm_v = make_tensor_map(t.v, sh.head_dim, sh.seqlen_k, sh.kv_heads, sh.batch, T::kNBlock);
  p.tm_o = make_tensor_map(t.o, sh.head_dim, sh.seqlen_q, sh.heads, sh.batch, 64);
  p.lse = t.lse;
  p.batch = sh.batch;
  p.heads = sh.heads;
  p.group = sh.heads / sh.kv_heads;
  p.seqlen_q = sh.seqlen_q;
  p.seqlen_k = sh.seqlen_k;
  p.causal = sh.causal;
  p.scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
  p.scale_log2 = p.scale * 1.4426950408889634f;
  p.m_tiles = (sh.seqlen_q + T::kMBlock - 1) / T::kMBlock;
  p.num_tiles = p.m_tiles * sh.batch * sh.heads;
  p.m_tiles_div = attnsim_make_divisor(p.m_tiles);
  p.heads_div = attnsim_make_divisor(sh.heads);
  if ((sched == TileScheduler::DynamicLpt) != T::kDynamic)
    throw std::invalid_argument(std::string("kernel compiled ") + (T::kDynamic ? "for" : "without") +
                                " the dynamic tile scheduler, launched with " + tile_scheduler_name(sched));
  p.persistent = sched == TileScheduler::StaticPersistent;
  p.l2_section = static_cast<int>(std::min<long long>(  // at most one section of all (batch, head) pairs
      attnsim_l2_section_heads(T::kL2SectionMiB, sh.seqlen_k, sh.head_dim, sh.head_dim, 2, sh.heads, sh.kv_heads),
      static_cast<long long>(sh.batch) * sh.heads));
  if constexpr (T::kDynamic) p.tile_counter = tile_counter();
  set_trace_params(p, trace);
  const int grid = sched == TileScheduler::Lpt ? p.num_tiles : std::min(p.num_tiles, sm_count());
  static int ctas_per_sm = 0;  // one attribute call and occupancy query per instantiation
  if (ctas_per_sm == 0) {
    cuda_check(cudaFuncSetAttribute(fa3_forward<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes),
               "cudaFuncSetAttribute(max dynamic shared memory)");
    cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas_per_sm, fa3_forward<T>, T::kThreads, T::kSmemBytes),
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    ctas_per_sm = std::max(ctas_per_sm, 1);
  }
  // Which tiles a traced launch records (trace_sampling.h): it needs the grid and how many of its
  // CTAs run at once.
  if (trace)
    p.trace_rule = make_trace_sample_rule(static_cast<int>(trace->sample), p.num_tiles, grid, p.persistent != 0,
                                          ctas_per_sm * sm_count());
  fa3_forward<T><<<grid, T::kThreads, T::kSmemBytes, static_cast<cudaStream_t>(stream)>>>(p);
  cuda_check(cudaGetLastError(), "launching fa3_forward");
  if (info) *info = LaunchInfo{grid, T::kThreads, T::kWarps, T::kSmemBytes, p.num_tiles};
}

}  // namespace attnsim::sm90
