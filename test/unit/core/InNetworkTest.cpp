// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of in-network switches (NVLink SHARP): the topology's
// switches and their JSON, switch transfers in schedules, their proof,
// their cost in the chunk simulator, the lower bound beside them, and the
// NVLS baseline.
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Baselines/InNetworkMix.h"
#include "ccsynth/Support/Json.h"
#include "ccsynth/Analysis/LowerBound.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Schedule/Verifier.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <tuple>

using namespace ccsynth;

namespace {

constexpr BufferKind I = BufferKind::Input, O = BufferKind::Output;

Topology builtin(const std::string &name) {
  auto t = makeBuiltinTopology(name);
  REQUIRE(t.ok());
  return t.take();
}

Expected<Topology> topologyFromText(const std::string &text) {
  auto doc = JsonDocument::parse("t.json", text);
  REQUIRE(doc.ok());
  return parseTopologyJson(*doc);
}

Transfer switchOp(TransferOp op, int step, ChunkLoc src, ChunkLoc dst,
                  int sw = 0) {
  Transfer t;
  t.op = op;
  t.step = step;
  t.src = src;
  t.dst = dst;
  t.sw = sw;
  return t;
}

/// NVLS AllReduce on `n` ranks, chunk factor n, out of place: rank r
/// reduces chunk r of every input into its output (step 0) and multicasts
/// it to the others (step 1).
Schedule nvlsAllReduce(int n) {
  Schedule s;
  s.collective = *Collective::builtin(CollectiveKind::AllReduce, n, n);
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < n; ++j)
      s.transfers.push_back(
          switchOp(TransferOp::SwitchReduce, 0, {j, I, r}, {r, O, r}));
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < n; ++j)
      if (j != r)
        s.transfers.push_back(
            switchOp(TransferOp::Multicast, 1, {r, O, r}, {j, O, r}));
  return s;
}

VerifyErrorKind firstKind(const Schedule &s, const Topology *topo) {
  VerifyOptions o;
  o.topology = topo;
  VerifyResult r = verifySchedule(s, o);
  REQUIRE_FALSE(r.ok());
  INFO(r.issues.front().message);
  return r.issues.front().kind;
}

} // namespace

TEST_CASE("NVLS machines have one switch per node over the NVSwitch ports",
          "[innetwork]") {
  Topology h = builtin("dgx-h100x2");
  // Two NVLS switches, then the fabric's IB SHARP over every NIC.
  REQUIRE(h.switches.size() == 3);
  const InNetworkSwitch &sharp = h.switches[2];
  CHECK(sharp.kind == SwitchKind::SHARP);
  CHECK(sharp.efficiency == Approx(0.9));
  CHECK(sharp.alphaUs == Approx(15.5));
  REQUIRE(sharp.ports.size() == 16);
  CHECK(sharp.ports[9].rank == 9);
  CHECK(sharp.ports[9].bandwidthGBps == Approx(50));
  CHECK(h.resources[sharp.ports[9].up].name == "n1.nic1.out");
  CHECK(h.resources[sharp.ports[9].down].name == "n1.nic1.in");
  CHECK(builtin("dgx-h100").switches.size() == 1);
  CHECK(builtin("ndv5x2").switches.size() == 2);
  CHECK(builtin("dgx-b200x4").switches.size() == 5);
  CHECK(builtin("gb200-nvl72x2").switches.back().ports.size() == 144);
  const InNetworkSwitch &sw = h.switches[1];
  CHECK(sw.name == "n1.nvls");
  CHECK(sw.kind == SwitchKind::NVLS);
  CHECK(sw.efficiency == Approx(0.754));
  CHECK(sw.alphaUs == Approx(12.5));
  REQUIRE(sw.ports.size() == 8);
  CHECK(sw.ports[0].rank == 8);
  CHECK(sw.ports[0].bandwidthGBps == Approx(450));
  // The ports are the NVSwitch port resources the links name.
  CHECK(h.resources[sw.ports[3].up].name == "n1.gpu3.nvswitch.out");
  CHECK(h.resources[sw.ports[3].down].name == "n1.gpu3.nvswitch.in");
  CHECK(sw.portOf(11) == 3);
  CHECK(sw.portOf(3) == -1);
  CHECK(builtin("dgx-b200").switches.at(0).efficiency == Approx(0.676));
  CHECK(builtin("gb200-nvl72").switches.at(0).ports.size() == 72);
  CHECK(builtin("dgx-a100").switches.empty());
  CHECK(builtin("dgx1").switches.empty());

  // The JSON form round-trips, and the hash sees the switches.
  std::string text = topologyToJson(h);
  auto back = topologyFromText(text);
  REQUIRE(back.ok());
  CHECK(topologyToJson(*back) == text);
  CHECK(topologyHash(*back) == topologyHash(h));
  Topology bare = h;
  bare.switches.clear();
  CHECK(topologyHash(bare) != topologyHash(h));
  Topology slower = h;
  slower.switches[0].efficiency = 0.5;
  CHECK(topologyHash(slower) != topologyHash(h));
}

