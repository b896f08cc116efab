//===- Dispatch.cpp - Which collective runs a plugin, and running it ------===//
//
// The decision for a call depends only on what every rank of a
// communicator shares: the collective, the rank count, count, dtype, op,
// root, the plugins loaded (the same CCSYNTH_PLUGINS on every rank, checked
// when the ranks join the window) and the state of the communicator's
// window. Rank-local facts (whether the call is in place, buffer
// addresses) never decide: buffers are staged through the window, so an
// algorithm of either placement serves both. Two facts are local but
// uniform in any working job: CUDA graph capture and whether buffers are
// device memory (host plugins never run on device buffers).
//
// Environment (read once per process):
//   CCSYNTH_PLUGINS       plugin paths and config files, ':'-separated
//   CCSYNTH_TIMEOUT       seconds one wait of a plugin launch may take (30)
//   CCSYNTH_WINDOW_BYTES  staging bytes per rank and buffer (16 MiB)
//   CCSYNTH_DEBUG=1       log each decision once per (communicator,
//                         collective, size class) with its reason
//
//===----------------------------------------------------------------------===//
#include "Interposer.h"

#include "ccsynth/runtime/HostTypes.h"
#include "ccsynth/runtime/PluginLoader.h"
#include "ccsynth/runtime/Reference.h"
#include "ccsynth/runtime/ShmWindow.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
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
};

