//===- TempDir.h - A private temporary directory for a test ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once

#include <filesystem>
#include <string>
#include <unistd.h>

namespace ccsynth::test {

/// A fresh directory under the system temp dir (`prefix` + random
/// suffix), removed with everything in it at scope exit.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const char *prefix) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / (std::string(prefix) +
                                                    "XXXXXX"));
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
};

} // namespace ccsynth::test
