//===- Frontend.cpp - One call from .ccl text to a checked schedule -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/DSL/Frontend.h"

#include "ccsynth/DSL/Parser.h"

namespace ccsynth::dsl {

Expected<LoweredProgram> compileProgram(const std::string &file,
                                        const std::string &text,
                                        const LoweringOptions &options) {
  auto prog = parseProgram(file, text);
  if (!prog)
    return prog.error();
  return lowerProgram(*prog, options);
}

Expected<LoweredProgram> compileFile(const std::string &path,
                                     const LoweringOptions &options) {
  auto text = readFile(path);
  if (!text)
    return Error(text.error().message, SourceLoc{path});
  dropByteOrderMark(*text);
  // The text moves into the program: a file is held once while it is read.
  auto prog = parseProgram(path, text.take());
  if (!prog)
    return prog.error();
  return lowerProgram(*prog, options);
}

} // namespace ccsynth::dsl