TEST_CASE("topology JSON switches are checked with located errors",
          "[innetwork]") {
  auto with = [](const std::string &switches) {
    return topologyFromText(
        R"({"format": "ccsynth-topology", "version": 1, "name": "t",
            "ranks": 3, "resources": [{"name": "p", "bandwidth_gbps": 10}],
            "links": [{"src": 0, "dst": 1, "kind": "nvlink",
                       "alpha_us": 1, "bandwidth_gbps": 10}],
            "switches": )" +
        switches + "}");
  };
  auto ok = with(R"([{"name": "s", "kind": "nvls", "alpha_us": 2,
      "efficiency": 0.5, "ports": [{"rank": 2, "bandwidth_gbps": 20},
      {"rank": 0, "bandwidth_gbps": 30, "up": 0}]}])");
  REQUIRE(ok.ok());
  REQUIRE(ok->switches.size() == 1);
  // Ports are kept in rank order whatever order the file lists them in.
  CHECK(ok->switches[0].ports[0].rank == 0);
  CHECK(ok->switches[0].ports[0].up == 0);
  CHECK(ok->switches[0].ports[0].down == -1);
  struct Bad {
    const char *json;
    const char *message;
  } bad[] = {
      {R"([{"name": "s", "kind": "fast", "alpha_us": 1, "ports": []}])",
       "unknown switch kind 'fast'"},
      {R"([{"name": "s", "kind": "nvls", "alpha_us": 1,
           "ports": [{"rank": 0, "bandwidth_gbps": 1}]}])",
       "at least two ranks"},
      {R"([{"name": "s", "kind": "sharp", "alpha_us": 1,
           "ports": [{"rank": 0, "bandwidth_gbps": 1},
                     {"rank": 0, "bandwidth_gbps": 1}]}])",
       "rank 0 already has a port"},
      {R"([{"name": "s", "kind": "nvls", "alpha_us": 1,
           "ports": [{"rank": 0, "bandwidth_gbps": 1},
                     {"rank": 3, "bandwidth_gbps": 1}]}])",
       "rank 3 is not in 0..2"},
      {R"([{"name": "s", "kind": "nvls", "alpha_us": 1, "efficiency": 2,
           "ports": [{"rank": 0, "bandwidth_gbps": 1},
                     {"rank": 1, "bandwidth_gbps": 1}]}])",
       "efficiency 2 is out of range"},
      {R"([{"name": "s", "kind": "nvls", "alpha_us": 1,
           "ports": [{"rank": 0, "bandwidth_gbps": 1, "down": 4},
                     {"rank": 1, "bandwidth_gbps": 1}]}])",
       "resource 4 is not defined"},
  };
  for (const Bad &b : bad) {
    INFO(b.json);
    auto t = with(b.json);
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(t.error().message, Catch::Contains(b.message));
    CHECK(t.error().loc.line > 0);
  }
}

TEST_CASE("switch transfers round-trip through schedule JSON", "[innetwork]") {
  Schedule s = nvlsAllReduce(4);
  s.name = "nvls";
  std::string text = scheduleToJson(s);
  CHECK_THAT(text, Catch::Contains(R"("op":"switch-reduce")"));
  CHECK_THAT(text, Catch::Contains(R"("switch":0)"));
  // Both readers: the general one and the plain-form scanner for big files.
  for (size_t limit : {size_t(1) << 20, size_t(0)}) {
    auto back = readScheduleJson("s.json", text, limit);
    REQUIRE(back.ok());
    CHECK(scheduleToJson(*back) == text);
    CHECK(back->usesSwitches());
  }
  auto parse = [](const std::string &transfer) {
    auto doc =
        JsonDocument::parse("s.json",
                            R"({"format": "ccsynth-schedule", "version": 3,
            "collective": {"kind": "allreduce", "ranks": 2,
                           "chunk_factor": 1}, "transfers": [)" +
                                transfer + "]}");
    REQUIRE(doc.ok());
    return parseScheduleJson(*doc);
  };
  auto noSwitch = parse(
      R"({"step": 0, "op": "multicast", "src": [0, "i", 0], "dst": [1, "o", 0]})");
  REQUIRE_FALSE(noSwitch.ok());
  CHECK_THAT(noSwitch.error().message, Catch::Contains("names the switch"));
  auto switchOnCopy = parse(
      R"({"step": 0, "op": "copy", "switch": 0, "src": [0, "i", 0], "dst": [1, "o", 0]})");
  REQUIRE_FALSE(switchOnCopy.ok());
  CHECK_THAT(switchOnCopy.error().message,
             Catch::Contains("only switch-reduce and multicast"));
  // What cannot lower says so, at the transfer.
  Status p2p = pointToPointOnly(s, "MSCCL XML has no switch operations");
  REQUIRE_FALSE(p2p);
  CHECK_THAT(p2p.error().message,
             Catch::Contains("transfer #0 is a switch-reduce through switch 0"
                             ", and MSCCL XML has no switch operations"));
  Schedule plain;
  plain.collective = s.collective;
  CHECK(pointToPointOnly(plain, "x").ok());
}

TEST_CASE("the verifier proves switch reductions and multicasts and rejects "
          "their mutants",
          "[innetwork][verifier]") {
  Topology topo = builtin("dgx-h100");
  Schedule good = nvlsAllReduce(8);
  VerifyOptions o;
  o.topology = &topo;
  VerifyResult r = verifySchedule(good, o);
  INFO((r.ok() ? "" : r.issues.front().message));
  REQUIRE(r.ok());

  auto mutant = [&](auto change) {
    Schedule s = good;
    change(s);
    return s;
  };
  // A contribution left out of a reduction: the output lacks a value.
  CHECK(firstKind(mutant([](Schedule &s) {
                    s.transfers.erase(s.transfers.begin() + 3);
                  }),
                  &topo) == VerifyErrorKind::WrongOutput);
  // A contribution given twice (rank 2's in place of rank 3's).
  CHECK(firstKind(mutant([](Schedule &s) { s.transfers[3].src.rank = 2; }),
                  &topo) == VerifyErrorKind::DuplicateReduction);
  // A member of a reduction split into the next step: it overwrites the
  // sum with its own value (and races the multicast reading it).
  CHECK(firstKind(mutant([](Schedule &s) { s.transfers[5].step = 1; }),
                  &topo) == VerifyErrorKind::ReadWriteRace);
  // NVLS reduces one address on every rank.
  CHECK(firstKind(mutant([](Schedule &s) { s.transfers[1].src.index = 1; }),
                  &topo) == VerifyErrorKind::BadSwitch);
  // A multicast destination left out: that rank never gets the chunk.
  CHECK(firstKind(mutant([](Schedule &s) { s.transfers.pop_back(); }), &topo) ==
        VerifyErrorKind::MissingOutput);
  // Multicasts to two addresses.
  CHECK(firstKind(mutant([](Schedule &s) { s.transfers.back().dst.index = 0; }),
                  &topo) == VerifyErrorKind::BadSwitch);
  // A switch the machine does not have, and a rank without a port.
  CHECK(firstKind(mutant([](Schedule &s) {
                    for (Transfer &t : s.transfers)
                      t.sw = 1;
                  }),
                  &topo) == VerifyErrorKind::BadSwitch);
  Topology two = builtin("dgx-h100x2");
  Schedule wide = nvlsAllReduce(16);
  CHECK(firstKind(wide, &two) == VerifyErrorKind::BadSwitch);
  // Members of one operation move the same number of chunks.
  CHECK(firstKind(mutant([](Schedule &s) { s.transfers[2].count = 2; }),
                  nullptr) == VerifyErrorKind::BadSwitch);
  // Reading the sum in the step that writes it is a race.
  CHECK(firstKind(mutant([](Schedule &s) {
                    for (Transfer &t : s.transfers)
                      t.step = 0;
                  }),
                  &topo) == VerifyErrorKind::ReadWriteRace);
}

