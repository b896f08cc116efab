//===- BaselineRace.cpp - Baselines raced against the search --------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The baselines the synthesized schedules must beat: measureBaselines
// builds, verifies and simulates them cheapest first while the time allows
// (their sizes estimated in Budget.cpp); preferBaseline writes the best one
// instead of a slower or missing schedule where the sketch allows its
// links. See docs/synth.md, "Method" (selection) and "Time limit".
//
//===----------------------------------------------------------------------===//
#include "Driver.h"

#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Schedule/Verifier.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

namespace ccsynth::synth::detail {

void Driver::measureBaselines() {
  if (opts.kind == CollectiveKind::Custom)
    return;
  auto t0 = Clock::now();
  BaselineOptions bo;
  bo.inPlace = opts.inPlace;
  bo.root = opts.root;
  bo.topologyValidated = true;
  // The cheapest first: on large machines the time limit may allow only
  // one, and any verified baseline is a schedule to write. Equal times
  // keep the first of this order (direct, hierarchical, tree, ring).
  // On several nodes the hierarchical baseline comes before the direct
  // one of the same size: it is the faster of the two there. A broadcast
  // or reduce tries the tree first: the direct one, cheaper to build,
  // pushes every rank's copy through the root's links (on 4,096 ranks the
  // time limit leaves room for one of them).
  const BaselineKind order[] = {BaselineKind::Direct,
                                BaselineKind::Hierarchical, BaselineKind::Tree,
                                BaselineKind::Ring};
  bool treeFirst = opts.kind == CollectiveKind::Broadcast ||
                   opts.kind == CollectiveKind::Reduce;
  auto preference = [&](BaselineKind k) {
    return topo.numNodes() > 1 && k == BaselineKind::Hierarchical ? -1 : 0;
  };
  struct Option {
    BaselineKind kind;
    int rank;
    double transfers;
  };
  std::vector<Option> options;
  for (int i = 0; i < 4; ++i)
    if (baselineSupports(order[i], opts.kind, topo))
      options.push_back(
          {order[i], i, baselineTransfersEstimate(order[i], opts.kind, topo,
                                                  opts.root)});
  auto sortKey = [&](const Option &o) {
    if (treeFirst)
      return std::tuple(o.kind != BaselineKind::Tree, o.transfers, 0);
    return std::tuple(false, o.transfers, preference(o.kind));
  };
  std::stable_sort(options.begin(), options.end(),
                   [&](const Option &a, const Option &b) {
                     return sortKey(a) < sortKey(b);
                   });
  int bestRank = 4;
  for (const Option &o : options) {
    BaselineKind kind = o.kind;
    // Once one is verified, baselines get at most a quarter of the time
    // limit: they are the floor to beat, not the search. Until then one
    // may take the whole limit and its grace, less writing it (2 µs per
    // transfer; 1 µs measured): without it there is nothing to write.
    // While the best one is under half the lower bound, they may take
    // half the limit (a pipelined ring broadcast after a tree).
    auto until =
        std::isfinite(baselineUs)
            ? start + (deadline - start) / (baselineUs * 0.5 > bound ? 2 : 4)
            : deadline + grace -
                  std::chrono::microseconds((long long)(2 * o.transfers));
    // Building, verifying and simulating: until one is measured, 3.5 µs
    // per transfer (the 1M-transfer hierarchical AllGather on 1,024 ranks
    // took 3.1 µs on an idle machine, a 2M-transfer ring AllGather on a
    // 1,024-rank torus 1.2 µs).
    double perTransfer =
        baselineSecPerTransfer > 0 ? baselineSecPerTransfer : 3.5e-6;
    if (o.transfers > kMaxBaselineTransfers ||
        Clock::now() + std::chrono::microseconds(
                           (long long)(perTransfer * o.transfers * 1e6)) >
            until) {
      say(std::string("not simulating the ") + toString(kind) +
          " baseline (no time left: about " + fmt(o.transfers / 1e6, 2) +
          "M transfers)");
      continue;
    }
    auto tb = Clock::now();
    bo.until = until;
    auto b = makeBaseline(kind, opts.kind, topo, bo);
    if (!b) {
      if (Clock::now() > until)
        say(std::string("not simulating the ") + toString(kind) +
            " baseline (no time left: " + b.error().message + ")");
      continue;
    }
    // Its transfers must still be written (2 µs each) within the grace: a
    // relayed baseline can be far larger than estimated.
    if (Clock::now() + std::chrono::microseconds(
                           (long long)(2 * b->transfers.size())) >
        deadline + grace) {
      say(std::string("not simulating the ") + toString(kind) +
          " baseline (no time left to write its " +
          fmt(b->transfers.size() / 1e6, 2) + "M transfers)");
      continue;
    }
    // A ring all-to-all on 64 ranks has a million transfers and takes
    // longer to simulate than most searches.
    if (b->transfers.size() > kMaxBaselineTransfers) {
      say(std::string("not simulating the ") + toString(kind) + " baseline (" +
          std::to_string(b->transfers.size()) + " transfers)");
      continue;
    }
    if (measureSecPerTransfer > 0 &&
        Clock::now() + std::chrono::microseconds(
                           (long long)(measureSecPerTransfer *
                                       b->transfers.size() * 1e6)) >
            until) {
      say(std::string("not simulating the ") + toString(kind) +
          " baseline (no time left)");
      continue;
    }
    SimOptions so;
    so.bytes = opts.targetBytes;
    so.topologyValidated = true;
    auto ts = Clock::now();
    // Verified now, so that writing it instead of a slower schedule at the
    // deadline costs nothing more.
    VerifyOptions vo;
    vo.topology = &topo;
    if (!verifySchedule(*b, vo).ok()) {
      result.notes.push_back(std::string("internal: the ") + toString(kind) +
                             " baseline does not verify");
      continue;
    }
    // Stopped where it would overrun what it may use (simulating a million
    // transfers in flight at once, as a direct AllToAll on 1,024 ranks,
    // takes 14 us per transfer, not the 3.5 estimated).
    so.until = until;
    auto sim = simulate(*b, topo, so);
    if (!sim) {
      say(std::string("not simulating the ") + toString(kind) +
          " baseline (no time left)");
      continue;
    }
    // Small baselines measure fixed costs, not a rate per transfer (a
    // direct broadcast on 1,024 ranks, 1,024 transfers of 1 GB sharing
    // the root's links, takes a second to simulate).
    size_t count = b->transfers.size();
    if (count >= 100000) {
      measureSecPerTransfer =
          std::max(measureSecPerTransfer, since(ts) / count);
      baselineSecPerTransfer =
          std::max(baselineSecPerTransfer, since(tb) / count);
    }
    if (sim->timeUs < baselineUs ||
        (sim->timeUs == baselineUs && o.rank < bestRank)) {
      baselineUs = sim->timeUs;
      baselineBusbw = sim->busbwGBps;
      baselineMeasureSeconds = since(ts) / 2;
      baselineName = toString(kind);
      baselineSchedule = b.take();
      bestRank = o.rank;
    }
  }
  stages.add("baselines", since(t0));
  if (std::isfinite(baselineUs))
    say("best baseline at this size: " + baselineName + ", " + fmt(baselineUs) +
        " us (the search goes on while it is faster)");
}

void Driver::preferBaseline() {
  if (!std::isfinite(baselineUs))
    return;
  bool faster = best.timeUs <= baselineUs * (1 + 1e-12);
  // A schedule at least as fast keeps its place; the baseline goes along
  // when it is small and the sketch allows it (ranked again by the tool at
  // the step level).
  if (faster && baselineSchedule.transfers.size() > kMaxAlternativeTransfers)
    return;
  // Links of the baseline the sketch forbids (transfers without a link use
  // the topology's best link).
  bool allowed = true;
  // No routing problem was built (the time ran out first): only a sketch
  // that constrains no link is known to allow the baseline's.
  if (sketchLinks.empty())
    allowed = sketch.intra == IntraStrategy::None && sketch.switches.empty() &&
              sketch.conn.empty() &&
              sketch.connKind == InternodeConnKind::FullyConnected;
  for (size_t i = 0;
       allowed && !sketchLinks.empty() && i < baselineSchedule.transfers.size();
       ++i) {
    const Transfer &tr = baselineSchedule.transfers[i];
    if (tr.src.rank == tr.dst.rank)
      continue;
    int l = tr.link;
    if (l < 0)
      l = topo.bestLink(tr.src.rank, tr.dst.rank).value_or(-1);
    if (l < 0 || l >= (int)sketchLinks.size() || !sketchLinks[l]) {
      allowed = false;
      break;
    }
  }
  if (!allowed) {
    if (!faster)
      result.sketchForbidsBaseline = true;
    return;
  }
  if (faster) {
    result.allowedBaseline = baselineSchedule;
    return;
  }
  // The synthesized schedule the baseline replaces may still lower to the
  // faster program.
  retireBest();
  best.schedule = baselineSchedule;
  best.timeUs = baselineUs;
  best.busbwGBps = baselineBusbw;
  best.measureSeconds = baselineMeasureSeconds;
  best.method = "the " + baselineName +
                " baseline (no synthesized schedule found in time was faster)";
  best.chunkup = 1;
  best.proven = false;
  best.smt.clear();
  result.isBaseline = true;
}

} // namespace ccsynth::synth::detail
