//===- PluginRun.h - Running one algorithm of a plugin and reporting it ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What `ccsynth run` does once it holds a plugin library, shared with the
// MLIR-free runner `ccsynth-run` (tools/ccsynth-run), which is all a GPU
// machine without LLVM, MLIR or Z3 needs: choose the algorithm, check that
// it was built for the backend asked for, size the run from --count or
// --size, run it on the host (ranks as threads or processes) or on one GPU
// (virtual ranks), compare every output with the reference collective and
// print nccl-tests' figures.
//
// Nothing here prints errors: the outcome carries the exit status and the
// message, and each tool reports it in its own voice.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/CudaApi.h"
#include "ccsynth/runtime/PluginLoader.h"
#include "ccsynth/runtime/RunSetup.h"

#include <cstdio>
#include <optional>
#include <string>

namespace ccsynth::rt {

struct PluginRunRequest {
  std::string algorithm;  ///< empty: the plugin's only algorithm
  bool cuda = false;      ///< virtual ranks on one GPU (else the host)
  bool processes = false; ///< host: one process per rank
  int device = 0;
  const CudaApi *cudaApi = nullptr;           ///< with `cuda`
  const CudaDeviceInfo *deviceInfo = nullptr; ///< with `cuda`, for the header
  /// Exactly one: NCCL's count, or nccl-tests' size (bytes of the larger
  /// buffer of a rank).
  std::optional<unsigned long long> count, sizeBytes;
  /// Iterations, warmup, seed, timeout, dtype, operator, memcpy baseline;
  /// its count is set from `count` / `sizeBytes`.
  RunOptions run;
  /// A custom collective's reference (in chunks) and its input chunks per
  /// rank, from the program the plugin was built from; nullopt: only
  /// built-in collectives can be checked.
  std::optional<ReferenceSpec> customReference;
};

struct PluginRunOutcome {
  enum Status { Ok, Usage, Error, WrongResult } status = Ok;
  std::string message; ///< when not Ok
};

/// Runs one algorithm of `plugin` as `req` asks, printing the run's header
/// line and, when it matched the reference, nccl-tests' figures (and the
/// memcpy comparison) to `out`.
PluginRunOutcome runPluginAlgorithm(const Plugin &plugin,
                                    const PluginRunRequest &req, FILE *out);

/// "4096", "64K", "1M", "1G" (powers of 1024) into bytes; nullopt when not
/// such a number or above 2^60.
std::optional<unsigned long long> parseByteSize(const std::string &text);

} // namespace ccsynth::rt
