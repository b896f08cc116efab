//===- MscclppPlanTest.cpp - MSCCL++ plans: channels, budgets, results ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Multi-node plans must join ranks on different nodes with port channels
// only (memory channels map the peer's memory and need one node), every
// plan must fit the GPU's resident threadblocks, and a symbolic run of the
// plan as the executor reads it must produce the collective's outputs. The
// checks parse the JSON; the checker itself must catch broken plans.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Support/Json.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Target/MSCCLPPPlanCheck.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

using namespace ccsynth;

namespace {

struct Case {
  std::string topo;
  BaselineKind kind;
  CollectiveKind coll;
};

Schedule baseline(const Case &c, const Topology &topo) {
  auto s = makeBaseline(c.kind, c.coll, topo);
  INFO((s ? std::string() : s.error().format()));
  REQUIRE(s.ok());
  Schedule sched = s.take();
  sched.topology = c.topo;
  return sched;
}

std::string plan(const Schedule &sched) {
  CompileOptions o;
  o.target = CompileTarget::MscclppJson;
  CompileResult r = compileSchedule(sched, o);
  INFO(r.failure.error.format());
  REQUIRE(r.ok());
  return *r.output;
}

/// Checks every channel and remote buffer of a parsed plan against the
/// node layout; returns the number of port channels.
int checkChannelTypes(const Json &p, const Topology &topo) {
  int ports = 0;
  for (const Json &g : p["gpus"]) {
    int r = g["id"];
    std::vector<int> peerOf[2]; // memory, port: flattened channel -> peer
    for (const Json &ch : g["channels"]) {
      bool port = ch["channel_type"] == "port";
      CHECK((port || ch["channel_type"] == "memory"));
      for (int peer : ch["connected_to"]) {
        INFO("rank " << r << " peer " << peer);
        CHECK(topo.sameNode(r, peer) != port);
        peerOf[port].push_back(peer);
        ports += port;
      }
    }
    for (const Json &b : g["remote_buffers"]) {
      bool port = b["access_channel_types"] == Json::array({"port"});
      CHECK(topo.sameNode(r, b["rank"].get<int>()) != port);
    }
    for (const Json &tb : g["threadblocks"]) {
      std::vector<int> tbChannels[2];
      for (const Json &c : tb["channels"])
        for (int id : c["channel_ids"])
          tbChannels[c["channel_type"] == "port"].push_back(id);
      for (const Json &op : tb["ops"]) {
        if (!op.contains("channel_type"))
          continue;
        bool port = op["channel_type"] == "port";
        std::string name = op["name"];
        if (port)
          CHECK((name == "pwsf" || name == "wait"));
        else
          CHECK((name == "put" || name == "signal" || name == "wait"));
        for (int local : op["channel_ids"]) {
          REQUIRE(local < (int)tbChannels[port].size());
          int peer = peerOf[port].at(tbChannels[port][local]);
          CHECK(topo.sameNode(r, peer) != port);
        }
      }
    }
  }
  return ports;
}

std::string schedulesDir() {
  return std::string(CCSYNTH_SOURCE_DIR) + "/test/inputs/schedules";
}

} // namespace

