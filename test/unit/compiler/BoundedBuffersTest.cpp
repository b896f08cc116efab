//===- BoundedBuffersTest.cpp - MSCCL's bounded connection buffers --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A connection (channel, sender, receiver) of the MSCCL runtime holds
// NCCL_STEPS = 8 slots; a Simple send takes 4 per chunk, LL and LL128 one.
// The deadlock check must see the hangs this causes, the compiler must
// emit programs that are safe under it, and every XML the compiler writes
// for the test corpus must pass the check.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Support/Json.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/DSL/Frontend.h"
#include "ccsynth/Target/MSCCLXml.h"

#include "Programs.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using namespace ccsynth;
using namespace ccsynth::msccl;

namespace {

/// A two-rank program in which each rank first sends `sends` messages of
/// `cnt` chunks to the other and then receives as many.
Algo sendThenReceive(int sends, int cnt, const std::string &proto) {
  Algo a;
  a.name = "exchange";
  a.proto = proto;
  a.ngpus = 2;
  a.coll = "allreduce";
  a.nchunksperloop = sends * cnt;
  for (int r = 0; r < 2; ++r) {
    Gpu g;
    g.id = r;
    g.iChunks = g.oChunks = sends * cnt;
    Threadblock tb;
    tb.send = tb.recv = 1 - r;
    for (int i = 0; i < 2 * sends; ++i) {
      Step st;
      st.s = i;
      st.cnt = cnt;
      bool send = i < sends;
      st.type = send ? StepType::Send : StepType::Recv;
      st.srcBuf = BufferKind::Input;
      st.srcOff = send ? i * cnt : -1;
      st.dstBuf = BufferKind::Output;
      st.dstOff = send ? -1 : (i - sends) * cnt;
      tb.steps.push_back(st);
    }
    g.tbs.push_back(tb);
    a.gpus.push_back(g);
  }
  return a;
}

std::vector<ProgramIssue> boundedDeadlock(const Algo &a) {
  return checkDeadlock(a, matchMessages(a), BufferModel::forProtocol(a.proto));
}

std::string text(const std::vector<ProgramIssue> &issues) {
  std::string out;
  for (const ProgramIssue &i : issues)
    out += i.message + "\n";
  return out;
}

Schedule baseline(BaselineKind kind, CollectiveKind col,
                  const std::string &topo, bool inPlace = false) {
  auto t = makeBuiltinTopology(topo);
  REQUIRE(t.ok());
  BaselineOptions o;
  o.inPlace = inPlace;
  auto s = makeBaseline(kind, col, *t, o);
  INFO((s ? std::string() : s.error().format()));
  REQUIRE(s.ok());
  return s.take();
}

Schedule program(const std::string &path,
                 const std::map<std::string, long long> &defines = {}) {
  return test::lowerProgram(path, defines);
}

/// The `--msccl-coll C` a custom program's header names, or "".
std::string launchCollOf(const std::string &path) {
  auto read = readFile(path);
  std::string src = read ? *read : std::string();
  auto at = src.find("--msccl-coll ");
  if (at == std::string::npos)
    return "";
  at += 13;
  auto end = src.find_first_not_of("abcdefghijklmnopqrstuvwxyz", at);
  return src.substr(at, end - at);
}

/// Compiles to XML and checks it with the bounded model, independently of
/// the pipeline's own check.
void requireSafeXml(const Schedule &s, CompileOptions o) {
  o.target = CompileTarget::MscclXml;
  if (s.collective.kind == CollectiveKind::Custom && o.mscclColl.empty())
    return; // needs a launching call; the caller names one
  CompileResult r = compileSchedule(s, o);
  INFO(r.failure.error.format());
  REQUIRE(r.ok());
  auto algo = parseXml("out.xml", *r.output);
  REQUIRE(algo.ok());
  REQUIRE(validateAlgo(*algo).empty());
  std::vector<ProgramIssue> issues = boundedDeadlock(*algo);
  INFO(text(issues));
  CHECK(issues.empty());
}

const std::vector<std::string> kProtocols = {"Simple", "LL", "LL128"};

} // namespace

TEST_CASE("slots per send follow MSCCL's primitives", "[msccl][buffers]") {
  CHECK(kConnSlots == 8);
  CHECK(slotsPerCall("Simple") == 4); // SlicePerChunk 2 x StepPerSlice 2
  CHECK(slotsPerCall("LL") == 1);
  CHECK(slotsPerCall("LL128") == 1);
  CHECK(BufferModel::forProtocol("Simple").slotsOf(2) == 8);
  CHECK(BufferModel::forProtocol("LL").slotsOf(3) == 3);
  CHECK_FALSE(BufferModel::unbounded().bounded());
}

