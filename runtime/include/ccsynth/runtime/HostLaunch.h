//===- HostLaunch.h - Launch entry of host-backend plugins ----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Runs one rank's part of a generated algorithm on the host: the rank
// publishes its buffers for the new launch epoch, then its threadblocks run
// as fibers on the caller's thread (Fibers.h; where fibers are off, each on
// its own thread, threadblock 0 on the caller's), and the call returns when
// all of them are done, as a stream synchronization would.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/HostContext.h"
#include "ccsynth/runtime/LaunchChecks.h"

#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace ccsynth::rt {

/// A rank's result once its threadblocks ended: its own failure, or that
/// another rank failed first.
inline ccsynthResult finishRun(const ccsynthLaunchArgs *a, CommHeader *comm,
                               int rank, bool ok) {
  if (ok && !commAborted(comm))
    return ccsynthSuccess;
  ccsynthError first = commError(comm);
  if (a->error) {
    *a->error = first;
    if (first.rank != rank && first.result == ccsynthTimeout)
      a->error->result = ccsynthAborted;
  }
  return first.rank == rank ? ccsynthResult(first.result) : ccsynthAborted;
}

template <class A, class T, class Op>
ccsynthResult hostRun(const ccsynthLaunchArgs *a, CommHeader *comm,
                      std::size_t blockCount, long inBlockOffset,
                      std::uint64_t tile) {
  const Shape &s = A::shape;
  int rank = a->rank;
  RankSlot &me = commSlot(comm, rank);
  HostRankLaunch launch;
  launch.comm = comm;
  launch.shape = &s;
  launch.rank = rank;
  launch.tbs = A::threadblocks[rank];
  launch.epoch = ++me.epoch;
  launch.timeout = timeoutOf(a->timeout_seconds);
  launch.geom.init(s, blockCount, sizeof(T), tile, a->sendbuff, a->recvbuff,
                   a->scratch, inBlockOffset);
  me.send = commPublish(comm, a->sendbuff);
  me.recv = commPublish(comm, a->recvbuff);
  me.scratch = commPublish(comm, a->scratch);
  storeRelease(me.entered, launch.epoch);

  std::atomic<bool> ok{true};
  auto body = [&](int tb) {
    HostContext<T, Op> x(launch, tb);
    if (!A::run(x, rank, tb))
      ok.store(false, std::memory_order_relaxed);
  };
  // The rank's threadblocks as fibers on this thread (Fibers.h), or one
  // thread each where fibers are off or cannot be made.
#if CCSYNTH_FIBERS
  if (launch.tbs > 1 && fibersEnabled()) {
    using Body = decltype(body);
    FiberGroup group(
        launch.tbs, [](void *fn, int tb) { (*static_cast<Body *>(fn))(tb); },
        &body);
    if (group.prepare()) {
      group.run();
      return finishRun(a, comm, rank, ok.load());
    }
  }
#endif
  std::vector<std::thread> threads;
  try {
    threads.reserve(launch.tbs);
    for (int tb = 1; tb < launch.tbs; ++tb)
      threads.emplace_back(body, tb);
  } catch (const std::exception &e) {
    ccsynthError err{};
    err.result = ccsynthSystemError;
    err.rank = rank;
    err.threadblock = err.step = -1;
    std::snprintf(err.message, sizeof err.message,
                  "rank %d: cannot start threadblock threads: %s", rank,
                  e.what());
    commFail(comm, err);
    ok = false;
  }
  if (launch.tbs > 0 && ok)
    body(0);
  for (std::thread &t : threads)
    t.join();
  return finishRun(a, comm, rank, ok.load());
}

