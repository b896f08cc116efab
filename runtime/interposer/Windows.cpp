//===- Windows.cpp - Communicators and their windows ----------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The interposer's per-communicator state and its windows, each set up
// collectively so that it is usable on every rank or on none: the table
// of communicators (states, stateOf, ipcOf); the host POSIX shared-memory
// window, sized for the host algorithms of the rank count (ensureWindow,
// windowReady); a split's rank count and rank, learned at first use
// (resolve); the CUDA IPC window of one plugin, its handshake through a
// small shm window (setupIpc); and a failed asynchronous launch as the
// communicator's error (pollIpcErrors). See docs/runtime.md, "The
// NCCL-API interposer".
//
//===----------------------------------------------------------------------===//
#include "Windows.h"

#include "Config.h"
#include "CudaShim.h"

#include "ccsynth/runtime/HostTypes.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace ccsynth::interposer::detail {

// --- communicators ---------------------------------------------------------

std::uint64_t fnv(const void *data, std::size_t n, std::uint64_t h) {
  auto *b = static_cast<const unsigned char *>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  return h;
}

std::mutex stateMutex;
std::unordered_map<ncclComm_t, std::shared_ptr<CommState>> &states() {
  static auto *m =
      new std::unordered_map<ncclComm_t, std::shared_ptr<CommState>>;
  return *m;
}

std::shared_ptr<CommState> stateOf(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(stateMutex);
  auto it = states().find(comm);
  return it == states().end() ? nullptr : it->second;
}

IpcState &ipcOf(CommState &s, const rt::Plugin *plugin) {
  std::lock_guard<std::mutex> lock(s.ipcMutex);
  return s.ipc[plugin];
}

namespace {

std::uint64_t roundUp(std::uint64_t v, std::uint64_t a) {
  return (v + a - 1) / a * a;
}

/// The host algorithms for `n` ranks.
std::vector<const Algo *> hostAlgosFor(int n) {
  std::vector<const Algo *> v;
  for (const Algo &a : config().algos)
    if (a.desc->ranks == n && a.desc->backend == ccsynthBackendHost &&
        (a.desc->transport_mask & ccsynthTransportHostShm))
      v.push_back(&a);
  return v;
}

} // namespace

void ensureWindow(CommState &s) {
  if (s.windowTried)
    return;
  s.windowTried = true;
  auto algos = hostAlgosFor(s.nranks);
  if (algos.empty())
    return;
  std::uint64_t maxBytes = 0, scratch = 0;
  std::uint32_t flags = 1;
  std::uint64_t token = fnv(&s.nranks, sizeof s.nranks);
  for (const Algo *a : algos) {
    std::uint64_t mb = a->desc->max_bytes ? a->desc->max_bytes : ~0ull;
    maxBytes = std::max(maxBytes, mb);
    scratch = std::max(scratch, a->desc->scratch_bytes);
    flags = std::max(flags, a->desc->flag_words);
    token = fnv(a->desc->name, std::strlen(a->desc->name), token);
    token = fnv(a->desc->ir_hash, std::strlen(a->desc->ir_hash), token);
  }
  s.staging = roundUp(std::min(maxBytes, config().windowBytes), 64);
  s.scratch = roundUp(scratch, 64);
  s.flagWords = flags;
  token = fnv(&s.staging, sizeof s.staging, token);
  s.joinToken = token | 1;
  char name[64];
  std::snprintf(name, sizeof name, "/ccsynth-nccl-%016llx-%d",
                (unsigned long long)fnv(s.key.data(), s.key.size()), s.nranks);
  std::string error;
  s.window =
      rt::ShmWindow::attach(name, s.nranks, s.flagWords,
                            2 * s.staging + s.scratch, config().timeout, error);
  if (!s.window) {
    s.ready = Readiness::Unusable;
    s.unusable = error;
    return;
  }
  rt::CommHeader *h = s.window->comm();
  rt::storeRelease(rt::commSlot(h, s.rank).joined, s.joinToken);
  bool all = true;
  for (int r = 0; r < s.nranks && all; ++r)
    all = rt::loadAcquire(rt::commSlot(h, r).joined) != 0;
  if (all)
    s.window->unlink(); // every rank has it mapped: the name can go
}

