//===- ScaleTest.cpp - Large machines stay fast; fast paths stay exact ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Analysis/LowerBound.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Schedule/Verifier.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace ccsynth;

namespace {

/// One step: the root sends its chunk to every other rank directly.
Schedule directBroadcast(int n) {
  Schedule s;
  s.name = "direct-broadcast";
  s.collective = *Collective::builtin(CollectiveKind::Broadcast, n, 1);
  s.transfers.push_back(
      {{0, BufferKind::Input, 0}, {0, BufferKind::Output, 0}});
  for (int d = 1; d < n; ++d)
    s.transfers.push_back(
        {{0, BufferKind::Input, 0}, {d, BufferKind::Output, 0}});
  return s;
}

/// The latency bound computed the slow, obvious way: the largest shortest
/// alpha path from a rank that holds a needed value to a rank that needs it
/// (for these collectives, every pair that differs; for broadcast, from the
/// root).
double bruteLatency(const Topology &t, CollectiveKind kind) {
  auto dist = t.shortestAlpha();
  double worst = 0;
  for (int o = 0; o < t.numRanks(); ++o) {
    if (kind == CollectiveKind::Broadcast && o != 0)
      continue;
    for (int d = 0; d < t.numRanks(); ++d)
      if (o != d)
        worst = std::max(worst, dist[o][d]);
  }
  return worst;
}

} // namespace

TEST_CASE("a one-step broadcast on fc:1024 verifies and simulates", "[scale]") {
  // Each transfer's link used to be found by scanning all 1M links, and the
  // latency bound ran a search from every rank: minutes, where it now takes
  // about a second. The time is not checked here (load would make such a
  // check flaky); bench/synth_scale.sh times verify and simulate at scale.
  auto topo = makeBuiltinTopology("fc:1024");
  REQUIRE(topo);
  Schedule s = directBroadcast(1024);
  VerifyOptions vo;
  vo.topology = &*topo;
  REQUIRE(verifySchedule(s, vo).ok());
  SimOptions so;
  so.bytes = 1 << 20;
  auto sim = simulate(s, *topo, so);
  REQUIRE(sim);
  LowerBound lb = lowerBound(s.collective, *topo, so.bytes);
  CHECK(lb.latencyUs > 0);
  CHECK(sim->timeUs >= lb.timeUs() * 0.999);
}

TEST_CASE("the latency bound equals the all-pairs shortest alpha path",
          "[scale]") {
  // Built-ins, where direct links are (or are not) the fastest way, and a
  // machine where a two-hop path beats a slow direct link.
  std::vector<Topology> topos;
  for (const char *name : {"ring:8", "torus2d:3x4", "dgx1", "ndv2x2", "fc:6"})
    topos.push_back(*makeBuiltinTopology(name));
  Topology detour = *makeBuiltinTopology("fc:4");
  for (Link &l : detour.links)
    if (l.src == 0 && l.dst == 3)
      l.alphaUs = 50;
  topos.push_back(detour);
  for (const Topology &t : topos) {
    INFO(t.name);
    for (CollectiveKind kind :
         {CollectiveKind::AllGather, CollectiveKind::Broadcast}) {
      auto col = Collective::builtin(kind, t.numRanks(), 1);
      REQUIRE(col);
      CHECK(lowerBound(*col, t, 1024).latencyUs ==
            Approx(bruteLatency(t, kind)));
    }
  }
}
