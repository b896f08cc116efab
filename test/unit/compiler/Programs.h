//===- Programs.h - DSL programs lowered for the compiler tests -----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once

#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/DSL/Frontend.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>

namespace ccsynth::test {

/// The program at `path` lowered to its schedule, with `-D` overrides;
/// fails the test case with the program's diagnostic when it does not lower.
inline Schedule lowerProgram(const std::string &path,
                             const std::map<std::string, long long> &defines =
                                 {}) {
  dsl::LoweringOptions lo;
  lo.defines = defines;
  auto lowered = dsl::compileFile(path, lo);
  INFO((lowered ? std::string() : lowered.error().format()));
  REQUIRE(lowered.ok());
  return lowered->schedule;
}

/// A shipped program, sketches/dsl/NAME.ccl, for `ranks` ranks.
inline Schedule shippedProgram(const std::string &name, int ranks) {
  return lowerProgram(std::string(CCSYNTH_SOURCE_DIR) + "/sketches/dsl/" +
                          name + ".ccl",
                      {{"ranks", ranks}});
}

} // namespace ccsynth::test
