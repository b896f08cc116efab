//===- Plot.cpp - SVG timelines and bandwidth plots -----------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Hand-written SVG (no dependencies): every text is XML-escaped, every
// element closed, and the size of a drawing follows its content so large
// schedules stay legible. Colours come from the Tableau 10 palette, which
// stays distinguishable for common forms of colour blindness.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Analysis/Plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

namespace ccsynth {

namespace {

const char *const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                "#9c755f", "#bab0ac"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
const char *const kFont = "font-family=\"Helvetica,Arial,sans-serif\"";

std::string escape(const std::string &s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      // Control characters are not allowed in XML 1.0 text.
      if ((unsigned char)c >= 0x20 || c == '\n' || c == '\t')
        out += c;
    }
  }
  return out;
}

/// A number with at most `digits` decimals, trailing zeros removed.
std::string num(double v, int digits = 2) {
  if (!std::isfinite(v))
    return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0')
      s.pop_back();
    if (s.back() == '.')
      s.pop_back();
  }
  if (s == "-0")
    s = "0";
  return s;
}

/// A 1-2-5 step giving about `target` intervals over [0, span].
double niceStep(double span, int target) {
  if (!(span > 0) || !std::isfinite(span))
    return 1;
  double raw = span / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double f = raw / mag;
  double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return nice * mag;
}

/// Tick labels for a step: as many decimals as the step needs.
std::string tickLabel(double v, double step) {
  int digits = step >= 1 ? 0 : (int)std::ceil(-std::log10(step) - 1e-9);
  return num(v, std::min(digits, 6));
}

std::string text(double x, double y, const std::string &s,
                 const std::string &extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" +
         (extra.empty() ? "" : " " + extra) + ">" + escape(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2,
                 const std::string &style) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" +
         num(x2) + "\" y2=\"" + num(y2) + "\" " + style + "/>\n";
}

std::string header(double width, double height) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         num(width, 0) + "\" height=\"" + num(height, 0) +
         "\" viewBox=\"0 0 " + num(width, 0) + " " + num(height, 0) + "\" " +
         kFont + " font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
         "fill=\"white\"/>\n";
}

std::string describeTransfer(const Schedule &s, int t, const TransferTiming &tt,
                             const Topology &topo) {
  const Transfer &tr = s.transfers[t];
  auto range = [&](const ChunkLoc &l) {
    std::string r = "rank " + std::to_string(l.rank) + " " +
                    toString(l.buffer) + "[" + std::to_string(l.index);
    if (tr.count > 1)
      r += ".." + std::to_string((long long)l.index + tr.count - 1);
    return r + "]";
  };
  std::string d = "#" + std::to_string(t) + " step " + std::to_string(tr.step) +
                  ": " + toString(tr.op) + " " + range(tr.src) + " -> " +
                  range(tr.dst);
  if (tt.link >= 0 && tt.link < (int)topo.links.size())
    d += " via link " + std::to_string(tt.link) + " (" +
         toString(topo.links[tt.link].kind) + ")";
  else
    d += " (local)";
  return d + ", " + num(tt.startUs, 3) + " - " + num(tt.endUs, 3) + " us";
}

} // namespace

