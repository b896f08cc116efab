# CCSynthMLIR.cmake: finds MLIR 19 and defines helpers for the MLIR-facing
# directories. Included from the top level only when CCSYNTH_ENABLE_MLIR is
# ON, so a build without MLIR never touches LLVM's CMake modules.
#
# LLVM's option handling (HandleLLVMOptions) changes compile flags for the
# whole directory that includes it, so it is applied per directory through
# ccsynth_mlir_directory() rather than here (BUILD-NOTES pitfall 5).

# `19` alone is rejected by MLIRConfigVersion; llvm-14 is also installed.
find_package(MLIR 19.1 REQUIRED CONFIG HINTS /usr/lib/llvm-19/lib/cmake/mlir)
message(STATUS "ccsynth: using MLIR from ${MLIR_DIR}")

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})

include(TableGen)
include(AddLLVM)
include(AddMLIR)

# Debian ships no llvm-lit binary; lit.py and FileCheck live here.
set(CCSYNTH_LIT_PY /usr/lib/llvm-19/build/utils/lit/lit.py CACHE FILEPATH
    "lit.py used to run the lit tests")
set(CCSYNTH_LLVM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR} CACHE PATH
    "Directory holding FileCheck, not and count")

# Generated headers of the ccl dialect land here.
set(CCSYNTH_MLIR_GENERATED_INCLUDE_DIR ${CMAKE_BINARY_DIR}/compiler/include)

# Applies LLVM's compile options, definitions and include paths to the
# calling directory (and its subdirectories).
macro(ccsynth_mlir_directory)
  separate_arguments(_ccsynth_llvm_defs NATIVE_COMMAND ${LLVM_DEFINITIONS})
  add_definitions(${_ccsynth_llvm_defs})
  include(HandleLLVMOptions)
  include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  include_directories(${CCSYNTH_SOURCE_DIR}/compiler/include
                      ${CCSYNTH_MLIR_GENERATED_INCLUDE_DIR})
endmacro()
