//===- ScheduleImport.h - Core-model schedules to and from ccl.algorithm --===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The bridge between the core model and the dialect: a Schedule becomes a
// ccl.algorithm with one ccl.transfer per transfer (keeping each
// transfer's source location), and an algorithm converts back to a
// Schedule, which is how passes reuse the core verifier.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Dialect/CCL/IR/CCLOps.h"

#include "mlir/IR/BuiltinOps.h"

namespace ccsynth::ccl {

/// Appends a ccl.algorithm describing `schedule` to `module`. Transfers are
/// located at `schedule.transferLocs` when known, else at `fallback`.
AlgorithmOp importSchedule(mlir::ModuleOp module, const Schedule &schedule,
                           mlir::Location fallback);

/// The schedule `op` describes; transfer i is the i-th ccl.transfer.
/// Invalid metadata is reported as a diagnostic on `op`.
mlir::FailureOr<Schedule> exportSchedule(AlgorithmOp op);

/// Sets the collective attributes (collective, ranks, chunk_factor, root,
/// inplace, input/output chunks, custom conditions) of an algorithm or
/// program op from `collective`.
void setCollectiveAttrs(mlir::Operation *op, const Collective &collective);

/// Builds a FileLineColLoc for a core-model location (or `fallback`).
mlir::Location toLocation(mlir::MLIRContext *ctx, const SourceLoc &loc,
                          mlir::Location fallback);

} // namespace ccsynth::ccl
