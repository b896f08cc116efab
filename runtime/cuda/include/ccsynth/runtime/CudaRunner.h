//===- CudaRunner.h - Running a CUDA plugin algorithm on one GPU ----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Drives one algorithm of a CUDA-backend plugin with the virtual-ranks
// transport: every rank's buffers on one GPU and all ranks as blocks of one
// launch. It allocates each rank's buffers and scratch on the device,
// seeds the inputs with the data every backend uses (RunSetup.h), launches
// through the plugin's `launch` entry (the last rank's call starts the
// kernel), times each launch with CUDA events, and compares every output
// with the reference collective.
//
// The CUDA runtime is the one CudaApi opened with dlopen; the comm comes
// from the plugin's CCSYNTH_CUDA_COMMS_ENTRY, so nothing here links CUDA.
//
// Waiting: the device bounds each of its waits by `timeoutSeconds` and
// reports the first that expired (rank, threadblock, step, flag). The host
// never blocks in the CUDA runtime while the device works: it polls the
// stream with cudaStreamQuery until a deadline of 2 x timeout + 10 s per
// launch (or copy). A launch still running past it is reported and its
// memory is left to the process's exit (cudaFree would wait for it).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/CudaApi.h"
#include "ccsynth/runtime/RunSetup.h"
#include "ccsynth/runtime/ccsynth_plugin.h"

namespace ccsynth::rt {

/// Seconds the host waits for one launch or copy to finish on the stream.
inline double cudaHostDeadlineSeconds(double timeoutSeconds) {
  return 2.0 * (timeoutSeconds > 0 ? timeoutSeconds : 30.0) + 10.0;
}

/// Runs `algo` (a CUDA-backend algorithm with the virtual-ranks transport)
/// on `device`. `timeMemcpy` adds one cudaMemcpy device-to-device of all
/// ranks' output bytes per iteration, timed the same way.
RunReport runCudaAlgorithm(const CudaApi &api, const ccsynthCudaComms &comms,
                           const ccsynthAlgorithm &algo, int device,
                           const RunOptions &options);

} // namespace ccsynth::rt
