//===- CudaContext.cuh - Generated code's primitives on the GPU -----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// CudaContext<A, T, Op, Tr> is the execution context `X` of generated code
// built by nvcc: one object per threadblock, every member __forceinline__.
// It mirrors HostContext member for member (same flags, same values, same
// pass geometry from Layout.h); what differs is who does the work:
//
//  - copy/reduce/put: all threads of the block, 16-byte vectors where
//    aligned (CudaPrimitives.cuh);
//  - signal/credit/done: __syncthreads, then thread 0 stores the flag with
//    release semantics (system scope for flags peers read, GPU scope for a
//    rank's own progress flags);
//  - waits: thread 0 polls with acquire loads under a deadline on the
//    global timer, then __syncthreads_or tells every thread whether the
//    wait succeeded. A failed wait records rank/threadblock/step/flag once
//    (first failure of the comm), raises the abort word, and returns false
//    so generated code returns; blocks waiting elsewhere see the abort word
//    and return too. Nothing traps and nothing waits without a deadline.
//
// Tr is a transport (CudaTransports.cuh): it knows where this rank's and
// its peers' buffers and flags are and how a put reaches a peer.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/CudaPrimitives.cuh"
#include "ccsynth/runtime/CudaTransport.h"
#include "ccsynth/runtime/CudaTransports.cuh"
#include "ccsynth/runtime/Generated.h"
#include "ccsynth/runtime/Layout.h"

