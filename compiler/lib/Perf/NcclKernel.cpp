//===- NcclKernel.cpp - How NCCL's own kernel runs a call -----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Perf/NcclKernel.h"

#include <algorithm>

namespace ccsynth::perf {

NcclLaunch ncclRingLaunch(int protocol, int ranks, double bytes, int channels) {
  constexpr int kFullThreads[3] = {512, 640, 512};
  constexpr double kThreshold[3] = {64, 8, 8};
  int p = std::clamp(protocol, 0, 2);
  double threshold = kThreshold[p] * (p == 2 ? std::max(1, ranks) : 1);
  int nc = std::max(1, channels), nt = kFullThreads[p];
  while (bytes < (double)nc * nt * threshold) {
    if (nc >= 2)
      --nc;
    else if (nt % 128 == 0)
      nt /= 2;
    else
      break;
  }
  if (p == 0)
    nt += 32; // the ring's Simple adds a warp
  return NcclLaunch{nc, std::max(nt, 96)};
}

} // namespace ccsynth::perf
