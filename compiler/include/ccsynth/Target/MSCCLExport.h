//===- MSCCLExport.h - ccl.program to MSCCL XML ---------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Shaped like CIRCT's exporters: `exportMSCCLXml(op, os)` plus a registered
// translation (`ccsynth-translate --ccl-to-msccl-xml`). The exporter
// converts a threadblock-assigned program to MSCCL's model (nop steps carry
// the extra dependencies), checks every runtime rule, and only then writes;
// a program the runtime would reject produces diagnostics and no output.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Dialect/CCL/IR/CCLOps.h"
#include "ccsynth/Target/MSCCLProgram.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <tuple>

namespace ccsynth::ccl {

/// The op each MSCCL step came from, keyed by (rank, tb id, step index);
/// a nop maps to the step whose dependency it carries.
using StepOrigins = std::map<std::tuple<int, int, int>, mlir::Operation *>;

struct MscclExportOptions {
  /// The MSCCL `coll` (the NCCL call) that launches a custom collective;
  /// MSCCL has no `coll` of its own for one. Required for custom
  /// collectives, refused for built-in ones.
  std::string launchAs;
};

/// Converts a threadblock-assigned program to MSCCL's model (a custom
/// collective keeps its own name as `coll`). Fails with a diagnostic when
/// the program is not assigned yet.
mlir::FailureOr<msccl::Algo> programToMsccl(ProgramOp prog,
                                            StepOrigins *origins = nullptr);

/// Sets `algo.coll` and `nchunksperloop` for export: a built-in
/// collective's own, or the NCCL call `options.launchAs` that launches a
/// custom collective (failing, with the calls that would fit, when it is
/// missing or the call's buffers cannot hold the collective's).
mlir::LogicalResult bindCollective(ProgramOp prog, msccl::Algo &algo,
                                   const MscclExportOptions &options);

/// The single ccl.program in `op` (a module or a program itself), or a
/// diagnostic.
mlir::FailureOr<ProgramOp> findProgram(mlir::Operation *op);

/// The program in `op` in MSCCL's model, bound to its collective and
/// checked against every runtime rule: what exportMSCCLXml writes, without
/// the text (the tuner times it).
mlir::FailureOr<msccl::Algo>
exportMSCCLAlgo(mlir::Operation *op, const MscclExportOptions &options = {});

/// Writes the program in `op` as MSCCL XML.
mlir::LogicalResult exportMSCCLXml(mlir::Operation *op, llvm::raw_ostream &os,
                                   const MscclExportOptions &options = {});

/// Reports each issue as an error at the step it names (or at `fallback`).
void emitIssues(llvm::ArrayRef<msccl::ProgramIssue> issues,
                const StepOrigins &origins, mlir::Operation *fallback);

/// Registers the ccl translations (to MSCCL XML, to an MSCCL++ plan, and
/// from schedule JSON / MSCCL XML to ccl.algorithm).
void registerTranslations();

} // namespace ccsynth::ccl
