//===- SearchInternal.h - Helpers of the route-plan searches -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What Search.cpp (cost, bounds, heuristic plans) and SearchRouting.cpp
// (TACCL's routing stage and the exact search) share: depth and size
// estimates of a routing problem, link and resource capacities, node
// cuts and the load lower bound, plan descriptions, and one solver call
// with the search's deadline. Private to CCSynthSynth.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Synth/Search.h"
#include "Text.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <sstream>
#include <tuple>


namespace ccsynth::synth::detail {


/// Hop distance from each value's origin to its farthest destination.
inline int minDepth(const RoutingProblem &p) {
  const Topology &t = *p.topo;
  int n = t.numRanks(), depth = 0;
  for (int v : p.reps) {
    std::vector<int> d(n, -1);
    std::deque<int> q{p.values[v].origin};
    d[p.values[v].origin] = 0;
    while (!q.empty()) {
      int u = q.front();
      q.pop_front();
      for (int l : p.outLinks[u])
        if (d[t.links[l].dst] < 0 && p.allowed(v, l)) {
          d[t.links[l].dst] = d[u] + 1;
          q.push_back(t.links[l].dst);
        }
    }
    for (int dst : p.values[v].dests)
      depth = std::max(depth, d[dst]);
  }
  return depth;
}

/// Upper estimate of send variables of an encoding with `horizon` slots.
inline long long estimateVars(const RoutingProblem &p, int horizon) {
  long long total = 0;
  for (int v : p.reps) {
    long long links = 0;
    for (int l : p.usableLinks)
      links += p.allowed(v, l);
    total += links * horizon;
  }
  return total;
}

inline std::vector<int> linkCaps(const RoutingProblem &p, const CostModel &cost,
                          double bound) {
  std::vector<int> caps(p.topo->links.size(), -1);
  for (int l : p.usableLinks)
    caps[l] = (int)std::floor(bound / cost.link[l] + 1e-9);
  return caps;
}

inline std::vector<int> resourceCaps(const RoutingProblem &p, const CostModel &cost,
                              double bound) {
  std::vector<int> caps(p.topo->resources.size(), -1);
  for (size_t x = 0; x < caps.size(); ++x)
    caps[x] = (int)std::floor(bound / cost.resource[x] + 1e-9);
  return caps;
}

/// One node's boundary in one direction (values entering the node, or
/// leaving it) and what must cross it: `count` values over the usable
/// `links` that cross it. A resource is `exclusive` when no usable link
/// outside the cut uses it; `width` is the most resources a crossing link
/// has.
struct NodeCut {
  int count = 0;
  std::vector<int> links;
  std::vector<char> exclusive;
  size_t width = 0;

  /// The j-th resource of every crossing link, when each has one and it is
  /// exclusive (links list their resources in a fixed role order, e.g. the
  /// source's NIC, then the destination's, so these form a cover: a set of
  /// resources every crossing link uses one of); empty otherwise.
  std::vector<int> cover(const Topology &t, size_t j) const {
    std::vector<int> rs;
    for (int l : links) {
      const auto &lr = t.links[l].resources;
      if (j >= lr.size() || !exclusive[lr[j]])
        return {};
      rs.push_back(lr[j]);
    }
    return rs;
  }
};

/// Calls f(cut) for each node boundary of a multi-node problem, in each
/// direction, that some value must cross.
template <class F> void forEachNodeCut(const RoutingProblem &p, F &&f) {
  const Topology &t = *p.topo;
  for (int dir = 0; dir < 2 && t.numNodes() > 1; ++dir)
    for (int b = 0; b < t.numNodes(); ++b) {
      NodeCut cut;
      for (const RouteValue &v : p.values) {
        bool inside = t.nodeOf[v.origin] == b, other = false;
        for (int d : v.dests)
          other |= dir == 0 ? (t.nodeOf[d] == b) : (t.nodeOf[d] != b);
        cut.count += (dir == 0 ? !inside : inside) && other;
      }
      if (cut.count == 0)
        continue;
      cut.exclusive.assign(t.resources.size(), 1);
      for (int l : p.usableLinks) {
        int ns = t.nodeOf[t.links[l].src], nd = t.nodeOf[t.links[l].dst];
        bool in = dir == 0 ? (nd == b && ns != b) : (ns == b && nd != b);
        for (int x : t.links[l].resources)
          if (!in)
            cut.exclusive[x] = 0;
        if (in) {
          cut.links.push_back(l);
          cut.width = std::max(cut.width, t.links[l].resources.size());
        }
      }
      f(cut);
    }
}

/// A lower bound on the load objective: every needed reception of a rank
/// enters through its in-links, and every value a node needs from outside
/// crosses the links (and the shared resources) entering that node; the
/// same for values leaving their origin's node.
inline double loadLowerBound(const RoutingProblem &p, const CostModel &cost) {
  const Topology &t = *p.topo;
  std::vector<int> need(t.numRanks(), 0);
  for (const RouteValue &v : p.values)
    for (int d : v.dests)
      ++need[d];
  double lb = 0;
  for (int r = 0; r < t.numRanks(); ++r) {
    double rate = 0;
    for (int l : p.inLinks[r])
      rate += 1.0 / cost.link[l];
    if (rate > 0 && need[r] > 0)
      lb = std::max(lb, need[r] / rate);
  }
  // Node cuts: what crosses a node's boundary at its links' rate, and at
  // most at the rate of any cover of its links by shared resources.
  forEachNodeCut(p, [&](const NodeCut &cut) {
    double rate = 0;
    for (int l : cut.links)
      rate += 1.0 / cost.link[l];
    for (size_t j = 0; j < cut.width; ++j) {
      std::vector<int> rs = cut.cover(t, j);
      if (rs.empty())
        continue;
      std::set<int> cover(rs.begin(), rs.end());
      double resRate = 0;
      for (int x : cover)
        resRate += 1.0 / cost.resource[x];
      rate = std::min(rate, resRate);
    }
    if (rate > 0)
      lb = std::max(lb, cut.count / rate);
  });
  return lb;
}

inline std::string describePlan(const RoutingProblem &p, const Plan &plan,
                         const CostModel &cost) {
  int depth = 0;
  for (const PlanSend &s : plan.sends)
    depth = std::max(depth, s.slot);
  return std::to_string(plan.sends.size()) +
         " transfers, max link/resource "
         "busy " +
         fmt(busyTime(p, plan, cost)) + " us, depth " + std::to_string(depth);
}

/// Solves `query` (a base encoding plus query constraints) with a fresh
/// solver within a fraction of the time left; keeps the solver in `out`
/// for decoding and records timeouts.
inline SolveOutcome solveFresh(const BoolModel &query, SearchContext &ctx,
                        double fraction,
                        std::unique_ptr<IncrementalSolver> &out,
                        bool budgeted = true) {
  SolveOutcome o;
  double left = ctx.secondsLeft();
  if (left <= 0.01) {
    ctx.cutShort = ctx.deadlineHit = true;
    o.reason = "time limit";
    return o;
  }
  SolverOptions so;
  so.seed = ctx.seed;
  auto solver = std::make_unique<IncrementalSolver>(so);
  if (Status s = solver->sync(query); !s) {
    o.reason = s.error().message;
    return o;
  }
  o = solver->solve({}, std::max(0.01, left * fraction),
                    budgeted ? ctx.callConflicts : 0);
  if (o.status == SolveStatus::Unknown) {
    ctx.cutShort = true;
    ctx.deadlineHit |= ctx.secondsLeft() <= 0.05;
  }
  out = std::move(solver);
  return o;
}


} // namespace ccsynth::synth::detail
