// Unit tests of what a sketch means, compared with TACCL: switches as shared
// bandwidth (links kept, repetitions counted), symmetry tied only within
// its blocks, and the sketches TACCL refuses that ccsynth accepts or
// refuses with a located error.
#include "ccsynth/Core/Json.h"
#include "ccsynth/Core/Simulator.h"
#include "ccsynth/Core/Verifier.h"
#include "ccsynth/Synth/Problem.h"
#include "ccsynth/Synth/Synthesizer.h"
#include "ccsynth/Synth/SwitchModel.h"

#include <catch2/catch.hpp>

using namespace ccsynth;
using namespace ccsynth::synth;

namespace {

Expected<Sketch> parse(const std::string &text) {
  auto doc = JsonDocument::parse("sk.json", text);
  if (!doc)
    return doc.error();
  return parseSketch(*doc);
}

Sketch sketchOf(const std::string &text) {
  auto sk = parse(text);
  if (!sk)
    FAIL(sk.error().format());
  return sk.take();
}

Topology topo(const std::string &name) {
  auto t = makeBuiltinTopology(name);
  REQUIRE(t.ok());
  return t.take();
}

Collective allgather(int ranks) {
  auto c = Collective::builtin(CollectiveKind::AllGather, ranks, 1);
  REQUIRE(c.ok());
  return c.take();
}

int linkBetween(const Topology &t, int a, int b) {
  auto l = t.bestLink(a, b);
  REQUIRE(l.has_value());
  return *l;
}

const char *kNdv2Quads = R"({"nnodes": 1,
  "intranode_sketch": {"strategy": "switch",
    "switches": [[0,1,2,3],[4,5,6,7]],
    "switch_hyperedge_strategy": ["uc-min", "uc-min"]}})";

} // namespace

TEST_CASE("a switch keeps every link and adds shared port bandwidth",
          "[taccl][switch]") {
  Topology t = topo("ndv2");
  Sketch sk = sketchOf(kNdv2Quads);
  // Links between the quads (0-4, 1-5, ...) stay usable: feasible.
  auto p = buildRoutingProblem(t, sk, allgather(8));
  REQUIRE(p.ok());
  CHECK(p->usableLinks.size() == t.links.size());
  CHECK_FALSE(explainInfeasible(*p, sk).has_value());
  CHECK(p->switchOfLink[linkBetween(t, 0, 1)] == 0);
  CHECK(p->switchOfLink[linkBetween(t, 5, 6)] == 1);
  CHECK(p->switchOfLink[linkBetween(t, 0, 4)] == -1);

  auto m = applySketchSwitches(t, sk);
  REQUIRE(m.ok());
  CHECK(m->changed);
  // One egress and one ingress port per GPU.
  CHECK(m->topo.resources.size() == t.resources.size() + 16);
  CHECK(m->topo.links.size() == t.links.size());
  const Link &l01 = m->topo.links[linkBetween(t, 0, 1)];
  REQUIRE(l01.resources.size() == 2);
  // GPU 0's links in its quad are 50, 25 and 25 GB/s: the port is the
  // fastest of them, and the uneven links are pointed out.
  CHECK(m->topo.resources[l01.resources[0]].bandwidthGBps == 50);
  CHECK(m->topo.links[linkBetween(t, 0, 4)].resources.empty());
  bool noted = false;
  for (const std::string &n : m->notes)
    noted |= n.find("differ in bandwidth") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("switch ports map under the machine's symmetries",
          "[taccl][switch]") {
  // Rotating local ids by 2 within each quad maps the cube-mesh and both
  // switches onto themselves (links 0->2 and 2->0 trade places), so the
  // ports of the switch model must map too.
  Topology t = topo("ndv2");
  Sketch sk = sketchOf(R"({"nnodes": 1,
  "intranode_sketch": {"strategy": "switch",
    "switches": [[0,1,2,3],[4,5,6,7]],
    "switch_hyperedge_strategy": ["uc-min", "uc-min"]},
  "symmetry_offsets": [[2, 4]]})");
  auto m = applySketchSwitches(t, sk);
  REQUIRE(m.ok());
  auto p = buildRoutingProblem(m->topo, sk, allgather(8));
  if (!p)
    FAIL(p.error().format());
  CHECK(p->group.size() == 2);
}

