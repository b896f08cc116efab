//===- CudaTransports.cuh - Device side of the CUDA transports ------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A transport tells CudaContext where this rank's buffers and flags are,
// how a put reaches a peer and how a flag is raised on it. Both share the
// header words of CudaTransport.h (abort, epoch, blocks done, entered,
// failure claim) and the failure protocol:
//
//  - fail(): the first block to claim the comm's failure record writes it
//    (host-mapped), then raises the abort word (its rank + 1);
//  - noteAbort(): a block that saw the abort word records, if nothing else
//    did first, that it was aborted by that rank;
//  - finish(): the last block of a launch to finish advances the epoch, so
//    the next launch (or graph replay) raises flags to new values.
//
// VirtualTransport<A>: every rank of A in one launch, rank = blockIdx.x /
// maxTbs; buffers from kernel arguments, flags in one device array.
//
// IpcTransport<A>: this rank's blocks only, one process per rank on one
// node; peers' windows mapped with CUDA IPC, reached with plain stores.
//
// NcclTransport<A> (NCCL 2.28 device API): this rank's blocks only. Peers in
// the NVLink (LSA) team are reached with plain stores through
// ncclGetLsaPointer; with CCSYNTH_NCCL_GIN, peers across the network get
// ncclGin puts, and data/credit flags from them arrive as GIN signals
// (reset at the start of each launch, counted per pass).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/CudaPrimitives.cuh"
#include "ccsynth/runtime/CudaTransport.h"
#include "ccsynth/runtime/Generated.h"

#if CCSYNTH_WITH_NCCL
#include <nccl_device.h>
#endif
#ifndef CCSYNTH_NCCL_GIN
#define CCSYNTH_NCCL_GIN 0
#endif

