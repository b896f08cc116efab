//===- StepSimulatorTest.cpp - Timing of the lowered MSCCL program --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Qualitative facts the step-level model must show (more channels are
// faster than one threadblock, LL loses at 1 GB and wins at 1 KB, bounded
// buffers stall a sender, pipelining changes the program's time), its
// topology parameters, and the calibration table of docs/calibration.md:
// every published figure there is compared with the prediction for the
// NCCL-style ring program within the table's tolerance.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Perf/StepSimulator.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/DSL/Frontend.h"
#include "ccsynth/Support/Json.h"
#include "ccsynth/Target/CodeGen.h"
#include "ccsynth/Target/KernelKnobs.h"
#include "ccsynth/Target/MSCCLXml.h"

#include "Programs.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace ccsynth;
using namespace ccsynth::msccl;

namespace {

using test::shippedProgram;

/// The program `compile` writes for `s`.
Algo lower(const Schedule &s, int instances, const std::string &protocol,
           int pipeline = 1) {
  CompileOptions o;
  o.instances = instances;
  o.protocol = protocol;
  o.pipeline = pipeline;
  CompileResult r = compileSchedule(s, o);
  INFO((r.ok() ? std::string() : r.failure.error.format()));
  REQUIRE(r.ok());
  auto algo = parseXml("lowered.xml", *r.output);
  REQUIRE(algo.ok());
  return algo.take();
}

/// The program NCCL's kernel runs for `s`: lowered as for generated code
/// (no step table per threadblock to fit), in `protocol`.
Algo lowerNative(const Schedule &s, int instances,
                 const std::string &protocol) {
  CompileOptions o;
  o.instances = instances;
  o.protocol = protocol;
  o.target = CompileTarget::Cuda;
  o.programOnly = true;
  CompileResult r = compileSchedule(s, o);
  INFO((r.ok() ? std::string() : r.failure.error.format()));
  REQUIRE(r.ok());
  Algo algo = std::move(*r.program);
  algo.proto = protocol;
  return algo;
}

Topology machine(const std::string &name) {
  auto t = makeBuiltinTopology(name);
  REQUIRE(t.ok());
  return t.take();
}

StepSimResult timeIt(const Algo &algo, const Topology &topo, double bytes,
                     double factor = 1, bool bounded = true,
                     bool runtimeRules = true, bool interpreter = true) {
  StepSimOptions o;
  o.bytes = bytes;
  o.busBwFactor = factor;
  o.boundedBuffers = bounded;
  o.runtimeRules = runtimeRules;
  o.interpreter = interpreter;
  auto r = simulateSteps(algo, topo, o);
  INFO((r.ok() ? std::string() : r.error().format()));
  REQUIRE(r.ok());
  return *r;
}

constexpr double kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

} // namespace

TEST_CASE("one threadblock cannot fill an NVLink: channels change the time",
          "[stepsim]") {
  Topology a100 = machine("dgx-a100");
  Schedule ring = shippedProgram("ring_allgather", 8);
  double one = timeIt(lower(ring, 1, "Simple"), a100, kGiB).timeUs;
  double eight = timeIt(lower(ring, 8, "Simple"), a100, kGiB).timeUs;
  // The chunk-level model cannot tell them apart; here a single channel is
  // capped by one threadblock's throughput, far below the 300 GB/s port.
  CHECK(one > 3 * eight);
  // Twenty-four channels share the port: more channels stop helping.
  double many = timeIt(lower(ring, 24, "Simple"), a100, kGiB).timeUs;
  CHECK(many < eight);
  CHECK(many > 0.5 * eight);
}

TEST_CASE("a ring ReduceScatter keeps one threadblock per ring where two "
          "rings leave a rank for the same peer",
          "[stepsim]") {
  // Two of the eight rings on 2 x 8 H100 leave rank 0 for rank 2. Each
  // ring's hops are fused (rrcs) on the ring's own threadblock, as NCCL
  // runs them, so the ReduceScatter moves as fast as the AllGather over
  // the same rings instead of sharing a link with a second threadblock of
  // its own ring.
  Topology h100x2 = machine("dgx-h100x2");
  BaselineOptions inPlace;
  inPlace.inPlace = true;
  auto rs = makeBaseline(BaselineKind::Ring, CollectiveKind::ReduceScatter,
                         h100x2, inPlace);
  auto ag = makeBaseline(BaselineKind::Ring, CollectiveKind::AllGather, h100x2,
                         inPlace);
  REQUIRE(rs.ok());
  REQUIRE(ag.ok());
  Algo program = lower(*rs, 1, "Simple");
  for (const Gpu &g : program.gpus) {
    INFO("rank " << g.id);
    CHECK(g.tbs.size() == 8);
  }
  double rsBusbw = timeIt(program, h100x2, kGiB, 15.0 / 16).busbwGBps;
  double agBusbw =
      timeIt(lower(*ag, 1, "Simple"), h100x2, kGiB, 15.0 / 16).busbwGBps;
  CHECK(rsBusbw > 0.9 * agBusbw);
}