TEST_CASE("the chunk simulator charges a switch operation once, within the "
          "switch's throughput",
          "[innetwork][sim]") {
  Topology topo = builtin("dgx-h100");
  const InNetworkSwitch &sw = topo.switches[0];
  // One reduction of all 8 contributions into rank 0: 1 MB at a port's
  // 450 GB/s (the switch reaches 0.754 of both directions of a port,
  // more than one direction), then the switch's latency.
  Schedule s;
  s.collective = *Collective::builtin(CollectiveKind::Reduce, 8, 1, false, 0);
  for (int j = 0; j < 8; ++j)
    s.transfers.push_back(
        switchOp(TransferOp::SwitchReduce, 0, {j, I, 0}, {0, O, 0}));
  SimOptions so;
  so.bytes = 1e6;
  auto one = simulate(s, topo, so);
  REQUIRE(one.ok());
  double expect = sw.alphaUs + 1e6 / (450 * 1e3);
  CHECK(one->timeUs == Approx(expect).epsilon(1e-9));

  // NVLS AllReduce: every rank's port carries 7/8 B up (its contributions
  // to the others' reductions) and B/8 (its multicast), and as much down;
  // the switch moves 2B through it, at most 0.754 of 2 x 450 GB/s. With a
  // rank's reductions and multicasts queued and overlapped the time
  // approaches B over 0.754 x 450 GB/s, well under the ring's 14/8 B over
  // 450 GB/s.
  auto nvls = makeBaseline(BaselineKind::Nvls, CollectiveKind::AllReduce, topo);
  REQUIRE(nvls.ok());
  auto ring = makeBaseline(BaselineKind::Ring, CollectiveKind::AllReduce, topo);
  REQUIRE(ring.ok());
  so.bytes = 1 << 30;
  auto tn = simulate(*nvls, topo, so);
  auto tr = simulate(*ring, topo, so);
  REQUIRE(tn.ok());
  REQUIRE(tr.ok());
  double floor = so.bytes / (450 * sw.efficiency * 1e3);
  CHECK(tn->timeUs > floor);
  CHECK(tn->timeUs < 1.1 * floor);
  CHECK(tn->timeUs < tr->timeUs);
  // The bound stays below what NVLS achieves (a count of point-to-point
  // transfers would not: it would ask 14/8 B of every port).
  LowerBound lb = lowerBound(nvls->collective, topo, so.bytes);
  CHECK(lb.timeUs() < tn->timeUs);
  CHECK(lb.timeUs() == Approx(so.bytes / (450 * 1e3)).epsilon(1e-6));
}

TEST_CASE("the bound counts what a switch carries across a cut, on a "
          "machine joined by nothing else",
          "[innetwork][bound]") {
  // Three ranks, no links: only a switch (100 GB/s ports, 2 us) joins them.
  auto t = topologyFromText(
      R"({"format": "ccsynth-topology", "version": 1, "name": "s3",
          "ranks": 3, "links": [],
          "switches": [{"name": "s", "kind": "sharp", "alpha_us": 2,
                        "efficiency": 0.5,
                        "ports": [{"rank": 0, "bandwidth_gbps": 100},
                                  {"rank": 1, "bandwidth_gbps": 100},
                                  {"rank": 2, "bandwidth_gbps": 100}]}]})");
  REQUIRE(t.ok());
  Schedule s = nvlsAllReduce(3);
  SimOptions so;
  so.bytes = 3e6;
  auto sim = simulate(s, *t, so);
  REQUIRE(sim.ok());
  LowerBound lb = lowerBound(s.collective, *t, so.bytes);
  // Finite, below what the switch achieves, and the latency bound is the
  // switch's (no link path exists).
  REQUIRE(std::isfinite(lb.timeUs()));
  CHECK(lb.timeUs() <= sim->timeUs);
  CHECK(lb.latencyUs == Approx(2));
  CHECK_THAT(lb.bindingCut,
             Catch::Contains("and the switches joining both sides"));
  // Rank 0's value is in all three sums, which the other ranks need: 3 MB
  // leave it through its one port (100 GB/s one way; the switch's 0.5 of
  // both directions does not bind one way).
  CHECK(lb.bandwidthUs == Approx(3e6 / (100 * 1e3)).epsilon(1e-9));
}

TEST_CASE("the nvls baseline verifies where a switch joins every node's "
          "ranks",
          "[innetwork][baselines]") {
  int built = 0;
  for (const char *name : {"dgx-h100", "dgx-b200", "dgx-h100x2"}) {
    Topology topo = builtin(name);
    for (CollectiveKind c :
         {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter,
          CollectiveKind::AllGather})
      for (bool inPlace : {false, true}) {
        INFO(name << " " << toString(c) << (inPlace ? " in place" : ""));
        bool multiNode = topo.numNodes() > 1;
        // Across nodes (NVLS-tree) AllReduce only, as NCCL.
        bool expected = !multiNode || c == CollectiveKind::AllReduce;
        REQUIRE(baselineSupports(BaselineKind::Nvls, c, topo) == expected);
        BaselineOptions o;
        o.inPlace = inPlace;
        auto s = makeBaseline(BaselineKind::Nvls, c, topo, o);
        if (!expected) {
          REQUIRE_FALSE(s.ok());
          CHECK_THAT(s.error().message,
                     Catch::Contains("implements allreduce only"));
          continue;
        }
        if (!s)
          FAIL(s.error().message);
        VerifyOptions vo;
        vo.topology = &topo;
        CHECK(verifySchedule(*s, vo).ok());
        CHECK(s->origin == "baseline:nvls");
        int switched = 0, overNics = 0;
        for (const Transfer &t : s->transfers) {
          switched += isSwitchOp(t.op);
          if (!isSwitchOp(t.op) && t.src.rank != t.dst.rank)
            overNics += !topo.sameNode(t.src.rank, t.dst.rank);
        }
        CHECK(switched > 0);
        // Inside a node everything goes through the switch; only NVLS-tree
        // goes point to point, and then only between nodes.
        CHECK((overNics > 0) == multiNode);
        CHECK(switched + overNics == (int)s->transfers.size());
        ++built;
      }
  }
  CHECK(built == 14);
  Topology a100 = builtin("dgx-a100");
  CHECK_FALSE(
      baselineSupports(BaselineKind::Nvls, CollectiveKind::AllReduce, a100));
  auto s = makeBaseline(BaselineKind::Nvls, CollectiveKind::AllReduce, a100);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("NVLS switch"));
}

