//===- Diagnostics.cpp - Located errors with caret lines ------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/DSL/Diagnostics.h"

namespace ccsynth::dsl {

Error errorAt(const std::string &text, const SourceLoc &loc,
              std::string message) {
  return Error(std::move(message), loc, caretLine(text, loc));
}

Error errorAt(const std::string &text, const SourceLoc &loc,
              std::string message, const SourceLoc &noteLoc,
              const std::string &note) {
  Error e = errorAt(text, loc, std::move(message));
  addNote(e, text, noteLoc, note);
  return e;
}

void addNote(Error &error, const std::string &text, const SourceLoc &noteLoc,
             const std::string &note) {
  // Error::format's location prefix, reused for the note.
  Error located("", noteLoc);
  std::string extra = located.format();
  extra.resize(extra.size() - std::string("error: ").size());
  extra.append("note: ").append(note);
  std::string caret = caretLine(text, noteLoc);
  if (!caret.empty())
    extra.append("\n").append(caret);
  if (!error.notes.empty())
    error.notes += '\n';
  error.notes += extra;
}

} // namespace ccsynth::dsl
