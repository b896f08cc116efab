//===- Lowering.h - From route plans to ordered transfer lists ------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A TaskList is a schedule before timing: transfers in a reference order
// that is a correct sequential execution of the collective (executing them
// one at a time in vector order implements it). The list scheduler later
// reorders independent transfers; the dependencies it must keep are derived
// from the slots each transfer reads and writes in this reference order.
//
// Lowerings:
//  - copy collectives (AllGather, AllToAll, Broadcast, Gather, Scatter,
//    custom copies): each plan send copies the value from where the sender
//    keeps it (its input, its output slot, or a scratch slot on relays) to
//    where the receiver keeps it;
//  - ReduceScatter / Reduce: the exact inverse of an AllGather / Broadcast
//    plan: every send is reversed onto the opposite link, copies become
//    reductions, and partial sums gather in scratch accumulators;
//  - AllReduce: the ReduceScatter lowering into each owner's output slot,
//    followed by the AllGather lowering from there.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Synth/Encoding.h"

#include <memory>
#include <vector>

namespace ccsynth::synth {

struct Task {
  Transfer tr; ///< count, op, link; step is assigned by the scheduler
  /// Dispatch priority among ready transfers of one link (smaller first).
  double prio = 0;
  /// The plan send this task carries out (copy trees), or whose reverse
  /// it carries out or folds in (reduction trees); -1 otherwise.
  int planSend = -1;
  bool reversed = false;
};

struct TaskList {
  /// Shared by the variants of one lowering (an AllReduce's conditions on
  /// 512 ranks take hundreds of MB).
  std::shared_ptr<const Collective> collective;
  int scratchChunks = 0;
  std::vector<Task> tasks;
};

/// Lowers a plan of copy collective `problem.collective`.
Expected<TaskList> lowerCopy(const RoutingProblem &problem, const Plan &plan);

/// How a rank's accumulator gets its own contribution: by a local copy at
/// the start (off the critical path when latency dominates), or by a local
/// reduction right after the first arrival (which then lands in the
/// accumulator itself, saving the start-up copies' bandwidth). With Early
/// and AfterFirstArrival, later arrivals land in scratch and are folded in
/// by local reductions, so children's transfers overlap;
/// the ...ReduceOnArrival variants start the same way but reduce every
/// later arrival into the accumulator as it lands (no local folds: the
/// rank's copy engine stays free, but its children's transfers into one
/// accumulator take turns).
enum class AccumulatorInit {
  Early,
  AfterFirstArrival,
  EarlyReduceOnArrival,
  AfterFirstArrivalReduceOnArrival
};

/// Lowers the inverse of an AllGather (to ReduceScatter) or Broadcast (to
/// Reduce) plan; `target` is the reduction collective (same ranks, chunk
/// factor and root as the plan's collective).
Expected<TaskList> lowerInverse(const RoutingProblem &problem, const Plan &plan,
                                const Collective &target, AccumulatorInit init);

/// Lowers AllReduce `target` (chunk factor n*c) from an AllGather plan with
/// chunk factor c: reduce-scatter by the inverse plan, then all-gather.
Expected<TaskList> lowerAllReduce(const RoutingProblem &problem,
                                  const Plan &plan, const Collective &target,
                                  AccumulatorInit init);

/// Lowers Reduce / ReduceScatter `target` by moving every contribution,
/// unreduced, to the rank that owns its result (a plan of the Gather /
/// AllToAll collective with the same layout), where local reductions fold
/// them in as they land: no reduction on relays, which wins when latency,
/// not bandwidth, dominates.
Expected<TaskList> lowerGatherReduce(const RoutingProblem &problem,
                                     const Plan &plan,
                                     const Collective &target);

/// Lowers AllReduce `target` (chunk factor n*c) from an AllToAll plan with
/// chunk factor c: every contribution moves unreduced to the chunk's owner,
/// which reduces locally, then the owner's result travels back along the
/// reversed routes (their union, as a tree) to every rank.
Expected<TaskList> lowerAllReduceGather(const RoutingProblem &problem,
                                        const Plan &plan,
                                        const Collective &target);

} // namespace ccsynth::synth