template <class A, class T>
ccsynthResult hostRunOp(const ccsynthLaunchArgs *a, CommHeader *w,
                        std::size_t n, long off, std::uint64_t tile) {
  constexpr std::uint32_t ops = CCSYNTH_OP_MASK;
  switch (a->op) {
  case ccsynthSum:
    if constexpr ((ops & 1u) != 0)
      return hostRun<A, T, SumOp>(a, w, n, off, tile);
    break;
  case ccsynthProd:
    if constexpr ((ops & 2u) != 0)
      return hostRun<A, T, ProdOp>(a, w, n, off, tile);
    break;
  case ccsynthMax:
    if constexpr ((ops & 4u) != 0)
      return hostRun<A, T, MaxOp>(a, w, n, off, tile);
    break;
  case ccsynthMin:
    if constexpr ((ops & 8u) != 0)
      return hostRun<A, T, MinOp>(a, w, n, off, tile);
    break;
  }
  return ccsynthUnsupported;
}

template <class A, class T>
ccsynthResult hostRunType(const ccsynthLaunchArgs *a, CommHeader *w,
                          std::size_t n, long off, std::uint64_t tile) {
  if constexpr (A::shape.reduces)
    return hostRunOp<A, T>(a, w, n, off, tile);
  else
    return hostRun<A, T, NoOp>(a, w, n, off, tile);
}