TEST_CASE("multi-node MSCCL++ plans cross nodes on port channels only",
          "[mscclpp][port]") {
  const std::vector<Case> cases = {
      {"dgx-a100x2", BaselineKind::Hierarchical, CollectiveKind::AllReduce},
      {"dgx-a100x2", BaselineKind::Hierarchical, CollectiveKind::AllGather},
      {"dgx-a100x2", BaselineKind::Tree, CollectiveKind::Broadcast},
      {"dgx-h100x2", BaselineKind::Hierarchical, CollectiveKind::AllReduce},
      {"dgx-h100x2", BaselineKind::Ring, CollectiveKind::AllGather},
      {"dgx-h100x2", BaselineKind::Direct, CollectiveKind::AllToAll},
      {"ndv2x2", BaselineKind::Ring, CollectiveKind::ReduceScatter},
      {"ndv2x2", BaselineKind::Tree, CollectiveKind::AllReduce},
  };
  for (const Case &c : cases) {
    INFO(c.topo << " " << toString(c.kind) << " " << toString(c.coll));
    auto topo = loadTopology(c.topo);
    REQUIRE(topo.ok());
    Schedule sched = baseline(c, *topo);
    std::string text = plan(sched);
    Json p = Json::parse(text);
    CHECK(checkChannelTypes(p, *topo) > 0);

    // The budget: every threadblock of a rank resident at once.
    int budget = residentThreadblocks(c.topo, nullptr);
    REQUIRE(budget > 0);
    for (const Json &g : p["gpus"])
      CHECK((int)g["threadblocks"].size() <= budget);

    msccl::PlanCheckOptions o;
    o.nodeOfRank = topo->nodeOf;
    o.maxThreadblocksPerRank = budget;
    auto run = msccl::checkMscclppPlan(c.topo, text, sched.collective, o);
    INFO((run ? std::string() : run.error().format()));
    REQUIRE(run.ok());
    CHECK(run->portChannels > 0);
    CHECK(run->memoryChannels > 0);
  }
}

TEST_CASE("single-node MSCCL++ plans use memory channels only",
          "[mscclpp][port]") {
  for (const char *t : {"dgx1", "dgx-a100", "dgx-h100"}) {
    INFO(t);
    auto topo = loadTopology(t);
    REQUIRE(topo.ok());
    Schedule sched =
        baseline({t, BaselineKind::Ring, CollectiveKind::AllReduce}, *topo);
    std::string text = plan(sched);
    CHECK(checkChannelTypes(Json::parse(text), *topo) == 0);
    CHECK(text.find("\"port\"") == std::string::npos);
    CHECK(text.find("pwsf") == std::string::npos);
  }
}

TEST_CASE("every shipped schedule's plan fits its GPU and runs correctly",
          "[mscclpp][budget]") {
  int files = 0;
  for (const auto &e : std::filesystem::directory_iterator(schedulesDir())) {
    if (e.path().extension() != ".json")
      continue;
    ++files;
    INFO(e.path().string());
    auto sched = loadScheduleJson(e.path().string());
    REQUIRE(sched.ok());
    std::string text = plan(*sched);
    msccl::PlanCheckOptions o;
    if (!sched->topology.empty()) {
      auto topo = loadTopology(sched->topology);
      REQUIRE(topo.ok());
      o.nodeOfRank = topo->nodeOf;
      o.maxThreadblocksPerRank = residentThreadblocks(sched->topology, nullptr);
      checkChannelTypes(Json::parse(text), *topo);
    }
    for (const Json &g : Json::parse(text)["gpus"])
      if (o.maxThreadblocksPerRank > 0)
        CHECK((int)g["threadblocks"].size() <= o.maxThreadblocksPerRank);
    auto run =
        msccl::checkMscclppPlan(e.path().string(), text, sched->collective, o);
    INFO((run ? std::string() : run.error().format()));
    CHECK(run.ok());
  }
  CHECK(files >= 20);
}

