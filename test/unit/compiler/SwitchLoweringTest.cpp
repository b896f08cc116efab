// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the lowering of switch operations to generated code:
// switch threadblocks per rank and lane, chains kept together, steps
// joined, every refusal named, and the generated code's barriers.
#include "ccsynth/Target/SwitchLowering.h"
#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Baselines/InNetworkMix.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Target/CodeGen.h"
#include "ccsynth/Perf/StepSimulator.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>

using namespace ccsynth;
using namespace ccsynth::msccl;

namespace {

constexpr BufferKind I = BufferKind::Input, O = BufferKind::Output;

Transfer switchOp(TransferOp op, int step, ChunkLoc src, ChunkLoc dst,
                  int sw = 0) {
  Transfer t;
  t.op = op;
  t.step = step;
  t.src = src;
  t.dst = dst;
  t.sw = sw;
  return t;
}

/// NVLS AllReduce on n ranks with chunk factor n * k: rank r reduces its
/// k chunks r*k.. of every input into its output (step 0) and multicasts
/// them (step 1).
Schedule nvlsAllReduce(int n, int k) {
  Schedule s;
  s.collective = *Collective::builtin(CollectiveKind::AllReduce, n, n * k);
  for (int r = 0; r < n; ++r)
    for (int c = r * k; c < (r + 1) * k; ++c)
      for (int j = 0; j < n; ++j)
        s.transfers.push_back(
            switchOp(TransferOp::SwitchReduce, 0, {j, I, c}, {r, O, c}));
  for (int r = 0; r < n; ++r)
    for (int c = r * k; c < (r + 1) * k; ++c)
      for (int j = 0; j < n; ++j)
        if (j != r)
          s.transfers.push_back(
              switchOp(TransferOp::Multicast, 1, {r, O, c}, {j, O, c}));
  return s;
}

/// A program of `ranks` ranks without threadblocks (switch threadblocks
/// are attached to it).
Algo emptyProgram(int ranks, int chunks = 0) {
  Algo algo;
  algo.ngpus = ranks;
  algo.nchunksperloop = std::max(1, chunks);
  for (int r = 0; r < ranks; ++r) {
    Gpu g;
    g.id = r;
    g.iChunks = g.oChunks = chunks;
    algo.gpus.push_back(g);
  }
  return algo;
}

/// NCCL's NVLS AllReduce on a built-in machine, and its lowering.
struct NvlsCase {
  std::optional<Topology> topo;
  std::optional<Schedule> schedule;
  std::optional<SwitchLowering> lowering;
};
NvlsCase nvlsAllReduceOn(const char *machine) {
  NvlsCase c;
  auto topo = makeBuiltinTopology(machine);
  REQUIRE(topo.ok());
  c.topo = topo.take();
  auto s = makeBaseline(BaselineKind::Nvls, CollectiveKind::AllReduce, *c.topo);
  REQUIRE(s.ok());
  c.schedule = s.take();
  auto l = lowerSwitchTransfers(*c.schedule);
  REQUIRE(l.ok());
  c.lowering = l.take();
  return c;
}

/// ccsynth's NVLS with rail exchanges (phased) on `machine`.
Schedule railExchanges(const char *machine) {
  auto topo = makeBuiltinTopology(machine);
  REQUIRE(topo.ok());
  auto s = makeNvlsRails(*topo, {}, false, RailAllReduce::Direct);
  REQUIRE(s.ok());
  return s.take();
}

std::string refusal(const Schedule &s) {
  auto l = lowerSwitchTransfers(s);
  REQUIRE_FALSE(l.ok());
  return l.error().message;
}

/// `s`'s switch operations lowered on `lanes` lanes and attached to an
/// empty program of `chunks` chunks.
Algo switchProgram(const Schedule &s, int lanes, int chunks) {
  auto l = lowerSwitchTransfers(s, lanes);
  REQUIRE(l.ok());
  Algo algo = emptyProgram(s.collective.numRanks, chunks);
  REQUIRE(attachSwitchThreadblocks(algo, *l).ok());
  return algo;
}

/// Code generation of `algo`, the program of NVLS AllReduce `s` ("nvls").
codegen::CodeGenInput nvlsCodeInput(const Algo &algo, const Schedule &s) {
  codegen::CodeGenInput in;
  in.algo = &algo;
  in.collective = &s.collective;
  in.name = "nvls";
  in.collectiveName = "allreduce";
  return in;
}

} // namespace

