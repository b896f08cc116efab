// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the baseline schedules and the ring search.
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Baselines/Rings.h"
#include "ccsynth/Schedule/Verifier.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

using namespace ccsynth;

namespace {

Topology builtin(const std::string &name) {
  auto t = makeBuiltinTopology(name);
  REQUIRE(t.ok());
  return t.take();
}

const CollectiveKind kAllCollectives[] = {
    CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
    CollectiveKind::AllReduce, CollectiveKind::Broadcast,
    CollectiveKind::Reduce,    CollectiveKind::Gather,
    CollectiveKind::Scatter,   CollectiveKind::AllToAll};
const BaselineKind kAllBaselines[] = {BaselineKind::Ring, BaselineKind::Tree,
                                      BaselineKind::Direct,
                                      BaselineKind::Hierarchical};

/// Checks what every baseline must satisfy, beyond makeBaseline's own
/// verification: it verifies again here, names itself and uses real links.
void checkSchedule(const Schedule &s, const Topology &topo, BaselineKind kind,
                   CollectiveKind collective, bool inPlace) {
  VerifyOptions vo;
  vo.topology = &topo;
  VerifyResult vr = verifySchedule(s, vo);
  INFO((vr.ok() ? std::string() : vr.issues.front().message));
  CHECK(vr.ok());
  CHECK(s.origin == std::string("baseline:") + toString(kind));
  CHECK(s.topology == topo.name);
  CHECK(s.protocol == "Simple");
  CHECK(s.collective.kind == collective);
  CHECK(s.collective.inPlace == inPlace);
  CHECK_FALSE(s.name.empty());
  bool linksOk = true;
  for (const Transfer &t : s.transfers) {
    if (t.src.rank == t.dst.rank) {
      linksOk &= t.link == -1;
      continue;
    }
    linksOk &= t.link >= 0 && t.link == topo.bestLink(t.src.rank, t.dst.rank);
  }
  CHECK(linksOk);
}

/// Directed arc uses of a ring set, by topology link.
std::map<int, int> linkUse(const Topology &topo, const RingSet &rs) {
  std::map<int, int> use;
  for (const std::vector<int> &ring : rs.rings)
    for (size_t i = 0; i < ring.size(); ++i) {
      auto l = topo.bestLink(ring[i], ring[(i + 1) % ring.size()]);
      REQUIRE(l.has_value());
      ++use[*l];
    }
  return use;
}

void checkRingsArePermutations(const Topology &topo, const RingSet &rs) {
  for (const std::vector<int> &ring : rs.rings) {
    std::vector<int> sorted = ring;
    std::sort(sorted.begin(), sorted.end());
    REQUIRE((int)sorted.size() == topo.numRanks());
    for (int r = 0; r < topo.numRanks(); ++r)
      CHECK(sorted[r] == r);
  }
}

} // namespace

TEST_CASE("baseline kinds print and parse", "[baselines]") {
  for (BaselineKind k : kAllBaselines)
    CHECK(parseBaselineKind(toString(k)) == k);
  CHECK(parseBaselineKind("allpairs") == BaselineKind::Direct);
  CHECK_FALSE(parseBaselineKind("butterfly").has_value());
}

