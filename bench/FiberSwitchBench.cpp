//===- FiberSwitchBench.cpp - What one fiber switch costs -----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// 16 fibers of one FiberGroup (runtime/include/ccsynth/runtime/Fibers.h)
// each yield 200,000 times; prints the best of 5 runs in ns per switch
// (each yield is two: to the scheduler and back). bench/fiber-switch.sh
// builds it against two runtimes and prints their ratio.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/runtime/Fibers.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace {
constexpr int kFibers = 16, kYields = 200000;
void body(void *, int) {
  for (int k = 0; k < kYields; ++k)
    ccsynth::rt::tlsFiberGroup->yield(true);
}
} // namespace

int main() {
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    ccsynth::rt::FiberGroup g(kFibers, body, nullptr);
    if (!g.prepare()) {
      std::fprintf(stderr, "no fiber stacks\n");
      return 1;
    }
    auto t0 = std::chrono::steady_clock::now();
    g.run();
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - t0)
                              .count());
  }
  std::printf("%.2f\n", best * 1e9 / (2.0 * kFibers * kYields));
  return 0;
}
