# Runs one attnsim command and checks its exit code, its output and optionally a file it writes.
# Variables: CMD (arguments separated by |), EXPECT_RC, EXPECT_REGEX (matched against stdout+stderr), EXPECT_FILE,
# ALLOW_SKIP (exit code 77 = no GPU: pass the output on, the test reports itself skipped).
if(EXPECT_FILE)
  file(REMOVE "${EXPECT_FILE}")
endif()
string(REPLACE "|" ";" CMD "${CMD}")
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
set(all "${out}${err}")
if(ALLOW_SKIP AND "${rc}" STREQUAL "77")
  message(STATUS "${all}")  # "SKIPPED: <reason>": the test's SKIP_REGULAR_EXPRESSION reports it as skipped
  return()
endif()
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\n${all}")
endif()
if(EXPECT_REGEX AND NOT all MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}':\n${all}")
endif()
if(EXPECT_FILE AND NOT EXISTS "${EXPECT_FILE}")
  message(FATAL_ERROR "expected ${EXPECT_FILE} to be written")
endif()
message(STATUS "${all}")
