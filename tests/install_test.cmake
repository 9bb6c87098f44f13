# `cmake --install` into a fresh temporary prefix, then the installed attnsim run from outside the
# source tree with ATTNSIM_ROOT unset: it must find configs/ and schedules/ in <prefix>/share/attnsim
# by its own location. A hardware config that exists only in the installed tree proves that it
# does not fall back to the source tree compiled in.
# Variables: BUILD_DIR (the build to install), WORK_DIR (scratch; emptied first).
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
file(MAKE_DIRECTORY "${WORK_DIR}/elsewhere")

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY "${WORK_DIR}/elsewhere" TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: exit ${rc}\n${out}${err}")
  endif()
  set(step_out "${out}${err}" PARENT_SCOPE)
endfunction()

run_step("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f bin/attnsim share/attnsim/schedules/fa4_sm100.json share/attnsim/configs/hw/b200.json
          share/attnsim/configs/problems/default.json share/attnsim/configs/sweeps/fa4_b200.json)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()
file(COPY_FILE "${prefix}/share/attnsim/configs/hw/b200.json" "${prefix}/share/attnsim/configs/hw/installed_only.json")

set(env ${CMAKE_COMMAND} -E env --unset=ATTNSIM_ROOT)
run_step("attnsim --version" ${env} "${prefix}/bin/attnsim" --version)
if(NOT step_out MATCHES "configs and schedules: [^\n]*/prefix/share/attnsim \\(installed\\)")
  message(FATAL_ERROR "the installed attnsim does not read its installed data:\n${step_out}")
endif()
run_step("attnsim simulate (installed)" ${env} "${prefix}/bin/attnsim" simulate
         "${prefix}/share/attnsim/schedules/fa4_sm100.json" --hw installed_only --seqlen 1024 --no-timeline)
if(NOT step_out MATCHES "attnsim: fa4_sm100 on B200.*predicted time +[0-9.]+ us")
  message(FATAL_ERROR "unexpected simulate output:\n${step_out}")
endif()
message(STATUS "${step_out}")