TEST_CASE("the collnet baseline reduces across nodes through IB SHARP and "
          "beats the rings there",
          "[innetwork][baselines]") {
  Topology topo = builtin("dgx-b200x2");
  for (bool inPlace : {false, true}) {
    INFO((inPlace ? "in place" : "out of place"));
    BaselineOptions o;
    o.inPlace = inPlace;
    auto s =
        makeBaseline(BaselineKind::Collnet, CollectiveKind::AllReduce, topo, o);
    if (!s)
      FAIL(s.error().message);
    VerifyOptions vo;
    vo.topology = &topo;
    CHECK(verifySchedule(*s, vo).ok());
    CHECK(s->origin == "baseline:collnet");
    // Inside nodes point to point, between nodes only through the switch.
    int switched = 0;
    for (const Transfer &t : s->transfers) {
      if (isSwitchOp(t.op)) {
        ++switched;
        CHECK(topo.switches[t.sw].kind == SwitchKind::SHARP);
      } else {
        CHECK(topo.sameNode(t.src.rank, t.dst.rank));
      }
    }
    CHECK(switched > 0);
  }
  // Each NIC carries the buffer's eighth once each way, where a ring moves
  // 2(n-1)/n of it: at 1 GB the runtime model puts CollNet well above
  // NCCL's ring and under the machine's bound.
  auto cn =
      makeBaseline(BaselineKind::Collnet, CollectiveKind::AllReduce, topo);
  auto ring = makeBaseline(BaselineKind::Ring, CollectiveKind::AllReduce, topo);
  REQUIRE(cn.ok());
  REQUIRE(ring.ok());
  double bytes = 1 << 30;
  auto tc = simulateInNetworkRuntime(*cn, topo, {bytes});
  REQUIRE(tc.ok());
  SimOptions so;
  so.bytes = bytes;
  auto tr = simulate(*ring, topo, so);
  REQUIRE(tr.ok());
  CHECK(tc->front().timeUs * 1.3 < tr->timeUs);
  CHECK(lowerBound(cn->collective, topo, bytes).timeUs() < tc->front().timeUs);

  // Refusals: other collectives, one node, no SHARP (NDv5), uneven nodes.
  auto bc =
      makeBaseline(BaselineKind::Collnet, CollectiveKind::Broadcast, topo);
  REQUIRE_FALSE(bc.ok());
  CHECK_THAT(bc.error().message, Catch::Contains("does not implement"));
  for (const char *name : {"dgx-b200", "ndv5x2", "dgx-a100x2"}) {
    INFO(name);
    Topology t = builtin(name);
    CHECK_FALSE(
        baselineSupports(BaselineKind::Collnet, CollectiveKind::AllReduce, t));
    auto e = makeBaseline(BaselineKind::Collnet, CollectiveKind::AllReduce, t);
    REQUIRE_FALSE(e.ok());
    CHECK_THAT(e.error().message, Catch::Contains("IB SHARP switch"));
  }
  CHECK(baselineSupports(BaselineKind::Collnet, CollectiveKind::AllReduce,
                         builtin("dgx-h100x2")));
}

