//===- CheckDeadlock.cpp - ccl-check-deadlock -----------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Runs the MSCCL model's analyses on an assigned program: one threadblock
// per (channel, peer, direction), in-order matching of sends and receives
// with equal counts, and an acyclic wait-for graph, with MSCCL's bounded
// connection buffers unless told otherwise. Diagnostics land on the
// steps involved and name every rank, threadblock and step.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Dialect/CCL/Transforms/Passes.h"
#include "ccsynth/Target/MSCCLExport.h"

#include <map>

namespace ccsynth::ccl {
#define GEN_PASS_DEF_CHECKDEADLOCKPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

using namespace mlir;
using ccsynth::Collective;
using ccsynth::Expected;
using namespace ccsynth::ccl;

namespace {

struct CheckDeadlock
    : public ccsynth::ccl::impl::CheckDeadlockPassBase<CheckDeadlock> {
  using Base::Base;

  LogicalResult check(ProgramOp prog);

  void runOnOperation() override {
    if (boundedBuffers && slots < 1) {
      getOperation().emitError() << "ccl-check-deadlock: slots must be at "
                                    "least 1";
      return signalPassFailure();
    }
    for (ProgramOp prog : getOperation().getOps<ProgramOp>())
      if (prog.isAssigned() && failed(check(prog)))
        signalPassFailure();
  }
};

LogicalResult CheckDeadlock::check(ProgramOp prog) {
  bool ok = true;
  for (GpuOp gpu : prog.getBody().front().getOps<GpuOp>()) {
    std::map<std::pair<int64_t, int64_t>, ThreadblockOp> sendOwner, recvOwner;
    for (ThreadblockOp tb : gpu.getBody().front().getOps<ThreadblockOp>()) {
      for (auto [owner, peer, dir] :
           {std::tuple{&sendOwner, tb.getSendPeer(), "send to"},
            std::tuple{&recvOwner, tb.getRecvPeer(), "receive from"}}) {
        if (peer < 0)
          continue;
        auto [it, fresh] = owner->try_emplace({tb.getChannel(), peer}, tb);
        if (!fresh) {
          tb.emitError() << "rank " << gpu.getRank() << ": threadblocks "
                         << it->second.getId() << " and " << tb.getId()
                         << " both " << dir << " rank " << peer
                         << " on channel " << tb.getChannel()
                         << "; one connection serves one threadblock";
          ok = false;
        }
      }
    }
  }
  if (!ok)
    return failure();
  StepOrigins origins;
  FailureOr<ccsynth::msccl::Algo> algo = programToMsccl(prog, &origins);
  if (failed(algo))
    return failure();
  ccsynth::msccl::Matching matching = ccsynth::msccl::matchMessages(*algo);
  if (!matching.issues.empty()) {
    emitIssues(matching.issues, origins, prog);
    return failure();
  }
  ccsynth::msccl::BufferModel buffers =
      ccsynth::msccl::BufferModel::unbounded();
  if (boundedBuffers) {
    buffers = ccsynth::msccl::BufferModel::forProtocol(algo->proto);
    buffers.slots = slots;
  }
  std::vector<ccsynth::msccl::ProgramIssue> cycle =
      ccsynth::msccl::checkDeadlock(*algo, matching, buffers);
  if (!cycle.empty()) {
    emitIssues(cycle, origins, prog);
    return failure();
  }
  return success();
}

} // namespace
