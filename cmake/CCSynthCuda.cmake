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

# Generated CUDA sources of the GPU tests, the GPU benchmark and the GPU
# check (scripts/gpu-check.sh) are made once per build, in gpu-sources/ of
# the build tree, and shared by every target that uses them.
#
#   ccsynth_cuda_source(<name> [DELETE_FIRST <text>] <ccsynth args>...)
#
# runs `ccsynth <args> -o <name>.json` (any command writing a schedule:
# baseline, synth, check of a .ccl) and `ccsynth compile <name>.json
# --target cuda --name <name> -o <name>.cu`; DELETE_FIRST then deletes the
# first line holding <text> (a broken program, for watchdog checks). In a
# runtime-only build (no compiler) the source is taken from
# ${CCSYNTH_PREPARED_DIR}/cu/<name>.cu instead, as `scripts/gpu-check.sh
# prepare` wrote it from the same recipe. The target
# ccsynth-gpu-sources (not built by default) makes every one of them.
#
#   ccsynth_use_cuda_sources(<target> <name>...)
#
# adds those sources to <target>.
set(CCSYNTH_GPU_SOURCES_DIR ${CMAKE_BINARY_DIR}/gpu-sources)
if(NOT CCSYNTH_RUNTIME_ONLY AND NOT TARGET ccsynth-gpu-sources)
  add_custom_target(ccsynth-gpu-sources)
endif()

function(ccsynth_cuda_source name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DELETE_FIRST" "")
  get_property(known GLOBAL PROPERTY CCSYNTH_SOURCE_${name} SET)
  if(known)
    message(FATAL_ERROR "ccsynth_cuda_source: '${name}' is defined twice")
  endif()
  if(CCSYNTH_RUNTIME_ONLY)
    set(cu ${CCSYNTH_PREPARED_DIR}/cu/${name}.cu)
    if(NOT CCSYNTH_PREPARED_DIR OR NOT EXISTS ${cu})
      message(FATAL_ERROR
        "${name}.cu is not in CCSYNTH_PREPARED_DIR ('${CCSYNTH_PREPARED_DIR}'):"
        " run `scripts/gpu-check.sh prepare` where ccsynth's compiler is"
        " built and bring the folder it writes")
    endif()
    set_property(GLOBAL PROPERTY CCSYNTH_SOURCE_${name} ${cu})
    return()
  endif()
  set(json ${CCSYNTH_GPU_SOURCES_DIR}/${name}.json)
  set(cu ${CCSYNTH_GPU_SOURCES_DIR}/${name}.cu)
  set(mutate)
  if(arg_DELETE_FIRST)
    set(mutate COMMAND ${CMAKE_COMMAND} -DFILE=${cu}
      -DTEXT=${arg_DELETE_FIRST}
      -P ${CCSYNTH_SOURCE_DIR}/cmake/DeleteFirstLine.cmake)
  endif()
  add_custom_command(OUTPUT ${cu}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CCSYNTH_GPU_SOURCES_DIR}
    COMMAND ccsynth ${arg_UNPARSED_ARGUMENTS} -o ${json}
    COMMAND ccsynth compile ${json} --target cuda --no-tune --name ${name} -o ${cu}
    ${mutate}
    BYPRODUCTS ${json}
    DEPENDS ccsynth ${CCSYNTH_SOURCE_DIR}/cmake/DeleteFirstLine.cmake
    COMMENT "Generating the CUDA algorithm ${name} (ccsynth ${arg_UNPARSED_ARGUMENTS})"
    VERBATIM)
  add_custom_target(ccsynth-gen-${name} DEPENDS ${cu})
  add_dependencies(ccsynth-gpu-sources ccsynth-gen-${name})
  set_property(GLOBAL PROPERTY CCSYNTH_SOURCE_${name} ${cu})
endfunction()

function(ccsynth_use_cuda_sources target)
  foreach(name ${ARGN})
    get_property(cu GLOBAL PROPERTY CCSYNTH_SOURCE_${name})
    if(NOT cu)
      message(FATAL_ERROR "ccsynth_use_cuda_sources: no source '${name}'")
    endif()
    target_sources(${target} PRIVATE ${cu})
    if(TARGET ccsynth-gen-${name})
      set_source_files_properties(${cu}
        TARGET_DIRECTORY ${target} PROPERTIES GENERATED ON)
      add_dependencies(${target} ccsynth-gen-${name})
    endif()
  endforeach()
endfunction()

# ccsynth_cuda_plugin(<target> <name> <dtype mask> <op mask>): a plugin
# library lib<name>.so holding the one algorithm <name> (a source of
# ccsynth_cuda_source), built as `ccsynth compile --target plugin --backend
# cuda` builds one (the CUDA runtime linked statically, only the table
# exported), for the virtual-ranks transport.
function(ccsynth_cuda_plugin target name dtypes ops)
  set(table ${CMAKE_CURRENT_BINARY_DIR}/${target}-table.cu)
  file(CONFIGURE OUTPUT ${table} CONTENT
"// The algorithm table of this plugin.
#include \"ccsynth/runtime/PluginTable.h\"
CCSYNTH_DECLARE_ALGORITHM(${name})
CCSYNTH_PLUGIN_TABLE(ccsynthAlgorithm_${name})
")
  add_library(${target} MODULE ${table})
  ccsynth_use_cuda_sources(${target} ${name})
  target_include_directories(${target} PRIVATE ${CCSYNTH_RUNTIME_INCLUDE_DIRS})
  target_compile_definitions(${target} PRIVATE CCSYNTH_PLUGIN
    CCSYNTH_VERSION_STRING="${PROJECT_VERSION}"
    CCSYNTH_DTYPE_MASK=${dtypes}u CCSYNTH_OP_MASK=${ops}u
    CCSYNTH_WITH_NCCL=0)
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${name}
    CUDA_ARCHITECTURES "${CCSYNTH_CUDA_RUN_ARCHS}"
    CUDA_RUNTIME_LIBRARY Static
    CUDA_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/plugins)
endfunction()