TEST_CASE("collnet and nvls-sharp gather and reduce-scatter through the "
          "rails: each NIC carries an eighth of the buffer, own node included",
          "[innetwork][baselines]") {
  Topology topo = builtin("dgx-b200x4");
  const int n = topo.numRanks();
  for (BaselineKind kind : {BaselineKind::Collnet, BaselineKind::NvlsSharp})
    for (CollectiveKind c :
         {CollectiveKind::AllGather, CollectiveKind::ReduceScatter})
      for (bool inPlace : {false, true}) {
        INFO(toString(kind) << " " << toString(c)
                            << (inPlace ? " in place" : " out of place"));
        REQUIRE(baselineSupports(kind, c, topo));
        BaselineOptions o;
        o.inPlace = inPlace;
        auto s = makeBaseline(kind, c, topo, o);
        if (!s)
          FAIL(s.error().message);
        VerifyOptions vo;
        vo.topology = &topo;
        CHECK(verifySchedule(*s, vo).ok());
        // Between nodes only SHARP, along the rails (one local rank of
        // every node); inside nodes NVLink sends (CollNet Direct) or the
        // node's NVLS switch.
        // A chunk is 1/(n x chunk factor) of the larger buffer. What each
        // rank's NIC carries: once per operation it sends into (its
        // source) and once per operation it receives from (a destination).
        double perChunk = 1.0 / (n * s->collective.chunkFactor);
        std::vector<double> nicIn(n, 0), nicOut(n, 0);
        std::set<std::tuple<int, int, int, int>> ups, downs;
        auto key = [](const Transfer &t, const ChunkLoc &l) {
          return std::make_tuple(t.step, l.rank, (int)l.buffer, l.index);
        };
        for (const Transfer &t : s->transfers) {
          if (!isSwitchOp(t.op)) {
            CHECK(kind == BaselineKind::Collnet);
            CHECK(topo.sameNode(t.src.rank, t.dst.rank));
            continue;
          }
          if (topo.switches[t.sw].kind == SwitchKind::NVLS) {
            CHECK(kind == BaselineKind::NvlsSharp);
            continue;
          }
          int g = (int)topo.ranksOfNode(0).size();
          CHECK(t.src.rank % g == t.dst.rank % g);
          if (ups.insert(key(t, t.src)).second)
            nicOut[t.src.rank] += t.count * perChunk;
          if (downs.insert(key(t, t.dst)).second)
            nicIn[t.dst.rank] += t.count * perChunk;
        }
        for (int r = 0; r < n; ++r) {
          INFO("rank " << r);
          if (c == CollectiveKind::AllGather) {
            // Every rank of rail k takes in all of rail k's inputs (an
            // eighth of the output), its own included, and sends its own.
            CHECK(nicIn[r] == Approx(1.0 / 8));
            CHECK(nicOut[r] == Approx(1.0 / n));
          } else {
            // Each rail member sends a partial for every rank of its rail
            // (an eighth of the input) and receives its own part's total.
            CHECK(nicOut[r] == Approx(1.0 / 8));
            CHECK(nicIn[r] == Approx(1.0 / n));
          }
        }
      }
  // So the NICs bound the AllGather at an eighth of the output per NIC
  // whatever the number of nodes (NCCL's published CollNet AllGather on 2
  // to 46 nodes of B200 stays at 376-385 GB/s busbw, docs/calibration.md);
  // the runtime model comes within 10% of that bound, and a fabric that
  // skipped each rank's own node would beat it by a quarter.
  double bytes = 1 << 30;
  double nicGBps = 0;
  for (const InNetworkSwitch &sw : topo.switches)
    if (sw.kind == SwitchKind::SHARP)
      nicGBps = sw.ports.front().bandwidthGBps;
  REQUIRE(nicGBps > 0);
  double nicUs = bytes / 8 / (nicGBps * 1e3);
  for (BaselineKind kind : {BaselineKind::Collnet, BaselineKind::NvlsSharp}) {
    INFO(toString(kind));
    auto s = makeBaseline(kind, CollectiveKind::AllGather, topo);
    REQUIRE(s.ok());
    auto t = simulateInNetworkRuntime(*s, topo, {bytes});
    REQUIRE(t.ok());
    CHECK(t->front().timeUs > nicUs);
    CHECK(t->front().timeUs < 1.1 * nicUs);
    CHECK(lowerBound(s->collective, topo, bytes).timeUs() < t->front().timeUs);
  }
  // NCCL gathers through SHARP only with one GPU per NIC: two ranks of a
  // node on one NIC get no rail baselines (AllReduce stays).
  Topology shared = topo;
  for (InNetworkSwitch &sw : shared.switches)
    if (sw.kind == SwitchKind::SHARP) {
      sw.ports[1].up = sw.ports[0].up;
      sw.ports[1].down = sw.ports[0].down;
    }
  CHECK(baselineSupports(BaselineKind::Collnet, CollectiveKind::AllReduce,
                         shared));
  for (BaselineKind kind : {BaselineKind::Collnet, BaselineKind::NvlsSharp}) {
    CHECK_FALSE(baselineSupports(kind, CollectiveKind::AllGather, shared));
    auto e = makeBaseline(kind, CollectiveKind::ReduceScatter, shared);
    REQUIRE_FALSE(e.ok());
    CHECK_THAT(e.error().message, Catch::Contains("a NIC of its own"));
  }
}

TEST_CASE("the collnet-chain baseline reduces along chains inside nodes and "
          "moves CollNet Direct's bytes",
          "[innetwork][baselines]") {
  Topology topo = builtin("dgx-h100x2");
  auto point = [&](const Schedule &s) {
    // Bytes each rank sends point to point (fractions of the buffer), and
    // whether all of it stays inside nodes.
    std::vector<double> sent(topo.numRanks(), 0);
    bool inside = true;
    for (const Transfer &t : s.transfers)
      if (!isSwitchOp(t.op) && t.src.rank != t.dst.rank) {
        sent[t.src.rank] += (double)t.count / s.collective.chunkFactor;
        inside &= topo.sameNode(t.src.rank, t.dst.rank);
      }
    CHECK(inside);
    return sent;
  };
  for (bool inPlace : {false, true}) {
    INFO((inPlace ? "in place" : "out of place"));
    BaselineOptions o;
    o.inPlace = inPlace;
    auto chain = makeBaseline(BaselineKind::CollnetChain,
                              CollectiveKind::AllReduce, topo, o);
    auto direct =
        makeBaseline(BaselineKind::Collnet, CollectiveKind::AllReduce, topo, o);
    if (!chain)
      FAIL(chain.error().message);
    REQUIRE(direct.ok());
    VerifyOptions vo;
    vo.topology = &topo;
    CHECK(verifySchedule(*chain, vo).ok());
    CHECK(chain->origin == "baseline:collnet-chain");
    // Each rank sends 7/8 of the buffer up the chains and 7/8 down, as
    // CollNet Direct's ranks send 7 slices to their heads and, as heads,
    // the total 7 times.
    std::vector<double> c = point(*chain), d = point(*direct);
    for (int r = 0; r < topo.numRanks(); ++r) {
      CHECK(c[r] == Approx(2 * 7.0 / 8));
      CHECK(c[r] == Approx(d[r]));
    }
  }
  CHECK_FALSE(baselineSupports(BaselineKind::CollnetChain,
                               CollectiveKind::AllGather, topo));
  CHECK_FALSE(baselineSupports(BaselineKind::CollnetChain,
                               CollectiveKind::AllReduce, builtin("ndv5x2")));
}

