//===- ServedRangesTest.cpp - Where a program serves ----------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The sizes a tuned program serves against NCCL's reference times
// (compiler/lib/Tuning/ServedRanges.cpp): the best run for one MSCCL XML,
// every run for generated code, and a piece per tile.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Tuning/Tuning.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace ccsynth;
using namespace ccsynth::tuning;

namespace {
/// The 11 sizes of tuningGrid (1K .. 1G) with NCCL at 10 us everywhere and
/// the program at `own` (a time per size).
struct Fixture {
  std::vector<double> sizes = tuningGrid(0, 0);
  TuneResult nccl;
  TuneCandidate program;
  explicit Fixture(std::vector<double> own) {
    nccl.ncclBestUs.assign(sizes.size(), 10.0);
    program.timeUs = std::move(own);
  }
};
std::vector<double> times(std::initializer_list<std::pair<int, double>> at,
                          double elsewhere = 20) {
  std::vector<double> t(11, elsewhere);
  for (auto [k, us] : at)
    t[k] = us;
  return t;
}
} // namespace

TEST_CASE("one XML serves its best run, bounded at the powers of two "
          "between sizes",
          "[tuning][served]") {
  Fixture f(times({{0, 5}, {1, 5}, {2, 8}}));
  Served s = servedWhereFaster(f.program, f.nccl, f.sizes);
  REQUIRE(s.any);
  CHECK(s.count == 3);
  CHECK(s.minBytes == 0);
  CHECK(s.maxBytes == 32 * 1024 - 1); // below 2 x 16K
  double expected = std::exp((2 * std::log(2.0) + std::log(10.0 / 8)) / 11);
  CHECK(s.score == Approx(expected));
  CHECK(s.ranges.empty());

  // A run in the middle is bounded on both sides.
  Fixture mid(times({{4, 9}, {5, 9}}));
  Served m = servedWhereFaster(mid.program, mid.nccl, mid.sizes);
  REQUIRE(m.any);
  CHECK(m.minBytes == 2 * 64 * 1024);
  CHECK(m.maxBytes == 2 * 1024 * 1024 - 1);
}

TEST_CASE("a tie serves only when asked, and then the longest run",
          "[tuning][served]") {
  Fixture f(times({}, 10.1)); // within 2% of NCCL everywhere
  CHECK_FALSE(servedWhereFaster(f.program, f.nccl, f.sizes).any);
  Served s = servedWhereFaster(f.program, f.nccl, f.sizes, /*ties=*/true);
  REQUIRE(s.any);
  CHECK(s.count == 11);
  CHECK(s.minBytes == 0);
  CHECK(s.maxBytes == 0); // unbounded
}

TEST_CASE("a loop with an odd factor serves no power of two",
          "[tuning][served]") {
  Fixture f(times({}, 1));
  f.program.nchunksperloop = 3;
  CHECK_FALSE(servedWhereFaster(f.program, f.nccl, f.sizes).any);
  CHECK_FALSE(servedRunsWhereFaster(f.program, f.nccl, f.sizes).any);
  // Without NCCL's times there is nothing to weigh against.
  f.program.nchunksperloop = 1;
  f.nccl.ncclBestUs.clear();
  CHECK_FALSE(servedWhereFaster(f.program, f.nccl, f.sizes).any);
}

TEST_CASE("generated code serves every run where it gains",
          "[tuning][served]") {
  Fixture f(times({{0, 5}, {1, 5}, {5, 5}, {6, 5}}));
  Served s = servedRunsWhereFaster(f.program, f.nccl, f.sizes);
  REQUIRE(s.any);
  REQUIRE(s.ranges.size() == 2);
  CHECK(s.ranges[0].minBytes == 0);
  CHECK(s.ranges[0].maxBytes == 2 * 4 * 1024 - 1);
  CHECK(s.ranges[1].minBytes == 2 * 256 * 1024);
  CHECK(s.ranges[1].maxBytes == 2 * 4 * 1024 * 1024 - 1);
  CHECK(s.minBytes == s.ranges[0].minBytes);
  CHECK(s.maxBytes == s.ranges[0].maxBytes);
  CHECK(s.count == 4);
  CHECK(s.score == Approx(std::exp(4 * std::log(2.0) / 11)));

  // A run that only ties (gains nothing) is not served.
  Fixture tie(times({{0, 10}, {3, 5}}));
  Served t = servedRunsWhereFaster(tie.program, tie.nccl, tie.sizes);
  REQUIRE(t.ranges.size() == 1);
  CHECK(t.ranges[0].minBytes == 2 * 16 * 1024);
}

TEST_CASE("a served range is cut where its tile changes", "[tuning][served]") {
  Fixture f(times({}, 5));
  Served all = servedRunsWhereFaster(f.program, f.nccl, f.sizes);
  REQUIRE(all.ranges.size() == 1);
  std::vector<double> tiles(11, 1 << 20);
  for (size_t k = 3; k < 11; ++k)
    tiles[k] = 64 << 10;
  Served cut = splitServedByTile(all, f.sizes, tiles);
  REQUIRE(cut.ranges.size() == 2);
  CHECK(cut.ranges[0].minBytes == 0);
  CHECK(cut.ranges[0].maxBytes == 2 * 16 * 1024 - 1);
  CHECK(cut.ranges[0].tileBytes == 1u << 20);
  CHECK(cut.ranges[1].minBytes == 2 * 16 * 1024);
  CHECK(cut.ranges[1].maxBytes == 0);
  CHECK(cut.ranges[1].tileBytes == 64u << 10);
  CHECK(cut.count == all.count);
  CHECK(cut.score == all.score);
}
