//===- NcclReference.cpp - What NCCL itself reaches -----------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// NCCL's own programs for a collective on a machine, as the tuner's
// reference: its rings, trees and direct sends as schedules (ncclShaped),
// its in-network algorithms by the runtime model (ncclInNetworkUs), its
// own kernel where MSCCL's interpreter cannot run a long ring
// (ncclNativeUs, ncclNativeStepOptions, passesMscclSteps), and what it
// reaches per size (ncclReachUs). docs/calibration.md says what "NCCL"
// means in the model.
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

bool isNcclTree(const Schedule &program) {
  return program.origin == "baseline:tree";
}

namespace detail {

/// The programs NCCL runs for this collective on a machine of this shape:
/// rings for AllReduce, AllGather, ReduceScatter, Broadcast and Reduce
/// (all of the machine's rings, and where their number is not a power of
/// two also the largest power of two of them, which MSCCL can select for
/// power-of-two sizes), direct sends for AllToAll; none for the others.
/// On several nodes NCCL's tuner also picks its double binary tree for
/// AllReduce: it is a candidate there too. Each program is built only
/// while `mayBuild` allows (a deadline): on hundreds of ranks one ring
/// program is millions of transfers, seconds to build and verify.
std::vector<Schedule> ncclShaped(const Schedule &schedule,
                                 const Topology &topology, bool inPlace,
                                 const std::function<bool()> &mayBuild) {
  std::vector<Schedule> out;
  const Collective &col = schedule.collective;
  if (col.numRanks != topology.numRanks())
    return out;
  BaselineKind kind = BaselineKind::Ring;
  switch (col.kind) {
  case CollectiveKind::AllReduce:
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::Broadcast:
  case CollectiveKind::Reduce:
    break;
  case CollectiveKind::AllToAll:
    kind = BaselineKind::Direct;
    break;
  default:
    return out;
  }
  if (!baselineSupports(kind, col.kind, topology))
    return out;
  BaselineOptions bo;
  bo.inPlace = inPlace;
  bo.root = std::max(0, col.root);
  std::vector<int> limits{0};
  if (kind == BaselineKind::Ring) {
    int rings = (int)findRings(topology).rings.size(), pow2 = 1;
    while (pow2 * 2 <= rings)
      pow2 *= 2;
    if (pow2 != rings)
      limits.push_back(pow2);
  }
  for (int limit : limits) {
    if (!mayBuild())
      return out;
    bo.maxRings = limit;
    auto s = makeBaseline(kind, col.kind, topology, bo);
    if (!s)
      continue;
    out.push_back(s.take());
  }
  if (col.kind == CollectiveKind::AllReduce && topology.numNodes() > 1 &&
      baselineSupports(BaselineKind::Tree, col.kind, topology) && mayBuild()) {
    bo.maxRings = 0;
    if (auto s = makeBaseline(BaselineKind::Tree, col.kind, topology, bo))
      out.push_back(s.take());
  }
  for (Schedule &sched : out) {
    sched.topology = schedule.topology;
    sched.topologyHash = schedule.topologyHash;
    sched.topologyHashVersion = schedule.topologyHashVersion;
  }
  return out;
}

/// What NCCL's in-network algorithms (NVLS, NVLS-tree, CollNet Direct and
/// Chain, NVLS with SHARP) reach at `sizes` for this collective on the machine,
/// timed by the in-network runtime model: the fastest per size, or empty where
/// none applies. No XML holds them, but NCCL runs them where its tuner finds
/// them faster.
std::vector<double> ncclInNetworkUs(const Schedule &schedule,
                                    const Topology &topology,
                                    const std::vector<double> &sizes) {
  std::vector<double> best;
  const Collective &col = schedule.collective;
  if (topology.switches.empty() || col.kind == CollectiveKind::Custom ||
      col.numRanks != topology.numRanks())
    return best;
  BaselineOptions bo;
  bo.inPlace = col.inPlace;
  for (BaselineKind kind : kNcclInNetworkAlgorithms) {
    if (!baselineSupports(kind, col.kind, topology))
      continue;
    auto s = makeBaseline(kind, col.kind, topology, bo);
    if (!s)
      continue;
    auto times = simulateInNetworkRuntime(*s, topology, sizes);
    if (!times)
      continue;
    best.resize(sizes.size(), INFINITY);
    for (size_t k = 0; k < sizes.size(); ++k)
      best[k] = std::min(best[k], (*times)[k].timeUs);
  }
  return best;
}

/// What NCCL's own kernel reaches at `request`'s sizes with `program`, one
/// of its ring or tree programs (ncclShaped), where MSCCL's interpreter
/// cannot run it as NCCL does: a threadblock of MSCCL holds at most 64
/// steps, so a longer ring (an AllGather over more than 64 ranks, an
/// AllReduce over more than 32) is cut over several threadblocks that
/// share its links, while NCCL's kernel loops over a ring of any length on
/// one threadblock per channel. Timed as MSCCL's interpreter runs the same
/// fused hops (protocols, slices, bounded buffers) on one threadblock per
/// ring and channel, at every protocol of `request` and every instance
/// count up to 32 channels, as the MSCCL timing (NCCL's rings on these
/// machines use at most 32). Empty where the program fits MSCCL's
/// threadblocks: its MSCCL timing is NCCL's. A configuration of k
/// instances starts only when `mayStart(k)` allows (the request's
/// deadline); `took(k, seconds)` hears how long each one took.
std::vector<double> ncclNativeUs(const Schedule &program,
                                 const Topology &topology,
                                 const TuneRequest &request,
                                 const std::function<bool(int)> &mayStart,
                                 const std::function<void(int, double)> &took) {
  // Steps per threadblock are at most a rank's sends and receives on one
  // channel: within MSCCL's limit, the MSCCL timing stands.
  std::map<std::pair<int, int>, int> perChannel;
  std::set<int> channels;
  for (const Transfer &t : program.transfers) {
    if (t.src.rank == t.dst.rank)
      continue;
    ++perChannel[{t.src.rank, t.channel}];
    ++perChannel[{t.dst.rank, t.channel}];
    channels.insert(t.channel);
  }
  int most = 0;
  for (const auto &[at, n] : perChannel)
    most = std::max(most, n);
  if (most <= msccl::kMaxSteps)
    return {};
  std::vector<double> best;
  bool longer = false;
  if (request.protocols.empty())
    return best;
  for (int k = 1;
       k * (int)std::max<size_t>(1, channels.size()) <= msccl::kMaxChannels;
       k *= 2) {
    if (!mayStart(k))
      return best;
    auto began = std::chrono::steady_clock::now();
    CompileOptions c;
    c.instances = k;
    c.protocol = request.protocols.front();
    // The lowering of generated code: no step table to fit in, and the
    // same program whatever the protocol it is timed with.
    std::optional<msccl::Algo> lowered =
        lowerForTiming(program, topology, c, true);
    if (!lowered)
      continue;
    msccl::Algo &algo = *lowered;
    longer |= passesMscclSteps(algo);
    if (!longer)
      return {};
    for (const std::string &proto : request.protocols) {
      algo.proto = proto;
      std::vector<msccl::StepSimOptions> perSize;
      for (double bytes : request.sizes)
        perSize.push_back(ncclNativeStepOptions(program.collective, bytes));
      std::vector<double> times;
      if (auto t = request.timing().predict(algo, topology, perSize))
        for (const msccl::StepSimResult &r : *t)
          times.push_back(r.timeUs);
      if (times.size() != request.sizes.size())
        continue;
      best.resize(times.size(), INFINITY);
      for (size_t i = 0; i < times.size(); ++i)
        best[i] = std::min(best[i], times[i]);
    }
    took(k,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
             .count());
  }
  return best;
}

} // namespace detail

