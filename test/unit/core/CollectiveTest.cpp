// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the built-in collective definitions.
#include "ccsynth/Schedule/Collective.h"

#include <algorithm>

#include <catch2/catch.hpp>

using namespace ccsynth;

TEST_CASE("allgather postcondition gathers every rank's chunks", "[collective]") {
  auto c = Collective::builtin(CollectiveKind::AllGather, 4, 2);
  REQUIRE(c.ok());
  CHECK(c->inputChunks == 2);
  CHECK(c->outputChunks == 8);
  // out[r][j*c+k] = in[j][k]
  CHECK(c->postAt(3, 5).toVector() == std::vector<int>{c->preAt(2, 1)});
  CHECK(c->busBwFactor() == Approx(0.75));
}

TEST_CASE("allreduce needs every rank's value exactly once", "[collective]") {
  auto c = Collective::builtin(CollectiveKind::AllReduce, 3, 1);
  REQUIRE(c.ok());
  CHECK(c->postAt(1, 0).size() == 3);
  CHECK(c->isReduction());
  CHECK(c->busBwFactor() == Approx(4.0 / 3));
}

TEST_CASE("rooted collectives constrain only what the root defines",
          "[collective]") {
  auto b = Collective::builtin(CollectiveKind::Broadcast, 4, 1, false, 2);
  REQUIRE(b.ok());
  CHECK(b->preAt(0, 0) == -1);
  CHECK(b->preAt(2, 0) == 0);
  auto r = Collective::builtin(CollectiveKind::Reduce, 4, 1, false, 1);
  REQUIRE(r.ok());
  CHECK_FALSE(r->postAt(0, 0).constrained());
  CHECK(r->postAt(1, 0).size() == 4);
  CHECK_FALSE(Collective::builtin(CollectiveKind::Gather, 4, 1, false, 4).ok());
}

TEST_CASE("in-place aliasing follows NCCL's layout", "[collective]") {
  auto ag = Collective::builtin(CollectiveKind::AllGather, 4, 2, true);
  REQUIRE(ag.ok());
  CHECK(ag->canonical({3, BufferKind::Input, 1}) ==
        ChunkLoc{3, BufferKind::Output, 7});
  auto rs = Collective::builtin(CollectiveKind::ReduceScatter, 4, 2, true);
  REQUIRE(rs.ok());
  CHECK(rs->canonical({1, BufferKind::Output, 0}) ==
        ChunkLoc{1, BufferKind::Input, 2});
}

TEST_CASE("inputChunkAt inverts canonical on inputs", "[collective]") {
  // For every kind, in place and not: each input chunk's canonical slot
  // maps back to it, and every other slot of each buffer to none.
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::AllReduce, CollectiveKind::Broadcast,
        CollectiveKind::Reduce, CollectiveKind::Gather, CollectiveKind::Scatter,
        CollectiveKind::AllToAll})
    for (bool inPlace : {false, true}) {
      auto c = Collective::builtin(kind, 3, 2, inPlace, 1);
      if (!c)
        continue;
      for (int r = 0; r < 3; ++r) {
        std::vector<ChunkLoc> inputs;
        for (int k = 0; k < c->inputChunks; ++k) {
          ChunkLoc at = c->canonical({r, BufferKind::Input, k});
          CHECK(c->inputChunkAt(at) == k);
          inputs.push_back(at);
        }
        for (BufferKind b : {BufferKind::Input, BufferKind::Output})
          for (int i = 0; i < c->bufferChunks(b); ++i) {
            ChunkLoc at = c->canonical({r, b, i});
            if (std::find(inputs.begin(), inputs.end(), at) == inputs.end())
              CHECK(c->inputChunkAt(at) == -1);
          }
        CHECK(c->inputChunkAt({r, BufferKind::Scratch, 0}) == -1);
      }
    }
}

TEST_CASE("custom collectives are checked", "[collective]") {
  // Two ranks swap their chunk.
  auto ok = Collective::custom("swap", 2, 1, 1, {{0}, {1}},
                               {{std::vector<int>{1}}, {std::vector<int>{0}}});
  REQUIRE(ok.ok());
  auto dup = Collective::custom("bad", 2, 1, 1, {{0}, {0}},
                                {{std::nullopt}, {std::nullopt}});
  CHECK_FALSE(dup.ok());
  auto unknown = Collective::custom("bad", 2, 1, 1, {{0}, {1}},
                                    {{std::vector<int>{7}}, {std::nullopt}});
  CHECK_FALSE(unknown.ok());
}

TEST_CASE("copies of a collective share its conditions", "[collective]") {
  auto c = Collective::builtin(CollectiveKind::AllReduce, 8, 8);
  REQUIRE(c.ok());
  Collective copy = *c;
  CHECK(copy.sharesConditions(*c));
  CHECK(copy.hasConditions());
  CHECK_FALSE(Collective().hasConditions());
  // A copy's views point into the same storage.
  CHECK(copy.postAt(3, 2).begin() == c->postAt(3, 2).begin());
  auto other = Collective::builtin(CollectiveKind::AllReduce, 8, 8);
  CHECK_FALSE(other->sharesConditions(*c));
}

