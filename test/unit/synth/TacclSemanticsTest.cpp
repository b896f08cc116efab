// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of what a sketch means, compared with TACCL: switches as shared
// bandwidth (links kept, repetitions counted), symmetry tied only within
// its blocks (sends between blocks free), and the sketches TACCL refuses
// that ccsynth accepts or refuses with a located error.
#include "ccsynth/Support/Json.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/Synth/Encoding.h"
#include "ccsynth/Synth/Problem.h"
#include "ccsynth/Synth/Search.h"
#include "ccsynth/Synth/SwitchModel.h"
#include "ccsynth/Synth/Synthesizer.h"

#include <cmath>
#include <limits>
#include "SynthTestUtil.h"

#include <catch2/catch.hpp>

#include <map>
#include <set>

using namespace ccsynth;
using namespace ccsynth::synth;

namespace {

using test::parse;

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

namespace {

/// Whether every tied send of `plan` has its tied image in the plan.
bool planKeepsTies(const RoutingProblem &p, const Plan &plan) {
  std::set<std::pair<int, int>> sends;
  for (const PlanSend &s : plan.sends)
    sends.insert({s.value, s.link});
  for (const SymmetryTie &t : p.ties)
    for (auto [v, l] : sends)
      if (t.link[l] >= 0 && !sends.count({t.value[v], t.link[l]}))
        return false;
  return true;
}

/// ndv2x2 where only GPU 0 crosses nodes, to GPUs 0 and 4 of the other
/// node: rotating local ids by 4 maps each node's cube-mesh onto itself but
/// 0 -> remote 0 onto 4 -> remote 4, which is no link.
const char *kNdv2PartialRotation = R"({"nnodes": 2,
  "intranode_sketch": {"strategy": "none"},
  "internode_sketch": {"strategy": "relay", "internode_conn": {"0": [0, 4]}},
  "symmetry_offsets": [[4, 8], [8, 16]]})";

} // namespace

TEST_CASE("a symmetry that maps only its blocks ties the sends inside them",
          "[taccl][symmetry]") {
  Topology t = topo("ndv2x2");
  Sketch sk = sketchOf(kNdv2PartialRotation);
  auto p = buildRoutingProblem(t, sk, allgather(16));
  REQUIRE(p.ok());
  // The node swap maps the whole machine and is in the group; the rotation
  // by 4 is a tie.
  CHECK(p->group.size() == 2);
  CHECK(p->reps.size() == 8);
  REQUIRE(p->ties.size() == 1);
  const SymmetryTie &tie = p->ties.front();
  CHECK(tie.offset == 4);
  CHECK(tie.blockSize == 8);
  int intra = 0;
  for (int l : p->usableLinks) {
    const Link &a = t.links[l];
    if (!t.sameNode(a.src, a.dst)) {
      // Sends between blocks are free, even those whose image is a link
      // (8 -> 0 maps to 12 -> 4, which is one).
      CHECK(tie.link[l] == -1);
      continue;
    }
    ++intra;
    REQUIRE(tie.link[l] >= 0);
    const Link &b = t.links[tie.link[l]];
    CHECK(b.src == (a.src % 8 + 4) % 8 + a.src / 8 * 8);
    CHECK(b.dst == (a.dst % 8 + 4) % 8 + a.dst / 8 * 8);
    CHECK(b.bandwidthGBps == a.bandwidthGBps);
  }
  CHECK(intra > 0);
  CHECK(tie.numTiedLinks() == intra);
  // Rank r's chunk is tied to the chunk of its image.
  for (size_t v = 0; v < p->values.size(); ++v)
    CHECK(p->values[tie.value[v]].origin == tie.rank[p->values[v].origin]);
  bool noted = false;
  for (const std::string &n : p->notes)
    noted |= n.find("[4, 8] maps the links inside its blocks but not those "
                    "between blocks: as in TACCL, the sends of [4, 8] over "
                    "the " +
                    std::to_string(intra) +
                    " links inside blocks are tied to their images") !=
             std::string::npos;
  CHECK(noted);

  // The routing model keeps the ties (every rank but the origin needs each
  // chunk, so no tied send is pruned from the plan).
  SearchContext ctx;
  ctx.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto plans =
      routingPlans(*p, makeCostModel(t, 1 << 20), RoutingSearchOptions{}, ctx);
  REQUIRE_FALSE(plans.empty());
  CHECK_FALSE(ctx.tiesUnsatisfiable);
  for (const Plan &plan : plans)
    CHECK(planKeepsTies(*p, plan));

  // The synthesized schedule verifies.
  SynthOptions o;
  o.timeLimitSec = 10;
  auto r = synthesize(t, sk, o);
  REQUIRE(r.ok());
  REQUIRE(r->feasible);
  VerifyOptions vo;
  vo.topology = &t;
  CHECK(verifySchedule(r->schedule, vo).ok());
}

