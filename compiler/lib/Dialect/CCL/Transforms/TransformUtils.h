//===- TransformUtils.h - Helpers shared by the ccl passes ----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Chunk refinement of collectives (instances, pipelining), the local
// memory effects of step ops at chunk granularity (with in-place aliases
// resolved), and the in-order pairing of sends and receives.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Dialect/CCL/IR/CCLOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <vector>

namespace ccsynth::ccl {

/// The collective on chunks `factor` times finer: chunk x becomes chunks
/// x*factor .. x*factor+factor-1 and sub-chunk k carries part k of x's
/// value. Built-ins stay built-ins (chunk factor times `factor`).
Expected<Collective> refineCollective(const Collective &col, int factor);

/// Refines every chunk of `alg` into `factor` parts (factor, the pass
/// option `optionName` of `passName`, must be at least 1; 1 changes nothing): each transfer is replaced
/// by what `split` inserts at the builder's point, and the collective and
/// scratch sizes are scaled. Emits an error and fails when the collective
/// cannot be refined.
mlir::LogicalResult
refineAlgorithm(AlgorithmOp alg, int64_t factor, llvm::StringRef passName,
                llvm::StringRef optionName,
                llvm::function_ref<void(mlir::OpBuilder &, TransferOp)> split);

/// Calls `fn` on every program of `module` whose steps are not yet in
/// threadblocks, with its collective. Emits an error and fails on a
/// program whose collective cannot be built, or when `fn` fails.
mlir::LogicalResult forEachUnassignedProgram(
    mlir::ModuleOp module,
    llvm::function_ref<mlir::LogicalResult(ProgramOp, const Collective &)> fn);

/// A chunk slot of one rank after in-place aliasing, packed as
/// buffer << 32 | index.
using Slot = int64_t;
Slot slotOf(const Collective &col, int rank, Buffer buffer, int64_t index);

/// Slots a step reads and writes.
struct Effects {
  llvm::SmallVector<Slot, 4> reads;
  llvm::SmallVector<Slot, 4> writes;
};
Effects effectsOf(StepOpInterface step, const Collective &col, int rank);

/// The slots of a local range.
llvm::SmallVector<Slot, 4> rangeSlots(const Collective &col, int rank,
                                      SlotRef ref, int64_t count);

/// A send paired with its receive: (rank, index in that rank's step list).
struct StepPos {
  int rank = 0;
  int index = 0;
};
struct PairedMessage {
  StepPos send;
  StepPos recv;
};

/// Pairs, for every ordered rank pair, the k-th send with the k-th receive
/// in the given per-rank step order. On a count or number mismatch, emits
/// an error on the offending step and fails.
mlir::FailureOr<std::vector<PairedMessage>>
pairMessages(const std::vector<std::vector<StepOpInterface>> &steps);

} // namespace ccsynth::ccl