TEST_CASE("ring search finds every disjoint ring of point-to-point meshes",
          "[baselines][rings]") {
  SECTION("a 4-rank ring runs both directions") {
    Topology t = builtin("ring:4");
    RingSet rs = findRings(t);
    CHECK(rs.rings.size() == 2);
    CHECK_FALSE(rs.routed);
    checkRingsArePermutations(t, rs);
  }
  SECTION("DGX-1 has three undirected Hamiltonian cycles, six rings") {
    Topology t = builtin("dgx1");
    RingSet rs = findRings(t);
    REQUIRE(rs.rings.size() == 6);
    CHECK(rs.rateGBps == Approx(25.0));
    checkRingsArePermutations(t, rs);
    // Every NVLink lane carries exactly one ring: 2-lane links two.
    for (auto [link, uses] : linkUse(t, rs))
      CHECK(uses * 25.0 == Approx(t.links[link].bandwidthGBps));
    CHECK(linkUse(t, rs).size() == t.links.size());
  }
  SECTION("a 4x4 torus has two undirected Hamiltonian cycles") {
    Topology t = builtin("torus2d:4x4");
    RingSet rs = findRings(t);
    CHECK(rs.rings.size() == 4);
    checkRingsArePermutations(t, rs);
    for (auto [link, uses] : linkUse(t, rs))
      CHECK(uses == 1);
  }
  SECTION("the ring limit is honoured and picks the best rate under it") {
    RingSearchOptions o;
    o.maxRings = 5;
    RingSet five = findRings(builtin("dgx1"), o);
    CHECK(five.rings.size() == 5);
    CHECK(five.rateGBps == Approx(25.0));
    // Two rings over the double NVLinks (2 x 50 GB/s) beat three or four
    // single-lane rings (at most 4 x 25 GB/s).
    o.maxRings = 4;
    RingSet four = findRings(builtin("dgx1"), o);
    CHECK(four.rings.size() == 2);
    CHECK(four.rateGBps == Approx(50.0));
  }
}

TEST_CASE("ring search on switched and multi-node machines",
          "[baselines][rings]") {
  SECTION("one NVSwitch port per GPU carries one ring at full rate") {
    Topology t = builtin("dgx-a100");
    RingSet rs = findRings(t);
    CHECK(rs.rings.size() == 1);
    CHECK(rs.rateGBps == Approx(300.0));
  }
  SECTION("multi-node rings cross each boundary once, one NIC each") {
    for (const char *name : {"dgx-a100x2", "dgx-h100x8"}) {
      Topology t = builtin(name);
      RingSet rs = findRings(t);
      INFO(name);
      CHECK(rs.rings.size() == 8);
      checkRingsArePermutations(t, rs);
      std::set<int> exitsOfNode0;
      for (const std::vector<int> &ring : rs.rings) {
        int crossings = 0;
        for (size_t i = 0; i < ring.size(); ++i) {
          int a = ring[i], b = ring[(i + 1) % ring.size()];
          if (!t.sameNode(a, b)) {
            ++crossings;
            if (t.nodeOf[a] == 0)
              exitsOfNode0.insert(a);
          }
        }
        CHECK(crossings == t.numNodes());
      }
      // One NIC per GPU: eight rings leave node 0 through eight GPUs.
      CHECK(exitsOfNode0.size() == 8);
    }
  }
  SECTION("a single shared NIC allows one ring") {
    CHECK(findRings(builtin("ndv2x2")).rings.size() == 1);
  }
  SECTION("DGX-1 nodes with a NIC per GPU pair get four rings") {
    Topology t = builtin("dgx1x2");
    RingSet rs = findRings(t);
    CHECK(rs.rings.size() == 4);
    checkRingsArePermutations(t, rs);
  }
  SECTION("a subset of ranks is searched on its own links") {
    Topology t = builtin("dgx-a100x2");
    RingSet rs = findRings(t, t.ranksOfNode(1));
    REQUIRE(rs.rings.size() == 1);
    CHECK(rs.rings[0].size() == 8);
    CHECK(rs.rings[0][0] == 8);
  }
}

TEST_CASE("ring search falls back to a routed ring", "[baselines][rings]") {
  // A star: no Hamiltonian ring exists.
  Topology t;
  t.name = "star";
  t.nodeOf = {0, 0, 0, 0};
  for (int leaf = 1; leaf < 4; ++leaf) {
    t.links.push_back({0, leaf, LinkKind::NVLink, 1.0, 25.0, {}});
    t.links.push_back({leaf, 0, LinkKind::NVLink, 1.0, 25.0, {}});
  }
  RingSet rs = findRings(t);
  CHECK(rs.routed);
  REQUIRE(rs.rings.size() == 1);
  auto s = makeBaseline(BaselineKind::Ring, CollectiveKind::AllReduce, t);
  REQUIRE(s.ok());
  CHECK(s->scratchChunks > 0);
  checkSchedule(*s, t, BaselineKind::Ring, CollectiveKind::AllReduce, false);
}

