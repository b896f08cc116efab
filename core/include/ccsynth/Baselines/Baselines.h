//===- Baselines.h - NCCL-style reference schedules for any topology ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Baselines are the schedules a synthesized one must beat: NCCL-style rings
// (as many edge-disjoint rings as the topology has), double binary trees,
// direct (all-pairs) exchanges, and hierarchical (intra-node, then
// inter-node) variants for multi-node topologies, and NCCL's NVLS (reduce
// and multicast through an NVLink SHARP switch) where one joins every
// rank. Where two ranks are not adjacent, chunks are forwarded along the
// shortest route through scratch slots. Every baseline returned has passed
// the verifier.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ccsynth {

enum class BaselineKind {
  Ring,
  Tree,
  Direct,
  Hierarchical,
  Nvls,
  Collnet,
  NvlsSharp,
  CollnetChain
};
const char *toString(BaselineKind kind);
std::optional<BaselineKind> parseBaselineKind(const std::string &s);

/// NCCL's in-network algorithms among the families: NVLS with SHARP and
/// CollNet Direct first (NCCL's fastest where the network reduces, so a
/// search cut short by its deadline still times them), then NVLS
/// (NVLS-tree on several nodes).
inline constexpr BaselineKind kInNetworkBaselines[] = {
    BaselineKind::NvlsSharp, BaselineKind::Collnet, BaselineKind::Nvls};
/// Every in-network algorithm NCCL may run, for what NCCL reaches on a
/// machine: the search's families and CollNet Chain, which the search
/// leaves out (it moves what CollNet Direct moves through each NVLink port
/// and NIC, along a chain with a longer fill).
inline constexpr BaselineKind kNcclInNetworkAlgorithms[] = {
    BaselineKind::NvlsSharp, BaselineKind::Collnet, BaselineKind::Nvls,
    BaselineKind::CollnetChain};

struct BaselineOptions {
  bool inPlace = false;
  int root = 0;
  /// Pipelining depth (chunks per ring/tree segment); 0 = the baseline's
  /// default.
  int pipeline = 0;
  /// Ring baselines: use at most this many of the topology's rings (0 =
  /// all). A power of two keeps nchunksperloop free of the odd factor
  /// that, say, DGX-1's six rings give it (MSCCL then never selects the
  /// program for power-of-two sizes).
  int maxRings = 0;
  /// The caller checked the topology (Topology::validate) and has not
  /// changed it since: skips that pass over every link.
  bool topologyValidated = false;
  /// Past this instant building stops with an error naming the time limit
  /// (a synthesis deadline: an all-pairs schedule on 1,024 ranks relayed
  /// across nodes takes seconds to build and verify).
  std::optional<std::chrono::steady_clock::time_point> until;
};

/// Collectives a baseline kind supports on a topology (hierarchical needs
/// more than one node).
bool baselineSupports(BaselineKind kind, CollectiveKind collective,
                      const Topology &topology);

/// Builds and verifies a baseline schedule.
Expected<Schedule> makeBaseline(BaselineKind kind, CollectiveKind collective,
                                const Topology &topology,
                                const BaselineOptions &options = {});

} // namespace ccsynth
