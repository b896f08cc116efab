//===- HostRunner.h - Running a host plugin algorithm on the host ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Drives one algorithm of a host-backend plugin the way an NCCL job would,
// every rank a thread of this process or a process of its own: allocates
// each rank's buffers and scratch, fills the inputs with seeded random
// data, launches all ranks for the warm-up and the timed iterations, and
// checks the outputs against the reference collective (RunSetup.h).
// Shared by `ccsynth run` and the tests (also under ThreadSanitizer).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/RunSetup.h"
#include "ccsynth/runtime/ccsynth_plugin.h"

namespace ccsynth::rt {

/// The host backend's names for the options and report every backend
/// shares (RunSetup.h).
using HostRunOptions = RunOptions;
using HostRunReport = RunReport;

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
