// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of regridChunks: a schedule's chunks re-cut on a power-of-two
// grid still implements its collective, keeps its routes and nearly its
// time, and schedules whose chunks cannot be re-cut are refused.
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Schedule/Verifier.h"

#include <catch2/catch.hpp>

#include <functional>

using namespace ccsynth;

namespace {

Transfer copy(int step, ChunkLoc src, ChunkLoc dst) {
  Transfer t;
  t.step = step;
  t.src = src;
  t.dst = dst;
  return t;
}

/// Runs `body` on the ring baseline of AllGather, ReduceScatter and
/// AllReduce, out of place and in place, on `topo`.
void forEachRing(
    const Topology &topo,
    const std::function<void(CollectiveKind, bool, const BaselineOptions &,
                             const Schedule &)> &body) {
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::AllReduce})
    for (bool inPlace : {false, true}) {
      CAPTURE(toString(kind), inPlace);
      BaselineOptions bo;
      bo.inPlace = inPlace;
      auto ring = makeBaseline(BaselineKind::Ring, kind, topo, bo);
      REQUIRE(ring);
      body(kind, inPlace, bo, *ring);
    }
}

double timeAt(const Schedule &s, const Topology &topo, double bytes) {
  SimOptions o;
  o.bytes = bytes;
  auto r = simulate(s, topo, o);
  REQUIRE(r);
  return r->timeUs;
}

} // namespace

TEST_CASE("powerOfTwoGrid keeps powers of two and cuts odd factors finely",
          "[chunkgrid]") {
  CHECK(powerOfTwoGrid(1) == 1);
  CHECK(powerOfTwoGrid(8) == 8);
  CHECK(powerOfTwoGrid(3) == 32);  // runs of 11, 11, 10
  CHECK(powerOfTwoGrid(6) == 64);  // runs of 11 and 10
  CHECK(powerOfTwoGrid(7) == 128); // 64 would give runs of 10 against 9.14
  CHECK(powerOfTwoGrid(96) == 1024);
}

TEST_CASE("DGX-1's six-ring schedules re-cut on a power-of-two grid",
          "[chunkgrid]") {
  auto topo = makeBuiltinTopology("dgx1");
  REQUIRE(topo);
  forEachRing(*topo, [&](CollectiveKind kind, bool inPlace,
                         const BaselineOptions &, const Schedule &r) {
    const Schedule *ring = &r;
    int c = ring->collective.chunkFactor;
    REQUIRE(c % 3 == 0);
    int g = powerOfTwoGrid(c);
    auto cut = regridChunks(*ring, g);
    REQUIRE(cut);
    CHECK(cut->collective.chunkFactor == g);
    CHECK(cut->collective.kind == kind);
    CHECK(cut->collective.inPlace == inPlace);
    // Proven as any schedule is.
    VerifyResult v = verifySchedule(*cut);
    CHECK(v.ok());
    // Same routes and steps; each count is its chunks' runs.
    REQUIRE(cut->transfers.size() == ring->transfers.size());
    for (size_t i = 0; i < ring->transfers.size(); ++i) {
      const Transfer &a = ring->transfers[i], &b = cut->transfers[i];
      CHECK(a.src.rank == b.src.rank);
      CHECK(a.dst.rank == b.dst.rank);
      CHECK(a.step == b.step);
      CHECK(a.op == b.op);
      CHECK(b.count >= a.count * (g / c));
      CHECK(b.count <= a.count * (g / c + 1));
    }
    // Nearly the same time: the longest run is within 4% of an even
    // share.
    double before = timeAt(*ring, *topo, 1 << 30),
           after = timeAt(*cut, *topo, 1 << 30);
    CHECK(after >= before * 0.99);
    CHECK(after <= before * 1.05);
  });
}

