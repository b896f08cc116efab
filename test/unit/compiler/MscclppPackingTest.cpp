//===- MscclppPackingTest.cpp - MSCCL++ plans merged into the budget
//-------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A rank with more threadblocks than its GPU keeps resident gets them
// merged: at most the budget per rank, every merged threadblock running
// its members' steps in level order (so no run can deadlock, see
// MSCCLPPPacking.h), dependencies inside one merged threadblock held by
// program order, and the plan checker's symbolic run still producing the
// collective. Ranks within the budget are written as before.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Target/MSCCLPPPacking.h"
#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Support/Json.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Target/MSCCLPPPlanCheck.h"
#include "ccsynth/Perf/StepSimulator.h"

#include <catch2/catch.hpp>

#include <set>

using namespace ccsynth;
using namespace ccsynth::msccl;

namespace {

Schedule ringAllReduce(const std::string &topo) {
  auto t = loadTopology(topo);
  REQUIRE(t.ok());
  auto s = makeBaseline(BaselineKind::Ring, CollectiveKind::AllReduce, *t);
  REQUIRE(s.ok());
  Schedule sched = s.take();
  sched.topology = topo;
  return sched;
}

/// Unfused, a ring AllReduce keeps its receives, reductions and sends in
/// threadblocks of their own: more than the budget on two-node machines
/// (fused, it fits without merging).
CompileResult plan(const Schedule &sched, int maxTbsPerRank = -1) {
  CompileOptions o;
  o.target = CompileTarget::MscclppJson;
  o.fuse = false;
  o.maxThreadblocksPerRank = maxTbsPerRank;
  CompileResult r = compileSchedule(sched, o);
  INFO(r.failure.error.format());
  REQUIRE(r.ok());
  return r;
}

int semaphores(const Json &p) {
  int n = 0;
  for (const Json &g : p["gpus"])
    n += (int)g["semaphores"].size();
  return n;
}

/// Checks what every merge must keep: the budget, each MSCCL threadblock
/// in exactly one plan threadblock, steps in level order, and the plan
/// checker's run.
void checkMerged(const Schedule &sched, const CompileResult &r, int budget,
                 const std::vector<int> &nodeOf) {
  REQUIRE(r.packing.has_value());
  const ThreadblockPacking &tp = *r.packing;
  CHECK(tp.budget == budget);
  Json p = Json::parse(*r.output);
  for (const Json &g : p["gpus"]) {
    int rank = g["id"];
    INFO("rank " << rank);
    CHECK((int)g["threadblocks"].size() <= budget);
    CHECK(tp.packing.threadblocks(rank) == (int)g["threadblocks"].size());
  }
  Matching matching = matchMessages(tp.program);
  REQUIRE(matching.issues.empty());
  Status packed = checkPacking(tp.program, matching, tp.packing);
  INFO((packed ? std::string() : packed.error().message));
  CHECK(packed.ok());
  auto levels = StepLevels::compute(tp.program, matching);
  REQUIRE(levels.ok());
  for (const auto &rank : tp.packing.ranks)
    for (const PackedThreadblock &ptb : rank)
      for (size_t k = 1; k < ptb.steps.size(); ++k)
        CHECK(levels->before(ptb.steps[k - 1], ptb.steps[k]));

  PlanCheckOptions o;
  o.nodeOfRank = nodeOf;
  o.maxThreadblocksPerRank = budget;
  auto run = checkMscclppPlan("plan", *r.output, sched.collective, o);
  INFO((run ? std::string() : run.error().format()));
  REQUIRE(run.ok());
  CHECK(run->maxThreadblocks <= budget);
}

} // namespace

TEST_CASE("unfused ring AllReduce on two-node machines merges into the "
          "GPU's "
          "threadblocks",
          "[mscclpp][merge]") {
  for (const char *name : {"dgx-a100x2", "dgx-h100x2"}) {
    INFO(name);
    auto topo = loadTopology(name);
    REQUIRE(topo.ok());
    Schedule sched = ringAllReduce(name);
    CompileResult r = plan(sched);
    int budget = residentThreadblocks(name, nullptr);
    checkMerged(sched, r, budget, topo->nodeOf);
    // Some rank had more than the budget before merging.
    int most = 0;
    for (const Gpu &g : r.packing->program.gpus)
      most = std::max(most, (int)g.tbs.size());
    CHECK(most > budget);
    // Fused (the default), every rank fits without merging.
    CompileOptions fused;
    fused.target = CompileTarget::MscclppJson;
    CompileResult f = compileSchedule(sched, fused);
    REQUIRE(f.ok());
    CHECK_FALSE(f.packing.has_value());
  }
}

