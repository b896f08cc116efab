//===- Config.h - The interposer's configuration --------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Interposer-private: the plugins loaded in this process, their
// algorithms, and the settings read from the CCSYNTH_* environment, all
// read once (Config.cpp), and the one way the interposer warns. See
// docs/runtime.md, "The NCCL-API interposer".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Decide.h"

#include "ccsynth/runtime/PluginLoader.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ccsynth::interposer::detail {

namespace rt = ccsynth::rt;

struct Algo {
  const ccsynthAlgorithm *desc;
  std::string plugin;
  const rt::Plugin *owner;
};

struct Config {
  std::vector<std::unique_ptr<rt::Plugin>> plugins;
  std::vector<Algo> algos;
  std::vector<AlgoFacts> facts; ///< the same, as Decide.h reads them
  bool debug = false;
  double timeout = 30;
  std::uint64_t windowBytes = 16ull << 20;
  std::uint64_t deviceWindowBytes = 64ull << 20;
};

/// One line on stderr, prefixed "ccsynth-nccl: ".
void warn(const std::string &msg);

/// The process's configuration, read from the environment at the first call
/// (plugins stay loaded until exit).
Config &config();

} // namespace ccsynth::interposer::detail
