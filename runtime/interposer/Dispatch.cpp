//===- Dispatch.cpp - Which collective runs a plugin, and running it ------===//
//
// The decision itself is Decide.h's: a function of what every rank of a
// communicator shares. This file gathers those facts, keeps each
// communicator's windows (set up collectively at the first call that needs
// them) and runs the chosen plugin:
//  - host buffers, host plugin: staged through the communicator's POSIX
//    shared-memory window, synchronously;
//  - device buffers, CUDA plugin: the CUDA IPC transport, asynchronously on
//    the caller's stream; the output is staged through this rank's device
//    window (peers put into it), the input read in place when the
//    algorithm is out of place. A CUDA graph capture records the same
//    work (capture-safe plugins only).
//
// Environment (read once per process):
//   CCSYNTH_PLUGINS       plugin paths and config files, ':'-separated
//   CCSYNTH_TIMEOUT       seconds one wait of a plugin launch may take (30)
//   CCSYNTH_WINDOW_BYTES  host staging bytes per rank and buffer (16 MiB)
//   CCSYNTH_DEVICE_WINDOW_BYTES  device output staging per rank (64 MiB)
//   CCSYNTH_DEBUG=1       log each decision once per (communicator,
//                         collective, size class) with its reason
//
//===----------------------------------------------------------------------===//
#include "Interposer.h"

#include "Decide.h"

#include "ccsynth/runtime/HostTypes.h"
#include "ccsynth/runtime/PluginLoader.h"
#include "ccsynth/runtime/Reference.h"
#include "ccsynth/runtime/ShmWindow.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace ccsynth::interposer {

