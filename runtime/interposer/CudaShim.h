//===- CudaShim.h - The CUDA driver calls of the interposer ---------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Interposer-private: buffer kinds, graph capture, staging copies on the
// caller's stream and the events that order launches, through the CUDA
// driver the application already loaded (CudaShim.cpp); without one,
// every buffer is host memory and nothing is captured. See
// docs/runtime.md, "The NCCL-API interposer".
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nccl.h> // and CUDA's runtime header, for cudaStream_t

#include <cstddef>

namespace ccsynth::interposer::detail {

/// `s` is being captured into a CUDA graph.
bool capturing(cudaStream_t s);

/// `p` is device (or managed) memory.
bool deviceMemory(const void *p);

/// The device ordinal of `p`, or -1.
int deviceOf(const void *p);

/// Queues a copy of `bytes` from `src` to `dst` (device memory) on `stream`;
/// true at once when there is nothing to copy.
bool copyAsync(void *dst, const void *src, std::size_t bytes,
               cudaStream_t stream);

/// An event for ordering launches (no timing), or null.
void *createOrderEvent();

/// `stream` waits for what `event` last recorded (at replay, when the
/// stream is being captured).
bool waitOrderEvent(void *event, cudaStream_t stream, bool captured);

/// Records `event` on `stream` (at replay, when it is being captured).
bool recordOrderEvent(void *event, cudaStream_t stream, bool captured);

/// Waits until what `event` last recorded has run (the last launch's
/// copy-out included), for at most `seconds`; false at the deadline or on
/// an error (CUDA_ERROR_NOT_READY, 600, is "still running").
bool awaitOrderEvent(void *event, double seconds);

/// Destroys `event` (when there is one) and clears it.
void destroyOrderEvent(void *&event);

} // namespace ccsynth::interposer::detail
