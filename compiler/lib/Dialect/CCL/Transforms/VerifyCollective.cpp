//===- VerifyCollective.cpp - ccl-verify-collective -----------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Reuses the core verifier: an algorithm converts back to a Schedule and
// each issue is reported at the transfer that causes it.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/Dialect/CCL/Transforms/Passes.h"
#include "ccsynth/Import/ScheduleImport.h"

namespace ccsynth::ccl {
#define GEN_PASS_DEF_VERIFYCOLLECTIVEPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

#include <map>
#include <optional>

using namespace mlir;
using ccsynth::Collective;
using ccsynth::Expected;
using ccsynth::Schedule;
using ccsynth::VerifyIssue;
using ccsynth::VerifyOptions;
using ccsynth::VerifyResult;
using namespace ccsynth::ccl;

namespace {

struct VerifyCollective
    : public ccsynth::ccl::impl::VerifyCollectivePassBase<VerifyCollective> {
  using Base::Base;

  void runOnOperation() override {
    // Topologies by name, loaded once per run.
    std::map<std::string, std::optional<ccsynth::Topology>> topologies;
    for (AlgorithmOp alg :
         llvm::to_vector(getOperation().getOps<AlgorithmOp>())) {
      FailureOr<Schedule> sched = exportSchedule(alg);
      if (failed(sched)) {
        signalPassFailure();
        continue;
      }
      VerifyOptions options;
      options.maxIssues = std::max(1, (int)maxIssues);
      if (checkLinks && !sched->topology.empty()) {
        auto [it, fresh] = topologies.try_emplace(sched->topology);
        if (fresh) {
          auto topo = ccsynth::loadTopology(sched->topology);
          if (!topo) {
            alg.emitError() << "cannot check links: " << topo.error().format();
            topologies.erase(it);
            signalPassFailure();
            continue;
          }
          it->second = topo.take();
        }
        if (it->second->numRanks() != sched->collective.numRanks) {
          alg.emitError() << "topology '" << sched->topology << "' has "
                          << it->second->numRanks()
                          << " ranks but the algorithm has "
                          << sched->collective.numRanks;
          signalPassFailure();
          continue;
        }
        options.topology = &*it->second;
      }
      VerifyResult result = verifySchedule(*sched, options);
      if (result.ok())
        continue;
      SmallVector<TransferOp> transfers(
          alg.getBody().front().getOps<TransferOp>());
      for (const VerifyIssue &issue : result.issues) {
        Operation *at = alg;
        if (issue.transfer >= 0 && issue.transfer < (int)transfers.size())
          at = transfers[issue.transfer];
        at->emitError() << "[" << toString(issue.kind) << "] " << issue.message;
      }
      signalPassFailure();
    }
  }
};

} // namespace