struct Config {
  std::vector<std::unique_ptr<rt::Plugin>> plugins;
  std::vector<Algo> algos;
  bool debug = false;
  double timeout = 30;
  std::uint64_t windowBytes = 16ull << 20;
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
  for (const ccsynthAlgorithm &a : *p)
    c.algos.push_back({&a, path});
  c.plugins.push_back(std::move(p));
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
    if (const char *w = std::getenv("CCSYNTH_WINDOW_BYTES")) {
      char *end = nullptr;
      unsigned long long v = std::strtoull(w, &end, 10);
      if (end && !*end && v >= 64)
        c->windowBytes = v;
      else
        warn(std::string("CCSYNTH_WINDOW_BYTES='") + w +
             "' is not a byte count >= 64; using 16 MiB");
    }
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

struct Cuda {
  using IsCapturing = int (*)(cudaStream_t, int *);
  using PointerAttributes = int (*)(void *, const void *);
  IsCapturing isCapturing = nullptr;
  PointerAttributes pointerAttributes = nullptr;
};

const Cuda &cuda() {
  static Cuda c = [] {
    Cuda c;
    for (const char *name :
         {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
      // Only a runtime the application already has: loading one here would
      // pull CUDA into a process that does not use it.
      void *h = ::dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
      if (!h)
        continue;
      c.isCapturing = reinterpret_cast<Cuda::IsCapturing>(
          ::dlsym(h, "cudaStreamIsCapturing"));
      c.pointerAttributes = reinterpret_cast<Cuda::PointerAttributes>(
          ::dlsym(h, "cudaPointerGetAttributes"));
      break;
    }
    return c;
  }();
  return c;
}

bool capturing(cudaStream_t s) {
  const Cuda &c = cuda();
  int status = 0; // cudaStreamCaptureStatusNone
  return c.isCapturing && c.isCapturing(s, &status) == 0 && status != 0;
}

bool deviceMemory(const void *p) {
  const Cuda &c = cuda();
  if (!c.pointerAttributes || !p)
    return false;
  // cudaPointerAttributes starts with `enum cudaMemoryType type`; 2 is
  // device memory, 3 managed (host-accessible).
  alignas(16) unsigned char attrs[64] = {};
  if (c.pointerAttributes(attrs, p) != 0)
    return false;
  int type;
  std::memcpy(&type, attrs, sizeof type);
  return type == 2;
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
  ncclResult_t error = ncclSuccess;
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

std::uint64_t roundUp(std::uint64_t v, std::uint64_t a) {
  return (v + a - 1) / a * a;
}

/// The host algorithms for `n` ranks.
std::vector<const Algo *> algosFor(int n) {
  std::vector<const Algo *> v;
  for (const Algo &a : config().algos)
    if (a.desc->ranks == n && a.desc->backend == ccsynthBackendHost &&
        (a.desc->transport_mask & ccsynthTransportHostShm))
      v.push_back(&a);
  return v;
}

/// Attaches the communicator's window, sized for the algorithms of its
/// rank count, and announces this rank. Idempotent.
void ensureWindow(CommState &s) {
  if (s.windowTried)
    return;
  s.windowTried = true;
  auto algos = algosFor(s.nranks);
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

// --- the decision ----------------------------------------------------------

struct Decision {
  const Algo *algo = nullptr;
  std::string reason;
};

int unitsOf(const char *collective, int n, bool in) {
  std::string c = collective;
  if (c == "allgather" || c == "gather")
    return in ? 1 : n;
  if (c == "reducescatter" || c == "scatter")
    return in ? n : 1;
  if (c == "alltoall")
    return n;
  return 1;
}

Decision decide(const Call &c, CommState &s) {
  Decision d;
  if (c.dtype < 0 || c.dtype >= ncclFloat8e4m3) {
    d.reason = "data type " + std::to_string(int(c.dtype)) +
               " has no ccsynth equivalent";
    return d;
  }
  int es = rt::dtypeSize(int(c.dtype));
  std::uint64_t larger = std::uint64_t(c.count) * es *
                         std::max(unitsOf(c.collective, s.nranks, true),
                                  unitsOf(c.collective, s.nranks, false));
  std::string closest;
  for (const Algo *a : algosFor(s.nranks)) {
    const ccsynthAlgorithm &g = *a->desc;
    std::string why;
    if (c.collective != std::string(g.collective))
      continue;
    bool reduces = g.op_mask != 0;
    if (!(g.dtype_mask & (1u << int(c.dtype))))
      why = std::string("dtype ") + rt::dtypeName(int(c.dtype)) +
            " not built in (" + rt::dtypeMaskNames(g.dtype_mask) + ")";
    else if (reduces && (int(c.op) < 0 || int(c.op) >= ccsynthNumOps ||
                         !(g.op_mask & (1u << int(c.op)))))
      why = "op " + std::to_string(int(c.op)) + " not built in (" +
            rt::opMaskNames(g.op_mask) + ")";
    else if (c.root >= 0 && c.root != g.root)
      why = "root " + std::to_string(c.root) + ", the algorithm's is " +
            std::to_string(g.root);
    else if (larger < g.min_bytes || (g.max_bytes && larger > g.max_bytes))
      why = std::to_string(larger) + " bytes outside its range [" +
            std::to_string(g.min_bytes) + ", " +
            (g.max_bytes ? std::to_string(g.max_bytes) : "inf") + "]";
    else if (larger > s.staging)
      why = std::to_string(larger) + " bytes exceed the staging window (" +
            std::to_string(s.staging) + ", CCSYNTH_WINDOW_BYTES)";
    else if (g.count_multiple > 1 && c.count % g.count_multiple != 0)
      why = "count not a multiple of " + std::to_string(g.count_multiple);
    else if (capturing(c.stream) && !g.capture_safe)
      why = "the stream is being captured into a CUDA graph and the "
            "algorithm is not capture-safe";
    else if (deviceMemory(c.send) || deviceMemory(c.recv))
      why = "device buffers: host-backend plugins run on host memory only";
    if (why.empty()) {
      d.algo = a;
      d.reason = "plugin " + a->plugin + " algorithm " + g.name;
      return d;
    }
    if (closest.empty())
      closest = std::string(g.name) + ": " + why;
  }
  d.reason = closest.empty()
                 ? std::string("no host plugin algorithm for ") + c.collective +
                       " on " + std::to_string(s.nranks) + " ranks"
                 : closest;
  return d;
}

void logDecision(CommState &s, const Call &c, const Decision &d) {
  if (!config().debug)
    return;
  int es = c.dtype >= 0 && c.dtype < ncclFloat8e4m3
               ? rt::dtypeSize(int(c.dtype))
               : 1;
  std::uint64_t bytes = std::uint64_t(c.count) * es;
  int sizeClass = 0;
  while (sizeClass < 63 && (1ull << (sizeClass + 1)) <= bytes)
    ++sizeClass;
  if (!s.logged.insert({c.collective, sizeClass, d.algo != nullptr}).second)
    return;
  std::fprintf(stderr,
               "ccsynth-nccl: comm %.16s rank %d/%d: %s count %zu (%s, size "
               "class 2^%d B) -> %s: %s\n",
               s.key.c_str(), s.rank, s.nranks, c.ncclName, c.count,
               c.dtype >= 0 && c.dtype < ncclFloat8e4m3
                   ? rt::dtypeName(int(c.dtype))
                   : "?",
               sizeClass, d.algo ? "ccsynth" : "NCCL", d.reason.c_str());
}

// --- launching -------------------------------------------------------------

ncclResult_t launch(const Call &c, CommState &s, const Algo &a) {
  const ccsynthAlgorithm &g = *a.desc;
  int n = s.nranks, me = s.rank;
  std::size_t es = rt::dtypeSize(int(c.dtype));
  std::uint64_t unit = std::uint64_t(c.count) * es;
  std::uint64_t inBytes = unit * unitsOf(c.collective, n, true);
  std::uint64_t outBytes = unit * unitsOf(c.collective, n, false);
  std::string coll = c.collective;
  bool rooted = c.root >= 0;
  bool sends = !((coll == "broadcast" || coll == "scatter") && me != c.root);
  bool receives = !((coll == "reduce" || coll == "gather") && me != c.root);
  (void)rooted;

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
  ccsynthLaunchArgs args{};
  args.struct_size = sizeof args;
  args.rank = me;
  args.sendbuff = send;
  args.recvbuff = recv;
  args.count = c.count;
  args.dtype = int(c.dtype);
  args.op = g.op_mask ? int(c.op) : 0;
  args.scratch = g.scratch_bytes ? data + 2 * s.staging : nullptr;
  args.scratch_bytes = g.scratch_bytes;
  args.transport = ccsynthTransportHostShm;
  args.comm = h;
  args.stream = c.stream;
  args.timeout_seconds = config().timeout;
  args.error = &err;
  ccsynthResult r = g.launch(&args);
  if (r == ccsynthSuccess) {
    if (receives && outBytes)
      std::memcpy(c.recv, recv, outBytes);
    return ncclSuccess;
  }
  // A plugin that times out or loses a peer is a system error (the job
  // must abort the communicator); a refusal after a match is ours.
  ncclResult_t code =
      (r == ccsynthTimeout || r == ccsynthAborted || r == ccsynthSystemError)
          ? ncclSystemError
          : ncclInternalError;
  if (s.error == ncclSuccess) {
    s.error = code;
    char msg[768];
    std::snprintf(msg, sizeof msg,
                  "%s on communicator %.16s rank %d: plugin algorithm %s "
                  "failed: %s; returning %s",
                  c.ncclName, s.key.c_str(), me, g.name, err.message,
                  code == ncclSystemError ? "ncclSystemError"
                                          : "ncclInternalError");
    warn(msg);
  }
  return code;
}

struct Deferred {
  Call call;
  std::shared_ptr<CommState> state;
  const Algo *algo;
};
thread_local int groupDepth = 0;
thread_local std::vector<Deferred> deferred;

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
  if (s->error != ncclSuccess) {
    // The communicator failed in a plugin launch: NCCL's rule, it must be
    // aborted; later plugin launches on it fail as well.
    Decision d = s->resolved ? decide(c, *s) : Decision{};
    if (d.algo) {
      forwarded = false;
      return s->error;
    }
    return ncclSuccess;
  }
  if (!resolve(*s, c.comm))
    return ncclSuccess;
  ensureWindow(*s);
  Decision d;
  if (!s->window && s->ready != Readiness::Unusable) {
    d.reason =
        "no host plugin algorithm for " + std::to_string(s->nranks) + " ranks";
  } else if (s->ready == Readiness::Unusable) {
    d.reason = "window unusable: " + s->unusable;
  } else {
    d = decide(c, *s);
    if (d.algo && !windowReady(*s)) {
      d.algo = nullptr;
      d.reason = "window unusable: " + s->unusable;
    }
  }
  logDecision(*s, c, d);
  if (!d.algo)
    return ncclSuccess;
  forwarded = false;
  if (groupDepth > 0) {
    deferred.push_back({c, s, d.algo});
    return ncclSuccess;
  }
  return launch(c, *s, *d.algo);
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
}

void onCommRevoke(ncclComm_t comm) {
  if (std::shared_ptr<CommState> s = stateOf(comm)) {
    s->ready = Readiness::Unusable;
    s->unusable = "the communicator was revoked";
  }
}

ncclResult_t commError(ncclComm_t comm) {
  std::shared_ptr<CommState> s = stateOf(comm);
  return s ? s->error : ncclSuccess;
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
    if (!d.state->window) {
      result = ncclInvalidUsage; // destroyed inside the group
      continue;
    }
    ncclResult_t lr = d.state->error != ncclSuccess
                          ? d.state->error
                          : launch(d.call, *d.state, *d.algo);
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
