//===- PipelineChunks.cpp - ccl-pipeline-chunks ---------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Splits chunks into parts and staggers the parts by one step, so the hops
// of a route overlap. Part p of chunk x is sub-chunk x*parts + p, so every
// dependency, reduction and slot reuse of the original holds part by part.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"

#include "ccsynth/Dialect/CCL/Transforms/Passes.h"

namespace ccsynth::ccl {
#define GEN_PASS_DEF_PIPELINECHUNKSPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

using namespace mlir;
using namespace ccsynth::ccl;

namespace {

struct PipelineChunks
    : public ccsynth::ccl::impl::PipelineChunksPassBase<PipelineChunks> {
  using Base::Base;

  void runOnOperation() override {
    int64_t p = parts;
    for (AlgorithmOp alg :
         llvm::to_vector(getOperation().getOps<AlgorithmOp>()))
      if (failed(refineAlgorithm(
              alg, p, "ccl-pipeline-chunks", "parts", [&](OpBuilder &b, TransferOp t) {
                for (int64_t i = 0; i < t.getCount(); ++i)
                  for (int64_t k = 0; k < p; ++k) {
                    auto copy = cast<TransferOp>(b.clone(*t));
                    copy.setSrcIndex((t.getSrcIndex() + i) * p + k);
                    copy.setDstIndex((t.getDstIndex() + i) * p + k);
                    copy.setCount(1);
                    copy.setStep(t.getStep() + k);
                  }
              })))
        return signalPassFailure();
  }
};

} // namespace
