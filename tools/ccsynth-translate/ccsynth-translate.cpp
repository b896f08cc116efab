//===- ccsynth-translate.cpp - Translations to and from the ccl dialect ---===//
//
//   --ccl-to-msccl-xml      assigned ccl.program -> MSCCL XML
//   --ccl-to-mscclpp-json   assigned ccl.program -> MSCCL++ execution plan
//   --import-ccl-schedule   schedule JSON -> ccl.algorithm
//   --import-msccl-xml      MSCCL XML -> ccl.algorithm (symbolic execution)
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Target/MSCCLExport.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  ccsynth::ccl::registerTranslations();
  return mlir::failed(mlir::mlirTranslateMain(
             argc, argv, "ccsynth translation driver (ccl dialect)"))
             ? 1
             : 0;
}
