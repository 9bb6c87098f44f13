// The TMA descriptor of a Q, K, V or O tensor, for every kernel family that loads with TMA
// (kernels/sm90, kernels/blackflash). Host code (cuda.h only).
#pragma once

#include <cuda.h>

namespace attnsim {

/// 4D bf16 tensor map over (head_dim, seqlen, heads, batch) with head_dim contiguous, box of 64
/// columns x box_rows rows, 128B swizzle (a 64-column bf16 row is one 128-byte swizzle row), zero
/// fill out of bounds (rows past seqlen load as 0; a TMA store clips them). Throws
/// std::runtime_error when the driver refuses it. Defined in kernels/sm90/runner.cu.
CUtensorMap make_tensor_map(const void* base, int head_dim, int seqlen, int heads, int batch, int box_rows);

}  // namespace attnsim
