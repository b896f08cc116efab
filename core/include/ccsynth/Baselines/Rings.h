//===- Rings.h - Edge-disjoint directed Hamiltonian rings of a topology ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// NCCL runs one ring per channel and uses as many channels as the machine
// has disjoint rings. findRings reproduces that choice on any topology: every
// ring runs at the same rate b, a link carries floor(bandwidth / b) rings and
// a shared resource (an NVSwitch port, a NIC) floor(its bandwidth / b); the
// rate is picked among the links' bandwidths to maximize rings x rate.
// Multi-node rings cross every node boundary once, through a different NIC
// per ring where the machine has several. Point-to-point meshes of up to 64
// ranks (DGX-1, tori) get an exact search for undirected Hamiltonian cycles,
// each used in both directions, within a work budget; switched and
// multi-node machines a constructive one that stays fast at hundreds of
// ranks; a greedy search adds what fits after either.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Topology/Topology.h"

#include <vector>

namespace ccsynth {

struct RingSearchOptions {
  /// Upper limit on the rings returned (NCCL's channel limit is 32).
  int maxRings = 16;
  /// Work allowed to the exact search on point-to-point meshes (search
  /// nodes x ranks); past it the greedy search takes over. Bounds the time
  /// on any input (the default is a few milliseconds).
  long budget = 4'000'000;
};

struct RingSet {
  /// Each ring lists every rank of the searched set once, in ring order
  /// (data flows rings[q][i] -> rings[q][i+1] -> ... -> rings[q][0]).
  std::vector<std::vector<int>> rings;
  /// The per-ring rate the capacities were computed for (GB/s); 0 when
  /// `routed`.
  double rateGBps = 0;
  /// True when no Hamiltonian ring exists: rings holds one logical ring in
  /// node-major rank order whose hops must be forwarded through
  /// intermediate ranks.
  bool routed = false;
};

/// Finds capacity-disjoint directed Hamiltonian rings over `ranks` (a subset
/// of the topology's ranks, using only links among them). Always returns at
/// least one ring when `ranks` is not empty.
RingSet findRings(const Topology &topology, const std::vector<int> &ranks,
                  const RingSearchOptions &options = {});
/// The same with the topology's best link per pair computed already
/// (`best[s * n + d]`, as baseline::bestLinks gives it): searching each
/// node of a large machine then costs what its own links cost.
RingSet findRings(const Topology &topology, const std::vector<int> &ranks,
                  const std::vector<int> &best,
                  const RingSearchOptions &options = {});

/// findRings over every rank of the topology.
RingSet findRings(const Topology &topology,
                  const RingSearchOptions &options = {});

} // namespace ccsynth
