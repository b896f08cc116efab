//===- PluginLoader.h - Opening plugin libraries and checking their ABI ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Used by `ccsynth run`, `ccsynth plugin info` and the NCCL-API interposer.
// A library is refused, with one message saying why, when it cannot be
// opened, lacks the entry symbol, reports another ABI version, or carries a
// descriptor that does not hold together (and when its optional CUDA
// communicator entry has another version).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/ccsynth_plugin.h"

#include <memory>
#include <string>
#include <vector>

namespace ccsynth::rt {

/// An opened plugin; closes the library when destroyed.
class Plugin {
public:
  ~Plugin();
  Plugin(const Plugin &) = delete;
  Plugin &operator=(const Plugin &) = delete;

  /// Opens `path`; on failure returns null and sets `error`.
  static std::unique_ptr<Plugin> open(const std::string &path,
                                      std::string &error);

  const std::string &path() const { return file; }
  const ccsynthPlugin &table() const { return *plugin; }
  const ccsynthAlgorithm *begin() const { return plugin->algorithms; }
  const ccsynthAlgorithm *end() const {
    return plugin->algorithms + plugin->num_algorithms;
  }
  /// The algorithm called `name`, or null.
  const ccsynthAlgorithm *find(const std::string &name) const;
  /// The CUDA communicator entry (CCSYNTH_CUDA_COMMS_ENTRY), or null when
  /// the plugin has none (host plugins, CUDA plugins built before it).
  const ccsynthCudaComms *cudaComms() const { return comms; }

private:
  Plugin() = default;
  void *handle = nullptr;
  const ccsynthPlugin *plugin = nullptr;
  const ccsynthCudaComms *comms = nullptr;
  std::string file;
};

/// Names used in tables and messages.
const char *dtypeName(int dtype);
const char *opName(int op);
const char *backendName(int backend);
/// "float32" / "fp32" / "f32" / NCCL's "ncclFloat32" ...; -1 when unknown.
int parseDtype(const std::string &name);
int parseOp(const std::string &name);
/// Comma-separated names of the bits set.
std::string dtypeMaskNames(unsigned mask);
std::string opMaskNames(unsigned mask);
std::string transportMaskNames(unsigned mask);

} // namespace ccsynth::rt
