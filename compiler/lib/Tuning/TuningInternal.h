//===- TuningInternal.h - Shared parts of the tuner's sources ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What the tuner's sources (Tuning.cpp, NcclReference.cpp, Lowerings.cpp)
// call across files; not part of the library's interface.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Tuning/Tuning.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ccsynth::tuning {
namespace detail {

/// The programs NCCL runs for this collective on a machine of this shape
/// (NcclReference.cpp): its rings (all of them, and a power of two of
/// them), its double binary tree for AllReduce on several nodes, direct
/// sends for AllToAll; each built only while `mayBuild` allows.
std::vector<Schedule> ncclShaped(const Schedule &schedule,
                                 const Topology &topology, bool inPlace,
                                 const std::function<bool()> &mayBuild);

/// What NCCL's in-network algorithms reach at `sizes` (fastest per size;
/// empty where none applies).
std::vector<double> ncclInNetworkUs(const Schedule &schedule,
                                    const Topology &topology,
                                    const std::vector<double> &sizes);

/// What NCCL's own kernel reaches with `program` where MSCCL's interpreter
/// cannot run it as NCCL does (empty where its MSCCL timing stands).
std::vector<double> ncclNativeUs(const Schedule &program,
                                 const Topology &topology,
                                 const TuneRequest &request,
                                 const std::function<bool(int)> &mayStart,
                                 const std::function<void(int, double)> &took);

/// What identifies a lowering for timing (Lowerings.cpp).
std::string loweringKey(const Schedule &schedule, const CompileOptions &c);

/// Lowers `schedule` with `c` to the program the step model times, once
/// per configuration and process (Lowerings.cpp).
std::optional<msccl::Algo> lowerForTiming(const Schedule &schedule,
                                          const Topology &topology,
                                          CompileOptions c, bool generatedCode);

/// Whether what `request` times takes any element count (Tuning.cpp).
bool anyCount(const TuneRequest &request, const Schedule &schedule);

/// Compiles and times the configuration `cand` holds (Tuning.cpp); with
/// `ncclKernel`, also as NCCL's own kernel runs it (ncclKernelUs).
std::optional<TuneCandidate>
timeConfiguration(const Schedule &schedule, const Topology &topology,
                  CompileOptions c, TuneCandidate cand,
                  const TuneRequest &request, bool *hasLocal,
                  bool ncclKernel = false);

} // namespace detail

using namespace detail;

} // namespace ccsynth::tuning
