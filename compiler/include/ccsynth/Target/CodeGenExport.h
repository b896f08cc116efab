//===- CodeGenExport.h - ccl.program to generated C++/CUDA ----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `exportGeneratedCode(op, os)` plus the registered translation
// `ccsynth-translate --ccl-to-cuda`: a threadblock-assigned program becomes
// one source that nvcc and the host C++ compiler both build (see
// CodeGen.h and docs/runtime.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Target/CodeGen.h"
#include "ccsynth/Target/SwitchLowering.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

namespace ccsynth::ccl {

struct CodeGenExportOptions {
  /// Bytes per chunk slice per pass.
  std::uint64_t tileBytes = 1 << 20;
  /// Where the program came from, for the header comment.
  std::string origin;
  /// Symmetric ranks share one rank-parameterized function (false: one
  /// function per rank and threadblock, for comparison).
  bool shareRanks = true;
  /// CUDA kernel knobs per SM architecture (empty: the defaults).
  std::vector<codegen::KernelKnob> kernelKnobs;
  /// Switch threadblocks to run next to the program's own (the schedule's
  /// switch operations, lowered apart from its point-to-point transfers).
  const msccl::SwitchLowering *switches = nullptr;
  /// The program's chunks per schedule chunk (its instances).
  int switchRefine = 1;
  /// Receives the step program the code was generated from (optional).
  msccl::Algo *program = nullptr;
  /// Byte ranges served besides the program's min_bytes..max_bytes.
  std::vector<codegen::ByteRange> moreRanges;
  /// Stops once `program` is filled: no source is generated.
  bool programOnly = false;
};

/// Writes the generated source of the program in `op`; `stats` (optional)
/// receives its size figures.
mlir::LogicalResult exportGeneratedCode(mlir::Operation *op,
                                        llvm::raw_ostream &os,
                                        const CodeGenExportOptions &options,
                                        codegen::CodeGenStats *stats = nullptr);

} // namespace ccsynth::ccl
