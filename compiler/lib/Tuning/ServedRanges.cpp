//===- ServedRanges.cpp - Where a program serves ----------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The sizes a program should serve so that the runtime runs it only where
// it is at least as fast as NCCL (servedWhereFaster for one MSCCL XML,
// servedRunsWhereFaster for generated code's several descriptors,
// splitServedByTile for a tile per range). Pure functions of the tuner's
// timings; declared in Tuning.h.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Tuning/Tuning.h"
#include "TuningInternal.h"

#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Baselines/Rings.h"
#include "ccsynth/Perf/StepPrediction.h"
#include "ccsynth/Perf/StepSimulator.h"
#include "ccsynth/Target/KernelKnobs.h"
#include "ccsynth/Target/MSCCLXml.h"
#include "ccsynth/Target/SwitchLowering.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>

namespace ccsynth::tuning {


Served servedWhereFaster(const TuneCandidate &c, const TuneResult &t,
                         const std::vector<double> &sizes, bool ties) {
  Served best;
  if (t.ncclBestUs.size() != sizes.size())
    return best;
  // Faster: within 0.1%. A tie: within the model's noise, 2% (NCCL's
  // program is tried at more instance counts than the schedule).
  double slack = ties ? 1.02 : 1.001;
  double bestScore = 0;
  size_t n = sizes.size();
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a; b < n; ++b) {
      bool ok = true;
      double logSum = 0;
      for (size_t k = a; k <= b && ok; ++k) {
        // MSCCL selects a program whose loop has an odd factor for none
        // of the power-of-two sizes weighed here, and a long loop for
        // none below it.
        ok = c.selectableAt(sizes[k]) && c.timeUs[k] <= t.ncclBestUs[k] * slack;
        logSum += std::log(t.ncclBestUs[k] / c.timeUs[k]);
      }
      if (!ok)
        continue;
      size_t len = b - a + 1;
      bool better = ties ? !best.any || len > best.count ||
                               (len == best.count && logSum > bestScore)
                         : logSum > bestScore;
      if (!better)
        continue;
      bestScore = logSum;
      best.any = true;
      best.count = len;
      best.minBytes = a == 0 ? 0 : (long long)(sizes[a - 1] * 2);
      best.maxBytes = b + 1 == n ? 0 : (long long)(sizes[b] * 2) - 1;
    }
  best.score = std::exp(bestScore / (double)n);
  return best;
}

Served servedRunsWhereFaster(const TuneCandidate &c, const TuneResult &t,
                             const std::vector<double> &sizes) {
  Served out;
  if (t.ncclBestUs.size() != sizes.size())
    return out;
  size_t n = sizes.size();
  double logSum = 0;
  for (size_t a = 0; a < n;) {
    auto faster = [&](size_t k) {
      return c.selectableAt(sizes[k]) && c.timeUs[k] <= t.ncclBestUs[k] * 1.001;
    };
    if (!faster(a)) {
      ++a;
      continue;
    }
    size_t b = a;
    double gain = 0;
    for (; b < n && faster(b); ++b)
      gain += std::log(t.ncclBestUs[b] / c.timeUs[b]);
    // [a, b): a run, served where it gains in all.
    if (gain > 0) {
      Served::Range r;
      r.minBytes = a == 0 ? 0 : (long long)(sizes[a - 1] * 2);
      r.maxBytes = b == n ? 0 : (long long)(sizes[b - 1] * 2) - 1;
      out.ranges.push_back(r);
      out.count += b - a;
      logSum += gain;
    }
    a = b;
  }
  if (out.ranges.empty())
    return out;
  out.any = true;
  out.minBytes = out.ranges.front().minBytes;
  out.maxBytes = out.ranges.front().maxBytes;
  out.score = std::exp(logSum / (double)n);
  return out;
}

Served splitServedByTile(const Served &served, const std::vector<double> &sizes,
                         const std::vector<double> &tileAt) {
  Served out = served;
  out.ranges.clear();
  size_t n = std::min(sizes.size(), tileAt.size());
  for (const Served::Range &r : served.ranges) {
    // The sizes the range holds: [a, b].
    size_t a = 0;
    while (a < n && sizes[a] < (double)r.minBytes)
      ++a;
    size_t b = a;
    while (b + 1 < n && (r.maxBytes == 0 || sizes[b + 1] <= (double)r.maxBytes))
      ++b;
    if (a >= n) {
      out.ranges.push_back(r);
      continue;
    }
    size_t start = a;
    for (size_t k = a; k <= b; ++k) {
      if (k < b && tileAt[k + 1] == tileAt[start])
        continue;
      Served::Range piece;
      piece.minBytes =
          start == a ? r.minBytes : (long long)(sizes[start - 1] * 2);
      piece.maxBytes = k == b ? r.maxBytes : (long long)(sizes[k] * 2) - 1;
      piece.tileBytes = (unsigned long long)tileAt[start];
      out.ranges.push_back(piece);
      start = k + 1;
    }
  }
  if (!out.ranges.empty()) {
    out.minBytes = out.ranges.front().minBytes;
    out.maxBytes = out.ranges.front().maxBytes;
  }
  return out;
}

const Schedule &candidateSchedule(const TuneResult &t, const TuneCandidate &c,
                                  const Schedule &input) {
  if (c.regridded() && t.regridded)
    return *t.regridded;
  if (!c.fromSchedule())
    return t.ncclPrograms[c.program];
  return input;
}

} // namespace ccsynth::tuning
