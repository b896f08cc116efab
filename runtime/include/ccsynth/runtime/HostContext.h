//===- HostContext.h - Generated code's primitives on the host ------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// HostContext<T, Op> is the execution context `X` of generated code when it
// is built by the host C++ compiler: one object per (rank, threadblock),
// each run by its own fiber (or thread, HostLaunch.h). Data moves with memcpy and element loops;
// flags are std::atomic_ref with release (signal) / acquire (wait), the
// orders the device twin uses at system scope.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/Generated.h"
#include "ccsynth/runtime/HostTypes.h"
#include "ccsynth/runtime/HostWorld.h"
#include "ccsynth/runtime/Layout.h"
#include "ccsynth/runtime/Watchdog.h"

#include <cstdio>
#include <cstring>
#include <vector>

namespace ccsynth::rt {

/// Per-launch state of one rank, shared by its threadblocks.
struct HostRankLaunch {
  CommHeader *comm = nullptr;
  const Shape *shape = nullptr;
  int rank = 0;
  int tbs = 0; ///< threadblocks of this rank
  std::uint64_t epoch = 0;
  Geometry geom;
  Clock::duration timeout{};
};

template <class T, class Op> class HostContext {
public:
  HostContext(HostRankLaunch &launch, int tb) : l(launch), tb(tb) {}

  int numPasses() const { return l.geom.passes; }
  bool isRemainder(int p) const { return l.geom.isRemainder(p); }
  bool hasRemainder() const { return l.geom.remainder > 0; }

  /// Waits until `peer` entered this launch and learns its buffers.
  bool connect(int peer) {
    RankSlot &ps = commSlot(l.comm, peer);
    if (!waitFor(ps.entered, l.epoch, -1, [&] {
          return "rank " + std::to_string(peer) + " to enter the launch";
        }))
      return false;
    peerRank = peer;
    peerSend = commAddress(l.comm, ps.send);
    peerRecv = commAddress(l.comm, ps.recv);
    peerScratch = commAddress(l.comm, ps.scratch);
    return true;
  }

  /// Starts pass p: separates passes that reuse schedule scratch, and waits
  /// for the remainder's staging (done by threadblock 0).
  bool beginPass(int p) {
    pass = p;
    if (l.shape->usesScratch && p > 0)
      for (int t = 0; t < l.tbs; ++t)
        if (t != tb && !waitProgress(-1, t, progressEnd(*l.shape, p - 1)))
          return false;
    if (isRemainder(p) && tb != 0 &&
        !waitFor(flag(stagedIndex()).value, base() + std::uint64_t(p) + 1, -1,
                 [&] {
                   return std::string("threadblock 0 to stage the "
                                      "remainder");
                 }))
      return false;
    return true;
  }
  void endPass(int p) {
    storeRelease(flag(progressIndex(tb)).value,
                 base() + progressEnd(*l.shape, p));
  }

  // --- data movement -----------------------------------------------------
  void copy(int sb, int sblk, int spos, int db, int dblk, int dpos, int n) {
    const Geometry &g = l.geom;
    size_t len = g.sliceLen(pass) * sizeof(T);
    for (int c = 0; c < n; ++c)
      std::memcpy(local(db, dblk, dpos + c), local(sb, sblk, spos + c), len);
  }
  void reduce(int sb, int sblk, int spos, int db, int dblk, int dpos, int n) {
    reduce3(db, dblk, dpos, sb, sblk, spos, db, dblk, dpos, n);
  }
  void reduce3(int ab, int ablk, int apos, int bb, int bblk, int bpos, int db,
               int dblk, int dpos, int n) {
    size_t len = l.geom.sliceLen(pass);
    for (int c = 0; c < n; ++c) {
      const T *a = reinterpret_cast<const T *>(local(ab, ablk, apos + c));
      const T *b = reinterpret_cast<const T *>(local(bb, bblk, bpos + c));
      T *d = reinterpret_cast<T *>(local(db, dblk, dpos + c));
      for (size_t i = 0; i < len; ++i)
        d[i] = combine<Op>(a[i], b[i]);
    }
  }
  /// Writes n chunk slices into the connected peer's buffer.
  void put(int peer, int sb, int sblk, int spos, int db, int dblk, int dpos,
           int n) {
    (void)peer;
    size_t len = l.geom.sliceLen(pass) * sizeof(T);
    for (int c = 0; c < n; ++c)
      std::memcpy(remote(db, dblk, dpos + c), local(sb, sblk, spos + c), len);
  }

  // --- switch operations (a switch threadblock's group) --------------------
  /// Waits until every rank of the group (ascending, this one included)
  /// entered this launch; later switch operations span them.
  bool switchJoin(int step, const int *ranks, int k) {
    for (int i = 0; i < k; ++i) {
      RankSlot &ps = commSlot(l.comm, ranks[i]);
      if (!waitFor(ps.entered, l.epoch, step, [&] {
            return "rank " + std::to_string(ranks[i]) +
                   " to enter the launch (switch group)";
          }))
        return false;
    }
    group = ranks;
    groupSize = k;
    return true;
  }
  /// dst (local) = the reduction over the group of the n chunk slices at
  /// one address on every rank, in ascending rank order (what the switch's
  /// multimem.ld_reduce returns; the host adds them one by one).
  void switchReduce(int sb, int sblk, int spos, int db, int dblk, int dpos,
                    int n) {
    size_t len = l.geom.sliceLen(pass);
    for (int c = 0; c < n; ++c) {
      T *d = reinterpret_cast<T *>(local(db, dblk, dpos + c));
      // Element by element: d may be this rank's own operand (in place).
      members.clear();
      for (int m = 0; m < groupSize; ++m)
        members.push_back(
            reinterpret_cast<const T *>(groupMember(m, sb, sblk, spos + c)));
      for (size_t i = 0; i < len; ++i) {
        T v = members[0][i];
        for (int m = 1; m < groupSize; ++m)
          v = combine<Op>(v, members[m][i]);
        d[i] = v;
      }
    }
  }
  /// The n local chunk slices at src written to one address on every rank
  /// of the group (multimem.st).
  void multicast(int sb, int sblk, int spos, int db, int dblk, int dpos,
                 int n) {
    size_t len = l.geom.sliceLen(pass) * sizeof(T);
    for (int c = 0; c < n; ++c) {
      const char *src = local(sb, sblk, spos + c);
      for (int m = 0; m < groupSize; ++m) {
        char *dst = groupMember(m, db, dblk, dpos + c);
        if (dst != src)
          std::memmove(dst, src, len);
      }
    }
  }

  // --- flags -------------------------------------------------------------
  void signal(int peer, int dataFlag) {
    storeRelease(peerFlag(peer, dataFlag).value, base() + pass + 1);
  }
  bool waitData(int step, int dataFlag) {
    return waitFor(flag(dataFlag).value, base() + pass + 1, step, [&] {
      return "data flag " + std::to_string(dataFlag) + " (pass " +
             std::to_string(pass) + ")";
    });
  }
  /// The switch group meets (every member past the same point of this
  /// pass): switchGroupBarrier (Generated.h) over the group of switchJoin.
  bool switchBarrier(int step, int flagBase) {
    return switchGroupBarrier(*this, group, groupSize, l.rank, step, flagBase);
  }
  void credit(int peer, int creditFlag) {
    storeRelease(peerFlag(peer, l.shape->dataFlags + creditFlag).value,
                 base() + pass + 1);
  }
  bool waitCredit(int step, int creditFlag) {
    if (pass == 0)
      return true; // the receiver entered this launch: its landing is free
    return waitFor(flag(l.shape->dataFlags + creditFlag).value, base() + pass,
                   step, [&] {
                     return "credit flag " + std::to_string(creditFlag) +
                            " (landing slot of pass " +
                            std::to_string(pass - 1) + " consumed)";
                   });
  }
  void done(int step) {
    storeRelease(flag(progressIndex(tb)).value,
                 base() + progressValue(*l.shape, pass, step));
  }
  bool waitStep(int step, int otherTb, int otherStep) {
    return waitProgress(step, otherTb,
                        progressValue(*l.shape, pass, otherStep));
  }

  // --- the remainder of a ragged count ------------------------------------
  void stageIn(int b0, int b1) {
    const Geometry &g = l.geom;
    for (int b = b0; b < b1; ++b) {
      const char *src = g.userIn + (b * g.count + g.bodyElems()) * sizeof(T);
      char *dst = g.stageIn + size_t(b) * g.blockChunks * sizeof(T);
      std::memcpy(dst, src, g.remainder * sizeof(T));
      std::memset(dst + g.remainder * sizeof(T), 0,
                  (g.blockChunks - g.remainder) * sizeof(T));
    }
  }
  void publishStaged(int p) {
    storeRelease(flag(stagedIndex()).value, base() + std::uint64_t(p) + 1);
  }
  bool awaitRankDone(int step) {
    int last = l.geom.passes - 1;
    for (int t = 0; t < l.tbs; ++t)
      if (t != tb && !waitProgress(step, t, progressEnd(*l.shape, last)))
        return false;
    return true;
  }
  void stageOut(int b0, int b1) {
    const Geometry &g = l.geom;
    for (int b = b0; b < b1; ++b)
      std::memcpy(g.userOut + (b * g.count + g.bodyElems()) * sizeof(T),
                  g.stageOut + size_t(b) * g.blockChunks * sizeof(T),
                  g.remainder * sizeof(T));
  }

private:
  HostRankLaunch &l;
  int tb;
  int pass = 0;
  int peerRank = -1;
  const char *peerSend = nullptr;
  char *peerRecv = nullptr;
  char *peerScratch = nullptr;
  const int *group = nullptr;
  int groupSize = 0;
  std::vector<const T *> members; ///< a switch reduction's operands

  /// Chunk `pos` of block `blk` of buffer b at the m-th rank of the group.
  char *groupMember(int m, int b, int blk, int pos) {
    if (group[m] == l.rank)
      return local(b, blk, pos);
    RankSlot &ps = commSlot(l.comm, group[m]);
    return l.geom.groupAddress(commAddress(l.comm, ps.send),
                               commAddress(l.comm, ps.recv),
                               commAddress(l.comm, ps.scratch),
                               l.shape->inplace, b, blk, pos, pass, sizeof(T));
  }

  std::uint64_t base() const { return epochBase(l.epoch); }
  FlagWord &flag(int index) { return commFlag(l.comm, l.rank, index); }
  FlagWord &peerFlag(int peer, int index) {
    return commFlag(l.comm, peer, index);
  }
  int progressIndex(int t) const {
    return l.shape->dataFlags + l.shape->creditFlags + t;
  }
  int stagedIndex() const {
    return l.shape->dataFlags + l.shape->creditFlags + l.shape->maxTbs;
  }
  bool waitProgress(int step, int otherTb, std::uint64_t value) {
    return waitFor(flag(progressIndex(otherTb)).value, base() + value, step,
                   [&] {
                     return "threadblock " + std::to_string(otherTb) +
                            " progress >= " + std::to_string(value);
                   });
  }

  char *local(int b, int blk, int pos) {
    return l.geom.address(b, blk, pos, pass, sizeof(T));
  }
  char *remote(int b, int blk, int pos) {
    return l.geom.peerAddress(peerRecv, peerScratch, b, blk, pos, pass,
                              sizeof(T));
  }

  template <class Describe>
  bool waitFor(std::uint64_t &w, std::uint64_t value, int step,
               const Describe &describe) {
    if (loadAcquire(w) >= value)
      return true;
    Backoff backoff(l.timeout);
    // At each deadline: the run's progress (commProgress). The wait gives
    // up only when nothing in the whole run changed since the previous
    // deadline, a full timeout: then every rank is stuck, and this wait is
    // one of the stuck ones. On a starved machine (thousands of threads on
    // two cores) a wait may take longer than the timeout while others move.
    std::uint64_t lastProgress = 0;
    bool armed = false;
    for (;;) {
      if (loadAcquire(w) >= value)
        return true;
      if (commAborted(l.comm))
        return false;
      if (!backoff.pause()) {
        std::uint64_t progress = commProgress(l.comm);
        if (!armed || progress != lastProgress) {
          armed = true;
          lastProgress = progress;
          backoff.restart();
          continue;
        }
        std::uint64_t seen = loadAcquire(w);
        ccsynthError err{};
        err.result = ccsynthTimeout;
        err.rank = l.rank;
        err.threadblock = tb;
        err.step = step;
        std::snprintf(err.message, sizeof(err.message),
                      "rank %d threadblock %d step %d: timed out waiting for "
                      "%s: expected >= %llu (epoch %llu), found %llu",
                      l.rank, tb, step, describe().c_str(),
                      (unsigned long long)(value & 0xffffffffu),
                      (unsigned long long)l.epoch,
                      (unsigned long long)(seen >= base() ? seen - base() : 0));
        commFail(l.comm, err);
        return false;
      }
    }
  }
};

} // namespace ccsynth::rt
