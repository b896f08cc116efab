//===- SplitPhases.cpp - ccl-split-phases ---------------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Hints the transfers that spread a reduction's finished values onto
// channels of their own (reductionPhases in the core library decides
// which), so that MSCCL's in-order threadblocks do not hold the next loop
// iteration's reduction behind the current iteration's spreading.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Dialect/CCL/IR/CCLOps.h"
#include "ccsynth/Dialect/CCL/Transforms/Passes.h"
#include "ccsynth/Import/ScheduleImport.h"

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
      // The schedule's transfers are the algorithm's, in op order.
      FailureOr<ccsynth::Schedule> sched = exportSchedule(alg);
      if (failed(sched))
        return signalPassFailure();
      std::vector<int> phase =
          ccsynth::reductionPhases(sched->collective, sched->transfers);
      if (phase.empty())
        continue;
      size_t i = 0;
      for (TransferOp t : alg.getBody().front().getOps<TransferOp>()) {
        int64_t base = t.getChannel() ? *t.getChannel() : 0;
        t.setChannel(2 * base + phase[i++]);
      }
    }
  }
};

} // namespace
