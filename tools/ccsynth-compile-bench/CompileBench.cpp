//===- CompileBench.cpp - Times the compiler on 64-rank AllGathers --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Not a test: prints how long the default pipeline takes to turn 64-rank
// AllGathers into MSCCL XML, next to the core verifier's time on the same
// schedule as the in-run baseline, and checks the issue's 5 s budget.
// Schedules: NCCL-style rings on dgx-h100x8 (makeBaseline: 8 rings, 32768
// transfers), a single ring (63 forwarding steps) and a direct exchange
// (every pair at once, which forces many threadblocks and channels).
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/Target/MSCCLXml.h"

#include <chrono>
#include <cstdio>
#include <string>

using namespace ccsynth;

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

Schedule allGather(int n, bool ring) {
  Schedule s;
  s.name = ring ? "ring_allgather_64" : "direct_allgather_64";
  s.topology = "dgx-h100x8";
  s.origin = "bench";
  s.collective = Collective::builtin(CollectiveKind::AllGather, n, 1).take();
  auto add = [&](int step, ChunkLoc src, ChunkLoc dst) {
    Transfer t;
    t.step = step;
    t.src = src;
    t.dst = dst;
    s.transfers.push_back(t);
  };
  for (int r = 0; r < n; ++r)
    add(0, {r, BufferKind::Input, 0}, {r, BufferKind::Output, r});
  if (!ring) {
    for (int r = 0; r < n; ++r)
      for (int q = 0; q < n; ++q)
        if (q != r)
          add(0, {r, BufferKind::Input, 0}, {q, BufferKind::Output, r});
    return s;
  }
  for (int r = 0; r < n; ++r)
    add(0, {r, BufferKind::Input, 0}, {(r + 1) % n, BufferKind::Output, r});
  for (int k = 1; k < n - 1; ++k)
    for (int r = 0; r < n; ++r) {
      int chunk = ((r - k) % n + n) % n;
      add(k, {r, BufferKind::Output, chunk},
          {(r + 1) % n, BufferKind::Output, chunk});
    }
  return s;
}

bool run(const Schedule &s) {
  auto t0 = std::chrono::steady_clock::now();
  VerifyResult proof = verifySchedule(s);
  double verifyTime = seconds(t0);
  if (!proof.ok()) {
    std::printf("%s: the benchmark schedule does not verify: %s\n",
                s.name.c_str(), proof.issues.front().message.c_str());
    return false;
  }
  t0 = std::chrono::steady_clock::now();
  CompileResult r = compileSchedule(s, {});
  double compileTime = seconds(t0);
  if (!r.ok()) {
    std::printf("%s: compilation failed: %s\n", s.name.c_str(),
                r.failure.error.format().c_str());
    return false;
  }
  auto algo = msccl::parseXml(s.name, *r.output);
  size_t tbs = 0, steps = 0;
  if (algo)
    for (const msccl::Gpu &g : algo->gpus) {
      tbs += g.tbs.size();
      for (const msccl::Threadblock &tb : g.tbs)
        steps += tb.steps.size();
    }
  bool valid = algo && msccl::validateAlgo(*algo).empty();
  std::printf("%-20s %5zu transfers -> %7zu bytes of XML, %4zu tbs, %5zu "
              "steps, %2d channels, valid=%s\n",
              s.name.c_str(), s.transfers.size(), r.output->size(), tbs, steps,
              algo ? algo->nchannels : 0, valid ? "yes" : "NO");
  std::printf("%-20s verify %.3f s | compile to XML %.3f s (%.1fx verify) | "
              "budget 5 s: %s\n",
              "", verifyTime, compileTime,
              verifyTime > 0 ? compileTime / verifyTime : 0.0,
              compileTime < 5.0 ? "met" : "MISSED");
  return valid && compileTime < 5.0;
}

} // namespace

int main() {
  std::printf("ccsynth compile benchmark: 64-rank AllGather through the "
              "default pipeline to MSCCL XML\n");
  bool ok = true;
  auto topo = makeBuiltinTopology("dgx-h100x8");
  auto rings =
      topo ? makeBaseline(BaselineKind::Ring, CollectiveKind::AllGather, *topo)
           : Expected<Schedule>(topo.error());
  if (rings) {
    rings->name = "ring_baseline_h100x8";
    ok = run(*rings);
  } else {
    std::printf("makeBaseline(ring, allgather, dgx-h100x8) failed: %s\n",
                rings.error().format().c_str());
    ok = false;
  }
  ok = run(allGather(64, /*ring=*/true)) && ok;
  ok = run(allGather(64, /*ring=*/false)) && ok;
  return ok ? 0 : 1;
}