TEST_CASE("every supported baseline verifies on every test topology",
          "[baselines]") {
  const char *topologies[] = {
      "ring:4", "fc:4",     "torus2d:2x3", "dgx1",       "ndv2x2",
      "dgx2",   "dgx-a100", "dgx-a100x2",  "dgx-h100x2", "dgx-b200x2"};
  int built = 0;
  for (const char *name : topologies) {
    Topology topo = builtin(name);
    for (BaselineKind kind : kAllBaselines)
      for (CollectiveKind coll : kAllCollectives) {
        if (!baselineSupports(kind, coll, topo))
          continue;
        for (bool inPlace : {false, true}) {
          BaselineOptions o;
          o.inPlace = inPlace;
          o.root = topo.numRanks() - 1;
          INFO(name << " " << toString(kind) << " " << toString(coll)
                    << (inPlace ? " in-place" : ""));
          auto s = makeBaseline(kind, coll, topo, o);
          if (!s)
            FAIL(s.error().message);
          checkSchedule(*s, topo, kind, coll, inPlace);
          ++built;
        }
      }
  }
  // 10 topologies x (6 ring + 3 tree + 8 direct) + 4 multi-node x 4
  // hierarchical, each out of and in place.
  CHECK(built == 2 * (10 * 17 + 4 * 4));
}

TEST_CASE("baselines build quickly on 64 ranks", "[baselines]") {
  Topology topo = builtin("dgx-h100x8");
  struct Case {
    BaselineKind kind;
    CollectiveKind coll;
    bool inPlace;
  };
  const Case cases[] = {
      {BaselineKind::Ring, CollectiveKind::AllReduce, false},
      {BaselineKind::Ring, CollectiveKind::ReduceScatter, true},
      {BaselineKind::Ring, CollectiveKind::Broadcast, false},
      {BaselineKind::Ring, CollectiveKind::AllToAll, true},
      {BaselineKind::Tree, CollectiveKind::AllReduce, true},
      {BaselineKind::Tree, CollectiveKind::Reduce, false},
      {BaselineKind::Direct, CollectiveKind::AllToAll, true},
      {BaselineKind::Direct, CollectiveKind::AllReduce, false},
      {BaselineKind::Hierarchical, CollectiveKind::AllReduce, false},
      {BaselineKind::Hierarchical, CollectiveKind::AllGather, true},
      {BaselineKind::Hierarchical, CollectiveKind::AllToAll, false},
  };
  for (const Case &c : cases) {
    BaselineOptions o;
    o.inPlace = c.inPlace;
    o.root = 37;
    INFO(toString(c.kind) << " " << toString(c.coll));
    auto s = makeBaseline(c.kind, c.coll, topo, o);
    if (!s)
      FAIL(s.error().message);
    checkSchedule(*s, topo, c.kind, c.coll, c.inPlace);
  }
}

TEST_CASE("ring baselines split the data evenly over the rings",
          "[baselines]") {
  Topology topo = builtin("dgx1");
  auto s = makeBaseline(BaselineKind::Ring, CollectiveKind::AllReduce, topo);
  REQUIRE(s.ok());
  // Six rings of eight blocks.
  CHECK(s->collective.chunkFactor == 48);
  std::map<int, int> perChannel;
  for (const Transfer &t : s->transfers)
    ++perChannel[t.channel];
  REQUIRE(perChannel.size() == 6);
  for (auto [channel, count] : perChannel)
    CHECK(count == perChannel.begin()->second);
  // Ring transfers are all between neighbours: no forwarding.
  CHECK(s->scratchChunks == 0);
  // Out of place each of the n-1 = 7 ReduceScatter hops lands as a copy
  // and is followed by a local addition; then 7 AllGather hops.
  CHECK(s->numSteps() == 2 * 7 + 7);
  BaselineOptions inPlace;
  inPlace.inPlace = true;
  auto ip = makeBaseline(BaselineKind::Ring, CollectiveKind::AllReduce, topo,
                         inPlace);
  REQUIRE(ip.ok());
  // In place every hop reduces straight into the next rank's buffer.
  CHECK(ip->numSteps() == 7 + 7);
  CHECK(ip->collective.chunkFactor == 48);

  auto ag = makeBaseline(BaselineKind::Ring, CollectiveKind::AllGather,
                         builtin("ring:4"));
  REQUIRE(ag.ok());
  CHECK(ag->collective.chunkFactor == 2);
}

