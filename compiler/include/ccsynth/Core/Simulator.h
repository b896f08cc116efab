//===- Simulator.h - Event-driven alpha-beta simulation of schedules ------===//
//
// Model: a transfer of b bytes over link L takes alpha(L) of latency, then
// streams its bytes. Transfers on one link run one at a time, in schedule
// order (step, then position). A streaming transfer is limited by its link's
// bandwidth and by a max-min fair share of every shared resource it crosses
// (NVSwitch ports, NICs). A transfer starts once the transfers that produced
// its source (and, for a reduce, its destination) finished, and once earlier
// readers of the slot it overwrites finished. Local transfers (same rank)
// use SimOptions::localCopyGBps and no link.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Core/Diagnostic.h"
#include "ccsynth/Core/Schedule.h"
#include "ccsynth/Core/Topology.h"

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
};

struct TransferTiming {
  int transfer = 0;
  int link = -1; ///< -1 for a local transfer
  double startUs = 0; ///< when its latency phase began
  double endUs = 0;
};

struct SimResult {
  double timeUs = 0;
  double algbwGBps = 0; ///< bytes / time
  double busbwGBps = 0; ///< algbw x the collective's busbw factor
  std::vector<TransferTiming> timeline;
};

/// Simulates `schedule` on `topology`. Fails when a transfer has no link
/// between its ranks or the rank counts differ.
Expected<SimResult> simulate(const Schedule &schedule, const Topology &topology,
                             const SimOptions &options);

} // namespace ccsynth