TEST_CASE("switch lowering: NVLS AllReduce becomes one switch threadblock "
          "per lane and rank, chains kept whole",
          "[switch-lowering]") {
  Schedule s = nvlsAllReduce(4, 4);
  SECTION("one lane: each rank's reductions and multicasts joined") {
    auto l = lowerSwitchTransfers(s, 1);
    REQUIRE(l.ok());
    CHECK(l->operations == 32);
    CHECK(l->pointToPoint.transfers.empty());
    REQUIRE(l->threadblocks.size() == 4);
    for (int r = 0; r < 4; ++r) {
      REQUIRE(l->threadblocks[r].size() == 1);
      const Threadblock &tb = l->threadblocks[r][0];
      CHECK(tb.switchId == 0);
      CHECK(tb.group == std::vector<int>{0, 1, 2, 3});
      REQUIRE(tb.steps.size() == 2);
      CHECK(tb.steps[0].type == StepType::SwitchReduce);
      CHECK(tb.steps[0].srcBuf == I);
      CHECK(tb.steps[0].srcOff == 4 * r);
      CHECK(tb.steps[0].dstOff == 4 * r);
      CHECK(tb.steps[0].cnt == 4);
      CHECK(tb.steps[1].type == StepType::Multicast);
      CHECK(tb.steps[1].srcBuf == O);
      CHECK(tb.steps[1].dstBuf == O);
      CHECK(tb.steps[1].cnt == 4);
    }
  }
  SECTION("two lanes: each takes two whole chains, in order") {
    auto l = lowerSwitchTransfers(s, 2);
    REQUIRE(l.ok());
    for (int r = 0; r < 4; ++r) {
      REQUIRE(l->threadblocks[r].size() == 2);
      for (int lane = 0; lane < 2; ++lane) {
        const Threadblock &tb = l->threadblocks[r][lane];
        CHECK(tb.switchLane == lane);
        REQUIRE(tb.steps.size() == 2);
        CHECK(tb.steps[0].type == StepType::SwitchReduce);
        CHECK(tb.steps[0].srcOff == 4 * r + 2 * lane);
        CHECK(tb.steps[0].cnt == 2);
        CHECK(tb.steps[1].type == StepType::Multicast);
        CHECK(tb.steps[1].srcOff == 4 * r + 2 * lane);
      }
    }
  }
  SECTION("more lanes than chains: one per chain") {
    auto l = lowerSwitchTransfers(s, 64);
    REQUIRE(l.ok());
    CHECK(l->threadblocks[0].size() == 4);
  }
}

TEST_CASE("switch lowering: the generated code meets in barriers of its own "
          "flags and reduces through the switch",
          "[switch-lowering]") {
  Schedule s = nvlsAllReduce(4, 2);
  Algo algo = switchProgram(s, 2, 8);
  CHECK(hasSwitchThreadblocks(algo));
  CHECK(algo.gpus[3].tbs[1].id == 1);
  codegen::CodeGenInput in = nvlsCodeInput(algo, s);
  in.shareRanks = false;
  auto code = codegen::generateCode(in);
  REQUIRE(code.ok());
  const std::string &src = code->source;
  CHECK(src.find("CCSYNTH_TABLE int kSwitchRanks[1][4] = {\n    {0, 1, 2, "
                 "3}};") != std::string::npos);
  CHECK(src.find("x.switchJoin(") != std::string::npos);
  CHECK(src.find("x.switchReduce(In, 0, 0, Out, 0, 0, 1);") !=
        std::string::npos);
  CHECK(src.find("x.multicast(Out, 0, 0, Out, 0, 0, 1);") != std::string::npos);
  CHECK(src.find("switchReadsInput = true") != std::string::npos);
  // Two barriers of 3 peers per lane: 12 data flags per rank.
  CHECK(src.find(", 0, 0, 12, 0, 2, 2, false,") != std::string::npos);
  // Every rank numbers each lane's barrier flags from the same base (lane
  // 0 from 0, lane 1 from 6), so each barrier is the runtime's loop over
  // the group: one line, no flag per peer.
  for (const char *barrier : {"x.switchBarrier(2, 0)", "x.switchBarrier(2, 3)",
                              "x.switchBarrier(2, 6)", "x.switchBarrier(2, 9)"})
    CHECK(src.find(barrier) != std::string::npos);
  CHECK(src.find("x.signal(") == std::string::npos);
  // The same lane of every rank is then one function.
  in.shareRanks = true;
  auto shared = codegen::generateCode(in);
  REQUIRE(shared.ok());
  CHECK(shared->stats.functions == 2);
  CHECK(shared->stats.sharedFunctions == 2);
}