TEST_CASE("LL is slower than Simple at 1 GB and faster at small sizes",
          "[stepsim]") {
  Topology a100 = machine("dgx-a100");
  Schedule ring = shippedProgram("ring_allreduce", 8);
  for (int channels : {1, 16}) {
    INFO("channels " << channels);
    Algo simple = lower(ring, channels, "Simple");
    Algo ll = lower(ring, channels, "LL");
    Algo ll128 = lower(ring, channels, "LL128");
    CHECK(timeIt(ll, a100, kGiB).timeUs > timeIt(simple, a100, kGiB).timeUs);
    CHECK(timeIt(ll, a100, 8 * kKiB).timeUs <
          timeIt(simple, a100, 8 * kKiB).timeUs);
    CHECK(timeIt(ll, a100, kKiB).timeUs < timeIt(ll128, a100, kKiB).timeUs);
  }
  // With enough channels (24, as NCCL runs on this machine) the link
  // binds: LL moves half of it, LL128 120 of every 128 bytes.
  Algo simple = lower(ring, 24, "Simple"), ll = lower(ring, 24, "LL"),
       ll128 = lower(ring, 24, "LL128");
  double ts = timeIt(simple, a100, kGiB).timeUs,
         tl = timeIt(ll, a100, kGiB).timeUs,
         t128 = timeIt(ll128, a100, kGiB).timeUs;
  CHECK(tl > 1.6 * ts);
  CHECK(t128 > ts);
  CHECK(t128 < tl);
}

TEST_CASE("a program timed at several sizes at once is timed as at each "
          "alone, and refused where it would be alone",
          "[stepsim]") {
  Topology a100 = machine("dgx-a100");
  Algo ll = lower(shippedProgram("ring_allreduce", 8), 4, "LL");
  std::vector<StepSimOptions> perSize;
  for (double bytes : {kKiB, kMiB, kGiB}) {
    perSize.push_back({});
    perSize.back().bytes = bytes;
  }
  auto all = simulateStepsAt(ll, a100, perSize);
  REQUIRE(all.ok());
  REQUIRE(all->size() == perSize.size());
  for (size_t i = 0; i < perSize.size(); ++i)
    CHECK((*all)[i].timeUs == timeIt(ll, a100, perSize[i].bytes).timeUs);
  // The checks hold for every entry: options that change them differ.
  perSize[1].boundedBuffers = false;
  CHECK_FALSE(simulateStepsAt(ll, a100, perSize).ok());
  // A size that is no size fails as it does alone.
  perSize[1].boundedBuffers = true;
  perSize[2].bytes = -1;
  CHECK_FALSE(simulateStepsAt(ll, a100, perSize).ok());
}

TEST_CASE("pipelining changes the lowered program's time", "[stepsim]") {
  // A binomial-tree broadcast forwards a chunk only once it has arrived:
  // smaller parts let the children start sooner.
  Topology h100 = machine("dgx-h100");
  Schedule tree = shippedProgram("tree_broadcast", 8);
  double one = timeIt(lower(tree, 1, "Simple", 1), h100, 4 * kMiB).timeUs;
  double four = timeIt(lower(tree, 1, "Simple", 4), h100, 4 * kMiB).timeUs;
  CHECK(four < 0.9 * one);
  // At small sizes the extra steps' synchronization shows instead.
  double small1 = timeIt(lower(tree, 1, "Simple", 1), h100, 64 * kKiB).timeUs;
  double small4 = timeIt(lower(tree, 1, "Simple", 4), h100, 64 * kKiB).timeUs;
  CHECK(std::abs(small4 - small1) > 0.01 * small1);
}

