//===- DslTestUtil.h - Helpers shared by the DSL unit tests ---------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/DSL/Frontend.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace ccsynth::dsl::test {

/// Absolute path of a file in the source tree.
inline std::string sourcePath(const std::string &relative) {
  return std::string(CCSYNTH_SOURCE_DIR) + "/" + relative;
}

/// Sorted paths of the files in `dir` (relative to the source tree) whose
/// names end with `suffix`.
inline std::vector<std::string> filesIn(const std::string &dir,
                                        const std::string &suffix) {
  std::vector<std::string> out;
  for (const auto &entry : std::filesystem::directory_iterator(sourcePath(dir)))
    if (entry.is_regular_file() &&
        entry.path().filename().string().ends_with(suffix))
      out.push_back(entry.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string baseName(const std::string &path) {
  return std::filesystem::path(path).filename().string();
}

/// Reads a file that must exist.
inline std::string slurp(const std::string &path) {
  auto text = readFile(path);
  return text ? *text : std::string();
}

/// Compiles program text (file name "test.ccl" unless given).
inline Expected<LoweredProgram>
compile(const std::string &text, std::map<std::string, long long> defines = {},
        const std::string &file = "test.ccl") {
  LoweringOptions options;
  options.defines = std::move(defines);
  return compileProgram(file, text, options);
}

/// The i-th line (0-based) of `text`, or "" past the end.
inline std::string lineOf(const std::string &text, size_t i) {
  std::istringstream in(text);
  std::string line;
  for (size_t k = 0; std::getline(in, line); ++k)
    if (k == i)
      return line;
  return {};
}

} // namespace ccsynth::dsl::test
