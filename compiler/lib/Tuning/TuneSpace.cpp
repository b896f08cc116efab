//===- TuneSpace.cpp - The tuned compile's search space ---------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What the tuner weighs: the sizes (tuningSizes, generatedTuningSizes,
// tuningGrid), the instance counts (tuningInstances), the tiles and loads
// in flight of generated code (generatedTileCandidates, switchLoadsCap),
// the order generated code is tried in (generatedOrder), and how a
// candidate is described. Declared in Tuning.h; docs/compiler.md ("The
// tuned compile") explains the choices.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Tuning/Tuning.h"
#include "TuningInternal.h"

#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Baselines/Rings.h"
#include "ccsynth/Perf/StepPrediction.h"
#include "ccsynth/Perf/StepSimulator.h"
#include "ccsynth/Target/KernelKnobs.h"
#include "ccsynth/Target/MSCCLXml.h"
#include "ccsynth/Target/SwitchLowering.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>

namespace ccsynth::tuning {

std::vector<double> tuningSizes(long long minBytes, long long maxBytes) {
  double lo = minBytes > 0 ? (double)minBytes : 0;
  double hi = maxBytes > 0 ? (double)maxBytes : 1e300;
  std::vector<double> out;
  for (double b : {1024.0, 1048576.0, 1073741824.0})
    if (b >= lo && b <= hi)
      out.push_back(b);
  if (out.empty()) {
    out.push_back(std::max(lo, 1024.0));
    if (maxBytes > 0 && (double)maxBytes > out.front())
      out.push_back((double)maxBytes);
  }
  return out;
}

std::vector<double> generatedTuningSizes(const Schedule &schedule,
                                         long long minBytes,
                                         long long maxBytes) {
  std::vector<double> out = tuningSizes(minBytes, maxBytes);
  if (!schedule.usesSwitches())
    return out;
  for (double b : tuningGrid(std::max(0LL, minBytes), std::max(0LL, maxBytes)))
    if (b > 1048576.0 && b < 1073741824.0)
      out.push_back(b);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<double> tuningGrid(long long lo, long long hi) {
  std::vector<double> out;
  for (double b = 1024; b <= 1073741824.0; b *= 4)
    if (b >= (double)lo && (hi <= 0 || b <= (double)hi))
      out.push_back(b);
  return out;
}

std::vector<int> tuningInstances(const Schedule &schedule) {
  // Lowering and timing cost grows with transfers x instances; past about
  // 64k lowered transfers per configuration the search would take longer
  // than the compile it tunes.
  constexpr size_t kMaxLowered = 1 << 16;
  std::vector<int> out;
  size_t n = std::max<size_t>(1, schedule.transfers.size());
  for (int k = 1; k <= 32; k *= 2)
    if (k == 1 || n * (size_t)k <= kMaxLowered)
      out.push_back(k);
  return out;
}


std::string describeCandidate(const TuneCandidate &c, bool withProtocol) {
  return std::to_string(c.instances) + " instance" +
         (c.instances == 1 ? "" : "s") +
         (withProtocol ? ", " + c.protocol : std::string()) +
         (!c.fuse     ? ", unfused"
          : c.fuseForward ? ""
                      : ", fused without forwarding") +
         (c.pipeline > 1 ? ", " + std::to_string(c.pipeline) + " pipeline parts"
                         : "") +
         (c.localTbs > 1 ? ", " + std::to_string(c.localTbs) +
                               " threadblocks for local steps"
                         : "") +
         (c.splitPhases ? ", reduction and spreading on separate channels"
                        : "") +
         (c.switchLanes > 0 ? ", " + std::to_string(c.switchLanes) +
                                  " switch threadblocks per rank and switch"
                            : "");
}

int switchLoadsCap(const Schedule &schedule) {
  if (!schedule.usesSwitches())
    return 0;
  auto lowering = msccl::lowerSwitchTransfers(schedule);
  return lowering && lowering->orderedOperations > 0 ? 4 : 0;
}

std::vector<int> generatedOrder(const TuneResult &t) {
  std::vector<int> order;
  if (t.best < 0)
    return order;
  const TuneCandidate &fastest = t.candidates[t.best];
  for (int i = 0; i < (int)t.candidates.size(); ++i)
    if (t.candidates[i].fromSchedule() &&
        t.candidates[i].oddFactor() <= fastest.oddFactor())
      order.push_back(i);
  auto near = [&](int i) {
    return t.candidates[i].score <= fastest.score * 1.02;
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const TuneCandidate &x = t.candidates[a], &y = t.candidates[b];
    if (near(a) != near(b))
      return near(a);
    if (near(a) && x.instances != y.instances)
      return x.instances < y.instances;
    return x.score < y.score;
  });
  return order;
}

std::vector<double> generatedTileCandidates(const Schedule &schedule,
                                            double tile, bool coarse) {
  if (!schedule.usesSwitches())
    return {tile};
  if (coarse)
    return {1 << 20, 256 << 10, 64 << 10, 16 << 10};
  return {1 << 20, 256 << 10, 64 << 10, 32 << 10, 16 << 10, 12 << 10, 8 << 10};
}


} // namespace ccsynth::tuning