TEST_CASE("the deadlock check sees full connection buffers",
          "[msccl][buffers]") {
  SECTION("two Simple sends fit, a third waits for the peer") {
    CHECK(boundedDeadlock(sendThenReceive(2, 1, "Simple")).empty());
    auto issues = boundedDeadlock(sendThenReceive(3, 1, "Simple"));
    REQUIRE(issues.size() == 1);
    CHECK(issues[0].message.find("room in the connection's buffer") !=
          std::string::npos);
    CHECK(issues[0].message.find("8 slots") != std::string::npos);
    // Without the bound the same program is fine.
    Algo a = sendThenReceive(3, 1, "Simple");
    CHECK(checkDeadlock(a, matchMessages(a)).empty());
  }
  SECTION("LL and LL128 buffer eight one-chunk sends") {
    for (const char *p : {"LL", "LL128"}) {
      INFO(p);
      CHECK(boundedDeadlock(sendThenReceive(8, 1, p)).empty());
      CHECK_FALSE(boundedDeadlock(sendThenReceive(9, 1, p)).empty());
    }
  }
  SECTION("the bound counts chunks") {
    // A cnt=2 Simple send fills the buffer; one more chunk hangs.
    CHECK(boundedDeadlock(sendThenReceive(1, 2, "Simple")).empty());
    CHECK_FALSE(boundedDeadlock(sendThenReceive(2, 2, "Simple")).empty());
    // A message larger than the buffer completes only while it is being
    // received: a cnt=3 Simple send before the receive hangs...
    CHECK_FALSE(boundedDeadlock(sendThenReceive(1, 3, "Simple")).empty());
    CHECK(boundedDeadlock(sendThenReceive(1, 8, "LL")).empty());
    CHECK_FALSE(boundedDeadlock(sendThenReceive(1, 9, "LL")).empty());
  }
  SECTION("a receiver that is already waiting drains a large message") {
    // ...but not when one side receives first.
    Algo a = sendThenReceive(1, 3, "Simple");
    std::swap(a.gpus[1].tbs[0].steps[0].type, a.gpus[1].tbs[0].steps[1].type);
    std::swap(a.gpus[1].tbs[0].steps[0].srcOff,
              a.gpus[1].tbs[0].steps[1].srcOff);
    std::swap(a.gpus[1].tbs[0].steps[0].dstOff,
              a.gpus[1].tbs[0].steps[1].dstOff);
    REQUIRE(validateAlgo(a).empty());
    CHECK(boundedDeadlock(a).empty());
  }
  SECTION("one channel each: the buffers add up") {
    Algo a = sendThenReceive(4, 1, "Simple");
    // Messages 2 and 3 of each direction on channel 1.
    a.nchannels = 2;
    for (Gpu &g : a.gpus) {
      Threadblock second = g.tbs[0];
      second.id = 1;
      second.chan = 1;
      Threadblock &first = g.tbs[0];
      first.steps = {first.steps[0], first.steps[1], first.steps[4],
                     first.steps[5]};
      second.steps = {second.steps[2], second.steps[3], second.steps[6],
                      second.steps[7]};
      for (Threadblock *tb : {&first, &second})
        for (int i = 0; i < 4; ++i)
          tb->steps[i].s = i;
      g.tbs.push_back(second);
    }
    REQUIRE(validateAlgo(a).empty());
    CHECK(boundedDeadlock(a).empty());
  }
}