TEST_CASE("allreduce ranks share one set per chunk", "[collective]") {
  int n = 6, cf = 4;
  auto c = Collective::builtin(CollectiveKind::AllReduce, n, cf);
  REQUIRE(c.ok());
  CHECK(c->numPostSets() == cf);
  CHECK(c->numValues() == n * cf);
  for (int i = 0; i < cf; ++i) {
    PostSet first = c->postAt(0, i);
    REQUIRE(first.constrained());
    CHECK(first.id() <= -2);
    CHECK_FALSE(first.isCopy());
    std::vector<int> want;
    for (int j = 0; j < n; ++j)
      want.push_back(c->preAt(j, i));
    CHECK(first.toVector() == want);
    for (int r = 1; r < n; ++r) {
      CHECK(c->postId(r, i) == first.id());
      CHECK(c->postAt(r, i).begin() == first.begin());
    }
  }
  // Different chunks, different sets.
  CHECK(c->postId(0, 0) != c->postId(0, 1));
  CHECK(c->postSet(-2 - c->postId(2, 3)).toVector() ==
        c->postAt(0, 3).toVector());
}

TEST_CASE("reducescatter keeps one set per output chunk", "[collective]") {
  auto c = Collective::builtin(CollectiveKind::ReduceScatter, 4, 2);
  REQUIRE(c.ok());
  CHECK(c->numPostSets() == 8);
  // out[r][k] = sum_j in[j][r*c+k]
  CHECK(c->postAt(2, 1).toVector() ==
        std::vector<int>{c->preAt(0, 5), c->preAt(1, 5), c->preAt(2, 5),
                         c->preAt(3, 5)});
}

TEST_CASE("copies are stored as their value, unconstrained chunks as -1",
          "[collective]") {
  auto ag = Collective::builtin(CollectiveKind::AllGather, 4, 2);
  REQUIRE(ag.ok());
  CHECK(ag->numPostSets() == 0);
  CHECK_FALSE(ag->isReduction());
  PostSet p = ag->postAt(1, 5); // in[2][1]
  CHECK(p.isCopy());
  CHECK(p.id() == ag->preAt(2, 1));
  CHECK(p.front() == p.id());
  CHECK(std::ranges::equal(ag->preOf(3), std::vector<int>{6, 7}));
  auto g = Collective::builtin(CollectiveKind::Gather, 3, 1, false, 1);
  REQUIRE(g.ok());
  PostSet none = g->postAt(0, 2);
  CHECK_FALSE(none.constrained());
  CHECK_FALSE(none);
  CHECK(none.empty());
  CHECK(none.id() == PostSet::kUnconstrained);
  CHECK(g->postAt(1, 2).id() == g->preAt(2, 0));
}

TEST_CASE("custom collectives intern equal sets once", "[collective]") {
  // Three ranks; outputs name {0,1} twice (in two orders), {1,2} once, a
  // copy of value 2 and nothing.
  auto c = Collective::custom("sums", 3, 1, 2, {{0}, {1}, {2}},
                              {{std::vector<int>{1, 0}, std::vector<int>{2}},
                               {std::vector<int>{0, 1}, std::nullopt},
                               {std::vector<int>{2, 1}, std::vector<int>{}}});
  REQUIRE(c.ok());
  CHECK(c->isReduction());
  CHECK(c->numValues() == 3);
  // {0,1}, {1,2} and the empty set.
  CHECK(c->numPostSets() == 3);
  CHECK(c->postId(0, 0) == c->postId(1, 0));
  CHECK(c->postAt(0, 0).toVector() == std::vector<int>{0, 1});
  CHECK(c->postId(2, 0) != c->postId(0, 0));
  CHECK(c->postAt(2, 0).toVector() == std::vector<int>{1, 2});
  CHECK(c->postAt(0, 1).isCopy());
  CHECK(c->postId(0, 1) == 2);
  CHECK_FALSE(c->postAt(1, 1).constrained());
  // An empty set is constrained (nothing may arrive there).
  PostSet empty = c->postAt(2, 1);
  CHECK(empty.constrained());
  CHECK(empty.empty());
  CHECK(c->valueOrigin(2) == ChunkLoc{2, BufferKind::Input, 0});
  CHECK(c->valueOrigin(3).rank == -1);
  CHECK(valueName(*c, 1) == "in[1][0]");
}

TEST_CASE("the conditions builder dedupes by content", "[collective]") {
  ConditionsBuilder b(2, 2, 2);
  int a = b.intern({3, 1, 2});
  CHECK(a <= -2);
  CHECK(b.intern({1, 2, 3}) == a);
  CHECK(b.intern({1, 2}) != a);
  CHECK(b.intern({5}) == 5);
  CHECK(b.intern({}) <= -2);
  CHECK(b.intern({}) == b.intern({}));
  auto cond = b.finish();
  CHECK(cond->setBegin.size() == 4); // three sets
  CHECK(cond->reduction);
}

TEST_CASE("allreduce on 1,024 ranks stores slots, not n^3 values",
          "[collective]") {
  int n = 1024;
  auto c = Collective::builtin(CollectiveKind::AllReduce, n, n);
  REQUIRE(c.ok());
  CHECK(c->numPostSets() == n);
  CHECK(c->postAt(n - 1, n - 1).size() == (size_t)n);
  CHECK(c->postId(17, 5) == c->postId(900, 5));
  CHECK(c->valueOrigin(c->preAt(513, 7)) ==
        ChunkLoc{513, BufferKind::Input, 7});
}
