//===- Synthesizer.cpp - Sketch-guided synthesis of collective schedules --===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// synthesize(), the public entry (Synthesizer.h): on the sketch's switch
// model of the machine where the sketch asks for one, it runs a Driver.
// Driver::run orchestrates the search: checks that the collective fits in
// memory and time, the lower bound, the baselines (BaselineRace.cpp), the
// quick pass of heuristic trees on large machines, then each chunk split
// in turn (ChunkupSearch.cpp) until the bound, the --stop-at fraction or
// the time limit, and the result. The Driver is declared in Driver.h. See
// docs/synth.md, "Method", "Chunk splits" and "Time limit".
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Synth/Synthesizer.h"
#include "ccsynth/Synth/SwitchModel.h"

#include "Driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace ccsynth::synth {

namespace detail {

bool Driver::keepOnError(int k, const Error &e) {
  if (!sketchFits || !haveSchedule())
    return false;
  result.notes.push_back("chunk split " + std::to_string(k) +
                         " and finer were not tried: " + e.message);
  return true;
}

Expected<SynthResult> Driver::run() {
  auto limit = std::chrono::microseconds(
      (long long)(std::max(0.0, opts.timeLimitSec) * 1e6));
  deadline = start + limit;
  grace =
      std::max<std::chrono::microseconds>(limit / 10, std::chrono::seconds(2));
  hardDeadline = deadline + grace / 2;
  int n = topo.numRanks();
  if (opts.kind == CollectiveKind::Custom) {
    if (!opts.custom)
      return Error("a custom collective needs its conditions");
    if (opts.custom->isReduction())
      return Error("synthesis of custom collectives with reductions is not "
                   "supported (only copy collectives; reductions are "
                   "synthesized for the built-in reducescatter, reduce and "
                   "allreduce)");
    if (opts.custom->numRanks != n)
      return Error(
          "the custom collective has " + std::to_string(opts.custom->numRanks) +
          " ranks but topology '" + topo.name + "' has " + std::to_string(n));
  }
  // The collectives' conditions take a few ints per chunk slot: n^2 per
  // chunk split (AllReduce: its n chunks per rank on n ranks, plus one
  // pooled set of n values per chunk, shared by all ranks). Refuse what
  // cannot fit in memory rather than exhaust it.
  // The rooted collectives hold a few slots per rank (a broadcast: the
  // root's chunk and one output chunk per rank).
  bool everyPair = everyPairCollective(opts.kind);
  double entries = everyPair || opts.kind == CollectiveKind::Custom
                       ? (double)n * n
                       : 4.0 * n;
  if (opts.kind == CollectiveKind::AllReduce)
    entries *= 3;
  if (entries > kMaxConditionEntries)
    return Error(std::string(toString(opts.kind)) + " on " + std::to_string(n) +
                 " ranks needs about " + fmt(entries / 1e6, 0) +
                 " million condition entries per chunk split, more than "
                 "the synthesizer holds (" +
                 fmt(kMaxConditionEntries / 1e6, 0) + " million)");
  // What came before (reading the machine and the sketch) may have spent
  // the limit and its grace already: say so rather than blame the next
  // step.
  if (Clock::now() > hardDeadline)
    return Error("the time limit (" + fmt(opts.timeLimitSec, 1) +
                 " s) ran out before the search began: reading the inputs "
                 "took " +
                 fmt(since(start), 1) + " s; allow more time");
  // Building them (the routed collective and the target) took up to 0.1 µs
  // per entry on a loaded machine.
  if (Clock::now() + std::chrono::microseconds((long long)(entries * 0.1)) >
      hardDeadline)
    return Error("the time limit (" + fmt(opts.timeLimitSec, 1) +
                 " s) is shorter than building the collective's conditions "
                 "on " +
                 std::to_string(n) + " ranks takes; allow more time");
  auto t0 = Clock::now();
  auto bases = makeSetups(opts, n, 1);
  if (!bases)
    return bases.error();
  // The bound on the coarsest split costs least (it is the same for all).
  boundOnce(*bases->front().target);
  setupSecondsPerSplit = since(t0);
  const Setup *base = &bases->front();
  std::vector<std::vector<int>> phases =
      chunkups(topo, sketch, opts, base->route);
  size_t remainingKs = 0;
  for (auto &ph : phases)
    remainingKs += ph.size();
  say("synthesizing " + base->target->describe() + " on " + topo.name +
      " for " + fmt(opts.targetBytes / 1024.0, 0) +
      " KiB; chunk splits to "
      "try: " +
      [&] {
        std::string s;
        for (auto &ph : phases)
          for (int k : ph)
            s += (s.empty() ? "" : ", ") + std::to_string(k);
        return s;
      }());
  measureBaselines();
  minAlphaUs = std::numeric_limits<double>::infinity();
  for (int l = 0; l < (int)topo.links.size(); ++l) {
    minAlphaUs = std::min(minAlphaUs, topo.links[l].alphaUs);
    maxLinkGBps = std::max(maxLinkGBps, topo.effectiveBandwidth(l));
  }
  bool first = true, done = false;
  // Builds the routing problem of one split; the first one also decides
  // feasibility.
  auto prepare = [&](const Setup &setup) -> Expected<RoutingProblem> {
    auto t0 = Clock::now();
    auto problem = buildRoutingProblem(topo, sketch, setup.route);
    stages.add("problem", since(t0));
    if (problem && first) {
      first = false;
      sketchFits = true;
      sketchLinks = problem->linkUsable;
      // Not proven by the time limit: the search goes on as if feasible.
      if (auto why = explainInfeasible(*problem, sketch, deadline)) {
        result.feasible = false;
        result.infeasibility = *why;
      }
      for (const std::string &note : problem->notes)
        result.notes.push_back(note);
    }
    return problem;
  };
  // Large machines at bandwidth-bound sizes: Z3 routing of one split can
  // take most of the time limit, while the heuristic trees of the next
  // splits are cheap and often better. A quick pass evaluates those first
  // (at most a third of the time).
  if (n >= 32 && bandwidthBound(*base) && !phases.empty()) {
    heuristicsOnly = true;
    auto until = Clock::now() + (deadline - Clock::now()) / 3;
    for (size_t i = 0; i < phases.front().size() && i < 3; ++i) {
      if (stopNow() || (Clock::now() >= until && haveSchedule()))
        break;
      int k = phases.front()[i];
      if (!canSetUp(k)) {
        result.timeLimitHit = true;
        break;
      }
      auto ts = Clock::now();
      auto setups = makeSetups(opts, n, k);
      if (!setups) {
        if (!keepOnError(k, setups.error()))
          return setups.error();
        break;
      }
      const Setup &setup = setups->front();
      auto problem = prepare(setup);
      if (!problem) {
        if (!keepOnError(k, problem.error()))
          return problem.error();
        break;
      }
      if (!result.feasible) {
        result.stages = stages.list;
        return std::move(result);
      }
      boundOnce(*setup.target);
      noteSetUp(ts, k);
      say("chunkup " + std::to_string(k) + ": quick pass (heuristic trees)");
      quickSplits.insert(k);
      searchChunkup(k, setup, *problem, until);
      if (atBound())
        break;
    }
    heuristicsOnly = false;
    done = atBound();
  }
  for (const std::vector<int> &ks : phases) {
    int misses = 0;
    double bestBefore = best.timeUs;
    for (size_t i = 0; i < ks.size() && !done; ++i, --remainingKs) {
      int k = ks[i];
      if (stopNow()) {
        result.timeLimitHit = true;
        done = true;
        break;
      }
      // A coarser split may still fit where this one does not (a
      // broadcast on 1,024 ranks starts at 512 chunks).
      if (!canSetUp(k)) {
        result.timeLimitHit = true;
        continue;
      }
      auto ts = Clock::now();
      auto setups = makeSetups(opts, n, k);
      if (!setups) {
        if (!keepOnError(k, setups.error()))
          return setups.error();
        done = true;
        break;
      }
      // Earlier splits get more of the remaining time.
      double left =
          std::chrono::duration<double>(deadline - Clock::now()).count();
      int rest = (int)std::min<size_t>(remainingKs, 2);
      auto until =
          Clock::now() + std::chrono::microseconds(
                             (long long)(std::max(0.0, left) / rest * 1e6));
      for (size_t f = 0; f < setups->size(); ++f) {
        const Setup &setup = (*setups)[f];
        // Other families only while this split has time (building their
        // problem can take seconds on large machines).
        if (f > 0 &&
            (atBound() || Clock::now() >= until || bandwidthBound(setup)))
          break;
        auto problem = prepare(setup);
        if (!problem) {
          if (!keepOnError(k, problem.error()))
            return problem.error();
          done = true;
          break;
        }
        if (!result.feasible) {
          result.stages = stages.list;
          return std::move(result);
        }
        boundOnce(*setup.target);
        if (f == 0)
          noteSetUp(ts, k);
        // Moving contributions unreduced to their owner only pays when
        // latency dominates (checked above: at bandwidth-bound sizes it
        // multiplies the traffic into the owners).
        if (f > 0 && explainInfeasible(*problem, sketch, deadline))
          break;
        // The main family gets most of this split's time.
        auto familyUntil = f + 1 < setups->size()
                               ? Clock::now() + (until - Clock::now()) * 2 / 3
                               : until;
        searchChunkup(k, setup, *problem, familyUntil);
      }
      if (atBound() ||
          (best.timeUs * opts.goodEnough <= bound && beatsBaselines())) {
        done = true;
        break;
      }
      // Stop going this way once two splits in a row did not help (the
      // quick pass's splits, whose best trees came first, do not count).
      if (!quickSplits.count(k))
        misses = best.timeUs < bestBefore * 0.99 ? 0 : misses + 1;
      bestBefore = std::min(bestBefore, best.timeUs);
      if (misses >= 2)
        break;
    }
    if (done)
      break;
  }
  result.timeLimitHit |= timeUp();
  preferBaseline();
  if (!std::isfinite(best.timeUs)) {
    if (!result.timeLimitHit)
      return Error("no verified schedule was found (see the notes above)");
    // The limit may not have been reached: what was left of it could not
    // finish the next step, by the rates measured so far.
    double used = since(start);
    if (used < opts.timeLimitSec)
      return Error("no schedule, synthesized or baseline, was verified on " +
                   topo.name + " within the time limit (" +
                   fmt(opts.timeLimitSec, 1) + " s): after " + fmt(used, 0) +
                   " s, what was left of it could not finish the next step "
                   "(see the notes above); allow more time");
    return Error("the time limit (" + fmt(opts.timeLimitSec, 1) +
                 " s) ran out before any schedule, synthesized or baseline, "
                 "was verified on " +
                 topo.name + "; allow more time");
  }
  result.schedule = best.schedule;
  result.method = best.method;
  result.chunkup = best.chunkup;
  result.timeUs = best.timeUs;
  result.busbwGBps = best.busbwGBps;
  result.measureSeconds = best.measureSeconds;
  result.lowerBoundUs = bound;
  result.lowerBoundBandwidthUs = boundBandwidthUs;
  result.lowerBoundLatencyUs = boundLatencyUs;
  result.baselineUs = baselineUs;
  result.baselineName = baselineName;
  result.provenOptimal = best.proven && !result.timeLimitHit;
  result.smt = best.smt.empty() ? lastSmt : best.smt;
  result.stages = stages.list;
  return std::move(result);
}

} // namespace detail

Expected<SynthResult> synthesize(const Topology &topo, const Sketch &sketch,
                                 const SynthOptions &options) {
  if (Status s = topo.validate(); !s)
    return s.error();
  // A "switch" sketch models the machine (TACCL's meaning, SwitchModel.h):
  // the search, its simulations and the bound all use that model. Other
  // sketches use the machine itself (no copy of a 1,024-rank topology).
  if (sketch.intra != IntraStrategy::Switch) {
    detail::Driver d(topo, sketch, options);
    return d.run();
  }
  auto model = applySketchSwitches(topo, sketch);
  if (!model)
    return model.error();
  // The Driver relies on a checked topology (SimOptions, BaselineOptions).
  if (Status s = model->topo.validate(); !s)
    return s.error();
  detail::Driver d(model->topo, sketch, options);
  auto result = d.run();
  if (result && model->changed)
    result->modelTopology = model->topo;
  if (result)
    result->notes.insert(result->notes.begin(), model->notes.begin(),
                         model->notes.end());
  return result;
}

} // namespace ccsynth::synth
