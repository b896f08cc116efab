//===- GpuTest.h - Checks of the single-process GPU tests -----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// EXPECT counts a failed check and goes on; CUDA_OK ends the test (exit 1)
// at a failed CUDA call. Both print file:line and what failed. A test
// returns 1 when ccsynth::gputest::failures is not 0, and 77 (skipped) when
// noCudaDevice().
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace ccsynth::gputest {
inline int failures = 0;

/// True, after saying why, when no CUDA device can be used: the test then
/// returns 77 (CTest's SKIP_RETURN_CODE).
inline bool noCudaDevice() {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e == cudaSuccess && devices > 0)
    return false;
  std::printf("skipped: no CUDA device (%s)\n",
              e != cudaSuccess ? cudaGetErrorString(e) : "none found");
  return true;
}
} // namespace ccsynth::gputest

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::printf("FAIL %s:%d: ", __FILE__, __LINE__);                         \
      std::printf(__VA_ARGS__);                                                \
      std::printf("\n");                                                       \
      ++ccsynth::gputest::failures;                                            \
    }                                                                          \
  } while (0)

#define CUDA_OK(expr)                                                          \
  do {                                                                         \
    cudaError_t e_ = (expr);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr,           \
                  cudaGetErrorString(e_));                                     \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)
