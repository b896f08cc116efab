//===- CodeGen.h - Interpreter-free code from a step-level program --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Turns a threadblock-assigned program (in MSCCL's model, see
// MSCCLProgram.h) into one C++ source that compiles with nvcc (device) and
// with the host C++ compiler (threads as threadblocks). Each (rank,
// threadblock) becomes a straight-line function of primitive calls whose
// offsets, counts, peers and flag ids are constants; a balanced tree of
// direct branches picks the function once. See docs/runtime.md.
//
// Plain C++ (no MLIR): the MLIR side converts ccl.program with
// programToMsccl and calls generateCode.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Target/KernelKnobs.h"
#include "ccsynth/Target/MSCCLProgram.h"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace ccsynth::codegen {

/// Bytes of the larger buffer a plugin descriptor serves (0 as maxBytes:
/// unbounded), and the tile it runs the code with (0: the program's).
struct ByteRange {
  std::uint64_t minBytes = 0, maxBytes = 0;
  std::uint64_t tileBytes = 0;
};

/// Whether generated code can run with `tileBytes` per chunk per pass: a
/// positive multiple of 16 bytes.
inline bool validTileBytes(long long tileBytes) {
  return tileBytes >= 16 && tileBytes % 16 == 0;
}

struct CodeGenInput {
  const msccl::Algo *algo = nullptr;
  const Collective *collective = nullptr;
  /// Identifier-safe name; the C++ namespace of the algorithm.
  std::string name;
  /// The collective's name as the plugin ABI reports it.
  std::string collectiveName;
  int root = 0;
  /// Where the algorithm came from (a file, "synthesized", ...).
  std::string origin;
  /// Hash of the IR the program came from (printed in the header).
  std::string irHash;
  /// The schedule step each (rank, tb, step) was lowered from, for the
  /// comments; absent entries print no schedule step.
  std::map<std::tuple<int, int, int>, int> scheduleSteps;
  /// The byte range the algorithm is meant for (0 = unbounded).
  std::uint64_t minBytes = 0;
  std::uint64_t maxBytes = 0;
  /// Further ranges it serves (ascending, disjoint, above maxBytes): in a
  /// plugin each is a descriptor of its own, `<name>_range<k>` (k = 2, ...),
  /// running the same code, with its own tile where it names one.
  std::vector<ByteRange> moreRanges;
  /// Bytes per chunk slice per pass (multiple of 16).
  std::uint64_t tileBytes = 1 << 20;
  /// Threadblocks of different ranks whose code differs only in integers
  /// that are expressions of the rank share one function.
  bool shareRanks = true;
  /// CUDA kernel knobs, one per SM architecture (empty: the defaults for
  /// sm_80 and sm_90); sorted and checked by generateCode.
  std::vector<KernelKnob> kernelKnobs;
};

/// Statistics of the generated code (also in its header comment).
struct CodeGenStats {
  int ranks = 0;
  int threadblocks = 0;
  int steps = 0;
  int messages = 0;
  int directMessages = 0;
  int landingChunks = 0;
  /// Threadblock functions emitted, and how many of them serve several
  /// ranks (parameterized by rank).
  int functions = 0;
  int sharedFunctions = 0;
};

struct GeneratedCode {
  std::string source;
  CodeGenStats stats;
};

/// Generates the source, or fails with the reason (unmatched messages, a
/// collective the runtime cannot size, ...).
Expected<GeneratedCode> generateCode(const CodeGenInput &input);

/// 64-bit FNV-1a of `text`, as 16 hex digits.
std::string hashText(const std::string &text);

} // namespace ccsynth::codegen
