//===- RealNccl.cpp - Loading the real NCCL library once ------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// CCSYNTH_NCCL_LIB names the library (default: the soname libnccl.so.2).
// It is opened with RTLD_DEEPBIND | RTLD_LOCAL so that its references to
// its own API bind inside it, never back to the interposer. When the
// application already linked it, dlopen returns that copy (DEEPBIND then
// has no effect on it): ForwardScope catches a call coming back.
//
//===----------------------------------------------------------------------===//
#include "Interposer.h"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ccsynth::interposer {

namespace {

thread_local int forwardDepth = 0;

struct RealLibrary {
  void *handle = nullptr;
  std::mutex mutex;
  std::unordered_map<std::string, void *> symbols;
};

RealLibrary &library() {
  static RealLibrary *lib = [] {
    auto *l = new RealLibrary; // never destroyed: calls may come at exit
    const char *env = std::getenv("CCSYNTH_NCCL_LIB");
    std::string path = env && *env ? env : "libnccl.so.2";
    ::dlerror();
    l->handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!l->handle) {
      const char *why = ::dlerror();
      std::fprintf(stderr,
                   "ccsynth-nccl: cannot load the NCCL library '%s' (%s); set "
                   "CCSYNTH_NCCL_LIB to its path. NCCL calls fail with "
                   "ncclInternalError.\n",
                   path.c_str(), why ? why : "unknown error");
      return l;
    }
    // The "real" library must not be the interposer itself.
    void *mine = ::dlsym(RTLD_DEFAULT, "ccsynthInterposerMarker");
    void *theirs = ::dlsym(l->handle, "ccsynthInterposerMarker");
    if (theirs && theirs == mine) {
      std::fprintf(stderr,
                   "ccsynth-nccl: CCSYNTH_NCCL_LIB '%s' is the interposer, not "
                   "NCCL. NCCL calls fail with ncclInternalError.\n",
                   path.c_str());
      ::dlclose(l->handle);
      l->handle = nullptr;
    }
    return l;
  }();
  return *lib;
}

} // namespace

void *realSymbol(const char *name) {
  RealLibrary &l = library();
  if (!l.handle)
    return nullptr;
  std::lock_guard<std::mutex> lock(l.mutex);
  auto it = l.symbols.find(name);
  if (it != l.symbols.end())
    return it->second;
  void *sym = ::dlsym(l.handle, name);
  if (!sym)
    std::fprintf(stderr,
                 "ccsynth-nccl: the NCCL library has no '%s'; the call "
                 "returns ncclInternalError\n",
                 name);
  l.symbols.emplace(name, sym);
  return sym;
}

ForwardScope::ForwardScope() { ++forwardDepth; }
ForwardScope::~ForwardScope() { --forwardDepth; }
bool ForwardScope::active() { return forwardDepth > 0; }

} // namespace ccsynth::interposer

/// Lets the loader tell the interposer from a real NCCL library.
extern "C" __attribute__((visibility("default")))
const int ccsynthInterposerMarker = 1;