TEST_CASE("the exact slot model ties send slots", "[taccl][symmetry]") {
  // Two nodes of four fully connected GPUs; only GPU 0 crosses nodes, to
  // GPUs 0 and 2 of the other node. Rotating local ids by 2 maps each node
  // but not 0 -> remote 0 (2 -> remote 2 is no link).
  std::string links;
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b && (a / 4 == b / 4 || a % 4 == 0))
        links += std::string(links.empty() ? "" : ",") +
                 "{\"src\": " + std::to_string(a) +
                 ", \"dst\": " + std::to_string(b) +
                 (a / 4 == b / 4 ? ", \"kind\": \"nvlink\", \"alpha_us\": 0.7, "
                                   "\"bandwidth_gbps\": 50}"
                                 : ", \"kind\": \"rdma\", \"alpha_us\": 1.7, "
                                   "\"bandwidth_gbps\": 12.5}");
  auto doc = JsonDocument::parse(
      "t.json", R"({"format": "ccsynth-topology", "version": 1, "name":
      "quads", "ranks": 8, "node_of": [0,0,0,0,1,1,1,1], "links": [)" +
                    links + "]}");
  REQUIRE(doc.ok());
  auto t = parseTopologyJson(*doc);
  REQUIRE(t.ok());
  Sketch sk = sketchOf(R"({"nnodes": 2,
    "intranode_sketch": {"strategy": "none"},
    "internode_sketch": {"strategy": "relay", "internode_conn": {"0": [0, 2]}},
    "symmetry_offsets": [[2, 4], [4, 8]]})");
  auto p = buildRoutingProblem(*t, sk, allgather(8));
  REQUIRE(p.ok());
  CHECK(p->group.size() == 2);
  REQUIRE(p->ties.size() == 1);
  CHECK(p->ties.front().numTiedLinks() == 2 * 4 * 3);
  SearchContext ctx;
  ctx.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto exact = exactPlan(*p, makeCostModel(*t, 1 << 14), ctx);
  REQUIRE(exact.has_value());
  CHECK(exact->provenOptimal);
  CHECK_FALSE(ctx.tiesUnsatisfiable);
  CHECK(planKeepsTies(*p, *exact));
  // A tied send starts in the same slot as its image.
  const SymmetryTie &tie = p->ties.front();
  std::map<std::pair<int, int>, int> slotOf;
  for (const PlanSend &s : exact->sends)
    slotOf[{s.value, s.link}] = s.slot;
  for (auto [key, slot] : slotOf)
    if (tie.link[key.second] >= 0)
      CHECK(slotOf.at({tie.value[key.first], tie.link[key.second]}) == slot);
  // Each chunk reaches each rank in the same slot as its image reaches the
  // image rank (TACCL's start times), also where it arrives over a link
  // between blocks, whose sends are not tied. Slot lengths as the exact
  // model sets them: each link's cost in units of the fastest.
  CostModel cost = makeCostModel(*t, 1 << 14);
  double tau = std::numeric_limits<double>::infinity();
  for (int l : p->usableLinks)
    tau = std::min(tau, cost.link[l]);
  std::map<std::pair<int, int>, int> arrival; // (value, rank) -> last slot
  std::set<std::pair<int, int>> overBetween;
  for (const PlanSend &s : exact->sends) {
    int d = std::max(1, (int)std::lround(cost.link[s.link] / tau));
    int dst = t->links[s.link].dst;
    arrival[{s.value, dst}] = s.slot + d - 1;
    if (tie.link[s.link] < 0)
      overBetween.insert({s.value, dst});
  }
  int checked = 0;
  for (auto [key, slot] : arrival) {
    auto image = arrival.find({tie.value[key.first], tie.rank[key.second]});
    REQUIRE(image != arrival.end());
    CHECK(image->second == slot);
    checked += (int)overBetween.count(key);
  }
  CHECK(checked > 0);
  // The ties are in the exact model (every rank of both nodes, for each
  // pair of tied chunks), not in the routing model, which keeps no times.
  EncodingOptions slots;
  slots.horizon = 8;
  slots.ties = EncodingOptions::Ties::Slots;
  CHECK(FlowEncoding(*p, slots).numTiedArrivals() > 0);
  EncodingOptions routes = slots;
  routes.ties = EncodingOptions::Ties::Routes;
  CHECK(FlowEncoding(*p, routes).numTiedArrivals() == 0);
  auto plans =
      routingPlans(*p, makeCostModel(*t, 1 << 20), RoutingSearchOptions{}, ctx);
  REQUIRE_FALSE(plans.empty());
  for (const Plan &plan : plans)
    CHECK(planKeepsTies(*p, plan));
}

