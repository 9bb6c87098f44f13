// The failure count and check of the GPU test programs (plain executables ctest runs: exit 0 when
// every check held, 1 when one failed, 77 when skipped, with the reason).
#pragma once

#include <cstdio>
#include <string>

namespace attnsim::gpu_test {

/// Checks failed so far.
inline int failures = 0;

/// Counts a failed check and prints `what` (what was expected) after "FAIL: ".
inline void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

}  // namespace attnsim::gpu_test
