# GPU microbenchmark tests (kernels/microbench). They need the attnsim_microbench target, which
# exists only where CMake found a CUDA compiler.
#
# gpu.microbench_smoke runs every benchmark briefly (--quick) and validates the JSON files. On a
# machine without a GPU the program prints "SKIPPED: no CUDA GPU on this machine" and exits 77,
# which ctest reports as skipped.
# gpu.microbench_results_valid validates the committed H100 results; it needs no GPU.
if(NOT TARGET attnsim_microbench)
  message(STATUS "attnsim: attnsim_microbench not built (no CUDA compiler); GPU tests not added")
  return()
endif()

set(_mb_out ${CMAKE_CURRENT_BINARY_DIR}/microbench_smoke)
# sh keeps the first command's exit code (77 included) when it fails: `a && b`.
add_test(NAME gpu.microbench_smoke
         COMMAND sh -c "rm -rf \"$1\" && \"$0\" all --quick --out \"$1\" && \"$0\" check \"$1\""
                 $<TARGET_FILE:attnsim_microbench> ${_mb_out})
set_tests_properties(gpu.microbench_smoke PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)

set(_mb_committed ${PROJECT_SOURCE_DIR}/configs/measured/h100_sxm)
if(EXISTS ${_mb_committed})
  add_test(NAME gpu.microbench_results_valid COMMAND attnsim_microbench check ${_mb_committed})
endif()
