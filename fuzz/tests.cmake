# Fuzzing in CTest (included from tests/CMakeLists.txt with ATTNSIM_SLOW_TESTS=ON). Registered when a clang that links
# -fsanitize=fuzzer,address,undefined is found (Debian: clang, libclang-rt-14-dev). fuzz.build
# configures and builds the fuzz targets in <build>/fuzz-build with scripts/fuzz.sh; each
# fuzz.<target> replays fuzz/regressions/<target>/ and fuzzes for ATTNSIM_FUZZ_SECONDS.
find_program(ATTNSIM_FUZZ_CXX NAMES clang++ clang++-14)
set(_fuzz_ok OFF)
if(ATTNSIM_FUZZ_CXX)
  set(_probe ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe)
  file(WRITE ${_probe}.cpp "#include <cstddef>\n#include <cstdint>\n"
                           "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(COMMAND ${ATTNSIM_FUZZ_CXX} -fsanitize=fuzzer,address,undefined ${_probe}.cpp -o ${_probe}
                  RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(_fuzz_ok ON)
  endif()
endif()
if(NOT _fuzz_ok)
  message(STATUS "attnsim: no clang++ that links -fsanitize=fuzzer: the fuzz tests are not registered")
  return()
endif()
set(ATTNSIM_FUZZ_SECONDS 4 CACHE STRING "Seconds each fuzz target runs in its CTest test")
set(_fuzz_sh ${PROJECT_SOURCE_DIR}/scripts/fuzz.sh --build-dir ${PROJECT_BINARY_DIR}/fuzz-build)
# At -O0: the build is most of these tests' time (11 minutes at -O1 on two cores beside the other
# tests, 2026-11-30), the fuzzing 4 s a target.
add_test(NAME fuzz.build COMMAND ${CMAKE_COMMAND} -E env ATTNSIM_FUZZ_CXX=${ATTNSIM_FUZZ_CXX} ${_fuzz_sh} --build-only --opt O0)
set_tests_properties(fuzz.build PROPERTIES FIXTURES_SETUP attnsim_fuzz TIMEOUT 1800 LABELS "fuzz;slow")
foreach(t schedule hardware problem sweep simulate)
  add_test(NAME fuzz.${t} COMMAND ${_fuzz_sh} --no-build --seconds ${ATTNSIM_FUZZ_SECONDS} ${t})
  set_tests_properties(fuzz.${t} PROPERTIES FIXTURES_REQUIRED attnsim_fuzz TIMEOUT 300 LABELS "fuzz;slow")
endforeach()