/// Host dtypes of a reducing algorithm (elements) or a copying one
/// (unsigned words of the element's size). `Tile`: bytes per chunk per pass
/// (a descriptor may run the same code with another tile than A's).
template <class A, unsigned long long Tile = A::tileBytes>
ccsynthResult hostLaunch(const ccsynthLaunchArgs *a) {
  constexpr std::uint64_t tile = Tile;
  const Shape &s = A::shape;
  constexpr std::uint32_t dtypes = CCSYNTH_DTYPE_MASK;
  constexpr std::uint32_t ops = A::shape.reduces ? CCSYNTH_OP_MASK : 0u;
  std::size_t n = 0;
  long off = 0;
  ccsynthResult r = checkLaunch(s, tile, dtypes, ops, a, n, off);
  if (r != ccsynthSuccess)
    return r;
  bool shm = a->transport == ccsynthTransportHostShm;
  if ((a->transport != ccsynthTransportHostThreads && !shm) || !a->comm)
    return reportError(a->error, ccsynthUnsupported, a->rank,
                       "%s: the host backend runs on the host-threads or "
                       "host-shm transport (got transport %d)",
                       s.name, a->transport);
  CommHeader *w = static_cast<CommHeader *>(a->comm);
  if (w->magic != CommHeader::kMagic ||
      w->layoutVersion != CommHeader::kLayoutVersion)
    return reportError(a->error, ccsynthInvalidArgument, a->rank,
                       "%s: the communicator is not a host communicator of "
                       "layout version %u",
                       s.name, CommHeader::kLayoutVersion);
  if (w->nranks != s.ranks || w->flagWords < std::uint32_t(flagWords(s)))
    return reportError(a->error, ccsynthInvalidArgument, a->rank,
                       "%s: the communicator has %d ranks and %u flag words; "
                       "the algorithm needs %d and %d",
                       s.name, w->nranks, w->flagWords, s.ranks, flagWords(s));
  if ((w->addressFree != 0) != shm)
    return reportError(a->error, ccsynthInvalidArgument, a->rank,
                       "%s: transport %d does not match the communicator "
                       "(%s)",
                       s.name, a->transport,
                       w->addressFree ? "a shared-memory window"
                                      : "ranks as threads");
  if (shm) {
    // Peers reach a rank's buffers only through the window.
    std::uint64_t es = std::uint64_t(dtypeSize(a->dtype));
    std::uint64_t blockBytes = std::uint64_t(n) * es;
    bool needsSend = !((s.coll == Coll::Broadcast || s.coll == Coll::Scatter) &&
                       a->rank != s.root);
    if ((n > 0 && needsSend &&
         !commContains(w, a->sendbuff, blockBytes * s.inBlocks)) ||
        (n > 0 && !commContains(w, a->recvbuff, blockBytes * s.outBlocks)) ||
        (a->scratch_bytes > 0 &&
         !commContains(w, a->scratch, a->scratch_bytes)))
      return reportError(a->error, ccsynthInvalidArgument, a->rank,
                         "%s: with ranks as processes, the send, receive "
                         "and scratch buffers must lie in the shared-memory "
                         "window",
                         s.name);
  }
  if (commAborted(w)) {
    if (a->error)
      *a->error = commError(w);
    return ccsynthAborted;
  }
  if (n == 0)
    return ccsynthSuccess;
  int t = a->dtype;
  if constexpr (A::shape.reduces) {
    switch (t) {
    case ccsynthInt8:
      if constexpr ((dtypes & (1u << ccsynthInt8)) != 0)
        return hostRunType<A, std::int8_t>(a, w, n, off, tile);
      break;
    case ccsynthUint8:
      if constexpr ((dtypes & (1u << ccsynthUint8)) != 0)
        return hostRunType<A, std::uint8_t>(a, w, n, off, tile);
      break;
    case ccsynthInt32:
      if constexpr ((dtypes & (1u << ccsynthInt32)) != 0)
        return hostRunType<A, std::int32_t>(a, w, n, off, tile);
      break;
    case ccsynthUint32:
      if constexpr ((dtypes & (1u << ccsynthUint32)) != 0)
        return hostRunType<A, std::uint32_t>(a, w, n, off, tile);
      break;
    case ccsynthInt64:
      if constexpr ((dtypes & (1u << ccsynthInt64)) != 0)
        return hostRunType<A, std::int64_t>(a, w, n, off, tile);
      break;
    case ccsynthUint64:
      if constexpr ((dtypes & (1u << ccsynthUint64)) != 0)
        return hostRunType<A, std::uint64_t>(a, w, n, off, tile);
      break;
    case ccsynthFloat16:
      if constexpr ((dtypes & (1u << ccsynthFloat16)) != 0)
        return hostRunType<A, Half>(a, w, n, off, tile);
      break;
    case ccsynthFloat32:
      if constexpr ((dtypes & (1u << ccsynthFloat32)) != 0)
        return hostRunType<A, float>(a, w, n, off, tile);
      break;
    case ccsynthFloat64:
      if constexpr ((dtypes & (1u << ccsynthFloat64)) != 0)
        return hostRunType<A, double>(a, w, n, off, tile);
      break;
    case ccsynthBfloat16:
      if constexpr ((dtypes & (1u << ccsynthBfloat16)) != 0)
        return hostRunType<A, Bf16>(a, w, n, off, tile);
      break;
    }
    return ccsynthUnsupported;
  } else {
    // Copies move words of the element's size: one instantiation per size
    // among the dtypes built in.
    constexpr std::uint32_t size1 = (1u << ccsynthInt8) | (1u << ccsynthUint8);
    constexpr std::uint32_t size2 =
        (1u << ccsynthFloat16) | (1u << ccsynthBfloat16);
    constexpr std::uint32_t size4 =
        (1u << ccsynthInt32) | (1u << ccsynthUint32) | (1u << ccsynthFloat32);
    switch (dtypeSize(t)) {
    case 1:
      if constexpr ((dtypes & size1) != 0)
        return hostRun<A, std::uint8_t, NoOp>(a, w, n, off, tile);
      break;
    case 2:
      if constexpr ((dtypes & size2) != 0)
        return hostRun<A, std::uint16_t, NoOp>(a, w, n, off, tile);
      break;
    case 4:
      if constexpr ((dtypes & size4) != 0)
        return hostRun<A, std::uint32_t, NoOp>(a, w, n, off, tile);
      break;
    default:
      if constexpr ((dtypes & ~(size1 | size2 | size4)) != 0)
        return hostRun<A, std::uint64_t, NoOp>(a, w, n, off, tile);
      break;
    }
    return ccsynthUnsupported;
  }
}

} // namespace ccsynth::rt
