# Writes OUT (cmake -P, with -DSRC=<source root> -DOUT=<header> [-DGIT=<git>]): ATTNSIM_GIT_COMMIT,
# `git rev-parse --short=12 HEAD` of SRC with "-dirty" for uncommitted changes to tracked files,
# or "unknown" without git. Run at every build (sim/CMakeLists.txt), so attnsim --version names
# the commit it was built from; the file is rewritten only when that changes.
set(commit "unknown")
if(GIT)
  execute_process(COMMAND ${GIT} rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE c
                  RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND c)
    set(commit ${c})
    execute_process(COMMAND ${GIT} status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                    OUTPUT_VARIABLE dirty ERROR_QUIET)
    if(dirty)
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()
set(text "// Generated at build time by sim/cli/git_commit.cmake.\n#pragma once\n/// The commit attnsim was built from (\"-dirty\": with uncommitted changes), or \"unknown\".\n#define ATTNSIM_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