TEST_CASE("generated code serves several byte ranges under one descriptor "
          "each",
          "[switch-lowering]") {
  Schedule s = nvlsAllReduce(4, 1);
  Algo algo = switchProgram(s, 1, 4);
  codegen::CodeGenInput in = nvlsCodeInput(algo, s);
  in.minBytes = 1024;
  in.maxBytes = 4095;
  in.moreRanges = {{65536, 262143}, {1 << 20, 0}};
  auto code = codegen::generateCode(in);
  REQUIRE(code.ok());
  const std::string &src = code->source;
  CHECK(src.find("minBytes = 1024ull, maxBytes = 4095ull;") !=
        std::string::npos);
  CHECK(src.find("CCSYNTH_DEFINE_ALGORITHM(ccsynth_gen_nvls::Algo, nvls)\n"
                 "CCSYNTH_DEFINE_ALGORITHM_RANGE(ccsynth_gen_nvls::Algo, "
                 "nvls_range2, 65536ull, 262143ull)\n"
                 "CCSYNTH_DEFINE_ALGORITHM_RANGE(ccsynth_gen_nvls::Algo, "
                 "nvls_range3, 1048576ull, 0ull)\n#endif") !=
        std::string::npos);
  // Ranges must ascend without overlap, after a bounded first one.
  for (auto bad : std::vector<std::vector<codegen::ByteRange>>{
           {{4095, 8191}}, {{1 << 20, 0}, {1 << 22, 0}}, {{8192, 4096}}}) {
    in.moreRanges = bad;
    auto refused = codegen::generateCode(in);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error().message,
               Catch::Contains("is empty or not above the one before it"));
  }
  // A range with its own tile: the same code under a tiled descriptor (its
  // tile equal to the program's: a plain one); tiles are multiples of 16.
  in.tileBytes = 65536;
  in.moreRanges = {{65536, 262143, 16384}, {1 << 20, 0, 65536}};
  auto tiled = codegen::generateCode(in);
  REQUIRE(tiled.ok());
  CHECK(tiled->source.find(
            "CCSYNTH_DEFINE_ALGORITHM_TILED(ccsynth_gen_nvls::Algo, "
            "nvls_range2, 65536ull, 262143ull, 16384ull)\n"
            "CCSYNTH_DEFINE_ALGORITHM_RANGE(ccsynth_gen_nvls::Algo, "
            "nvls_range3, 1048576ull, 0ull)\n#endif") != std::string::npos);
  // The code itself does not depend on the tile: only the constant and
  // the descriptors differ.
  auto body = [](const std::string &text) {
    std::string out;
    size_t at = 0;
    while (at < text.size()) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos)
        end = text.size();
      std::string line = text.substr(at, end - at);
      if (line.rfind("#if defined(CCSYNTH_PLUGIN)", 0) == 0)
        break;
      if (line.find("tileBytes =") == std::string::npos)
        out += line + "\n";
      at = end + 1;
    }
    return out;
  };
  CHECK(body(tiled->source) == body(src));
  in.moreRanges = {{65536, 262143, 1000}};
  auto badTile = codegen::generateCode(in);
  REQUIRE_FALSE(badTile.ok());
  CHECK_THAT(badTile.error().message,
             Catch::Contains("tile bytes must be a positive multiple of 16"));
  in.moreRanges = {{8192, 0}};
  in.maxBytes = 0;
  CHECK_FALSE(codegen::generateCode(in).ok());
}

