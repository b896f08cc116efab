// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the cut-based lower bounds against hand-derived figures.
#include "ccsynth/Analysis/LowerBound.h"

#include <limits>
#include <vector>

#include <catch2/catch.hpp>

using namespace ccsynth;

namespace {

Collective builtin(CollectiveKind kind, int ranks, int chunks = 1,
                   int root = 0) {
  auto c = Collective::builtin(kind, ranks, chunks, false, root);
  REQUIRE(c.ok());
  return *c;
}

Topology builtinTopo(const std::string &name) {
  auto t = makeBuiltinTopology(name);
  REQUIRE(t.ok());
  return *t;
}

/// Time in µs of `bytes` over `gbps`.
double us(double bytes, double gbps) { return bytes / (gbps * 1e3); }

} // namespace

TEST_CASE("allgather on a fully connected machine", "[bound]") {
  double m = 4e6;
  LowerBound lb =
      lowerBound(builtin(CollectiveKind::AllGather, 4), builtinTopo("fc:4"), m);
  // Each rank needs the other 3/4 of the output over 3 links of 25 GB/s.
  CHECK(lb.bandwidthUs == Approx(us(0.75 * m, 3 * 25)));
  CHECK(lb.latencyUs == Approx(0.7));
  CHECK(lb.timeUs() == Approx(lb.bandwidthUs));
  CHECK_FALSE(lb.bindingCut.empty());
}

TEST_CASE("allgather on a ring is bound by two links per rank", "[bound]") {
  double m = 4e6;
  LowerBound lb = lowerBound(builtin(CollectiveKind::AllGather, 4),
                             builtinTopo("ring:4"), m);
  CHECK(lb.bandwidthUs == Approx(us(0.75 * m, 2 * 25)));
  // The farthest rank is two hops away.
  CHECK(lb.latencyUs == Approx(1.4));
}

TEST_CASE("alltoall bisection on a ring", "[bound]") {
  // ring:8 alltoall: the cut {0..3} | {4..7} is crossed by 2 links per
  // direction and 4 x 4 chunks of m/8 must cross it: m*2 / 50 GB/s. A
  // single rank only needs 7/8 m over 50 GB/s.
  double m = 8e6;
  LowerBound lb = lowerBound(builtin(CollectiveKind::AllToAll, 8),
                             builtinTopo("ring:8"), m);
  CHECK(lb.bandwidthUs == Approx(us(16 * m / 8, 2 * 25)));
  CHECK_THAT(lb.bindingCut, Catch::Contains("ranks {"));
}

TEST_CASE("allreduce in one DGX A100 is bound by total traffic", "[bound]") {
  double m = 8e6;
  LowerBound lb = lowerBound(builtin(CollectiveKind::AllReduce, 8, 8),
                             builtinTopo("dgx-a100"), m);
  // 2(n-1)/n of the buffer per GPU through its 300 GB/s NVSwitch port.
  CHECK(lb.bandwidthUs == Approx(us(2 * 7.0 / 8 * m, 300)));
  CHECK_THAT(lb.bindingCut, Catch::Contains("all links"));
}

TEST_CASE("multi-node collectives and the NICs", "[bound]") {
  double m = 16e6;
  // NDv2 has one 12.5 GB/s NIC per node: node 1 needs a partial sum of
  // every chunk of node 0 through it.
  LowerBound ndv2 = lowerBound(builtin(CollectiveKind::AllReduce, 16, 16),
                               builtinTopo("ndv2x2"), m);
  CHECK(ndv2.bandwidthUs == Approx(us(m, 12.5)));
  CHECK_THAT(ndv2.bindingCut, Catch::Contains("node"));

  // Two DGX A100: the NIC cut (m over 8 x 25 GB/s) is weaker than the
  // total traffic, 2(n-1)/n of the buffer per GPU through its 300 GB/s
  // NVSwitch port plus its 25 GB/s NIC.
  LowerBound ar = lowerBound(builtin(CollectiveKind::AllReduce, 16, 16),
                             builtinTopo("dgx-a100x2"), m);
  CHECK(ar.bandwidthUs == Approx(us(2 * 15.0 / 16 * m, 325)));
  CHECK(ar.bandwidthUs > us(m, 8 * 25));

  // Allgather on two nodes: a GPU needs 15/16 of the output and receives
  // through its NVSwitch port (300) and its NIC (25).
  LowerBound ag2 = lowerBound(builtin(CollectiveKind::AllGather, 16),
                              builtinTopo("dgx-a100x2"), m);
  CHECK(ag2.bandwidthUs == Approx(us(15.0 / 16 * m, 325)));

  // On four nodes the NICs dominate: a node needs 3/4 of the output from
  // the others through its 8 NICs.
  double m4 = 32e6;
  LowerBound ag4 = lowerBound(builtin(CollectiveKind::AllGather, 32),
                              builtinTopo("dgx-a100x4"), m4);
  CHECK(ag4.bandwidthUs == Approx(us(0.75 * m4, 200)));
  CHECK_THAT(ag4.bindingCut, Catch::Contains("node"));
  CHECK(ag4.latencyUs == Approx(1.7));
}

