//===- KernelKnobs.cpp - Threads and loads in flight of generated kernels -===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Target/KernelKnobs.h"

#include <algorithm>

namespace ccsynth::codegen {

bool validKernelKnob(const KernelKnob &k) {
  return k.threads >= 32 && k.threads <= 1024 && k.threads % 32 == 0 &&
         (k.loads == 1 || k.loads == 2 || k.loads == 4 || k.loads == 8 ||
          k.loads == 16);
}

int kernelKnobEntry(const std::vector<KernelKnob> &table, int arch) {
  int entry = -1;
  for (int i = 0; i < (int)table.size(); ++i)
    if (table[i].arch <= arch &&
        (entry < 0 || table[i].arch > table[entry].arch))
      entry = i;
  return entry;
}

std::vector<KernelKnob> kernelKnobCandidates(int arch) {
  return {{arch, 256, 2}, {arch, 256, 4}, {arch, 256, 8}};
}

KernelKnob defaultKernelKnob(int arch) { return {arch, 256, 8}; }

std::vector<KernelKnob> defaultKernelKnobs() {
  return {defaultKernelKnob(80), defaultKernelKnob(90)};
}

double kernelKnobScale(const KernelKnob &k, const StepModel &model) {
  double inFlight = 16.0 * k.threads * k.loads;
  return std::min(1.0, inFlight / std::max(16.0, model.tbInFlightBytes));
}

std::string describeKernelKnob(const KernelKnob &k) {
  return "sm_" + std::to_string(k.arch) + ": " + std::to_string(k.threads) +
         " threads x " + std::to_string(k.loads) + " loads";
}

} // namespace ccsynth::codegen