TEST_CASE("switch lowering refuses what its synchronization cannot order",
          "[switch-lowering]") {
  SECTION("two addresses in one operation") {
    Schedule s = nvlsAllReduce(4, 1);
    s.transfers[1].src.index = 3;
    CHECK_THAT(refusal(s), Catch::Contains("one address on every rank"));
  }
  SECTION("a reduction without the issuer's own operand") {
    Schedule s = nvlsAllReduce(4, 1);
    s.transfers.erase(s.transfers.begin()); // rank 0's own contribution
    CHECK_THAT(refusal(s), Catch::Contains("adds no operand of its own"));
  }
  SECTION("operations of one switch over different ranks") {
    Schedule s;
    s.collective = *Collective::builtin(CollectiveKind::AllReduce, 4, 4);
    for (int j = 0; j < 4; ++j)
      s.transfers.push_back(
          switchOp(TransferOp::SwitchReduce, 0, {j, I, 0}, {0, O, 0}));
    for (int j = 1; j < 3; ++j)
      s.transfers.push_back(
          switchOp(TransferOp::SwitchReduce, 0, {j, I, 1}, {1, O, 1}));
    CHECK_THAT(refusal(s), Catch::Contains("every operation of a switch spans "
                                           "the same ranks"));
  }
  SECTION("two ranks issuing operations on one chunk") {
    Schedule s = nvlsAllReduce(4, 1);
    // Rank 1 also multicasts chunk 0, which rank 0 reduces and multicasts.
    for (int j = 0; j < 4; ++j)
      if (j != 1)
        s.transfers.push_back(
            switchOp(TransferOp::Multicast, 2, {1, O, 0}, {j, O, 0}));
    CHECK_THAT(refusal(s), Catch::Contains("are not ordered"));
  }
  SECTION("a point-to-point transfer on a chunk the switch writes on a rank "
          "that does not issue it") {
    Schedule s = nvlsAllReduce(4, 1);
    Transfer t;
    t.op = TransferOp::Copy;
    t.step = 2;
    t.src = {1, O, 0}; // rank 0's multicast wrote it
    t.dst = {2, O, 1};
    s.transfers.push_back(t);
    CHECK_THAT(refusal(s), Catch::Contains("only on their issuing rank"));
  }
  SECTION("a point-to-point transfer at the switch operation's step") {
    Schedule s = nvlsAllReduce(4, 1);
    Transfer t;
    t.op = TransferOp::Copy;
    t.step = 1; // rank 0's multicast reads o[0] at step 1 too
    t.src = {3, O, 3};
    t.dst = {0, O, 0};
    s.transfers.push_back(t);
    CHECK_THAT(refusal(s), Catch::Contains("at the same step (1)"));
  }
}

TEST_CASE("switch lowering: the step model times NCCL's NVLS AllReduce as "
          "generated code at the in-network runtime model's speed",
          "[switch-lowering]") {
  auto [topo, s, l] = nvlsAllReduceOn("dgx-h100");
  Algo algo = emptyProgram(8, s->collective.inputChunks);
  REQUIRE(attachSwitchThreadblocks(algo, *l).ok());
  StepSimOptions so;
  so.bytes = 1 << 30;
  so.busBwFactor = s->collective.busBwFactor();
  so.generatedCode = true;
  auto steps = simulateSteps(algo, *topo, so);
  REQUIRE(steps.ok());
  auto runtime = simulateInNetworkRuntime(*s, *topo, {so.bytes});
  REQUIRE(runtime.ok());
  double ratio = (*runtime)[0].timeUs / steps->timeUs;
  INFO("generated code " << steps->timeUs << " us, runtime model "
                         << (*runtime)[0].timeUs << " us");
  CHECK(ratio > 0.95);
  CHECK(ratio < 1.05);
  // Twice the lanes' data through the same switch takes about twice as
  // long: the switch's throughput binds, not the threadblocks.
  so.bytes = 2.0 * (1 << 30);
  auto twice = simulateSteps(algo, *topo, so);
  REQUIRE(twice.ok());
  CHECK(twice->timeUs > 1.9 * steps->timeUs - 50);
  // MSCCL's interpreter has no switch threadblocks.
  so.generatedCode = false;
  so.runtimeRules = false;
  auto refused = simulateSteps(algo, *topo, so);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message,
             Catch::Contains("which only generated code runs"));
}

