// The SM clock from one thread: clock64 cycles counted over a window of %globaltimer. Shared by
// the timing harness's probe behind each timed turn (kernels/sm90/runner.cu) and the
// microbenchmark that checks it against the clock of loaded SMs (kernels/microbench
// clock_under_duty). CUDA only (nvcc).
#pragma once

#include "common/trace_recorder.cuh"  // globaltimer

namespace attnsim {

/// Spins for `window_ns` of %globaltimer and writes {clock64 cycles, ns} of the window to `out`.
/// %globaltimer steps of 32-96 ns (H100, kernels/microbench globaltimer) make a 50 us window good
/// to 0.2%.
__device__ __forceinline__ void count_clock(unsigned long long window_ns, unsigned long long* out) {
  const unsigned long long t0 = globaltimer();
  const long long c0 = clock64();
  unsigned long long t1;
  long long c1;
  do {
    t1 = globaltimer();
    c1 = clock64();
  } while (t1 - t0 < window_ns);
  out[0] = static_cast<unsigned long long>(c1 - c0);
  out[1] = t1 - t0;
}

}  // namespace attnsim
