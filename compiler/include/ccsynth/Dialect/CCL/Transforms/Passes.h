//===- Passes.h - Passes over the ccl dialect and the default pipeline ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Pass declarations generated from Passes.td, plus the default pipeline
// that turns an imported algorithm into a checked, threadblock-assigned
// program ready for an exporter.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Dialect/CCL/IR/CCLOps.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <memory>

namespace ccsynth::ccl {

#define GEN_PASS_DECL
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"

/// Knobs of the default pipeline; the tools fill them from their options.
struct PipelineOptions {
  /// Re-prove the algorithm before lowering (and after refinements).
  bool verify = true;
  /// MSCCL instances (ccl-instances count).
  int instances = 1;
  /// A reduction's spreading transfers on channels of their own
  /// (ccl-split-phases).
  bool splitPhases = false;
  /// Chunk pipelining parts (ccl-pipeline-chunks parts).
  int pipelineParts = 1;
  /// Join transfers that move together (ccl-coalesce-transfers): fewer,
  /// larger steps, less parallelism; for programs that do not fit
  /// otherwise.
  bool coalesce = false;
  /// Largest chunk count per step (ccl-lower-to-steps max-count).
  int maxCount = 71;
  /// Fuse receive/send pairs (ccl-fuse-steps).
  bool fuse = true;
  /// Let fusion move sends ahead of receives (ccl-fuse-steps send-first).
  bool sendFirst = true;
  /// Fuse forwarding steps too, not only receive-and-reduce
  /// (ccl-fuse-steps forward).
  bool fuseForward = true;
  /// Local steps of different instances in threadblocks of their own
  /// (ccl-assign-threadblocks spread-local).
  bool spreadLocal = true;
  /// Most peerless threadblocks per instance: local steps writing
  /// different slots run side by side (ccl-assign-threadblocks local-tbs);
  /// above 1, chains of reduces become trees first
  /// (ccl-balance-reductions).
  int localTbs = 1;
  /// Threadblock/channel limits (ccl-assign-threadblocks).
  int maxSteps = 64;
  int maxTbsPerChannel = 32;
  int maxChannels = 32;
  /// Extra dependencies cost a nop step each (MSCCL); not for MSCCL++.
  bool countDepNops = true;
  /// Sends block on full connection buffers (MSCCL); MSCCL++ puts land in
  /// the receiver's buffers and never wait for room.
  bool boundedBuffers = true;
  /// Most steps per peerless threadblock (ccl-assign-threadblocks
  /// max-local-steps; 0: maxSteps).
  int maxLocalSteps = 0;
};

/// Appends the default pipeline to `pm` (a ModuleOp pass manager):
///   ccl-verify-collective, [ccl-instances], [ccl-pipeline-chunks],
///   [ccl-verify-collective], [ccl-coalesce-transfers], ccl-lower-to-steps,
///   [ccl-fuse-steps], [ccl-balance-reductions], ccl-assign-threadblocks,
///   ccl-check-deadlock.
void buildDefaultPipeline(mlir::OpPassManager &pm,
                          const PipelineOptions &options);

/// Registers `ccl-default-pipeline` (with the options above) for
/// ccsynth-opt.
void registerDefaultPipeline();

#define GEN_PASS_REGISTRATION
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"

} // namespace ccsynth::ccl
