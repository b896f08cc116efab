//===- HostLaunch.h - Launch entry of host-backend plugins ----------------===//
//
// Runs one rank's part of a generated algorithm on the host: the rank
// publishes its buffers for the new launch epoch, then each threadblock
// runs on its own thread (threadblock 0 on the caller's), and the call
// returns when all of them are done, as a stream synchronization would.
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

template <class A, class T, class Op>
ccsynthResult hostRun(const ccsynthLaunchArgs *a, HostWorld &world,
                      std::size_t blockCount, long inBlockOffset) {
  const Shape &s = A::shape;
  int rank = a->rank;
  RankSlot &me = world.slot(rank);
  HostRankLaunch launch;
  launch.world = &world;
  launch.shape = &s;
  launch.rank = rank;
  launch.tbs = A::threadblocks[rank];
  launch.epoch = ++me.epoch;
  launch.timeout = timeoutOf(a->timeout_seconds);
  launch.geom.init(s, blockCount, sizeof(T), A::tileBytes, a->sendbuff,
                   a->recvbuff, a->scratch, inBlockOffset);
  me.send = a->sendbuff;
  me.recv = a->recvbuff;
  me.scratch = a->scratch;
  storeRelease(me.entered, launch.epoch);

  std::atomic<bool> ok{true};
  auto body = [&](int tb) {
    HostContext<T, Op> x(launch, tb);
    if (!A::run(x, rank, tb))
      ok.store(false, std::memory_order_relaxed);
  };
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
    world.fail(err);
    ok = false;
  }
  if (launch.tbs > 0 && ok)
    body(0);
  for (std::thread &t : threads)
    t.join();
  if (ok && !world.aborted())
    return ccsynthSuccess;
  ccsynthError first = world.error();
  if (a->error) {
    *a->error = first;
    if (first.rank != rank && first.result == ccsynthTimeout)
      a->error->result = ccsynthAborted;
  }
  return first.rank == rank ? ccsynthResult(first.result) : ccsynthAborted;
}

template <class A, class T>
ccsynthResult hostRunOp(const ccsynthLaunchArgs *a, HostWorld &w, std::size_t n,
                        long off) {
  constexpr std::uint32_t ops = CCSYNTH_OP_MASK;
  switch (a->op) {
  case ccsynthSum:
    if constexpr ((ops & 1u) != 0)
      return hostRun<A, T, SumOp>(a, w, n, off);
    break;
  case ccsynthProd:
    if constexpr ((ops & 2u) != 0)
      return hostRun<A, T, ProdOp>(a, w, n, off);
    break;
  case ccsynthMax:
    if constexpr ((ops & 4u) != 0)
      return hostRun<A, T, MaxOp>(a, w, n, off);
    break;
  case ccsynthMin:
    if constexpr ((ops & 8u) != 0)
      return hostRun<A, T, MinOp>(a, w, n, off);
    break;
  }
  return ccsynthUnsupported;
}

template <class A, class T>
ccsynthResult hostRunType(const ccsynthLaunchArgs *a, HostWorld &w,
                          std::size_t n, long off) {
  if constexpr (A::shape.reduces)
    return hostRunOp<A, T>(a, w, n, off);
  else
    return hostRun<A, T, NoOp>(a, w, n, off);
}

/// Host dtypes of a reducing algorithm (elements) or a copying one
/// (unsigned words of the element's size).
template <class A> ccsynthResult hostLaunch(const ccsynthLaunchArgs *a) {
  const Shape &s = A::shape;
  constexpr std::uint32_t dtypes = CCSYNTH_DTYPE_MASK;
  constexpr std::uint32_t ops = A::shape.reduces ? CCSYNTH_OP_MASK : 0u;
  std::size_t n = 0;
  long off = 0;
  ccsynthResult r = checkLaunch(s, A::tileBytes, dtypes, ops, a, n, off);
  if (r != ccsynthSuccess)
    return r;
  if (a->transport != ccsynthTransportHostThreads || !a->comm)
    return reportError(a->error, ccsynthUnsupported, a->rank,
                       "%s: the host backend runs on the host-threads "
                       "transport (got transport %d)",
                       s.name, a->transport);
  HostWorld &w = *static_cast<HostWorld *>(a->comm);
  if (w.magic != HostWorld::kMagic || w.ranks() != s.ranks ||
      w.flagWords() < std::uint32_t(flagWords(s)))
    return reportError(a->error, ccsynthInvalidArgument, a->rank,
                       "%s: the communicator has %d ranks and %u flag words; "
                       "the algorithm needs %d and %d",
                       s.name, w.ranks(), w.flagWords(), s.ranks, flagWords(s));
  if (w.aborted()) {
    if (a->error)
      *a->error = w.error();
    return ccsynthAborted;
  }
  if (n == 0)
    return ccsynthSuccess;
  int t = a->dtype;
  if constexpr (A::shape.reduces) {
    switch (t) {
    case ccsynthInt8:
      if constexpr ((dtypes & (1u << ccsynthInt8)) != 0)
        return hostRunType<A, std::int8_t>(a, w, n, off);
      break;
    case ccsynthUint8:
      if constexpr ((dtypes & (1u << ccsynthUint8)) != 0)
        return hostRunType<A, std::uint8_t>(a, w, n, off);
      break;
    case ccsynthInt32:
      if constexpr ((dtypes & (1u << ccsynthInt32)) != 0)
        return hostRunType<A, std::int32_t>(a, w, n, off);
      break;
    case ccsynthUint32:
      if constexpr ((dtypes & (1u << ccsynthUint32)) != 0)
        return hostRunType<A, std::uint32_t>(a, w, n, off);
      break;
    case ccsynthInt64:
      if constexpr ((dtypes & (1u << ccsynthInt64)) != 0)
        return hostRunType<A, std::int64_t>(a, w, n, off);
      break;
    case ccsynthUint64:
      if constexpr ((dtypes & (1u << ccsynthUint64)) != 0)
        return hostRunType<A, std::uint64_t>(a, w, n, off);
      break;
    case ccsynthFloat16:
      if constexpr ((dtypes & (1u << ccsynthFloat16)) != 0)
        return hostRunType<A, Half>(a, w, n, off);
      break;
    case ccsynthFloat32:
      if constexpr ((dtypes & (1u << ccsynthFloat32)) != 0)
        return hostRunType<A, float>(a, w, n, off);
      break;
    case ccsynthFloat64:
      if constexpr ((dtypes & (1u << ccsynthFloat64)) != 0)
        return hostRunType<A, double>(a, w, n, off);
      break;
    case ccsynthBfloat16:
      if constexpr ((dtypes & (1u << ccsynthBfloat16)) != 0)
        return hostRunType<A, Bf16>(a, w, n, off);
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
        return hostRun<A, std::uint8_t, NoOp>(a, w, n, off);
      break;
    case 2:
      if constexpr ((dtypes & size2) != 0)
        return hostRun<A, std::uint16_t, NoOp>(a, w, n, off);
      break;
    case 4:
      if constexpr ((dtypes & size4) != 0)
        return hostRun<A, std::uint32_t, NoOp>(a, w, n, off);
      break;
    default:
      if constexpr ((dtypes & ~(size1 | size2 | size4)) != 0)
        return hostRun<A, std::uint64_t, NoOp>(a, w, n, off);
      break;
    }
    return ccsynthUnsupported;
  }
}

} // namespace ccsynth::rt