TEST_CASE("the nvls-sharp baseline reduces inside nodes through NVLS and "
          "across them through IB SHARP, and frees H100's NVLink ports",
          "[innetwork][baselines]") {
  Topology topo = builtin("dgx-h100x2");
  for (bool inPlace : {false, true}) {
    INFO((inPlace ? "in place" : "out of place"));
    BaselineOptions o;
    o.inPlace = inPlace;
    auto s = makeBaseline(BaselineKind::NvlsSharp, CollectiveKind::AllReduce,
                          topo, o);
    if (!s)
      FAIL(s.error().message);
    VerifyOptions vo;
    vo.topology = &topo;
    CHECK(verifySchedule(*s, vo).ok());
    CHECK(s->origin == "baseline:nvls-sharp");
    // Every transfer goes through a switch: NVLS inside nodes, SHARP
    // between them.
    std::set<SwitchKind> kinds;
    for (const Transfer &t : s->transfers) {
      REQUIRE(isSwitchOp(t.op));
      kinds.insert(topo.switches[t.sw].kind);
    }
    CHECK(kinds == std::set<SwitchKind>{SwitchKind::NVLS, SwitchKind::SHARP});
  }
  // CollNet Direct sends each rank's seven slices out of its NVLink port
  // and, as a head, the total out seven times: on H100 the port, not the
  // NIC, bounds it. NVLS moves half that through the port.
  double bytes = 1 << 30;
  auto ns =
      makeBaseline(BaselineKind::NvlsSharp, CollectiveKind::AllReduce, topo);
  auto cn =
      makeBaseline(BaselineKind::Collnet, CollectiveKind::AllReduce, topo);
  REQUIRE(ns.ok());
  REQUIRE(cn.ok());
  auto tn = simulateInNetworkRuntime(*ns, topo, {bytes});
  auto tc = simulateInNetworkRuntime(*cn, topo, {bytes});
  REQUIRE(tn.ok());
  REQUIRE(tc.ok());
  CHECK(tn->front().timeUs * 1.15 < tc->front().timeUs);
  CHECK(lowerBound(ns->collective, topo, bytes).timeUs() < tn->front().timeUs);
  // Refusals: one node, no SHARP, other collectives.
  for (const char *name : {"dgx-h100", "ndv5x2"}) {
    INFO(name);
    Topology t = builtin(name);
    CHECK_FALSE(baselineSupports(BaselineKind::NvlsSharp,
                                 CollectiveKind::AllReduce, t));
    auto e =
        makeBaseline(BaselineKind::NvlsSharp, CollectiveKind::AllReduce, t);
    REQUIRE_FALSE(e.ok());
    CHECK_THAT(e.error().message, Catch::Contains("SHARP switch"));
  }
  auto a2a =
      makeBaseline(BaselineKind::NvlsSharp, CollectiveKind::AllToAll, topo);
  REQUIRE_FALSE(a2a.ok());
  CHECK_THAT(a2a.error().message, Catch::Contains("does not implement"));

  // The search mixes each algorithm with the ring, with the direct rails
  // and with each slower in-network algorithm: NCCL's three and ccsynth's
  // NVLS with rail rings and with rail exchanges, each in two forms
  // (ccsynth's four do not mix with each other), give 7 with the ring, 7
  // with the direct rails and 21 - 6 pairs at one share.
  // CollNet's NVLink sends beside switch operations beat both.
  InNetworkOptions io;
  io.bytes = bytes;
  io.shares = {2.0 / 3};
  auto found = searchInNetwork(CollectiveKind::AllReduce, topo, io);
  REQUIRE(found);
  REQUIRE(found->alone.size() == 3);
  REQUIRE(found->own.size() == 4);
  CHECK(found->mixesTried == 29);
  REQUIRE(found->best);
  CHECK_THAT(found->best->name, Catch::Contains("+ collnet"));
  double fastestAlone = INFINITY;
  for (const InNetworkCandidate &c : found->alone)
    fastestAlone = std::min(fastestAlone, c.timeUs);
  CHECK(found->best->timeUs * 1.02 < fastestAlone);
  // What a kernel can issue: the fastest with no IB SHARP operation, no
  // faster than the best and at least as fast as each of ccsynth's own
  // algorithms (NVLS inside nodes, point-to-point along the rails).
  REQUIRE(found->bestWithoutSharp);
  const InNetworkCandidate &plain = *found->bestWithoutSharp;
  for (const Transfer &t : plain.schedule.transfers)
    if (t.sw >= 0)
      CHECK(topo.switches[t.sw].kind == SwitchKind::NVLS);
  CHECK_THAT(plain.name,
             !Catch::Contains("collnet") && !Catch::Contains("sharp"));
  CHECK(plain.timeUs >= found->best->timeUs);
  for (const InNetworkCandidate &c : found->own)
    CHECK(plain.timeUs <= c.timeUs);
  // What synth weighs as generated code: ccsynth's four, NVLS-tree (the
  // one of NCCL's without SHARP), the mixes of ccsynth's two phased forms
  // with the direct rails, then the fastest other mixes without SHARP, at
  // most keepMixes; each group fastest first; the best of them is
  // bestWithoutSharp.
  auto runnableOf = [](const InNetworkSearch &s) {
    std::vector<std::string> names;
    for (const InNetworkCandidate &c : s.runnable)
      names.push_back(c.name);
    return names;
  };
  auto names = runnableOf(*found);
  REQUIRE(names.size() == 7 + (size_t)io.keepMixes);
  for (size_t k = 0; k < 4; ++k)
    CHECK(names[k] == found->own[k].name);
  CHECK(names[4] == "nvls");
  for (size_t k = 5; k < 7; ++k) {
    CHECK_THAT(names[k], Catch::Contains("-phased ") &&
                             Catch::EndsWith("+ direct-rails 33%"));
    CHECK_THAT(names[k], !Catch::StartsWith("nvls "));
  }
  CHECK(found->runnable[6].timeUs >= found->runnable[5].timeUs);
  bool sawPlain = false;
  for (size_t k = 0; k < names.size(); ++k) {
    CHECK_THAT(names[k],
               !Catch::Contains("collnet") && !Catch::Contains("sharp"));
    if (k > 7)
      CHECK(found->runnable[k].timeUs >= found->runnable[k - 1].timeUs);
    if (k >= 7)
      CHECK_THAT(names[k], !(Catch::Contains("-phased ") &&
                             Catch::Contains("direct-rails")));
    CHECK(found->runnable[k].timeUs >= plain.timeUs);
    sawPlain |= names[k] == plain.name;
  }
  CHECK(sawPlain);
  InNetworkOptions fewer = io;
  fewer.keepMixes = 2;
  auto two = searchInNetwork(CollectiveKind::AllReduce, topo, fewer);
  REQUIRE(two);
  auto twoNames = runnableOf(*two);
  REQUIRE(twoNames.size() == 9);
  CHECK(std::equal(twoNames.begin(), twoNames.end(), names.begin()));

  // A sketch that allows NVLS alone: NCCL's NVLS-tree and ccsynth's own,
  // none through SHARP; SHARP alone: CollNet only; on one node, no SHARP.
  auto searchWith = [&](const Topology &machine,
                        std::vector<SwitchKind> allowed) {
    InNetworkOptions only = io;
    only.allowedSwitches = std::move(allowed);
    return searchInNetwork(CollectiveKind::AllReduce, machine, only);
  };
  auto onlyNvls = searchWith(topo, {SwitchKind::NVLS});
  REQUIRE(onlyNvls);
  REQUIRE(onlyNvls->alone.size() == 1);
  CHECK(onlyNvls->alone[0].name == "nvls");
  CHECK(onlyNvls->own.size() == 4);
  REQUIRE(onlyNvls->best);
  CHECK(onlyNvls->best->name == onlyNvls->bestWithoutSharp->name);
  CHECK(onlyNvls->best->timeUs == Approx(plain.timeUs));
  auto onlySharp = searchWith(topo, {SwitchKind::SHARP});
  REQUIRE(onlySharp);
  REQUIRE(onlySharp->alone.size() == 1);
  CHECK(onlySharp->alone[0].name == "collnet");
  CHECK(onlySharp->own.empty());
  CHECK_FALSE(onlySharp->bestWithoutSharp);
  CHECK_FALSE(inNetworkApplies(CollectiveKind::AllReduce, builtin("dgx-h100"),
                               {SwitchKind::SHARP}));
  auto oneNode = searchWith(builtin("dgx-h100"), {SwitchKind::SHARP});
  REQUIRE_FALSE(oneNode);
  CHECK_THAT(oneNode.error().message,
             Catch::Contains("with the switches allowed"));
}

