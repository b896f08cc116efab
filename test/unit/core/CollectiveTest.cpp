// Unit tests of the built-in collective definitions.
#include "ccsynth/Core/Collective.h"

#include <catch2/catch.hpp>

using namespace ccsynth;

TEST_CASE("allgather postcondition gathers every rank's chunks", "[collective]") {
  auto c = Collective::builtin(CollectiveKind::AllGather, 4, 2);
  REQUIRE(c.ok());
  CHECK(c->inputChunks == 2);
  CHECK(c->outputChunks == 8);
  // out[r][j*c+k] = in[j][k]
  CHECK(*c->post[3][5] == std::vector<int>{c->pre[2][1]});
  CHECK(c->busBwFactor() == Approx(0.75));
}

TEST_CASE("allreduce needs every rank's value exactly once", "[collective]") {
  auto c = Collective::builtin(CollectiveKind::AllReduce, 3, 1);
  REQUIRE(c.ok());
  CHECK(c->post[1][0]->size() == 3);
  CHECK(c->isReduction());
  CHECK(c->busBwFactor() == Approx(4.0 / 3));
}

TEST_CASE("rooted collectives constrain only what the root defines",
          "[collective]") {
  auto b = Collective::builtin(CollectiveKind::Broadcast, 4, 1, false, 2);
  REQUIRE(b.ok());
  CHECK(b->pre[0][0] == -1);
  CHECK(b->pre[2][0] == 0);
  auto r = Collective::builtin(CollectiveKind::Reduce, 4, 1, false, 1);
  REQUIRE(r.ok());
  CHECK_FALSE(r->post[0][0].has_value());
  CHECK(r->post[1][0]->size() == 4);
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
