//===- HostWorld.h - The host transports' communicator layout -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The communicator of the host backend is one contiguous block: a header,
// one slot per rank (the launch epoch it entered and the buffers it
// published) and each rank's 64-bit flag words, one cache line each. Peers
// set a rank's flags (data arrived, landing slot free), its own
// threadblocks set its progress words.
//
// The block holds no pointer into itself, so the same bytes work
//  - in one process, ranks as threads (HostWorld owns the block; published
//    buffer addresses are plain addresses), and
//  - in a POSIX shared-memory window, ranks as processes (ShmWindow.h;
//    each process maps the window at its own address, so published
//    buffers are offsets from the header and must lie inside the window).
// Every shared word is accessed with std::atomic_ref on naturally aligned
// 32/64-bit integers, lock-free and address-free on the platforms the host
// backend builds for, hence valid across processes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/ccsynth_plugin.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace ccsynth::rt {

static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free &&
                  std::atomic_ref<std::uint32_t>::is_always_lock_free,
              "the host transports need lock-free 32/64-bit atomics (shared "
              "memory between processes)");

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

/// What one rank publishes for a launch. `send`, `recv` and `scratch` are
/// addresses (threads) or offsets from the header (address-free windows).
struct alignas(64) RankSlot {
  std::uint64_t entered; ///< epoch of the launch it is in (release)
  std::uint64_t epoch;   ///< launches started (owned by the rank)
  std::uint64_t send;
  std::uint64_t recv;
  std::uint64_t scratch;
  std::uint64_t joined; ///< set when the rank attached (windows; see users)
};

/// The header at the start of a communicator block.
struct alignas(64) CommHeader {
  static constexpr std::uint32_t kMagic = 0x63637377; // "ccsw"
  /// Bumped with any change of this layout (plugins compile it in).
  static constexpr std::uint32_t kLayoutVersion = 2;

  std::uint32_t magic;
  std::uint32_t layoutVersion;
  std::int32_t nranks;
  std::uint32_t flagWords;
  std::uint32_t addressFree; ///< 1: published buffers are offsets
  std::uint32_t abortFlag;   ///< 1 once a launch failed (release)
  std::uint32_t errorClaim;  ///< taken by the first failure
  std::uint32_t reserved;
  std::uint64_t slotsOffset;
  std::uint64_t flagsOffset;
  std::uint64_t dataOffset;       ///< first byte after the flags
  std::uint64_t dataBytesPerRank; ///< each rank's data area (windows)
  std::uint64_t totalBytes;       ///< the whole block
  ccsynthError firstError;
};

/// Bytes of the header, slots and flags (64-byte multiple).
inline std::uint64_t commControlBytes(int nranks, std::uint32_t flagWords) {
  std::uint64_t bytes = sizeof(CommHeader) + sizeof(RankSlot) * nranks +
                        sizeof(FlagWord) * std::uint64_t(nranks) * flagWords;
  return (bytes + 63) / 64 * 64;
}

/// Bytes of a block with `dataBytesPerRank` of data per rank.
inline std::uint64_t commTotalBytes(int nranks, std::uint32_t flagWords,
                                    std::uint64_t dataBytesPerRank) {
  return commControlBytes(nranks, flagWords) +
         std::uint64_t(nranks) * dataBytesPerRank;
}

/// Writes the header of a zeroed block of commTotalBytes(...) bytes.
inline void commInit(CommHeader *h, int nranks, std::uint32_t flagWords,
                     std::uint64_t dataBytesPerRank, bool addressFree) {
  h->magic = CommHeader::kMagic;
  h->layoutVersion = CommHeader::kLayoutVersion;
  h->nranks = nranks;
  h->flagWords = flagWords;
  h->addressFree = addressFree ? 1 : 0;
  h->slotsOffset = sizeof(CommHeader);
  h->flagsOffset = sizeof(CommHeader) + sizeof(RankSlot) * nranks;
  h->dataOffset = commControlBytes(nranks, flagWords);
  h->dataBytesPerRank = dataBytesPerRank;
  h->totalBytes = commTotalBytes(nranks, flagWords, dataBytesPerRank);
}