TEST_CASE("the ndv2 quad-switch sketch synthesizes", "[taccl][switch]") {
  Topology t = topo("ndv2");
  Sketch sk = sketchOf(kNdv2Quads);
  SynthOptions o;
  o.timeLimitSec = 20;
  auto r = synthesize(t, sk, o);
  REQUIRE(r.ok());
  REQUIRE(r->feasible);
  REQUIRE(r->modelTopology.has_value());
  VerifyOptions vo;
  vo.topology = &*r->modelTopology;
  CHECK(verifySchedule(r->schedule, vo).ok());
  // The ports only slow a GPU's sends into its quad down: on the machine as
  // given the schedule is no slower than in the sketch's model.
  SimOptions so;
  so.bytes = o.targetBytes;
  auto plain = simulate(r->schedule, t, so);
  REQUIRE(plain.ok());
  CHECK(plain->timeUs <= r->timeUs * (1 + 1e-9));
}

TEST_CASE("a switch listed k times counts k times", "[taccl][switch]") {
  Topology t = topo("dgx2");
  auto once = sketchOf(R"({"nnodes": 1, "intranode_sketch": {"strategy":
    "switch", "switches": [[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]],
    "switch_hyperedge_strategy": ["uc-min"]}})");
  auto twice = sketchOf(R"({"nnodes": 1, "intranode_sketch": {"strategy":
    "switch", "switches": [[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15],
                           [15,14,13,12,11,10,9,8,7,6,5,4,3,2,1,0]],
    "switch_hyperedge_strategy": ["uc-min", "uc-min"]}})");
  auto m1 = applySketchSwitches(t, once);
  auto m2 = applySketchSwitches(t, twice);
  REQUIRE(m1.ok());
  REQUIRE(m2.ok());
  // Listed once, the switch is the DGX-2's own NVSwitch: nothing changes.
  CHECK_FALSE(m1->changed);
  CHECK(topologyHash(m1->topo) == topologyHash(t));
  // Listed twice: links and the NVSwitch ports they cross are twice as
  // fast (TACCL multiplies the links and divides beta), no port is added.
  CHECK(m2->changed);
  CHECK(m2->topo.resources.size() == t.resources.size());
  int l = linkBetween(t, 0, 1);
  CHECK(m2->topo.links[l].bandwidthGBps == 2 * t.links[l].bandwidthGBps);
  CHECK(m2->topo.effectiveBandwidth(l) == 2 * t.effectiveBandwidth(l));

  SynthOptions o;
  o.timeLimitSec = 20;
  auto r1 = synthesize(t, once, o);
  auto r2 = synthesize(t, twice, o);
  REQUIRE(r1.ok());
  REQUIRE(r2.ok());
  // At 1 GB bandwidth dominates: about half the time.
  CHECK(r2->timeUs < 0.6 * r1->timeUs);
  CHECK(r2->lowerBoundUs < 0.6 * r1->lowerBoundUs);
}

TEST_CASE("overlapping switches: single GPUs yes, GPU pairs no",
          "[taccl][switch]") {
  Topology t = topo("dgx-a100");
  // TACCL asserts switches are disjoint or equal; sharing GPU 2 only, every
  // link still belongs to one switch.
  Sketch ok = sketchOf(R"({"nnodes": 1, "intranode_sketch": {"strategy":
    "switch", "switches": [[0,1,2],[2,3,4,5,6,7]],
    "switch_hyperedge_strategy": ["uc-min", "uc-max"]}})");
  auto p = buildRoutingProblem(t, ok, allgather(8));
  REQUIRE(p.ok());
  CHECK(p->switchOfLink[linkBetween(t, 0, 2)] == 0);
  CHECK(p->switchOfLink[linkBetween(t, 2, 3)] == 1);
  CHECK(p->switchOfLink[linkBetween(t, 0, 3)] == -1);
  auto m = applySketchSwitches(t, ok);
  REQUIRE(m.ok());
  // GPU 2 has a port on each switch (besides its NVSwitch ports): a link
  // crosses the sender's egress and the receiver's ingress of its switch.
  CHECK(m->topo.links[linkBetween(t, 2, 0)].resources.size() == 4);
  CHECK(m->topo.links[linkBetween(t, 2, 3)].resources.size() == 4);
  CHECK(m->topo.links[linkBetween(t, 0, 3)].resources.size() == 2);

  // GPUs 2 and 3 on two different switches: refused at the second.
  Sketch bad = sketchOf(R"({"nnodes": 1, "intranode_sketch": {"strategy":
    "switch", "switches": [[0,1,2,3],
      [2,3,4,5]],
    "switch_hyperedge_strategy": ["uc-min", "uc-min"]}})");
  auto q = buildRoutingProblem(t, bad, allgather(8));
  REQUIRE_FALSE(q.ok());
  CHECK_THAT(q.error().message,
             Catch::Contains("switches 0 and 1 both contain GPUs 2 and 3"));
  CHECK(q.error().loc.line == 3);
  CHECK(q.error().loc.col == 7);
  auto qm = applySketchSwitches(t, bad);
  REQUIRE_FALSE(qm.ok());
  CHECK(qm.error().loc.line == 3);

  // A repeated switch with another strategy is not one switch counted twice.
  Sketch mixed = sketchOf(R"({"nnodes": 1, "intranode_sketch": {"strategy":
    "switch", "switches": [[0,1,2,3], [3,2,1,0]],
    "switch_hyperedge_strategy": ["uc-min", "uc-max"]}})");
  auto mm = applySketchSwitches(t, mixed);
  REQUIRE_FALSE(mm.ok());
  CHECK_THAT(mm.error().message, Catch::Contains("another hyperedge strategy"));
}

