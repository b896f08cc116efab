//===- Simulator.h - Event-driven alpha-beta simulation of schedules ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Model: a transfer of b bytes over link L takes alpha(L) of latency, then
// streams its bytes. Transfers on one link run one at a time, in schedule
// order (step, then position). A streaming transfer is limited by its link's
// bandwidth and by a max-min fair share of every shared resource it crosses
// (NVSwitch ports, NICs). A transfer starts once the transfers that produced
// its source (and, for a reduce, its destination) finished, and once earlier
// readers of the slot it overwrites finished. Local transfers (same rank)
// use no link and no latency; the local transfers running at once on one
// rank share SimOptions::localCopyGBps fairly.
//
// Dependencies follow the schedule's (step, position) order on canonical
// slots (in-place aliases are one slot): read-after-write on the source (and
// on the destination of a reduce), write-after-write and write-after-read
// on the destination. A transfer with link -1 uses Topology::bestLink.
// Rates are max-min fair (progressive filling) over the shared resources of
// all streaming transfers, each also capped by its own link's bandwidth, and
// are recomputed whenever a transfer starts or stops streaming.
// Units: GB/s = 1e9 bytes/s, times in µs.
//
// Switch transfers (TransferOp) run as one flow per operation: the bytes
// of one member cross every remote member's port (sources up, destinations
// down) and the issuing rank's own port, sharing those ports' resources
// with point-to-point traffic and each port's switch throughput
// (InNetworkSwitch::efficiency) with other switch operations; the result
// arrives the switch's latency after the last byte. A rank's reductions
// through one switch stream one after another, as do its multicasts; the
// latency of one overlaps the next one's bytes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"

#include <chrono>
#include <optional>
#include <vector>

namespace ccsynth {

struct SimOptions {
  /// Buffer size in bytes with nccl-tests' meaning (total size for
  /// AllGather/ReduceScatter/AllToAll, the buffer for the others). A chunk
  /// is ceil(bytes / collective.sizeDivisor()) bytes.
  double bytes = 1 << 20;
  /// Bandwidth of a copy or reduce within one GPU.
  double localCopyGBps = 1000;
  /// Record per-transfer start/end times (for timelines).
  bool recordTimeline = false;
  /// Past this instant the simulation stops with an error naming the time
  /// limit (a synthesis deadline; a million transfers all in flight at
  /// once take seconds).
  std::optional<std::chrono::steady_clock::time_point> until;
  /// The caller checked the topology (Topology::validate) and has not
  /// changed it since: skips that pass over every link (16.7M on 4,096
  /// ranks), which a search simulating many candidates would repeat.
  bool topologyValidated = false;
};

struct TransferTiming {
  int transfer = 0;
  int link = -1; ///< the link used (resolved from -1); -1 when local
  double startUs = 0; ///< when its latency phase began
  double endUs = 0;   ///< when its last byte arrived
};

struct SimResult {
  double timeUs = 0;    ///< completion time of the last transfer
  double algbwGBps = 0; ///< bytes / time (0 when the time is 0)
  double busbwGBps = 0; ///< algbw x the collective's busbw factor
  /// One entry per transfer, in transfer order (when recordTimeline).
  std::vector<TransferTiming> timeline;
};

/// The runtime model of a schedule with switch transfers, whose operations
/// have no step program yet: NCCL's NVLS kernel. It is the chunk
/// simulation at the data rate the step model gives NVLink
/// (StepModel::linkEfficiency of the line rate of every NVLink, of the
/// resources NVLinks cross and of NVLS ports; network links keep their
/// line rate), plus the launch of one Simple call. NVLS kernels pipeline their
/// reductions and multicasts finely (a schedule's chunks stand for that
/// pipeline) and run enough channels that no threadblock limit binds
/// (docs/calibration.md, "In-network reduction").
/// One result per size of `sizes` (bytes, as SimOptions::bytes); the
/// machine at data rates is built once for all of them.
Expected<std::vector<SimResult>>
simulateInNetworkRuntime(const Schedule &schedule, const Topology &topology,
                         const std::vector<double> &sizes);

/// Simulates `schedule` on `topology`. Fails, naming the transfer, when a
/// transfer is out of range, names a link that does not join its ranks, or
/// has no link between its ranks; also fails when the rank counts differ or
/// the topology or options are invalid.
Expected<SimResult> simulate(const Schedule &schedule, const Topology &topology,
                             const SimOptions &options);

} // namespace ccsynth
