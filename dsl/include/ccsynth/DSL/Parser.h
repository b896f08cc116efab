//===- Parser.h - Recursive-descent parser of .ccl programs ---------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Builds the AST of docs/DSL.md's grammar. The parser stops at the first
// syntax error and returns it located at the offending token with a caret
// line. Nesting (blocks, parentheses) and expression height are bounded so
// that no input can exhaust the stack of this or any later stage.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/DSL/AST.h"

#include <string>

namespace ccsynth::dsl {

/// Deepest nesting of blocks and parentheses the parser accepts.
inline constexpr int kMaxNesting = 128;
/// Tallest expression tree the parser accepts (e.g. a chain of 256 `+`).
inline constexpr int kMaxExprHeight = 256;

/// Parses the program `text`, read from `file` (used in locations).
Expected<Program> parseProgram(std::string file, std::string text);

} // namespace ccsynth::dsl
