// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the SVG timeline and bandwidth plots.
#include "ccsynth/Analysis/Plot.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace ccsynth;

namespace {

/// Checks that `svg` is well-formed XML as far as tags go: every element
/// closes in order, attribute quotes are balanced, and text holds no bare
/// '<' or unknown entity. Returns an explanation, empty when well-formed.
std::string checkXml(const std::string &svg) {
  std::vector<std::string> open;
  size_t i = 0;
  bool sawRoot = false;
  while (i < svg.size()) {
    if (svg[i] == '&') {
      size_t semi = svg.find(';', i);
      if (semi == std::string::npos)
        return "unterminated entity at " + std::to_string(i);
      std::string ent = svg.substr(i, semi - i + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" &&
          ent != "&quot;" && ent != "&apos;")
        return "unknown entity " + ent;
      i = semi + 1;
      continue;
    }
    if (svg[i] == '>')
      return "stray '>' at " + std::to_string(i);
    if (svg[i] != '<') {
      ++i;
      continue;
    }
    if (svg.compare(i, 2, "<?") == 0) {
      size_t end = svg.find("?>", i);
      if (end == std::string::npos)
        return "unterminated declaration";
      i = end + 2;
      continue;
    }
    // Find the tag's end, skipping quoted attribute values.
    size_t j = i + 1;
    char quote = 0;
    for (; j < svg.size(); ++j) {
      if (quote) {
        if (svg[j] == quote)
          quote = 0;
        else if (svg[j] == '<')
          return "'<' inside an attribute at " + std::to_string(j);
      } else if (svg[j] == '"' || svg[j] == '\'') {
        quote = svg[j];
      } else if (svg[j] == '>') {
        break;
      }
    }
    if (j >= svg.size())
      return "unterminated tag at " + std::to_string(i);
    std::string tag = svg.substr(i + 1, j - i - 1);
    i = j + 1;
    if (!tag.empty() && tag[0] == '/') {
      std::string name = tag.substr(1);
      if (open.empty() || open.back() != name)
        return "closing </" + name + "> does not match <" +
               (open.empty() ? std::string("nothing") : open.back()) + ">";
      open.pop_back();
      continue;
    }
    std::string name = tag.substr(0, tag.find_first_of(" \n\t/"));
    if (name.empty())
      return "empty tag name";
    if (open.empty()) {
      if (sawRoot)
        return "more than one root element";
      sawRoot = true;
    }
    if (tag.back() != '/')
      open.push_back(name);
  }
  if (!open.empty())
    return "<" + open.back() + "> is never closed";
  return sawRoot ? "" : "no root element";
}

size_t countOf(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos;
       p = s.find(what, p + 1))
    ++n;
  return n;
}

} // namespace

TEST_CASE("sizes are formatted in powers of 1024", "[plot]") {
  CHECK(formatBytes(1024) == "1K");
  CHECK(formatBytes(4 << 20) == "4M");
  CHECK(formatBytes(1 << 30) == "1G");
  CHECK(formatBytes(1536) == "1.5K");
  CHECK(formatBytes(512) == "512B");
  CHECK(formatBytes(0) == "0B");
  CHECK(formatBytes(1024.0 * 1024 * 1024 * 1024 * 2) == "2T");
}

TEST_CASE("the checker itself rejects malformed XML", "[plot]") {
  CHECK(checkXml("<svg><g></svg>") != "");
  CHECK(checkXml("<svg><text>a < b</text></svg>") != "");
  CHECK(checkXml("<svg><text>a &nbsp; b</text></svg>") != "");
  CHECK(checkXml("<svg/><svg/>") != "");
  CHECK(checkXml("<svg><g x=\"1\"/></svg>") == "");
}

