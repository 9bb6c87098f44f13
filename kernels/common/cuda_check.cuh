// Turning CUDA runtime errors into exceptions, for the host code of every kernel family.
#pragma once

#include <cuda_runtime.h>

namespace attnsim {

/// Throws std::runtime_error naming `what` when `e` is an error (defined in kernels/sm90/runner.cu).
void cuda_check(cudaError_t e, const char* what);

}  // namespace attnsim
