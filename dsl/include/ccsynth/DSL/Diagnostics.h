//===- Diagnostics.h - Located errors with caret lines for .ccl programs --===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Every DSL stage reports the first problem it finds as a ccsynth::Error
// whose location is the offending token and whose notes hold the source
// line with a caret under that token (and, for errors that involve two
// places, a `note:` pointing at the other one).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"

#include <string>

namespace ccsynth::dsl {

/// An error at `loc` in a program whose text is `text`, with a caret line.
Error errorAt(const std::string &text, const SourceLoc &loc,
              std::string message);

/// Like errorAt, plus `file:line:col: note: <note>` and a caret line for a
/// second location (e.g. the earlier definition of a redefined name).
Error errorAt(const std::string &text, const SourceLoc &loc,
              std::string message, const SourceLoc &noteLoc,
              const std::string &note);

/// Appends `file:line:col: note: <note>` and a caret line for `noteLoc`.
void addNote(Error &error, const std::string &text, const SourceLoc &noteLoc,
             const std::string &note);

} // namespace ccsynth::dsl
