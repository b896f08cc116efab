//===- ccsynth-opt.cpp - Runs ccl passes on .mlir files -------------------===//
//
// A thin MlirOptMain driver: the ccl dialect, its passes (ccl-*), and the
// ccl-default-pipeline. Used by the lit tests and for experimenting with
// single passes.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Dialect/CCL/IR/CCLDialect.h"
#include "ccsynth/Dialect/CCL/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<ccsynth::ccl::CCLDialect>();
  ccsynth::ccl::registerCCLPasses();
  ccsynth::ccl::registerDefaultPipeline();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "ccsynth optimizer driver (ccl dialect)\n", registry));
}
