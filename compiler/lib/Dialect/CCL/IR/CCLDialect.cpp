//===- CCLDialect.cpp - Registration of the ccl dialect -------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Dialect/CCL/IR/CCLDialect.h"

#include "ccsynth/Dialect/CCL/IR/CCLOps.h"

using namespace mlir;
using namespace ccsynth::ccl;

#include "ccsynth/Dialect/CCL/IR/CCLDialect.cpp.inc"

void CCLDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ccsynth/Dialect/CCL/IR/CCLOps.cpp.inc"
      >();
}