bool windowReady(CommState &s) {
  if (s.ready != Readiness::Unknown)
    return s.ready == Readiness::Ready;
  rt::CommHeader *h = s.window->comm();
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(config().timeout));
  for (int r = 0; r < s.nranks; ++r) {
    while (rt::loadAcquire(rt::commSlot(h, r).joined) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        s.ready = Readiness::Unusable;
        s.unusable = "rank " + std::to_string(r) +
                     " never joined the shared-memory window (ranks on "
                     "several hosts, or without the same CCSYNTH_PLUGINS)";
        warn("communicator " + s.key.substr(0, 16) + ": " + s.unusable +
             "; its collectives go to NCCL");
        s.window.reset();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (rt::loadAcquire(rt::commSlot(h, r).joined) != s.joinToken) {
      s.ready = Readiness::Unusable;
      s.unusable = "rank " + std::to_string(r) +
                   " loaded other plugins (CCSYNTH_PLUGINS differs)";
      warn("communicator " + s.key.substr(0, 16) + ": " + s.unusable +
           "; its collectives go to NCCL");
      s.window.reset();
      return false;
    }
  }
  s.window->unlink();
  s.ready = Readiness::Ready;
  return true;
}

bool resolve(CommState &s, ncclComm_t comm) {
  if (s.resolved)
    return true;
  auto count = real<decltype(&ncclCommCount)>("ncclCommCount");
  auto rank = real<decltype(&ncclCommUserRank)>("ncclCommUserRank");
  if (!count || !rank)
    return false;
  ForwardScope scope;
  int n = -1, r = -1;
  if (count(comm, &n) != ncclSuccess || rank(comm, &r) != ncclSuccess)
    return false; // e.g. still in progress: try again at the next call
  s.nranks = n;
  s.rank = r;
  s.resolved = true;
  return true;
}

// --- the CUDA IPC window of one plugin --------------------------------------