TEST_CASE("merged threadblocks hold their dependencies by program order",
          "[mscclpp][merge]") {
  Schedule sched = ringAllReduce("dgx-a100");
  CompileResult one = plan(sched);
  CHECK_FALSE(one.packing.has_value()); // 8 threadblocks fit 108
  int before = semaphores(Json::parse(*one.output));
  REQUIRE(before > 0);

  auto topo = loadTopology("dgx-a100");
  REQUIRE(topo.ok());
  CompileResult merged = plan(sched, 4);
  checkMerged(sched, merged, 4, topo->nodeOf);
  // Dependencies between merged threadblocks lose their semaphores.
  CHECK(semaphores(Json::parse(*merged.output)) < before);

  // The step-level model times the merged program, every merged
  // threadblock one step at a time.
  StepSimOptions so;
  so.bytes = 1 << 20;
  so.boundedBuffers = false;
  so.runtimeRules = false;
  so.wholeChunks = true;
  auto alone = simulateSteps(merged.packing->program, *topo, so);
  so.packing = &merged.packing->packing;
  auto together = simulateSteps(merged.packing->program, *topo, so);
  REQUIRE(alone.ok());
  REQUIRE(together.ok());
  CHECK(together->threadblocksPerRank <= 4);
  CHECK(together->timeUs > 0);
}

TEST_CASE("plans within the budget are written one to one",
          "[mscclpp][merge]") {
  Schedule sched = ringAllReduce("dgx-h100");
  CompileResult limited = plan(sched);
  CompileResult unlimited = plan(sched, 0);
  CHECK_FALSE(limited.packing.has_value());
  CHECK(*limited.output == *unlimited.output);
}

TEST_CASE("a budget no merge fits is refused", "[mscclpp][merge]") {
  Schedule sched = ringAllReduce("dgx-a100");
  CompileOptions o;
  o.target = CompileTarget::MscclppJson;
  o.maxThreadblocksPerRank = 1;
  CompileResult r = compileSchedule(sched, o);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.failure.error.message,
             Catch::Contains("no merge of them into 1 keeps every one within "
                             "64 operations"));
}

TEST_CASE("the packing check refuses orders that could deadlock",
          "[mscclpp][merge]") {
  Schedule sched = ringAllReduce("dgx-a100");
  CompileResult r = plan(sched, 4);
  REQUIRE(r.packing.has_value());
  const Algo &algo = r.packing->program;
  Matching matching = matchMessages(algo);
  REQUIRE(checkPacking(algo, matching, r.packing->packing).ok());

  // Find a step of rank 0 that waits for another threadblock's step.
  const Gpu *g = algo.gpu(0);
  REQUIRE(g);
  int consumer = -1, producer = -1;
  for (const Threadblock &tb : g->tbs)
    for (const Step &st : tb.steps)
      if (consumer < 0 && st.depid >= 0 && st.depid != tb.id) {
        consumer = tb.id;
        producer = st.depid;
      }
  REQUIRE(consumer >= 0);

  Packing bad = identityPacking(algo);
  SECTION("the consumer's threadblock first, then the producer's") {
    // One plan threadblock runs every step of the consumer's threadblock
    // before any of the producer's: the consumer waits forever.
    std::vector<PackedThreadblock> rank0;
    PackedThreadblock both;
    both.members = {std::min(consumer, producer), std::max(consumer, producer)};
    for (int id : {consumer, producer})
      for (const Threadblock &tb : g->tbs)
        if (tb.id == id)
          for (int s = 0; s < (int)tb.steps.size(); ++s)
            both.steps.push_back({0, id, s});
    for (PackedThreadblock &ptb : bad.ranks[0])
      if (ptb.members.front() != consumer && ptb.members.front() != producer)
        rank0.push_back(ptb);
    rank0.push_back(both);
    bad.ranks[0] = rank0;
    Status s = checkPacking(algo, matching, bad);
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.error().message, Catch::Contains("cycle"));
  }
  SECTION("steps out of program order") {
    for (PackedThreadblock &ptb : bad.ranks[0])
      if (ptb.steps.size() >= 2) {
        std::swap(ptb.steps[0], ptb.steps[1]);
        break;
      }
    Status s = checkPacking(algo, matching, bad);
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.error().message, Catch::Contains("program order"));
  }
  SECTION("a threadblock left out") {
    bad.ranks[0].pop_back();
    Status s = checkPacking(algo, matching, bad);
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.error().message, Catch::Contains("runs in 0 plan"));
  }
}
