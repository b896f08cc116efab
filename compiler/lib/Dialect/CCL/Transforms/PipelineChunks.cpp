//===- PipelineChunks.cpp - ccl-pipeline-chunks ---------------------------===//
//
// Splits chunks into parts and staggers the parts by one step, so the hops
// of a route overlap. Part p of chunk x is sub-chunk x*parts + p, so every
// dependency, reduction and slot reuse of the original holds part by part.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"

#include "ccsynth/Dialect/CCL/Transforms/Passes.h"
#include "ccsynth/Import/ScheduleImport.h"

namespace ccsynth::ccl {
#define GEN_PASS_DEF_PIPELINECHUNKSPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

using namespace mlir;
using ccsynth::Collective;
using ccsynth::Expected;
using namespace ccsynth::ccl;

namespace {

struct PipelineChunks
    : public ccsynth::ccl::impl::PipelineChunksPassBase<PipelineChunks> {
  using Base::Base;

  void runOnOperation() override {
    for (AlgorithmOp alg :
         llvm::to_vector(getOperation().getOps<AlgorithmOp>())) {
      if (parts < 1) {
        alg.emitError() << "ccl-pipeline-chunks: parts must be at least 1 "
                           "(got "
                        << (int)parts << ")";
        return signalPassFailure();
      }
      if (parts == 1)
        continue;
      auto col = alg.buildCollective();
      if (!col) {
        alg.emitOpError() << col.error().message;
        return signalPassFailure();
      }
      auto refined = refineCollective(*col, parts);
      if (!refined) {
        alg.emitError() << "ccl-pipeline-chunks: " << refined.error().message;
        return signalPassFailure();
      }
      int64_t p = parts;
      OpBuilder b(alg.getContext());
      for (TransferOp t :
           llvm::to_vector(alg.getBody().front().getOps<TransferOp>())) {
        b.setInsertionPoint(t);
        for (int64_t i = 0; i < t.getCount(); ++i)
          for (int64_t k = 0; k < p; ++k) {
            auto copy = cast<TransferOp>(b.clone(*t));
            copy.setSrcIndex((t.getSrcIndex() + i) * p + k);
            copy.setDstIndex((t.getDstIndex() + i) * p + k);
            copy.setCount(1);
            copy.setStep(t.getStep() + k);
          }
        t.erase();
      }
      setCollectiveAttrs(alg, *refined);
      alg.setScratchChunks(alg.getScratchChunks() * p);
    }
  }
};

} // namespace
