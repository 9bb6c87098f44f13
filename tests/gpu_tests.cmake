# GPU microbenchmark tests (kernels/microbench). They need the attnsim_microbench target, which
# exists only where CMake found a CUDA compiler.
#
# gpu.microbench_smoke runs every benchmark briefly (--quick) and validates the JSON files. On a
# machine without a GPU the program prints "SKIPPED: no CUDA GPU on this machine" and exits 77,
# which ctest reports as skipped.
# gpu.microbench_results_valid validates the committed H100 results (a benchmark run so far only on
# an H200, the same SM, from configs/measured/h200); it needs no GPU.
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
  add_test(NAME gpu.microbench_results_valid COMMAND attnsim_microbench check ${_mb_committed}
                                                    ${PROJECT_SOURCE_DIR}/configs/measured/h200)
  # `check` fails on a benchmark no folder has, and takes what a folder lacks from the next one.
  set(_mb_empty ${CMAKE_CURRENT_BINARY_DIR}/microbench_empty)
  file(MAKE_DIRECTORY ${_mb_empty})
  add_test(NAME gpu.microbench_results_missing COMMAND attnsim_microbench check ${_mb_empty})
  set_tests_properties(gpu.microbench_results_missing PROPERTIES PASS_REGULAR_EXPRESSION "mufu_ex2.json: missing")
  add_test(NAME gpu.microbench_results_fallback COMMAND attnsim_microbench check ${_mb_empty} ${_mb_committed}
                                                       ${PROJECT_SOURCE_DIR}/configs/measured/h200)
endif()

# gpu.kernel_correctness: every compiled SM90 kernel (kernels/sm90) x causal/non-causal x ragged
# shapes against a reference. Skipped (exit 77, with the reason) without an H100/H200.
if(TARGET attnsim_sm90)
  add_executable(attnsim_kernel_tests ${CMAKE_CURRENT_SOURCE_DIR}/gpu/kernel_correctness.cpp)
  target_link_libraries(attnsim_kernel_tests PRIVATE attnsim_sm90)
  set_target_properties(attnsim_kernel_tests PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
  add_test(NAME gpu.kernel_correctness COMMAND attnsim_kernel_tests)
  set_tests_properties(gpu.kernel_correctness PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
  # gpu.kernel_timing: time_kernels (several kernels of one problem timed together, in turns),
  # the timing `validate` uses. Skipped (exit 77, with the reason) without an H100/H200.
  add_executable(attnsim_kernel_timing_tests ${CMAKE_CURRENT_SOURCE_DIR}/gpu/kernel_timing.cpp)
  target_link_libraries(attnsim_kernel_timing_tests PRIVATE attnsim_sm90)
  set_target_properties(attnsim_kernel_timing_tests PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
  add_test(NAME gpu.kernel_timing COMMAND attnsim_kernel_timing_tests)
  set_tests_properties(gpu.kernel_timing PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  # gpu.trace_sampling: which tiles a traced SM90 kernel records under --trace-sample, static and
  # dynamic scheduler. Skipped (exit 77, with the reason) without an H100/H200.
  add_executable(attnsim_trace_sampling_tests ${CMAKE_CURRENT_SOURCE_DIR}/gpu/trace_sampling.cpp)
  target_link_libraries(attnsim_trace_sampling_tests PRIVATE attnsim_sm90)
  set_target_properties(attnsim_trace_sampling_tests PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
  add_test(NAME gpu.trace_sampling COMMAND attnsim_trace_sampling_tests)
  set_tests_properties(gpu.trace_sampling PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()

# gpu.softmax_math: FA4's emulated exp2 (kernels/common/softmax_math.h) on the GPU against the
# host and exp2 in double. Skipped (exit 77) without an H100/H200.
add_executable(attnsim_softmax_math_gpu ${CMAKE_CURRENT_SOURCE_DIR}/gpu/softmax_math_gpu.cu)
target_include_directories(attnsim_softmax_math_gpu PRIVATE ${PROJECT_SOURCE_DIR}/kernels)
# The directory's GCC warning flags would reach nvcc as they are (kernels/CMakeLists.txt wraps them).
set_property(TARGET attnsim_softmax_math_gpu PROPERTY COMPILE_OPTIONS "")
set_target_properties(attnsim_softmax_math_gpu PROPERTIES CUDA_ARCHITECTURES OFF RUNTIME_OUTPUT_DIRECTORY
                                                                                 ${PROJECT_BINARY_DIR})
target_compile_options(attnsim_softmax_math_gpu PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_90a,code=sm_90a>)
add_test(NAME gpu.softmax_math COMMAND attnsim_softmax_math_gpu)
set_tests_properties(gpu.softmax_math PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)

# SM100 (kernels/sm100) checks that need no SM100 GPU.
# gpu.sm100_resources: every SM100 instance's ptxas registers, setmaxnreg budgets (from its PTX),
# static and dynamic SMEM and TMEM columns against the simulator's resolved schedule; runs on any
# machine (it reads the build's ptxas reports), exits 77 when the build has no SM100 instances.
if(TARGET attnsim_sm90)
  add_executable(attnsim_sm100_resources ${CMAKE_CURRENT_SOURCE_DIR}/gpu/sm100_resources.cpp)
  target_link_libraries(attnsim_sm100_resources PRIVATE attnsim_lib attnsim_sm90)
  set_target_properties(attnsim_sm100_resources PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
  add_test(NAME gpu.sm100_resources
           COMMAND attnsim_sm100_resources ${PROJECT_SOURCE_DIR} ${ATTNSIM_SM100_GENERATED}
                   ${PROJECT_BINARY_DIR}/kernels/sm90/CMakeFiles/attnsim_sm90.dir)
  set_tests_properties(gpu.sm100_resources PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()

# gpu.sm100_portable: the SM100 kernel's parts that are not Blackwell-specific (conditional rescale,
# tile scheduler; kernels/sm100/online_softmax.h, tile_scheduler.h) on whatever GPU is at hand
# (built for sm_90a and sm_100a), against always rescaling and the simulator's grid plan. Skipped
# (exit 77) without an H100/H200/B200.
add_executable(attnsim_sm100_portable_gpu ${CMAKE_CURRENT_SOURCE_DIR}/gpu/sm100_portable_gpu.cu)
target_link_libraries(attnsim_sm100_portable_gpu PRIVATE attnsim_lib)
set_property(TARGET attnsim_sm100_portable_gpu PROPERTY COMPILE_OPTIONS "")
set_target_properties(attnsim_sm100_portable_gpu PROPERTIES CUDA_ARCHITECTURES OFF RUNTIME_OUTPUT_DIRECTORY
                                                                                   ${PROJECT_BINARY_DIR})
target_compile_options(attnsim_sm100_portable_gpu PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_90a,code=sm_90a>
  $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_100a,code=sm_100a>)
add_test(NAME gpu.sm100_portable COMMAND attnsim_sm100_portable_gpu)
set_tests_properties(gpu.sm100_portable PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