TEST_CASE("switch lowering: instances refine the switch steps with the "
          "program's chunks",
          "[switch-lowering]") {
  Schedule s = nvlsAllReduce(4, 2);
  auto l = lowerSwitchTransfers(s, 1);
  REQUIRE(l.ok());
  Algo algo = emptyProgram(4);
  REQUIRE(attachSwitchThreadblocks(algo, *l, 4).ok());
  const Step &st = algo.gpus[1].tbs[0].steps[0];
  CHECK(st.type == StepType::SwitchReduce);
  CHECK(st.srcOff == 2 * 4);
  CHECK(st.cnt == 2 * 4);
}

TEST_CASE("switch lowering: NVLS-tree's switch steps wait for the network "
          "chain and are waited for by it, on the issuing rank",
          "[switch-lowering]") {
  auto [topo, s, l] = nvlsAllReduceOn("dgx-h100x2");
  // Each reduction's result crosses the network, each multicast sends
  // what came back: every operation is ordered with the chain.
  CHECK(l->orderedOperations == l->operations);
  CompileOptions co;
  co.target = CompileTarget::Cuda;
  co.verify = false;
  co.tileBytes = 64 << 10;
  CompileResult r = compileSchedule(*s, co);
  REQUIRE(r.ok());
  REQUIRE(r.program);
  const Algo &algo = *r.program;
  // On every rank: a point-to-point step waits for a switch reduction, and
  // a multicast (or the nop before it) waits for a point-to-point step.
  for (const Gpu &g : algo.gpus) {
    auto isSwitch = [&](int tb) {
      for (const Threadblock &t : g.tbs)
        if (t.id == tb)
          return t.switchId >= 0;
      return false;
    };
    bool p2pWaitsForReduce = false, multicastWaits = false;
    for (const Threadblock &tb : g.tbs)
      for (size_t k = 0; k < tb.steps.size(); ++k) {
        const Step &st = tb.steps[k];
        if (st.depid < 0)
          continue;
        if (tb.switchId < 0 && isSwitch(st.depid))
          p2pWaitsForReduce = true;
        if (tb.switchId >= 0 && !isSwitch(st.depid))
          for (size_t j = k; j < tb.steps.size(); ++j)
            if (tb.steps[j].type != StepType::Nop) {
              multicastWaits |= tb.steps[j].type == StepType::Multicast;
              break;
            }
      }
    INFO("rank " << g.id);
    CHECK(p2pWaitsForReduce);
    CHECK(multicastWaits);
  }
  CHECK(checkDeadlock(algo, matchMessages(algo)).empty());
  // Reductions run ahead in threadblocks of their own while earlier
  // results are on the network: the program keeps pace with the runtime
  // model of NCCL's NVLS-tree kernel.
  StepSimOptions so;
  so.bytes = 1 << 30;
  so.busBwFactor = s->collective.busBwFactor();
  so.generatedCode = true;
  so.tileBytes = co.tileBytes;
  auto steps = simulateSteps(algo, *topo, so);
  REQUIRE(steps.ok());
  auto runtime = simulateInNetworkRuntime(*s, *topo, {so.bytes});
  REQUIRE(runtime.ok());
  INFO("generated code " << steps->timeUs << " us, runtime model "
                         << (*runtime)[0].timeUs << " us");
  CHECK(steps->timeUs < 1.1 * (*runtime)[0].timeUs);
}

