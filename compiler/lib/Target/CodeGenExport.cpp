//===- CodeGenExport.cpp - ccl.program to generated C++/CUDA --------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Target/CodeGenExport.h"

#include "ccsynth/Target/MSCCLExport.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace ccsynth::ccl {

namespace {

/// A C++ identifier from a symbol name.
std::string identifierOf(llvm::StringRef name) {
  std::string id;
  for (char c : name)
    id += std::isalnum((unsigned char)c) ? c : '_';
  if (id.empty() || std::isdigit((unsigned char)id[0]))
    id = "a_" + id;
  return id;
}

} // namespace

LogicalResult exportGeneratedCode(Operation *op, llvm::raw_ostream &os,
                                  const CodeGenExportOptions &options,
                                  codegen::CodeGenStats *stats) {
  FailureOr<ProgramOp> prog = findProgram(op);
  if (failed(prog))
    return failure();
  StepOrigins origins;
  FailureOr<msccl::Algo> algo = programToMsccl(*prog, &origins);
  if (failed(algo))
    return failure();
  msccl::ScheduleStepMap scheduleSteps;
  for (const auto &[key, origin] : origins)
    if (auto step = origin->getAttrOfType<IntegerAttr>("step"))
      scheduleSteps[key] = (int)step.getInt();
    else if (origin != prog->getOperation())
      scheduleSteps[key] = 0;
  if (options.switches)
    if (Status s = msccl::attachSwitchThreadblocks(
            *algo, *options.switches, options.switchRefine, &scheduleSteps);
        !s)
      return prog->emitError() << s.error().message;
  auto col = prog->buildCollective();
  if (!col)
    return prog->emitError() << col.error().message;
  if (options.programOnly) {
    if (options.program)
      *options.program = std::move(*algo);
    return success();
  }

  codegen::CodeGenInput in;
  in.algo = &*algo;
  in.collective = &*col;
  in.name = identifierOf(prog->getSymName());
  in.collectiveName = prog->getCollectiveName()
                          ? prog->getCollectiveName()->str()
                          : prog->getCollective().str();
  in.root = (int)prog->getRoot();
  in.origin = options.origin;
  if (in.origin.empty() && prog->getOrigin())
    in.origin = prog->getOrigin()->str();
  in.tileBytes = options.tileBytes;
  in.shareRanks = options.shareRanks;
  in.kernelKnobs = options.kernelKnobs;
  std::string text;
  llvm::raw_string_ostream ts(text);
  prog->print(ts);
  ts.flush();
  in.irHash = codegen::hashText(text);
  in.scheduleSteps = std::move(scheduleSteps);
  in.minBytes = (std::uint64_t)prog->getMinBytes();
  in.maxBytes = (std::uint64_t)prog->getMaxBytes();
  in.moreRanges = options.moreRanges;

  auto code = codegen::generateCode(in);
  if (!code)
    return prog->emitError() << code.error().message;
  if (stats)
    *stats = code->stats;
  if (options.program)
    *options.program = *algo;
  os << code->source;
  return success();
}

} // namespace ccsynth::ccl