namespace {

/// Per-rank record of the IPC handshake in its shm window.
struct IpcSlot {
  unsigned char handle[CCSYNTH_IPC_HANDLE_BYTES];
  std::uint64_t created;   ///< 1: window allocated, 2: failed
  std::uint64_t connected; ///< 1: every peer mapped, 2: failed
};

/// Waits until `word` of every rank's slot is non-zero; false (and `why`)
/// at the deadline.
bool waitAll(rt::CommHeader *h, int n, std::size_t offset,
             std::chrono::steady_clock::time_point deadline, std::string &why) {
  for (int r = 0; r < n; ++r) {
    auto *w = reinterpret_cast<std::uint64_t *>(rt::commData(h, r) + offset);
    while (rt::loadAcquire(*w) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        why = "rank " + std::to_string(r) +
              " never reached the CUDA IPC handshake (ranks on several "
              "nodes, or without the same CCSYNTH_PLUGINS)";
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  return true;
}

} // namespace

void setupIpc(CommState &s, IpcState &st, const rt::Plugin &plugin,
              int device) {
  auto fail = [&](const std::string &why) {
    st.state = CommFacts::Device::Unusable;
    st.unusable = why;
    warn("communicator " + s.key.substr(0, 16) + ": CUDA IPC window of " +
         plugin.path() + " unusable: " + why +
         "; its device collectives go to NCCL");
    if (st.comm)
      st.comms->ipc_comm_destroy(st.comm);
    st.comm = nullptr;
    destroyOrderEvent(st.order);
  };
  st.comms = plugin.cudaComms();
  std::uint64_t maxBytes = 0, scratch = 0;
  std::uint32_t flags = 1;
  std::uint64_t token = fnv(&s.nranks, sizeof s.nranks);
  for (const ccsynthAlgorithm &a : plugin) {
    if (a.ranks != s.nranks || a.backend != ccsynthBackendCuda)
      continue;
    maxBytes =
        std::max<std::uint64_t>(maxBytes, a.max_bytes ? a.max_bytes : ~0ull);
    scratch = std::max(scratch, a.scratch_bytes);
    flags = std::max(flags, a.flag_words);
    token = fnv(a.ir_hash, std::strlen(a.ir_hash), token);
  }
  st.staging = roundUp(std::min(maxBytes, config().deviceWindowBytes), 256);
  token = fnv(&st.staging, sizeof st.staging, token) | 1;
  char name[80];
  std::snprintf(
      name, sizeof name, "/ccsynth-ipc-%016llx-%016llx-%d",
      (unsigned long long)fnv(s.key.data(), s.key.size()),
      (unsigned long long)fnv(plugin.path().data(), plugin.path().size()),
      s.nranks);
  std::string error;
  auto win = rt::ShmWindow::attach(name, s.nranks, 1, sizeof(IpcSlot),
                                   config().timeout, error);
  if (!win)
    return fail(error);
  rt::CommHeader *h = win->comm();
  auto *mine = reinterpret_cast<IpcSlot *>(rt::commData(h, s.rank));
  // Past this point a rank that gives up says so in its slot, so that the
  // ranks still waiting fail at once instead of at their own deadline, and
  // a rank that checks later sees it: ranks end Ready or unusable together
  // (unless one checked every slot in the instant before another's deadline).
  auto failAll = [&](const std::string &why) {
    rt::storeRelease(mine->connected, std::uint64_t(2));
    fail(why);
  };
  ccsynthError err{};
  ccsynthResult r = st.comms->ipc_comm_create(
      device, s.rank, s.nranks, flags, st.staging + roundUp(scratch, 256),
      &st.comm, mine->handle, &err);
  std::string localWhy;
  if (r != ccsynthSuccess) {
    st.comm = nullptr;
    localWhy = std::string("allocating the window: ") + err.message;
  } else if (!(st.order = createOrderEvent())) {
    r = ccsynthSystemError;
    localWhy = "creating the event that orders its launches failed";
  }
  rt::storeRelease(mine->created, std::uint64_t(r == ccsynthSuccess ? 1 : 2));
  rt::storeRelease(rt::commSlot(h, s.rank).joined, token);
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(config().timeout));
  std::string why;
  if (!waitAll(h, s.nranks, offsetof(IpcSlot, created), deadline, why))
    return failAll(why);
  win->unlink(); // every rank has it mapped
  std::vector<unsigned char> handles(std::size_t(s.nranks) *
                                     CCSYNTH_IPC_HANDLE_BYTES);
  for (int q = 0; q < s.nranks; ++q) {
    auto *slot = reinterpret_cast<IpcSlot *>(rt::commData(h, q));
    if (rt::loadAcquire(rt::commSlot(h, q).joined) != token)
      return failAll("rank " + std::to_string(q) +
                     " loaded other plugins (CCSYNTH_PLUGINS or "
                     "CCSYNTH_DEVICE_WINDOW_BYTES differs)");
    if (rt::loadAcquire(slot->created) != 1)
      return failAll(q == s.rank ? localWhy
                                 : "rank " + std::to_string(q) +
                                       " could not allocate its window");
    std::memcpy(&handles[std::size_t(q) * CCSYNTH_IPC_HANDLE_BYTES],
                slot->handle, CCSYNTH_IPC_HANDLE_BYTES);
  }
  r = st.comms->ipc_comm_connect(st.comm, handles.data(), &err);
  if (r != ccsynthSuccess)
    localWhy = std::string("mapping the peers' windows: ") + err.message;
  rt::storeRelease(mine->connected, std::uint64_t(r == ccsynthSuccess ? 1 : 2));
  if (!waitAll(h, s.nranks, offsetof(IpcSlot, connected), deadline, why))
    return failAll(why);
  for (int q = 0; q < s.nranks; ++q)
    if (rt::loadAcquire(
            reinterpret_cast<IpcSlot *>(rt::commData(h, q))->connected) != 1)
      return failAll(q == s.rank ? localWhy
                                 : "rank " + std::to_string(q) +
                                       " could not map every peer's window");
  void *data = nullptr;
  std::uint64_t bytes = 0;
  if (st.comms->ipc_comm_window(st.comm, &data, &bytes) != ccsynthSuccess)
    return fail("the plugin reports no window");
  st.data = static_cast<char *>(data);
  std::lock_guard<std::mutex> lock(s.ipcMutex); // the error poll reads it
  st.state = CommFacts::Device::Ready;
}

void pollIpcErrors(CommState &s) {
  std::lock_guard<std::mutex> lock(s.ipcMutex);
  for (auto &[plugin, st] : s.ipc) {
    if (st.state != CommFacts::Device::Ready || st.failedReported)
      continue;
    ccsynthError err{};
    if (st.comms->ipc_comm_error(st.comm, &err) == ccsynthSuccess)
      continue;
    st.failedReported = true;
    ncclResult_t none = ncclSuccess;
    s.error.compare_exchange_strong(none, ncclSystemError);
    warn("communicator " + s.key.substr(0, 16) + " rank " +
         std::to_string(s.rank) + ": a CUDA plugin launch failed: " +
         err.message + "; the communicator's async error is ncclSystemError");
  }
}

} // namespace ccsynth::interposer::detail