bool passesMscclSteps(const msccl::Algo &algo) {
  for (const msccl::Gpu &g : algo.gpus)
    for (const msccl::Threadblock &tb : g.tbs)
      if ((int)tb.steps.size() > msccl::kMaxSteps)
        return true;
  return false;
}

msccl::StepSimOptions ncclNativeStepOptions(const Collective &collective,
                                            double bytes) {
  msccl::StepSimOptions o = perf::stepSimOptions(collective, bytes, false, 0);
  o.runtimeRules = false;
  o.interpreter = false;
  return o;
}

std::vector<double> ncclReachUs(const Schedule &schedule,
                                const Topology &topology,
                                const std::vector<double> &sizes) {
  TuneRequest req;
  req.sizes = sizes;
  // Every count is tried for NCCL's programs (tuneCompile's explore).
  req.instances = {1, 2, 4, 8, 16, 32};
  req.protocols = {"Simple", "LL128", "LL"};
  req.fallback = true;
  req.inNetwork = true;
  req.ncclOnly = true;
  req.ncclReferenceOnly = true;
  CompileOptions base;
  base.target = CompileTarget::MscclXml;
  base.verify = false;
  return tuneCompile(schedule, topology, base, req).ncclBestUs;
}

} // namespace ccsynth::tuning
