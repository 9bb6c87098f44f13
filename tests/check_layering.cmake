# Checks that the folders of sim/ and of kernels/ include one another in one direction only
# (cmake -P, with -DSIM=<path to sim/> -DKERNELS=<path to kernels/>): a file may include headers of
# its own folder and of lower layers; sim/ may also include kernels/ headers (common/ and the
# families' plain-C++ headers shared with the kernels), which sit below all of sim/. Exits with an
# error listing every include that goes up or sideways.
cmake_minimum_required(VERSION 3.20)
set(_rank_model 0)
set(_rank_core 1)
set(_rank_plan 2)
set(_rank_lower 3)
set(_rank_driver 4)
set(_rank_report 5)
set(_rank_explain 6)
set(_rank_explore 6)
set(_rank_calibrate 6)
set(_rank_measure 6)
set(_rank_cli 7)
set(_rank_tools 7)
set(_shared common sm90 fa2 sm100 blackflash)  # kernels/ headers (common, each family's plain-C++ ones): below every layer

# Appends to _bad the includes of the files under `dir` that go against the layer ranks _rank_<prefix><folder>;
# folders listed in `shared` may be included from anywhere.
function(check_tree dir prefix shared)
  file(GLOB_RECURSE files RELATIVE ${dir} ${dir}/*.cpp ${dir}/*.hpp ${dir}/*.h ${dir}/*.cuh ${dir}/*.cu)
  set(bad ${_bad})
  foreach(f ${files})
    string(REGEX MATCH "^[^/]+" from "${f}")
    if(NOT DEFINED _rank_${prefix}${from})
      list(APPEND bad "${f}: folder ${from} has no layer in tests/check_layering.cmake")
      continue()
    endif()
    file(STRINGS ${dir}/${f} incs REGEX "^#include \"[^\"/]+/")
    foreach(line ${incs})
      string(REGEX REPLACE "^#include \"([^\"/]+)/.*" "\\1" to "${line}")
      if(to STREQUAL from OR (to IN_LIST shared AND NOT DEFINED _rank_${prefix}${to}))
        continue()
      endif()
      if(NOT DEFINED _rank_${prefix}${to})
        list(APPEND bad "${f}: includes ${to}/, which is not a layer")
      elseif(NOT _rank_${prefix}${to} LESS _rank_${prefix}${from})
        list(APPEND bad "${f}: ${from}/ (layer ${_rank_${prefix}${from}}) includes ${to}/ (layer ${_rank_${prefix}${to}})")
      endif()
    endforeach()
  endforeach()
  list(LENGTH files n)
  math(EXPR total "${_files_checked} + ${n}")
  set(_files_checked ${total} PARENT_SCOPE)
  set(_bad ${bad} PARENT_SCOPE)
endfunction()

# kernels/: common below the families; the SM90 folder holds the kernel registry, which spans
# families; the microbenchmarks sit on top, since some time the kernels' own code (softmax_block
# runs sm90/softmax.cuh).
set(_rank_k_common 0)
set(_rank_k_fa2 1)
set(_rank_k_blackflash 1)
set(_rank_k_sm100 1)
set(_rank_k_sm90 2)
set(_rank_k_microbench 3)

set(_bad "")
set(_files_checked 0)
check_tree(${SIM} "" "${_shared}")
if(KERNELS)
  check_tree(${KERNELS} "k_" "")
endif()
if(_bad)
  list(JOIN _bad "\n  " _msg)
  message(FATAL_ERROR "includes against the layering:\n  ${_msg}")
endif()
message(STATUS "layering: ${_files_checked} files of sim/ and kernels/ include only their own folder and lower layers")
