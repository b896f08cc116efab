//===- SplitPhases.cpp - ccl-split-phases ---------------------------------===//
//
// Hints the transfers that spread a reduction's finished values onto
// channels of their own (reductionPhases in the core library decides
// which), so that MSCCL's in-order threadblocks do not hold the next loop
// iteration's reduction behind the current iteration's spreading.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"

#include "ccsynth/Core/Schedule.h"
#include "ccsynth/Dialect/CCL/Transforms/Passes.h"

namespace ccsynth::ccl {
#define GEN_PASS_DEF_SPLITPHASESPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

using namespace mlir;
using namespace ccsynth::ccl;

namespace {

struct SplitPhases
    : public ccsynth::ccl::impl::SplitPhasesPassBase<SplitPhases> {
  using Base::Base;

  void runOnOperation() override {
    for (AlgorithmOp alg : getOperation().getOps<AlgorithmOp>()) {
      auto col = alg.buildCollective();
      if (!col) {
        alg.emitOpError() << col.error().message;
        return signalPassFailure();
      }
      auto ops = llvm::to_vector(alg.getBody().front().getOps<TransferOp>());
      std::vector<ccsynth::Transfer> transfers;
      transfers.reserve(ops.size());
      for (TransferOp t : ops) {
        ccsynth::Transfer tr;
        tr.op = t.getKind() == TransferKind::Copy ? ccsynth::TransferOp::Copy
                                                  : ccsynth::TransferOp::Reduce;
        tr.src = {(int)t.getSrcRank(), toBufferKind(t.getSrcBuffer()),
                  (int)t.getSrcIndex()};
        tr.dst = {(int)t.getDstRank(), toBufferKind(t.getDstBuffer()),
                  (int)t.getDstIndex()};
        tr.count = (int)t.getCount();
        tr.step = (int)t.getStep();
        transfers.push_back(tr);
      }
      std::vector<int> phase = ccsynth::reductionPhases(*col, transfers);
      if (phase.empty())
        continue;
      for (size_t i = 0; i < ops.size(); ++i) {
        int64_t base = ops[i].getChannel() ? *ops[i].getChannel() : 0;
        ops[i].setChannel(2 * base + phase[i]);
      }
    }
  }
};

} // namespace
