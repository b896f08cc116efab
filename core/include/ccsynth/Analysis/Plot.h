//===- Plot.h - SVG timelines and bandwidth plots -------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once

#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Topology/Topology.h"

#include <string>
#include <utility>
#include <vector>

namespace ccsynth {

/// A timeline with one lane per link that carried traffic (plus one per
/// rank for local copies); each transfer is a bar from start to end, its
/// latency phase shaded. Needs a SimResult recorded with recordTimeline.
std::string timelineSvg(const Schedule &schedule, const Topology &topology,
                        const SimResult &result, const std::string &title);

struct PlotSeries {
  std::string label;
  /// (bytes, GB/s) points.
  std::vector<std::pair<double, double>> points;
};

/// A log-x line plot of bandwidth vs buffer size.
std::string bandwidthPlotSvg(const std::string &title,
                             const std::vector<PlotSeries> &series);

/// "1K", "4M", "1G" style size formatting (powers of 1024).
std::string formatBytes(double bytes);

} // namespace ccsynth
