//===- Problem.h - The routing problem a sketch defines -------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A RoutingProblem is what the encodings search over: the values of a copy
// collective (each starts on one rank and is needed on a set of ranks), the
// links the sketch lets each value use, and the symmetry group (from the
// sketch's symmetry_offsets) that maps ranks, links, shared resources and
// values onto themselves. Only one representative per value orbit is
// encoded; every other value's route is the image of its representative's.
// A sketch symmetry that maps the links inside its blocks but not those
// between blocks is not in that group: as in TACCL, it only ties the sends
// inside its blocks (SymmetryTie), which the encodings add as constraints.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Synth/Sketch.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ccsynth::synth {

/// One value to route.
struct RouteValue {
  int origin = 0;      ///< rank holding it at the start
  int originIndex = 0; ///< its input chunk index there
  /// Ranks other than the origin that need it, ascending.
  std::vector<int> dests;
};

/// A permutation group acting on ranks, links, resources and values.
struct SymmetryGroup {
  /// element g: rank[g][r], link[g][l] (-1 for links the sketch does not
  /// let anyone use), resource[g][x], value[g][v]. Element 0 is the
  /// identity.
  std::vector<std::vector<int>> rank, link, resource, value;
  std::vector<int> inverse;
  size_t size() const { return rank.size(); }
};

/// A sketch symmetry kept as TACCL keeps it (taccl/routing.py,
/// _add_symmetry): value v's send over a link inside a block of `blockSize`
/// ranks equals value value[v]'s send over the image link; sends over links
/// between blocks are free. Kept for the symmetries that do not map the
/// whole machine (the others are in the group).
struct SymmetryTie {
  int offset = 0, blockSize = 1;
  std::vector<int> rank;  ///< rank permutation
  std::vector<int> link;  ///< image of each usable link inside a block; else -1
  std::vector<int> value; ///< value permutation
  /// Number of links that are tied (usable and inside a block).
  int numTiedLinks() const;
};

class RoutingProblem {
public:
  const Topology *topo = nullptr;
  /// The copy collective whose values are routed.
  Collective collective;
  int gpusPerNode = 0;
  std::vector<int> localOf; ///< local GPU id of each rank

  std::vector<RouteValue> values;
  /// Links the sketch lets some value use.
  std::vector<int> usableLinks;
  std::vector<char> linkUsable;
  /// For switch sketches: the switch (index into switchStrategy) a link's
  /// traffic goes through, or -1.
  std::vector<int> switchOfLink;
  std::vector<HyperedgeStrategy> switchStrategy;

  SymmetryGroup group;
  std::vector<int> reps;   ///< one value per orbit, ascending
  std::vector<int> repOf;  ///< per value
  std::vector<int> elemOf; ///< per value: g with group.value[g][repOf[v]] = v
  /// Per value: the group elements fixing it (identity excluded).
  std::vector<std::vector<int>> stabilizer;
  /// Orbit representative of each link / resource under the group (-1 for
  /// unusable links), and orbit sizes.
  std::vector<int> linkOrbitRep, resourceOrbitRep;
  std::vector<int> linkOrbitSize, resourceOrbitSize;

  /// Ties of the sketch's symmetries that the group leaves out, one per
  /// such symmetry_offsets entry (see SymmetryTie).
  std::vector<SymmetryTie> ties;

  /// Every node's usable intra-node links connect all its GPUs both ways:
  /// then no value ever needs to enter a node twice.
  bool nodesConnected = false;

  /// Remarks for the user (symmetry elements dropped and why).
  std::vector<std::string> notes;

  /// Whether value v may travel over link l under the sketch.
  bool allowed(int value, int link) const;
  /// Usable links into / out of each rank.
  std::vector<std::vector<int>> inLinks, outLinks;

  // Sketch rules kept for allowed().
  bool multiNode = false;
  bool directHops = true;
  /// sendsTo[senderLocal][receiverLocal] for inter-node links.
  std::vector<std::vector<char>> interConn;
  /// relays[senderLocal][originLocal]; empty = no rev map (anyone).
  std::vector<std::vector<char>> relays;
  /// Per value: the nodes holding one of its destinations.
  std::vector<std::vector<char>> destNode;
};

/// Builds the routing problem of copy collective `collective` on `topo`
/// under `sketch`; errors (sketch vs topology mismatches) are located in the
/// sketch file.
Expected<RoutingProblem> buildRoutingProblem(const Topology &topo,
                                             const Sketch &sketch,
                                             const Collective &collective);

/// When some rank can never receive some value under the sketch's links,
/// an error saying which, and what in the sketch prevents it. With
/// `until`, a check still running at that instant gives up and returns
/// nothing (not proven infeasible): on 4,096 ranks one search per value
/// takes seconds.
std::optional<Error> explainInfeasible(
    const RoutingProblem &problem, const Sketch &sketch,
    std::optional<std::chrono::steady_clock::time_point> until = {});

} // namespace ccsynth::synth
