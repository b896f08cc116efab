//===- Pipeline.cpp - The default ccl pipeline ----------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Dialect/CCL/Transforms/Passes.h"
#include "ccsynth/Target/MSCCLProgram.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace ccsynth::ccl {

void buildDefaultPipeline(OpPassManager &pm, const PipelineOptions &o) {
  if (o.verify)
    pm.addPass(createVerifyCollectivePass());
  if (o.splitPhases)
    pm.addPass(createSplitPhasesPass());
  if (o.instances != 1)
    pm.addPass(createInstancesPass(InstancesPassOptions{o.instances}));
  if (o.pipelineParts != 1)
    pm.addPass(
        createPipelineChunksPass(PipelineChunksPassOptions{o.pipelineParts}));
  if (o.verify && (o.instances != 1 || o.pipelineParts != 1))
    pm.addPass(createVerifyCollectivePass());
  if (o.coalesce)
    pm.addPass(createCoalesceTransfersPass());
  pm.addPass(createLowerToStepsPass(LowerToStepsPassOptions{o.maxCount}));
  if (o.fuse)
    pm.addPass(
        createFuseStepsPass(FuseStepsPassOptions{o.sendFirst, o.fuseForward}));
  // A reduction tree only pays when its reduces can run side by side.
  if (o.localTbs > 1 && o.spreadLocal)
    pm.addPass(createBalanceReductionsPass());
  pm.addPass(createAssignThreadblocksPass(AssignThreadblocksPassOptions{
      o.maxSteps, o.maxTbsPerChannel, o.maxChannels, o.countDepNops,
      o.boundedBuffers, ccsynth::msccl::kConnSlots, o.maxLocalSteps,
      o.spreadLocal, o.localTbs}));
  CheckDeadlockPassOptions deadlock;
  deadlock.boundedBuffers = o.boundedBuffers;
  pm.addPass(createCheckDeadlockPass(deadlock));
}

namespace {
struct DefaultPipelineOptions
    : public PassPipelineOptions<DefaultPipelineOptions> {
  Option<bool> verify{*this, "verify", llvm::cl::desc("Re-prove the algorithm"),
                      llvm::cl::init(true)};
  Option<int> instances{*this, "instances",
                        llvm::cl::desc("MSCCL instances (ccl-instances)"),
                        llvm::cl::init(1)};
  Option<bool> splitPhases{
      *this, "split-phases",
      llvm::cl::desc("A reduction's spreading transfers on channels of their "
                     "own (ccl-split-phases)"),
      llvm::cl::init(false)};
  Option<int> pipeline{*this, "pipeline",
                       llvm::cl::desc("Parts per chunk (ccl-pipeline-chunks)"),
                       llvm::cl::init(1)};
  Option<int> maxCount{*this, "max-count",
                       llvm::cl::desc("Largest chunk count per step"),
                       llvm::cl::init(71)};
  Option<bool> coalesce{*this, "coalesce",
                        llvm::cl::desc("Run ccl-coalesce-transfers"),
                        llvm::cl::init(false)};
  Option<bool> fuse{*this, "fuse", llvm::cl::desc("Run ccl-fuse-steps"),
                    llvm::cl::init(true)};
  Option<bool> sendFirst{
      *this, "send-first",
      llvm::cl::desc("ccl-fuse-steps: move sends ahead of receives to fuse"),
      llvm::cl::init(true)};
  Option<bool> fuseForward{
      *this, "fuse-forward",
      llvm::cl::desc("ccl-fuse-steps: fuse forwarding steps (rcs, rrs, rrcs), "
                     "not only receive-and-reduce"),
      llvm::cl::init(true)};
  Option<int> maxSteps{*this, "max-steps",
                       llvm::cl::desc("Most steps per threadblock"),
                       llvm::cl::init(64)};
  Option<int> maxTbsPerChannel{
      *this, "max-tbs-per-channel",
      llvm::cl::desc("Most threadblocks per channel and rank"),
      llvm::cl::init(32)};
  Option<int> maxChannels{*this, "max-channels",
                          llvm::cl::desc("Most channels"), llvm::cl::init(32)};
  Option<int> localTbs{
      *this, "local-tbs",
      llvm::cl::desc("Most threadblocks per instance for local steps; above "
                     "1 also runs ccl-balance-reductions"),
      llvm::cl::init(1)};
  Option<bool> boundedBuffers{
      *this, "bounded-buffers",
      llvm::cl::desc("Model MSCCL's bounded connection buffers when "
                     "assigning and checking"),
      llvm::cl::init(true)};
};
} // namespace

void registerDefaultPipeline() {
  PassPipelineRegistration<DefaultPipelineOptions>(
      "ccl-default-pipeline",
      "Verify, [split phases, replicate, pipeline, coalesce,] lower, fuse, "
      "[balance "
      "reductions,] assign "
      "threadblocks and check a ccl.algorithm for deadlocks",
      [](OpPassManager &pm, const DefaultPipelineOptions &o) {
        PipelineOptions p;
        p.verify = o.verify;
        p.instances = o.instances;
        p.splitPhases = o.splitPhases;
        p.pipelineParts = o.pipeline;
        p.maxCount = o.maxCount;
        p.coalesce = o.coalesce;
        p.fuse = o.fuse;
        p.sendFirst = o.sendFirst;
        p.fuseForward = o.fuseForward;
        p.maxSteps = o.maxSteps;
        p.maxTbsPerChannel = o.maxTbsPerChannel;
        p.maxChannels = o.maxChannels;
        p.boundedBuffers = o.boundedBuffers;
        p.localTbs = o.localTbs;
        buildDefaultPipeline(pm, p);
      });
}

} // namespace ccsynth::ccl