namespace ccsynth::rt {

/// A::threadblocks[I] as a scalar constant (device code may not read the
/// host array itself).
template <class A, int I>
inline constexpr int kThreadblocksAt = A::threadblocks[I];

/// Threadblocks of `rank` in algorithm A (selects over constants).
template <class A, int... I>
CCSYNTH_DEV int threadblocksOf(int rank, std::integer_sequence<int, I...>) {
  int v = 0;
  ((v = rank == I ? kThreadblocksAt<A, I> : v), ...);
  return v;
}
template <class A> CCSYNTH_DEV int threadblocksOf(int rank) {
  return threadblocksOf<A>(rank,
                           std::make_integer_sequence<int, A::shape.ranks>{});
}

/// This block's pass geometry, in shared memory: the out-of-line movers
/// below compute every address from it, so a call site passes only small
/// constants and nothing per step stays live in registers across the
/// kernel. Raw storage: Geometry has member initializers, which a
/// __shared__ variable may not run.
struct BlockLayout {
  Geometry geom;
  std::size_t es; ///< element bytes
};
CCSYNTH_DEV BlockLayout &blockLayout() {
  __shared__ alignas(16) unsigned char raw[sizeof(BlockLayout)];
  return *reinterpret_cast<BlockLayout *>(raw);
}

/// Layout.h's Geometry::address and peerAddress with compares instead of
/// a switch (no jump table in device code).
CCSYNTH_DEV char *sliceAddress(const BlockLayout &l, int b, int blk, int pos,
                               int p, char *peerOut, char *peerScratch) {
  const Geometry &g = l.geom;
  std::size_t es = l.es;
  bool rem = g.isRemainder(p);
  std::size_t off = rem ? 0 : std::size_t(p) * g.tileElems;
  std::size_t stagePos = (std::size_t(blk) * g.blockChunks + pos) * es;
  std::size_t userPos = (blk * g.count + pos * g.chunkElems + off) * es;
  // Slots keep their place in every pass (see Layout.h).
  std::size_t slot = pos * g.tileBytes;
  if (peerOut) { // a peer's output or landing
    if (b == Out)
      return rem ? peerScratch + g.stageOutOffset + stagePos
                 : peerOut + userPos;
    return peerScratch + g.landOffset + slot;
  }
  if (b == In)
    return rem ? g.stageIn + stagePos : g.userIn + userPos;
  if (b == Out)
    return rem ? g.stageOut + stagePos : g.userOut + userPos;
  if (b == Scr)
    return g.scratch + slot;
  return g.scratch + g.landOffset + slot;
}

/// n chunk slices of pass p from (sb, sblk, spos) to (db, dblk, dpos): in
/// this rank's buffers, or in a peer's output/landing when peerOut is set.
template <class K, class S>
__device__ __noinline__ void copySlices(int p, int sb, int sblk, int spos,
                                        int db, int dblk, int dpos, int n,
                                        char *peerOut, char *peerScratch) {
  const BlockLayout &l = blockLayout();
  std::size_t len = l.geom.sliceLen(p) * l.es;
  for (int c = 0; c < n; ++c)
    blockCopy<K, S>(
        sliceAddress(l, db, dblk, dpos + c, p, peerOut, peerScratch),
        sliceAddress(l, sb, sblk, spos + c, p, nullptr, nullptr), len);
}

/// d = a op b for n chunk slices of pass p in this rank's buffers.
template <class K, class Op, class S>
__device__ __noinline__ void reduceSlices(int p, int ab, int ablk, int apos,
                                          int bb, int bblk, int bpos, int db,
                                          int dblk, int dpos, int n) {
  const BlockLayout &l = blockLayout();
  std::size_t len = l.geom.sliceLen(p);
  for (int c = 0; c < n; ++c)
    blockReduce<K, Op, S>(
        sliceAddress(l, db, dblk, dpos + c, p, nullptr, nullptr),
        sliceAddress(l, ab, ablk, apos + c, p, nullptr, nullptr),
        sliceAddress(l, bb, bblk, bpos + c, p, nullptr, nullptr), len);
}

template <class A, class T, class Op, class Tr> class CudaContext {
  // The algorithm's constants, as constant expressions (no device copy of
  // A::shape is needed).
  static constexpr Shape kShape = A::shape;
  static constexpr int kDataFlags = kShape.dataFlags;
  static constexpr int kCreditFlags = kShape.creditFlags;
  static constexpr int kMaxTbs = kShape.maxTbs;
  /// Copying algorithms run on AnyWord: sizes from the launch, bytes as the
  /// scalar access; reducing ones on their element type.
  static constexpr bool kAnyWord = std::is_same_v<T, AnyWord>;
  using S = std::conditional_t<kAnyWord, unsigned char, T>;
  /// Threads and loads in flight of this architecture's kernel.
  using K = KnobsOf<A>;
  static constexpr std::uint64_t kStepsPerPass = kShape.maxSteps + 1;
  // progressValue/progressEnd of Generated.h, without binding A::shape.
  CCSYNTH_DEV static std::uint64_t progressAt(int p, int step) {
    return std::uint64_t(p) * kStepsPerPass + std::uint64_t(step) + 1;
  }
  CCSYNTH_DEV static std::uint64_t progressEndOf(int p) {
    return std::uint64_t(p + 1) * kStepsPerPass;
  }

public:
  CCSYNTH_DEV CudaContext(Tr &tr, int tbs) : tr(tr), tbs(tbs) {
    constexpr Shape s = kShape;
    es = kAnyWord ? std::size_t(tr.elemSize) : sizeof(T);
    geom.init(s, tr.count, es, tr.tileBytes, tr.in, tr.out, tr.scratch,
              tr.inBlockOffset);
    base = epochBase(tr.epoch);
    if (threadIdx.x == 0) {
      blockSite() = tr.site(); // read only by thread 0, which waits
      blockLayout().geom = geom;
      blockLayout().es = es;
    }
    __syncthreads(); // every thread's movers read the layout
  }

  /// Before the generated function: with GIN, blocks other than 0 wait
  /// until block 0 reset this rank's signals and announced the launch.
  CCSYNTH_DEV bool enterLaunch() {
    if (!tr.waitsForOwnEntry())
      return true;
    return waitWord(tr.header() + kHdrEntered, tr.epoch, true, -1, kFlagEntered,
                    tr.rank, tr.epoch);
  }

  CCSYNTH_DEV int numPasses() const { return geom.passes; }
  CCSYNTH_DEV bool isRemainder(int p) const { return geom.isRemainder(p); }
  CCSYNTH_DEV bool hasRemainder() const { return geom.remainder > 0; }

  /// Waits until `peer` entered this launch and learns its buffers.
  CCSYNTH_DEV bool connect(int peer) {
    if constexpr (!Tr::kAllInLaunch) {
      bool ok;
#if CCSYNTH_NCCL_GIN
      if (!tr.isLsa(peer))
        ok =
            waitFor(-1, kFlagEntered, peer, tr.epoch, [&](std::uint64_t &seen) {
              return tr.ginPeerEntered(peer, seen);
            });
      else
#endif
        ok = waitWord(tr.peerEnteredWord(peer), tr.epoch, true, -1,
                      kFlagEntered, peer, tr.epoch);
      if (!ok)
        return false;
    }
    tr.peerBuffers(peer, peerOut, peerScratch);
    return true;
  }

  CCSYNTH_DEV bool beginPass(int p) {
    pass = p;
    if (kShape.usesScratch && p > 0)
      for (int t = 0; t < tbs; ++t)
        if (t != tr.tb && !waitProgress(-1, t, progressEndOf(p - 1)))
          return false;
    if (isRemainder(p) && tr.tb != 0 &&
        !waitLocal(-1, kFlagStaged, 0, stagedIndex(), std::uint64_t(p) + 1))
      return false;
    return true;
  }
  CCSYNTH_DEV void endPass(int p) {
    releaseLocal(progressIndex(tr.tb), progressEndOf(p));
  }

  // --- data movement -------------------------------------------------------
  CCSYNTH_DEV void copy(int sb, int sblk, int spos, int db, int dblk, int dpos,
                        int n) {
    copySlices<K, S>(pass, sb, sblk, spos, db, dblk, dpos, n, nullptr, nullptr);
    __syncthreads(); // the next step may read what this one wrote
  }
  CCSYNTH_DEV void reduce(int sb, int sblk, int spos, int db, int dblk,
                          int dpos, int n) {
    reduce3(db, dblk, dpos, sb, sblk, spos, db, dblk, dpos, n);
  }
  CCSYNTH_DEV void reduce3(int ab, int ablk, int apos, int bb, int bblk,
                           int bpos, int db, int dblk, int dpos, int n) {
    static_assert(!kAnyWord || !kShape.reduces, "reductions need a type");
    reduceSlices<K, Op, S>(pass, ab, ablk, apos, bb, bblk, bpos, db, dblk, dpos,
                           n);
    __syncthreads();
  }
  /// Writes n chunk slices into the connected peer's buffer.
  CCSYNTH_DEV void put(int peer, int sb, int sblk, int spos, int db, int dblk,
                       int dpos, int n) {
#if CCSYNTH_NCCL_GIN
    if constexpr (Tr::kGin) {
      if (!tr.isLsa(peer)) { // GIN: NCCL reads the source, by window offset
        std::size_t len = geom.sliceLen(pass) * es;
        for (int c = 0; c < n; ++c)
          tr.template put<S>(peer, remote(db, dblk, dpos + c),
                             local(sb, sblk, spos + c), len);
        return;
      }
    }
#endif
    (void)peer;
    copySlices<K, S>(pass, sb, sblk, spos, db, dblk, dpos, n, peerOut,
                     peerScratch);
  }

  // --- switch operations (a switch threadblock's group) ----------------------
  /// Waits until every rank of the group (ascending, this one included)
  /// entered this launch; later switch operations span them. Multimem
  /// (NVLink SHARP) is used where the transport has it for this group.
  CCSYNTH_DEV bool switchJoin(int step, const int *ranks, int k) {
    if constexpr (!Tr::kAllInLaunch) {
      for (int i = 0; i < k; ++i) {
        int r = ranks[i];
        if (r != tr.rank && !waitWord(tr.peerEnteredWord(r), tr.epoch, true,
                                      step, kFlagEntered, r, tr.epoch))
          return false;
      }
    }
    group = ranks;
    groupSize = k;
    multimem = tr.multimemCovers(ranks, k);
    return true;
  }
  /// dst (local) = the reduction over the group of the n chunk slices at
  /// one address on every rank: multimem.ld_reduce where it applies, else
  /// this rank's copy combined with each other rank's in group order.
  CCSYNTH_DEV void switchReduce(int sb, int sblk, int spos, int db, int dblk,
                                int dpos, int n) {
    static_assert(!kAnyWord || !kShape.reduces, "reductions need a type");
    std::size_t len = geom.sliceLen(pass);
    for (int c = 0; c < n; ++c) {
      char *d = local(db, dblk, dpos + c);
      const char *self = local(sb, sblk, spos + c);
      if constexpr (kMultimemReduces<S, Op> && CCSYNTH_DEVICE_ARCH >= 90) {
        const char *mc = multimem ? tr.multimemOf(self) : nullptr;
        if (mc && aligned16(d, mc, len * es)) {
          multimemReduceBlock<K, S>(d, mc, len * es);
          continue;
        }
      }
      bool started = false;
      for (int m = 0; m < groupSize; ++m) {
        if (group[m] == tr.rank)
          continue;
        blockReduce<K, Op, S>(d, started ? d : self,
                              memberAddress(m, sb, sblk, spos + c), len);
        started = true;
        __syncthreads(); // the next one reads what this one wrote
      }
      if (!started && d != self)
        blockCopy<K, S>(d, self, len * es);
    }
    if constexpr (kMultimemReduces<S, Op> && CCSYNTH_DEVICE_ARCH >= 90)
      if (multimem)
        multimemFence();
    __syncthreads(); // the next step may read what this one wrote
  }
  /// The n local chunk slices at src written to one address on every rank
  /// of the group: multimem.st where it applies, else a copy to each.
  CCSYNTH_DEV void multicast(int sb, int sblk, int spos, int db, int dblk,
                             int dpos, int n) {
    std::size_t bytes = geom.sliceLen(pass) * es;
    for (int c = 0; c < n; ++c) {
      const char *src = local(sb, sblk, spos + c);
      if constexpr (CCSYNTH_DEVICE_ARCH >= 90) {
        char *mc = multimem ? tr.multimemOf(local(db, dblk, dpos + c)) : nullptr;
        if (mc && aligned16(mc, src, bytes)) {
          multimemStoreBlock<K>(mc, src, bytes);
          continue;
        }
      }
      for (int m = 0; m < groupSize; ++m) {
        char *dst = memberAddress(m, db, dblk, dpos + c);
        if (dst != src)
          blockCopy<K, S>(dst, src, bytes);
      }
    }
    if constexpr (CCSYNTH_DEVICE_ARCH >= 90)
      if (multimem)
        multimemFence();
    __syncthreads();
  }

  // --- flags ---------------------------------------------------------------
  CCSYNTH_DEV void signal(int peer, int dataFlag) {
    __syncthreads(); // every thread's part of the put is issued
    if (threadIdx.x == 0)
      tr.signalPeer(peer, dataFlag, base + pass + 1);
    if constexpr (Tr::kGin)
      __syncthreads(); // a GIN source may be reused only after its flush
  }
  CCSYNTH_DEV bool waitData(int step, int dataFlag) {
    return waitPeerFlag(step, kFlagData, dataFlag, dataFlag);
  }
  /// The switch group meets (every member past the same point of this
  /// pass): switchGroupBarrier (Generated.h) over the group of switchJoin.
  CCSYNTH_DEV bool switchBarrier(int step, int flagBase) {
    return switchGroupBarrier(*this, group, groupSize, tr.rank, step,
                              flagBase);
  }
  CCSYNTH_DEV void credit(int peer, int creditFlag) {
    // No one waits for the last pass's credit (waitCredit in pass p wants
    // the credit of pass p - 1): not sending it leaves no signal in flight
    // when a launch ends, which the NCCL transport's GIN signals rely on.
    if (pass + 1 >= geom.passes)
      return;
    __syncthreads(); // every thread finished reading the landing slot
    if (threadIdx.x == 0)
      tr.signalPeer(peer, kDataFlags + creditFlag, base + pass + 1);
  }
  CCSYNTH_DEV bool waitCredit(int step, int creditFlag) {
    if (pass == 0)
      return true; // the receiver entered this launch: its landing is free
    return waitPeerFlagAt(step, kFlagCredit, creditFlag,
                          kDataFlags + creditFlag, pass);
  }
  CCSYNTH_DEV void done(int step) {
    releaseLocal(progressIndex(tr.tb), progressAt(pass, step));
  }
  CCSYNTH_DEV bool waitStep(int step, int otherTb, int otherStep) {
    return waitProgress(step, otherTb, progressAt(pass, otherStep));
  }

  // --- the remainder of a ragged count --------------------------------------
  CCSYNTH_DEV void stageIn(int b0, int b1) {
    const std::size_t scale = es / sizeof(S); // scalars per element
    for (int b = b0; b < b1; ++b) {
      const S *src = reinterpret_cast<const S *>(
          geom.userIn + (b * geom.count + geom.bodyElems()) * es);
      S *dst = reinterpret_cast<S *>(geom.stageIn +
                                     std::size_t(b) * geom.blockChunks * es);
      std::size_t have = geom.remainder * scale;
      for (std::size_t i = threadIdx.x; i < geom.blockChunks * scale;
           i += K::threads)
        dst[i] = i < have ? src[i] : S();
    }
  }
  CCSYNTH_DEV void publishStaged(int p) {
    releaseLocal(stagedIndex(), std::uint64_t(p) + 1);
  }
  CCSYNTH_DEV bool awaitRankDone(int step) {
    int last = geom.passes - 1;
    for (int t = 0; t < tbs; ++t)
      if (t != tr.tb && !waitProgress(step, t, progressEndOf(last)))
        return false;
    return true;
  }
  CCSYNTH_DEV void stageOut(int b0, int b1) {
    const std::size_t scale = es / sizeof(S);
    for (int b = b0; b < b1; ++b) {
      S *dst = reinterpret_cast<S *>(geom.userOut +
                                     (b * geom.count + geom.bodyElems()) * es);
      const S *src = reinterpret_cast<const S *>(
          geom.stageOut + std::size_t(b) * geom.blockChunks * es);
      for (std::size_t i = threadIdx.x; i < geom.remainder * scale;
           i += K::threads)
        dst[i] = src[i];
    }
  }

private:
  Tr &tr;
  int tbs;
  int pass = 0;
  std::size_t es = sizeof(S); ///< element bytes
  std::uint64_t base = 0;
  Geometry geom;
  char *peerOut = nullptr;
  char *peerScratch = nullptr;
  const int *group = nullptr;
  int groupSize = 0;
  bool multimem = false;

  /// Chunk `pos` of block `blk` of buffer b at the m-th rank of the group.
  CCSYNTH_DEV char *memberAddress(int m, int b, int blk, int pos) const {
    int r = group[m];
    if (r == tr.rank)
      return local(b, blk, pos);
    char *out = nullptr, *scr = nullptr;
    tr.peerBuffers(r, out, scr);
    return geom.groupAddress(tr.peerInput(r), out, scr, kShape.inplace, b, blk,
                             pos, pass, es);
  }
  CCSYNTH_DEV static bool aligned16(const void *a, const void *b,
                                    std::size_t bytes) {
    return ((reinterpret_cast<std::uintptr_t>(a) |
             reinterpret_cast<std::uintptr_t>(b) | bytes) &
            15) == 0;
  }

  CCSYNTH_DEV static int progressIndex(int t) {
    return kDataFlags + kCreditFlags + t;
  }
  CCSYNTH_DEV static int stagedIndex() {
    return kDataFlags + kCreditFlags + kMaxTbs;
  }
  CCSYNTH_DEV char *local(int b, int blk, int pos) const {
    return geom.address(b, blk, pos, pass, es);
  }
  CCSYNTH_DEV char *remote(int b, int blk, int pos) const {
    return geom.peerAddress(peerOut, peerScratch, b, blk, pos, pass, es);
  }

  /// A flag of this rank only its own threadblocks write (GPU scope).
  CCSYNTH_DEV void releaseLocal(int index, std::uint64_t value) {
    __syncthreads(); // all threads' writes of the step are done
    if (threadIdx.x == 0)
      storeReleaseGpu(tr.flags + index, base + value);
  }
  CCSYNTH_DEV bool waitLocal(int step, int kind, int what, int index,
                             std::uint64_t value) {
    return waitWord(tr.flags + index, base + value, false, step, kind, what,
                    value);
  }
  CCSYNTH_DEV bool waitProgress(int step, int otherTb, std::uint64_t value) {
    return waitLocal(step, kFlagProgress, otherTb, progressIndex(otherTb),
                     value);
  }
  /// A flag peers write: the value of this pass.
  CCSYNTH_DEV bool waitPeerFlag(int step, int kind, int what, int index) {
    return waitPeerFlagAt(step, kind, what, index, pass + 1);
  }
  CCSYNTH_DEV bool waitPeerFlagAt(int step, int kind, int what, int index,
                                  int passValue) {
#if CCSYNTH_NCCL_GIN
    if constexpr (Tr::kGin) {
      if (tr.gin())
        return waitFor(step, kind, what, std::uint64_t(passValue),
                       [&](std::uint64_t &seen) {
                         return tr.flagOrSignal(index, base + passValue,
                                                std::uint64_t(passValue), seen);
                       });
    }
#endif
    return waitWord(tr.flags + index, base + passValue, true, step, kind, what,
                    std::uint64_t(passValue));
  }

  /// Waits until flag word `w` reaches `target` (acquire at system scope
  /// when peers write it, GPU scope for this rank's own flags). Thread 0
  /// polls once here; the rest of the wait is out of line.
  CCSYNTH_DEV bool waitWord(const std::uint64_t *w, std::uint64_t target,
                            bool sys, int step, int kind, int what,
                            std::uint64_t expected) {
    int failed = 0;
    if (threadIdx.x == 0) {
      std::uint64_t v = sys ? loadAcquireSys(w) : loadAcquireGpu(w);
      if (v < target)
        failed =
            waitWordSlow(w, target, sys ? 1 : 0, step, kind, what, expected);
    }
    return !__syncthreads_or(failed);
  }

  /// The same for a condition that is not one word (GIN signals).
  template <class Poll>
  CCSYNTH_DEV bool waitFor(int step, int kind, int what, std::uint64_t expected,
                           const Poll &poll) {
    int failed = 0;
    if (threadIdx.x == 0) {
      std::uint64_t seen = 0;
      if (!poll(seen)) {
        std::uint64_t start = globalTimerNs();
        unsigned sleepNs = 0;
        for (unsigned n = 1;; ++n) {
          if (poll(seen))
            break;
          if ((n & 63) == 0) {
            bool aborted = loadRelaxedSys(tr.header() + kHdrAbort) != 0;
            if (aborted || globalTimerNs() - start > tr.timeoutNs) {
              waitFailed(step, kind, what, expected, seen, !aborted);
              failed = 1;
              break;
            }
            sleepNs = sleepNs < 512 ? sleepNs * 2 + 32 : 1024;
          }
          if (sleepNs)
            __nanosleep(sleepNs);
        }
      }
    }
    return !__syncthreads_or(failed);
  }
};

} // namespace ccsynth::rt