TEST_CASE("in-network algorithms mixed with point-to-point schedules on "
          "shares of the buffer verify, and the runtime model finds NVLS's "
          "idle port time",
          "[innetwork]") {
  Topology topo = builtin("dgx-h100");
  InNetworkOptions o;
  o.bytes = 1 << 30;
  o.shares = {7.0 / 8, 3.0 / 4};
  auto direct =
      makeBaseline(BaselineKind::Direct, CollectiveKind::AllReduce, topo);
  auto nvls = makeBaseline(BaselineKind::Nvls, CollectiveKind::AllReduce, topo);
  REQUIRE(direct);
  REQUIRE(nvls);
  // A schedule that uses switches is no point-to-point part.
  o.pointToPoint = {{"direct", &*direct}, {"nvls", &*nvls}};
  auto s = searchInNetwork(CollectiveKind::AllReduce, topo, o);
  REQUIRE(s);
  REQUIRE(s->alone.size() == 1);
  CHECK(s->alone[0].name == "nvls");
  CHECK(s->alone[0].share == 1);
  // Two shares with the ring and with the direct schedule.
  CHECK(s->mixesTried == 4);
  CHECK_FALSE(s->cutShort);
  REQUIRE(s->best);
  VerifyOptions vo;
  vo.topology = &topo;
  CHECK(verifySchedule(s->best->schedule, vo).ok());
  CHECK(s->best->schedule.usesSwitches());
  CHECK(s->best->share < 1);
  CHECK_THAT(s->best->name, Catch::StartsWith("nvls "));
  // No IB SHARP on one node: the best is what a kernel can issue.
  REQUIRE(s->bestWithoutSharp);
  CHECK(s->bestWithoutSharp->name == s->best->name);
  // NVLS leaves the ports partly idle (476 GB/s of bus bandwidth over
  // 450 GB/s ports, against 2 x 7/8 of the port rate the ring can reach):
  // the mix is at least 5% faster in the model, and still above the bound.
  CHECK(s->best->timeUs * 1.05 < s->alone[0].timeUs);
  CHECK(lowerBound(s->best->schedule.collective, topo, o.bytes).timeUs() <
        s->best->timeUs);
  auto again = simulateInNetworkRuntime(s->best->schedule, topo, {o.bytes});
  REQUIRE(again);
  CHECK(again->front().timeUs == Approx(s->best->timeUs));

  // Nothing to mix where no switch reduces, and past the deadline only the
  // first algorithm alone is timed.
  auto none = searchInNetwork(CollectiveKind::AllReduce, builtin("dgx-a100"),
                              InNetworkOptions{});
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error().message, Catch::Contains("no in-network algorithm"));
  CHECK_FALSE(inNetworkApplies(CollectiveKind::AllToAll, topo));
  InNetworkOptions late;
  late.until = std::chrono::steady_clock::now();
  auto cut = searchInNetwork(CollectiveKind::ReduceScatter, topo, late);
  REQUIRE(cut);
  CHECK(cut->cutShort);
  CHECK(cut->mixesTried == 0);
  REQUIRE(cut->best);
  CHECK(cut->best->name == "nvls");
  // Across nodes NVLS + SHARP comes first; late, the others are not timed.
  auto nodes =
      searchInNetwork(CollectiveKind::AllReduce, builtin("dgx-b200x2"), late);
  REQUIRE(nodes);
  CHECK(nodes->cutShort);
  REQUIRE(nodes->alone.size() == 1);
  CHECK(nodes->alone[0].name == "nvls-sharp");
  CHECK_FALSE(nodes->bestWithoutSharp);
}

