//===- Windows.h - Communicators and their windows ------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Interposer-private: what the interposer keeps per communicator
// (CommState, with one IpcState per CUDA plugin), the table of them, and
// the windows set up collectively: the host shared-memory window and each
// CUDA plugin's IPC window (Windows.cpp). See docs/runtime.md, "The
// NCCL-API interposer".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Decide.h"
#include "Interposer.h"

#include "ccsynth/runtime/PluginLoader.h"
#include "ccsynth/runtime/ShmWindow.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

namespace ccsynth::interposer::detail {

/// FNV-1a of `n` bytes at `data`, continuing from `h`.
std::uint64_t fnv(const void *data, std::size_t n,
                  std::uint64_t h = 1469598103934665603ull);

enum class Readiness { Unknown, Ready, Unusable };

/// One plugin's CUDA IPC comm on one communicator.
struct IpcState {
  CommFacts::Device state = CommFacts::Device::NotYet;
  std::string unusable;
  const ccsynthCudaComms *comms = nullptr;
  void *comm = nullptr;
  char *data = nullptr;        ///< this rank's data area
  std::uint64_t staging = 0;   ///< output staging at data, scratch after it
  /// Recorded after each launch and its copy-out, waited for by the next:
  /// launches share the window's epoch, flags and staging, so one must end
  /// before the next starts, whichever streams the application uses (NCCL
  /// orders a communicator's collectives the same way).
  void *order = nullptr;
  bool failedReported = false;
};

struct CommState {
  std::string key; ///< the same on every rank of the communicator
  int nranks = -1, rank = -1;
  bool resolved = false; ///< nranks/rank known (splits: queried lazily)
  std::uint64_t splits = 0;
  std::unique_ptr<rt::ShmWindow> window;
  bool windowTried = false;
  Readiness ready = Readiness::Unknown;
  std::string unusable; ///< why, when Unusable
  // Window layout, per rank: input staging, output staging, scratch.
  std::uint64_t staging = 0, scratch = 0, joinToken = 0;
  std::uint32_t flagWords = 0;
  /// One CUDA IPC window per plugin. Insertions and the error poll take
  /// `ipcMutex`: the application may ask for the async error from another
  /// thread (PyTorch's watchdog does) while a call sets a window up.
  std::map<const rt::Plugin *, IpcState> ipc;
  std::mutex ipcMutex;
  std::atomic<ncclResult_t> error{ncclSuccess};
  std::set<std::tuple<std::string, int, bool>> logged;
};

/// Guards states().
extern std::mutex stateMutex;
/// Every communicator the interposer keeps, by handle.
std::unordered_map<ncclComm_t, std::shared_ptr<CommState>> &states();

/// The state of `comm`, or null.
std::shared_ptr<CommState> stateOf(ncclComm_t comm);

/// The IPC state of `plugin` on `s`, made on first use (map references
/// stay valid).
IpcState &ipcOf(CommState &s, const rt::Plugin *plugin);

/// Attaches the communicator's shm window, sized for the host algorithms
/// of its rank count, and announces this rank. Idempotent.
void ensureWindow(CommState &s);

/// Whether every rank joined the window with the same configuration;
/// waits for them at most CCSYNTH_TIMEOUT the first time.
bool windowReady(CommState &s);

/// Splits learn their rank count and rank from NCCL at first use.
bool resolve(CommState &s, ncclComm_t comm);

/// Sets up `plugin`'s IPC window on this communicator, with every rank
/// (they all decide to at the same call). Every rank learns every other's
/// outcome, so the window is usable on all ranks or on none.
void setupIpc(CommState &s, IpcState &st, const rt::Plugin &plugin, int device);

/// A failed wait of an earlier asynchronous launch becomes the
/// communicator's error (once).
void pollIpcErrors(CommState &s);

} // namespace ccsynth::interposer::detail