TEST_CASE("a rotation of dgx2 that moves the NIC senders ties inside nodes",
          "[taccl][symmetry]") {
  // TACCL's 2 x DGX-2 relay (odd GPUs send to the even GPU below them on
  // the other node), with a rotation by 1 instead of 2: inside a node it is
  // a symmetry of the NVSwitch, but it maps the sender 1 onto 2, which
  // sends nowhere.
  Topology t = topo("dgx2x2");
  Sketch sk = sketchOf(R"({"nnodes": 2,
    "intranode_sketch": {"strategy": "none"},
    "internode_sketch": {"strategy": "relay",
      "internode_conn": {"1": [0], "3": [2], "5": [4], "7": [6], "9": [8],
                         "11": [10], "13": [12], "15": [14]}},
    "symmetry_offsets": [[1, 16], [16, 32]]})");
  auto p = buildRoutingProblem(t, sk, allgather(32));
  REQUIRE(p.ok());
  // The rotation by 2 (and the node swap) maps the whole machine: the
  // group has 16 elements, the rotation by 1 ties.
  CHECK(p->group.size() == 16);
  REQUIRE(p->ties.size() == 1);
  const SymmetryTie &tie = p->ties.front();
  int intra = 0, cross = 0;
  for (int l : p->usableLinks) {
    const Link &a = t.links[l];
    if (t.sameNode(a.src, a.dst)) {
      ++intra;
      REQUIRE(tie.link[l] >= 0);
      CHECK(t.links[tie.link[l]].src ==
            (a.src % 16 + 1) % 16 + a.src / 16 * 16);
      CHECK(t.links[tie.link[l]].dst ==
            (a.dst % 16 + 1) % 16 + a.dst / 16 * 16);
    } else {
      ++cross;
      CHECK(tie.link[l] == -1);
    }
  }
  CHECK(intra == 2 * 16 * 15);
  CHECK(cross == 2 * 8);
  CHECK(tie.numTiedLinks() == intra);
  // A rooted collective is not invariant under the rotation: nothing is
  // tied, and the note says why.
  auto bc = Collective::builtin(CollectiveKind::Broadcast, 32, 1);
  REQUIRE(bc.ok());
  auto pb = buildRoutingProblem(t, sk, *bc);
  REQUIRE(pb.ok());
  CHECK(pb->ties.empty());
  bool noted = false;
  for (const std::string &n : pb->notes)
    noted |= n.find("the collective is not invariant under [1, 16], whose "
                    "sends are not tied") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("ties that admit no route are dropped, and a note says so",
          "[taccl][symmetry]") {
  Topology t = topo("ndv2x2");
  // Only GPU 0 -> remote GPU 1 crosses nodes. Tied inside the node, a
  // chunk's receptions in node 1 are the rotation of its partner's, which
  // enters at the same GPU 9: two receptions there and none at 13. TACCL's
  // model has no solution; ccsynth's solver searches without the ties.
  Sketch sk = sketchOf(R"({"nnodes": 2, "intranode_sketch": {"strategy":
    "none"}, "internode_sketch": {"strategy": "relay",
    "internode_conn": {"0": [1]}},
    "symmetry_offsets": [[4, 8], [8, 16]]})");
  auto p = buildRoutingProblem(t, sk, allgather(16));
  REQUIRE(p.ok());
  CHECK(p->group.size() == 2);
  REQUIRE(p->ties.size() == 1);
  SearchContext ctx;
  ctx.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto plans =
      routingPlans(*p, makeCostModel(t, 1 << 20), RoutingSearchOptions{}, ctx);
  CHECK(ctx.tiesUnsatisfiable);
  REQUIRE_FALSE(plans.empty());

  SynthOptions o;
  o.timeLimitSec = 10;
  o.targetBytes = 16 << 10;
  auto r = synthesize(t, sk, o);
  REQUIRE(r.ok());
  REQUIRE(r->feasible);
  bool noted = false;
  for (const std::string &n : r->notes)
    noted |= n.find("no plan within the solver's depth or horizon satisfies "
                    "the ties of symmetry_offsets entry [4, 8]") !=
             std::string::npos;
  CHECK(noted);
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
