//===- TuneSpaceTest.cpp - What the tuned compile weighs ------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The tuner's search space: the sizes, instance counts, tiles and the
// order generated code is tried in (compiler/lib/Tuning/TuneSpace.cpp).
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Tuning/Tuning.h"

#include <catch2/catch.hpp>

using namespace ccsynth;
using namespace ccsynth::tuning;

namespace {
constexpr double K = 1024, M = 1024 * K, G = 1024 * M;

Schedule baseline(BaselineKind kind, CollectiveKind coll,
                  const std::string &machine) {
  auto topo = makeBuiltinTopology(machine);
  REQUIRE(topo);
  auto s = makeBaseline(kind, coll, *topo);
  REQUIRE(s);
  return s.take();
}

TuneCandidate candidate(int instances, double score, long long loop = 1) {
  TuneCandidate c;
  c.instances = instances;
  c.score = score;
  c.nchunksperloop = loop;
  return c;
}
} // namespace

TEST_CASE("the size grid is 1K, 4K, ..., 1G within a range", "[tuning]") {
  std::vector<double> all = tuningGrid(0, 0);
  REQUIRE(all.size() == 11);
  CHECK(all.front() == K);
  CHECK(all[1] == 4 * K);
  CHECK(all.back() == G);
  CHECK(tuningGrid(5000, (long long)M) ==
        std::vector<double>{16 * K, 64 * K, 256 * K, M});
  CHECK(tuningGrid((long long)G + 1, 0).empty());
}

TEST_CASE("tuned sizes are 1K, 1M and 1G, else the range's ends",
          "[tuning]") {
  CHECK(tuningSizes(-1, -1) == std::vector<double>{K, M, G});
  CHECK(tuningSizes((long long)(2 * M), -1) == std::vector<double>{G});
  CHECK(tuningSizes(2048, 3072) == std::vector<double>{2048, 3072});
  CHECK(tuningSizes(-1, 512) == std::vector<double>{K});
}

TEST_CASE("instance counts shrink with the schedule's transfers",
          "[tuning]") {
  Schedule small;
  small.transfers.resize(100);
  CHECK(tuningInstances(small) == std::vector<int>{1, 2, 4, 8, 16, 32});
  Schedule mid;
  mid.transfers.resize(10000);
  CHECK(tuningInstances(mid) == std::vector<int>{1, 2, 4});
  Schedule large;
  large.transfers.resize(40000);
  CHECK(tuningInstances(large) == std::vector<int>{1});
}

TEST_CASE("tiles and loads are weighed only with switch operations",
          "[tuning]") {
  Schedule ring =
      baseline(BaselineKind::Ring, CollectiveKind::AllReduce, "dgx-h100");
  CHECK(generatedTileCandidates(ring, 64 * K) == std::vector<double>{64 * K});
  CHECK(switchLoadsCap(ring) == 0);
  CHECK(generatedTuningSizes(ring, -1, -1) == std::vector<double>{K, M, G});

  Schedule nvls =
      baseline(BaselineKind::Nvls, CollectiveKind::AllReduce, "dgx-h100");
  REQUIRE(nvls.usesSwitches());
  std::vector<double> tiles = generatedTileCandidates(nvls, 64 * K);
  REQUIRE(tiles.size() == 7);
  CHECK(tiles.front() == M);
  CHECK(tiles.back() == 8 * K);
  CHECK(std::is_sorted(tiles.rbegin(), tiles.rend()));
  CHECK(generatedTileCandidates(nvls, 64 * K, /*coarse=*/true) ==
        std::vector<double>{M, 256 * K, 64 * K, 16 * K});
  CHECK(generatedTuningSizes(nvls, -1, -1) ==
        std::vector<double>{K, M, 4 * M, 16 * M, 64 * M, 256 * M, G});
  CHECK(generatedTuningSizes(nvls, (long long)(8 * M), (long long)(100 * M)) ==
        std::vector<double>{8 * M, 16 * M, 64 * M, 100 * M});
}

TEST_CASE("generated code tries the fewest instances within 2% first",
          "[tuning]") {
  TuneResult t;
  t.candidates = {candidate(8, 1.00), candidate(1, 1.015), candidate(2, 1.3),
                  candidate(4, 1.01), candidate(16, 1.1)};
  TuneCandidate nccl = candidate(1, 0.9);
  nccl.program = 0; // NCCL's program: never generated code
  t.candidates.push_back(nccl);
  t.best = 0;
  // Within 2% of the fastest: 1, 4 and 8 instances, fewest first; then the
  // others fastest first.
  CHECK(generatedOrder(t) == std::vector<int>{1, 3, 0, 4, 2});

  // A loop with a larger odd factor than the fastest's is left out.
  t.candidates[3].nchunksperloop = 3;
  CHECK(generatedOrder(t) == std::vector<int>{1, 0, 4, 2});
  t.best = -1;
  CHECK(generatedOrder(t).empty());
}

TEST_CASE("candidates are described by their knobs", "[tuning]") {
  TuneCandidate c = candidate(4, 1);
  c.protocol = "LL128";
  CHECK(describeCandidate(c) == "4 instances, LL128");
  CHECK(describeCandidate(c, false) == "4 instances");
  c.fuse = false;
  CHECK(describeCandidate(c) == "4 instances, LL128, unfused");
  CompileOptions o;
  c.applyTo(o);
  CHECK(o.instances == 4);
  CHECK(o.protocol == "LL128");
  CHECK_FALSE(o.fuse);
}
