//===- TextLimits.cpp - Nesting limits checked before parsing -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Support/TextLimits.h"

namespace ccsynth {

Status checkMlirNesting(const std::string &file, const std::string &text,
                        int maxDepth) {
  int depth = 0;
  for (size_t p = 0; p < text.size(); ++p) {
    char c = text[p];
    if (c == '"') {
      for (++p; p < text.size() && text[p] != '"' && text[p] != '\n'; ++p)
        if (text[p] == '\\')
          ++p;
      continue;
    }
    if (c == '/' && p + 1 < text.size() && text[p + 1] == '/') {
      while (p < text.size() && text[p] != '\n')
        ++p;
      continue;
    }
    if (c == '{' || c == '(' || c == '[' || c == '<') {
      if (++depth > maxDepth) {
        SourceLoc loc = locationOf(file, text, p);
        return Error("input nested deeper than " + std::to_string(maxDepth) +
                         " levels (a limit that keeps the parser's stack "
                         "safe)",
                     loc, caretLine(text, loc));
      }
    } else if ((c == '}' || c == ')' || c == ']' || c == '>') && depth > 0) {
      // '->' is an arrow, not a closing bracket.
      if (c == '>' && p > 0 && text[p - 1] == '-')
        continue;
      --depth;
    }
  }
  return Status::success();
}

} // namespace ccsynth
