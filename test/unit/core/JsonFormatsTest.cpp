// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the topology and schedule JSON forms and their located
// errors.
#include "ccsynth/Support/Json.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Schedule/Verifier.h"

#include <catch2/catch.hpp>

using namespace ccsynth;

namespace {
Expected<Schedule> parseSchedule(const std::string &text) {
  auto doc = JsonDocument::parse("s.json", text);
  if (!doc)
    return doc.error();
  return parseScheduleJson(*doc);
}
Expected<Topology> parseTopology(const std::string &text) {
  auto doc = JsonDocument::parse("t.json", text);
  if (!doc)
    return doc.error();
  return parseTopologyJson(*doc);
}
} // namespace

TEST_CASE("syntax errors carry line and column", "[json]") {
  auto doc = JsonDocument::parse("x.json", "{\n  \"a\": 1,\n  \"b\": ]\n}");
  REQUIRE_FALSE(doc.ok());
  CHECK(doc.error().loc.line == 3);
  CHECK(doc.error().loc.col == 8);
  CHECK_THAT(doc.error().format(), Catch::StartsWith("x.json:3:8: error:"));
  CHECK_THAT(doc.error().notes, Catch::Contains("^"));
}

TEST_CASE("semantic errors point at the offending value", "[json]") {
  auto doc = JsonDocument::parse(
      "x.json", "{\"links\": [\n  {\"src\": 0},\n  {\"src\": \"one\"}\n]}");
  REQUIRE(doc.ok());
  SourceLoc loc = doc->locate("/links/1/src");
  CHECK(loc.line == 3);
  CHECK(loc.col == 11);
  JsonReader rd(*doc);
  auto v = rd.integer("/links/1/src");
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.error().format(),
             Catch::Contains("x.json:3:11: error: '/links/1/src' must be an "
                             "integer, found a string"));
}

TEST_CASE("schedules round-trip through JSON", "[json][schedule]") {
  Schedule s;
  s.name = "t";
  s.topology = "fc:2";
  s.origin = "test";
  s.collective = *Collective::builtin(CollectiveKind::AllGather, 2, 1);
  s.scratchChunks = 1;
  Transfer t;
  t.src = {0, BufferKind::Input, 0};
  t.dst = {1, BufferKind::Output, 0};
  t.link = 0;
  s.transfers.push_back(t);
  t.src = {1, BufferKind::Input, 0};
  t.dst = {0, BufferKind::Output, 1};
  t.link = 1;
  t.channel = 2;
  s.transfers.push_back(t);
  std::string text = scheduleToJson(s);
  auto back = parseSchedule(text);
  REQUIRE(back.ok());
  CHECK(back->transfers.size() == 2);
  CHECK(back->transfers[1].channel == 2);
  CHECK(back->scratchChunks == 1);
  CHECK(scheduleToJson(*back) == text);
}

TEST_CASE("custom collectives round-trip through schedule JSON",
          "[json][schedule]") {
  Schedule s;
  s.collective = *Collective::custom(
      "swap", 2, 1, 1, {{0}, {1}},
      {{std::vector<int>{1}}, {std::vector<int>{0}}});
  auto back = parseSchedule(scheduleToJson(s));
  REQUIRE(back.ok());
  CHECK(back->collective.kind == CollectiveKind::Custom);
  CHECK(back->collective.name == "swap");
  CHECK(back->collective.postAt(0, 0).toVector() == std::vector<int>{1});
}

TEST_CASE("malformed schedules get located errors", "[json][schedule]") {
  std::string head = "{\"format\": \"ccsynth-schedule\", \"version\": 1,\n"
                     "\"collective\": {\"kind\": \"allgather\", \"ranks\": 2, "
                     "\"chunk_factor\": 1},\n";
  auto bad = parseSchedule(head + "\"transfers\": [\n"
                                  "  {\"step\": 0, \"op\": \"move\", \"src\": "
                                  "[0, \"i\", 0], \"dst\": [1, \"o\", 0]}]}");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().loc.line == 4);
  CHECK_THAT(bad.error().message, Catch::Contains("unknown op 'move'"));

  auto badBuf = parseSchedule(head + "\"transfers\": [\n"
                                     "  {\"step\": 0, \"op\": \"copy\", \"src\": "
                                     "[0, \"x\", 0], \"dst\": [1, \"o\", 0]}]}");
  REQUIRE_FALSE(badBuf.ok());
  CHECK_THAT(badBuf.error().message, Catch::Contains("unknown buffer 'x'"));

  auto typo = parseSchedule(head + "\"transfers\": [], \"instnaces\": 2}");
  REQUIRE_FALSE(typo.ok());
  CHECK_THAT(typo.error().message, Catch::Contains("unknown field 'instnaces'"));

  auto version = parseSchedule(
      "{\"format\": \"ccsynth-schedule\", \"version\": 7, \"transfers\": []}");
  REQUIRE_FALSE(version.ok());
  CHECK_THAT(version.error().message, Catch::Contains("version 7"));

  auto kind = parseSchedule("{\"format\": \"ccsynth-schedule\", \"version\": "
                            "1, \"collective\": {\"kind\": \"allgthr\", "
                            "\"ranks\": 2}, \"transfers\": []}");
  REQUIRE_FALSE(kind.ok());
  CHECK_THAT(kind.error().message, Catch::Contains("unknown collective"));
}