TEST_CASE("reduction chains as trees on threadblocks of their own",
          "[stepsim]") {
  // A direct ReduceScatter on 8 H100s: each rank receives seven
  // contributions into scratch and adds them to its chunk one by one. On
  // one local threadblock the seven reductions run in a row; as a tree over
  // eight threadblocks they run three deep, side by side, and the round
  // trip through the XML still proves the collective.
  Topology h100 = machine("dgx-h100");
  auto direct =
      makeBaseline(BaselineKind::Direct, CollectiveKind::ReduceScatter, h100);
  REQUIRE(direct.ok());
  auto lowered = [&](int localTbs) {
    CompileOptions o;
    o.instances = 4;
    o.protocol = "Simple";
    o.fuse = false;
    o.localTbs = localTbs;
    o.checkRoundTrip = true;
    CompileResult r = compileSchedule(*direct, o);
    INFO((r.ok() ? std::string() : r.failure.error.format()));
    REQUIRE(r.ok());
    auto algo = parseXml("lowered.xml", *r.output);
    REQUIRE(algo.ok());
    return algo.take();
  };
  Algo chain = lowered(1), tree = lowered(8);
  auto localOf = [](const Algo &a) {
    int local = 0, reduces = 0;
    for (const Threadblock &tb : a.gpus[0].tbs) {
      local += tb.send < 0 && tb.recv < 0;
      for (const Step &st : tb.steps)
        reduces += st.type == StepType::Reduce;
    }
    return std::pair{local, reduces};
  };
  // The same 4 x 7 reductions per rank, on 4 threadblocks or on more.
  CHECK(localOf(chain) == std::pair{4, 28});
  CHECK(localOf(tree).first > 4);
  CHECK(localOf(tree).second == 28);
  double one = timeIt(chain, h100, kGiB).timeUs;
  double spread = timeIt(tree, h100, kGiB).timeUs;
  CHECK(spread < 0.7 * one);
}

namespace {

/// Rank 0 sends four one-chunk messages to rank 1 and copies four chunks
/// locally (sends first when `sendFirst`); rank 1 copies four chunks twice
/// and then receives the four messages.
Algo senderStall(bool sendFirst, const std::string &proto) {
  Algo a;
  a.name = "stall";
  a.proto = proto;
  a.nchannels = 1;
  a.nchunksperloop = 8;
  a.ngpus = 2;
  a.coll = "allreduce";
  auto step = [](int s, StepType t, BufferKind sb, int so, BufferKind db,
                 int dOff, int cnt) {
    Step st;
    st.s = s;
    st.type = t;
    st.srcBuf = sb;
    st.srcOff = so;
    st.dstBuf = db;
    st.dstOff = dOff;
    st.cnt = cnt;
    return st;
  };
  Gpu g0{0, 8, 8, 0, {}, {}};
  Threadblock t0{0, 1, -1, 0, {}, {}};
  std::vector<Step> sendsOf, copy;
  for (int i = 0; i < 4; ++i)
    sendsOf.push_back(step(0, StepType::Send, BufferKind::Input, i,
                           BufferKind::Output, -1, 1));
  copy.push_back(
      step(0, StepType::Copy, BufferKind::Input, 4, BufferKind::Output, 4, 4));
  if (sendFirst) {
    t0.steps = sendsOf;
    t0.steps.insert(t0.steps.end(), copy.begin(), copy.end());
  } else {
    t0.steps = copy;
    t0.steps.insert(t0.steps.end(), sendsOf.begin(), sendsOf.end());
  }
  for (int i = 0; i < (int)t0.steps.size(); ++i)
    t0.steps[i].s = i;
  g0.tbs.push_back(t0);
  Gpu g1{1, 8, 8, 0, {}, {}};
  Threadblock t1{0, -1, 0, 0, {}, {}};
  for (int i = 0; i < 2; ++i)
    t1.steps.push_back(step(i, StepType::Copy, BufferKind::Input, 4,
                            BufferKind::Output, 4, 4));
  for (int i = 0; i < 4; ++i)
    t1.steps.push_back(step(2 + i, StepType::Recv, BufferKind::Input, -1,
                            BufferKind::Output, i, 1));
  g1.tbs.push_back(t1);
  a.gpus = {g0, g1};
  return a;
}

} // namespace

