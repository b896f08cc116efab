//===- RunSetup.h - What every backend's run of an algorithm shares -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `ccsynth run` drives one algorithm on the host (ranks as threads or as
// processes) or on a GPU (virtual ranks). The backends differ in where
// buffers live and how ranks are launched; they share the options, the
// report, the buffer sizes and their in-place placement, the seeded input
// data and the comparison with the reference collective, all here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/Reference.h"
#include "ccsynth/runtime/ccsynth_plugin.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ccsynth::rt {

struct RunOptions {
  /// NCCL's count for the collective (see ccsynthLaunchArgs).
  std::size_t count = 0;
  int dtype = ccsynthFloat32;
  int op = ccsynthSum;
  int warmup = 1;
  int iters = 5;
  std::uint64_t seed = 1;
  /// Seconds any one wait may take (the watchdog of every launch).
  double timeoutSeconds = 30;
  /// The collective's definition over units; nullopt: the built-in one of
  /// the algorithm's collective name.
  std::optional<ReferenceSpec> reference;
  /// Elements per unit; 0: `count` (built-ins: a unit is a block).
  std::size_t unitElems = 0;
  /// Also time the backend's plain copy of the same bytes in the same run
  /// (host: every rank's thread memcpy-ing its output bytes at once; CUDA:
  /// one cudaMemcpy device-to-device of all ranks' output bytes).
  bool timeMemcpy = false;
};

struct RunReport {
  bool ok = false;
  /// Set when a launch failed (refused, timed out, aborted).
  std::optional<ccsynthError> launchError;
  /// Set when an output differs from the reference.
  std::optional<Mismatch> mismatch;
  /// Setup problems (unknown collective, allocation failure, CUDA errors).
  std::string error;
  double secondsPerIter = 0;
  /// With timeMemcpy: seconds per iteration of the copy baseline, and what
  /// that baseline copied (for the report).
  double memcpySecondsPerIter = 0;
  std::string memcpyWhat;
  std::size_t inBytes = 0, outBytes = 0; ///< per rank
};

/// Sizes and placement of one run's buffers, and its seeded inputs.
struct RunSetup {
  ReferenceSpec spec;
  int ranks = 0;
  int elemSize = 0;
  std::size_t unitElems = 0;
  std::size_t inBytes = 0, outBytes = 0; ///< per rank
  /// In place, one buffer per rank holds both: the input is a block of
  /// the output (allgather, gather), the output a block of the input
  /// (reducescatter, scatter), or both are the whole buffer.
  bool inplace = false;
  /// Every rank's input as it must be before each launch.
  std::vector<std::vector<unsigned char>> inputs;

  /// In place: bytes of a rank's one buffer, and where its send and
  /// receive buffers start in it.
  std::size_t sharedBytes() const {
    return inBytes > outBytes ? inBytes : outBytes;
  }
  std::size_t sendOffset(int rank) const;
  std::size_t recvOffset(int rank) const;

  /// Compares every rank's output with the reference.
  std::optional<Mismatch>
  check(const std::vector<const unsigned char *> &outputs, int dtype,
        int op) const;
};

/// Resolves the reference, sizes the buffers and seeds every rank's input
/// (fillRandom, the same data on every backend); nullopt with `error` set
/// when the collective has no reference or the dtype is unknown.
std::optional<RunSetup> prepareRun(const ccsynthAlgorithm &algo,
                                   const RunOptions &options,
                                   std::string &error);

/// The launch arguments of rank `rank` in a run: its buffers and scratch,
/// the run's count, type, operator and wait timeout, the transport and its
/// communicator, and where a failure is recorded. CUDA runs add a stream.
ccsynthLaunchArgs launchArgsFor(const RunOptions &options,
                                const ccsynthAlgorithm &algo, int rank,
                                const void *send, void *recv, void *scratch,
                                int32_t transport, void *comm,
                                ccsynthError *error);

/// The error to report from per-rank launch results: the first rank that
/// failed on its own, else the first one that was aborted; nullopt when
/// every rank succeeded.
std::optional<ccsynthError>
firstLaunchError(const std::vector<ccsynthResult> &results,
                 const std::vector<ccsynthError> &errors);

} // namespace ccsynth::rt