TEST_CASE("programs that hang on one channel's buffers compile safe",
          "[msccl][buffers]") {
  std::string dsl = std::string(CCSYNTH_SOURCE_DIR) + "/sketches/dsl/";
  struct Case {
    std::string name;
    Schedule schedule;
    int pipeline = 1;
    std::string coll;
  };
  std::vector<Case> cases;
  for (CollectiveKind k : {CollectiveKind::AllGather, CollectiveKind::AllReduce,
                           CollectiveKind::AllToAll})
    cases.push_back({std::string("direct ") + toString(k),
                     baseline(BaselineKind::Direct, k, "ring:8")});
  cases.push_back(
      {"ring alltoall",
       baseline(BaselineKind::Ring, CollectiveKind::AllToAll, "ring:8")});
  cases.push_back(
      {"ring alltoall in place",
       baseline(BaselineKind::Ring, CollectiveKind::AllToAll, "ring:8",
                /*inplace=*/true)});
  cases.push_back(
      {"ring allgather pipelined",
       baseline(BaselineKind::Ring, CollectiveKind::AllGather, "ring:8"), 2});
  for (int gpus : {4, 8})
    cases.push_back({"hierarchical allreduce 2x" + std::to_string(gpus),
                     program(dsl + "hierarchical_allreduce.ccl",
                             {{"nodes", 2}, {"gpus", gpus}})});
  cases.push_back(
      {"even allgather", program(dsl + "even_allgather.ccl"), 1, "allgather"});

  for (const Case &c : cases)
    for (const std::string &proto : kProtocols) {
      INFO(c.name << ", " << proto);
      CompileOptions o;
      o.protocol = proto;
      o.pipeline = c.pipeline;
      o.mscclColl = c.coll;
      o.checkRoundTrip = true;
      requireSafeXml(c.schedule, o);
      if (proto != "Simple")
        continue;
      // The threadblocks the unbounded model alone would give hang.
      o.boundedBuffers = false;
      CompileResult r = compileSchedule(c.schedule, o);
      INFO(r.failure.error.format());
      REQUIRE(r.ok());
      auto algo = parseXml("unbounded.xml", *r.output);
      REQUIRE(algo.ok());
      CHECK_FALSE(boundedDeadlock(*algo).empty());
    }
}

TEST_CASE("a program no channel assignment can save is refused clearly",
          "[msccl][buffers]") {
  // Rank r sends three chunks to r+1 at step 0 and forwards them at step 1:
  // fusion makes every forward wait in the receiving threadblock behind
  // its own sends. With one channel nothing can be spread.
  Schedule s = baseline(BaselineKind::Ring, CollectiveKind::AllToAll, "ring:8");
  CompileOptions o;
  o.maxChannels = 1;
  o.coalesce = false;
  CompileResult r = compileSchedule(s, o);
  REQUIRE_FALSE(r.ok());
  CHECK(r.failure.error.message.find("connection buffer") != std::string::npos);
  CHECK(r.failure.error.message.find("8 slots, 4 per Simple chunk") !=
        std::string::npos);
  // Joined into one step per hop, the forwards no longer queue behind
  // single-chunk sends: one channel hosts the program safely.
  o.coalesce = true;
  o.checkRoundTrip = true;
  r = compileSchedule(s, o);
  REQUIRE(r.ok());
  CHECK(r.coalesced);
  CHECK(r.uncoalesced.find("connection buffer") != std::string::npos);
  requireSafeXml(s, o);
}

TEST_CASE("every XML compiled from the test corpus is safe on bounded "
          "buffers",
          "[msccl][buffers][corpus]") {
  std::vector<std::string> files;
  std::string root = CCSYNTH_SOURCE_DIR;
  for (const auto &e :
       std::filesystem::directory_iterator(root + "/test/inputs/schedules"))
    if (e.path().extension() == ".json")
      files.push_back(e.path().string());
  for (const char *dir : {"/sketches", "/dsl"})
    if (std::filesystem::exists(root + dir))
      for (const auto &e :
           std::filesystem::recursive_directory_iterator(root + dir))
        if (e.path().extension() == ".ccl" &&
            e.path().string().find("/test") == std::string::npos)
          files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 25);
  for (const std::string &file : files) {
    INFO(file);
    Schedule s;
    if (file.size() > 4 && file.substr(file.size() - 4) == ".ccl") {
      s = program(file);
    } else {
      auto loaded = loadScheduleJson(file);
      REQUIRE(loaded.ok());
      s = loaded.take();
    }
    if (s.usesSwitches())
      continue; // switch operations: generated code only, no XML
    std::string coll;
    if (s.collective.kind == CollectiveKind::Custom) {
      coll = launchCollOf(file);
      if (coll.empty())
        continue; // no NCCL call launches it: not exported to XML
    }
    for (const std::string &proto : kProtocols) {
      INFO(proto);
      CompileOptions o;
      o.protocol = proto;
      o.mscclColl = coll;
      requireSafeXml(s, o);
    }
    CompileOptions o;
    o.mscclColl = coll;
    for (auto [instances, parts, fuse] :
         {std::tuple{2, 1, true}, std::tuple{1, 2, true},
          std::tuple{1, 1, false}}) {
      INFO("instances " << instances << " pipeline " << parts << " fuse "
                        << fuse);
      o.instances = instances;
      o.pipeline = parts;
      o.fuse = fuse;
      requireSafeXml(s, o);
    }
  }
}
