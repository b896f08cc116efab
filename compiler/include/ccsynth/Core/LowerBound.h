//===- LowerBound.h - Cut-based lower bounds on collective time -----------===//
//
// Bandwidth bound: for a cut (S, V\S) of the ranks, the data that must cross
// from S to V\S divided by the cut's capacity (links and shared resources
// crossing it). AllGather/ReduceScatter/Gather/Scatter/Broadcast/Reduce use
// the data each side needs from the other (ForestColl-style); AllReduce is
// ReduceScatter + AllGather; AllToAll uses bisection-style cuts. Cuts tried:
// every single rank, every node, every set of nodes (few nodes), and every
// subset of ranks when there are at most 16. Latency bound: the largest
// minimum alpha-path between ranks that must communicate. The bound is the
// larger of the two; a schedule's quality is bound / simulated time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Core/Collective.h"
#include "ccsynth/Core/Topology.h"

#include <string>

namespace ccsynth {

struct LowerBound {
  double bandwidthUs = 0;
  double latencyUs = 0;
  /// The cut that gives the bandwidth bound, in words.
  std::string bindingCut;
  double timeUs() const {
    return bandwidthUs > latencyUs ? bandwidthUs : latencyUs;
  }
};

/// Lower bound on the time of `collective` moving `bytes` (nccl-tests size)
/// on `topology`.
LowerBound lowerBound(const Collective &collective, const Topology &topology,
                      double bytes);

} // namespace ccsynth