TEST_CASE("the plan checker refuses broken plans", "[mscclpp][check]") {
  auto topo = loadTopology("dgx-a100x2");
  REQUIRE(topo.ok());
  Schedule sched = baseline(
      {"dgx-a100x2", BaselineKind::Tree, CollectiveKind::Broadcast}, *topo);
  std::string text = plan(sched);
  msccl::PlanCheckOptions o;
  o.nodeOfRank = topo->nodeOf;
  REQUIRE(msccl::checkMscclppPlan("p", text, sched.collective, o).ok());
  auto error = [&](const Json &p, const msccl::PlanCheckOptions &opts) {
    auto r = msccl::checkMscclppPlan("p", p.dump(), sched.collective, opts);
    return r ? std::string() : r.error().message;
  };
  auto has = [](const std::string &s, const std::string &part) {
    INFO(s);
    return s.find(part) != std::string::npos;
  };

  // Locate the port puts (pwsf) of the first threadblock that makes them.
  Json p = Json::parse(text);
  std::vector<Json *> puts;
  int sender = -1;
  for (Json &g : p["gpus"])
    for (Json &tb : g["threadblocks"]) {
      if (!puts.empty())
        break;
      for (Json &op : tb["ops"])
        if (op["name"] == "pwsf") {
          puts.push_back(&op);
          sender = g["id"];
        }
    }
  REQUIRE(puts.size() >= 2);
  Json *pwsf = puts.front();

  SECTION("a memory channel across nodes") {
    for (Json &ch : p["gpus"][sender]["channels"])
      if (ch["channel_type"] == "port")
        ch["channel_type"] = "memory";
    CHECK(has(error(p, o), "memory channel to rank"));
  }
  SECTION("a port channel within a node") {
    msccl::PlanCheckOptions oneNode; // every rank on one node
    CHECK(has(error(p, oneNode), "port channel to rank"));
  }
  SECTION("a lost put deadlocks") {
    // The receiver's last wait never gets its signal.
    *puts.back() = Json{{"name", "nop"}};
    CHECK(has(error(p, o), "deadlocks"));
  }
  SECTION("a lost put leaves data missing") {
    // The later signals satisfy the receiver's waits, but the first chunk
    // never arrived.
    *pwsf = Json{{"name", "nop"}};
    CHECK(has(error(p, o), "holds no data yet"));
  }
  SECTION("a put to the wrong chunk leaves a wrong output") {
    (*pwsf)["dst_buff"][0]["index"] =
        (*pwsf)["dst_buff"][0]["index"].get<int>() == 0 ? 1 : 0;
    std::string e = error(p, o);
    CHECK(
        (has(e, "must hold") || has(e, "holds no data") || has(e, "outside")));
  }
  SECTION("the threadblock budget") {
    msccl::PlanCheckOptions tight = o;
    tight.maxThreadblocksPerRank = 1;
    CHECK(has(error(p, tight), "more than the budget of 1"));
  }
  SECTION("an operation the checker does not know") {
    (*pwsf)["name"] = "rppkt";
    CHECK(has(error(p, o), "'rppkt'"));
  }
}

