//===- PluginEntry.h - The ABI descriptor of one generated algorithm ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Included at the end of a generated source when it is built as (part of)
// a plugin (-DCCSYNTH_PLUGIN). CCSYNTH_DEFINE_ALGORITHM(Algo, name) defines
// `ccsynthAlgorithm_<name>()`, returning the algorithm's descriptor for its
// byte range Algo::minBytes..maxBytes;
// CCSYNTH_DEFINE_ALGORITHM_RANGE(Algo, name, min, max) the same code under
// another name for another range (a program that serves several), and
// CCSYNTH_DEFINE_ALGORITHM_TILED(Algo, name, min, max, tile) the same with
// another tile (bytes per chunk per pass: the code does not depend on it,
// the kernels take it at launch, and the scratch it needs is the
// descriptor's; the tuned compile picks each range's tile). The
// plugin's table (PluginTable.h) lists them. The dtypes and operators built
// in are chosen with -DCCSYNTH_DTYPE_MASK / -DCCSYNTH_OP_MASK (bits as in
// ccsynth_plugin.h; default: all).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/ccsynth_plugin.h"

#ifndef CCSYNTH_DTYPE_MASK
#define CCSYNTH_DTYPE_MASK 0x3ffu
#endif
#ifndef CCSYNTH_OP_MASK
#define CCSYNTH_OP_MASK 0xfu
#endif

#if defined(__CUDACC__)
#include "ccsynth/runtime/CudaLaunch.cuh"
#define CCSYNTH_BACKEND_LAUNCH(A, TILE) ::ccsynth::rt::cudaLaunch<A, TILE>
#define CCSYNTH_BACKEND ccsynthBackendCuda
#define CCSYNTH_TRANSPORTS (CCSYNTH_CUDA_TRANSPORTS)
#define CCSYNTH_CAPTURE_SAFE 1
#else
#include "ccsynth/runtime/HostLaunch.h"
#define CCSYNTH_BACKEND_LAUNCH(A, TILE) ::ccsynth::rt::hostLaunch<A, TILE>
#define CCSYNTH_BACKEND ccsynthBackendHost
#define CCSYNTH_TRANSPORTS                                                     \
  (ccsynthTransportHostThreads | ccsynthTransportHostShm)
#define CCSYNTH_CAPTURE_SAFE 0
#endif

#define CCSYNTH_DEFINE_ALGORITHM(A, NAME)                                      \
  CCSYNTH_DEFINE_ALGORITHM_RANGE(A, NAME, A::minBytes, A::maxBytes)

#define CCSYNTH_DEFINE_ALGORITHM_RANGE(A, NAME, MIN_BYTES, MAX_BYTES)          \
  CCSYNTH_DEFINE_ALGORITHM_TILED(A, NAME, MIN_BYTES, MAX_BYTES, A::tileBytes)

#define CCSYNTH_DEFINE_ALGORITHM_TILED(A, NAME, MIN_BYTES, MAX_BYTES, TILE)    \
  static_assert((TILE) >= 16 && (TILE) % 16 == 0,                              \
                "a tile is a positive multiple of 16 bytes");                  \
  extern "C" const ccsynthAlgorithm *ccsynthAlgorithm_##NAME(void) {           \
    static const ccsynthAlgorithm desc = {                                     \
        sizeof(ccsynthAlgorithm),                                              \
        #NAME,                                                                 \
        A::shape.collective,                                                   \
        A::shape.ranks,                                                        \
        A::shape.root,                                                         \
        A::shape.inplace ? 1 : 0,                                              \
        (MIN_BYTES),                                                           \
        (MAX_BYTES),                                                           \
        (CCSYNTH_DTYPE_MASK),                                                  \
        A::shape.reduces ? (CCSYNTH_OP_MASK) : 0u,                             \
        ::ccsynth::rt::scratchBytes(A::shape, (TILE)),                         \
        (uint64_t)A::shape.countMultiple,                                      \
        CCSYNTH_BACKEND,                                                       \
        CCSYNTH_TRANSPORTS,                                                    \
        CCSYNTH_CAPTURE_SAFE,                                                  \
        A::shape.maxTbs,                                                       \
        A::shape.maxSteps,                                                     \
        (uint32_t)::ccsynth::rt::flagWords(A::shape),                          \
        ::ccsynth::rt::switchReadsInputOf<A>() ? 1 : 0,                        \
        A::shape.irHash,                                                       \
        CCSYNTH_BACKEND_LAUNCH(A, (TILE))};                                    \
    return &desc;                                                              \
  }
