# CUDA detection for the whole project. The kernels (kernels/microbench, kernels/sm90) are built
# whenever a CUDA compiler is found; no GPU is needed to build them, only to run them. Without
# nvcc, attnsim still builds: `run` and `validate` then say that they need a CUDA build.
# Sets ATTNSIM_HAVE_CUDA. enable_language(CUDA) lives here, at the top, because the attnsim
# executable links the CUDA kernels library.
include(CheckLanguage)
option(ATTNSIM_CUDA "Build the CUDA kernels when a CUDA compiler is found (OFF: simulator only, for fast local builds)" ON)
set(ATTNSIM_HAVE_CUDA OFF)
if(NOT ATTNSIM_CUDA)
  message(STATUS "attnsim: ATTNSIM_CUDA=OFF; the kernels are not built")
  return()
endif()
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  # nvcc is often installed outside PATH; this is where the CUDA packages put it.
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
endif()
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "attnsim: no CUDA compiler found; the kernels are not built")
  return()
endif()
# The architectures come from explicit -gencode flags per target, not from CMake's list.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES OFF)
endif()
# Release builds compile the host code of the .cu files at -O1: nvcc's -O is the host compiler's
# level only (ptxas optimizes device code at -O3 either way; the sm_90a cubin of
# kernels/microbench/latency.cu is byte-identical at -O3 and -O1), the host side of these files
# launches kernels and writes JSON, and -O1 takes about 14% off each nvcc run (latency.cu for
# sm_90a and sm_100a: 25.3 -> 21.8 s, 2026-12-01). The CPU reference of the GPU tests is C++.
if(NOT DEFINED CMAKE_CUDA_FLAGS_RELEASE)
  set(CMAKE_CUDA_FLAGS_RELEASE "-O1 -DNDEBUG" CACHE STRING
      "nvcc flags of Release builds (host code at -O1; device code is optimized by ptxas regardless)")
endif()
enable_language(CUDA)
set(ATTNSIM_HAVE_CUDA ON)

# C++20 if nvcc supports it (>= 12), else C++17. CMake 3.25 does not know nvcc's C++20 flag,
# so it is taught here; without that CMake would fall back to CXX_STANDARD 20 for CUDA and
# refuse to generate.
if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
  if(NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
  endif()
  set(CMAKE_CUDA_STANDARD 20)
else()
  set(CMAKE_CUDA_STANDARD 17)
endif()
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_EXTENSIONS OFF)
find_package(CUDAToolkit REQUIRED)
