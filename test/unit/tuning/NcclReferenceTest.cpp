//===- NcclReferenceTest.cpp - What NCCL itself reaches -------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The tuner's reference (compiler/lib/Tuning/NcclReference.cpp): which
// programs are NCCL's, the options of NCCL's own kernel, and that what
// NCCL reaches is never slower than one of its own configurations.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Perf/NcclKernel.h"
#include "ccsynth/Tuning/Tuning.h"

#include <catch2/catch.hpp>

using namespace ccsynth;
using namespace ccsynth::tuning;

namespace {
Topology machine(const std::string &name) {
  auto topo = makeBuiltinTopology(name);
  REQUIRE(topo);
  return topo.take();
}
Schedule baseline(BaselineKind kind, CollectiveKind coll,
                  const Topology &topo) {
  auto s = makeBaseline(kind, coll, topo);
  REQUIRE(s);
  return s.take();
}
} // namespace

TEST_CASE("NCCL's tree is told from its ring", "[tuning][nccl]") {
  Topology two = machine("dgx-a100x2");
  CHECK(
      isNcclTree(baseline(BaselineKind::Tree, CollectiveKind::AllReduce, two)));
  CHECK_FALSE(
      isNcclTree(baseline(BaselineKind::Ring, CollectiveKind::AllReduce, two)));
}

TEST_CASE("NCCL's own kernel has no MSCCL runtime rules", "[tuning][nccl]") {
  auto made = Collective::builtin(CollectiveKind::AllGather, 8, 1);
  REQUIRE(made);
  Collective ag = made.take();
  msccl::StepSimOptions o = ncclNativeStepOptions(ag, 1 << 20);
  CHECK(o.bytes == 1 << 20);
  CHECK_FALSE(o.runtimeRules);
  CHECK_FALSE(o.interpreter);
  CHECK(o.busBwFactor == ag.busBwFactor());
  CHECK_FALSE(o.generatedCode);

  msccl::Algo a;
  a.gpus.resize(1);
  a.gpus[0].tbs.resize(1);
  a.gpus[0].tbs[0].steps.resize(msccl::kMaxSteps);
  CHECK_FALSE(passesMscclSteps(a));
  a.gpus[0].tbs[0].steps.resize(msccl::kMaxSteps + 1);
  CHECK(passesMscclSteps(a));
}

TEST_CASE("what NCCL reaches is at least one of its configurations",
          "[tuning][nccl]") {
  Topology a100 = machine("dgx-a100");
  Schedule ring = baseline(BaselineKind::Ring, CollectiveKind::AllGather, a100);
  std::vector<double> sizes = {1024.0, 1048576.0};
  std::vector<double> reach = ncclReachUs(ring, a100, sizes);
  REQUIRE(reach.size() == sizes.size());

  TuneRequest req;
  req.sizes = sizes;
  TuneCandidate one;
  one.instances = 1;
  one.protocol = "Simple";
  CompileOptions base;
  base.verify = false;
  auto timed = timeCandidate(ring, a100, base, one, req);
  REQUIRE(timed);
  REQUIRE(timed->timeUs.size() == sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k) {
    CHECK(reach[k] > 0);
    CHECK(reach[k] <= timed->timeUs[k]);
  }
  // NCCL runs nothing comparable for a schedule on another rank count.
  Topology v100 = machine("dgx1");
  Schedule other = baseline(BaselineKind::Ring, CollectiveKind::AllGather,
                            machine("dgx-a100x2"));
  CHECK(ncclReachUs(other, v100, sizes).empty());
}

TEST_CASE("NCCL drops channels, then threads, for small calls",
          "[tuning][nccl]") {
  using perf::ncclRingLaunch;
  // LL on 8 ranks: 64 bytes per thread; 24 channels of 512 threads need
  // 768 KiB.
  perf::NcclLaunch big = ncclRingLaunch(2, 8, 1 << 20, 24);
  CHECK(big.channels == 24);
  CHECK(big.threads == 512);
  perf::NcclLaunch mid = ncclRingLaunch(2, 8, 256 * 1024, 24);
  CHECK(mid.channels == 8);
  CHECK(mid.threads == 512);
  // 8 KiB: one channel, threads halved to 128.
  perf::NcclLaunch small = ncclRingLaunch(2, 8, 8 * 1024, 24);
  CHECK(small.channels == 1);
  CHECK(small.threads == 128);
  // Never below 96 threads; Simple adds a warp to its 512.
  CHECK(ncclRingLaunch(2, 8, 1024, 24).threads == 96);
  CHECK(ncclRingLaunch(0, 8, 1 << 30, 24).threads == 544);
  // LL128: 8 bytes per thread of 640, whatever the ranks.
  CHECK(ncclRingLaunch(1, 8, 2 << 20, 24).channels == 24);
  CHECK(ncclRingLaunch(1, 8, 64 * 1024, 24).channels == 12);
}