TEST_CASE("internode_conn senders may have different receiver counts",
          "[taccl][relay]") {
  Topology t = topo("ndv2x2");
  Sketch sk = sketchOf(R"({"nnodes": 2, "intranode_sketch": {"strategy":
    "none"}, "internode_sketch": {"strategy": "relay",
    "internode_conn": {"0": [0, 1], "4": [4]}}})");
  auto p = buildRoutingProblem(t, sk, allgather(16));
  REQUIRE(p.ok());
  CHECK_FALSE(explainInfeasible(*p, sk).has_value());
  int cross = 0;
  for (int l : p->usableLinks)
    cross += !t.sameNode(t.links[l].src, t.links[l].dst);
  CHECK(cross == 2 * 3); // 0->0, 0->1, 4->4, each way between the 2 nodes

  // A sender without receivers is refused where it is written.
  auto bad = parse(R"({"nnodes": 2, "intranode_sketch": {"strategy": "none"},
    "internode_sketch": {"strategy": "relay",
      "internode_conn": {"0": [0], "3": []}}})");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message,
             Catch::Contains("sender 3 lists no receivers"));
  CHECK(bad.error().loc.line == 3);
}

TEST_CASE("symmetry ties sends within its blocks, as TACCL does",
          "[taccl][symmetry]") {
  Topology t = topo("ndv2x2");
  // Rotating local ids by 4 maps each node's cube-mesh onto itself, but not
  // the only internode link pair (GPU 0 -> remote GPU 1) onto a link: TACCL
  // ties only the sends inside each node and accepts this sketch.
  Sketch sk = sketchOf(R"({"nnodes": 2, "intranode_sketch": {"strategy":
    "none"}, "internode_sketch": {"strategy": "relay",
    "internode_conn": {"0": [1]}},
    "symmetry_offsets": [[4, 8], [8, 16]]})");
  auto p = buildRoutingProblem(t, sk, allgather(16));
  REQUIRE(p.ok());
  // The node swap maps the whole machine; the rotations do not.
  CHECK(p->group.size() == 2);
  CHECK(p->reps.size() == 8);
  bool noted = false;
  for (const std::string &n : p->notes)
    noted |= n.find("[4, 8] maps the links inside its blocks") !=
             std::string::npos;
  CHECK(noted);
  SynthOptions o;
  o.timeLimitSec = 20;
  auto r = synthesize(t, sk, o);
  REQUIRE(r.ok());
  REQUIRE(r->feasible);
  VerifyOptions vo;
  vo.topology = &t;
  CHECK(verifySchedule(r->schedule, vo).ok());

  // Inside a block the map must still be a symmetry: rotating by 1 maps the
  // 50 GB/s link 0->1 onto the 25 GB/s link 1->2.
  Sketch bad = sketchOf(R"({"nnodes": 1, "intranode_sketch": {"strategy":
    "none"}, "symmetry_offsets": [[1, 8]]})");
  auto q = buildRoutingProblem(topo("ndv2"), bad, allgather(8));
  REQUIRE_FALSE(q.ok());
  CHECK_THAT(q.error().message, Catch::Contains("is not a symmetry of"));
  CHECK(q.error().loc.line == 2);
}
