//===- TextLimits.h - Limits on input text before it reaches a parser -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Recursive-descent parsers (MLIR's among them) recurse once per nesting
// level; a small hostile file nested thousands deep overflows their stack.
// The tools measure nesting here, cheaply and without recursion, before they
// hand text to such a parser.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"

#include <string>

namespace ccsynth {

/// The deepest bracket nesting ('{', '(', '[' and '<') accepted in an MLIR
/// file: a ccl program nests a handful of levels.
inline constexpr int kMaxMlirNesting = 200;

/// Fails, located at the first bracket too deep, when MLIR text nests
/// brackets deeper than `maxDepth` (string literals and `//` comments are
/// skipped).
Status checkMlirNesting(const std::string &file, const std::string &text,
                        int maxDepth = kMaxMlirNesting);

} // namespace ccsynth
