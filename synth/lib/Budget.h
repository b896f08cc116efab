//===- Budget.h - Time and size estimates of the synthesizer --------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Synthesizer-private: the clock and the per-stage times, the limits on
// what one search may hold or simulate, and the estimates of a
// baseline's size that order the baselines and skip those that cannot be
// measured in time. The Driver's own deadlines and cost estimates are its
// members (Driver.h), defined in Budget.cpp. See docs/synth.md, "Time
// limit".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Synth/Synthesizer.h"
#include "Text.h"

#include <chrono>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace ccsynth::synth::detail {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Seconds spent per stage, in first-use order.
class Stages {
public:
  void add(const std::string &name, double s) {
    for (StageTime &st : list)
      if (st.name == name) {
        st.seconds += s;
        return;
      }
    list.push_back({name, s});
  }
  std::vector<StageTime> list;
};

/// Collectives in which every rank receives something from every other
/// one: each of their schedules has at least n(n-1) transfers.
bool everyPairCollective(CollectiveKind c);

/// Most condition entries (chunk slots and pooled values) the collectives
/// of one chunk split may hold: a few GB with the routing problem.
constexpr double kMaxConditionEntries = 3e8;

/// Baselines larger than this are not simulated during a search (memory:
/// the hierarchical AllReduce on 1,024 ranks, 3M transfers, takes 0.8 GB
/// to simulate); smaller ones are when the time left allows.
constexpr size_t kMaxBaselineTransfers = 4000000;

/// The sum over ranks of the fewest hops from `src` to them (`toSrc`: from
/// them to `src`): the transfers of sending one chunk from `src` to every
/// rank, relayed where there is no link (n - 1 where `src` is linked to
/// all; about n^2/4 on a ring). Unreachable ranks count n hops.
double hopSum(const Topology &topo, int src, bool toSrc);

/// Transfers a baseline of `kind` has, roughly (for ordering and for
/// skipping what cannot be measured in time), in units of n^2 as counted
/// on dgx-h100x4: the direct and hierarchical AllGather and AllToAll move
/// each chunk once (the hierarchical AllToAll twice), a ReduceScatter also
/// folds each arrival in (about 2 n^2) and an AllReduce adds the AllGather
/// (3 n^2); the multi-ring baseline of a multi-node machine has one ring
/// per GPU of a node, and its AllToAll relays each chunk half way round
/// on average; trees pipeline a few chunks down and up (23 n).
double baselineTransfersEstimate(BaselineKind kind, CollectiveKind c,
                                 const Topology &topo, int root);

} // namespace ccsynth::synth::detail
