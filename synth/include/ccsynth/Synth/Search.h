//===- Search.h - Finding route plans: heuristic, routing, exact ----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Three ways to obtain plans for a routing problem, from cheapest to most
// precise:
//  - heuristicPlan: greedy load-aware shortest-path trees (no solver); it
//    always exists for a feasible sketch and is the fallback when the time
//    limit leaves nothing else;
//  - routingPlans (TACCL's routing stage, with Z3): hop-level encoding;
//    minimizes the largest per-link / per-resource busy time at the target
//    size by bisection over guarded pseudo-Boolean load bounds, then, at
//    that bound, the depth, and the sketch's switch hyperedge strategies
//    (uc-min / uc-max distinct peers) or, for bandwidth-bound sizes, the
//    number of distinct links through the binding shared resources (few
//    long FIFO streams pipeline better than many fair-shared ones);
//  - exactPlan (SCCL / TE-CCL style, with Z3): a time-expanded encoding
//    where a slot is the duration of the fastest transfer; the smallest
//    satisfiable horizon is the optimum of that model.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Synth/Encoding.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ccsynth::synth {

/// Time of one transfer (one chunk) per link and per shared resource at
/// the target size, µs.
struct CostModel {
  std::vector<double> link;     ///< alpha + chunk / link bandwidth
  std::vector<double> resource; ///< chunk / resource bandwidth
  double chunkBytes = 0;
};
CostModel makeCostModel(const Topology &topo, double chunkBytes);

/// Shared state of one synthesis run: the deadline, the solver seed,
/// progress reporting and accumulated statistics.
struct SearchContext {
  std::chrono::steady_clock::time_point deadline;
  unsigned seed = 0;
  std::function<void(const std::string &)> progress;
  /// Largest encoding (variables) a search may build.
  int maxVars = 150000;
  /// Budget of a single solver call in SAT conflicts (deterministic; 0 =
  /// none). Bisection treats a call that runs out as unsatisfiable and
  /// moves on. The wall-clock deadline still applies.
  unsigned callConflicts = 0;
  /// Set when a solver call stopped at its work budget or the deadline,
  /// and when the deadline stopped a search.
  bool cutShort = false;
  bool deadlineHit = false;
  /// Set when the problem's symmetry ties (RoutingProblem::ties) admitted
  /// no plan and a search went on without them.
  bool tiesUnsatisfiable = false;
  /// Attach the SMT-LIB text of their encoding to solver-made plans.
  bool keepSmt = false;
  double secondsLeft() const;
  void say(const std::string &msg) const {
    if (progress)
      progress(msg);
  }
};

/// Greedy load-aware shortest-path trees. Returns nothing when `deadline`
/// passes first (growing one tree per destination costs a shortest-path
/// search over every link: minutes on hundreds of ranks).
std::optional<Plan>
heuristicPlan(const RoutingProblem &problem, const CostModel &cost,
              std::optional<std::chrono::steady_clock::time_point> deadline =
                  std::nullopt);

/// The largest per-link / per-resource busy time of a plan, µs.
double busyTime(const RoutingProblem &problem, const Plan &plan,
                const CostModel &cost);

/// Minimum-hop trees (fewest hops, then smallest latency), ignoring load:
/// the routes of a direct all-pairs exchange where the sketch allows them.
/// Nothing when `deadline` passes first.
std::optional<Plan>
minHopPlan(const RoutingProblem &problem, const CostModel &cost,
           std::optional<std::chrono::steady_clock::time_point> deadline =
               std::nullopt);

/// Hierarchical routes of a multi-node machine, built without any search
/// over the whole graph: a value goes from its origin to one entry rank in
/// every other node that needs it (straight from the origin, GPU i to
/// GPU i where the sketch allows that link, else the first allowed peer; or
/// relayed along rings of the nodes on the origin's rail), and from the
/// entry rank (or the origin) along the node's own minimum-hop tree to the
/// ranks of that node that need it. Every value then crosses
/// into each node once (the node cut's minimum) and each NIC carries its own
/// GPU's values (the rails balance). Linear in the number of sends; nothing
/// when the machine has one node, the sketch forbids such routes, or
/// `deadline` passes first.
/// How hierarchical routes cross between nodes.
enum class RailRoutes {
  /// The origin sends to every other node itself (its NIC's links share
  /// the NIC at once: every copy arrives late).
  Direct,
  /// Along a ring of the nodes on the origin's rail, each node's rail GPU
  /// relaying to the next (one link per NIC: a FIFO stream that pipelines).
  Ring,
  /// Both ways round that ring, halfway each (two links per NIC, half the
  /// hops).
  BidirectionalRing,
};
std::optional<Plan>
hierarchicalPlan(const RoutingProblem &problem, const CostModel &cost,
                 std::optional<std::chrono::steady_clock::time_point> deadline =
                     std::nullopt,
                 RailRoutes rails = RailRoutes::Direct);

struct RoutingSearchOptions {
  /// Hop levels beyond the minimal depth.
  int slack = 2;
  /// Also minimize distinct links through binding shared resources.
  bool concentrate = false;
  /// When > 0, a busy time known to be achievable (a heuristic plan's):
  /// the first route is searched under it.
  double hintBound = 0;
  /// Forbid a value entering a node twice (bandwidth-bound sizes).
  bool enterNodesOnce = false;
  /// Latency-bound sizes: first the smallest depth, then the smallest busy
  /// time at that depth (instead of busy time first).
  bool depthFirst = false;
  /// When > 0: at most this many distinct links through every shared
  /// resource that inter-node links cross (NICs), as a hard constraint
  /// (1 forces one ring or chain per NIC rail).
  int nicLinks = 0;
};
std::vector<Plan> routingPlans(const RoutingProblem &problem,
                               const CostModel &cost,
                               const RoutingSearchOptions &options,
                               SearchContext &ctx);

/// The optimal plan of the slot model, when the encoding fits the budget
/// and a horizon is found before the deadline.
std::optional<Plan> exactPlan(const RoutingProblem &problem,
                              const CostModel &cost, SearchContext &ctx);

} // namespace ccsynth::synth