TEST_CASE("built-in topologies validate and round-trip through JSON",
          "[topology]") {
  for (const char *name : {"dgx1", "ndv2x2", "dgx2x2", "dgx-a100x2",
                           "dgx-h100x2", "ndv4", "dgx-b200x2", "gb200-nvl72",
                           "ring:5", "fc:3", "torus2d:2x3", "torus2d:4x4"}) {
    INFO(name);
    auto t = makeBuiltinTopology(name);
    REQUIRE(t.ok());
    CHECK(t->validate().ok());
    auto back = parseTopology(topologyToJson(*t));
    REQUIRE(back.ok());
    CHECK(back->links.size() == t->links.size());
    CHECK(back->resources.size() == t->resources.size());
    CHECK(topologyToJson(*back) == topologyToJson(*t));
  }
}

TEST_CASE("built-in topologies have the documented shape", "[topology]") {
  auto dgx1 = makeBuiltinTopology("dgx1");
  REQUIRE(dgx1.ok());
  // Hybrid cube-mesh: 6 NVLinks per GPU (25 GB/s each), 2-link pairs fused.
  for (int r = 0; r < 8; ++r) {
    double out = 0;
    for (const Link &l : dgx1->links)
      if (l.src == r)
        out += l.bandwidthGBps;
    CHECK(out == Approx(150));
  }
  CHECK_FALSE(dgx1->bestLink(0, 5).has_value());
  auto h = makeBuiltinTopology("dgx-h100x8");
  REQUIRE(h.ok());
  CHECK(h->numRanks() == 64);
  CHECK(h->numNodes() == 8);
  CHECK(h->effectiveBandwidth(*h->bestLink(0, 1)) == Approx(450));
  CHECK(h->effectiveBandwidth(*h->bestLink(0, 8)) == Approx(50));
  auto ndv2 = makeBuiltinTopology("ndv2x2");
  REQUIRE(ndv2.ok());
  // One NIC per node: all remote links of node 0 share one egress resource.
  int nic = ndv2->links[*ndv2->bestLink(0, 8)].resources[0];
  CHECK(ndv2->links[*ndv2->bestLink(7, 12)].resources[0] == nic);
}

TEST_CASE("Blackwell machines: NVLink5 ports, one NVLink domain per rack",
          "[topology]") {
  auto b = makeBuiltinTopology("dgx-b200x2");
  REQUIRE(b.ok());
  CHECK(b->numRanks() == 16);
  CHECK(b->stepModel.smArch == 100);
  // 18 NVLink5 links of 50 GB/s per direction through the NVSwitch.
  CHECK(b->links[*b->bestLink(0, 1)].bandwidthGBps == Approx(900));
  auto nvl = makeBuiltinTopology("gb200-nvl72");
  REQUIRE(nvl.ok());
  CHECK(nvl->numRanks() == 72);
  CHECK(nvl->numNodes() == 1);
  CHECK(nvl->links[*nvl->bestLink(0, 71)].bandwidthGBps == Approx(900));
  auto two = makeBuiltinTopology("gb200-nvl72x2");
  REQUIRE(two.ok());
  CHECK(two->numNodes() == 2);
  CHECK(two->sameNode(0, 71));
  CHECK_FALSE(two->sameNode(71, 72));
}

TEST_CASE("unknown topology names list the valid ones", "[topology]") {
  auto t = makeBuiltinTopology("dgx-b300");
  REQUIRE_FALSE(t.ok());
  CHECK_THAT(t.error().format(),
             Catch::Contains("unknown topology 'dgx-b300'"));
  CHECK_THAT(t.error().format(), Catch::Contains("dgx-h100[xN]"));
  CHECK_THAT(t.error().format(), Catch::Contains("gb200-nvl72[xN]"));
  // 57 racks would be 4104 ranks.
  auto big = makeBuiltinTopology("gb200-nvl72x57");
  REQUIRE_FALSE(big.ok());
  CHECK_THAT(big.error().message, Catch::Contains("at most 56 racks"));
  CHECK_FALSE(makeBuiltinTopology("ring:1").ok());
  CHECK_FALSE(makeBuiltinTopology("torus2d:3").ok());
  CHECK_FALSE(makeBuiltinTopology("dgx1x0").ok());
}

TEST_CASE("malformed topologies get located errors", "[topology]") {
  auto t = parseTopology("{\"format\": \"ccsynth-topology\", \"version\": 1, "
                         "\"name\": \"x\", \"ranks\": 2,\n\"links\": [\n"
                         "{\"src\": 0, \"dst\": 5, \"kind\": \"nvlink\", "
                         "\"alpha_us\": 1, \"bandwidth_gbps\": 10}]}");
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().loc.line == 3);
  CHECK_THAT(t.error().message, Catch::Contains("rank 5 is not in 0..1"));
  auto beta = parseTopology(
      "{\"format\": \"ccsynth-topology\", \"version\": 1, \"name\": \"x\", "
      "\"ranks\": 2, \"links\": [{\"src\": 0, \"dst\": 1, \"kind\": \"ib\", "
      "\"alpha_us\": 1.7, \"beta_us_per_mb\": 100}]}");
  REQUIRE(beta.ok());
  CHECK(beta->links[0].bandwidthGBps == Approx(10));
  CHECK(beta->links[0].kind == LinkKind::RDMA);
}
