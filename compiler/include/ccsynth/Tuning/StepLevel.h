//===- StepLevel.h - What compile would write, at the step level -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The prediction synth prints for each schedule it writes: the step-level
// time of the program `ccsynth compile` writes for it by default (the
// tuned compile: best instances and protocol per size), and of NCCL's ring
// (and tree) for the collective on the same machine, lowered and tuned the
// same way, within a deadline.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"

#include <chrono>
#include <string>
#include <vector>

namespace ccsynth::tuning {

/// What runs: the step-level prediction of the program `ccsynth compile`
/// writes for a schedule by default (the tuned compile: best instances and
/// protocol per size), and of NCCL's ring for the collective on the same
/// machine, lowered and tuned the same way.
struct StepLevel {
  /// Why there is no prediction (empty when there is one).
  std::string absent;
  /// Per size: the schedule's best configuration, and NCCL's (empty when
  /// NCCL's ring was not timed).
  std::vector<double> ownUs, ncclUs;
  /// NCCL's double binary tree was timed too (AllReduce on several nodes).
  bool ncclTree = false;
  bool cutShort = false;
  /// The deadline cut NCCL's tuning short: ncclUs is what was timed of it,
  /// and NCCL may be faster.
  bool ncclCutShort = false;
  /// nchunksperloop of the program without its factors of two: above 1,
  /// MSCCL selects it for no power-of-two size (NCCL runs those).
  int oddFactor = 1;
};

/// The step-level prediction of `sched` on `model` at `sizes` (and of
/// NCCL's programs for its collective with `withNccl`): the schedule's
/// fastest configuration MSCCL selects at each size. Configurations that
/// would end after `until` are not started, except one when `written` (the
/// schedule synth writes: its table does not depend on the machine's load);
/// `measureSeconds` is what the schedule's chunk-level check took (timing
/// one configuration costs about three times that).
StepLevel predictSteps(const Schedule &sched, const Topology &model,
                       const std::vector<double> &sizes, bool withNccl,
                       bool written,
                       std::chrono::steady_clock::time_point until,
                       double measureSeconds);

} // namespace ccsynth::tuning