TEST_CASE("a timeline has a lane per used link and a bar per transfer",
          "[plot]") {
  Topology topo;
  topo.name = "pair";
  topo.nodeOf = {0, 0, 0};
  topo.links.push_back({0, 1, LinkKind::NVLink, 0.7, 25, {}});
  topo.links.push_back({1, 2, LinkKind::RDMA, 1.7, 25, {}});
  topo.links.push_back({2, 0, LinkKind::NVLink, 0.7, 25, {}}); // unused
  auto col = Collective::builtin(CollectiveKind::AllGather, 3, 1);
  REQUIRE(col.ok());
  Schedule s;
  s.name = "toy";
  s.collective = *col;
  auto add = [&](int sr, BufferKind sb, int si, int dr, BufferKind db, int di,
                 int step) {
    Transfer t;
    t.src = {sr, sb, si};
    t.dst = {dr, db, di};
    t.step = step;
    s.transfers.push_back(t);
  };
  add(0, BufferKind::Input, 0, 1, BufferKind::Output, 0, 0);
  add(1, BufferKind::Output, 0, 2, BufferKind::Output, 0, 1);
  add(0, BufferKind::Input, 0, 0, BufferKind::Output, 0, 0);
  add(1, BufferKind::Input, 0, 1, BufferKind::Output, 1, 0);
  add(1, BufferKind::Input, 0, 1, BufferKind::Output, 2, 0);

  // A result as the simulator would record it; rank 1's two local copies
  // overlap in time.
  SimResult r;
  r.timeUs = 50;
  r.timeline = {{0, 0, 0, 20.7},
                {1, 1, 20.7, 42.4},
                {2, -1, 0, 1},
                {3, -1, 0, 2},
                {4, -1, 1, 3}};
  std::string svg = timelineSvg(s, topo, r, "toy <allgather> & co");
  INFO(svg);
  CHECK(checkXml(svg) == "");
  CHECK_THAT(svg, Catch::Contains("toy &lt;allgather&gt; &amp; co"));
  CHECK_THAT(svg, Catch::Contains("0 -&gt; 1 nvlink"));
  CHECK_THAT(svg, Catch::Contains("1 -&gt; 2 rdma"));
  CHECK_THAT(svg, Catch::Contains("rank 0 local"));
  CHECK_FALSE(svg.find("2 -&gt; 0") != std::string::npos);
  CHECK(countOf(svg, "<title>") == 5);
  // Overlapping local copies share their lane in two half-height rows
  // (lanes are 20 px, bars 70% of a lane); the link bars (latency and
  // streaming parts) and rank 0's lone copy keep the full height.
  CHECK(countOf(svg, "height=\"14\"") == 5);
  CHECK(countOf(svg, "height=\"7\"") == 2);
  CHECK_THAT(svg, Catch::Contains("#1 step 1: copy rank 1 output[0] -&gt; "
                                  "rank 2 output[0] via link 1 (rdma)"));
  // Latency phases are drawn pale: two links carried traffic.
  CHECK(countOf(svg, "fill-opacity=\"0.35\"") == 2);
  CHECK_THAT(svg, Catch::Contains("time (us)"));

  SimResult none;
  std::string empty = timelineSvg(s, topo, none, "");
  CHECK(checkXml(empty) == "");
  CHECK_THAT(empty, Catch::Contains("recordTimeline"));
}

TEST_CASE("a bandwidth plot shows every series with a legend", "[plot]") {
  PlotSeries ring{"ring", {}}, synth{"synth <best>", {}};
  for (double b = 1024; b <= (1 << 30); b *= 4) {
    ring.points.push_back({b, 100 * b / (b + 4e6)});
    synth.points.push_back({b, 150 * b / (b + 2e6)});
  }
  std::string svg = bandwidthPlotSvg("allreduce on dgx-a100", {ring, synth});
  INFO(svg);
  CHECK(checkXml(svg) == "");
  CHECK_THAT(svg, Catch::Contains(">ring</text>"));
  CHECK_THAT(svg, Catch::Contains(">synth &lt;best&gt;</text>"));
  CHECK(countOf(svg, "<polyline") == 2);
  CHECK(countOf(svg, "<circle") == ring.points.size() + synth.points.size());
  // Size ticks are formatted as sizes.
  CHECK_THAT(svg, Catch::Contains(">1M</text>"));
  CHECK_THAT(svg, Catch::Contains(">1G</text>"));
  CHECK_THAT(svg, Catch::Contains("GB/s"));

  // Bad points are skipped; an empty plot is still a valid document.
  PlotSeries bad{"bad", {{0, 1}, {-4, 2}, {1024, std::nan("")}}};
  std::string empty = bandwidthPlotSvg("nothing", {bad});
  CHECK(checkXml(empty) == "");
  CHECK_THAT(empty, Catch::Contains("no data"));
  CHECK(countOf(empty, "<circle") == 0);
}
