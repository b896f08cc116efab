//===- Budget.cpp - Time budget of the synthesizer ------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// How the synthesizer spends its time limit: the Driver's measured rates
// (lowering, list scheduling, setting up a split), its deadlines and what
// may still start before them (a split's set-up, a measurement), the lower
// bound and stopping at it, then the size estimates of the baselines
// (hopSum, baselineTransfersEstimate) that order them and skip those that
// cannot be measured in time. See docs/synth.md, "Time limit".
//
//===----------------------------------------------------------------------===//
#include "Driver.h"

#include "ccsynth/Analysis/LowerBound.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ccsynth::synth::detail {

void Driver::noteLowered(Clock::time_point t0, size_t tasks) {
  lowerSecPerTask =
      std::max(lowerSecPerTask, since(t0) / std::max<size_t>(1, tasks));
}

void Driver::noteListed(double seconds, size_t tasks) {
  listSecPerTask =
      std::max(listSecPerTask, seconds / std::max<size_t>(1, tasks));
}

double Driver::buildSeconds(double tasks, int replays) const {
  return tasks * ((lowerSecPerTask > 0 ? lowerSecPerTask : 1e-6) +
                  replays * (listSecPerTask > 0 ? listSecPerTask : 2e-6));
}

Clock::time_point Driver::searchEnd() const {
  size_t n = std::isfinite(best.timeUs) ? best.schedule.transfers.size() : 0;
  return deadline - std::chrono::microseconds((long long)(n * 3));
}

bool Driver::timeUp() const { return Clock::now() >= searchEnd(); }

void Driver::noteSetUp(Clock::time_point t0, int k) {
  setupSecondsPerSplit = std::max(setupSecondsPerSplit, since(t0) / k);
}

void Driver::boundOnce(const Collective &target) {
  if (boundKnown)
    return;
  auto t0 = Clock::now();
  // The latency search grows with ranks times links (half a minute on
  // 1,024 ranks): an eighth of the time left, then a weaker bound.
  // Synthesized schedules are point-to-point: their bound ignores the
  // machine's in-network switches.
  LowerBound lb =
      lowerBound(target, topo, opts.targetBytes, t0 + (deadline - t0) / 8,
                 BoundScope::PointToPoint);
  bound = std::max(bound, lb.timeUs());
  boundBandwidthUs = lb.bandwidthUs;
  boundLatencyUs = lb.latencyUs;
  if (lb.latencyCutShort)
    result.notes.push_back(
        "the time limit cut the latency bound's shortest-path search "
        "short; a weaker latency bound is used");
  if (lb.cutsCutShort)
    result.notes.push_back(
        "the time limit cut the bandwidth bound's enumeration of cuts "
        "short; a weaker bandwidth bound is used");
  stages.add("bound", since(t0));
  boundKnown = true;
}

bool everyPairCollective(CollectiveKind c) {
  return c == CollectiveKind::AllGather || c == CollectiveKind::ReduceScatter ||
         c == CollectiveKind::AllReduce || c == CollectiveKind::AllToAll;
}

double Driver::leastSecondsToWrite(int k) const {
  double n = topo.numRanks();
  return everyPairCollective(opts.kind) ? 2e-6 * k * n * (n - 1) : 0;
}

double Driver::routingProblemSeconds(int k) const {
  double n = topo.numRanks();
  double values = opts.kind == CollectiveKind::AllToAll ? n * n : n;
  return 14e-6 * values * k;
}

bool Driver::canSetUp(int k) const {
  auto end = Clock::now() +
             std::chrono::microseconds((long long)((setupSecondsPerSplit * k +
                                                    leastSecondsToWrite(k) +
                                                    routingProblemSeconds(k)) *
                                                   1e6));
  return end < (haveSchedule() ? searchEnd() : hardDeadline);
}

bool Driver::haveSchedule() const {
  return std::isfinite(best.timeUs) || std::isfinite(baselineUs);
}

bool Driver::stopNow() const {
  return Clock::now() >= (haveSchedule() ? searchEnd() : hardDeadline);
}

bool Driver::canMeasure(size_t transfers, double before) const {
  // Until something was measured, 6 µs per transfer (a 524k-transfer
  // AllGather on 512 ranks took 3.4 s).
  double perTransfer = measureSecPerTransfer > 0 ? measureSecPerTransfer : 6e-6;
  auto end =
      Clock::now() + std::chrono::microseconds(
                         (long long)((before + perTransfer * transfers) * 1e6));
  return std::isfinite(best.timeUs) ? end < searchEnd() : end < hardDeadline;
}

bool Driver::atBound() const {
  if (bound <= 0)
    return false;
  // A baseline at the bound too is written instead when it is faster.
  return best.timeUs <= bound * 1.002 &&
         (beatsBaselines() || baselineUs <= bound * 1.002);
}

