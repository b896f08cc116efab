//===- Translations.cpp - ccsynth-translate's registered translations -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Dialect/CCL/IR/CCLDialect.h"
#include "ccsynth/Import/MSCCLToSchedule.h"
#include "ccsynth/Import/ScheduleImport.h"
#include "ccsynth/Import/ScheduleText.h"
#include "ccsynth/Target/CodeGenExport.h"
#include "ccsynth/Target/MSCCLExport.h"
#include "ccsynth/Target/MSCCLPPPlan.h"
#include "ccsynth/Target/MSCCLXml.h"

#include "ccsynth/Support/TextLimits.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/ParseUtilities.h"
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
  if (Status s =
          pointToPointOnly(*sched, "the ccl dialect does not express them");
      !s)
    return fail(ctx, s.error(), file);
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

/// Runs an export on MLIR input after checking its nesting: MLIR's parser
/// recurses once per level, and a small file nested thousands deep would
/// overflow its stack.
LogicalResult
exportMlir(const std::shared_ptr<llvm::SourceMgr> &sm, llvm::raw_ostream &os,
           MLIRContext *ctx,
           llvm::function_ref<LogicalResult(Operation *, llvm::raw_ostream &)>
               exporter) {
  auto [file, text] = mainBuffer(sm);
  if (Status s = checkMlirNesting(file, text); !s) {
    fail(ctx, s.error(), file);
    return failure();
  }
  ctx->loadDialect<CCLDialect>();
  ParserConfig config(ctx);
  OwningOpRef<Operation *> op =
      parseSourceFileForTool(sm, config, /*insertImplicitModule=*/false);
  if (!op || failed(verify(*op)))
    return failure();
  return exporter(op.get(), os);
}

} // namespace

void registerTranslations() {
  static llvm::cl::opt<std::string> mscclColl(
      "msccl-coll",
      llvm::cl::desc("--ccl-to-msccl-xml: the MSCCL coll (NCCL call) that "
                     "launches a custom collective"),
      llvm::cl::value_desc("coll"), llvm::cl::init(""));
  TranslateRegistration toXml(
      "ccl-to-msccl-xml",
      "Export a threadblock-assigned ccl.program as MSCCL XML",
      [](const std::shared_ptr<llvm::SourceMgr> &sm, llvm::raw_ostream &os,
         MLIRContext *ctx) {
        return exportMlir(sm, os, ctx,
                          [](Operation *op, llvm::raw_ostream &out) {
                            MscclExportOptions options;
                            options.launchAs = mscclColl;
                            return exportMSCCLXml(op, out, options);
                          });
      });
  static llvm::cl::opt<int> maxTbsPerRank(
      "max-tbs-per-rank",
      llvm::cl::desc("--ccl-to-mscclpp-json: most threadblocks per rank; a "
                     "rank with more gets its threadblocks merged (0: no "
                     "limit)"),
      llvm::cl::init(0));
  TranslateRegistration toPlan(
      "ccl-to-mscclpp-json",
      "Export a threadblock-assigned ccl.program as an MSCCL++ execution "
      "plan",
      [](const std::shared_ptr<llvm::SourceMgr> &sm, llvm::raw_ostream &os,
         MLIRContext *ctx) {
        return exportMlir(sm, os, ctx,
                          [](Operation *op, llvm::raw_ostream &out) {
                            MscclppExportOptions options;
                            auto nodes = programNodes(op);
                            if (failed(nodes))
                              return failure();
                            options.nodeOfRank = *nodes;
                            options.maxThreadblocksPerRank = maxTbsPerRank;
                            options.budgetReason = "--max-tbs-per-rank";
                            return exportMSCCLPPPlan(op, out, options);
                          });
      });
  static llvm::cl::opt<unsigned long long> tileBytes(
      "tile-bytes",
      llvm::cl::desc("--ccl-to-cuda: bytes per chunk slice per pass"),
      llvm::cl::init(1 << 20));
  TranslateRegistration toCuda(
      "ccl-to-cuda",
      "Generate interpreter-free code (CUDA and host C++) from a "
      "threadblock-assigned ccl.program",
      [](const std::shared_ptr<llvm::SourceMgr> &sm, llvm::raw_ostream &os,
         MLIRContext *ctx) {
        return exportMlir(sm, os, ctx,
                          [](Operation *op, llvm::raw_ostream &out) {
                            CodeGenExportOptions options;
                            options.tileBytes = tileBytes;
                            return exportGeneratedCode(op, out, options);
                          });
      });
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
