//===- FibersTest.cpp - The host backend's fibers -------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's fibers (Fibers.h): a rank's threadblocks switch on
// one thread, each keeping its registers, floating-point values, stack
// alignment and deep frames across switches.
#include "ccsynth/runtime/Fibers.h"

// Built where the runtime has fibers (Boost.Context found).
#if CCSYNTH_FIBERS

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using ccsynth::rt::FiberGroup;
using ccsynth::rt::tlsFiberGroup;

namespace {

struct Work {
  int switches = 0;
  std::vector<long long> sums;
  std::vector<double> values;
  std::vector<int> misaligned;
  std::vector<int> order; ///< which fiber ran, at each step
};

void yieldNow(bool fresh) { tlsFiberGroup->yield(fresh); }

// Recursion that keeps a frame per level live across a switch.
long long deep(int level, long long acc) {
  volatile char frame[512];
  frame[0] = (char)level;
  if (level == 0) {
    yieldNow(true);
    return acc;
  }
  long long below = deep(level - 1, acc + level);
  return below + frame[0] - (char)level;
}

void body(void *p, int i) {
  Work &w = *static_cast<Work *>(p);
  alignas(16) unsigned char aligned[16];
  if (reinterpret_cast<std::uintptr_t>(aligned) % 16 != 0)
    ++w.misaligned[i];
  long long sum = 0;
  double x = 1.0 + i;
  for (int k = 0; k < w.switches; ++k) {
    sum += (long long)k * (i + 1);
    x = x * 1.000001 + 0.25;
    w.order.push_back(i);
    yieldNow(k % 2 == 0);
  }
  w.sums[i] = sum + deep(200, 0); // 200 frames of 512 B across a switch
  w.values[i] = x;
}

} // namespace

TEST_CASE("fibers keep each threadblock's values across switches",
          "[fibers]") {
  constexpr int kFibers = 12, kSwitches = 2000;
  for (int launch = 0; launch < 3; ++launch) { // stacks reused after the first
    Work w;
    w.switches = kSwitches;
    w.sums.assign(kFibers, 0);
    w.values.assign(kFibers, 0);
    w.misaligned.assign(kFibers, 0);
    FiberGroup group(kFibers, &body, &w);
    REQUIRE(group.prepare());
    group.run();
    long long deepSum = 200LL * 201 / 2;
    for (int i = 0; i < kFibers; ++i) {
      long long want = (long long)(i + 1) * kSwitches * (kSwitches - 1) / 2;
      CHECK(w.sums[i] == want + deepSum);
      double x = 1.0 + i;
      for (int k = 0; k < kSwitches; ++k)
        x = x * 1.000001 + 0.25;
      CHECK(w.values[i] == x);
      CHECK(w.misaligned[i] == 0);
    }
    // Round-robin: every fiber runs once per round.
    REQUIRE(w.order.size() == (size_t)kFibers * kSwitches);
    for (size_t k = 0; k < w.order.size(); ++k)
      CHECK(w.order[k] == (int)(k % kFibers));
    CHECK(!group.inFiber());
  }
}

#endif // CCSYNTH_FIBERS
