//===- ListScheduler.h - Ordering, timing and steps of a task list --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The list scheduler replays a TaskList in time under the simulator's model
// (alpha-beta links that carry one transfer at a time, max-min fair sharing
// of switch ports and NICs, local copies without latency) but chooses, each
// time a link frees up, which ready transfer it carries next (smallest
// priority first). The dispatch order it records becomes the schedule's
// per-link order and its steps, so the simulator, which runs each link's
// transfers in (step, position) order, reproduces the same execution.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Synth/Lowering.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ccsynth::synth {

/// Per-task predecessors: read-after-write, write-after-write and
/// write-after-read on canonical slots, in the list's reference order.
Dependencies taskDependencies(const TaskList &list);

struct ListScheduleOptions {
  /// Buffer size in nccl-tests' meaning (see SimOptions::bytes).
  double bytes = 1 << 20;
  double localCopyGBps = 1000;
  /// Give up (with an error) when the replay runs past this wall-clock
  /// time: very concurrent schedules make max-min fair sharing expensive.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

struct TimedTasks {
  std::vector<double> ready, start, end; ///< per task, µs
  double makespan = 0;
};

/// Dispatches and times the tasks. Fails on a transfer between ranks that
/// the topology does not link.
Expected<TimedTasks> listSchedule(const TaskList &list, const Topology &topo,
                                  const ListScheduleOptions &options);

/// Replaces every task's priority by minus its bottom level: the longest
/// chain of transfer times from its start to the end of the collective
/// (critical-path-first list scheduling).
void prioritizeCriticalPath(TaskList &list, const Topology &topo,
                            const ListScheduleOptions &options);

/// The schedule whose steps and transfer order reproduce `timed`: steps
/// are the longest chains of dependencies, and within a step each link's
/// transfers appear in dispatch order.
Schedule toSchedule(const TaskList &list, const TimedTasks &timed);

/// Merges runs of consecutive transfers on one link whose slots are
/// contiguous at both ends into one transfer with a larger count (one
/// latency instead of several). A transfer joins the run when it was ready
/// by the time the run started and its own streaming time is at most
/// `maxDelayRatio` x the link's alpha (use a huge ratio to merge whenever
/// possible). Returns the list unchanged when nothing merges.
TaskList mergeContiguous(const TaskList &list, const TimedTasks &timed,
                         const Topology &topo, double bytes,
                         double maxDelayRatio);

} // namespace ccsynth::synth
