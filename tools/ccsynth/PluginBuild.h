//===- PluginBuild.h - Building plugin libraries from generated code ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `ccsynth compile --target plugin` and `ccsynth run` turn generated
// sources into a shared library with the system C++ compiler (host
// backend) or nvcc (CUDA backend). Sources go to a private temporary
// directory that is removed afterwards; the library is written whole or
// not at all.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"

#include <string>
#include <vector>

namespace ccsynth::cli {

struct PluginBuildOptions {
  std::string backend = "host"; ///< host | cuda
  std::string cxx;              ///< default: $CXX, else c++
  std::string nvcc;             ///< default: nvcc on PATH, else /usr/local/cuda/bin/nvcc
  /// SASS for each; the newest also as PTX, which the driver compiles for
  /// a newer GPU.
  std::vector<std::string> cudaArchs = {"80", "90"};
  unsigned dtypeMask = 0x3ff;
  unsigned opMask = 0xf;
  /// Extra compiler flags (e.g. -fsanitize=thread).
  std::vector<std::string> flags;
  bool verbose = false;
};

/// One generated algorithm: its identifier (the generated namespace suffix)
/// and source text.
struct GeneratedSource {
  std::string name;
  std::string source;
};

/// Builds a plugin holding `algos` and writes it to `output`.
Status buildPlugin(const std::vector<GeneratedSource> &algos,
                   const PluginBuildOptions &options,
                   const std::string &output);

/// Whether `nvcc` (findNvcc's choice when empty) builds SASS for
/// `arch` ("100"): it lists it in `nvcc --list-gpu-code`. False when nvcc
/// cannot be run.
bool nvccBuildsArch(const std::string &nvcc, const std::string &arch);

/// The identifier generated code gives an algorithm (from its source).
Expected<std::string> generatedName(const std::string &source);

/// The plugin descriptors a generated source defines (its
/// CCSYNTH_DEFINE_ALGORITHM lines: the algorithm's own name, then one per
/// further byte range it serves).
std::vector<std::string> descriptorNames(const std::string &source);

/// Parses "fp32,bf16" / "sum,max" (or "all") into ABI bit masks.
Expected<unsigned> parseDtypeMask(const std::string &list);
Expected<unsigned> parseOpMask(const std::string &list);

} // namespace ccsynth::cli
