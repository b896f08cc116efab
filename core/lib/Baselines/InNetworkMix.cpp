//===- InNetworkMix.cpp - In-network schedules mixed with point-to-point -===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// NCCL runs one algorithm per call: NVLS or CollNet where the machine's
// switches reduce, or a ring. The switch's reduction and multicast reach a
// fraction of the port rate (NVLS on H100: about 480 GB/s of bus bandwidth
// over ports of 450 GB/s each way, where the ring reaches 360), so ports
// are left partly idle while the switch works. A mix gives the switch a
// share of the buffer and a point-to-point schedule the rest, both at once
// over the same ports; the runtime model charges the ports, the switch's
// throughput and the network as shared resources, so a share too large for
// either side only slows the mix down. Two of NCCL's algorithms mix the
// same way: NVLS with SHARP and CollNet Direct both reach the network
// through SHARP, but the first crosses the NVLink ports as switch
// operations and the second as sends. See InNetworkMix.h.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Baselines/InNetworkMix.h"

#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Schedule/Verifier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace ccsynth {

namespace {

std::string percent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * share);
  return buf;
}

} // namespace

std::vector<SwitchKind> inNetworkSwitchKinds(BaselineKind kind) {
  switch (kind) {
  case BaselineKind::Nvls:
    return {SwitchKind::NVLS};
  case BaselineKind::Collnet:
  case BaselineKind::CollnetChain:
    return {SwitchKind::SHARP};
  case BaselineKind::NvlsSharp:
    return {SwitchKind::NVLS, SwitchKind::SHARP};
  default:
    return {};
  }
}

namespace {

bool allows(const std::vector<SwitchKind> &allowed,
            const std::vector<SwitchKind> &used) {
  return allowed.empty() ||
         std::all_of(used.begin(), used.end(), [&](SwitchKind k) {
           return std::find(allowed.begin(), allowed.end(), k) != allowed.end();
         });
}

} // namespace

bool inNetworkApplies(CollectiveKind kind, const Topology &topology,
                      const std::vector<SwitchKind> &allowed) {
  for (BaselineKind k : kInNetworkBaselines)
    if (allows(allowed, inNetworkSwitchKinds(k)) &&
        baselineSupports(k, kind, topology))
      return true;
  return false;
}

