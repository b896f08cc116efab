//===- Frontend.h - One call from .ccl text to a checked schedule ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The entry points tools use: parse, check and lower a program in one go.
// The schedule returned has NOT been run through the verifier; callers that
// emit it must verify it first (tools do, and report verifier issues at the
// statement recorded in Schedule::transferLocs).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/DSL/Lowering.h"

#include <string>

namespace ccsynth::dsl {

/// Parses, checks and lowers the program `text` read from `file`.
Expected<LoweredProgram> compileProgram(const std::string &file,
                                        const std::string &text,
                                        const LoweringOptions &options = {});

/// Reads `path` and compiles it like compileProgram.
Expected<LoweredProgram> compileFile(const std::string &path,
                                     const LoweringOptions &options = {});

} // namespace ccsynth::dsl