TEST_CASE("MSCCL++ plans run NVLS on switch channels: glres and gstore",
          "[mscclpp][switch]") {
  auto topo = loadTopology("dgx-h100");
  REQUIRE(topo.ok());
  auto has = [](const std::string &s, const std::string &part) {
    INFO(s);
    return s.find(part) != std::string::npos;
  };
  auto count = [](const Json &p, const std::string &name) {
    int n = 0;
    for (const Json &g : p["gpus"])
      for (const Json &tb : g["threadblocks"])
        for (const Json &op : tb["ops"])
          n += op["name"] == name;
    return n;
  };
  SECTION("NVLS AllReduce: one glres per chunk, every rank's input and "
          "output bound to the switch") {
    Schedule sched = baseline(
        {"dgx-h100", BaselineKind::Nvls, CollectiveKind::AllReduce}, *topo);
    std::string text = plan(sched);
    Json p = Json::parse(text);
    CHECK(count(p, "glres") == sched.collective.inputChunks);
    CHECK(count(p, "gstore") == 0);
    for (const Json &g : p["gpus"]) {
      std::vector<std::string> bound;
      for (const Json &ch : g["channels"])
        if (ch["channel_type"] == "switch") {
          bound.push_back(ch["buffer_type"]);
          CHECK(ch["rank_groups"][0]["ranks"].size() == 8);
        }
      CHECK(bound == std::vector<std::string>{"i", "o"});
      // One plan threadblock per lane, each meeting its group before and
      // after its operations.
      CHECK(g["threadblocks"].size() == 16);
      const Json &ops = g["threadblocks"][0]["ops"];
      CHECK(ops[1]["name"] == "signal");
      CHECK(ops[2]["name"] == "wait");
      CHECK(ops[ops.size() - 2]["name"] == "wait");
    }
    msccl::PlanCheckOptions o;
    auto run = msccl::checkMscclppPlan("p", text, sched.collective, o);
    REQUIRE(run.ok());
    CHECK(run->switchChannels == 16);
    CHECK(run->switchOperations == sched.collective.inputChunks);

    // The checker runs the switch: without one rank's barrier signals the
    // group waits forever; a store to another chunk leaves a wrong output;
    // a channel one rank of the group does not declare is refused.
    SECTION("a lost barrier signal deadlocks") {
      Json &ops = p["gpus"][3]["threadblocks"][0]["ops"];
      ops[1] = Json{{"name", "nop"}};
      auto e = msccl::checkMscclppPlan("p", p.dump(), sched.collective, o);
      REQUIRE_FALSE(e.ok());
      CHECK(has(e.error().message, "deadlocks"));
    }
    SECTION("a glres into another chunk") {
      for (Json &op : p["gpus"][0]["threadblocks"][0]["ops"])
        if (op["name"] == "glres")
          op["dst_buff"][0]["index"] =
              op["dst_buff"][0]["index"].get<int>() + 1;
      auto e = msccl::checkMscclppPlan("p", p.dump(), sched.collective, o);
      REQUIRE_FALSE(e.ok());
      CHECK(has(e.error().message, "must hold"));
    }
    SECTION("a switch channel one rank does not declare") {
      Json &chans = p["gpus"][5]["channels"];
      chans.erase(chans.size() - 1);
      for (Json &tb : p["gpus"][5]["threadblocks"])
        for (Json &ch : tb["channels"])
          if (ch["channel_type"] == "switch")
            ch["channel_ids"] = Json::array({0});
      auto e = msccl::checkMscclppPlan("p", p.dump(), sched.collective, o);
      REQUIRE_FALSE(e.ok());
      CHECK(has(e.error().message, "do not declare the switch channels"));
    }
  }
  SECTION("NVLS AllGather: gstore") {
    Schedule sched = baseline(
        {"dgx-h100", BaselineKind::Nvls, CollectiveKind::AllGather}, *topo);
    Json p = Json::parse(plan(sched));
    CHECK(count(p, "gstore") == 8 * 16);
    CHECK(count(p, "glres") == 0);
  }
  SECTION("what switch channels cannot express is refused at the transfer") {
    CompileOptions o;
    o.target = CompileTarget::MscclppJson;
    Schedule rs = baseline(
        {"dgx-h100", BaselineKind::Nvls, CollectiveKind::ReduceScatter}, *topo);
    CompileResult r = compileSchedule(rs, o);
    REQUIRE_FALSE(r.ok());
    CHECK(has(r.failure.error.message, "never into one rank alone"));
    auto x2 = loadTopology("dgx-h100x2");
    REQUIRE(x2.ok());
    Schedule tree = baseline(
        {"dgx-h100x2", BaselineKind::Nvls, CollectiveKind::AllReduce}, *x2);
    r = compileSchedule(tree, o);
    REQUIRE_FALSE(r.ok());
    CHECK(
        has(r.failure.error.message, "do not order with switch channels yet"));
    // 72 ranks on one switch: a barrier needs 71 channels per threadblock.
    auto nvl72 = loadTopology("gb200-nvl72");
    REQUIRE(nvl72.ok());
    Schedule rack = baseline(
        {"gb200-nvl72", BaselineKind::Nvls, CollectiveKind::AllReduce}, *nvl72);
    r = compileSchedule(rack, o);
    REQUIRE_FALSE(r.ok());
    CHECK(has(r.failure.error.format(), "joins 72 ranks"));
  }
}
