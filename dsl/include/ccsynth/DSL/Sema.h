//===- Sema.h - Static checks of .ccl programs ----------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Before anything runs, Sema walks the whole tree (both branches of every
// `if`, every loop body once) and checks what does not depend on parameter
// values: every name is declared before use and not redeclared in its scope,
// every operator and built-in function gets operands of the right type and
// number, and every statement sits where it is allowed (parameters, the
// collective and the scratch size at the top level in that order, transfers
// after the collective and outside its conditions, `input(...)` only in
// `pre`, `output(...) = ...` only in `post`, no nested `step` blocks).
// Value-dependent checks (ranges, races, division by zero) are Lowering's.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/DSL/AST.h"

namespace ccsynth::dsl {

/// Static types of expressions.
enum class Type {
  Int,
  Bool,
  Chunk,  ///< chunk(rank, buffer, index[, count])
  Buffer, ///< input, output, scratch
  Value,  ///< a set of input values, in postconditions
};

/// "an int", "a bool", ... for messages.
const char *describe(Type type);

/// Built-in functions callable in expressions, with their arities.
struct BuiltinFunction {
  const char *name;
  int minArgs;
  int maxArgs;
  /// How the call is written, for arity errors: "chunk(rank, buffer, ...)".
  const char *signature;
};
/// The table of built-in functions (chunk, min, max, mod, ...).
const std::vector<BuiltinFunction> &builtinFunctions();

/// Runs the static checks; returns the first problem, located.
Status checkProgram(const Program &prog);

} // namespace ccsynth::dsl
