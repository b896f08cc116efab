//===- HostRunner.h - Running a host plugin algorithm on the host ---------===//
//
// Drives one algorithm of a host-backend plugin the way an NCCL job would,
// every rank a thread of this process or a process of its own: allocates
// each rank's buffers and scratch, fills the inputs with seeded random
// data, launches all ranks for the warm-up and the timed iterations, and
// checks the outputs against the reference collective (Reference.h).
// Shared by `ccsynth run` and the tests (also under ThreadSanitizer).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/Reference.h"
#include "ccsynth/runtime/ccsynth_plugin.h"

#include <cstdint>
#include <optional>
#include <string>

namespace ccsynth::rt {

struct HostRunOptions {
  /// NCCL's count for the collective (see ccsynthLaunchArgs).
  std::size_t count = 0;
  int dtype = ccsynthFloat32;
  int op = ccsynthSum;
  int warmup = 1;
  int iters = 5;
  std::uint64_t seed = 1;
  double timeoutSeconds = 30;
  /// The collective's definition over units; nullopt: the built-in one of
  /// the algorithm's collective name.
  std::optional<ReferenceSpec> reference;
  /// Elements per unit; 0: `count` (built-ins: a unit is a block).
  std::size_t unitElems = 0;
  /// Also time every rank's thread copying its output bytes with memcpy at
  /// once (the baseline of the host benchmark).
  bool timeMemcpy = false;
};

struct HostRunReport {
  bool ok = false;
  /// Set when a launch failed (refused, timed out, aborted).
  std::optional<ccsynthError> launchError;
  /// Set when an output differs from the reference.
  std::optional<Mismatch> mismatch;
  /// Setup problems (unknown collective, allocation failure).
  std::string error;
  double secondsPerIter = 0;
  /// With timeMemcpy: seconds per iteration of the memcpy baseline.
  double memcpySecondsPerIter = 0;
  std::size_t inBytes = 0, outBytes = 0; ///< per rank
};

/// Runs `algo` (a host-backend algorithm) on `algo.ranks` threads.
HostRunReport runHostAlgorithm(const ccsynthAlgorithm &algo,
                               const HostRunOptions &options);

/// Runs `algo` with one forked process per rank, sharing a POSIX
/// shared-memory window (the host-shm transport). The parent reaps every
/// rank, kills them when they outlive the watchdog's bound, and removes
/// the window's name before any rank starts. `timeMemcpy` is ignored.
HostRunReport runHostAlgorithmProcesses(const ccsynthAlgorithm &algo,
                                        const HostRunOptions &options);

} // namespace ccsynth::rt