bool Driver::beatsBaselines() const {
  return best.timeUs <= baselineUs * (1 + 1e-12);
}

bool Driver::bandwidthBound(const Setup &setup) const {
  return opts.targetBytes / setup.route.sizeDivisor() >
         4 * 1e3 * minAlphaUs * maxLinkGBps;
}

double hopSum(const Topology &topo, int src, bool toSrc) {
  int n = topo.numRanks();
  // Most machines link `src` to every rank: one pass over the links says
  // so, without building the adjacency (a tenth of a second on 1M links).
  {
    std::vector<char> linked(n, 0);
    int neighbours = 0;
    for (const Link &l : topo.links) {
      int other = toSrc ? (l.dst == src ? l.src : -1)
                        : (l.src == src ? l.dst : -1);
      if (other >= 0 && !linked[other]) {
        linked[other] = 1;
        ++neighbours;
      }
    }
    if (neighbours == n - 1)
      return n - 1;
  }
  // Adjacency as compressed rows: one pass to count, one to fill.
  std::vector<int> start(n + 1, 0), next(topo.links.size());
  for (const Link &l : topo.links)
    ++start[(toSrc ? l.dst : l.src) + 1];
  for (int r = 0; r < n; ++r)
    start[r + 1] += start[r];
  std::vector<int> fill(start.begin(), start.end() - 1);
  for (const Link &l : topo.links)
    next[fill[toSrc ? l.dst : l.src]++] = toSrc ? l.src : l.dst;
  std::vector<int> hops(n, -1), queue{src};
  hops[src] = 0;
  double sum = 0;
  for (size_t head = 0; head < queue.size(); ++head) {
    int u = queue[head];
    sum += hops[u];
    for (int k = start[u]; k < start[u + 1]; ++k)
      if (hops[next[k]] < 0) {
        hops[next[k]] = hops[u] + 1;
        queue.push_back(next[k]);
      }
  }
  return sum + (double)(n - (int)queue.size()) * n;
}

double baselineTransfersEstimate(BaselineKind kind, CollectiveKind c,
                                 const Topology &topo, int root) {
  double n = topo.numRanks();
  // Rooted: a tree pipelines 8 chunks (8n transfers); a direct one sends
  // each rank its chunk over the fewest hops (n where the root is linked
  // to every rank, n^2/4 on ring:n), plus n local reduces for a reduce; a
  // ring pipelines 4n chunks round all ranks, times half the GPUs of a
  // node on several nodes (1M transfers for a broadcast on ring:512, 4.2M
  // on dgx-h100x64).
  if (!everyPairCollective(c)) {
    double perNode =
        topo.numNodes() > 1 ? (double)topo.ranksOfNode(0).size() / 2 : 1.0;
    if (kind == BaselineKind::Direct) {
      bool toRoot = c == CollectiveKind::Gather || c == CollectiveKind::Reduce;
      return hopSum(topo, root, toRoot) + n * (c == CollectiveKind::Reduce);
    }
    return kind == BaselineKind::Ring ? 4.0 * std::max(1.0, perNode) * n * n
                                      : 8.0 * n;
  }
  if (kind == BaselineKind::Tree)
    return 32.0 * n;
  double folds = c == CollectiveKind::AllReduce       ? 3
                 : c == CollectiveKind::ReduceScatter ? 2
                                                      : 1;
  switch (kind) {
  case BaselineKind::Direct: {
    // Every rank sends to every other rank over the fewest hops (rank 0's
    // distances standing for everyone's: 3.1M transfers for an AllGather
    // on torus2d:16x32, not 262K) and copies its own chunk; reductions add
    // n local reduces per rank. With a link between every pair that is
    // n^2, as for the hierarchical baseline, which then comes first.
    double sends = n * (hopSum(topo, 0, false) + 1);
    return c == CollectiveKind::AllReduce       ? 2 * sends + n * n
           : c == CollectiveKind::ReduceScatter ? sends + n * n
                                                : sends;
  }
  case BaselineKind::Hierarchical:
    return (c == CollectiveKind::AllToAll ? 2 : folds) * n * n;
  case BaselineKind::Ring: {
    double rings =
        topo.numNodes() > 1 ? (double)topo.ranksOfNode(0).size() : 1.0;
    return (c == CollectiveKind::AllToAll ? n / 2 : folds) * rings * n * n;
  }
  case BaselineKind::Tree:
    break;
  case BaselineKind::Nvls:
  case BaselineKind::Collnet:
  case BaselineKind::NvlsSharp:
  case BaselineKind::CollnetChain:
    // Not among the synthesizer's fallbacks: its switch transfers do not
    // lower to the step programs yet.
    return 2.0 * n * n;
  }
  return 32.0 * n;
}

} // namespace ccsynth::synth::detail
