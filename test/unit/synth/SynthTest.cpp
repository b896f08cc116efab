// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the synthesizer end to end: every schedule it returns must
// verify on its topology; small sat and unsat instances, determinism with a
// fixed seed, the time limit, custom collectives.
#include "ccsynth/Support/Json.h"
#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/Synth/Synthesizer.h"

#include "SynthTestUtil.h"

#include <catch2/catch.hpp>

#include <chrono>

using namespace ccsynth;
using namespace ccsynth::synth;

namespace {

using test::topo;

Sketch shipped(const std::string &name) {
  auto sk = loadSketch(std::string(CCSYNTH_SOURCE_DIR) + "/sketches/" + name +
                       ".json");
  REQUIRE(sk.ok());
  return sk.take();
}

Sketch sketchOf(const std::string &text) {
  auto doc = JsonDocument::parse("sk.json", text);
  REQUIRE(doc.ok());
  auto sk = parseSketch(*doc);
  REQUIRE(sk.ok());
  return sk.take();
}

SynthResult run(const Topology &t, const Sketch &sk, SynthOptions o) {
  auto r = synthesize(t, sk, o);
  if (!r)
    FAIL(r.error().format());
  return r.take();
}

void requireVerified(const SynthResult &r, const Topology &t) {
  REQUIRE(r.feasible);
  VerifyOptions vo;
  vo.topology = &t;
  VerifyResult v = verifySchedule(r.schedule, vo);
  INFO((v.ok() ? std::string() : v.issues.front().message));
  REQUIRE(v.ok());
  // Every transfer between ranks names its link.
  for (const Transfer &tr : r.schedule.transfers)
    if (tr.src.rank != tr.dst.rank)
      CHECK(tr.link >= 0);
}

} // namespace

TEST_CASE("every collective synthesizes and verifies on dgx1", "[synth]") {
  Topology t = topo("dgx1");
  Sketch sk = shipped("dgx1");
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::AllReduce, CollectiveKind::Broadcast,
        CollectiveKind::Reduce, CollectiveKind::Gather, CollectiveKind::Scatter,
        CollectiveKind::AllToAll}) {
    INFO(toString(kind));
    SynthOptions o;
    o.kind = kind;
    o.root = 5;
    o.targetBytes = 1024;
    o.timeLimitSec = 20;
    SynthResult r = run(t, sk, o);
    requireVerified(r, t);
    CHECK(r.schedule.collective.kind == kind);
    CHECK(r.timeUs > 0);
    // At 1 KB latency dominates: the bound is met within a few latencies.
    CHECK(r.timeUs < 4 * r.lowerBoundUs);
  }
}

TEST_CASE("dgx1 AllGather at 1 KB takes the diameter's two steps", "[synth]") {
  Topology t = topo("dgx1");
  SynthOptions o;
  o.targetBytes = 1024;
  SynthResult r = run(t, shipped("dgx1"), o);
  requireVerified(r, t);
  CHECK(r.schedule.numSteps() == 2);
  CHECK(r.provenOptimal);
}

TEST_CASE("in-place variants and multi-node topologies verify", "[synth]") {
  Topology t = topo("ndv2x2");
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::AllReduce}) {
    INFO(toString(kind));
    SynthOptions o;
    o.kind = kind;
    o.inPlace = true;
    o.targetBytes = 1024;
    o.timeLimitSec = 20;
    SynthResult r = run(t, shipped("ndv2x2"), o);
    requireVerified(r, t);
    CHECK(r.schedule.collective.inPlace);
  }
}

TEST_CASE("an infeasible sketch is reported, not synthesized", "[synth]") {
  Topology t = topo("ndv2x2");
  Sketch sk =
      sketchOf(R"({"nnodes": 2, "intranode_sketch": {"strategy": "none"},
  "internode_sketch": {"strategy": "relay", "internode_conn": {"0": [1]},
    "gpus_to_sender_rev_map": {"0": [0]}}})");
  SynthOptions o;
  o.targetBytes = 1024;
  auto r = synthesize(t, sk, o);
  REQUIRE(r.ok());
  CHECK_FALSE(r->feasible);
  CHECK_THAT(r->infeasibility.message, Catch::Contains("can never receive"));
  CHECK(r->infeasibility.loc.line == 3);
  CHECK(r->schedule.transfers.empty());
}

TEST_CASE("a fixed seed gives the same schedule", "[synth]") {
  Topology t = topo("dgx1");
  SynthOptions o;
  o.kind = CollectiveKind::ReduceScatter;
  o.targetBytes = 1 << 20;
  o.seed = 7;
  o.timeLimitSec = 120;
  SynthResult a = run(t, shipped("dgx1"), o);
  SynthResult b = run(t, shipped("dgx1"), o);
  CHECK(scheduleToJson(a.schedule) == scheduleToJson(b.schedule));
  CHECK(a.method == b.method);
}

TEST_CASE("without time the best verified schedule so far is returned",
          "[synth]") {
  Topology t = topo("dgx1");
  SynthOptions o;
  o.targetBytes = 1 << 30;
  o.timeLimitSec = 0;
  SynthResult r = run(t, shipped("dgx1"), o);
  requireVerified(r, t);
  CHECK(r.timeLimitHit);
  CHECK_FALSE(r.provenOptimal);
}

TEST_CASE("a limit spent before the search began names the reading as cause",
          "[synth]") {
  // The tool starts the limit's clock before it reads the machine and the
  // sketch; when that reading spent the limit and its grace, the error
  // says so rather than blame the first step of the search.
  Topology t = topo("dgx1");
  SynthOptions o;
  o.targetBytes = 1 << 20;
  o.timeLimitSec = 5;
  o.startedAt = std::chrono::steady_clock::now() - std::chrono::seconds(60);
  auto r = synthesize(t, shipped("dgx1"), o);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message,
             Catch::Contains("the time limit (5.0 s) ran out before the "
                             "search began: reading the inputs took 60"));
}

TEST_CASE("custom copy collectives synthesize; custom reductions are refused",
          "[synth]") {
  Topology t = topo("ring:4");
  // Each rank's chunk goes to the rank two hops away (not adjacent).
  std::vector<std::vector<int>> pre{{0}, {1}, {2}, {3}};
  std::vector<std::vector<std::optional<std::vector<int>>>> post{
      {std::vector<int>{2}},
      {std::vector<int>{3}},
      {std::vector<int>{0}},
      {std::vector<int>{1}}};
  auto shift = Collective::custom("shift2", 4, 1, 1, pre, post);
  REQUIRE(shift.ok());
  SynthOptions o;
  o.kind = CollectiveKind::Custom;
  o.custom = *shift;
  o.targetBytes = 1 << 20;
  SynthResult r = run(t, defaultSketch(1), o);
  requireVerified(r, t);
  CHECK(r.schedule.collective.name == "shift2");

  std::vector<std::vector<std::optional<std::vector<int>>>> sum{
      {std::vector<int>{0, 1}}, {std::nullopt}, {std::nullopt}, {std::nullopt}};
  auto red = Collective::custom("sum01", 4, 1, 1, pre, sum);
  REQUIRE(red.ok());
  o.custom = *red;
  auto bad = synthesize(t, defaultSketch(1), o);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message,
             Catch::Contains("reductions is not supported"));
}
