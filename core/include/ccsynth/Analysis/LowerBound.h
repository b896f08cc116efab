//===- LowerBound.h - Cut-based lower bounds on collective time -----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Bandwidth bound: for a cut (S, V\S) of the ranks, the data that must cross
// from S to V\S divided by an upper bound of the cut's capacity (its
// crossing links, a shared resource counted once however many crossing
// links use it). The data comes from the collective's pre/postconditions,
// so custom collectives are covered: every distinct output set needed in
// V\S that holds a value starting in S costs one chunk (a reduction's
// partial can be combined before it crosses). AllGather/Gather need the
// other side's values, ReduceScatter/Reduce one partial per output chunk,
// AllToAll gives the bisection bound. A second bound counts the chunk
// transfers any correct schedule needs in all (one-way gossip: a set needed
// on D ranks with values from O ranks needs |O|-1 (+1 if O and D are
// disjoint) + |D|-1 transfers) over the capacity of all links together;
// for AllReduce this is the classical 2(n-1)/n of the buffer per rank. The
// same count is also taken on quotients (each node, groups of nodes, each
// rail contracted to one vertex; only transfers between them count, over
// the links between them): on m nodes an AllReduce moves 2(m-1)/m of the
// buffer per node through the NICs (docs/bounds.md).
// Cuts tried: every single rank (both directions), every node, every set of
// nodes when there are at most 12, and every set of ranks when there are at
// most 16. Latency bound: the largest minimum alpha-path from a rank holding
// a value to a rank that needs it. The bound is the larger of the two; a
// schedule's quality is bound / simulated time.
//
// Output sets that overlap (possible only in custom collectives) are
// reduced to a disjoint family first, which keeps the bound valid but may
// make it loose.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Topology/Topology.h"

#include <chrono>
#include <optional>
#include <string>

namespace ccsynth {

struct LowerBound {
  double bandwidthUs = 0;
  double latencyUs = 0;
  /// The cut that gives the bandwidth bound, in words, with the data that
  /// must cross it and its capacity; starts with "no bound:" when the inputs
  /// do not fit together (rank counts differ, invalid topology or size).
  std::string bindingCut;
  /// The exact latency search (shortest alpha paths from every origin)
  /// stopped at its deadline; latencyUs is then a weaker bound that still
  /// holds (a direct link, or at least two links: the origin's fastest
  /// outgoing plus the destination's fastest incoming).
  bool latencyCutShort = false;
  /// The cut enumeration stopped at that deadline: bandwidthUs is the
  /// largest over the cuts tried (each complete), a weaker bound that still
  /// holds.
  bool cutsCutShort = false;
  double timeUs() const {
    return bandwidthUs > latencyUs ? bandwidthUs : latencyUs;
  }
};

/// Lower bound on the time of `collective` moving `bytes` (nccl-tests size)
/// on `topology`. A chunk is bytes / collective.sizeDivisor(). When data
/// must cross a cut no link crosses, bandwidthUs is +infinity.
/// `searchUntil`, when given, bounds the latency search and the enumeration
/// of cuts, the parts whose cost grows with ranks times links (about 30 s
/// and 20 s for 1,024 and 4,096 ranks with explicit links between every
/// pair of nodes' GPUs).
/// What the bound covers: every schedule on the machine (switch
/// reductions and multicasts included), or point-to-point schedules only
/// (the topology's switches ignored), which is what the synthesizer makes.
enum class BoundScope { Machine, PointToPoint };

LowerBound lowerBound(
    const Collective &collective, const Topology &topology, double bytes,
    std::optional<std::chrono::steady_clock::time_point> searchUntil = {},
    BoundScope scope = BoundScope::Machine);

} // namespace ccsynth
