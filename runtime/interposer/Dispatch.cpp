//===- Dispatch.cpp - Which collective runs a plugin, and running it ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The decision itself is Decide.h's: a function of what every rank of a
// communicator shares. This file gathers those facts (the call's, and the
// windows' of its communicator), decides, sets up what the decision needs
// (collectively, at the first call that needs it: Windows.cpp) and runs the
// chosen plugin (Launch.cpp), at once or at the end of the group. First
// the facts and the decision (hostFacts, factsFor, factsOf, logDecision,
// decideNow, decideAndPrepare), then the entry points of Interposer.h:
// dispatch, the communicator lifecycle and groups. The configuration is
// Config.cpp's, the CUDA driver calls CudaShim.cpp's. See docs/runtime.md,
// "The NCCL-API interposer".
//
//===----------------------------------------------------------------------===//
#include "Interposer.h"

#include "Config.h"
#include "CudaShim.h"
#include "Decide.h"
#include "Launch.h"
#include "Windows.h"

#include "ccsynth/runtime/HostTypes.h"
#include "ccsynth/runtime/PluginLoader.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ccsynth::interposer {

using namespace detail;

namespace {

// --- the decision ----------------------------------------------------------

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
