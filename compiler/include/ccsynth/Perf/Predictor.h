//===- Predictor.h - What times a lowered program for the tuner -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The tuner (Tuning/Tuning.h) asks one question of a performance model:
// how long does this lowered program take on this machine, at each of
// these sizes, run this way (MSCCL's interpreter, NCCL's own kernel or
// ccsynth's generated code; the tile; the kernel knobs' throughput)? A
// Predictor answers it. The step-level model (StepSimulator.h) is the one
// ccsynth ships; a predictor fed by measurements on a GPU, or a model
// calibrated differently, takes its place through TuneRequest::predictor
// without touching the tuner.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Perf/StepSimulator.h"

#include <vector>

namespace ccsynth::perf {

class Predictor {
public:
  virtual ~Predictor() = default;
  /// The time of `program` on `topology` for each entry of `perSize` (the
  /// same program at several buffer sizes, each with how it runs), in the
  /// entries' order; an error when the program cannot run there (a
  /// runtime rule, a deadlock on bounded buffers, more threadblocks than
  /// are resident).
  virtual Expected<std::vector<msccl::StepSimResult>>
  predict(const msccl::Algo &program, const Topology &topology,
          const std::vector<msccl::StepSimOptions> &perSize) const = 0;
  /// What the predictions are, for notes ("step-level model").
  virtual const char *describe() const = 0;
};

/// The step-level model: msccl::simulateStepsAt.
class StepModelPredictor final : public Predictor {
public:
  Expected<std::vector<msccl::StepSimResult>>
  predict(const msccl::Algo &program, const Topology &topology,
          const std::vector<msccl::StepSimOptions> &perSize) const override;
  const char *describe() const override { return "step-level model"; }
};

/// The predictor the tuner uses when none is given: the step-level model.
const Predictor &defaultPredictor();

} // namespace ccsynth::perf
