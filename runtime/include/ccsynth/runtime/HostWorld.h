//===- HostWorld.h - The host transport: ranks as threads of one process --===//
//
// A HostWorld is the communicator of the host backend: every rank publishes
// its buffers for the current launch, and owns an array of 64-bit flag
// words that peers set (data arrived, landing slot free) and its own
// threadblocks set (progress). Flags are padded to a cache line each.
// Peers are trusted only after they entered the same launch epoch.
//
// Layout is plain data with no pointers into other objects' internals, so
// the same protocol can live in a POSIX shared-memory window when ranks are
// processes (buffer addresses then become window offsets).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/ccsynth_plugin.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ccsynth::rt {

/// A flag word alone on its cache line.
struct alignas(64) FlagWord {
  std::uint64_t value = 0;
};

inline std::uint64_t loadAcquire(const std::uint64_t &w) {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t &>(w))
      .load(std::memory_order_acquire);
}
inline void storeRelease(std::uint64_t &w, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(w).store(v, std::memory_order_release);
}

/// What one rank publishes for a launch.
struct RankSlot {
  std::uint64_t entered = 0; ///< epoch of the launch it is in (release)
  std::uint64_t epoch = 0;   ///< launches started (owned by the rank)
  const void *send = nullptr;
  void *recv = nullptr;
  void *scratch = nullptr;
  std::vector<FlagWord> flags;
};

/// The communicator of ranks-as-threads runs.
class HostWorld {
public:
  static constexpr std::uint32_t kMagic = 0x63637377; // "ccsw"

  HostWorld(int ranks, std::uint32_t flagWords)
      : nranks(ranks), slots(std::make_unique<RankSlot[]>(ranks)) {
    for (int r = 0; r < ranks; ++r)
      slots[r].flags.resize(flagWords);
  }

  std::uint32_t magic = kMagic;
  int nranks;

  int ranks() const { return nranks; }
  RankSlot &slot(int r) { return slots[r]; }
  std::uint32_t flagWords() const {
    return nranks ? (std::uint32_t)slots[0].flags.size() : 0;
  }

  /// Marks the world failed; the first failure's report is kept.
  void fail(const ccsynthError &err) {
    std::lock_guard<std::mutex> lock(errorMutex);
    if (!aborted()) {
      firstError = err;
      std::atomic_ref<std::uint32_t>(abortFlag).store(
          1, std::memory_order_release);
    }
  }
  bool aborted() const {
    return std::atomic_ref<std::uint32_t>(
               const_cast<std::uint32_t &>(abortFlag))
               .load(std::memory_order_acquire) != 0;
  }
  ccsynthError error() {
    std::lock_guard<std::mutex> lock(errorMutex);
    return firstError;
  }

private:
  std::unique_ptr<RankSlot[]> slots;
  std::uint32_t abortFlag = 0;
  std::mutex errorMutex;
  ccsynthError firstError{};
};

} // namespace ccsynth::rt