namespace ccsynth::rt {

/// Writes the failure record once per comm (thread 0 of one block).
CCSYNTH_DEV void recordFailure(std::uint64_t *header, CudaFailureRecord *rec,
                               int rank, int tb, int step, int kind, int what,
                               std::uint64_t expected, std::uint64_t seen,
                               std::uint64_t epoch) {
  auto *claim = reinterpret_cast<unsigned long long *>(header + kHdrClaim);
  if (atomicCAS(claim, 0ull, 1ull) != 0ull)
    return;
  volatile CudaFailureRecord *r = rec;
  r->rank = rank;
  r->threadblock = tb;
  r->step = step;
  r->flagKind = kind;
  r->flagIndex = what;
  r->expected = expected;
  r->seen = seen;
  r->epoch = epoch;
  __threadfence_system();
  r->failed = 1;
  __threadfence_system();
}

/// Where a wait is, for its failure report and the abort it raises.
struct WaitSite {
  std::uint64_t *header;   ///< this rank's header words
  CudaFailureRecord *rec;  ///< host-mapped failure record
  std::uint64_t timeoutNs; ///< deadline of one wait
  std::uint64_t base;      ///< epoch << 32 (subtracted from reported values)
  std::uint64_t epoch;
  void *abortWindow; ///< NCCL: the flag window, to abort NVLink peers too
  int abortPeers;    ///< NCCL: LSA team size; IPC: ranks; 0 otherwise
  int rank, tb;
  /// IPC: every rank's window (kernel parameters; the header words are at
  /// its start), to abort them too.
  char *const *abortWindows;
};

/// This block's WaitSite: written once by thread 0 (the only thread that
/// waits), so the out-of-line wait takes no struct argument.
CCSYNTH_DEV WaitSite &blockSite() {
  __shared__ WaitSite site;
  return site;
}

/// A wait ended without its flag: `timedOut` (record it and raise the
/// abort word here and on NVLink peers) or the comm aborted (record who
/// did, unless a report exists). Out of line: one copy per kernel.
static __device__ __noinline__ void waitFailed(int step, int kind, int what,
                                               std::uint64_t expected,
                                               std::uint64_t seen,
                                               bool timedOut) {
  const WaitSite &site = blockSite();
  if (!timedOut) {
    int by = int(loadRelaxedSys(site.header + kHdrAbort)) - 1;
    recordFailure(site.header, site.rec, by, -1, -1, -1, -1, 0, 0, site.epoch);
    return;
  }
  if (seen >= site.base)
    seen -= site.base; // the report shows pass-based values
  recordFailure(site.header, site.rec, site.rank, site.tb, step, kind, what,
                expected, seen, site.epoch);
  std::uint64_t by = std::uint64_t(site.rank) + 1;
  storeRelaxedSys(site.header + kHdrAbort, by);
  if (site.abortWindows)
    for (int r = 0; r < site.abortPeers; ++r)
      storeRelaxedSys(
          reinterpret_cast<std::uint64_t *>(site.abortWindows[r]) + kHdrAbort,
          by);
#if CCSYNTH_WITH_NCCL
  auto win = static_cast<ncclWindow_t>(site.abortWindow);
  for (int l = 0; l < site.abortPeers; ++l)
    storeRelaxedSys(static_cast<std::uint64_t *>(ncclGetLsaPointer(
                        win, kHdrAbort * sizeof(std::uint64_t), l)),
                    by);
#endif
}

/// The slow path of a wait on one flag word (thread 0): polls with a
/// growing pause until the word reaches `target`, the comm aborts or the
/// deadline passes. Returns 0 when the word got there. Out of line: every
/// wait of a kernel shares it.
static __device__ __noinline__ int waitWordSlow(const std::uint64_t *word,
                                                std::uint64_t target, int sys,
                                                int step, int kind, int what,
                                                std::uint64_t expected) {
  const WaitSite &site = blockSite();
  std::uint64_t start = globalTimerNs();
  unsigned sleepNs = 0;
  for (unsigned n = 1;; ++n) {
    std::uint64_t seen = sys ? loadAcquireSys(word) : loadAcquireGpu(word);
    if (seen >= target)
      return 0;
    if ((n & 63) == 0) {
      bool aborted = loadRelaxedSys(site.header + kHdrAbort) != 0;
      if (aborted || globalTimerNs() - start > site.timeoutNs) {
        waitFailed(step, kind, what, expected, seen, !aborted);
        return 1;
      }
      sleepNs = sleepNs < 512 ? sleepNs * 2 + 32 : 1024;
    }
    if (sleepNs)
      __nanosleep(sleepNs);
  }
}

/// Ends a block's part of a launch; the last block advances the epoch.
CCSYNTH_DEV void finishLaunch(std::uint64_t *header, std::uint64_t epoch,
                              unsigned blocks) {
  __syncthreads();
  if (threadIdx.x != 0)
    return;
  __threadfence();
  auto *done = reinterpret_cast<unsigned long long *>(header + kHdrBlocksDone);
  if (atomicAdd(done, 1ull) == blocks - 1) {
    // Every block has read the epoch (they read it before counting).
    storeRelaxedSys(header + kHdrBlocksDone, 0);
    storeReleaseGpu(header + kHdrEpoch, epoch + 1);
  }
}

/// What a transport tells CudaContext about this rank's part of a launch.
struct LaunchView {
  int rank, tb;
  const char *in;
  char *out, *scratch;
  long inBlockOffset;
  std::size_t count;
  std::uint32_t elemSize;
  std::uint64_t tileBytes; ///< bytes per chunk per pass
  std::uint64_t *flags;
  std::uint64_t epoch;
  std::uint64_t timeoutNs;

protected:
  /// From a parameter block of one rank (the NCCL and IPC transports name
  /// these fields alike); `header` is this rank's header words.
  template <class P>
  CCSYNTH_DEV void takeRank(const P &p, int r, std::uint64_t *header) {
    rank = r;
    tb = int(blockIdx.x);
    in = p.in;
    out = p.out;
    scratch = p.scratch;
    inBlockOffset = p.inBlockOffset;
    count = p.count;
    elemSize = p.elemSize;
    tileBytes = p.tileBytes;
    flags = header + kHeaderWords;
    epoch = loadAcquireGpu(header + kHdrEpoch);
    timeoutNs = p.timeoutNs;
  }
};

// --- all ranks in one launch
// ---------------------------------------------------

template <int N> struct VirtualParams {
  const void *send[N];
  void *recv[N];
  void *scratch[N];
  int inBlockOffset[N];
  std::size_t count;
  std::uint32_t elemSize;
  std::uint64_t tileBytes;
  std::uint64_t *state; ///< header then ranks x flagWords
  CudaFailureRecord *failure;
  std::uint32_t flagWords;
  std::uint64_t timeoutNs;
};

template <class A> class VirtualTransport : public LaunchView {
public:
  static constexpr int kRanks = A::shape.ranks;
  using Params = VirtualParams<kRanks>;

  CCSYNTH_DEV explicit VirtualTransport(const Params &p) : p(p) {
    rank = int(blockIdx.x) / A::shape.maxTbs;
    tb = int(blockIdx.x) % A::shape.maxTbs;
    in = static_cast<const char *>(pickIndex(p.send, rank));
    out = static_cast<char *>(pickIndex(p.recv, rank));
    scratch = static_cast<char *>(pickIndex(p.scratch, rank));
    inBlockOffset = pickIndex(p.inBlockOffset, rank);
    count = p.count;
    elemSize = p.elemSize;
    tileBytes = p.tileBytes;
    flags = p.state + kHeaderWords + std::size_t(rank) * p.flagWords;
    epoch = loadAcquireGpu(p.state + kHdrEpoch);
    timeoutNs = p.timeoutNs;
  }

  /// All ranks run in this launch: they entered it, and every peer's flag
  /// is a plain word (no GIN signal).
  static constexpr bool kAllInLaunch = true;
  static constexpr bool kGin = false;
  CCSYNTH_DEV void announce() {}
  CCSYNTH_DEV bool waitsForOwnEntry() const { return false; }
  CCSYNTH_DEV bool isLsa(int) const { return true; }
  CCSYNTH_DEV const std::uint64_t *peerEnteredWord(int) const {
    return nullptr;
  }
  CCSYNTH_DEV void peerBuffers(int peer, char *&peerOut,
                               char *&peerScratch) const {
    peerOut = static_cast<char *>(pickIndex(p.recv, peer));
    peerScratch = static_cast<char *>(pickIndex(p.scratch, peer));
  }
  /// A peer's input (switch reductions read it).
  CCSYNTH_DEV const char *peerInput(int peer) const {
    return static_cast<const char *>(pickIndex(p.send, peer));
  }
  /// No multicast object spans virtual ranks: switch operations read and
  /// write each rank's copy.
  CCSYNTH_DEV bool multimemCovers(const int *, int) const { return false; }
  CCSYNTH_DEV char *multimemOf(const char *) const { return nullptr; }
  template <class S>
  CCSYNTH_DEV void put(int, char *dst, const char *src, std::size_t bytes) {
    blockCopy<KnobsOf<A>, S>(dst, src, bytes);
  }
  /// Thread 0, after the block's stores: release at system scope (peers
  /// may be other GPUs of this process).
  CCSYNTH_DEV void signalPeer(int peer, int index, std::uint64_t value) {
    storeReleaseSys(p.state + kHeaderWords + std::size_t(peer) * p.flagWords +
                        index,
                    value);
  }
  CCSYNTH_DEV WaitSite site() const {
    return WaitSite{p.state, p.failure, timeoutNs, epochBase(epoch),
                    epoch,   nullptr,   0,         rank,
                    tb,      nullptr};
  }
  CCSYNTH_DEV std::uint64_t *header() const { return p.state; }
  CCSYNTH_DEV void finish() { finishLaunch(p.state, epoch, gridDim.x); }

private:
  const Params &p;
};

// --- one process per rank, peers mapped with CUDA IPC
// -------------------------------------------------------

template <int N> struct IpcParams {
  const char *in; ///< anywhere in this rank's memory: read only here
  char *out;      ///< in this rank's data area, at outOffset
  char *scratch;  ///< in this rank's data area, at scratchOffset
  std::size_t outOffset, scratchOffset;
  std::size_t inOffset; ///< of the input in the data area, when it is there
  std::size_t count;
  std::uint32_t elemSize;
  std::uint64_t tileBytes;
  int inBlockOffset;
  int rank;
  CudaFailureRecord *failure;
  std::uint32_t flagWords;
  std::uint64_t timeoutNs;
  std::size_t headerBytes; ///< offset of the data area in a window
  char *window[N]; ///< every rank's window, mapped here; header words first
};

/// This rank's blocks only; every peer is reached with plain stores into
/// its window (NVLink or PCIe peer access, or the same GPU). Peers enter
/// the launch as with the NCCL transport: a rank writes into a peer only
/// after the peer announced this epoch.
template <class A> class IpcTransport : public LaunchView {
public:
  static constexpr int kRanks = A::shape.ranks;
  using Params = IpcParams<kRanks>;

  CCSYNTH_DEV explicit IpcTransport(const Params &p) : p(p) {
    takeRank(p, p.rank, headerOf(p.rank));
  }

  static constexpr bool kAllInLaunch = false;
  static constexpr bool kGin = false;
  /// Threadblock 0 announces that this rank entered the launch.
  CCSYNTH_DEV void announce() {
    if (tb == 0 && threadIdx.x == 0)
      storeReleaseSys(header() + kHdrEntered, epoch);
  }
  CCSYNTH_DEV bool waitsForOwnEntry() const { return false; }
  CCSYNTH_DEV bool isLsa(int) const { return true; }
  CCSYNTH_DEV const std::uint64_t *peerEnteredWord(int peer) const {
    return headerOf(peer) + kHdrEntered;
  }
  CCSYNTH_DEV void peerBuffers(int peer, char *&peerOut,
                               char *&peerScratch) const {
    char *data = pickIndex(p.window, peer) + p.headerBytes;
    peerOut = data + p.outOffset;
    peerScratch = data + p.scratchOffset;
  }
  /// A peer's input, where the inputs lie in the data area at the same
  /// offset on every rank (planIpc checks that before a switch reduction
  /// may read one).
  CCSYNTH_DEV const char *peerInput(int peer) const {
    return pickIndex(p.window, peer) + p.headerBytes + p.inOffset;
  }
  CCSYNTH_DEV bool multimemCovers(const int *, int) const { return false; }
  CCSYNTH_DEV char *multimemOf(const char *) const { return nullptr; }
  template <class S>
  CCSYNTH_DEV void put(int, char *dst, const char *src, std::size_t bytes) {
    blockCopy<KnobsOf<A>, S>(dst, src, bytes);
  }
  /// Thread 0, after the block's stores: release at system scope (the
  /// peer is another process, possibly on another GPU).
  CCSYNTH_DEV void signalPeer(int peer, int index, std::uint64_t value) {
    storeReleaseSys(headerOf(peer) + kHeaderWords + index, value);
  }
  CCSYNTH_DEV WaitSite site() const {
    return WaitSite{header(), p.failure, timeoutNs, epochBase(epoch),
                    epoch,    nullptr,   kRanks,    rank,
                    tb,       p.window};
  }
  CCSYNTH_DEV std::uint64_t *header() const { return headerOf(rank); }
  CCSYNTH_DEV void finish() { finishLaunch(header(), epoch, gridDim.x); }

private:
  const Params &p;

  /// Rank r's header words: the start of its window.
  CCSYNTH_DEV std::uint64_t *headerOf(int r) const {
    return reinterpret_cast<std::uint64_t *>(pickIndex(p.window, r));
  }
};

// --- NCCL 2.28 device API
// -------------------------------------------------------

#if CCSYNTH_WITH_NCCL
struct NcclParams {
  ncclDevComm devComm;
  ncclWindow_t dataWindow;
  ncclWindow_t flagWindow;
  const char *dataBase; ///< local address of dataWindow's offset 0
  const char *in;
  char *out;
  char *scratch;
  std::size_t outOffset, scratchOffset; ///< in dataWindow
  std::size_t count;
  std::uint32_t elemSize;
  std::uint64_t tileBytes;
  int inBlockOffset;
  std::uint64_t *header; ///< local: kHeaderWords, then the flags
  CudaFailureRecord *failure;
  std::uint32_t flagWords;
  std::uint64_t timeoutNs;
  int gin; ///< GIN resources were created (CCSYNTH_NCCL_GIN builds)
};

template <class A> class NcclTransport : public LaunchView {
public:
  using Params = NcclParams;
  static constexpr int kSignals = A::shape.dataFlags + A::shape.creditFlags;

  CCSYNTH_DEV explicit NcclTransport(const Params &p) : p(p) {
    takeRank(p, p.devComm.rank, p.header);
  }

  /// Threadblock 0 announces that this rank entered the launch (its
  /// previous launch is over, its buffers are this launch's). With GIN it
  /// first zeroes this rank's data/credit signals: none is in flight
  /// between launches (see CudaContext::credit), and no peer raises one
  /// before it saw this announcement. Other threadblocks wait for it so
  /// they never read a signal before its reset.
  CCSYNTH_DEV void announce() {
    if (tb != 0 || threadIdx.x != 0)
      return;
#if CCSYNTH_NCCL_GIN
    if (p.gin) {
      ncclGin gin{p.devComm, 0};
      for (int s = 0; s < kSignals; ++s)
        gin.resetSignal(ncclGinSignal_t(s));
      __threadfence_system();
    }
#endif
    storeReleaseSys(p.header + kHdrEntered, epoch);
#if CCSYNTH_NCCL_GIN
    if (p.gin) {
      ncclGin gin{p.devComm, 0};
      ncclTeam world = ncclTeamWorld(p.devComm);
      for (int q = 0; q < p.devComm.nRanks; ++q)
        if (!isLsa(q))
          gin.signal(world, q,
                     ncclGin_SignalInc{ncclGinSignal_t(p.flagWords + rank)});
    }
#endif
  }
  /// Whether blocks other than 0 must wait for the local announcement.
  CCSYNTH_DEV bool waitsForOwnEntry() const {
#if CCSYNTH_NCCL_GIN
    return p.gin && tb != 0;
#else
    return false;
#endif
  }
  static constexpr bool kAllInLaunch = false;
  /// Data and credit flags from GIN peers arrive as signals.
  static constexpr bool kGin = CCSYNTH_NCCL_GIN != 0;
  CCSYNTH_DEV bool gin() const { return kGin && p.gin; }

  CCSYNTH_DEV bool isLsa(int peer) const {
    return ncclTeamRankIsMember(ncclTeamLsa(p.devComm),
                                ncclTeamWorld(p.devComm), peer);
  }
  CCSYNTH_DEV int lsaRank(int peer) const {
    return ncclTeamRankToLsa(p.devComm, ncclTeamWorld(p.devComm), peer);
  }
  CCSYNTH_DEV std::uint64_t *lsaHeader(int peer) const {
    return static_cast<std::uint64_t *>(
        ncclGetLsaPointer(p.flagWindow, 0, lsaRank(peer)));
  }

  CCSYNTH_DEV const std::uint64_t *peerEnteredWord(int peer) const {
    return lsaHeader(peer) + kHdrEntered;
  }
#if CCSYNTH_NCCL_GIN
  /// GIN peers announce a launch with a signal counting launches.
  CCSYNTH_DEV bool ginPeerEntered(int peer, std::uint64_t &seen) const {
    ncclGin gin{p.devComm, 0};
    seen = gin.readSignal(ncclGinSignal_t(p.flagWords + peer));
    return seen >= epoch;
  }
  /// A flag that a peer raises with a store (NVLink) or a GIN signal.
  CCSYNTH_DEV bool flagOrSignal(int index, std::uint64_t target,
                                std::uint64_t passTarget,
                                std::uint64_t &seen) const {
    seen = loadAcquireSys(flags + index);
    if (seen >= target)
      return true;
    ncclGin gin{p.devComm, 0};
    std::uint64_t s = gin.readSignal(ncclGinSignal_t(index));
    if (s >= passTarget) {
      seen = s;
      return true;
    }
    return false;
  }
#endif
  /// LSA peers: their buffers mapped here. GIN peers: this rank's bases,
  /// from which put() takes window offsets (symmetric on every rank).
  CCSYNTH_DEV void peerBuffers(int peer, char *&peerOut,
                               char *&peerScratch) const {
    if (isLsa(peer)) {
      int l = lsaRank(peer);
      peerOut =
          static_cast<char *>(ncclGetLsaPointer(p.dataWindow, p.outOffset, l));
      peerScratch = static_cast<char *>(
          ncclGetLsaPointer(p.dataWindow, p.scratchOffset, l));
    } else {
      peerOut = p.out;
      peerScratch = p.scratch;
    }
  }
  /// An LSA peer's input: every rank's sendbuff lies in the symmetric
  /// window at the same offset.
  CCSYNTH_DEV const char *peerInput(int peer) const {
    return static_cast<const char *>(
        ncclGetLsaPointer(p.dataWindow, std::size_t(p.in - p.dataBase),
                          lsaRank(peer)));
  }
  /// Whether the comm's LSA multicast object spans exactly `ranks`.
  CCSYNTH_DEV bool multimemCovers(const int *ranks, int k) const {
    if (!p.devComm.lsaMultimem.mcBasePtr || k != p.devComm.lsaSize)
      return false;
    for (int i = 0; i < k; ++i)
      if (!isLsa(ranks[i]))
        return false;
    return true;
  }
  /// The multimem address of a local address in the data window.
  CCSYNTH_DEV char *multimemOf(const char *localAddr) const {
    return static_cast<char *>(ncclGetLsaMultimemPointer(
        p.dataWindow, std::size_t(localAddr - p.dataBase), p.devComm));
  }
  template <class S>
  CCSYNTH_DEV void put(int peer, char *dst, const char *src,
                       std::size_t bytes) {
#if CCSYNTH_NCCL_GIN
    if (!isLsa(peer)) {
      __syncthreads(); // the block's writes of the source are done
      if (threadIdx.x == 0) {
        __threadfence_system(); // ... and visible to the NIC
        ncclGin gin{p.devComm, 0};
        gin.put(ncclTeamWorld(p.devComm), peer, p.dataWindow,
                std::size_t(dst - p.dataBase), p.dataWindow,
                std::size_t(src - p.dataBase), bytes);
      }
      return;
    }
#endif
    blockCopy<KnobsOf<A>, S>(dst, src, bytes);
  }
  CCSYNTH_DEV void signalPeer(int peer, int index, std::uint64_t value) {
    if (isLsa(peer)) {
      storeReleaseSys(lsaHeader(peer) + kHeaderWords + index, value);
      return;
    }
#if CCSYNTH_NCCL_GIN
    // Ordered after this context's earlier puts to the same peer; the
    // flush makes their sources reusable before the block goes on.
    ncclGin gin{p.devComm, 0};
    gin.signal(ncclTeamWorld(p.devComm), peer,
               ncclGin_SignalAdd{ncclGinSignal_t(index), 1});
    gin.flush(ncclCoopThread());
#endif
  }
  CCSYNTH_DEV WaitSite site() const {
    return WaitSite{
        p.header,          p.failure, timeoutNs,
        epochBase(epoch),  epoch,     static_cast<void *>(p.flagWindow),
        p.devComm.lsaSize, rank,      tb,
        nullptr};
  }
  CCSYNTH_DEV std::uint64_t *header() const { return p.header; }
  CCSYNTH_DEV void finish() { finishLaunch(p.header, epoch, gridDim.x); }

private:
  const Params &p;
};
#endif

} // namespace ccsynth::rt
