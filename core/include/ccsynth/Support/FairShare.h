//===- FairShare.h - Max-min fair rates by progressive filling --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Flows cross constraints (links, shared resources, copy engines), each of
// a capacity; a flow may also have a cap of its own (its link's speed). The
// max-min fair rates are found by progressive filling: all unfrozen flows
// rise together; a flow freezes when a constraint it crosses saturates, or
// at its cap when that is below every constraint's share. The solver is
// incremental: the caller says which constraints and flows changed (a flow
// started or stopped streaming), and only the component connected to them
// through shared constraints is solved again.
//
// Freezing a flow at level L <= a constraint's fair share only raises that
// share, so a heap entry's key is a lower bound of its constraint's
// current share: re-evaluating the minimum entry lazily finds the next
// constraint to saturate. A cap ties with a share in the cap's favour, and
// constraints of equal share saturate in the order of their ids.
//
// The chunk-level simulator (Analysis/Simulator.cpp) and synth's list
// scheduler share this solver. The step model's sharing
// (Perf/StepSimulator.cpp) weighs each threadblock by the fraction of the
// time it streams, which this solver does not: it keeps its own rounds.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

namespace ccsynth {

class FairShare {
public:
  /// Sizes the solver for `constraints` constraints and `flows` flows
  /// (ids 0..n-1); everything starts clean.
  void reset(int constraints, int flows) {
    constraintStamp.assign(constraints, 0);
    remCap.assign(constraints, 0);
    unfrozen.assign(constraints, 0);
    flowStamp.assign(flows, 0);
    frozen.assign(flows, 0);
    stamp = 0;
    dirtyConstraints.clear();
    dirtyFlows.clear();
  }

  /// Constraint `c` gained or lost a flow.
  void touchConstraint(int c) { dirtyConstraints.push_back(c); }
  /// Flow `f` started streaming (or its constraints changed).
  void touchFlow(int f) { dirtyFlows.push_back(f); }
  /// Whether anything changed since the last solve.
  bool pending() const {
    return !dirtyConstraints.empty() || !dirtyFlows.empty();
  }

  /// Solves the rates of every flow connected to what changed and calls
  /// `freeze(f, rate)` once for each, in the order they freeze (the
  /// solver's own state is updated first). `g` describes the flows:
  ///   const std::vector<int> &flowsOn(int c): the streaming flows on c;
  ///   (a range of int) constraintsOf(int f);
  ///   double capacity(int c);
  ///   bool streaming(int f);
  ///   double cap(int f): the flow's own cap;
  ///   bool capBinds(int f): whether that cap can stop it (false: a
  ///     constraint always does first).
  /// A streaming flow that crosses no constraint freezes at its cap.
  template <class Graph, class Freeze>
  void solve(const Graph &g, Freeze &&freeze) {
    if (!pending())
      return;
    gather(g);
    // Progressive filling.
    auto freezeAt = [&](int f, double level) {
      frozen[f] = 1;
      for (int c : g.constraintsOf(f)) {
        remCap[c] = std::max(0.0, remCap[c] - level);
        --unfrozen[c];
      }
      freeze(f, level);
    };
    capFlows.clear();
    for (int f : groupFlows) {
      frozen[f] = 0;
      if (g.capBinds(f))
        capFlows.push_back(f);
    }
    for (int c : groupConstraints) {
      remCap[c] = g.capacity(c);
      unfrozen[c] = (int)g.flowsOn(c).size();
    }
    for (int f : groupFlows)
      if (std::empty(g.constraintsOf(f)))
        freezeAt(f, g.cap(f));
    std::sort(capFlows.begin(), capFlows.end(),
              [&](int a, int b) { return g.cap(a) < g.cap(b); });
    heap.clear();
    for (int c : groupConstraints)
      if (unfrozen[c] > 0)
        heap.push_back({remCap[c] / unfrozen[c], c});
    std::make_heap(heap.begin(), heap.end(), std::greater<>());
    auto popShare = [&] {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      auto top = heap.back();
      heap.pop_back();
      return top;
    };
    auto pushShare = [&](double share, int c) {
      heap.push_back({share, c});
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    };
    size_t nextCap = 0;
    while (true) {
      while (nextCap < capFlows.size() && frozen[capFlows[nextCap]])
        ++nextCap;
      // The constraint with the smallest current share, if any is left.
      int c = -1;
      double share = std::numeric_limits<double>::infinity();
      while (!heap.empty()) {
        auto [key, id] = popShare();
        if (unfrozen[id] <= 0)
          continue;
        double current = remCap[id] / unfrozen[id];
        if (!heap.empty() && current > heap.front().first) {
          pushShare(current, id);
          continue;
        }
        c = id;
        share = current;
        break;
      }
      if (nextCap < capFlows.size() && g.cap(capFlows[nextCap]) <= share) {
        if (c >= 0)
          pushShare(share, c);
        int f = capFlows[nextCap++];
        freezeAt(f, g.cap(f));
        continue;
      }
      if (c < 0)
        break;
      for (int f : g.flowsOn(c))
        if (!frozen[f])
          freezeAt(f, share);
    }
  }

private:
  /// The connected group of flows and constraints reachable from what
  /// changed (flowsOn lists only streaming flows; a dirty flow may have
  /// finished within this instant).
  template <class Graph> void gather(const Graph &g) {
    ++stamp;
    groupConstraints.clear();
    groupFlows.clear();
    work.clear();
    auto visitConstraint = [&](int c) {
      if (constraintStamp[c] != stamp) {
        constraintStamp[c] = stamp;
        groupConstraints.push_back(c);
        work.push_back(c);
      }
    };
    auto visitFlow = [&](int f) {
      if (flowStamp[f] == stamp)
        return;
      flowStamp[f] = stamp;
      groupFlows.push_back(f);
      for (int c : g.constraintsOf(f))
        visitConstraint(c);
    };
    for (int c : dirtyConstraints)
      visitConstraint(c);
    for (int f : dirtyFlows)
      if (g.streaming(f))
        visitFlow(f);
    while (!work.empty()) {
      int c = work.back();
      work.pop_back();
      for (int f : g.flowsOn(c))
        visitFlow(f);
    }
    dirtyConstraints.clear();
    dirtyFlows.clear();
  }

  std::uint32_t stamp = 0;
  std::vector<std::uint32_t> constraintStamp, flowStamp;
  std::vector<double> remCap;
  std::vector<int> unfrozen;
  std::vector<char> frozen;
  std::vector<int> groupConstraints, groupFlows, work, capFlows;
  std::vector<std::pair<double, int>> heap;
  std::vector<int> dirtyConstraints, dirtyFlows;
};

} // namespace ccsynth
