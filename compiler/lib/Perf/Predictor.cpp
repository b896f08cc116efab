//===- Predictor.cpp - The step-level model as the tuner's predictor ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Perf/Predictor.h"

namespace ccsynth::perf {

Expected<std::vector<msccl::StepSimResult>> StepModelPredictor::predict(
    const msccl::Algo &program, const Topology &topology,
    const std::vector<msccl::StepSimOptions> &perSize) const {
  return msccl::simulateStepsAt(program, topology, perSize);
}

const Predictor &defaultPredictor() {
  static const StepModelPredictor model;
  return model;
}

} // namespace ccsynth::perf
