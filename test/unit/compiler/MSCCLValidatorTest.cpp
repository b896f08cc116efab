//===- MSCCLValidatorTest.cpp - MSCCL runtime rules, round trips, deadlocks //
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The structural validator must reject everything the MSCCL runtime
// rejects (or would hang on), every shipped schedule must export to XML
// that passes it and runs back into a verified schedule, and cyclic or
// mismatched programs must be named precisely.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Support/Json.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/Import/MSCCLToSchedule.h"
#include "ccsynth/Target/MSCCLXml.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using namespace ccsynth;
using namespace ccsynth::msccl;

namespace {

std::string schedulesDir() {
  return std::string(CCSYNTH_SOURCE_DIR) + "/test/inputs/schedules";
}

std::vector<std::string> scheduleFiles() {
  std::vector<std::string> files;
  for (const auto &e : std::filesystem::directory_iterator(schedulesDir()))
    if (e.path().extension() == ".json")
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string issuesText(const std::vector<ProgramIssue> &issues) {
  std::string out;
  for (const ProgramIssue &i : issues)
    out += i.message + "\n";
  return out;
}

bool mentions(const std::vector<ProgramIssue> &issues,
              const std::string &text) {
  for (const ProgramIssue &i : issues)
    if (i.message.find(text) != std::string::npos)
      return true;
  return false;
}

/// Compiles a shipped schedule to XML text.
std::string compileXml(const std::string &name,
                       const CompileOptions &options = {}) {
  auto sched = loadScheduleJson(schedulesDir() + "/" + name);
  REQUIRE(sched.ok());
  CompileResult r = compileSchedule(*sched, options);
  INFO(r.failure.error.format());
  REQUIRE(r.ok());
  return *r.output;
}

Algo compileAlgo(const std::string &name) {
  std::string xml = compileXml(name);
  auto algo = parseXml(name, xml);
  REQUIRE(algo.ok());
  REQUIRE(validateAlgo(*algo).empty());
  return algo.take();
}

Threadblock *findTb(Algo &algo, int rank, int id) {
  for (Gpu &g : algo.gpus)
    if (g.id == rank)
      for (Threadblock &tb : g.tbs)
        if (tb.id == id)
          return &tb;
  return nullptr;
}

/// The first threadblock of rank 0 with a send peer.
Threadblock &sender(Algo &algo) {
  for (Threadblock &tb : algo.gpus[0].tbs)
    if (tb.send >= 0)
      return tb;
  FAIL("no sending threadblock");
  return algo.gpus[0].tbs[0];
}

Step localCopy(int s) {
  Step st;
  st.s = s;
  st.type = StepType::Copy;
  st.srcBuf = BufferKind::Input;
  st.srcOff = 0;
  st.dstBuf = BufferKind::Output;
  st.dstOff = 0;
  return st;
}

} // namespace

TEST_CASE("every shipped schedule exports valid MSCCL XML that round-trips",
          "[msccl][roundtrip]") {
  std::vector<std::string> files = scheduleFiles();
  REQUIRE(files.size() >= 7);
  for (const std::string &file : files) {
    INFO(file);
    auto sched = loadScheduleJson(file);
    REQUIRE(sched.ok());
    REQUIRE(verifySchedule(*sched).ok());

    CompileResult xml = compileSchedule(*sched, {});
    INFO(xml.failure.error.format());
    REQUIRE(xml.ok());
    std::vector<ProgramIssue> issues = validateXml(file, *xml.output);
    INFO(issuesText(issues));
    CHECK(issues.empty());

    auto algo = parseXml(file, *xml.output);
    REQUIRE(algo.ok());
    auto back = mscclToSchedule(*algo, sched->collective);
    INFO((back.ok() ? std::string() : back.error().format()));
    REQUIRE(back.ok());
    VerifyResult proof = verifySchedule(*back);
    INFO((proof.ok() ? std::string() : proof.issues.front().message));
    CHECK(proof.ok());

    CompileOptions planOptions;
    planOptions.target = CompileTarget::MscclppJson;
    CompileResult plan = compileSchedule(*sched, planOptions);
    INFO(plan.failure.error.format());
    REQUIRE(plan.ok());
    Json json = Json::parse(*plan.output);
    REQUIRE(json["gpus"].size() == (size_t)sched->collective.numRanks);
    for (size_t r = 0; r < json["gpus"].size(); ++r)
      CHECK(json["gpus"][r]["id"] == (int)r);
  }
}

TEST_CASE("instances and pipelining keep the exported XML valid",
          "[msccl][roundtrip]") {
  auto sched = loadScheduleJson(schedulesDir() + "/ring_allreduce_4.json");
  REQUIRE(sched.ok());
  for (auto [instances, parts] :
       {std::pair{2, 1}, std::pair{1, 2}, std::pair{3, 2}}) {
    INFO("instances " << instances << " pipeline " << parts);
    CompileOptions o;
    o.instances = instances;
    o.pipeline = parts;
    CompileResult r = compileSchedule(*sched, o);
    INFO(r.failure.error.format());
    REQUIRE(r.ok());
    auto algo = parseXml("x.xml", *r.output);
    REQUIRE(algo.ok());
    CHECK(validateAlgo(*algo).empty());
    auto col = Collective::builtin(CollectiveKind::AllReduce, 4,
                                   4 * instances * parts);
    REQUIRE(col.ok());
    auto back = mscclToSchedule(*algo, *col);
    INFO((back.ok() ? std::string() : back.error().format()));
    REQUIRE(back.ok());
    CHECK(verifySchedule(*back).ok());
    if (instances > 1)
      CHECK(algo->nchannels >= instances);
  }
}

TEST_CASE("the reader rejects what the runtime's parser rejects",
          "[msccl][validator]") {
  std::string xml = compileXml("ring_allgather_4.json");
  REQUIRE(validateXml("ok.xml", xml).empty());

  SECTION("every algo attribute is required") {
    for (const char *attr :
         {"name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll",
          "inplace", "outofplace", "minBytes", "maxBytes"}) {
      std::string key = std::string(" ") + attr + "=\"";
      size_t at = xml.find(key);
      REQUIRE(at != std::string::npos);
      size_t end = xml.find('"', at + key.size());
      std::string broken = xml.substr(0, at) + xml.substr(end + 1);
      auto issues = validateXml("x.xml", broken);
      INFO(attr);
      CHECK(mentions(issues, std::string("<algo> has no '") + attr + "'"));
    }
  }
  SECTION("every step attribute is required") {
    for (const char *attr : {"s", "type", "srcbuf", "srcoff", "dstbuf",
                             "dstoff", "cnt", "depid", "deps", "hasdep"}) {
      std::string key = std::string(" ") + attr + "=\"";
      size_t at = xml.find(key, xml.find("<step"));
      size_t end = xml.find('"', at + key.size());
      std::string broken = xml.substr(0, at) + xml.substr(end + 1);
      INFO(attr);
      CHECK(mentions(validateXml("x.xml", broken),
                     std::string("<step> has no '") + attr + "'"));
    }
  }
  SECTION("gpu and tb attributes are required") {
    for (auto [tag, attr] :
         {std::pair{"<gpu", " s_chunks=\""}, std::pair{"<tb", " chan=\""}}) {
      size_t at = xml.find(attr, xml.find(tag));
      size_t end = xml.find('"', at + std::string(attr).size());
      std::string broken = xml.substr(0, at) + xml.substr(end + 1);
      CHECK(mentions(validateXml("x.xml", broken), "attribute"));
    }
  }
  SECTION("an XML declaration, line breaks in tags and unquoted values") {
    CHECK(mentions(validateXml("x.xml", "<?xml version=\"1.0\"?>\n" + xml),
                   "XML declaration"));
    std::string wrapped = xml;
    wrapped.replace(wrapped.find(" proto="), 1, "\n");
    CHECK(mentions(validateXml("x.xml", wrapped), "one line"));
    std::string unquoted = xml;
    unquoted.replace(unquoted.find("ngpus=\"4\""), 9, "ngpus=4");
    CHECK(mentions(validateXml("x.xml", unquoted), "double quotes"));
  }
  SECTION("errors carry the line and column") {
    auto issues = validateXml("x.xml", "<algo name=\"a\">\n  <gpu id=\"0\">");
    REQUIRE(issues.size() == 1);
    CHECK(issues.front().loc.line == 2);
    CHECK(issues.front().loc.col == 3);
  }
}

TEST_CASE("the validator enforces the runtime's structural rules",
          "[msccl][validator]") {
  Algo algo = compileAlgo("ring_allgather_4.json");

  SECTION("threadblock ids are dense from 0") {
    algo.gpus[1].tbs.back().id = 7;
    CHECK(mentions(validateAlgo(algo), "is not dense"));
  }
  SECTION("a huge threadblock id is reported without sizing anything by it") {
    algo.gpus[1].tbs.back().id = 999999999;
    for (Threadblock &tb : algo.gpus[1].tbs)
      for (Step &st : tb.steps)
        if (st.depid >= 0)
          st.depid = 999999999;
    CHECK(mentions(validateAlgo(algo), "tb id 999999999 is not dense"));
  }
  SECTION("peers are never the rank itself") {
    sender(algo).send = 0;
    CHECK(mentions(validateAlgo(algo), "send peer 0 is the gpu itself"));
  }
  SECTION("peers are -1 or ranks") {
    sender(algo).recv = 9;
    CHECK(mentions(validateAlgo(algo), "is neither -1 nor a rank"));
  }
  SECTION("at most 64 steps per threadblock") {
    Threadblock &tb = *findTb(algo, 0, 1);
    while (tb.steps.size() < 65)
      tb.steps.push_back(localCopy((int)tb.steps.size()));
    CHECK(mentions(validateAlgo(algo), "65 steps exceed"));
  }
  SECTION("at most 32 threadblocks per channel") {
    Gpu &g = algo.gpus[0];
    while (g.tbs.size() < 33) {
      Threadblock tb;
      tb.id = (int)g.tbs.size();
      tb.steps.push_back(localCopy(0));
      g.tbs.push_back(tb);
    }
    CHECK(mentions(validateAlgo(algo), "more than 32 threadblocks"));
  }
  SECTION("at most 4096 elements per rank for the runtime's parser") {
    Gpu &g = algo.gpus[0];
    for (int c = 1; c < 32; ++c)
      for (int k = 0; k < 3; ++k) {
        Threadblock tb;
        tb.id = (int)g.tbs.size();
        tb.chan = c;
        for (int s = 0; s < 64; ++s)
          tb.steps.push_back(localCopy(s));
        g.tbs.push_back(tb);
      }
    algo.nchannels = 32;
    auto issues = validateAlgo(algo);
    INFO(issuesText(issues));
    CHECK(mentions(issues, "XML elements for this rank, more than its 4096"));
  }
  SECTION("cnt < 72") {
    algo.gpus[0].oChunks = algo.gpus[0].iChunks = 100;
    Threadblock &tb = *findTb(algo, 0, 1);
    tb.steps[0].cnt = 72;
    CHECK(mentions(validateAlgo(algo), "cnt 72 must be in 1..71"));
  }
  SECTION("channels below nchannels") {
    sender(algo).chan = 1;
    CHECK(mentions(validateAlgo(algo), "chan 1 is outside 0..0"));
  }
  SECTION("one threadblock per channel, peer and direction") {
    Threadblock copy = sender(algo);
    copy.id = (int)algo.gpus[0].tbs.size();
    algo.gpus[0].tbs.push_back(copy);
    CHECK(mentions(validateAlgo(algo), "both send to 1 on channel 0"));
  }
  SECTION("sends and receives match in count per channel and peer pair") {
    sender(algo).steps[0].cnt = 2;
    auto issues = validateAlgo(algo);
    INFO(issuesText(issues));
    CHECK(mentions(issues, "sends cnt 2 but rank 1"));
  }
  SECTION("every send has a receive") {
    Threadblock &tb = sender(algo);
    Step extra = tb.steps.front();
    extra.s = (int)tb.steps.size();
    tb.steps.push_back(extra);
    CHECK(mentions(validateAlgo(algo),
                   "rank 0 sends 4 message(s) to rank 1 on channel 0 but "
                   "rank 1 receives 3"));
  }
  SECTION("a dependency waits for a step that sets its flag") {
    Threadblock &tb = *findTb(algo, 0, 1);
    tb.steps[0].depid = sender(algo).id;
    tb.steps[0].deps = 0;
    CHECK(mentions(validateAlgo(algo), "has hasdep=0 and never signals"));
  }
  SECTION("step indices are dense") {
    sender(algo).steps[1].s = 5;
    CHECK(mentions(validateAlgo(algo), "s=\"5\""));
  }
  SECTION("ranges stay inside the buffers") {
    sender(algo).steps[0].srcOff = 1;
    CHECK(mentions(validateAlgo(algo), "is outside the buffer (1 chunks)"));
  }
  SECTION("algo attributes are in range") {
    algo.proto = "LL64";
    algo.coll = "allgatherv";
    algo.maxBytes = 1;
    algo.minBytes = 2;
    auto issues = validateAlgo(algo);
    CHECK(mentions(issues, "proto 'LL64'"));
    CHECK(mentions(issues, "coll 'allgatherv'"));
    CHECK(mentions(issues, "maxBytes 1 is below minBytes 2"));
  }
}

TEST_CASE("deadlocks and mismatches name ranks, threadblocks and steps",
          "[msccl][deadlock]") {
  const std::string cyclic = R"(
ccl.program @cycle attributes {collective = "allreduce", ranks = 3,
    input_chunks = 1, output_chunks = 1, scratch_chunks = 0} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send 1 recv 2 channel 0 {
      ccl.recv from 2 -> o[0]
      ccl.send i[0] to 1
    }
  }
  ccl.gpu 1 chunks(1, 1, 0) {
    ccl.threadblock 0 send 2 recv 0 channel 0 {
      ccl.recv from 0 -> o[0]
      ccl.send i[0] to 2
    }
  }
  ccl.gpu 2 chunks(1, 1, 0) {
    ccl.threadblock 0 send 0 recv 1 channel 0 {
      ccl.recv from 1 -> o[0]
      ccl.send i[0] to 0
    }
  }
}
)";
  CompileResult r = compileMlir("cycle.mlir", cyclic, {});
  REQUIRE(!r.ok());
  std::string msg = r.failure.error.message;
  INFO(msg);
  CHECK(msg.find("deadlock:") != std::string::npos);
  for (const char *step :
       {"rank 0 tb 0 step 0 (r from 2)", "rank 2 tb 0 step 1 (s to 0)",
        "rank 2 tb 0 step 0 (r from 1)", "rank 1 tb 0 step 1 (s to 2)",
        "rank 1 tb 0 step 0 (r from 0)", "rank 0 tb 0 step 1 (s to 1)"})
    CHECK(msg.find(step) != std::string::npos);
  CHECK(r.failure.error.loc.line == 6);
  CHECK_FALSE(r.failure.verificationFailed);

  // The same program with one rank sending first is fine.
  std::string fixed = cyclic;
  size_t at =
      fixed.find("      ccl.recv from 1 -> o[0]\n      ccl.send i[0] to 0");
  REQUIRE(at != std::string::npos);
  fixed.replace(at, 58,
                "      ccl.send i[0] to 0\n      ccl.recv from 1 -> o[0]");
  CompileResult ok = compileMlir("fixed.mlir", fixed, {});
  INFO(ok.failure.error.format());
  CHECK(ok.ok());

  // A mismatched program: rank 1 receives two chunks where one is sent.
  std::string mismatched = fixed;
  mismatched.replace(mismatched.find("ccl.recv from 0 -> o[0]"), 23,
                     "ccl.recv from 0 -> o[0] count 2");
  mismatched.replace(mismatched.find("input_chunks = 1, output_chunks = 1"), 35,
                     "input_chunks = 2, output_chunks = 2, chunk_factor = 2");
  for (size_t p = mismatched.find("chunks(1, 1, 0)"); p != std::string::npos;
       p = mismatched.find("chunks(1, 1, 0)"))
    mismatched.replace(p, 15, "chunks(2, 2, 0)");
  CompileResult count = compileMlir("m.mlir", mismatched, {});
  REQUIRE(!count.ok());
  CHECK(count.failure.error.message ==
        "message 0 from rank 0 to rank 1 on channel 0: rank 0 tb 0 step 1 "
        "(s to 1) sends cnt 1 but rank 1 tb 0 step 0 (r from 0) receives "
        "cnt 2");
}

TEST_CASE("symbolic execution finds races between threadblocks",
          "[msccl][race]") {
  Algo algo = compileAlgo("ring_allgather_4.json");
  auto col = Collective::builtin(CollectiveKind::AllGather, 4, 1);
  REQUIRE(col.ok());
  REQUIRE(mscclToSchedule(algo, *col).ok());
  // Rank 0's local copy writes its own output chunk; make it also write
  // the chunk its receives deliver, with nothing ordering the two.
  Threadblock &local = *findTb(algo, 0, 1);
  REQUIRE(local.steps[0].type == StepType::Copy);
  local.steps[0].dstOff = 1;
  auto back = mscclToSchedule(algo, *col);
  REQUIRE(!back.ok());
  CHECK(back.error().message.find("data race on rank 0 output chunk 1") !=
        std::string::npos);
}