TEST_CASE("rooted collectives", "[bound]") {
  double m = 1e6;
  // Broadcast from rank 0 on fc:4: every other rank needs the whole buffer
  // through its 75 GB/s of incoming links; the root sends it out over 75.
  LowerBound bc = lowerBound(builtin(CollectiveKind::Broadcast, 4, 4),
                             builtinTopo("fc:4"), m);
  CHECK(bc.bandwidthUs == Approx(us(m, 75)));
  // Reduce to rank 2 on a ring: rank 2 must receive a partial of every
  // chunk through its two links.
  LowerBound rd = lowerBound(builtin(CollectiveKind::Reduce, 4, 4, 2),
                             builtinTopo("ring:4"), m);
  CHECK(rd.bandwidthUs == Approx(us(m, 50)));
  CHECK(rd.latencyUs == Approx(1.4));
}

TEST_CASE("shared resources are counted once in a cut", "[bound]") {
  // Rank 0 reaches ranks 1..3 through links of 100 GB/s each that all cross
  // one 50 GB/s port: the port, not the links, bounds a scatter.
  Topology t;
  t.name = "port";
  t.nodeOf = {0, 0, 0, 0};
  t.resources.push_back({"r0.out", 50});
  for (int j = 1; j < 4; ++j) {
    t.links.push_back({0, j, LinkKind::NVLink, 0.5, 100, {0}});
    t.links.push_back({j, 0, LinkKind::NVLink, 0.5, 100, {}});
  }
  double m = 4e6;
  LowerBound lb = lowerBound(builtin(CollectiveKind::Scatter, 4), t, m);
  CHECK(lb.bandwidthUs == Approx(us(0.75 * m, 50)));
  CHECK_THAT(lb.bindingCut, Catch::Contains("rank 0"));
}

TEST_CASE("custom collectives use their pre/postconditions", "[bound]") {
  // Rank 0 holds a and b; rank 1 must end with a+b and rank 2 with a. The
  // sets overlap, so only the disjoint family {a} is counted: one chunk
  // must leave rank 0 (valid, though two are really needed).
  auto c = Collective::custom(
      "partial", 3, 2, 1, {{0, 1}, {-1, -1}, {-1, -1}},
      {{std::nullopt}, {std::vector<int>{0, 1}}, {std::vector<int>{0}}});
  REQUIRE(c.ok());
  double m = 2e6; // 1 MB chunks
  LowerBound lb = lowerBound(*c, builtinTopo("fc:3"), m);
  CHECK(lb.bandwidthUs == Approx(us(1e6, 50)));

  // A swap: each of two ranks needs the other's chunk over one link.
  auto swap =
      Collective::custom("swap", 2, 1, 1, {{0}, {1}},
                         {{std::vector<int>{1}}, {std::vector<int>{0}}});
  REQUIRE(swap.ok());
  CHECK(lowerBound(*swap, builtinTopo("fc:2"), 1e6).bandwidthUs ==
        Approx(us(1e6, 25)));
  CHECK(lb.latencyUs == Approx(0.7));
}