TEST_CASE("bounded connection buffers stall a sender", "[stepsim]") {
  Topology fc = machine("fc:2");
  REQUIRE(validateAlgo(senderStall(true, "Simple")).empty());
  // One loop iteration (2 MiB per chunk). Simple: a connection holds two
  // one-chunk sends, so rank 0's third send waits for rank 1's first
  // receive, which comes after rank 1's copies; rank 0's own copy starts
  // late. Unbounded buffers would let all four sends go.
  double bytes = 16 * kMiB;
  Algo sendFirst = senderStall(true, "Simple");
  Algo copyFirst = senderStall(false, "Simple");
  double stalled = timeIt(sendFirst, fc, bytes).timeUs;
  double unbounded = timeIt(sendFirst, fc, bytes, 1, false).timeUs;
  CHECK(stalled > 1.15 * unbounded);
  // Copying first, rank 0 never finds the connection full.
  double b = timeIt(copyFirst, fc, bytes).timeUs;
  CHECK(std::abs(b - timeIt(copyFirst, fc, bytes, 1, false).timeUs) < 0.01 * b);
  // LL: one slot per send, eight per connection: all four sends fit.
  Algo ll = senderStall(true, "LL");
  double llTime = timeIt(ll, fc, bytes).timeUs;
  CHECK(std::abs(llTime - timeIt(ll, fc, bytes, 1, false).timeUs) <
        0.01 * llTime);
}

TEST_CASE("generated code: no MSCCL buffers, no LL", "[stepsim]") {
  Topology fc = machine("fc:2");
  double bytes = 16 * kMiB;
  auto gen = [&](const Algo &a, double tile) {
    StepSimOptions o;
    o.bytes = bytes;
    o.generatedCode = true;
    o.tileBytes = tile;
    auto r = simulateSteps(a, fc, o);
    REQUIRE(r.ok());
    return r->timeUs;
  };
  // The sender MSCCL's bounded buffers stall is not stalled: its puts have
  // landing places of their own.
  Algo sendFirst = senderStall(true, "Simple");
  double stalled = timeIt(sendFirst, fc, bytes).timeUs;
  CHECK(gen(sendFirst, 2 * kMiB) < stalled / 1.15);
  double whole = gen(sendFirst, 2 * kMiB);
  // The protocol of the XML does not matter: generated code has no LL.
  CHECK(gen(senderStall(true, "LL"), 2 * kMiB) == Approx(whole));
}

TEST_CASE("the critical path is a chain of waits that ends the program",
          "[stepsim][critical-path]") {
  Topology a100 = machine("dgx-a100");
  Schedule ring = shippedProgram("ring_allgather", 8);
  Algo algo = lower(ring, 2, "Simple");
  for (bool generated : {false, true}) {
    INFO("generated code: " << generated);
    StepSimOptions o;
    o.bytes = 4 * kMiB;
    o.generatedCode = generated;
    o.tileBytes = 64 * kKiB;
    auto plain = simulateSteps(algo, a100, o);
    REQUIRE(plain.ok());
    CHECK(plain->criticalPath.empty());
    o.criticalPath = true;
    auto traced = simulateSteps(algo, a100, o);
    REQUIRE(traced.ok());
    // Recording it changes nothing of the timing.
    CHECK(traced->timeUs == plain->timeUs);
    REQUIRE(traced->simulated == traced->iterations);
    const std::vector<CriticalStep> &path = traced->criticalPath;
    REQUIRE(path.size() > 2);
    // It ends where the program ends (no extrapolated passes here) ...
    CHECK(path.front().endUs ==
          Approx(traced->timeUs - traced->launchUs).margin(1e-9));
    // ... and each step starts when what it waited for ended, or, for a
    // message, after it (its latency), back to a step that waited for none.
    CHECK(path.back().after == CriticalStep::After::Nothing);
    bool crossesRanks = false;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      const CriticalStep &c = path[i], &before = path[i + 1];
      INFO("step " << i << " waits for " << toString(c.after));
      CHECK(c.endUs >= c.startUs);
      switch (c.after) {
      case CriticalStep::After::Arrival:
      case CriticalStep::After::Slices:
        CHECK(c.startUs > before.endUs);
        CHECK(c.rank != before.rank);
        break;
      case CriticalStep::After::Nothing:
        FAIL("only the first step waits for nothing");
        break;
      default:
        CHECK(c.startUs == Approx(before.endUs).margin(1e-9));
      }
      if (c.after == CriticalStep::After::Order)
        CHECK((c.rank == before.rank && c.tb == before.tb));
      crossesRanks |= c.rank != before.rank;
    }
    // A ring passes its data from rank to rank (its messages, or room for
    // them at the next rank).
    CHECK(crossesRanks);
    // Sends carry their threadblock's share of the link.
    CHECK(std::any_of(path.begin(), path.end(),
                      [](const CriticalStep &c) { return c.rateGBps > 0; }));
  }
}