TEST_CASE("tree allreduce uses two complementary pipelined trees",
          "[baselines]") {
  Topology topo = builtin("dgx-a100");
  BaselineOptions o;
  o.pipeline = 3;
  o.inPlace = true;
  auto s = makeBaseline(BaselineKind::Tree, CollectiveKind::AllReduce, topo, o);
  REQUIRE(s.ok());
  CHECK(s->collective.chunkFactor == 6);
  // In place, an inner rank's first child reduces straight into it: a rank
  // that is inner in one tree must be a leaf in the other.
  std::map<int, std::set<int>> inner;
  for (const Transfer &t : s->transfers)
    if (t.src.rank != t.dst.rank && t.op == TransferOp::Reduce)
      inner[t.channel].insert(t.dst.rank);
  REQUIRE(inner.size() == 2);
  for (int r : inner[0])
    CHECK(inner[1].count(r) == 0);
}

TEST_CASE("direct baselines forward between non-adjacent ranks",
          "[baselines]") {
  Topology topo = builtin("ring:4");
  REQUIRE_FALSE(topo.bestLink(0, 2).has_value());
  auto s = makeBaseline(BaselineKind::Direct, CollectiveKind::AllToAll, topo);
  REQUIRE(s.ok());
  // Each rank has one non-neighbour; its chunk passes through scratch on
  // the rank Topology::route names.
  CHECK(s->scratchChunks >= 1);
  int via = topo.route(0, 2)[1];
  bool forwarded = false;
  for (const Transfer &t : s->transfers)
    if (t.src.rank == 0 && t.src.index == 2 &&
        t.dst.buffer == BufferKind::Scratch)
      forwarded = t.dst.rank == via;
  CHECK(forwarded);
  checkSchedule(*s, topo, BaselineKind::Direct, CollectiveKind::AllToAll,
                false);
}

TEST_CASE("baselines reject what they do not implement", "[baselines]") {
  Topology dgx1 = builtin("dgx1");
  auto tree = makeBaseline(BaselineKind::Tree, CollectiveKind::AllGather, dgx1);
  REQUIRE_FALSE(tree.ok());
  CHECK(tree.error().message.find("allgather") != std::string::npos);
  CHECK(tree.error().notes.find("allreduce, broadcast, reduce") !=
        std::string::npos);
  CHECK_FALSE(
      baselineSupports(BaselineKind::Tree, CollectiveKind::AllGather, dgx1));

  auto hier =
      makeBaseline(BaselineKind::Hierarchical, CollectiveKind::AllReduce, dgx1);
  REQUIRE_FALSE(hier.ok());
  CHECK(hier.error().message.find("more than one node") != std::string::npos);
  CHECK_FALSE(baselineSupports(BaselineKind::Hierarchical,
                               CollectiveKind::AllReduce, dgx1));

  CHECK_FALSE(
      makeBaseline(BaselineKind::Direct, CollectiveKind::Custom, dgx1).ok());

  BaselineOptions badRoot;
  badRoot.root = 8;
  auto r = makeBaseline(BaselineKind::Ring, CollectiveKind::Broadcast, dgx1,
                        badRoot);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("root 8") != std::string::npos);

  BaselineOptions badPipeline;
  badPipeline.pipeline = -2;
  CHECK_FALSE(makeBaseline(BaselineKind::Ring, CollectiveKind::AllReduce, dgx1,
                           badPipeline)
                  .ok());
}

