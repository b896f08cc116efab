# CUDA for the device backend: its compile checks, GPU test and benchmark.
# nvcc is looked for on PATH and under /usr/local/cuda/bin (or $CUDA_PATH,
# $CUDA_HOME); building needs no GPU. Sets CCSYNTH_HAVE_CUDA.
set(CCSYNTH_HAVE_CUDA OFF)
if(NOT CMAKE_CUDA_COMPILER)
  find_program(CCSYNTH_NVCC nvcc
    HINTS ENV CUDA_PATH ENV CUDA_HOME /usr/local/cuda
    PATH_SUFFIXES bin)
  if(CCSYNTH_NVCC)
    set(CMAKE_CUDA_COMPILER ${CCSYNTH_NVCC})
  endif()
endif()
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "ccsynth: nvcc not found; the CUDA backend's tests are off")
  return()
endif()

# No GPU to ask for `native`: build for A100 and H100 unless told.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 80 90)
endif()
# CMake < 3.25.2 does not know nvcc's C++20 flag (BUILD-NOTES pitfall 9).
if(CMAKE_VERSION VERSION_LESS 3.25.2)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION -std=c++20)
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION -std=c++20)
endif()
enable_language(CUDA)
if(CMAKE_VERSION VERSION_LESS 3.25.2)
  list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
find_package(CUDAToolkit REQUIRED)
set(CCSYNTH_HAVE_CUDA ON)

# Architectures the GPU test and benchmark are built for (H100 by default:
# the generated kernels are large, and each architecture is a full build).
set(CCSYNTH_CUDA_RUN_ARCHS 90 CACHE STRING
    "CUDA architectures of the GPU test and benchmark")

# ccsynth_generate_cuda(<out-var> <name> <baseline kind> <collective> <topo>)
# writes <name>.cu at build time with the freshly built ccsynth.
function(ccsynth_generate_cuda out name kind collective topo)
  set(json ${CMAKE_CURRENT_BINARY_DIR}/${name}.json)
  set(cu ${CMAKE_CURRENT_BINARY_DIR}/${name}.cu)
  add_custom_command(OUTPUT ${cu}
    COMMAND ccsynth baseline ${kind} -c ${collective} -t ${topo} -o ${json}
    COMMAND ccsynth compile ${json} --target cuda --name ${name} -o ${cu}
    DEPENDS ccsynth
    COMMENT "Generating the CUDA algorithm ${name} (${kind} ${collective} on ${topo})"
    VERBATIM)
  set(${out} ${cu} PARENT_SCOPE)
endfunction()