TEST_CASE("regridChunks refuses what it cannot re-cut", "[chunkgrid]") {
  // A scratch slot that holds chunk 0 (a run of 11 of 32) and later chunk
  // 2 (a run of 10): no single length fits it.
  Schedule s;
  s.collective = *Collective::builtin(CollectiveKind::AllGather, 1, 3);
  s.scratchChunks = 1;
  constexpr BufferKind I = BufferKind::Input, O = BufferKind::Output,
                       S = BufferKind::Scratch;
  s.transfers = {copy(0, {0, I, 0}, {0, S, 0}), copy(1, {0, S, 0}, {0, O, 0}),
                 copy(2, {0, I, 2}, {0, S, 0}), copy(3, {0, S, 0}, {0, O, 2}),
                 copy(0, {0, I, 1}, {0, O, 1})};
  REQUIRE(verifySchedule(s).ok());
  auto cut = regridChunks(s, 32);
  REQUIRE(!cut);
  CHECK_THAT(cut.error().message,
             Catch::Matchers::Contains("chunks of different splits"));
  // The same slot reused for chunks 0 and 1 (both runs of 11) is fine.
  s.transfers[2].src.index = 1;
  s.transfers[3].dst.index = 1;
  s.transfers[4] = copy(0, {0, I, 2}, {0, O, 2});
  REQUIRE(verifySchedule(s).ok());
  auto ok = regridChunks(s, 32);
  REQUIRE(ok);
  CHECK(verifySchedule(*ok).ok());
  CHECK(ok->scratchChunks == 11);
  // A grid coarser than the schedule's chunks is refused.
  CHECK(!regridChunks(s, 2));
}

TEST_CASE("two schedules spliced onto shares of the buffer still implement "
          "their collective",
          "[chunkgrid]") {
  auto topo = makeBuiltinTopology("dgx-a100");
  REQUIRE(topo);
  forEachRing(*topo, [&](CollectiveKind kind, bool, const BaselineOptions &bo,
                         const Schedule &r) {
    const Schedule *ring = &r;
    auto direct = makeBaseline(BaselineKind::Direct, kind, *topo, bo);
    REQUIRE(direct);
    auto mixed = spliceSchedules(*ring, *direct);
    REQUIRE(mixed);
    CHECK(mixed->collective.chunkFactor ==
          ring->collective.chunkFactor + direct->collective.chunkFactor);
    CHECK(mixed->transfers.size() >=
          ring->transfers.size() + direct->transfers.size());
    VerifyOptions vo;
    vo.topology = &*topo;
    VerifyResult v = verifySchedule(*mixed, vo);
    INFO((v.ok() ? std::string() : v.issues.front().message));
    CHECK(v.ok());
    // Side by side on shares: slower than neither part alone at 1G by
    // more than the slower one takes.
    double both = timeAt(*mixed, *topo, 1 << 30);
    CHECK(both <= std::max(timeAt(*ring, *topo, 1 << 30),
                           timeAt(*direct, *topo, 1 << 30)) *
                      1.01);
  });
}

TEST_CASE("a splice cuts runs at the splits and places scratch apart",
          "[chunkgrid]") {
  // AllGather on 2 ranks, chunk factor 2 and 1: a's two-chunk run of
  // rank 0's output (its input's split) stays one run; a run across two
  // splits is cut in two.
  auto a2 = Collective::builtin(CollectiveKind::AllGather, 2, 2, false, 0);
  auto b1 = Collective::builtin(CollectiveKind::AllGather, 2, 1, false, 0);
  REQUIRE(a2);
  REQUIRE(b1);
  Schedule a;
  a.collective = *a2;
  a.scratchChunks = 1;
  Schedule b;
  b.collective = *b1;
  b.scratchChunks = 2;
  Transfer run =
      copy(0, {0, BufferKind::Output, 1}, {1, BufferKind::Output, 1});
  run.count = 2; // output chunks 1 and 2: splits 0 and 1
  a.transfers = {run};
  b.transfers = {
      copy(0, {1, BufferKind::Input, 0}, {1, BufferKind::Scratch, 1})};
  auto m = spliceSchedules(a, b);
  REQUIRE(m);
  CHECK(m->collective.chunkFactor == 3);
  CHECK(m->scratchChunks == 3);
  REQUIRE(m->transfers.size() == 3);
  CHECK(m->transfers[0].src.index == 1);
  CHECK(m->transfers[0].count == 1);
  CHECK(m->transfers[1].src.index == 3); // split 1, chunk 0
  CHECK(m->transfers[1].dst.index == 3);
  CHECK(m->transfers[1].count == 1);
  CHECK(m->transfers[2].src.index == 2); // b's chunk 0 after a's two
  CHECK(m->transfers[2].dst.buffer == BufferKind::Scratch);
  CHECK(m->transfers[2].dst.index == 2); // after a's one scratch chunk
  // Different collectives do not share a buffer.
  Schedule other = b;
  other.collective =
      *Collective::builtin(CollectiveKind::AllReduce, 2, 1, false, 0);
  CHECK_FALSE(spliceSchedules(a, other));
  CHECK_FALSE(spliceSchedules(a, b, 2));
}
