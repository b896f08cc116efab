//===- LowerToSteps.cpp - ccl-lower-to-steps ------------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Each transfer between two ranks becomes a send at the source and a
// receive (copy) or receive-reduce-copy (reduce) at the destination; a
// transfer within a rank becomes a local copy or reduce. Steps are appended
// in (schedule step, transfer index) order, which is the order that the
// later passes keep and that pairs sends with receives. Switch transfers
// (switch_reduce, multicast) have no step-level op and are refused.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Dialect/CCL/Transforms/Passes.h"

#include <algorithm>

namespace ccsynth::ccl {
#define GEN_PASS_DEF_LOWERTOSTEPSPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

using namespace mlir;
using ccsynth::Collective;
using ccsynth::Expected;
using namespace ccsynth::ccl;

namespace {

struct LowerToSteps
    : public ccsynth::ccl::impl::LowerToStepsPassBase<LowerToSteps> {
  using Base::Base;

  LogicalResult lower(AlgorithmOp alg);

  void runOnOperation() override {
    if (maxCount < 1) {
      getOperation().emitError()
          << "ccl-lower-to-steps: max-count must be at least 1";
      return signalPassFailure();
    }
    for (AlgorithmOp alg :
         llvm::to_vector(getOperation().getOps<AlgorithmOp>()))
      if (failed(lower(alg)))
        return signalPassFailure();
  }
};

LogicalResult LowerToSteps::lower(AlgorithmOp alg) {
  // MSCCL's step model (a threadblock's send and receive peer) has no op
  // for a switch operation: refused at the first one, before anything is
  // built.
  for (TransferOp t : alg.getBody().front().getOps<TransferOp>())
    if (t.getViaSwitch())
      return t.emitError()
             << "ccl-lower-to-steps: a " << stringifyTransferKind(t.getKind())
             << " through switch " << *t.getViaSwitch()
             << " has no step-level op yet (switch operations are proven "
                "and simulated, not lowered)";
  MLIRContext *ctx = alg.getContext();
  OpBuilder b(alg);
  OperationState state(alg.getLoc(), ProgramOp::getOperationName());
  state.addRegion();
  auto prog = cast<ProgramOp>(b.create(state));
  prog.getBody().emplaceBlock();
  for (NamedAttribute attr : alg->getAttrDictionary())
    if (attr.getName() != "scratch_chunks")
      prog->setAttr(attr.getName(), attr.getValue());

  b.setInsertionPointToEnd(&prog.getBody().front());
  std::vector<GpuOp> gpus;
  for (int64_t r = 0; r < alg.getRanks(); ++r) {
    auto gpu = b.create<GpuOp>(alg.getLoc(), r, alg.getInputChunks(),
                               alg.getOutputChunks(), alg.getScratchChunks());
    gpu.getBody().emplaceBlock();
    gpus.push_back(gpu);
  }

  SmallVector<TransferOp> transfers(alg.getBody().front().getOps<TransferOp>());
  std::stable_sort(
      transfers.begin(), transfers.end(),
      [](TransferOp a, TransferOp c) { return a.getStep() < c.getStep(); });
  auto at = [&](int64_t rank) {
    return OpBuilder::atBlockEnd(&gpus[rank].getBody().front());
  };
  auto hint = [&](Operation *op, TransferOp t) {
    if (t.getChannel())
      op->setAttr("ccl.channel",
                  IntegerAttr::get(IntegerType::get(ctx, 64), *t.getChannel()));
  };
  int64_t order = 0;
  for (TransferOp t : transfers) {
    for (int64_t off = 0; off < t.getCount(); off += maxCount) {
      int64_t n = std::min<int64_t>(maxCount, t.getCount() - off);
      int64_t step = t.getStep(), ord = order++;
      int64_t src = t.getSrcRank(), dst = t.getDstRank();
      int64_t si = t.getSrcIndex() + off, di = t.getDstIndex() + off;
      Location loc = t.getLoc();
      bool copy = t.getKind() == TransferKind::Copy;
      if (src == dst) {
        OpBuilder lb = at(src);
        Operation *local;
        if (copy)
          local = lb.create<CopyOp>(loc, t.getSrcBuffer(), si,
                                    t.getDstBuffer(), di, n, step, ord,
                                    nullptr);
        else
          local = lb.create<ReduceOp>(loc, t.getSrcBuffer(), si,
                                      t.getDstBuffer(), di, n, step, ord,
                                      nullptr);
        hint(local, t);
        continue;
      }
      OpBuilder sb = at(src);
      auto send = sb.create<SendOp>(loc, t.getSrcBuffer(), si, dst, n, step,
                                    ord, nullptr);
      hint(send, t);
      OpBuilder rb = at(dst);
      Operation *recv;
      if (copy)
        recv = rb.create<RecvOp>(loc, src, t.getDstBuffer(), di, n, step, ord,
                                 nullptr);
      else
        recv = rb.create<RecvReduceCopyOp>(loc, src, t.getDstBuffer(), di,
                                           t.getDstBuffer(), di, n, step, ord,
                                           nullptr);
      hint(recv, t);
    }
  }
  alg.erase();
  return success();
}

} // namespace
