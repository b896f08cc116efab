//===- MSCCLPPPlan.h - ccl.program to an MSCCL++ execution plan -----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Writes the JSON that MSCCL++'s executor loads (src/core/executor/
// execution_plan.cc): gpus[rank] with input/output/scratch chunk counts,
// channels (paired per rank pair in channel order), the remote buffers each
// rank writes, semaphores for cross-threadblock dependencies, and per
// threadblock its channels, remote buffer references and ops.
//
// Ranks of one node talk over memory channels (peer-mapped memory, CUDA
// IPC); ranks on different nodes over port channels (MSCCL++'s proxy
// drives the transfer, over InfiniBand between IPC domains). Lowering of
// one MSCCL step (Simple protocol):
//   send, same node   -> [nop] put(local -> peer's buffer), nop, signal
//   send, other node  -> [nop] pwsf (put, signal, and flush: the proxy has
//                        read the source before the threadblock goes on)
//   recv      -> wait, nop [, copy from the staging chunk]
//   recv+reduce -> wait, nop, re(dst <- src + staging)
//   a dependency -> sem_acquire before, nop + sem_release after the producer
//                   (a nop before the consumer when both run in one plan
//                   threadblock)
// Switch operations (NVLink SHARP) run in threadblocks of their own, one
// per rank and lane of SwitchLowering.h, on switch channels (one per
// switch and buffer, over the switch's ranks): a reduction together with
// the multicast of its result back to its place is `glres`, a multicast
// `gstore`. The lanes of a switch meet in a barrier (signal and wait to
// every other rank of the group, on channels of their own) before their
// first operation, so that every rank's input is in place, and after
// their last, so that no rank returns before every store reached it.
// A plan threadblock runs one MSCCL threadblock, or, on a rank with more
// than the threadblock budget, several merged (MSCCLPPPacking.h).
// A receive whose destination is written exactly once on its rank and holds
// no input data gets the put directly; others are staged in fresh scratch
// chunks so no put can overwrite data the receiver still reads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Target/MSCCLPPPacking.h"
#include "ccsynth/Target/SwitchLowering.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace ccsynth::ccl {

/// MSCCL++ executor limits (execution_common.hpp).
inline constexpr int kMscclppMaxOps = 64;        // MAX_OPERATION
inline constexpr int kMscclppMaxChannels = 16;   // MAX_CHANNEL per tb
inline constexpr int kMscclppMaxSemaphores = 16; // per operation

struct MscclppExportOptions {
  /// Most threadblocks per rank (0: no limit). The executor launches all
  /// of a rank's threadblocks at once and they wait on each other, so they
  /// must all be resident: at most the GPU's SM count times the blocks of
  /// num_threads_per_block (1024) threads an SM holds. A rank whose
  /// program has more gets its threadblocks merged into at most this many
  /// (MSCCLPPPacking.h); ranks within it are written one to one.
  int maxThreadblocksPerRank = 0;
  /// What the limit is, for the error ("108 SMs of an A100, ...").
  std::string budgetReason;
  /// Node of each rank (from the program's topology). Peers on different
  /// nodes are joined by port channels, peers on one node by memory
  /// channels; empty: every rank on one node.
  std::vector<int> nodeOfRank;
  /// Set (when given) on failure if only the executor's per-threadblock
  /// limits were in the way (64 operations, or no merge of a rank's
  /// threadblocks into the budget fits them), which fewer steps per
  /// threadblock can fix.
  bool *fewerStepsMayFit = nullptr;
  /// Receives (when given, on success) which MSCCL threadblocks each plan
  /// threadblock runs.
  msccl::Packing *packing = nullptr;
  /// Switch threadblocks (SwitchLowering.h) the plan runs beside the
  /// program's, on switch channels: one plan threadblock per rank and
  /// lane, after the program's; their chunks are the schedule's cut into
  /// `switchRefine` (the program's instances).
  const msccl::SwitchLowering *switches = nullptr;
  int switchRefine = 1;
};

/// The node of each rank of the topology the program in `op` names (its
/// `topology` attribute, a built-in name or a file); empty when it names
/// none. Fails with a diagnostic when the topology cannot be loaded.
mlir::FailureOr<std::vector<int>> programNodes(mlir::Operation *op);

/// Writes the single ccl.program in `op` as an MSCCL++ execution plan.
/// Fails (with diagnostics, writing nothing) when the program exceeds the
/// executor's limits or cannot be merged into the threadblock budget, its
/// sends and receives do not match, or it asks for a protocol other than
/// Simple (the plan's packet protocol is not generated). Rooted collectives
/// record their root in a `root` field.
mlir::LogicalResult exportMSCCLPPPlan(mlir::Operation *op,
                                      llvm::raw_ostream &os,
                                      const MscclppExportOptions &options = {});

} // namespace ccsynth::ccl
