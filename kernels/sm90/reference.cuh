// Reference attention for checking the kernels: every row in double precision on the CPU for
// small problems, sampled rows on a simple fp32 GPU kernel (one block per row) for large ones.
#pragma once

#include "fa3_api.h"

namespace attnsim::sm90 {

/// Compares prob's O and LSE (as the kernel left them) with the reference; see check_kernel.
CheckResult compare_with_reference(DeviceProblem& prob, int sample_rows);

}  // namespace attnsim::sm90