inline RankSlot &commSlot(CommHeader *h, int rank) {
  return reinterpret_cast<RankSlot *>(reinterpret_cast<char *>(h) +
                                      h->slotsOffset)[rank];
}
inline FlagWord &commFlag(CommHeader *h, int rank, std::uint32_t index) {
  return reinterpret_cast<FlagWord *>(
      reinterpret_cast<char *>(h) +
      h->flagsOffset)[std::uint64_t(rank) * h->flagWords + index];
}
/// Rank r's data area (windows only).
inline char *commData(CommHeader *h, int rank) {
  return reinterpret_cast<char *>(h) + h->dataOffset +
         std::uint64_t(rank) * h->dataBytesPerRank;
}

/// A published buffer, as this process addresses it.
inline char *commAddress(CommHeader *h, std::uint64_t published) {
  if (!h->addressFree)
    return reinterpret_cast<char *>(std::uintptr_t(published));
  return published == ~std::uint64_t(0)
             ? nullptr
             : reinterpret_cast<char *>(h) + published;
}
/// What a rank publishes for `p`; in a window, `p` must lie inside it.
inline std::uint64_t commPublish(CommHeader *h, const void *p) {
  if (!h->addressFree)
    return std::uint64_t(reinterpret_cast<std::uintptr_t>(p));
  if (!p)
    return ~std::uint64_t(0);
  return std::uint64_t(static_cast<const char *>(p) -
                       reinterpret_cast<char *>(h));
}
/// Whether [p, p+bytes) lies inside the block.
inline bool commContains(CommHeader *h, const void *p, std::uint64_t bytes) {
  auto b = reinterpret_cast<std::uintptr_t>(h);
  auto a = reinterpret_cast<std::uintptr_t>(p);
  return a >= b && a - b <= h->totalBytes && bytes <= h->totalBytes - (a - b);
}

inline bool commAborted(const CommHeader *h) {
  return std::atomic_ref<std::uint32_t>(
             const_cast<std::uint32_t &>(h->abortFlag))
             .load(std::memory_order_acquire) != 0;
}

/// Marks the communicator failed; the first failure's report is kept
/// (lock-free: a process may die at any point without blocking others).
inline void commFail(CommHeader *h, const ccsynthError &err) {
  std::uint32_t expected = 0;
  if (!std::atomic_ref<std::uint32_t>(h->errorClaim)
           .compare_exchange_strong(expected, 1, std::memory_order_acq_rel))
    return;
  std::memcpy(&h->firstError, &err, sizeof err);
  std::atomic_ref<std::uint32_t>(h->abortFlag)
      .store(1, std::memory_order_release);
}

/// The first failure's report. A failure that claimed the report but has
/// not yet published it is waited for at most one second.
inline ccsynthError commError(CommHeader *h) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!commAborted(h)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ccsynthError e{};
      e.result = ccsynthAborted;
      e.rank = e.threadblock = e.step = -1;
      std::snprintf(e.message, sizeof e.message,
                    "another rank failed without a report");
      return e;
    }
    std::this_thread::yield();
  }
  ccsynthError e;
  std::memcpy(&e, &h->firstError, sizeof e);
  return e;
}

/// The communicator of ranks-as-threads runs: owns a block in this
/// process's memory.
class HostWorld {
public:
  HostWorld(int ranks, std::uint32_t flagWords) {
    std::uint64_t bytes = commTotalBytes(ranks, flagWords, 0);
    block = static_cast<CommHeader *>(std::aligned_alloc(64, bytes));
    if (block) {
      std::memset(static_cast<void *>(block), 0, bytes);
      commInit(block, ranks, flagWords, 0, false);
    }
  }
  ~HostWorld() { std::free(block); }
  HostWorld(const HostWorld &) = delete;
  HostWorld &operator=(const HostWorld &) = delete;

  /// Null when the allocation failed.
  CommHeader *comm() const { return block; }

private:
  CommHeader *block = nullptr;
};

/// Evidence of life for watchdogs: the sum of every rank's flag words and
/// launch epochs. Flags only grow within a communicator, so the sum changes
/// exactly when some threadblock of some rank signalled, made progress or
/// entered a launch. Reads every flag once (call it at deadlines only).
inline std::uint64_t commProgress(CommHeader *h) {
  std::uint64_t sum = 0;
  for (int r = 0; r < h->nranks; ++r) {
    sum += std::atomic_ref<std::uint64_t>(commSlot(h, r).entered)
               .load(std::memory_order_relaxed);
    for (std::uint32_t i = 0; i < h->flagWords; ++i)
      sum += std::atomic_ref<std::uint64_t>(commFlag(h, r, i).value)
                 .load(std::memory_order_relaxed);
  }
  return sum;
}

} // namespace ccsynth::rt
