//===- ChunkupSearch.cpp - The search for one chunk split -----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Driver::searchChunkup: the route plans of one chunk split, cheapest
// first, each evaluated as it comes: hierarchical routes on multi-node
// machines, the heuristic and minimum-hop trees, routing on rails, Z3
// routing of the full sketch, then the exact slot model; and the note when
// the symmetry ties admit no plan. See docs/synth.md, "Method" (routes).
//
//===----------------------------------------------------------------------===//
#include "Driver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace ccsynth::synth::detail {

void Driver::searchChunkup(int k, const Setup &setup,
                           const RoutingProblem &problem,
                           Clock::time_point until) {
  auto report = [&](const std::string &what, double t) {
    if (!std::isfinite(t))
      return;
    std::string pct =
        bound > 0 ? " (" + fmt(100.0 * bound / t, 1) + "% of bound)" : "";
    say("chunkup " + std::to_string(k) + ": " + what + ": " +
        fmt(t, t < 100 ? 4 : 2) + " us" + pct);
  };
  double chunk = std::ceil(opts.targetBytes / setup.route.sizeDivisor());
  CostModel cost = makeCostModel(topo, chunk);
  SearchContext ctx;
  // With nothing to write yet, the grace past the limit is for finding a
  // first schedule.
  ctx.deadline = haveSchedule() ? std::min(until, deadline) : hardDeadline;
  ctx.seed = opts.seed;
  ctx.progress = [&](const std::string &m) {
    say("chunkup " + std::to_string(k) + ": " + m);
  };
  ctx.keepSmt = opts.keepSmt;
  // No single solver call may eat the budget. The cap counts SAT
  // conflicts (deterministic), derived from the time limit alone, so that
  // runs with one seed agree.
  ctx.callConflicts =
      (unsigned)std::clamp(opts.timeLimitSec * 100, 1000.0, 20000.0);

  // Hierarchical routes first on multi-node machines: linear in the
  // schedule's size, and within a few percent of the bound at
  // bandwidth-bound sizes on rail-balanced machines.
  if (topo.numNodes() > 1 && hierarchicalDone.insert(k).second) {
    // A ring per rail streams through each NIC in order (bandwidth); the
    // origin sending to every node itself has the fewest hops (latency).
    // Rings first when a NIC streams its share for longer than four ring
    // latencies.
    double nicAlpha = std::numeric_limits<double>::infinity(), nicGBps = 0;
    for (int l : problem.usableLinks)
      if (!topo.sameNode(topo.links[l].src, topo.links[l].dst)) {
        nicAlpha = std::min(nicAlpha, topo.links[l].alphaUs);
        nicGBps = std::max(nicGBps, topo.effectiveBandwidth(l));
      }
    int nodes = topo.numNodes();
    double perRank = (double)setup.route.numValues() / topo.numRanks();
    double streamUs =
        nicGBps > 0 ? perRank * (nodes - 1) * chunk / (nicGBps * 1e3) : 0;
    // Two rings per rail halve the ring's latency for the same streams:
    // on dgx-h100x64 at 1G they reach 98.5% of the ReduceScatter bound
    // where one ring reaches 91.5% (and direct sends 69.6%), so they come
    // first; on the largest machines only the first plan may fit in time.
    std::vector<RailRoutes> order{RailRoutes::BidirectionalRing,
                                  RailRoutes::Ring, RailRoutes::Direct};
    if (!(streamUs > 4 * nodes * nicAlpha))
      order = {RailRoutes::Direct, RailRoutes::BidirectionalRing,
               RailRoutes::Ring};
    for (RailRoutes rails : order) {
      auto t0 = Clock::now();
      auto hp = hierarchicalPlan(problem, cost, ctx.deadline, rails);
      stages.add("heuristic routes", since(t0));
      if (hp)
        report(hp->method, evaluate(problem, setup, *hp, k));
      if (atBound() || timeUp() || stopNow())
        return;
    }
  }
  // Heuristic plans are evaluated once per split (the quick pass may have
  // done it already); each gives up at the deadline.
  auto t0 = Clock::now();
  // Growing a tree per destination costs a shortest-path search over the
  // usable links each (about 1e8 relaxations a second): not started when
  // that cannot end in the time left.
  double work = 0;
  for (int rep : problem.reps)
    work += (double)problem.values[rep].dests.size() *
            (double)problem.usableLinks.size();
  std::optional<Plan> h;
  if (work / 1e8 < std::chrono::duration<double>(ctx.deadline - t0).count())
    h = heuristicPlan(problem, cost, ctx.deadline);
  stages.add("heuristic routes", since(t0));
  if (!h) {
    say("chunkup " + std::to_string(k) +
        ": no time left to grow shortest-path trees");
    result.timeLimitHit |= timeUp();
    return;
  }
  if (!heuristicsOnly) {
    if (plainHeuristicsDone.insert(k).second)
      report("heuristic", evaluate(problem, setup, *h, k));
    if (atBound())
      return;
    auto t2 = Clock::now();
    auto direct = minHopPlan(problem, cost, ctx.deadline);
    stages.add("heuristic routes", since(t2));
    if (direct)
      report("minimum-hop routes", evaluate(problem, setup, *direct, k));
    if (atBound())
      return;
  }

  // Bandwidth-bound sizes favour concentrating binding resources on few
  // long FIFO streams.
  double bw = 0, alpha = std::numeric_limits<double>::infinity();
  for (int l : problem.usableLinks) {
    bw = std::max(bw, topo.effectiveBandwidth(l));
    alpha = std::min(alpha, topo.links[l].alphaUs);
  }
  bool bandwidthBound = chunk / (bw * 1e3) > 4 * alpha;
  // Rail-only inter-node links (GPU i talks to GPU i of other nodes), with
  // room for forwarding across nodes: rings per NIC rail pipeline well.
  bool railsTried = false;
  auto railRouting = [&] {
    if (!atBound() && Clock::now() < ctx.deadline && topo.numNodes() > 1 &&
        sketch.connKind != InternodeConnKind::DirectMap) {
      bool rails = true, others = false;
      for (int a = 0; a < problem.gpusPerNode; ++a)
        for (int b = 0; b < problem.gpusPerNode; ++b) {
          if (a == b)
            rails &= (bool)problem.interConn[a][b];
          else
            others |= (bool)problem.interConn[a][b];
        }
      if (rails && others) {
        Sketch railSketch = sketch;
        railSketch.connKind = InternodeConnKind::DirectMap;
        railSketch.conn.clear();
        auto rail = buildRoutingProblem(topo, railSketch, setup.route);
        if (rail) {
          auto th = Clock::now();
          auto railPlan = heuristicPlan(*rail, cost, ctx.deadline);
          stages.add("heuristic routes", since(th));
          if (!railPlan)
            return;
          Plan &railHeuristic = *railPlan;
          railHeuristic.method += " on rails";
          if (railHeuristicsDone.insert(k).second)
            report(railHeuristic.method,
                   evaluate(*rail, setup, railHeuristic, k));
          railsTried = true;
          if (heuristicsOnly)
            return;
          double railHint = busyTime(*rail, railHeuristic, cost);
          // Bandwidth-bound: one or two links per NIC (rings, bidirectional
          // rings or chains per rail); otherwise shallow rail routes.
          std::vector<RoutingSearchOptions> variants;
          bool any = railSketch.hops == InternodeHops::Any;
          int nodes = topo.numNodes();
          if (bandwidthBound && any) {
            RoutingSearchOptions one, two;
            one.nicLinks = 1;
            one.enterNodesOnce = two.enterNodesOnce = true;
            one.slack = nodes;
            one.concentrate = true;
            two.nicLinks = 2;
            two.slack = nodes / 2 + 1;
            two.concentrate = true;
            variants = {one, two};
          } else {
            RoutingSearchOptions plain;
            plain.concentrate = bandwidthBound;
            plain.depthFirst = !bandwidthBound;
            plain.enterNodesOnce = bandwidthBound;
            variants = {plain};
          }
          for (RoutingSearchOptions &ro : variants) {
            if (atBound() || Clock::now() >= ctx.deadline)
              break;
            ro.hintBound = railHint;
            auto t1 = Clock::now();
            ctx.maxVars = 150000;
            std::string tag = ro.nicLinks
                                  ? "rails, " + std::to_string(ro.nicLinks) +
                                        " link(s) per NIC"
                                  : "rails only";
            ctx.progress = [&](const std::string &m) {
              say("chunkup " + std::to_string(k) + ": " + tag + ": " + m);
            };
            auto plans = routingPlans(*rail, cost, ro, ctx);
            stages.add("routing (Z3)", since(t1));
            for (Plan &p : plans) {
              // The first plan is always evaluated (cheap next to solving).
              if (&p != &plans.front() && timeUp() &&
                  std::isfinite(best.timeUs))
                break;
              p.method += " on " + tag;
              report(p.method, evaluate(*rail, setup, p, k));
            }
          }
          ctx.progress = [&](const std::string &m) {
            say("chunkup " + std::to_string(k) + ": " + m);
          };
        }
      }
    }
  };
  // Multi-node bandwidth-bound sizes: try rails first, they are likely to
  // win and the full sketch's encoding is the larger one.
  if (bandwidthBound || heuristicsOnly)
    railRouting();
  if (heuristicsOnly) {
    // Without rails, the quick pass tries the plain heuristic trees, and
    // the later pass the rest.
    if (!railsTried && plainHeuristicsDone.insert(k).second)
      report("heuristic", evaluate(problem, setup, *h, k));
    return;
  }
  if (Clock::now() < ctx.deadline) {
    auto t1 = Clock::now();
    ctx.maxVars = 150000;
    RoutingSearchOptions ro;
    ro.concentrate = bandwidthBound;
    ro.depthFirst = !bandwidthBound;
    ro.enterNodesOnce = bandwidthBound;
    ro.hintBound = busyTime(problem, *h, cost);
    auto plans = routingPlans(problem, cost, ro, ctx);
    stages.add("routing (Z3)", since(t1));
    for (const Plan &p : plans) {
      if (&p != &plans.front() && timeUp() && std::isfinite(best.timeUs))
        break;
      report(p.method, evaluate(problem, setup, p, k));
    }
  }
  if (!bandwidthBound)
    railRouting();
  // The exact slot model is the most precise and the most expensive: only
  // when routing left a gap to the bound.
  if (!atBound() && Clock::now() < ctx.deadline &&
      setup.lowering != Setup::Lowering::GatherReduce &&
      setup.lowering != Setup::Lowering::AllReduceGather) {
    auto t1 = Clock::now();
    ctx.maxVars = 40000;
    auto exact = exactPlan(problem, cost, ctx);
    stages.add("exact slot model (Z3)", since(t1));
    if (exact)
      report(exact->method, evaluate(problem, setup, *exact, k));
  }
  // Only the overall deadline (not a call's work budget) counts as the
  // time limit; the latter shows in the plans' own proofs.
  result.timeLimitHit |= ctx.deadlineHit && timeUp();
  if (ctx.tiesUnsatisfiable && !tiesNoted) {
    tiesNoted = true;
    std::string names;
    for (const SymmetryTie &t : problem.ties)
      names += (names.empty() ? "[" : ", [") + std::to_string(t.offset) + ", " +
               std::to_string(t.blockSize) + "]";
    // (The rail variant's problem may be the one with ties.)
    std::string which =
        names.empty() ? "the sketch's partial symmetries"
                      : "symmetry_offsets " +
                            std::string(problem.ties.size() == 1 ? "entry "
                                                                 : "entries ") +
                            names;
    result.notes.push_back("no plan within the solver's depth or horizon "
                           "satisfies the ties of " +
                           which + "; the solver searched without them");
  }
}

} // namespace ccsynth::synth::detail