TEST_CASE("switch lowering: programOnly gives the step program of the "
          "generated source without the source",
          "[switch-lowering]") {
  auto [topo, s, l] = nvlsAllReduceOn("dgx-h100x2");
  CompileOptions co;
  co.target = CompileTarget::Cuda;
  co.verify = false;
  co.instances = 2;
  CompileResult full = compileSchedule(*s, co);
  co.programOnly = true;
  CompileResult bare = compileSchedule(*s, co);
  REQUIRE(full.ok());
  REQUIRE(bare.ok());
  CHECK(!full.output->empty());
  CHECK(bare.output->empty());
  REQUIRE(full.program);
  REQUIRE(bare.program);
  REQUIRE(bare.program->gpus.size() == full.program->gpus.size());
  for (size_t g = 0; g < full.program->gpus.size(); ++g) {
    const auto &a = full.program->gpus[g].tbs, &b = bare.program->gpus[g].tbs;
    REQUIRE(a.size() == b.size());
    for (size_t t = 0; t < a.size(); ++t) {
      CHECK(a[t].switchId == b[t].switchId);
      CHECK(a[t].steps.size() == b[t].steps.size());
    }
  }
  StepSimOptions so;
  so.bytes = 1 << 30;
  so.busBwFactor = s->collective.busBwFactor();
  so.generatedCode = true;
  auto x = simulateSteps(*full.program, *topo, so);
  auto y = simulateSteps(*bare.program, *topo, so);
  REQUIRE(x.ok());
  REQUIRE(y.ok());
  CHECK(x->timeUs == y->timeUs);
}

TEST_CASE("switch lowering: on two NVLS nodes, ccsynth's NVLS with rail "
          "exchanges beside the direct rails on a seventh of the buffer "
          "runs faster as generated code than alone",
          "[switch-lowering]") {
  // NVLS alone is bound by its switch's throughput per port and leaves the
  // NVLink ports partly idle; the direct rails fill them, and both send
  // the same bytes per NIC.
  auto topo = makeBuiltinTopology("dgx-h100x2");
  REQUIRE(topo.ok());
  auto nvls = makeNvlsRails(*topo, {}, false, RailAllReduce::Direct);
  auto direct = makeDirectRails(*topo, {});
  REQUIRE(nvls.ok());
  REQUIRE(direct.ok());
  const int f = nvls->collective.chunkFactor;
  auto six = regridChunks(*nvls, 6 * f);
  REQUIRE(six.ok());
  auto mix = spliceSchedules(*six, *direct);
  REQUIRE(mix.ok());
  // Generated code at 1 GiB, the faster of two tiles at 2 instances.
  auto genUs = [&](const Schedule &s) {
    CompileOptions co;
    co.target = CompileTarget::Cuda;
    co.verify = false;
    co.programOnly = true;
    co.instances = 2;
    CompileResult r = compileSchedule(s, co);
    INFO((r.ok() ? std::string() : r.failure.error.format()));
    REQUIRE(r.ok());
    REQUIRE(r.program);
    double best = INFINITY;
    for (double tile : {16384.0, 65536.0}) {
      StepSimOptions so;
      so.bytes = 1 << 30;
      so.busBwFactor = s.collective.busBwFactor();
      so.generatedCode = true;
      so.tileBytes = tile;
      auto t = simulateSteps(*r.program, *topo, so);
      REQUIRE(t.ok());
      best = std::min(best, t->timeUs);
    }
    return best;
  };
  double alone = genUs(*nvls), mixed = genUs(*mix);
  INFO("alone " << alone << " us, mixed " << mixed << " us");
  CHECK(mixed * 1.04 < alone);
}

TEST_CASE("switch lowering: one switch threadblock carries at most a "
          "quarter of its rank's share of the switch, and fewer lanes "
          "fill NVLS-tree's pipeline sooner",
          "[switch-lowering]") {
  auto [topo, s, l] = nvlsAllReduceOn("dgx-h100");
  StepSimOptions so;
  so.bytes = 1 << 30;
  so.busBwFactor = s->collective.busBwFactor();
  so.generatedCode = true;
  auto timeOn = [&](int lanes) {
    Algo algo = switchProgram(*s, lanes, s->collective.inputChunks);
    auto t = simulateSteps(algo, *topo, so);
    REQUIRE(t.ok());
    return t->timeUs;
  };
  // One lane reaches a quarter of the switch; four all of it, as do more.
  double one = timeOn(1), four = timeOn(kSwitchTbsForPeak),
         sixteen = timeOn(kDefaultSwitchLanes);
  INFO("1 lane " << one << " us, 4 lanes " << four << " us, 16 lanes "
                 << sixteen << " us");
  CHECK(one > 3.5 * four);
  CHECK(std::abs(sixteen - four) < 0.02 * four);

  // Across nodes the network waits for each reduction and each multicast
  // for the network: operations that each finish sooner start the chain
  // sooner and end it sooner (by little: the lanes of 16 that wait leave
  // their share of the ports to those that stream).
  auto [topo2, tree, treeLowering] = nvlsAllReduceOn("dgx-h100x2");
  auto treeUs = [&](int lanes) {
    CompileOptions co;
    co.target = CompileTarget::Cuda;
    co.verify = false;
    co.programOnly = true;
    co.tileBytes = 64 << 10;
    co.switchLanes = lanes;
    CompileResult r = compileSchedule(*tree, co);
    REQUIRE(r.ok());
    REQUIRE(r.program);
    StepSimOptions o;
    o.bytes = 64 << 20;
    o.busBwFactor = tree->collective.busBwFactor();
    o.generatedCode = true;
    o.tileBytes = co.tileBytes;
    auto t = simulateSteps(*r.program, *topo2, o);
    REQUIRE(t.ok());
    return t->timeUs;
  };
  double few = treeUs(kSwitchTbsForPeak), wide = treeUs(0);
  INFO("NVLS-tree at 64M: " << few << " us on " << kSwitchTbsForPeak
                            << " lanes, " << wide << " us on "
                            << kDefaultSwitchLanes << " (the default)");
  CHECK(few < wide);
}