namespace {

namespace rt = ccsynth::rt;

// --- configuration ---------------------------------------------------------

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

void warn(const std::string &msg) {
  std::fprintf(stderr, "ccsynth-nccl: %s\n", msg.c_str());
}

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

// --- CUDA, only when the application loaded it -----------------------------

/// The few driver calls the interposer makes itself, looked up in the
/// driver the application already loaded (libcuda.so.1 is in every process
/// that uses CUDA, whichever runtime it linked): buffer kinds, graph
/// capture and the staging copies on the caller's stream. Looked up again
/// at each call until found, so a process that starts CUDA after its first
/// NCCL call still gets it.
struct Cuda {
  using PointerGetAttribute = int (*)(void *, int, unsigned long long);
  using StreamIsCapturing = int (*)(void *, int *);
  using MemcpyDtoDAsync = int (*)(unsigned long long, unsigned long long,
                                  std::size_t, void *);
  using EventCreate = int (*)(void **, unsigned);
  using EventRecordWithFlags = int (*)(void *, void *, unsigned);
  using StreamWaitEvent = int (*)(void *, void *, unsigned);
  using EventDestroy = int (*)(void *);
  using EventQuery = int (*)(void *);
  PointerGetAttribute pointerGetAttribute = nullptr;
  StreamIsCapturing streamIsCapturing = nullptr;
  MemcpyDtoDAsync memcpyDtoDAsync = nullptr;
  EventCreate eventCreate = nullptr;
  EventRecordWithFlags eventRecordWithFlags = nullptr;
  StreamWaitEvent streamWaitEvent = nullptr;
  EventDestroy eventDestroy = nullptr;
  EventQuery eventQuery = nullptr;
  bool ok() const {
    return pointerGetAttribute && streamIsCapturing && memcpyDtoDAsync &&
           eventCreate && eventRecordWithFlags && streamWaitEvent &&
           eventDestroy && eventQuery;
  }
};

const Cuda &cuda() {
  static std::mutex m;
  static Cuda c;
  std::lock_guard<std::mutex> lock(m);
  if (c.ok())
    return c;
  // Only a driver the application already has: loading one here would
  // pull CUDA into a process that does not use it.
  void *h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  if (!h)
    return c;
  c.pointerGetAttribute = reinterpret_cast<Cuda::PointerGetAttribute>(
      ::dlsym(h, "cuPointerGetAttribute"));
  c.streamIsCapturing = reinterpret_cast<Cuda::StreamIsCapturing>(
      ::dlsym(h, "cuStreamIsCapturing"));
  c.memcpyDtoDAsync = reinterpret_cast<Cuda::MemcpyDtoDAsync>(
      ::dlsym(h, "cuMemcpyDtoDAsync_v2"));
  c.eventCreate =
      reinterpret_cast<Cuda::EventCreate>(::dlsym(h, "cuEventCreate"));
  c.eventRecordWithFlags = reinterpret_cast<Cuda::EventRecordWithFlags>(
      ::dlsym(h, "cuEventRecordWithFlags"));
  c.streamWaitEvent =
      reinterpret_cast<Cuda::StreamWaitEvent>(::dlsym(h, "cuStreamWaitEvent"));
  c.eventDestroy =
      reinterpret_cast<Cuda::EventDestroy>(::dlsym(h, "cuEventDestroy_v2"));
  c.eventQuery = reinterpret_cast<Cuda::EventQuery>(::dlsym(h, "cuEventQuery"));
  return c;
}

bool capturing(cudaStream_t s) {
  const Cuda &c = cuda();
  int status = 0; // CU_STREAM_CAPTURE_STATUS_NONE
  return c.streamIsCapturing && c.streamIsCapturing(s, &status) == 0 &&
         status != 0;
}

// cuPointerGetAttribute: CU_POINTER_ATTRIBUTE_MEMORY_TYPE (2) is
// CU_MEMORYTYPE_DEVICE (2) for device and managed memory; host memory the
// driver does not know fails the call. DEVICE_ORDINAL is attribute 9.
constexpr int kAttrMemoryType = 2, kMemoryDevice = 2, kAttrDeviceOrdinal = 9;

bool deviceMemory(const void *p) {
  const Cuda &c = cuda();
  if (!c.pointerGetAttribute || !p)
    return false;
  unsigned type = 0;
  return c.pointerGetAttribute(&type, kAttrMemoryType,
                               reinterpret_cast<unsigned long long>(p)) == 0 &&
         type == kMemoryDevice;
}

int deviceOf(const void *p) {
  const Cuda &c = cuda();
  int ordinal = -1;
  if (!c.pointerGetAttribute ||
      c.pointerGetAttribute(&ordinal, kAttrDeviceOrdinal,
                            reinterpret_cast<unsigned long long>(p)) != 0)
    return -1;
  return ordinal;
}

bool copyAsync(void *dst, const void *src, std::size_t bytes,
               cudaStream_t stream) {
  if (bytes == 0 || dst == src)
    return true;
  const Cuda &c = cuda();
  return c.memcpyDtoDAsync &&
         c.memcpyDtoDAsync(reinterpret_cast<unsigned long long>(dst),
                           reinterpret_cast<unsigned long long>(src), bytes,
                           stream) == 0;
}

// CU_EVENT_DISABLE_TIMING; CU_EVENT_RECORD_EXTERNAL and CU_EVENT_WAIT_EXTERNAL
// (under stream capture: an event node that records or waits at replay).
constexpr unsigned kEventDisableTiming = 2, kEventExternal = 1;

/// An event for ordering launches (no timing), or null.
void *createOrderEvent() {
  const Cuda &c = cuda();
  void *e = nullptr;
  if (!c.eventCreate || c.eventCreate(&e, kEventDisableTiming) != 0)
    return nullptr;
  return e;
}

/// `stream` waits for what `event` last recorded (at replay, when the
/// stream is being captured).
bool waitOrderEvent(void *event, cudaStream_t stream, bool captured) {
  const Cuda &c = cuda();
  return c.streamWaitEvent &&
         c.streamWaitEvent(stream, event, captured ? kEventExternal : 0) == 0;
}

/// Records `event` on `stream` (at replay, when it is being captured).
bool recordOrderEvent(void *event, cudaStream_t stream, bool captured) {
  const Cuda &c = cuda();
  return c.eventRecordWithFlags &&
         c.eventRecordWithFlags(event, stream, captured ? kEventExternal : 0) ==
             0;
}

/// Waits until what `event` last recorded has run (the last launch's
/// copy-out included), for at most `seconds`; false at the deadline or on
/// an error (CUDA_ERROR_NOT_READY, 600, is "still running").
bool awaitOrderEvent(void *event, double seconds) {
  const Cuda &c = cuda();
  if (!event || !c.eventQuery)
    return true;
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(seconds));
  for (;;) {
    int r = c.eventQuery(event);
    if (r != 600)
      return r == 0;
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void destroyOrderEvent(void *&event) {
  const Cuda &c = cuda();
  if (event && c.eventDestroy)
    c.eventDestroy(event);
  event = nullptr;
}

// --- communicators ---------------------------------------------------------

std::uint64_t fnv(const void *data, std::size_t n,
                  std::uint64_t h = 1469598103934665603ull) {
  auto *b = static_cast<const unsigned char *>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  return h;
}

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

/// The IPC state of `plugin` on `s`, made on first use (map references
/// stay valid).
IpcState &ipcOf(CommState &s, const rt::Plugin *plugin) {
  std::lock_guard<std::mutex> lock(s.ipcMutex);
  return s.ipc[plugin];
}

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

/// Attaches the communicator's shm window, sized for the host algorithms
/// of its rank count, and announces this rank. Idempotent.
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

/// Whether every rank joined the window with the same configuration;
/// waits for them at most CCSYNTH_TIMEOUT the first time.
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

/// Splits learn their rank count and rank from NCCL at first use.
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

/// Sets up `plugin`'s IPC window on this communicator, with every rank
/// (they all decide to at the same call). Every rank learns every other's
/// outcome, so the window is usable on all ranks or on none.
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

/// The communicator's facts, with its host window's part.
CommFacts hostFacts(const CommState &s) {
  CommFacts f;
  f.hostStaging = s.staging;
  f.hostWindowUsable = s.ready != Readiness::Unusable && s.window;
  f.hostUnusable = s.window || s.ready == Readiness::Unusable
                       ? s.unusable
                       : "no host plugin algorithm for " +
                             std::to_string(s.nranks) + " ranks";
  return f;
}

/// `host` with the part of the IPC window of `a`'s plugin.
CommFacts factsFor(CommState &s, CommFacts f, const Algo &a) {
  std::lock_guard<std::mutex> lock(s.ipcMutex);
  auto it = s.ipc.find(a.owner);
  if (it != s.ipc.end()) {
    f.device = it->second.state;
    f.deviceUnusable = it->second.unusable;
  }
  f.deviceStaging = config().deviceWindowBytes;
  if (it != s.ipc.end() && it->second.state == CommFacts::Device::Ready)
    f.deviceStaging = it->second.staging;
  return f;
}

/// A failed wait of an earlier asynchronous launch becomes the
/// communicator's error (once).
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

// --- the decision ----------------------------------------------------------

CallFacts factsOf(const Call &c, const CommState &s) {
  CallFacts f;
  f.collective = c.collective;
  f.nranks = s.nranks;
  f.count = c.count;
  f.dtype = int(c.dtype);
  f.op = int(c.op);
  f.root = c.root;
  bool ds = deviceMemory(c.send), dr = deviceMemory(c.recv);
  // Rooted collectives leave one buffer unused on some ranks (NCCL
  // ignores it): the other decides.
  bool noSend = c.send == nullptr, noRecv = c.recv == nullptr;
  bool device = noSend ? dr : noRecv ? ds : ds && dr;
  bool host = noSend ? !dr : noRecv ? !ds : !ds && !dr;
  f.memory = device ? Memory::Device : host ? Memory::Host : Memory::Mixed;
  f.capturing = capturing(c.stream);
  f.rank = s.rank;
  f.send = c.send;
  f.recv = c.recv;
  return f;
}

void logDecision(CommState &s, const Call &c, const Decision &d,
                 const std::string &how) {
  if (!config().debug)
    return;
  int es = c.dtype >= 0 && c.dtype < ncclFloat8e4m3
               ? rt::dtypeSize(int(c.dtype))
               : 1;
  std::uint64_t bytes = std::uint64_t(c.count) * es;
  int sizeClass = 0;
  while (sizeClass < 63 && (1ull << (sizeClass + 1)) <= bytes)
    ++sizeClass;
  if (!s.logged.insert({c.collective, sizeClass, d.algo >= 0}).second)
    return;
  std::fprintf(stderr,
               "ccsynth-nccl: comm %.16s rank %d/%d: %s count %zu (%s, size "
               "class 2^%d B) -> %s: %s%s%s\n",
               s.key.c_str(), s.rank, s.nranks, c.ncclName, c.count,
               c.dtype >= 0 && c.dtype < ncclFloat8e4m3
                   ? rt::dtypeName(int(c.dtype))
                   : "?",
               sizeClass,
               d.algo < 0 ? "NCCL"
               : d.cuda   ? "ccsynth (CUDA IPC)"
                          : "ccsynth",
               d.reason.c_str(), how.empty() ? "" : "; ", how.c_str());
}

// --- launching -------------------------------------------------------------

/// Records a failed launch as the communicator's error and returns it.
ncclResult_t launchFailed(const Call &c, CommState &s,
                          const ccsynthAlgorithm &g, ccsynthResult r,
                          const ccsynthError &err) {
  // A plugin that times out or loses a peer is a system error (the job
  // must abort the communicator); a refusal after a match is ours.
  ncclResult_t code =
      (r == ccsynthTimeout || r == ccsynthAborted || r == ccsynthSystemError)
          ? ncclSystemError
          : ncclInternalError;
  ncclResult_t none = ncclSuccess;
  if (s.error.compare_exchange_strong(none, code)) {
    char msg[768];
    std::snprintf(msg, sizeof msg,
                  "%s on communicator %.16s rank %d: plugin algorithm %s "
                  "failed: %s; returning %s",
                  c.ncclName, s.key.c_str(), s.rank, g.name, err.message,
                  code == ncclSystemError ? "ncclSystemError"
                                          : "ncclInternalError");
    warn(msg);
  }
  return code;
}

/// Whether this rank contributes input (broadcast and scatter: the root
/// only) and receives output (reduce and gather: the root only).
bool sendsOn(const Call &c, int me) {
  std::string coll = c.collective;
  return !((coll == "broadcast" || coll == "scatter") && me != c.root);
}
bool receivesOn(const Call &c, int me) {
  std::string coll = c.collective;
  return !((coll == "reduce" || coll == "gather") && me != c.root);
}

/// The launch arguments of `c` on this rank, with staged buffers.
ccsynthLaunchArgs launchArgs(const Call &c, const CommState &s,
                             const ccsynthAlgorithm &g, const void *send,
                             void *recv, void *scratch, int transport,
                             void *comm, ccsynthError &err) {
  ccsynthLaunchArgs args{};
  args.struct_size = sizeof args;
  args.rank = s.rank;
  args.sendbuff = send;
  args.recvbuff = recv;
  args.count = c.count;
  args.dtype = int(c.dtype);
  args.op = g.op_mask ? int(c.op) : 0;
  args.scratch = g.scratch_bytes ? scratch : nullptr;
  args.scratch_bytes = g.scratch_bytes;
  args.transport = transport;
  args.comm = comm;
  args.stream = c.stream;
  args.timeout_seconds = config().timeout;
  args.error = &err;
  return args;
}

ncclResult_t launchHost(const Call &c, CommState &s, const Algo &a) {
  const ccsynthAlgorithm &g = *a.desc;
  int n = s.nranks, me = s.rank;
  std::size_t es = rt::dtypeSize(int(c.dtype));
  std::uint64_t unit = std::uint64_t(c.count) * es;
  std::uint64_t inBytes = unit * unitsOf(c.collective, n, true);
  std::uint64_t outBytes = unit * unitsOf(c.collective, n, false);
  bool sends = sendsOn(c, me), receives = receivesOn(c, me);

  rt::CommHeader *h = s.window->comm();
  char *data = rt::commData(h, me);
  char *inArea = data, *outArea = data + s.staging;
  char *send, *recv;
  int inU = unitsOf(c.collective, n, true),
      outU = unitsOf(c.collective, n, false);
  if (!g.inplace) {
    send = inArea;
    recv = outArea;
  } else if (outU > inU) {
    recv = outArea;
    send = outArea + std::uint64_t(me) * unit;
  } else if (inU > outU) {
    send = inArea;
    recv = inArea + std::uint64_t(me) * unit;
  } else {
    send = recv = outArea;
  }
  if (sends && inBytes)
    std::memcpy(send, c.send, inBytes);

  ccsynthError err{};
  ccsynthLaunchArgs args = launchArgs(c, s, g, send, recv, data + 2 * s.staging,
                                      ccsynthTransportHostShm, h, err);
  ccsynthResult r = g.launch(&args);
  if (r == ccsynthSuccess) {
    if (receives && outBytes)
      std::memcpy(c.recv, recv, outBytes);
    return ncclSuccess;
  }
  return launchFailed(c, s, g, r, err);
}

/// The CUDA IPC path: queued on the caller's stream, returns at once.
/// Peers put into this rank's output, so the output is staged at the
/// start of the device window (the same offset on every rank) and copied
/// to the user's buffer after the kernel, on the same stream. An
/// out-of-place algorithm reads the user's input where it is; an in-place
/// one finds it in the staged output, copied there first.
ncclResult_t launchCuda(const Call &c, CommState &s, const Algo &a) {
  const ccsynthAlgorithm &g = *a.desc;
  IpcState &st = ipcOf(s, a.owner);
  int n = s.nranks, me = s.rank;
  std::size_t es = rt::dtypeSize(int(c.dtype));
  std::uint64_t unit = std::uint64_t(c.count) * es;
  int inU = unitsOf(c.collective, n, true),
      outU = unitsOf(c.collective, n, false);
  bool sends = sendsOn(c, me), receives = receivesOn(c, me);
  char *recv = st.data;
  const void *send = c.send;
  ccsynthError err{};
  bool captured = capturing(c.stream);
  if (!waitOrderEvent(st.order, c.stream, captured)) {
    std::snprintf(err.message, sizeof err.message,
                  "ordering the launch after the previous one on this "
                  "communicator failed");
    return launchFailed(c, s, g, ccsynthSystemError, err);
  }
  if (g.inplace) {
    // Decide() admits in-place algorithms whose output is the whole
    // buffer (allreduce, allgather, ...): the input sits inside it.
    char *in = recv + (outU > inU ? std::uint64_t(me) * unit : 0);
    if (sends && !copyAsync(in, c.send, unit * inU, c.stream)) {
      std::snprintf(err.message, sizeof err.message,
                    "staging the input on the stream failed");
      return launchFailed(c, s, g, ccsynthSystemError, err);
    }
    send = in;
  }
  ccsynthLaunchArgs args = launchArgs(c, s, g, send, recv, st.data + st.staging,
                                      ccsynthTransportCudaIpc, st.comm, err);
  ccsynthResult r = g.launch(&args);
  if (r != ccsynthSuccess)
    return launchFailed(c, s, g, r, err);
  if (receives && !copyAsync(c.recv, recv, unit * outU, c.stream)) {
    std::snprintf(err.message, sizeof err.message,
                  "copying the output to the user's buffer on the stream "
                  "failed");
    return launchFailed(c, s, g, ccsynthSystemError, err);
  }
  if (!recordOrderEvent(st.order, c.stream, captured)) {
    std::snprintf(err.message, sizeof err.message,
                  "recording the end of the launch failed");
    return launchFailed(c, s, g, ccsynthSystemError, err);
  }
  return ncclSuccess;
}

ncclResult_t launch(const Call &c, CommState &s, const Algo &a, bool cuda) {
  return cuda ? launchCuda(c, s, a) : launchHost(c, s, a);
}

struct Deferred {
  Call call;
  std::shared_ptr<CommState> state;
  const Algo *algo;
  bool cuda;
};
thread_local int groupDepth = 0;
thread_local std::vector<Deferred> deferred;

/// The decision for `c` on `s` as things stand (nothing is set up).
Decision decideNow(const CallFacts &f, CommState &s) {
  Config &cfg = config();
  CommFacts host = hostFacts(s);
  return decideEach(f, cfg.facts, [&](std::size_t i) {
    return factsFor(s, host, cfg.algos[i]);
  });
}

/// The decision for `c` on `s`, setting up what it needs (collectively):
/// the host window's readiness, or a plugin's device window.
Decision decideAndPrepare(const Call &c, CommState &s, std::string &how) {
  Config &cfg = config();
  CallFacts f = factsOf(c, s);
  Decision d = decideNow(f, s);
  if (d.algo < 0)
    return d;
  const Algo &a = cfg.algos[std::size_t(d.algo)];
  if (!d.cuda) {
    if (!windowReady(s)) {
      d.algo = -1;
      d.reason = "window unusable: " + s.unusable;
    }
    return d;
  }
  // Each round sets one plugin's window up (or finds it unusable) and
  // decides again, the same way on every rank: its size is known now, or
  // the next plugin may serve the call.
  for (const Algo *chosen = &a;;) {
    IpcState &st = ipcOf(s, chosen->owner);
    if (st.state != CommFacts::Device::NotYet)
      break;
    setupIpc(s, st, *chosen->owner, deviceOf(c.recv ? c.recv : c.send));
    d = decideNow(f, s);
    if (d.algo < 0 || !d.cuda)
      return d;
    chosen = &cfg.algos[std::size_t(d.algo)];
  }
  how = placement(*cfg.algos[std::size_t(d.algo)].desc).describe();
  return d;
}

} // namespace

// --- entry points -----------------------------------------------------------

ncclResult_t dispatch(const Call &c, bool &forwarded) {
  forwarded = true;
  Config &cfg = config();
  if (cfg.algos.empty())
    return ncclSuccess;
  std::shared_ptr<CommState> s = stateOf(c.comm);
  if (!s)
    return ncclSuccess; // e.g. ncclCommInitAll: not ours to keep
  if (s->resolved)
    pollIpcErrors(*s);
  if (s->error != ncclSuccess) {
    // The communicator failed in a plugin launch: NCCL's rule, it must be
    // aborted; later plugin launches on it fail as well. Nothing is set
    // up any more: only the first decision's outcome is asked for.
    Decision d = s->resolved ? decideNow(factsOf(c, *s), *s) : Decision{};
    if (d.algo >= 0) {
      forwarded = false;
      return s->error;
    }
    return ncclSuccess;
  }
  if (!resolve(*s, c.comm))
    return ncclSuccess;
  ensureWindow(*s);
  std::string how;
  Decision d = decideAndPrepare(c, *s, how);
  logDecision(*s, c, d, how);
  if (d.algo < 0)
    return ncclSuccess;
  forwarded = false;
  const Algo &a = cfg.algos[std::size_t(d.algo)];
  if (groupDepth > 0) {
    deferred.push_back({c, s, &a, d.cuda});
    return ncclSuccess;
  }
  return launch(c, *s, a, d.cuda);
}

void onCommInit(ncclComm_t comm, int nranks, int rank, const void *id,
                std::size_t idBytes) {
  if (config().algos.empty())
    return;
  auto s = std::make_shared<CommState>();
  char key[40];
  std::snprintf(key, sizeof key, "%016llx%016llx",
                (unsigned long long)fnv(id, idBytes),
                (unsigned long long)fnv(id, idBytes, 0x9e3779b97f4a7c15ull));
  s->key = key;
  s->nranks = nranks;
  s->rank = rank;
  s->resolved = true;
  ensureWindow(*s);
  std::lock_guard<std::mutex> lock(stateMutex);
  states()[comm] = s;
}

void onCommSplit(ncclComm_t parent, ncclComm_t child, int color) {
  std::shared_ptr<CommState> p = stateOf(parent);
  if (!p)
    return;
  // Every rank of the parent calls split in the same order: the sequence
  // number and the color name the child identically on its ranks.
  std::uint64_t seq = p->splits++;
  if (!child)
    return;
  auto s = std::make_shared<CommState>();
  char key[40];
  std::string base =
      p->key + ".s" + std::to_string(seq) + ".c" + std::to_string(color);
  std::snprintf(
      key, sizeof key, "%016llx%016llx",
      (unsigned long long)fnv(base.data(), base.size()),
      (unsigned long long)fnv(base.data(), base.size(), 0x9e3779b97f4a7c15ull));
  s->key = key;
  std::lock_guard<std::mutex> lock(stateMutex);
  states()[child] = s;
}

void onCommRelease(ncclComm_t comm) {
  std::shared_ptr<CommState> s;
  {
    std::lock_guard<std::mutex> lock(stateMutex);
    auto it = states().find(comm);
    if (it == states().end())
      return;
    s = it->second;
    states().erase(it);
  }
  // Launches still deferred in an open group hold their own reference.
  s->window.reset(); // unmaps; removes the name if no one else did
  std::lock_guard<std::mutex> lock(s->ipcMutex);
  for (auto &[plugin, st] : s->ipc) {
    if (!st.comm)
      continue;
    // The last launch's copy-out reads the window: it ends first (bounded;
    // after an abort the kernels end at their next poll).
    // Past the deadline the window stays mapped (freeing memory a kernel
    // may still write would end the context) and the event stays too.
    if (awaitOrderEvent(st.order, config().timeout)) {
      st.comms->ipc_comm_destroy(st.comm); // waits for the last launch
      destroyOrderEvent(st.order);
    } else {
      warn("communicator " + s->key.substr(0, 16) +
           ": its last device collective had not ended within the timeout "
           "when it was released; its CUDA IPC window stays mapped");
      st.order = nullptr;
    }
    st.comm = nullptr;
    st.state = CommFacts::Device::Unusable;
    st.unusable = "the communicator was released";
  }
}

void onCommAbortStart(ncclComm_t comm) {
  std::shared_ptr<CommState> s = stateOf(comm);
  if (!s)
    return;
  std::lock_guard<std::mutex> lock(s->ipcMutex);
  for (auto &[plugin, st] : s->ipc)
    if (st.comm)
      st.comms->ipc_comm_abort(st.comm);
}

void onCommRevoke(ncclComm_t comm) {
  if (std::shared_ptr<CommState> s = stateOf(comm)) {
    s->ready = Readiness::Unusable;
    s->unusable = "the communicator was revoked";
    std::lock_guard<std::mutex> lock(s->ipcMutex);
    for (auto &[plugin, st] : s->ipc) {
      if (st.comm)
        st.comms->ipc_comm_abort(st.comm);
      st.state = CommFacts::Device::Unusable;
      st.unusable = "the communicator was revoked";
    }
  }
}

ncclResult_t commError(ncclComm_t comm) {
  std::shared_ptr<CommState> s = stateOf(comm);
  if (!s)
    return ncclSuccess;
  pollIpcErrors(*s);
  return s->error;
}

void onGroupStart() { ++groupDepth; }

ncclResult_t onGroupEnd(ncclResult_t r) {
  if (groupDepth > 0)
    --groupDepth;
  if (groupDepth > 0 || deferred.empty())
    return r;
  std::vector<Deferred> run;
  run.swap(deferred);
  ncclResult_t result = r;
  for (Deferred &d : run) {
    bool gone =
        d.cuda ? !ipcOf(*d.state, d.algo->owner).comm : !d.state->window;
    if (gone) {
      result = ncclInvalidUsage; // destroyed inside the group
      continue;
    }
    ncclResult_t failed = d.state->error;
    ncclResult_t lr = failed != ncclSuccess
                          ? failed
                          : launch(d.call, *d.state, *d.algo, d.cuda);
    if (lr != ncclSuccess &&
        (result == ncclSuccess || result == ncclInProgress))
      result = lr;
  }
  return result;
}

void onGroupSimulateEnd() {
  if (groupDepth > 0)
    --groupDepth;
  if (groupDepth == 0)
    deferred.clear(); // a simulation launches nothing
}

} // namespace ccsynth::interposer
