//===- HostRunMain.cpp - Runs a host plugin algorithm for the tests -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `host-run PLUGIN COUNT DTYPE OP [TIMEOUT [threads|processes]]`: loads the
// plugin's only (or first) algorithm, runs it with ranks as threads (or
// processes) and checks it against the reference. Built twice: plainly and
// under ThreadSanitizer (then the plugin must be built with
// -fsanitize=thread too). Exit 0 correct, 3
// wrong result, 1 launch failure or bad usage.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/runtime/HostRunner.h"
#include "ccsynth/runtime/PluginLoader.h"

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char **argv) {
  using namespace ccsynth::rt;
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: %s PLUGIN COUNT DTYPE OP [TIMEOUT "
                 "[threads|processes]]\n",
                 argv[0]);
    return 1;
  }
  std::string error;
  auto plugin = Plugin::open(argv[1], error);
  if (!plugin) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  HostRunOptions o;
  o.count = std::strtoull(argv[2], nullptr, 10);
  o.dtype = parseDtype(argv[3]);
  o.op = parseOp(argv[4]);
  o.iters = 2;
  o.timeoutSeconds = argc > 5 ? std::atof(argv[5]) : 30;
  if (o.dtype < 0 || o.op < 0) {
    std::fprintf(stderr, "error: unknown dtype or op\n");
    return 1;
  }
  std::string ranksAs = argc > 6 ? argv[6] : "threads";
  if (ranksAs != "threads" && ranksAs != "processes") {
    std::fprintf(stderr, "error: ranks as '%s'? (threads or processes)\n",
                 ranksAs.c_str());
    return 1;
  }
  HostRunReport r = ranksAs == "processes"
                        ? runHostAlgorithmProcesses(*plugin->begin(), o)
                        : runHostAlgorithm(*plugin->begin(), o);
  if (!r.error.empty()) {
    std::fprintf(stderr, "error: %s\n", r.error.c_str());
    return 1;
  }
  if (r.launchError) {
    std::fprintf(stderr, "error: launch failed: %s\n", r.launchError->message);
    return 1;
  }
  if (r.mismatch) {
    std::fprintf(stderr,
                 "error: wrong result: rank %d element %zu is %s, expected "
                 "%s\n",
                 r.mismatch->rank, r.mismatch->element,
                 r.mismatch->found.c_str(), r.mismatch->expected.c_str());
    return 3;
  }
  std::printf("%s: correct\n", plugin->begin()->name);
  return 0;
}
