//===- CCLDialect.h - The ccl dialect -------------------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Declares the dialect class generated from CCLBase.td. Include CCLOps.h for
// the ops.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Dialect.h"

#include "ccsynth/Dialect/CCL/IR/CCLDialect.h.inc"
