// The TMA descriptor of a Q, K, V or O tensor, for every kernel family that loads with TMA
// (kernels/sm90, kernels/blackflash) and the microbenchmarks that run their load code. Host code.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace attnsim {

/// 4D bf16 tensor map over (head_dim, seqlen, heads, batch) with head_dim contiguous, box of 64
/// columns x box_rows rows, 128B swizzle (a 64-column bf16 row is one 128-byte swizzle row), zero
/// fill out of bounds (rows past seqlen load as 0; a TMA store clips them). The encoder comes from
/// the driver at run time (no link against libcuda). Throws std::runtime_error when the driver
/// lacks it or refuses the map.
inline CUtensorMap make_tensor_map(const void* base, int head_dim, int seqlen, int heads, int batch, int box_rows) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (!encode) {
    cudaDriverEntryPointQueryResult q{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode),
                                                           12000, cudaEnableDefault, &q);
    if (e != cudaSuccess)
      throw std::runtime_error(std::string("cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled): ") +
                               cudaGetErrorString(e));
    if (q != cudaDriverEntryPointSuccess || !encode) throw std::runtime_error("cuTensorMapEncodeTiled not found");
  }
  CUtensorMap m{};
  const cuuint64_t row = static_cast<cuuint64_t>(heads) * head_dim * 2;  // bytes between sequence positions
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(head_dim), static_cast<cuuint64_t>(seqlen),
                              static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[3] = {row, static_cast<cuuint64_t>(head_dim) * 2, row * seqlen};
  const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(box_rows), 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(base), dims, strides, box,
                            elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled failed: error " + std::to_string(r));
  return m;
}

}  // namespace attnsim
