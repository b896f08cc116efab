//===- ccsynth-translate.cpp - Translations to and from the ccl dialect ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//   --ccl-to-msccl-xml      assigned ccl.program -> MSCCL XML
//   --ccl-to-mscclpp-json   assigned ccl.program -> MSCCL++ execution plan
//   --import-ccl-schedule   schedule JSON -> ccl.algorithm
//   --import-msccl-xml      MSCCL XML -> ccl.algorithm (symbolic execution)
//
// MLIR input nested too deep for MLIR's recursive parser is refused with an
// error (see the exports in Translations.cpp); allocation failure is an
// error, not an abort.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Target/MSCCLExport.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "llvm/Support/ErrorHandling.h"

#include <unistd.h>

namespace {

/// Allocation failure ends the run with a message and exit code 1 (the
/// default handler aborts). write(2) needs no memory.
void outOfMemory(void *, const char *, bool) {
  static const char msg[] = "ccsynth-translate: error: out of memory\n";
  ssize_t ignored = ::write(2, msg, sizeof msg - 1);
  (void)ignored;
  ::_exit(1);
}

} // namespace

int main(int argc, char **argv) {
  llvm::install_bad_alloc_error_handler(outOfMemory);
  ccsynth::ccl::registerTranslations();
  return mlir::failed(mlir::mlirTranslateMain(
             argc, argv, "ccsynth translation driver (ccl dialect)"))
             ? 1
             : 0;
}
