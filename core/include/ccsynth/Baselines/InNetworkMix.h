//===- InNetworkMix.h - In-network schedules mixed with point-to-point ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Schedules that run an in-network algorithm (NVLS, NVLS-tree, CollNet,
// NVLS with SHARP) and a point-to-point schedule, or a second in-network
// algorithm, side by side on shares of the buffer: the
// switch carries its share at the switch's own throughput while the
// NVLink and network ports carry the other share, where the switch alone
// leaves them partly idle. Each candidate is verified and timed by the
// in-network runtime model (simulateInNetworkRuntime), the model of
// NCCL's NVLS and CollNet kernels: predictions of schedules. Only
// generated code lowers switch transfers (SwitchLowering.h), so what such
// a schedule runs as is timed by compiling it (synth does, for the best).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ccsynth {

struct InNetworkCandidate {
  /// "nvls", "collnet", or "nvls 7/8 + ring 1/8" (shares of the bytes).
  std::string name;
  Schedule schedule;
  /// The runtime model's time at the size searched for.
  double timeUs = 0;
  /// The in-network algorithm's share of the bytes (1 alone).
  double share = 1;
};

struct InNetworkSearch {
  /// NCCL's in-network algorithms the machine allows for the collective,
  /// alone (as NCCL runs them).
  std::vector<InNetworkCandidate> alone;
  /// ccsynth's own in-network schedules the machine allows, alone (NVLS
  /// with rail rings on several nodes).
  std::vector<InNetworkCandidate> own;
  /// The fastest of everything tried (alone and mixed), when any.
  std::optional<InNetworkCandidate> best;
  /// The fastest of everything tried that has no operation through an IB
  /// SHARP switch (what a GPU kernel can issue: NCCL's device API has no
  /// in-network reduction across nodes), when any.
  std::optional<InNetworkCandidate> bestWithoutSharp;
  /// What a GPU kernel could run, for synth to weigh as generated code:
  /// every candidate alone (ccsynth's own, then NCCL's) and the
  /// InNetworkOptions::keepMixes fastest mixes, each without an operation
  /// through an IB SHARP switch; in that order, the mixes fastest first.
  /// The runtime model ranks what NCCL's kernels would run; generated code
  /// runs the point-to-point share with fewer threadblocks, so a mix it
  /// ranks second can run faster than its first.
  std::vector<InNetworkCandidate> runnable;
  /// Mixed candidates verified and timed.
  int mixesTried = 0;
  /// The deadline stopped the search before every share was tried.
  bool cutShort = false;
};

struct InNetworkOptions {
  double bytes = 1 << 30;
  bool inPlace = false;
  /// Point-to-point schedules to mix with, besides the ring baseline (a
  /// synthesized schedule); each of the same collective on the machine.
  std::vector<std::pair<std::string, const Schedule *>> pointToPoint;
  /// Shares of the bytes the in-network part carries (each in (0, 1)).
  std::vector<double> shares{15.0 / 16, 7.0 / 8, 13.0 / 16,
                             3.0 / 4,   2.0 / 3, 1.0 / 2};
  /// No new candidate starts past this instant (but the first algorithm
  /// alone).
  std::optional<std::chrono::steady_clock::time_point> until;
  /// The kinds of switch a candidate may use (a sketch's `in_network`);
  /// empty: every kind.
  std::vector<SwitchKind> allowedSwitches;
  /// How many mixes InNetworkSearch::runnable keeps.
  int keepMixes = 8;
};

/// The kinds of switch an in-network baseline's operations go through
/// (NVLS: NVLS; CollNet: SHARP; NVLS with SHARP: both).
std::vector<SwitchKind> inNetworkSwitchKinds(BaselineKind kind);

/// Whether the machine has a switch that some in-network algorithm of
/// `kind` can use (NVLS or CollNet, as the baselines build them), using only
/// the switch kinds of `allowed` (empty: every kind).
bool inNetworkApplies(CollectiveKind kind, const Topology &topology,
                      const std::vector<SwitchKind> &allowed = {});

/// Whether makeNvlsRails builds `kind` on `topology`: AllReduce on
/// several nodes of equal size, each joined by its own NVLS switch.
bool nvlsRailsSupports(CollectiveKind kind, const Topology &topology);

/// How a rail AllReduces its slice across the nodes (one piece per node):
/// a ring, or direct exchanges (node j owns piece j: the others send it
/// their partials, it sends each the total).
enum class RailAllReduce { Ring, Direct };

/// The name of makeNvlsRails' algorithm in one form: "nvls-rails" with
/// "-direct" for exchanges and "-phased" without the wavefront.
std::string nvlsRailsName(RailAllReduce rail, bool wavefront);

/// ccsynth's AllReduce for several NVLS nodes: each node's switch reduces
/// slice k into local rank k, rail k (the local ranks k of every node)
/// AllReduces it over the network in one piece per node (`rail`), and
/// each node's switch multicasts the total from rank k; in and out of
/// place, verified. `options.pipeline` chunks per slice. With `wavefront`
/// (16 chunks by default) chunk q starts at step q, so that every link
/// carries the chunks in pipeline order; without it (4 by default) each
/// transfer takes the earliest step its data allows, so that a phase's
/// transfers share steps (generated code pipelines by its passes, and
/// fewer steps cost it less).
Expected<Schedule> makeNvlsRails(const Topology &topology,
                                 const BaselineOptions &options,
                                 bool wavefront = true,
                                 RailAllReduce rail = RailAllReduce::Ring);

/// The name of makeDirectRails' algorithm: "direct-rails".
inline constexpr const char *kDirectRailsName = "direct-rails";

/// makeNvlsRails' phased form with direct exchanges along the rails, and
/// point-to-point sends where it goes through a node's switch: local rank
/// k adds slice k of each other local rank, sent to it directly, and sends
/// each of them the total. It moves the bytes NVLS leaves to the NVLink
/// ports and every NIC's share of the rail exchange, on a threadblock per
/// peer in generated code, so that it runs beside the NVLS form on a
/// share of the buffer: the NVLS form is bound by its switch's throughput
/// per port, this one by the ports, and both send the same bytes per NIC.
/// Same machines as makeNvlsRails; in and out of place, verified.
Expected<Schedule> makeDirectRails(const Topology &topology,
                                   const BaselineOptions &options);

/// Builds NCCL's in-network algorithms for `kind` on `topology` and their
/// mixes with the ring baseline, `options.pointToPoint` and each slower
/// in-network algorithm at each share,
/// verifies each against the topology and times it at `options.bytes`.
/// Only algorithms whose switches `options.allowedSwitches` allows take
/// part (ccsynth's NVLS with rails uses NVLS). Fails when no in-network
/// algorithm applies.
Expected<InNetworkSearch> searchInNetwork(CollectiveKind kind,
                                          const Topology &topology,
                                          const InNetworkOptions &options);

} // namespace ccsynth
