//===- Instances.cpp - ccl-instances --------------------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// MSCCL's instances: every chunk is split into `count` sub-chunks and each
// transfer into `count` transfers of the same step, one per instance, each
// hinted onto its own channel.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"

#include "ccsynth/Dialect/CCL/Transforms/Passes.h"

namespace ccsynth::ccl {
#define GEN_PASS_DEF_INSTANCESPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

using namespace mlir;
using namespace ccsynth::ccl;

namespace {

struct Instances : public ccsynth::ccl::impl::InstancesPassBase<Instances> {
  using Base::Base;

  void runOnOperation() override {
    int64_t n = count;
    for (AlgorithmOp alg :
         llvm::to_vector(getOperation().getOps<AlgorithmOp>()))
      if (failed(refineAlgorithm(
              alg, n, "ccl-instances", "count", [&](OpBuilder &b, TransferOp t) {
                int64_t base = t.getChannel() ? *t.getChannel() : 0;
                int64_t cnt = t.getCount();
                for (int64_t k = 0; k < n; ++k) {
                  auto copy = cast<TransferOp>(b.clone(*t));
                  copy.setSrcIndex(t.getSrcIndex() * n + k * cnt);
                  copy.setDstIndex(t.getDstIndex() * n + k * cnt);
                  copy.setChannel(base * n + k);
                }
              })))
        return signalPassFailure();
  }
};

} // namespace