TEST_CASE("impossible and mismatched inputs", "[bound]") {
  Topology t;
  t.name = "split";
  t.nodeOf = {0, 0};
  t.links.push_back({0, 1, LinkKind::NVLink, 0.7, 25, {}});
  LowerBound lb = lowerBound(builtin(CollectiveKind::AllGather, 2), t, 1e6);
  CHECK(std::isinf(lb.bandwidthUs));
  CHECK_THAT(lb.bindingCut, Catch::Contains("no link"));

  LowerBound mismatch =
      lowerBound(builtin(CollectiveKind::AllGather, 3), builtinTopo("fc:4"), 1);
  CHECK(mismatch.timeUs() == 0);
  CHECK_THAT(mismatch.bindingCut, Catch::Contains("no bound"));

  // Nothing to move: one rank.
  auto single = Collective::builtin(CollectiveKind::AllReduce, 1, 1);
  REQUIRE(single.ok());
  Topology one;
  one.name = "one";
  one.nodeOf = {0};
  CHECK(lowerBound(*single, one, 1e6).timeUs() == 0);
}

TEST_CASE("allreduce on several nodes is bound on the node quotient",
          "[bound]") {
  double m = 1024.0 * 1024 * 1024;
  // NDv2 x4: one 12.5 GB/s NIC per node; every element crosses between
  // nodes 2(m-1) = 6 times, over 4 NICs: 2(m-1)/m of the buffer per NIC
  // (the single-node cut gives only m / 12.5 GB/s).
  LowerBound ndv2 = lowerBound(builtin(CollectiveKind::AllReduce, 32, 32),
                               builtinTopo("ndv2x4"), m);
  CHECK(ndv2.bandwidthUs == Approx(us(2 * 3.0 / 4 * m, 12.5)));
  CHECK_THAT(ndv2.bindingCut, Catch::Contains("node quotient"));

  // Eight DGX H100 (8 x 50 GB/s NICs each): 2 * 7/8 of the buffer per
  // node over 400 GB/s for point-to-point schedules (NDv5 has no IB
  // SHARP, so that is its bound); more chunks do not change it. Through
  // the fabric's SHARP switches a node's NICs carry the buffer once each
  // way, so the machine's bound is the node cut.
  for (int k : {1, 4}) {
    Collective ar = builtin(CollectiveKind::AllReduce, 64, 64 * k);
    LowerBound h = lowerBound(ar, builtinTopo("dgx-h100x8"), m, {},
                              BoundScope::PointToPoint);
    CHECK(h.bandwidthUs == Approx(us(2 * 7.0 / 8 * m, 400)));
    CHECK(lowerBound(ar, builtinTopo("ndv5x8"), m).bandwidthUs ==
          Approx(h.bandwidthUs));
    LowerBound sharp = lowerBound(ar, builtinTopo("dgx-h100x8"), m);
    CHECK(sharp.bandwidthUs == Approx(us(m, 400)));
    CHECK_THAT(sharp.bindingCut,
               Catch::Contains("the switches joining both sides"));
  }

  // ReduceScatter and AllGather alone move (m-1)/m of the output per node:
  // the node cut already says that.
  LowerBound ag = lowerBound(builtin(CollectiveKind::AllGather, 32),
                             builtinTopo("ndv2x4"), m);
  CHECK(ag.bandwidthUs == Approx(us(3.0 / 4 * m, 12.5)));

  // Within one node the node quotient has nothing to say: the per-rank
  // bound stays.
  LowerBound one = lowerBound(builtin(CollectiveKind::AllReduce, 8, 8),
                              builtinTopo("dgx-a100"), m);
  CHECK_THAT(one.bindingCut, Catch::Contains("all links"));
}

TEST_CASE("the latency bound is the longest shortest path on multi-node "
          "machines",
          "[bound]") {
  // Against Floyd-Warshall over every rank pair: the bound skips searches
  // that cannot raise it, and must still find the same maximum.
  for (const char *name : {"dgx-h100x4", "dgx1x2", "ndv2x2", "dgx2x2"}) {
    Topology t = builtinTopo(name);
    int n = t.numRanks();
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<std::vector<double>> d(n, std::vector<double>(n, inf));
    for (int i = 0; i < n; ++i)
      d[i][i] = 0;
    for (const Link &l : t.links)
      d[l.src][l.dst] = std::min(d[l.src][l.dst], l.alphaUs);
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          d[i][j] = std::min(d[i][j], d[i][k] + d[k][j]);
    double worst = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        worst = std::max(worst, d[i][j]);
    LowerBound lb = lowerBound(builtin(CollectiveKind::AllGather, n), t, 1e6);
    INFO(name);
    CHECK(lb.latencyUs == Approx(worst));
  }
}