TEST_CASE("switch lowering: split phases put a switch schedule's spreading "
          "sends on channels of their own",
          "[switch-lowering]") {
  // NVLS with rail exchanges: each node's switch reduces a slice, the
  // partial sums cross the network to the piece's owner (still reducing),
  // the owner sends the totals back (spreading) to the same peers.
  std::optional<Schedule> s = railExchanges("dgx-h100x2");
  std::vector<int> phase = reductionPhases(s->collective, s->transfers);
  REQUIRE(phase.size() == s->transfers.size());
  int reducing = 0, spreading = 0;
  for (size_t t = 0; t < s->transfers.size(); ++t) {
    const Transfer &tr = s->transfers[t];
    if (isSwitchOp(tr.op) || tr.src.rank == tr.dst.rank)
      continue;
    (phase[t] ? spreading : reducing) += 1;
    // What goes back the chain is the total: it is never added to.
    if (phase[t])
      CHECK(tr.op == TransferOp::Copy);
  }
  CHECK(reducing > 0);
  CHECK(spreading > 0);
  auto threadblocks = [&](bool split) {
    CompileOptions co;
    co.target = CompileTarget::Cuda;
    co.verify = false;
    co.programOnly = true;
    co.splitPhases = split;
    CompileResult r = compileSchedule(*s, co);
    REQUIRE(r.ok());
    REQUIRE(r.program);
    size_t n = 0;
    for (const Gpu &g : r.program->gpus)
      n += g.tbs.size();
    return n;
  };
  CHECK(threadblocks(true) > threadblocks(false));
}

TEST_CASE("switch lowering: operations ordered with the network take the "
          "lanes of their kind in turn",
          "[switch-lowering]") {
  // NVLS with rail exchanges: rank 0 reduces chunks q = 0..3 of its slice
  // (each crossing the network) and multicasts their totals. On 4 lanes
  // the reductions take two lanes, q0 and q2 on one, q1 and q3 on the
  // other, so that q0 and q1 start at once (runs would put q0 and q1 on
  // one lane, one after the other).
  std::optional<Schedule> s = railExchanges("dgx-h100x2");
  auto l = lowerSwitchTransfers(*s, 4);
  REQUIRE(l.ok());
  CHECK(l->orderedOperations == l->operations);
  std::vector<std::vector<int>> reductions;
  for (const Threadblock &tb : l->threadblocks[0]) {
    std::vector<int> offsets;
    for (const Step &st : tb.steps)
      if (st.type == StepType::SwitchReduce)
        offsets.push_back(st.srcOff);
    if (!offsets.empty())
      reductions.push_back(offsets);
  }
  REQUIRE(reductions.size() == 2);
  REQUIRE(reductions[0].size() == 2);
  REQUIRE(reductions[1].size() == 2);
  CHECK(reductions[0][0] < reductions[1][0]);
  CHECK(reductions[1][0] < reductions[0][1]);
  CHECK(reductions[0][1] < reductions[1][1]);
}
