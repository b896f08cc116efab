//===- Config.cpp - The interposer's configuration ------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Read once per process: warn, then the plugin list (libraries, and config
// files of `plugin PATH` lines: readConfig), each plugin's algorithms
// (addPlugin), byte counts from the environment (readBytes) and config(),
// which reads:
//   CCSYNTH_PLUGINS       plugin paths and config files, ':'-separated
//   CCSYNTH_TIMEOUT       seconds one wait of a plugin launch may take (30)
//   CCSYNTH_WINDOW_BYTES  host staging bytes per rank and buffer (16 MiB)
//   CCSYNTH_DEVICE_WINDOW_BYTES  device output staging per rank (64 MiB)
//   CCSYNTH_DEBUG=1       log each decision once per (communicator,
//                         collective, size class) with its reason
// See docs/runtime.md, "The NCCL-API interposer".
//
//===----------------------------------------------------------------------===//
#include "Config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace ccsynth::interposer::detail {

void warn(const std::string &msg) {
  std::fprintf(stderr, "ccsynth-nccl: %s\n", msg.c_str());
}

namespace {

bool isLibrary(const std::string &p) {
  return p.ends_with(".so") || p.find(".so.") != std::string::npos;
}

/// Reads a config file: lines `plugin PATH` (relative to the file), blank
/// lines and `#` comments. Null and `error` on anything else.
std::optional<std::vector<std::string>> readConfig(const std::string &file,
                                                   std::string &error) {
  std::ifstream in(file);
  if (!in) {
    error = "cannot read plugin config '" + file + "'";
    return std::nullopt;
  }
  std::string dir;
  if (auto slash = file.rfind('/'); slash != std::string::npos)
    dir = file.substr(0, slash + 1);
  std::vector<std::string> paths;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (auto hash = line.find('#'); hash != std::string::npos)
      line.resize(hash);
    std::istringstream words(line);
    std::string key, path, extra;
    if (!(words >> key))
      continue;
    if (key != "plugin" || !(words >> path) || (words >> extra)) {
      error = "malformed plugin config '" + file + "' line " +
              std::to_string(no) + ": expected 'plugin PATH'";
      return std::nullopt;
    }
    paths.push_back(path[0] == '/' ? path : dir + path);
  }
  return paths;
}

void addPlugin(Config &c, const std::string &path) {
  std::string error;
  auto p = rt::Plugin::open(path, error);
  if (!p) {
    warn("ignoring plugin: " + error + "; its collectives go to NCCL");
    return;
  }
  const ccsynthCudaComms *comms = p->cudaComms();
  for (const ccsynthAlgorithm &a : *p) {
    c.algos.push_back({&a, path, p.get()});
    c.facts.push_back({&a, path, comms && comms->version >= 2});
  }
  c.plugins.push_back(std::move(p));
}

/// A byte count of at least `least` from the environment variable `name`
/// into `bytes`; left as it is (with a warning) when malformed.
void readBytes(const char *name, unsigned long long least, const char *fallback,
               std::uint64_t &bytes) {
  const char *w = std::getenv(name);
  if (!w)
    return;
  char *end = nullptr;
  unsigned long long v = std::strtoull(w, &end, 10);
  if (end && end != w && !*end && v >= least)
    bytes = v;
  else
    warn(std::string(name) + "='" + w + "' is not a byte count >= " +
         std::to_string(least) + "; using " + fallback);
}

} // namespace

Config &config() {
  static Config *c = [] {
    auto *c = new Config; // plugins stay loaded until exit
    const char *debug = std::getenv("CCSYNTH_DEBUG");
    c->debug = debug && *debug && std::strcmp(debug, "0") != 0;
    if (const char *t = std::getenv("CCSYNTH_TIMEOUT")) {
      char *end = nullptr;
      double v = std::strtod(t, &end);
      if (end && end != t && !*end && v > 0 && v <= 86400)
        c->timeout = v;
      else
        warn(std::string("CCSYNTH_TIMEOUT='") + t +
             "' is not a number of seconds above 0 and at most 86400; "
             "using 30");
    }
    readBytes("CCSYNTH_WINDOW_BYTES", 64, "16 MiB", c->windowBytes);
    readBytes("CCSYNTH_DEVICE_WINDOW_BYTES", 256, "64 MiB",
              c->deviceWindowBytes);
    const char *list = std::getenv("CCSYNTH_PLUGINS");
    std::string entries = list ? list : "";
    std::size_t at = 0;
    while (at <= entries.size() && !entries.empty()) {
      std::size_t colon = entries.find(':', at);
      std::string e = entries.substr(
          at, colon == std::string::npos ? std::string::npos : colon - at);
      at = colon == std::string::npos ? entries.size() + 1 : colon + 1;
      if (e.empty())
        continue;
      if (isLibrary(e)) {
        addPlugin(*c, e);
        continue;
      }
      std::string error;
      auto paths = readConfig(e, error);
      if (!paths) {
        warn(error + "; none of its plugins is loaded, its collectives go "
                     "to NCCL");
        continue;
      }
      for (const std::string &p : *paths)
        addPlugin(*c, p);
    }
    return c;
  }();
  return *c;
}

} // namespace ccsynth::interposer::detail
