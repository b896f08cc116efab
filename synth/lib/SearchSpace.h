//===- SearchSpace.h - What the synthesizer searches over -----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The search space of synthesize() (synthesizer-private): the families of
// routes that build a collective (which copy collective is routed and how
// its plans lower to the target) and the chunk splits tried, in order.
// Defined in SearchSpace.cpp. See docs/synth.md, "Method" and "Chunk
// splits".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Synth/Synthesizer.h"

#include <memory>
#include <string>
#include <vector>

namespace ccsynth::synth::detail {

/// One way to build the collective: which copy collective's routes are
/// searched, and how a route plan becomes the target's transfers.
struct Setup {
  enum class Lowering {
    Copy,
    Inverse,
    AllReduce,
    GatherReduce,
    AllReduceGather
  };
  Collective route; ///< routed copy collective
  /// What the schedule implements (shared by a split's families: an
  /// AllReduce's conditions take hundreds of MB on 512 ranks).
  std::shared_ptr<const Collective> target;
  Lowering lowering = Lowering::Copy;
  std::string label; ///< for reports ("" for the main family)
};

/// The families of routes for `o.kind` with chunk split k: the main one
/// first (its feasibility decides the sketch's).
Expected<std::vector<Setup>> makeSetups(const SynthOptions &o, int n, int k);

/// Chunk splits to try: the sketch's input_chunkup first, then finer
/// splits (ascending), then coarser ones (descending). Each list is cut
/// short by the driver once splitting further stops helping.
std::vector<std::vector<int>> chunkups(const Topology &topo, const Sketch &sk,
                                       const SynthOptions &o,
                                       const Collective &route1);

} // namespace ccsynth::synth::detail
