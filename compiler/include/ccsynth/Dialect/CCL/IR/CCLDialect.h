//===- CCLDialect.h - The ccl dialect -------------------------------------===//
//
// Declares the dialect class generated from CCLBase.td. Include CCLOps.h for
// the ops.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Dialect.h"

#include "ccsynth/Dialect/CCL/IR/CCLDialect.h.inc"