TEST_CASE("baselines report unreachable ranks instead of failing later",
          "[baselines]") {
  Topology t;
  t.name = "split";
  t.nodeOf = {0, 0, 0};
  t.links.push_back({0, 1, LinkKind::NVLink, 1.0, 25.0, {}});
  t.links.push_back({1, 0, LinkKind::NVLink, 1.0, 25.0, {}});
  auto s = makeBaseline(BaselineKind::Direct, CollectiveKind::AllGather, t);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("no path") != std::string::npos);
}

TEST_CASE("a single rank needs only local copies", "[baselines]") {
  Topology t;
  t.name = "one";
  t.nodeOf = {0};
  for (BaselineKind kind :
       {BaselineKind::Ring, BaselineKind::Tree, BaselineKind::Direct}) {
    auto s = makeBaseline(kind, CollectiveKind::AllReduce, t);
    REQUIRE(s.ok());
    for (const Transfer &tr : s->transfers)
      CHECK(tr.src.rank == tr.dst.rank);
  }
}

TEST_CASE("oversized baselines fail with a message instead of exhausting "
          "memory",
          "[baselines]") {
  // Two rings of 1024 blocks: 2 x 2 x 1023 x 1024 transfers, over the
  // limit (the conditions themselves, 3 x 2^21 entries, fit).
  auto s = makeBaseline(BaselineKind::Ring, CollectiveKind::AllReduce,
                        builtin("ring:1024"));
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("more than 4194304 transfers") !=
        std::string::npos);
  // Conditions over the limit: an all-to-all on 256 ranks pipelined 1024
  // deep holds 2^27 slots.
  BaselineOptions deep;
  deep.pipeline = 1024;
  auto big = makeBaseline(BaselineKind::Direct, CollectiveKind::AllToAll,
                          builtin("fc:256"), deep);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message.find("too large") != std::string::npos);
}

TEST_CASE("a ring baseline too large for one ring is refused before its "
          "rings are searched",
          "[baselines]") {
  // 2,100 ranks: one ring's AllGather passes 2,100 x 2,099 chunks, over
  // the 4,194,304 transfers a schedule may hold; the pipeline depth is not
  // the cause and is not suggested.
  auto s = makeBaseline(BaselineKind::Ring, CollectiveKind::AllGather,
                        builtin("ring:2100"));
  REQUIRE_FALSE(s);
  CHECK(s.error().message ==
        "a ring allgather over 2100 ranks needs at least 4407900 transfers "
        "with a single ring, more than the 4194304 a schedule may hold; use "
        "another baseline or fewer ranks");
  // With a pipeline depth that is part of the cause, it is named.
  BaselineOptions deep;
  deep.pipeline = 2;
  auto piped = makeBaseline(BaselineKind::Ring, CollectiveKind::AllGather,
                            builtin("ring:1500"), deep);
  REQUIRE_FALSE(piped);
  CHECK(piped.error().message.find("with a single ring and --pipeline 2") !=
        std::string::npos);
  CHECK(piped.error().message.find("use a smaller pipeline depth") !=
        std::string::npos);
}

TEST_CASE("a baseline stops building at its deadline", "[baselines]") {
  // A relayed all-to-all on 16 DGX-1 (128 ranks): 16K direct pairs and
  // thousands of relays, far more than 4,096 transfers.
  auto t = makeBuiltinTopology("dgx1x16");
  REQUIRE(t);
  BaselineOptions o;
  o.until = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto late = makeBaseline(BaselineKind::Direct, CollectiveKind::AllToAll, *t, o);
  REQUIRE_FALSE(late);
  CHECK(late.error().message.find("time limit") != std::string::npos);
  // With time left it builds and verifies.
  o.until = std::chrono::steady_clock::now() + std::chrono::hours(1);
  auto inTime = makeBaseline(BaselineKind::Direct, CollectiveKind::AllToAll, *t, o);
  REQUIRE(inTime);
  CHECK(inTime->transfers.size() > 4096);
}