TEST_CASE("NVLS with rail rings or exchanges reduces inside nodes through "
          "the switch and across them along each rail, above NCCL's "
          "NVLS-tree where the network does not reduce",
          "[innetwork]") {
  Topology topo = builtin("ndv5x4");
  CHECK(nvlsRailsSupports(CollectiveKind::AllReduce, topo));
  int steps[2][2] = {{0, 0}, {0, 0}};
  for (RailAllReduce rail : {RailAllReduce::Ring, RailAllReduce::Direct})
    for (bool wavefront : {false, true})
      for (bool inPlace : {false, true}) {
        bool direct = rail == RailAllReduce::Direct;
        INFO((direct ? "exchanges, " : "rings, ")
             << (wavefront ? "wavefront" : "phased")
             << (inPlace ? ", in place" : ", out of place"));
        BaselineOptions o;
        o.inPlace = inPlace;
        auto s = makeNvlsRails(topo, o, wavefront, rail);
        if (!s)
          FAIL(s.error().message);
        VerifyOptions vo;
        vo.topology = &topo;
        CHECK(verifySchedule(*s, vo).ok());
        CHECK(s->origin == std::string(direct ? "synth:nvls-rails-direct"
                                              : "synth:nvls-rails"));
        CHECK(s->collective.chunkFactor == 8 * (wavefront ? 16 : 4) * 4);
        // Switch operations through each node's NVLS switch; sends only
        // between the same local rank of two nodes (one rail, one NIC);
        // exchanges add partials in the owner's scratch.
        int sends = 0;
        for (const Transfer &t : s->transfers) {
          if (isSwitchOp(t.op)) {
            CHECK(topo.switches[t.sw].kind == SwitchKind::NVLS);
            continue;
          }
          if (t.src.rank == t.dst.rank) {
            CHECK(direct);
            CHECK(t.op == TransferOp::Reduce);
            continue;
          }
          ++sends;
          CHECK(topo.nodeOf[t.src.rank] != topo.nodeOf[t.dst.rank]);
          CHECK(t.src.rank % 8 == t.dst.rank % 8);
        }
        // Either way each piece crosses 2 x 3 links: a ring's 2 (N - 1) hops
        // or the 3 partials in and 3 totals out of its owner.
        CHECK(sends == s->collective.chunkFactor * 2 * 3);
        steps[direct][wavefront] = s->numSteps();
      }
  // The wavefront starts chunk q at step q: 16 chunks add 15 steps; an
  // exchange takes two hops where the ring takes 6.
  for (int d = 0; d < 2; ++d)
    CHECK(steps[d][1] == steps[d][0] + 15);
  CHECK(steps[1][0] < steps[0][0]);

  // On 4 nodes without SHARP each NIC carries 2 x 3/4 of its slice in a
  // ring where NCCL's tree (a chain here) moves the same bytes with a
  // longer pipeline fill: 1.33 x NVLS-tree in the runtime model, within
  // the point-to-point bound across the nodes.
  Topology four = builtin("ndv5x4");
  double bytes = 1 << 30;
  auto rails = makeNvlsRails(four, {});
  auto tree = makeBaseline(BaselineKind::Nvls, CollectiveKind::AllReduce, four);
  REQUIRE(rails.ok());
  REQUIRE(tree.ok());
  auto tr = simulateInNetworkRuntime(*rails, four, {bytes});
  auto tt = simulateInNetworkRuntime(*tree, four, {bytes});
  REQUIRE(tr.ok());
  REQUIRE(tt.ok());
  CHECK(tr->front().timeUs * 1.2 < tt->front().timeUs);
  CHECK(lowerBound(rails->collective, four, bytes).timeUs() <
        tr->front().timeUs);
  // The exchanges' two hops: faster still, within the same bound.
  auto exchanges = makeNvlsRails(four, {}, true, RailAllReduce::Direct);
  REQUIRE(exchanges.ok());
  auto te = simulateInNetworkRuntime(*exchanges, four, {bytes});
  REQUIRE(te.ok());
  CHECK(te->front().timeUs < tr->front().timeUs);
  CHECK(lowerBound(exchanges->collective, four, bytes).timeUs() <
        te->front().timeUs);

  // The direct form: the same pieces along the rails, sends instead of the
  // switch inside the nodes; each rank's own peers in the order of their
  // distance after it.
  for (const char *name : {"dgx-h100x2", "ndv5x4"})
    for (bool inPlace : {false, true}) {
      Topology t = builtin(name);
      INFO(name << (inPlace ? ", in place" : ", out of place"));
      BaselineOptions o;
      o.inPlace = inPlace;
      auto d = makeDirectRails(t, o);
      auto phased = makeNvlsRails(t, o, false, RailAllReduce::Direct);
      if (!d)
        FAIL(d.error().message);
      REQUIRE(phased.ok());
      VerifyOptions vo;
      vo.topology = &t;
      CHECK(verifySchedule(*d, vo).ok());
      CHECK(d->origin == "synth:direct-rails");
      CHECK_FALSE(d->usesSwitches());
      CHECK(d->collective.chunkFactor == phased->collective.chunkFactor);
      auto crossings = [&](const Schedule &x) {
        std::vector<int> out(t.numRanks(), 0);
        for (const Transfer &tr : x.transfers)
          if (!isSwitchOp(tr.op) &&
              t.nodeOf[tr.src.rank] != t.nodeOf[tr.dst.rank]) {
            CHECK(tr.src.rank % 8 == tr.dst.rank % 8);
            out[tr.src.rank] += std::max(1, tr.count);
          }
        return out;
      };
      CHECK(crossings(*d) == crossings(*phased));
      // Inside a node every rank sends each other rank its share of every
      // slice it owns and the totals of its own: 2 x 7/8 of the buffer.
      std::vector<int> inside(t.numRanks(), 0);
      for (const Transfer &tr : d->transfers)
        if (tr.src.rank != tr.dst.rank &&
            t.nodeOf[tr.src.rank] == t.nodeOf[tr.dst.rank])
          inside[tr.src.rank] += std::max(1, tr.count);
      for (int r = 0; r < t.numRanks(); ++r)
        CHECK(inside[r] * 8 == d->collective.chunkFactor * 2 * 7);
    }

  // Refusals: one node, no NVLS, other collectives.
  for (const char *name : {"dgx-h100", "dgx-a100x2"}) {
    INFO(name);
    CHECK_FALSE(nvlsRailsSupports(CollectiveKind::AllReduce, builtin(name)));
    auto e = makeNvlsRails(builtin(name), {});
    REQUIRE_FALSE(e.ok());
    CHECK_THAT(e.error().message, Catch::Contains("NVLS switch"));
    CHECK_FALSE(makeDirectRails(builtin(name), {}).ok());
  }
  CHECK_FALSE(nvlsRailsSupports(CollectiveKind::AllGather, topo));
}
