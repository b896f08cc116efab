//===- FuzzCheck.h - What every reader fuzzer demands of an error ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A reader given arbitrary bytes must return (never crash, hang or trip a
// sanitizer) and, when it refuses them, say why with a message; an error
// that names a position must name one inside the input.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ccsynth::fuzz {

inline void checkError(const Error &e, const std::string &text) {
  int lines = 1 + (int)std::count(text.begin(), text.end(), '\n');
  if (e.message.empty() || e.loc.line < 0 || e.loc.line > lines ||
      e.loc.col < 0 || e.message.starts_with("internal error"))
    std::abort();
}

} // namespace ccsynth::fuzz
