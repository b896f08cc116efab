//===- MSCCLXml.h - Writing and reading MSCCL algorithm XML ---------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The writer emits exactly the dialect of XML the MSCCL runtime's
// hand-written parser accepts: no prolog, one element per line, attributes
// separated by single spaces in double quotes, every attribute the runtime
// requires. The reader follows the same parser's rules (so a file it
// accepts is one the runtime can load) and keeps line:col for every
// element. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Target/MSCCLProgram.h"

#include <string>
#include <vector>

namespace ccsynth::msccl {

/// Serializes an algorithm as MSCCL XML.
std::string printXml(const Algo &algo);

/// How strictly to read.
struct XmlReadOptions {
  /// Accept an `<algo>` without `outofplace`, `minBytes` or `maxBytes`, as
  /// older msccl-tools wrote it (the current runtime refuses such a file):
  /// the missing ones become outofplace = !inplace, minBytes = 0 and
  /// maxBytes = 0 (no upper bound), each with a located note.
  bool legacyAttributes = false;
};

/// Parses MSCCL XML the way the runtime does: a missing required attribute,
/// a malformed tag, a non-integer value or an unknown element is a located
/// error. `notes` (when given) receives what `options` let through.
Expected<Algo> parseXml(const std::string &file, const std::string &text,
                        const XmlReadOptions &options = {},
                        std::vector<Error> *notes = nullptr);

/// Parses and validates (validateAlgo) a file's text; a parse error becomes
/// the single issue. Empty when the runtime would load the algorithm and
/// its sends and receives match.
std::vector<ProgramIssue> validateXml(const std::string &file,
                                      const std::string &text);

} // namespace ccsynth::msccl