TEST_CASE("generated code: kernel knobs scale a threadblock's throughput",
          "[stepsim][knobs]") {
  using namespace ccsynth::codegen;
  Topology h100 = machine("dgx-h100");
  CHECK(h100.stepModel.smArch == 90);
  CHECK(machine("dgx-a100").stepModel.smArch == 80);
  // Little's law: bytes in flight over what the model's figures need.
  const StepModel &m = h100.stepModel;
  CHECK(kernelKnobScale({90, 256, 8}, m) == 1);
  CHECK(kernelKnobScale({90, 256, 4}, m) == Approx(16384 / m.tbInFlightBytes));
  CHECK(kernelKnobScale({90, 256, 2}, m) ==
        Approx(kernelKnobScale({90, 256, 4}, m) / 2));
  CHECK(kernelKnobScale({90, 512, 4}, m) == 1);
  CHECK(validKernelKnob(defaultKernelKnob(80)));
  CHECK(!validKernelKnob({90, 100, 8}));
  CHECK(!validKernelKnob({90, 256, 3}));
  CHECK(!validKernelKnob({90, 2048, 1}));
  for (const KernelKnob &k : kernelKnobCandidates(90))
    CHECK(validKernelKnob(k));
  // The entry code for an architecture runs with: the largest at or below.
  std::vector<KernelKnob> table{{80, 256, 4}, {90, 256, 8}};
  CHECK(kernelKnobEntry(table, 90) == 1);
  CHECK(kernelKnobEntry(table, 100) == 1);
  CHECK(kernelKnobEntry(table, 86) == 0);
  CHECK(kernelKnobEntry(table, 70) == -1);

  // A ring on one H100 node, as generated code runs it: fewer bytes in
  // flight than the model needs slow the large size down, not the small.
  auto ring = makeBaseline(BaselineKind::Ring, CollectiveKind::AllGather, h100,
                           BaselineOptions{});
  REQUIRE(ring.ok());
  Algo a = lower(*ring, 1, "Simple");
  auto gen = [&](double bytes, double scale) {
    StepSimOptions o;
    o.bytes = bytes;
    o.generatedCode = true;
    o.tbScale = scale;
    auto r = simulateSteps(a, h100, o);
    REQUIRE(r.ok());
    return r->timeUs;
  };
  double full = gen(1 << 30, 1), half = gen(1 << 30, 0.5);
  CHECK(half > full * 1.5);
  CHECK(gen(1024, 0.5) < gen(1024, 1) * 1.05);
  StepSimOptions bad;
  bad.generatedCode = true;
  bad.tbScale = 0;
  CHECK(!simulateSteps(a, h100, bad).ok());
}

TEST_CASE("generated code lists its kernel knobs per architecture",
          "[codegen][knobs]") {
  using namespace ccsynth::codegen;
  Topology t = machine("ring:4");
  auto ring = makeBaseline(BaselineKind::Ring, CollectiveKind::AllGather, t,
                           BaselineOptions{});
  REQUIRE(ring.ok());
  CompileOptions o;
  o.target = CompileTarget::Cuda;
  o.kernelKnobs = {{90, 128, 2}, {80, 256, 4}};
  CompileResult r = compileSchedule(*ring, o);
  INFO((r.ok() ? std::string() : r.failure.error.format()));
  REQUIRE(r.ok());
  // Sorted by architecture, as the runtime's knobsFor expects.
  CHECK(r.output->find("kernelKnobs[2] = {{80, 256, 4}, {90, 128, 2}};") !=
        std::string::npos);
  o.kernelKnobs = {};
  r = compileSchedule(*ring, o);
  REQUIRE(r.ok());
  CHECK(r.output->find("kernelKnobs[2] = {{80, 256, 8}, {90, 256, 8}};") !=
        std::string::npos);
  o.kernelKnobs = {{90, 256, 3}};
  CHECK(!compileSchedule(*ring, o).ok());
  o.kernelKnobs = {{90, 256, 8}, {90, 256, 4}};
  CHECK(!compileSchedule(*ring, o).ok());
}