std::string formatBytes(double bytes) {
  if (!std::isfinite(bytes) || bytes < 0)
    return num(bytes, 3) + "B";
  const char *units[] = {"B", "K", "M", "G", "T", "P"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  return num(bytes, 2) + units[u];
}

std::string timelineSvg(const Schedule &schedule, const Topology &topology,
                        const SimResult &result, const std::string &title) {
  // Lanes: each rank's local lane, then its outgoing links by destination.
  using LaneKey = std::tuple<int, int, int, int>; // rank, kind, dst, link
  std::map<LaneKey, int> laneOf;
  struct Bar {
    const TransferTiming *timing;
    LaneKey lane;
    double alphaUs;
    int row = 0; ///< sub-row within the lane (concurrent local copies)
  };
  std::vector<Bar> bars;
  int numTransfers = (int)schedule.transfers.size();
  for (const TransferTiming &tt : result.timeline) {
    if (tt.transfer < 0 || tt.transfer >= numTransfers)
      continue;
    const Transfer &tr = schedule.transfers[tt.transfer];
    Bar bar{&tt, {}, 0};
    if (tt.link >= 0 && tt.link < (int)topology.links.size()) {
      const Link &l = topology.links[tt.link];
      bar.lane = {l.src, 1, l.dst, tt.link};
      bar.alphaUs = l.alphaUs;
    } else {
      bar.lane = {tr.src.rank, 0, tr.src.rank, -1};
    }
    laneOf[bar.lane] = 0;
    bars.push_back(bar);
  }
  // A link carries one transfer at a time, but one rank's local copies may
  // overlap: give overlapping bars of a lane separate sub-rows (greedy
  // interval colouring in start order).
  std::vector<int> byStart(bars.size());
  for (size_t i = 0; i < bars.size(); ++i)
    byStart[i] = (int)i;
  std::stable_sort(byStart.begin(), byStart.end(), [&](int a, int b) {
    return bars[a].timing->startUs < bars[b].timing->startUs;
  });
  std::map<LaneKey, std::vector<double>> rowEnds;
  for (int i : byStart) {
    auto &ends = rowEnds[bars[i].lane];
    const TransferTiming &tt = *bars[i].timing;
    size_t row = 0;
    while (row < ends.size() && ends[row] > tt.startUs + 1e-9)
      ++row;
    if (row == ends.size())
      ends.push_back(0);
    ends[row] = tt.endUs;
    bars[i].row = (int)row;
  }
  std::vector<std::string> laneNames;
  std::map<std::pair<int, int>, int> linksPerPair;
  for (const Link &l : topology.links)
    ++linksPerPair[{l.src, l.dst}];
  for (auto &[key, index] : laneOf) {
    index = (int)laneNames.size();
    auto [rank, kind, dst, link] = key;
    if (kind == 0) {
      laneNames.push_back("rank " + std::to_string(rank) + " local");
      continue;
    }
    std::string name = std::to_string(rank) + " -> " + std::to_string(dst) +
                       " " + toString(topology.links[link].kind);
    if (linksPerPair[{rank, dst}] > 1)
      name += " #" + std::to_string(link);
    laneNames.push_back(name);
  }

  double maxT = 0;
  for (const Bar &bar : bars)
    maxT = std::max(maxT, bar.timing->endUs);
  maxT = std::max(maxT, result.timeUs);
  if (!(maxT > 0) || !std::isfinite(maxT))
    maxT = 1;
  double step = niceStep(maxT, 8);
  double axisEnd = std::ceil(maxT / step - 1e-9) * step;

  int lanes = (int)laneNames.size();
  double laneH = lanes <= 64 ? 20 : lanes <= 256 ? 10 : 5;
  double labelW = 150, plotW = 960, top = 56, right = 24;
  double plotH = std::max(1, lanes) * laneH;
  double width = labelW + plotW + right, height = top + plotH + 64;
  auto xOf = [&](double t) { return labelW + t / axisEnd * plotW; };

  std::string svg = header(width, height);
  std::string heading = title.empty() ? schedule.name : title;
  svg += text(labelW, 22, heading, "font-size=\"16\" font-weight=\"bold\"");
  svg += text(labelW, 40,
              std::to_string(numTransfers) + " transfers, " +
                  num(result.timeUs, 3) + " us, algbw " +
                  num(result.algbwGBps, 2) + " GB/s, busbw " +
                  num(result.busbwGBps, 2) + " GB/s",
              "fill=\"#555\"");
  svg += text(width - right, 40,
              "colour = step; pale part = latency (alpha)",
              "fill=\"#555\" text-anchor=\"end\"");

  // Lane backgrounds and labels.
  double fontSize = std::min(12.0, laneH * 0.75);
  for (int i = 0; i < lanes; ++i) {
    double y = top + i * laneH;
    if (i % 2 == 0)
      svg += "<rect x=\"" + num(labelW) + "\" y=\"" + num(y) + "\" width=\"" +
             num(plotW) + "\" height=\"" + num(laneH) +
             "\" fill=\"#f4f4f4\"/>\n";
    if (laneH >= 8)
      svg += text(labelW - 6, y + laneH / 2 + fontSize * 0.35, laneNames[i],
                  "text-anchor=\"end\" font-size=\"" + num(fontSize) + "\"");
  }
  // Time grid and axis.
  double axisY = top + plotH;
  for (double t = 0; t <= axisEnd + step * 1e-6; t += step) {
    double x = xOf(t);
    svg += line(x, top, x, axisY, "stroke=\"#ddd\" stroke-width=\"1\"");
    svg += line(x, axisY, x, axisY + 5, "stroke=\"#333\"");
    svg += text(x, axisY + 18, tickLabel(t, step), "text-anchor=\"middle\"");
  }
  svg += line(labelW, axisY, labelW + plotW, axisY, "stroke=\"#333\"");
  svg += text(labelW + plotW / 2, axisY + 40, "time (us)",
              "text-anchor=\"middle\"");
  if (bars.empty())
    svg += text(labelW + plotW / 2, top + 20,
                result.timeline.empty()
                    ? "no timeline recorded (simulate with recordTimeline)"
                    : "no transfers",
                "text-anchor=\"middle\" fill=\"#a00\"");

  // Bars: latency phase pale, streaming phase solid, hover text per bar.
  for (const Bar &bar : bars) {
    const TransferTiming &tt = *bar.timing;
    const Transfer &tr = schedule.transfers[tt.transfer];
    int rows = (int)rowEnds[bar.lane].size();
    double h = laneH * 0.7 / rows;
    double y = top + laneOf[bar.lane] * laneH + laneH * 0.15 + bar.row * h;
    double x0 = xOf(tt.startUs), x1 = xOf(std::max(tt.startUs, tt.endUs));
    double xa = xOf(std::min(tt.startUs + bar.alphaUs, tt.endUs));
    const char *colour =
        kPalette[((tr.step % kPaletteSize) + kPaletteSize) % kPaletteSize];
    svg += "<g><title>" +
           escape(describeTransfer(schedule, tt.transfer, tt, topology)) +
           "</title>";
    if (xa > x0)
      svg += "<rect x=\"" + num(x0) + "\" y=\"" + num(y) + "\" width=\"" +
             num(xa - x0) + "\" height=\"" + num(h) + "\" fill=\"" + colour +
             "\" fill-opacity=\"0.35\"/>";
    svg += "<rect x=\"" + num(xa) + "\" y=\"" + num(y) + "\" width=\"" +
           num(std::max(0.5, x1 - xa)) + "\" height=\"" + num(h) +
           "\" fill=\"" + colour + "\" stroke=\"white\" stroke-width=\"0.5\"/>";
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

std::string bandwidthPlotSvg(const std::string &title,
                             const std::vector<PlotSeries> &series) {
  double minX = std::numeric_limits<double>::infinity(), maxX = -minX;
  double maxY = 0;
  std::vector<std::vector<std::pair<double, double>>> valid(series.size());
  for (size_t i = 0; i < series.size(); ++i) {
    for (auto [x, y] : series[i].points)
      if (x > 0 && std::isfinite(x) && std::isfinite(y) && y >= 0)
        valid[i].push_back({x, y});
    std::sort(valid[i].begin(), valid[i].end());
    for (auto [x, y] : valid[i]) {
      minX = std::min(minX, std::log2(x));
      maxX = std::max(maxX, std::log2(x));
      maxY = std::max(maxY, y);
    }
  }
  bool empty = !(minX <= maxX);
  if (empty) {
    minX = 10;
    maxX = 30;
  }
  double lo = std::floor(minX), hi = std::ceil(maxX);
  if (hi - lo < 1) {
    lo -= 1;
    hi += 1;
  }
  double yStep = niceStep(maxY > 0 ? maxY * 1.05 : 1, 6);
  double yMax = std::max(1.0, std::ceil((maxY > 0 ? maxY * 1.05 : 1) / yStep)) *
                yStep;

  double left = 72, top = 48, plotW = 640, plotH = 360, legendW = 200;
  double width = left + plotW + legendW + 24, height = top + plotH + 64;
  auto xOf = [&](double bytes) {
    return left + (std::log2(bytes) - lo) / (hi - lo) * plotW;
  };
  auto yOf = [&](double gbps) { return top + plotH - gbps / yMax * plotH; };

  std::string svg = header(width, height);
  svg += text(left, 26, title, "font-size=\"16\" font-weight=\"bold\"");
  svg += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" +
         num(plotW) + "\" height=\"" + num(plotH) +
         "\" fill=\"none\" stroke=\"#333\"/>\n";
  // Gridlines: y at the nice step, x at powers of two (thinned so labels
  // never collide).
  for (double v = 0; v <= yMax + yStep * 1e-6; v += yStep) {
    double y = yOf(v);
    svg += line(left, y, left + plotW, y, "stroke=\"#e3e3e3\"");
    svg += text(left - 6, y + 4, tickLabel(v, yStep), "text-anchor=\"end\"");
  }
  int stride = std::max(1, (int)std::ceil((hi - lo) / 12));
  for (double e = lo; e <= hi + 1e-9; e += 1) {
    double x = left + (e - lo) / (hi - lo) * plotW;
    bool labelled = ((long long)(e - lo)) % stride == 0;
    svg += line(x, top, x, top + plotH,
                labelled ? "stroke=\"#e3e3e3\"" : "stroke=\"#f3f3f3\"");
    if (labelled)
      svg += text(x, top + plotH + 18, formatBytes(std::pow(2.0, e)),
                  "text-anchor=\"middle\"");
  }
  svg += text(left + plotW / 2, top + plotH + 42, "buffer size (bytes)",
              "text-anchor=\"middle\"");
  svg += text(18, top + plotH / 2, "bandwidth (GB/s)",
              "text-anchor=\"middle\" transform=\"rotate(-90 18 " +
                  num(top + plotH / 2) + ")\"");
  if (empty)
    svg += text(left + plotW / 2, top + plotH / 2, "no data",
                "text-anchor=\"middle\" fill=\"#a00\"");

  for (size_t i = 0; i < series.size(); ++i) {
    const char *colour = kPalette[i % kPaletteSize];
    // Series beyond the palette reuse its colours; dashes keep them apart.
    std::string dash =
        i >= (size_t)kPaletteSize ? " stroke-dasharray=\"6 3\"" : "";
    if (valid[i].size() > 1) {
      svg += "<polyline fill=\"none\" stroke=\"" + std::string(colour) +
             "\" stroke-width=\"2\"" + dash + " points=\"";
      for (auto [x, y] : valid[i])
        svg += num(xOf(x)) + "," + num(yOf(y)) + " ";
      svg += "\"/>\n";
    }
    for (auto [x, y] : valid[i])
      svg += "<circle cx=\"" + num(xOf(x)) + "\" cy=\"" + num(yOf(y)) +
             "\" r=\"3\" fill=\"" + colour + "\"><title>" +
             escape(series[i].label + ": " + formatBytes(x) + ", " +
                    num(y, 2) + " GB/s") +
             "</title></circle>\n";
    double ly = top + 14 + i * 20;
    double lx = left + plotW + 16;
    svg += line(lx, ly - 4, lx + 22, ly - 4,
                "stroke=\"" + std::string(colour) + "\" stroke-width=\"3\"" +
                    dash);
    svg += text(lx + 28, ly, series[i].label);
  }
  svg += "</svg>\n";
  return svg;
}

} // namespace ccsynth
