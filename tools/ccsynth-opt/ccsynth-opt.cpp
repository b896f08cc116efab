//===- ccsynth-opt.cpp - Runs ccl passes on .mlir files -------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A thin MlirOptMain driver: the ccl dialect, its passes (ccl-*), and the
// ccl-default-pipeline. Used by the lit tests and for experimenting with
// single passes. The input is read here first so that a file nested too
// deep for MLIR's recursive parser is refused with an error instead of
// overflowing the stack.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Support/TextLimits.h"
#include "ccsynth/Dialect/CCL/IR/CCLDialect.h"
#include "ccsynth/Dialect/CCL/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

namespace {

/// Allocation failure ends the run with a message and exit code 1 (the
/// default handler aborts). write(2) needs no memory.
void outOfMemory(void *, const char *, bool) {
  static const char msg[] = "ccsynth-opt: error: out of memory\n";
  ssize_t ignored = ::write(2, msg, sizeof msg - 1);
  (void)ignored;
  ::_exit(1);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::install_bad_alloc_error_handler(outOfMemory);
  mlir::DialectRegistry registry;
  registry.insert<ccsynth::ccl::CCLDialect>();
  ccsynth::ccl::registerCCLPasses();
  ccsynth::ccl::registerDefaultPipeline();
  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "ccsynth optimizer driver (ccl dialect)\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects()) {
    llvm::outs() << "Available Dialects: ";
    llvm::interleave(registry.getDialectNames(), llvm::outs(), ",");
    llvm::outs() << "\n";
    return 0;
  }

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFile, &errorMessage);
  if (!input) {
    llvm::errs() << "ccsynth-opt: error: " << errorMessage << "\n";
    return 1;
  }
  std::string text = input->getBuffer().str();
  if (ccsynth::Status s = ccsynth::checkMlirNesting(
          inputFile == "-" ? "<stdin>" : inputFile, text);
      !s) {
    llvm::errs() << "ccsynth-opt: " << s.error().format() << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &errorMessage);
  if (!output) {
    llvm::errs() << "ccsynth-opt: error: " << errorMessage << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
