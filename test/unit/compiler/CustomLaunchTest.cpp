//===- CustomLaunchTest.cpp - Custom collectives as MSCCL XML -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// MSCCL selects an algorithm by the NCCL call (`coll`) it serves, so a
// custom collective is exported under the call that launches it. The call's
// buffers must hold the collective's chunks, a reducing program needs a call
// with a reduction operator, and the XML must still run back into a
// schedule that meets the collective's own postcondition.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/DSL/Frontend.h"
#include "ccsynth/Import/MSCCLToSchedule.h"
#include "ccsynth/Target/MSCCLXml.h"

#include "Programs.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace ccsynth;
using namespace ccsynth::msccl;

namespace {

using test::shippedProgram;

CompileResult compileAs(const Schedule &s, const std::string &coll) {
  CompileOptions o;
  o.mscclColl = coll;
  o.checkRoundTrip = true;
  return compileSchedule(s, o);
}

bool has(const std::vector<std::string> &v, const std::string &x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

} // namespace

TEST_CASE("the buffers each NCCL call hands MSCCL", "[msccl][custom]") {
  // 8 ranks, 16 chunks per loop.
  auto ag = bufferCapacity("allgather", 8, 16);
  REQUIRE(ag);
  CHECK(ag->input == 2);
  CHECK(ag->output == 16);
  auto rs = bufferCapacity("reducescatter", 8, 16);
  REQUIRE(rs);
  CHECK(rs->input == 16);
  CHECK(rs->output == 2);
  for (const char *c : {"alltoall", "allreduce", "broadcast", "reduce"}) {
    auto cap = bufferCapacity(c, 8, 16);
    REQUIRE(cap);
    CHECK(cap->input == 16);
    CHECK(cap->output == 16);
  }
  for (const char *c : {"gather", "scatter", "send", "recv", "alltoallv"})
    CHECK_FALSE(bufferCapacity(c, 8, 16));
  CHECK(collTakesRedOp("allreduce"));
  CHECK(collTakesRedOp("reducescatter"));
  CHECK_FALSE(collTakesRedOp("allgather"));
}

TEST_CASE("a custom collective's loop is the smallest the call's buffers "
          "allow",
          "[msccl][custom]") {
  // 1 chunk in, 8 out on 8 ranks: exactly an AllGather's shape.
  auto ag = launchCustomAs("allgather", 8, 1, 8, false);
  REQUIRE(ag);
  CHECK(ag->nchunksperloop == 8);
  // 4 in, 2 out: the allgather input (P/8) must hold 4 chunks.
  auto halo = launchCustomAs("allgather", 8, 4, 2, false);
  REQUIRE(halo);
  CHECK(halo->nchunksperloop == 32);
  auto ar = launchCustomAs("allreduce", 8, 4, 2, false);
  REQUIRE(ar);
  CHECK(ar->nchunksperloop == 4);
  auto rs = launchCustomAs("reducescatter", 4, 3, 2, true);
  REQUIRE(rs);
  CHECK(rs->nchunksperloop == 8);

  auto red = launchCustomAs("allgather", 8, 1, 8, true);
  REQUIRE_FALSE(red);
  CHECK(red.error().message.find("reduction operator") != std::string::npos);
  CHECK_FALSE(launchCustomAs("gather", 8, 1, 8, false));
  CHECK_FALSE(launchCustomAs("nosuchcall", 8, 1, 8, false));

  std::vector<std::string> fits = customLaunchColls(8, 1, 8, true);
  CHECK(has(fits, "allreduce"));
  CHECK(has(fits, "reducescatter"));
  CHECK_FALSE(has(fits, "allgather"));
  CHECK_FALSE(has(fits, "gather"));
}

TEST_CASE("the validator rejects gpu buffers larger than the call's",
          "[msccl][custom]") {
  auto algo = parseXml("t.xml", R"(<algo name="t" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">
  <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="2" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>)");
  INFO((algo ? std::string() : algo.error().format()));
  REQUIRE(algo.ok());
  std::vector<ProgramIssue> issues = validateAlgo(*algo);
  REQUIRE(issues.size() == 1);
  CHECK(issues[0].message.find("gpu 1: i_chunks=2 o_chunks=2 do not fit") !=
        std::string::npos);
}

TEST_CASE("shipped custom collectives export under the call that launches "
          "them",
          "[msccl][custom]") {
  Schedule even = shippedProgram("even_allgather", 8);
  CompileResult r = compileAs(even, "allgather");
  INFO(r.failure.error.format());
  REQUIRE(r.ok());
  auto algo = parseXml("even.xml", *r.output);
  REQUIRE(algo.ok());
  CHECK(algo->coll == "allgather");
  CHECK(algo->nchunksperloop == 8);
  CHECK(validateAlgo(*algo).empty());

  // The XML meets the custom postcondition...
  auto back = mscclToSchedule(*algo, even.collective);
  REQUIRE(back.ok());
  CHECK(verifySchedule(*back).ok());
  // ...but is not an AllGather: the odd ranks get nothing.
  auto asAllGather = inferMscclCollective(*algo);
  REQUIRE(asAllGather.ok());
  auto wrong = mscclToSchedule(*algo, *asAllGather);
  REQUIRE(wrong.ok());
  VerifyResult proof = verifySchedule(*wrong);
  REQUIRE_FALSE(proof.ok());
  CHECK(proof.issues.front().message.find("rank 1 output") !=
        std::string::npos);

  // Dropping one receive breaks the custom postcondition too.
  for (Gpu &g : algo->gpus)
    if (g.id == 0)
      for (Threadblock &tb : g.tbs)
        for (Step &st : tb.steps)
          if (st.type == StepType::Recv && st.dstBuf == BufferKind::Output &&
              st.dstOff == 1) {
            st.type = StepType::Nop;
            st.dstOff = -1;
            st.srcOff = -1;
            st.cnt = 0;
          }
  auto broken = mscclToSchedule(*algo, even.collective);
  bool caught = !broken.ok() || !verifySchedule(*broken).ok();
  CHECK(caught);

  Schedule halo = shippedProgram("halo_exchange", 8);
  CompileResult h = compileAs(halo, "allreduce");
  INFO(h.failure.error.format());
  REQUIRE(h.ok());
  CHECK(h.output->find("coll=\"allreduce\"") != std::string::npos);
  CHECK(h.output->find("nchunksperloop=\"4\"") != std::string::npos);
}

TEST_CASE("a custom collective without a launching call is refused with the "
          "calls that fit",
          "[msccl][custom]") {
  Schedule even = shippedProgram("even_allgather", 4);
  CompileOptions o;
  CompileResult r = compileSchedule(even, o);
  REQUIRE_FALSE(r.ok());
  const std::string &m = r.failure.error.message;
  CHECK(m.find("MSCCL has no 'coll' for the custom collective "
               "'even_allgather'") != std::string::npos);
  CHECK(m.find("--msccl-coll") != std::string::npos);
  CHECK(m.find("allgather") != std::string::npos);

  CompileResult g = compileAs(even, "gather");
  REQUIRE_FALSE(g.ok());
  CHECK(g.failure.error.message.find("does not size the buffers of "
                                     "'gather'") != std::string::npos);

  // A built-in collective keeps its own call.
  Schedule ring = shippedProgram("ring_allreduce", 4);
  CompileResult b = compileAs(ring, "allgather");
  REQUIRE_FALSE(b.ok());
  CHECK(b.failure.error.message.find("only a custom collective") !=
        std::string::npos);
  CHECK(compileAs(ring, "allreduce").ok());
}
