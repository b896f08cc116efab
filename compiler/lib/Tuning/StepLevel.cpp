//===- StepLevel.cpp - What compile would write, at the step level --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Tuning/StepLevel.h"

#include "ccsynth/Tuning/Tuning.h"

#include <algorithm>
#include <cmath>

namespace ccsynth::tuning {

/// Configurations that would end after `until` are not started.
StepLevel predictSteps(const Schedule &sched, const Topology &model,
                       const std::vector<double> &sizes, bool withNccl,
                       bool written,
                       std::chrono::steady_clock::time_point until,
                       double measureSeconds) {
  StepLevel r;
  // Past the transfers a full tuning takes, compile tunes narrowly and
  // slowly (a minute on 24,000 transfers): too long for a summary.
  if (sched.transfers.size() > kMaxFullyTunedTransfers) {
    r.absent = "not predicted (" + std::to_string(sched.transfers.size()) +
               " transfers; synth predicts up to " +
               std::to_string(kMaxFullyTunedTransfers) +
               "); run `ccsynth compile` or `ccsynth simulate --level steps`";
    return r;
  }
  TuneRequest req;
  req.sizes = sizes;
  req.instances = tuningInstances(sched);
  req.protocols = {"Simple", "LL128", "LL"};
  req.fallback = withNccl;
  // NCCL's programs are the summary's reference, not a file to write.
  req.ncclReferenceOnly = true;
  // The summary's NCCL column is its ring, tuned the same way; timing its
  // in-network algorithms on hundreds of ranks would not keep to `until`.
  req.inNetwork = false;
  req.until = until;
  // The written schedule always gets one configuration timed (one compile
  // of it, about three times its chunk-level check), so that its table
  // does not depend on the machine's load; the runners-up only in time.
  req.firstAlways = written;
  // Lowering, checking and timing one configuration costs about three
  // times the chunk-level verification and simulation of the schedule.
  req.firstEstimateSeconds = 3 * measureSeconds;
  TuneResult t = tuneCompile(sched, model, CompileOptions{}, req);
  r.cutShort = t.cutShort;
  // At each size the schedule's fastest program MSCCL selects there (its
  // re-cut on a power-of-two grid where its own chunk factor is odd); only
  // when none is selectable at any size, the fastest of all, marked by its
  // loop's odd factor.
  r.ownUs.assign(sizes.size(), INFINITY);
  bool anySelectable = false;
  for (const TuneCandidate &c : t.candidates)
    for (size_t k = 0; k < sizes.size() && c.fromSchedule(); ++k)
      anySelectable |= c.selectableAt(sizes[k]);
  for (const TuneCandidate &c : t.candidates)
    if (c.fromSchedule()) {
      if (!anySelectable)
        r.oddFactor = c.oddFactor();
      for (size_t k = 0; k < sizes.size(); ++k)
        if (!anySelectable || c.selectableAt(sizes[k]))
          r.ownUs[k] = std::min(r.ownUs[k], c.timeUs[k]);
    }
  r.ncclCutShort = t.ncclCutShort;
  if (t.ncclBestUs.size() == sizes.size())
    r.ncclUs = t.ncclBestUs;
  for (const Schedule &p : t.ncclPrograms)
    r.ncclTree |= isNcclTree(p);
  // A size below one loop of the program (or not a multiple of it) has no
  // time of its own: MSCCL runs NCCL there. Only when no size has one is
  // there no prediction.
  if (std::none_of(r.ownUs.begin(), r.ownUs.end(),
                   [](double us) { return std::isfinite(us); }))
    r.absent = t.cutShort ? "not predicted (the time limit)"
                          : "no lowering of the schedule fits MSCCL's limits";
  return r;
}

} // namespace ccsynth::tuning
