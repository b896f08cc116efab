//===- CCLOps.h - Ops, enums and interfaces of the ccl dialect ------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Chunk-level ops (AlgorithmOp, TransferOp), step-level containers
// (ProgramOp, GpuOp, ThreadblockOp) and the eight step ops, which all
// implement StepOpInterface.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Dialect/CCL/IR/CCLDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"

#include <optional>

#include "ccsynth/Dialect/CCL/IR/CCLEnums.h.inc"

namespace ccsynth::ccl {

/// The start of a local chunk range read or written by a step.
struct SlotRef {
  Buffer buffer;
  int64_t offset;
};

/// Verifies what every step op must satisfy: positive count, ranges inside
/// the rank's buffers, peers that are other ranks and match the enclosing
/// threadblock, and a well-formed dependency list.
mlir::LogicalResult verifyStepOp(mlir::Operation *op);

/// Converts between the dialect's buffer enum and the core model's.
BufferKind toBufferKind(Buffer buffer);
Buffer fromBufferKind(BufferKind kind);

} // namespace ccsynth::ccl

#include "ccsynth/Dialect/CCL/IR/CCLInterfaces.h.inc"

#define GET_OP_CLASSES
#include "ccsynth/Dialect/CCL/IR/CCLOps.h.inc"
