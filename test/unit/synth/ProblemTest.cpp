// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of routing problems: sketch vs topology checks, symmetry, and
// the explanations of infeasible sketches.
#include "ccsynth/Synth/Problem.h"
#include "ccsynth/Support/Json.h"

#include <catch2/catch.hpp>

using namespace ccsynth;
using namespace ccsynth::synth;

namespace {

Sketch sketchOf(const std::string &text) {
  auto doc = JsonDocument::parse("sk.json", text);
  REQUIRE(doc.ok());
  auto sk = parseSketch(*doc);
  REQUIRE(sk.ok());
  return sk.take();
}

Topology topo(const std::string &name) {
  auto t = makeBuiltinTopology(name);
  REQUIRE(t.ok());
  return t.take();
}

Collective allgather(int ranks, int chunks = 1) {
  auto c = Collective::builtin(CollectiveKind::AllGather, ranks, chunks);
  REQUIRE(c.ok());
  return c.take();
}

} // namespace

TEST_CASE("symmetry offsets shrink the problem to orbit representatives",
          "[problem]") {
  Topology t = topo("dgx1");
  Sketch sk =
      sketchOf(R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"},
    "symmetry_offsets": [[2, 4], [4, 8]]})");
  auto p = buildRoutingProblem(t, sk, allgather(8, 6));
  REQUIRE(p.ok());
  CHECK(p->group.size() == 4);
  CHECK(p->values.size() == 48);
  CHECK(p->reps.size() == 12);
  // Every value is the image of its representative.
  for (size_t v = 0; v < p->values.size(); ++v)
    CHECK(p->group.value[p->elemOf[v]][p->repOf[v]] == (int)v);
  // A rooted collective keeps only the symmetries fixing its root.
  auto bc = Collective::builtin(CollectiveKind::Broadcast, 8, 1);
  REQUIRE(bc.ok());
  auto pb = buildRoutingProblem(t, sk, *bc);
  REQUIRE(pb.ok());
  CHECK(pb->group.size() == 1);
  CHECK_FALSE(pb->notes.empty());
}

TEST_CASE("a symmetry the topology lacks is rejected at the offset",
          "[problem]") {
  Topology t = topo("dgx1");
  // Rotating a DGX-1 by one GPU maps a 2-NVLink pair onto a 1-NVLink one.
  Sketch sk =
      sketchOf(R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"},
  "symmetry_offsets": [[1, 8]]})");
  auto p = buildRoutingProblem(t, sk, allgather(8));
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().loc.line == 2);
  CHECK(p.error().loc.col == 24);
  CHECK_THAT(p.error().message, Catch::Contains("is not a symmetry of 'dgx1'"));
}

TEST_CASE("sketch and topology must agree", "[problem]") {
  Topology t = topo("ndv2x2");
  Sketch one =
      sketchOf(R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"}})");
  auto p = buildRoutingProblem(t, one, allgather(16));
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(p.error().message, Catch::Contains("for 1 node but topology"));
  CHECK(p.error().loc.line == 1);
  Sketch far =
      sketchOf(R"({"nnodes": 2, "intranode_sketch": {"strategy": "none"},
  "internode_sketch": {"strategy": "relay", "internode_conn": {"9": [0]}}})");
  auto q = buildRoutingProblem(t, far, allgather(16));
  REQUIRE_FALSE(q.ok());
  CHECK_THAT(q.error().message, Catch::Contains("names GPU 9"));
  CHECK(q.error().loc.line == 2);
}

TEST_CASE("an unreachable chunk is explained with the sketch's culprit",
          "[problem]") {
  Topology t = topo("ndv2x2");
  // Only GPU 0 sends to remote GPU 1, and it relays only GPU 0's chunks:
  // chunks of GPU 3 can never leave their node.
  Sketch sk =
      sketchOf(R"({"nnodes": 2, "intranode_sketch": {"strategy": "none"},
  "internode_sketch": {"strategy": "relay", "internode_conn": {"0": [1]},
    "gpus_to_sender_rev_map": {"0": [0, 1, 2]}}})");
  auto p = buildRoutingProblem(t, sk, allgather(16));
  REQUIRE(p.ok());
  auto why = explainInfeasible(*p, sk);
  REQUIRE(why.has_value());
  // Past its deadline the check gives up rather than claim infeasibility.
  CHECK_FALSE(explainInfeasible(*p, sk,
                                std::chrono::steady_clock::now() -
                                    std::chrono::seconds(1))
                  .has_value());
  CHECK_THAT(why->message, Catch::Contains("can never receive in[3][0]"));
  CHECK_THAT(why->message, Catch::Contains("gpus_to_sender_rev_map"));
  CHECK_THAT(why->message, Catch::Contains("add 3"));
  // Located at the rev map.
  CHECK(why->loc.line == 3);
  CHECK_THAT(why->notes, Catch::Contains("more rank/chunk pairs"));

  // A GPU outside every switch keeps its links (switches limit bandwidth,
  // they never remove links, as in TACCL): no explanation.
  Topology a100 = topo("dgx-a100");
  Sketch sw =
      sketchOf(R"({"nnodes": 1, "intranode_sketch": {"strategy": "switch",
    "switches": [[0,1,2,3,4,5,6]], "switch_hyperedge_strategy": ["uc-max"]}})");
  auto q = buildRoutingProblem(a100, sw, allgather(8));
  REQUIRE(q.ok());
  CHECK_FALSE(explainInfeasible(*q, sw).has_value());

  // A feasible sketch has no explanation.
  Sketch ok =
      sketchOf(R"({"nnodes": 2, "intranode_sketch": {"strategy": "none"},
  "internode_sketch": {"strategy": "relay", "internode_conn": {"0": [1]}}})");
  auto r = buildRoutingProblem(t, ok, allgather(16));
  REQUIRE(r.ok());
  CHECK_FALSE(explainInfeasible(*r, ok).has_value());
}