TEST_CASE("a program that deadlocks on bounded buffers is refused",
          "[stepsim]") {
  // Both ranks send three chunks before receiving any (Simple: two fit).
  Algo a;
  a.name = "swap";
  a.proto = "Simple";
  a.nchunksperloop = 8;
  a.ngpus = 2;
  a.coll = "allreduce";
  for (int r = 0; r < 2; ++r) {
    Gpu g{r, 8, 8, 0, {}, {}};
    Threadblock tb{0, 1 - r, 1 - r, 0, {}, {}};
    for (int i = 0; i < 6; ++i) {
      Step st;
      st.s = i;
      st.type = i < 3 ? StepType::Send : StepType::Recv;
      st.srcBuf = BufferKind::Input;
      st.srcOff = i < 3 ? i : -1;
      st.dstBuf = BufferKind::Output;
      st.dstOff = i < 3 ? -1 : i - 3;
      tb.steps.push_back(st);
    }
    g.tbs.push_back(tb);
    a.gpus.push_back(g);
  }
  auto r = simulateSteps(a, machine("fc:2"), {});
  REQUIRE(!r.ok());
  CHECK(r.error().message.find("deadlock") != std::string::npos);
  a.proto = "LL"; // eight one-slot sends fit
  CHECK(simulateSteps(a, machine("fc:2"), {}).ok());
}

TEST_CASE("per-threadblock throughput and protocol costs are topology "
          "parameters",
          "[stepsim]") {
  Schedule ring = shippedProgram("ring_allgather", 8);
  Algo one = lower(ring, 1, "Simple");
  Topology a100 = machine("dgx-a100");
  Topology fast = a100;
  for (double &g : fast.stepModel.tbCopyGBps)
    g *= 2;
  double base = timeIt(one, a100, kGiB).timeUs;
  CHECK(timeIt(one, fast, kGiB).timeUs < 0.6 * base);
  Topology slowSync = a100;
  slowSync.stepModel.stepUs[0] += 10;
  CHECK(timeIt(one, slowSync, kKiB).timeUs >
        timeIt(one, a100, kKiB).timeUs + 7 * 9);
  // The built-in generations differ.
  CHECK(machine("dgx-h100").stepModel.tbCopyGBps[0] >
        machine("dgx-a100").stepModel.tbCopyGBps[0]);
}

TEST_CASE("step_model in topology JSON", "[stepsim][formats]") {
  Topology t = machine("ring:4");
  std::string text = topologyToJson(t);
  CHECK(text.find("\"step_model\"") != std::string::npos);
  std::string edited = text;
  size_t at = edited.find("\"link_efficiency\":");
  REQUIRE(at != std::string::npos);
  edited.replace(at, std::string("\"link_efficiency\":").size(),
                 "\"link_efficiency\":0.5,\"ignored_before\":");
  // Unknown key: rejected with a location.
  auto bad = JsonDocument::parse("t.json", edited);
  REQUIRE(bad.ok());
  auto badTopo = parseTopologyJson(*bad);
  REQUIRE(!badTopo.ok());
  CHECK(badTopo.error().loc.line > 0);

  std::string custom = text;
  size_t sm = custom.find("\"step_model\"");
  custom = custom.substr(0, sm) +
           "\"step_model\": {\"launch_us\": {\"LL\": 3},"
           " \"threadblock_copy_gbps\": {\"Simple\": 50}}\n}\n";
  auto doc = JsonDocument::parse("t.json", custom);
  REQUIRE(doc.ok());
  auto parsed = parseTopologyJson(*doc);
  INFO((parsed ? std::string() : parsed.error().format()));
  REQUIRE(parsed.ok());
  CHECK(parsed->stepModel.launchUs[2] == 3);
  CHECK(parsed->stepModel.tbCopyGBps[0] == 50);
  CHECK(parsed->stepModel.launchUs[0] == t.stepModel.launchUs[0]);
  // The hash covers links and resources, not the step model.
  CHECK(topologyHash(*parsed) == topologyHash(t));

  std::string negative = text.substr(0, sm) +
                         "\"step_model\": {\"step_us\": {\"Simple\": -1}}\n}\n";
  auto negDoc = JsonDocument::parse("t.json", negative);
  REQUIRE(negDoc.ok());
  auto neg = parseTopologyJson(*negDoc);
  REQUIRE(!neg.ok());
  CHECK(neg.error().message.find("us") != std::string::npos);

  // The GPU's architecture and the bytes a threadblock keeps in flight
  // round-trip; a fractional architecture is refused with its location.
  std::string gpu = text.substr(0, sm) +
                    "\"step_model\": {\"sm_arch\": 90, "
                    "\"threadblock_in_flight_bytes\": 40000}\n}\n";
  auto gpuDoc = JsonDocument::parse("t.json", gpu);
  REQUIRE(gpuDoc.ok());
  auto withGpu = parseTopologyJson(*gpuDoc);
  REQUIRE(withGpu.ok());
  CHECK(withGpu->stepModel.smArch == 90);
  CHECK(withGpu->stepModel.tbInFlightBytes == 40000);
  auto again = JsonDocument::parse("t.json", topologyToJson(*withGpu));
  REQUIRE(again.ok());
  auto reparsed = parseTopologyJson(*again);
  REQUIRE(reparsed.ok());
  CHECK(reparsed->stepModel.smArch == 90);
  CHECK(reparsed->stepModel.tbInFlightBytes == 40000);
  std::string frac =
      text.substr(0, sm) + "\"step_model\": {\"sm_arch\": 85.5}\n}\n";
  auto fracDoc = JsonDocument::parse("t.json", frac);
  REQUIRE(fracDoc.ok());
  auto fracTopo = parseTopologyJson(*fracDoc);
  REQUIRE(!fracTopo.ok());
  CHECK(fracTopo.error().message.find("sm_arch") != std::string::npos);
  CHECK(fracTopo.error().loc.line > 0);
}

