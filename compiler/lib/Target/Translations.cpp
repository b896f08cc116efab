//===- Translations.cpp - ccsynth-translate's registered translations -----===//
#include "ccsynth/Dialect/CCL/IR/CCLDialect.h"
#include "ccsynth/Import/MSCCLToSchedule.h"
#include "ccsynth/Import/ScheduleImport.h"
#include "ccsynth/Import/ScheduleText.h"
#include "ccsynth/Target/MSCCLExport.h"
#include "ccsynth/Target/MSCCLPPPlan.h"
#include "ccsynth/Target/MSCCLXml.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace ccsynth::ccl {

namespace {

void registerCCL(DialectRegistry &registry) { registry.insert<CCLDialect>(); }

/// The main buffer's name and text.
std::pair<std::string, std::string>
mainBuffer(const std::shared_ptr<llvm::SourceMgr> &sm) {
  const llvm::MemoryBuffer *buf = sm->getMemoryBuffer(sm->getMainFileID());
  return {buf->getBufferIdentifier().str(), buf->getBuffer().str()};
}

OwningOpRef<Operation *> fail(MLIRContext *ctx, const Error &e,
                              const std::string &file) {
  Location loc = toLocation(ctx, e.loc, FileLineColLoc::get(ctx, file, 0, 0));
  emitError(loc) << e.message;
  return nullptr;
}

OwningOpRef<Operation *>
importScheduleText(const std::shared_ptr<llvm::SourceMgr> &sm,
                   MLIRContext *ctx) {
  ctx->loadDialect<CCLDialect>();
  auto [file, text] = mainBuffer(sm);
  auto sched = parseScheduleText(file, text);
  if (!sched)
    return fail(ctx, sched.error(), file);
  Location loc = FileLineColLoc::get(ctx, file, 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  importSchedule(*module, *sched, loc);
  return OwningOpRef<Operation *>(module.release());
}

OwningOpRef<Operation *>
importMscclXml(const std::shared_ptr<llvm::SourceMgr> &sm, MLIRContext *ctx) {
  ctx->loadDialect<CCLDialect>();
  auto [file, text] = mainBuffer(sm);
  std::vector<Error> notes;
  auto sched = ccsynth::importMscclXml(file, text, &notes);
  for (const Error &n : notes)
    emitRemark(toLocation(ctx, n.loc, FileLineColLoc::get(ctx, file, 0, 0)))
        << n.message;
  if (!sched)
    return fail(ctx, sched.error(), file);
  Location loc = FileLineColLoc::get(ctx, file, 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  importSchedule(*module, *sched, loc);
  return OwningOpRef<Operation *>(module.release());
}

} // namespace

void registerTranslations() {
  static llvm::cl::opt<std::string> mscclColl(
      "msccl-coll",
      llvm::cl::desc("--ccl-to-msccl-xml: the MSCCL coll (NCCL call) that "
                     "launches a custom collective"),
      llvm::cl::value_desc("coll"), llvm::cl::init(""));
  TranslateFromMLIRRegistration toXml(
      "ccl-to-msccl-xml",
      "Export a threadblock-assigned ccl.program as MSCCL XML",
      [](Operation *op, llvm::raw_ostream &os) {
        MscclExportOptions options;
        options.launchAs = mscclColl;
        return exportMSCCLXml(op, os, options);
      },
      registerCCL);
  TranslateFromMLIRRegistration toPlan(
      "ccl-to-mscclpp-json",
      "Export a threadblock-assigned ccl.program as an MSCCL++ execution "
      "plan",
      [](Operation *op, llvm::raw_ostream &os) {
        return exportMSCCLPPPlan(op, os);
      },
      registerCCL);
  TranslateToMLIRRegistration fromSchedule(
      "import-ccl-schedule",
      "Import a ccsynth schedule JSON as a ccl.algorithm", importScheduleText,
      registerCCL);
  TranslateToMLIRRegistration fromXml(
      "import-msccl-xml",
      "Recover a ccl.algorithm from MSCCL XML (symbolic execution)",
      importMscclXml, registerCCL);
}

} // namespace ccsynth::ccl
