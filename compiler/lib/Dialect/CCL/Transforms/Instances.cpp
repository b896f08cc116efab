//===- Instances.cpp - ccl-instances --------------------------------------===//
//
// MSCCL's instances: every chunk is split into `count` sub-chunks and each
// transfer into `count` transfers of the same step, one per instance, each
// hinted onto its own channel.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"

#include "ccsynth/Dialect/CCL/Transforms/Passes.h"
#include "ccsynth/Import/ScheduleImport.h"

namespace ccsynth::ccl {
#define GEN_PASS_DEF_INSTANCESPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

using namespace mlir;
using ccsynth::Collective;
using ccsynth::Expected;
using namespace ccsynth::ccl;

namespace {

struct Instances : public ccsynth::ccl::impl::InstancesPassBase<Instances> {
  using Base::Base;

  void runOnOperation() override {
    for (AlgorithmOp alg :
         llvm::to_vector(getOperation().getOps<AlgorithmOp>())) {
      if (count < 1) {
        alg.emitError() << "ccl-instances: count must be at least 1 (got "
                        << (int)count << ")";
        return signalPassFailure();
      }
      if (count == 1)
        continue;
      auto col = alg.buildCollective();
      if (!col) {
        alg.emitOpError() << col.error().message;
        return signalPassFailure();
      }
      auto refined = refineCollective(*col, count);
      if (!refined) {
        alg.emitError() << "ccl-instances: " << refined.error().message;
        return signalPassFailure();
      }
      int64_t n = count;
      OpBuilder b(alg.getContext());
      for (TransferOp t :
           llvm::to_vector(alg.getBody().front().getOps<TransferOp>())) {
        int64_t base = t.getChannel() ? *t.getChannel() : 0;
        int64_t cnt = t.getCount();
        b.setInsertionPoint(t);
        for (int64_t k = 0; k < n; ++k) {
          auto copy = cast<TransferOp>(b.clone(*t));
          copy.setSrcIndex(t.getSrcIndex() * n + k * cnt);
          copy.setDstIndex(t.getDstIndex() * n + k * cnt);
          copy.setChannel(base * n + k);
        }
        t.erase();
      }
      setCollectiveAttrs(alg, *refined);
      alg.setScratchChunks(alg.getScratchChunks() * n);
    }
  }
};

} // namespace