namespace {

struct CalibrationRow {
  std::string id, machine, collective, size, metric, protocol, program, set;
  double published = 0;
  int channels = 0;
};

std::vector<std::string> cells(const std::string &line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  std::getline(ss, cell, '|'); // before the first bar
  while (std::getline(ss, cell, '|')) {
    size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
    out.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  if (!out.empty() && out.back().empty())
    out.pop_back();
  return out;
}

/// The rows between the calibration-table markers of docs/calibration.md.
std::vector<CalibrationRow> calibrationRows() {
  std::ifstream in(std::string(CCSYNTH_SOURCE_DIR) + "/docs/calibration.md");
  REQUIRE(in.good());
  std::vector<CalibrationRow> rows;
  std::string line;
  bool inTable = false;
  while (std::getline(in, line)) {
    if (line.find("<!-- calibration-table:begin -->") != std::string::npos) {
      inTable = true;
      continue;
    }
    if (line.find("<!-- calibration-table:end -->") != std::string::npos)
      break;
    if (!inTable || line.rfind("| ", 0) != 0 || line.find("---") == 2)
      continue;
    std::vector<std::string> c = cells(line);
    if (c.size() < 9 || c[0] == "id")
      continue;
    CalibrationRow r;
    r.id = c[0];
    r.machine = c[1];
    r.collective = c[2];
    r.size = c[3];
    r.published = std::stod(c[4]);
    r.metric = c[5];
    r.protocol = c[6];
    r.channels = std::stoi(c[7]);
    r.program = c.size() > 9 ? c[9] : "dsl ring";
    r.set = c.size() > 10 ? c[10] : "";
    rows.push_back(r);
  }
  return rows;
}

double sizeBytes(const std::string &s) {
  double v = std::stod(s);
  char unit = s.back();
  return unit == 'K'   ? v * kKiB
         : unit == 'M' ? v * kMiB
         : unit == 'G' ? v * kGiB
                       : v;
}

} // namespace

TEST_CASE("the step-level model meets every published figure of the "
          "calibration table within 15%",
          "[stepsim][calibration]") {
  std::vector<CalibrationRow> rows = calibrationRows();
  REQUIRE(rows.size() >= 6);
  std::set<std::string> machines;
  for (const CalibrationRow &row : rows) {
    INFO(row.id << ": " << row.collective << " " << row.size << " on "
                << row.machine << ", " << row.protocol << ", " << row.channels
                << " channels, published " << row.published << " "
                << row.metric);
    machines.insert(row.machine);
    Topology topo = machine(row.machine);
    auto family = row.program.rfind("baseline ", 0) == 0
                      ? parseBaselineKind(row.program.substr(9))
                      : std::nullopt;
    if (family && *family != BaselineKind::Ring) {
      // NCCL's NVLS and CollNet: the nvls, collnet or nvls-sharp baseline,
      // timed by the in-network runtime model (switch operations have no
      // step program).
      auto kind = parseCollectiveKind(row.collective);
      REQUIRE(kind.has_value());
      auto b = makeBaseline(*family, *kind, topo);
      REQUIRE(b.ok());
      auto r = simulateInNetworkRuntime(*b, topo, {sizeBytes(row.size)});
      REQUIRE(r.ok());
      REQUIRE(row.metric == "busbw GB/s");
      double busbw = r->front().busbwGBps;
      INFO("predicted " << busbw);
      CHECK(std::abs(busbw - row.published) <= 0.15 * row.published);
      continue;
    }
    auto collective = parseCollectiveKind(row.collective);
    REQUIRE(collective.has_value());
    Schedule ring;
    int instances = row.channels;
    if (row.program == "baseline ring") {
      // NCCL's rings on the machine: the ring baseline (one ring per
      // NVLink lane of each GPU), each ring one channel per instance.
      auto b = makeBaseline(BaselineKind::Ring, *collective, topo);
      REQUIRE(b.ok());
      ring = b.take();
      std::set<int> rings;
      for (const Transfer &t : ring.transfers)
        rings.insert(t.channel);
      REQUIRE(row.channels % (int)rings.size() == 0);
      instances = row.channels / (int)rings.size();
    } else if (row.program == "msccl ring-channels") {
      // MSCCL's own ring program for ND H100 v5, rebuilt: one ring, 64
      // chunks per loop over 32 channels, timed as MSCCL's interpreter
      // runs it.
      REQUIRE(*collective == CollectiveKind::AllReduce);
      ring = test::lowerProgram(std::string(CCSYNTH_SOURCE_DIR) +
                                    "/sketches/dsl/ring_allreduce_channels.ccl",
                                {{"ranks", 8}, {"parts", 8}, {"channels", 32}});
      instances = 1;
    } else {
      REQUIRE(row.program == "dsl ring");
      REQUIRE((*collective == CollectiveKind::AllReduce ||
               *collective == CollectiveKind::AllGather));
      ring = shippedProgram(row.collective == "allreduce" ? "ring_allreduce"
                                                          : "ring_allgather",
                            8);
    }
    // A ring longer than MSCCL's 64 steps per threadblock runs as NCCL's
    // kernel runs it, on one threadblock per ring and channel (the tuned
    // compile's ncclNativeUs). Every row but MSCCL's own programs is a
    // measurement of NCCL's kernel: no interpreter costs.
    bool longRing = ring.collective.numRanks > kMaxSteps;
    bool mscclRow = row.program.rfind("msccl ", 0) == 0;
    Algo algo = longRing ? lowerNative(ring, instances, row.protocol)
                         : lower(ring, instances, row.protocol);
    StepSimResult r =
        timeIt(algo, topo, sizeBytes(row.size), ring.collective.busBwFactor(),
               true, !longRing, mscclRow);
    double predicted = row.metric == "us" ? r.timeUs : r.busbwGBps;
    INFO("predicted " << predicted);
    REQUIRE((row.metric == "us" || row.metric == "busbw GB/s"));
    CHECK(std::abs(predicted - row.published) <= 0.15 * row.published);
  }
  CHECK(machines.count("dgx-a100") == 1);
  CHECK(machines.count("dgx-h100") == 1);
  CHECK(machines.count("dgx1") == 1);
}

TEST_CASE("the calibrated small-size figures of H100 stay where they were "
          "fitted",
          "[stepsim][calibration]") {
  // The fitted H100 constants (BuiltinTopologies.cpp, docs/calibration.md
  // "Small sizes on H100") give these figures; a change to the model that
  // moves one by more than 1% shows here before it shows in the 15% check.
  Topology h100 = machine("dgx-h100");
  Schedule ar = shippedProgram("ring_allreduce", 8);
  auto nccl = [&](int channels, double bytes) {
    return timeIt(lower(ar, channels, "LL"), h100, bytes,
                  ar.collective.busBwFactor(), true, true, false)
        .timeUs;
  };
  CHECK(nccl(1, kKiB) == Approx(14.14).epsilon(0.01));
  CHECK(nccl(1, 32 * kKiB) == Approx(19.93).epsilon(0.01));
  Schedule msccl =
      test::lowerProgram(std::string(CCSYNTH_SOURCE_DIR) +
                             "/sketches/dsl/ring_allreduce_channels.ccl",
                         {{"ranks", 8}, {"parts", 8}, {"channels", 32}});
  auto mscclUs = [&](const char *protocol, double bytes) {
    return timeIt(lower(msccl, 1, protocol), h100, bytes).timeUs;
  };
  CHECK(mscclUs("LL", kMiB) == Approx(22.46).epsilon(0.01));
  CHECK(mscclUs("LL128", 16 * kMiB) == Approx(114.84).epsilon(0.01));
  // MSCCL's interpreter costs what NCCL's kernel does not: the same LL
  // program is slower as MSCCL runs it.
  double asNccl =
      timeIt(lower(msccl, 1, "LL"), h100, kMiB, 1, true, true, false).timeUs;
  CHECK(asNccl < mscclUs("LL", kMiB));
}