Expected<InNetworkSearch> searchInNetwork(CollectiveKind kind,
                                          const Topology &topology,
                                          const InNetworkOptions &options) {
  const std::vector<SwitchKind> &allowed = options.allowedSwitches;
  if (!inNetworkApplies(kind, topology, allowed))
    return Error("no in-network algorithm applies to " +
                 std::string(toString(kind)) + " on '" + topology.name + "'" +
                 (allowed.empty() ? "" : " with the switches allowed") +
                 ": NVLS needs an NVLS switch joining the ranks of every "
                 "node (AllGather and ReduceScatter on one node), CollNet a "
                 "SHARP switch joining several nodes (AllGather and "
                 "ReduceScatter with one NIC per GPU)");
  InNetworkSearch out;
  auto past = [&] {
    return options.until && std::chrono::steady_clock::now() > *options.until;
  };
  // Verified against the machine's links and switches, then timed.
  auto measure = [&](InNetworkCandidate &c) -> bool {
    VerifyOptions vo;
    vo.topology = &topology;
    if (!verifySchedule(c.schedule, vo).ok())
      return false;
    auto t = simulateInNetworkRuntime(c.schedule, topology, {options.bytes});
    if (!t)
      return false;
    c.timeUs = t->front().timeUs;
    return true;
  };
  auto throughSharp = [&](const Schedule &s) {
    return std::any_of(
        s.transfers.begin(), s.transfers.end(), [&](const Transfer &t) {
          return t.sw >= 0 && t.sw < (int)topology.switches.size() &&
                 topology.switches[t.sw].kind == SwitchKind::SHARP;
        });
  };
  auto faster = [](const InNetworkCandidate &x, const InNetworkCandidate &y) {
    return x.timeUs < y.timeUs;
  };
  // Runnable mixes, fastest first, at most keepMixes of them.
  std::vector<InNetworkCandidate> runnableMixes;
  // Every mix of a phased form of ccsynth's own with the direct rails,
  // fastest first: made for generated code, which the runtime model (of
  // NCCL's kernels) ranks them for poorly.
  std::vector<InNetworkCandidate> directMixes;
  std::set<std::string> phasedOwn;
  auto consider = [&](const InNetworkCandidate &c, bool mix,
                      bool direct = false) {
    if (!out.best || c.timeUs < out.best->timeUs)
      out.best = c;
    if (throughSharp(c.schedule))
      return;
    if (!out.bestWithoutSharp || c.timeUs < out.bestWithoutSharp->timeUs)
      out.bestWithoutSharp = c;
    if (direct) {
      directMixes.insert(
          std::upper_bound(directMixes.begin(), directMixes.end(), c, faster),
          c);
      return;
    }
    if (!mix || options.keepMixes <= 0)
      return;
    auto at =
        std::upper_bound(runnableMixes.begin(), runnableMixes.end(), c, faster);
    if (at - runnableMixes.begin() >= options.keepMixes)
      return;
    runnableMixes.insert(at, c);
    if ((int)runnableMixes.size() > options.keepMixes)
      runnableMixes.pop_back();
  };
  // Fills InNetworkSearch::runnable once the search ends.
  auto finish = [&] {
    for (const auto *list : {&out.own, &out.alone})
      for (const InNetworkCandidate &c : *list)
        if (!throughSharp(c.schedule))
          out.runnable.push_back(c);
    for (InNetworkCandidate &c : directMixes)
      out.runnable.push_back(std::move(c));
    for (InNetworkCandidate &c : runnableMixes)
      out.runnable.push_back(std::move(c));
  };
  BaselineOptions bo;
  bo.inPlace = options.inPlace;
  bo.topologyValidated = true;
  std::vector<std::pair<std::string, Schedule>> p2p;
  if (baselineSupports(BaselineKind::Ring, kind, topology))
    if (auto ring = makeBaseline(BaselineKind::Ring, kind, topology, bo))
      p2p.emplace_back("ring", ring.take());
  for (const auto &[name, s] : options.pointToPoint)
    if (s && !s->usesSwitches() && s->collective.kind == kind &&
        s->collective.numRanks == topology.numRanks() &&
        s->collective.inPlace == options.inPlace)
      p2p.emplace_back(name, *s);
  // ccsynth's own with direct sends inside the nodes, as a partner of its
  // NVLS forms (it goes through no switch).
  if (allows(allowed, {SwitchKind::NVLS}) && nvlsRailsSupports(kind, topology))
    if (auto d = makeDirectRails(topology, bo))
      p2p.emplace_back(kDirectRailsName, d.take());
  // NCCL's algorithms alone first (the first of them whatever the
  // deadline): they are what the mixes are measured against.
  for (BaselineKind k : kInNetworkBaselines) {
    if (!allows(allowed, inNetworkSwitchKinds(k)) ||
        !baselineSupports(k, kind, topology))
      continue;
    if (!out.alone.empty() && past()) {
      out.cutShort = true;
      break;
    }
    auto s = makeBaseline(k, kind, topology, bo);
    if (!s)
      continue;
    InNetworkCandidate alone{toString(k), s.take(), 0, 1};
    if (!measure(alone))
      continue;
    out.alone.push_back(alone);
    consider(alone, false);
  }
  // ccsynth's own: NVLS inside the nodes, rings or direct exchanges along
  // the rails, each in both forms (the runtime model times the wavefront as
  // a pipelined kernel would run it; generated code pipelines by its
  // passes, where the phased form's fewer steps cost less: those go first,
  // and synth compiles in this order).
  if (allows(allowed, {SwitchKind::NVLS}) && nvlsRailsSupports(kind, topology))
    for (bool wavefront : {false, true})
      for (RailAllReduce rail : {RailAllReduce::Direct, RailAllReduce::Ring}) {
        if (past()) {
          out.cutShort = true;
          break;
        }
        BaselineOptions ro = bo;
        ro.until = options.until;
        auto s = makeNvlsRails(topology, ro, wavefront, rail);
        if (!s)
          continue;
        InNetworkCandidate rails{nvlsRailsName(rail, wavefront), s.take(), 0,
                                 1};
        if (measure(rails)) {
          if (!wavefront)
            phasedOwn.insert(rails.name);
          out.own.push_back(rails);
          consider(rails, false);
        }
      }
  // The faster algorithm's mixes first.
  std::vector<const InNetworkCandidate *> order;
  for (const InNetworkCandidate &c : out.alone)
    order.push_back(&c);
  for (const InNetworkCandidate &c : out.own)
    order.push_back(&c);
  std::sort(order.begin(), order.end(),
            [](const InNetworkCandidate *x, const InNetworkCandidate *y) {
              return x->timeUs < y->timeUs;
            });
  for (size_t o = 0; o < order.size(); ++o) {
    const InNetworkCandidate &alone = *order[o];
    const int fa = alone.schedule.collective.chunkFactor;
    // Its partners: the point-to-point schedules, then the slower
    // in-network algorithms (NVLS with SHARP beside CollNet Direct: the
    // switch operations of one and the NVLink sends of the other share the
    // ports).
    std::vector<std::pair<std::string, const Schedule *>> partners;
    for (const auto &[name, b] : p2p)
      partners.emplace_back(name, &b);
    // (ccsynth's own algorithms, forms of one, do not mix with each other).
    auto own = [&](const InNetworkCandidate *c) {
      return c >= out.own.data() && c < out.own.data() + out.own.size();
    };
    for (size_t j = o + 1; j < order.size(); ++j)
      if (!own(order[o]) || !own(order[j]))
        partners.emplace_back(order[j]->name, &order[j]->schedule);
    for (const auto &[name, bp] : partners) {
      const Schedule &b = *bp;
      const int fb = b.collective.chunkFactor;
      // Each share as a ratio of whole re-cuts: the in-network schedule's
      // chunks cut in m, the other's in n, m and n up to 16: the coarsest
      // grid (fewest chunks: the compiled program's steps grow with them)
      // within 2 points of the share, else the closest share.
      std::set<std::pair<int, int>> cuts;
      for (double want : options.shares) {
        int bm = 1, bn = 1;
        double err = INFINITY;
        long long chunks = 0;
        for (int m = 1; m <= 16; ++m)
          for (int n = 1; n <= 16; ++n) {
            double got = (double)fa * m / ((double)fa * m + (double)fb * n);
            double e = std::fabs(got - want);
            long long size = (long long)fa * m + (long long)fb * n;
            bool near = e <= 0.02, wasNear = err <= 0.02;
            bool better = near ? !wasNear || size < chunks ||
                                     (size == chunks && e < err - 1e-9)
                               : !wasNear && e < err - 1e-9;
            if (better) {
              err = e;
              bm = m;
              bn = n;
              chunks = size;
            }
          }
        cuts.insert({bm, bn});
      }
      for (auto [m, n] : cuts) {
        if (past()) {
          out.cutShort = true;
          finish();
          return out;
        }
        auto ra = m > 1 ? regridChunks(alone.schedule, fa * m)
                        : Expected<Schedule>(alone.schedule);
        auto rb = n > 1 ? regridChunks(b, fb * n) : Expected<Schedule>(b);
        if (!ra || !rb)
          continue;
        auto mixed = spliceSchedules(*ra, *rb);
        if (!mixed)
          continue;
        double share = (double)fa * m / ((double)fa * m + (double)fb * n);
        InNetworkCandidate c;
        c.name = alone.name + " " + percent(share) + " + " + name + " " +
                 percent(1 - share);
        c.share = share;
        c.schedule = mixed.take();
        c.schedule.origin = "synth:in-network-mix";
        if (!measure(c))
          continue;
        ++out.mixesTried;
        consider(c, true,
                 phasedOwn.count(alone.name) && own(&alone) &&
                     name == kDirectRailsName);
      }
    }
  }
  finish();
  return out;
}

} // namespace ccsynth
