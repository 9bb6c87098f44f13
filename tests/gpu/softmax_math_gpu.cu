// attnsim_softmax_math_gpu: FA4's softmax arithmetic (kernels/common/softmax_math.h) on the GPU,
// where the SM100 kernel will run it: the emulated exp2 over the softmax input range, on device,
// against the host's result of the same function (bit for bit: both use one fused multiply-add
// per Horner step) and against exp2 in double (max relative error in fp32 and after rounding to
// bf16). Exits 0 when they agree, 1 otherwise, 77 (ctest: skipped) without a GPU.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/softmax_math.h"

namespace {

__global__ void emulate(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = attnsim::exp2_emulated(x[i]);
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA GPU on this machine\n");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  if (prop.major != 9) {
    std::printf("SKIPPED: %s is sm_%d%d; this test is built for sm_90a\n", prop.name, prop.major, prop.minor);
    return 77;
  }
  // Every float in [-8, 0] on a 2^-22 grid, then [-126, -8] on a coarser one.
  std::vector<float> x;
  for (int i = 0; i <= (1 << 22); ++i) x.push_back(-8.0f * static_cast<float>(i) / (1 << 22));
  for (int i = 0; i <= (1 << 20); ++i) x.push_back(-8.0f - 118.0f * static_cast<float>(i) / (1 << 20));
  const int n = static_cast<int>(x.size());
  float *dx = nullptr, *dy = nullptr;
  cudaMalloc(&dx, n * sizeof(float));
  cudaMalloc(&dy, n * sizeof(float));
  cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  emulate<<<1024, 256>>>(dx, dy, n);
  std::vector<float> y(n);
  if (cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
    std::printf("FAIL: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  long long mismatches = 0;
  double worst = 0, worst_bf16 = 0;
  for (int i = 0; i < n; ++i) {
    if (y[i] != attnsim::exp2_emulated(x[i])) ++mismatches;
    const double exact = std::exp2(static_cast<double>(x[i]));
    worst = std::max(worst, std::abs(y[i] - exact) / exact);
    worst_bf16 = std::max(worst_bf16, std::abs(attnsim::round_to_bf16(y[i]) - exact) / exact);
  }
  std::printf("GPU %s: %d inputs in [-126, 0]; device vs host exp2_emulated: %lld differ; max relative error %.4g "
              "(fp32), %.4g (bf16)\n",
              prop.name, n, mismatches, worst, worst_bf16);
  return mismatches == 0 && worst < 9e-5 && worst_bf16 <= std::ldexp(1.0, -8) * 1.01 ? 0 : 1;
}
