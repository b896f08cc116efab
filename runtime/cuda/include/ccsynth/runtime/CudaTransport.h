//===- CudaTransport.h - Communicators of the CUDA backend ----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The host side of the three CUDA transports, and what an application
// needs to create them: `ccsynthLaunchArgs::comm` points to one of the
// structs below (transport ccsynthTransportCudaVirtual, ...CudaIpc or
// ...NcclDevice).
//
//  - CudaVirtualComm: all ranks of an algorithm run as blocks of one kernel
//    (one GPU, or GPUs with peer access in one process). Each rank's launch
//    call posts its buffers; the call that completes the group launches the
//    kernel on its stream (the others return ccsynthSuccess at once).
//  - CudaIpcComm: one process per rank on one node (ranks on GPUs with
//    peer access, or several ranks sharing a GPU); each launches its own
//    rank's blocks; peers' windows mapped with CUDA IPC.
//  - CudaNcclComm (NCCL 2.28 device API): one process per GPU, each
//    launching only its own rank's blocks; buffers and scratch live in one
//    symmetric window at the same offsets on every rank.
//
// Kernels report a failed wait into a host-mapped record; read it with
// cudaCommError() after synchronizing the stream. A comm that failed stays
// failed: later launches are refused with ccsynthAborted.
//
// Plain C++ with the CUDA runtime API: an application built by the host
// compiler includes this header (and <nccl.h> when it uses NCCL).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/ccsynth_plugin.h"

#include <cuda_runtime_api.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>

#ifndef CCSYNTH_WITH_NCCL
#if __has_include(<nccl_device.h>)
#define CCSYNTH_WITH_NCCL 1
#else
#define CCSYNTH_WITH_NCCL 0
#endif
#endif
#if CCSYNTH_WITH_NCCL
#include <nccl.h> // before nccl_device.h in host-only code
#include <nccl_device.h>
#endif

namespace ccsynth::rt {

/// What went wrong on the host side of a CUDA launch, beyond ccsynthResult.
enum class CudaStatus : int {
  Ok = 0,
  CudaFailure,     ///< a CUDA runtime call failed
  NcclFailure,     ///< an NCCL call failed
  BadComm,         ///< comm is null, of another transport or too small
  GroupMismatch,   ///< virtual ranks posted different calls to one group
  NotCoResident,   ///< the grid cannot be resident at once: it would hang
  OutsideWindow,   ///< a buffer is not inside the symmetric window
  PeerUnreachable, ///< a peer is neither an LSA peer nor reachable by GIN
  PreviousFailure  ///< an earlier launch on this comm failed
};

inline const char *toString(CudaStatus s) {
  switch (s) {
  case CudaStatus::Ok:
    return "ok";
  case CudaStatus::CudaFailure:
    return "CUDA call failed";
  case CudaStatus::NcclFailure:
    return "NCCL call failed";
  case CudaStatus::BadComm:
    return "bad communicator";
  case CudaStatus::GroupMismatch:
    return "virtual ranks posted mismatched calls";
  case CudaStatus::NotCoResident:
    return "not all threadblocks can be resident at once";
  case CudaStatus::OutsideWindow:
    return "buffer outside the symmetric window";
  case CudaStatus::PeerUnreachable:
    return "peer not reachable by this build of the NCCL transport";
  case CudaStatus::PreviousFailure:
    return "an earlier launch on this communicator failed";
  }
  return "unknown";
}

/// Fills `err` (when non-null) and returns `result`.
inline ccsynthResult cudaReport(ccsynthError *err, ccsynthResult result,
                                CudaStatus status, int rank, const char *file,
                                int line, const char *fmt, ...) {
  if (err) {
    err->result = result;
    err->rank = rank;
    err->threadblock = -1;
    err->step = -1;
    int n = std::snprintf(err->message, sizeof err->message,
                          "%s: ", toString(status));
    if (n < 0 || n >= int(sizeof err->message))
      n = 0;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(err->message + n, sizeof err->message - n, fmt, ap);
    va_end(ap);
    std::size_t used = std::strlen(err->message);
    if (file && used + 1 < sizeof err->message)
      std::snprintf(err->message + used, sizeof err->message - used, " (%s:%d)",
                    file, line);
  }
  return result;
}

} // namespace ccsynth::rt

/// Evaluates a CUDA runtime call; on failure reports it into `err` (a
/// ccsynthError*, may be null) with file and line and returns
/// ccsynthSystemError from the enclosing function.
#define CCSYNTH_CUDA_CHECK(err, rank, expr)                                    \
  do {                                                                         \
    cudaError_t ccsynthCudaErr_ = (expr);                                      \
    if (ccsynthCudaErr_ != cudaSuccess)                                        \
      return ::ccsynth::rt::cudaReport(                                        \
          (err), ccsynthSystemError, ::ccsynth::rt::CudaStatus::CudaFailure,   \
          (rank), __FILE__, __LINE__, "%s: %s", #expr,                         \
          cudaGetErrorString(ccsynthCudaErr_));                                \
  } while (0)

#if CCSYNTH_WITH_NCCL
/// The same for NCCL calls.
#define CCSYNTH_NCCL_CHECK(err, rank, expr)                                    \
  do {                                                                         \
    ncclResult_t ccsynthNcclErr_ = (expr);                                     \
    if (ccsynthNcclErr_ != ncclSuccess)                                        \
      return ::ccsynth::rt::cudaReport(                                        \
          (err), ccsynthSystemError, ::ccsynth::rt::CudaStatus::NcclFailure,   \
          (rank), __FILE__, __LINE__, "%s: %s", #expr,                         \
          ncclGetErrorString(ccsynthNcclErr_));                                \
  } while (0)
#endif

namespace ccsynth::rt {

/// What a kernel writes when a wait passes its deadline: the first failure
/// of a comm. Lives in host-mapped pinned memory, so it can be read after
/// the kernel returned even when the stream is in an error state.
struct CudaFailureRecord {
  std::uint32_t failed; ///< 1 once the fields below are written
  std::int32_t rank;
  std::int32_t threadblock;
  std::int32_t step;
  std::int32_t flagKind; ///< a CudaFlagKind; -1: aborted by `rank`
  std::int32_t flagIndex;
  std::uint64_t expected; ///< pass-based value waited for (no epoch)
  std::uint64_t seen;     ///< what the flag held at the deadline (no epoch)
  std::uint64_t epoch;
};

/// Which flag a failed wait was waiting for.
enum CudaFlagKind : int {
  kFlagData = 0,
  kFlagCredit = 1,
  kFlagProgress = 2,
  kFlagStaged = 3,
  kFlagEntered = 4
};

inline const char *toString(CudaFlagKind k) {
  switch (k) {
  case kFlagData:
    return "data flag";
  case kFlagCredit:
    return "credit flag (landing slot consumed)";
  case kFlagProgress:
    return "progress of threadblock";
  case kFlagStaged:
    return "staging of the remainder by threadblock";
  case kFlagEntered:
    return "peer entering the launch, rank";
  }
  return "flag";
}

/// Device words of a comm's header (64-bit each, a 64-byte line apart from
/// the flags): the abort word, the launch epoch, blocks done in this
/// launch, and (NCCL) the epoch this rank entered.
enum CudaHeaderWord : int {
  kHdrAbort = 0,
  kHdrEpoch = 1,
  kHdrBlocksDone = 2,
  kHdrEntered = 3,
  kHdrClaim = 4, ///< 0 until one block claims the failure record
  kHeaderWords = 8
};

/// Most ranks one virtual-ranks launch can hold (kernel argument size).
inline constexpr int kMaxVirtualRanks = 64;

/// All ranks in one launch. Create with cudaVirtualCommCreate.
struct CudaVirtualComm {
  static constexpr std::uint32_t kMagic = 0x63637663; // "ccvc"
  std::uint32_t magic = kMagic;
  std::uint32_t structSize = sizeof(CudaVirtualComm);
  int ranks = 0;
  std::uint32_t flagWords = 0; ///< flag words per rank (a descriptor's)
  int device = 0;
  /// Device memory: kHeaderWords, then ranks x flagWords flags.
  std::uint64_t *state = nullptr;
  CudaFailureRecord *failureHost = nullptr; ///< host-mapped
  CudaFailureRecord *failureDev = nullptr;  ///< its device alias

  // The group being posted (host only).
  const void *groupAlgo = nullptr; ///< launch function of the group
  int posted = 0;
  unsigned char postedRank[kMaxVirtualRanks] = {};
  const void *send[kMaxVirtualRanks] = {};
  void *recv[kMaxVirtualRanks] = {};
  void *scratch[kMaxVirtualRanks] = {};
  std::size_t count = 0;
  int dtype = 0, op = 0;
  void *stream = nullptr;
  double timeoutSeconds = 0;
};

inline ccsynthResult cudaFailureAlloc(CudaFailureRecord *&host,
                                      CudaFailureRecord *&dev,
                                      ccsynthError *err) {
  CCSYNTH_CUDA_CHECK(err, -1,
                     cudaHostAlloc(reinterpret_cast<void **>(&host),
                                   sizeof(CudaFailureRecord),
                                   cudaHostAllocMapped));
  std::memset(host, 0, sizeof(CudaFailureRecord));
  CCSYNTH_CUDA_CHECK(
      err, -1,
      cudaHostGetDevicePointer(reinterpret_cast<void **>(&dev), host, 0));
  return ccsynthSuccess;
}

/// Creates a virtual-ranks comm on the current device for `ranks` ranks and
/// algorithms needing at most `flagWords` flag words per rank.
inline ccsynthResult cudaVirtualCommCreate(int ranks, std::uint32_t flagWords,
                                           CudaVirtualComm **out,
                                           ccsynthError *err) {
  if (!out || ranks < 1 || ranks > kMaxVirtualRanks)
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, -1,
                      nullptr, 0, "%d ranks (1 to %d supported)", ranks,
                      kMaxVirtualRanks);
  *out = nullptr;
  CudaVirtualComm *c = new (std::nothrow) CudaVirtualComm;
  if (!c)
    return cudaReport(err, ccsynthSystemError, CudaStatus::BadComm, -1, nullptr,
                      0, "out of host memory");
  c->ranks = ranks;
  c->flagWords = flagWords;
  auto fail = [&](ccsynthResult r) {
    if (c->state)
      cudaFree(c->state);
    if (c->failureHost)
      cudaFreeHost(c->failureHost);
    delete c;
    return r;
  };
  if (cudaGetDevice(&c->device) != cudaSuccess)
    return fail(cudaReport(err, ccsynthSystemError, CudaStatus::CudaFailure, -1,
                           __FILE__, __LINE__, "no current device"));
  std::size_t bytes =
      (kHeaderWords + std::size_t(ranks) * flagWords) * sizeof(std::uint64_t);
  ccsynthResult r = [&]() -> ccsynthResult {
    CCSYNTH_CUDA_CHECK(err, -1,
                       cudaMalloc(reinterpret_cast<void **>(&c->state), bytes));
    CCSYNTH_CUDA_CHECK(err, -1, cudaMemset(c->state, 0, bytes));
    std::uint64_t first = 1; // epochs start at 1: zeroed flags are "never"
    CCSYNTH_CUDA_CHECK(err, -1,
                       cudaMemcpy(c->state + kHdrEpoch, &first, sizeof first,
                                  cudaMemcpyHostToDevice));
    return cudaFailureAlloc(c->failureHost, c->failureDev, err);
  }();
  if (r != ccsynthSuccess)
    return fail(r);
  *out = c;
  return ccsynthSuccess;
}

/// Frees a virtual comm; its launches must have finished.
inline void cudaVirtualCommDestroy(CudaVirtualComm *c) {
  if (!c)
    return;
  cudaFree(c->state);
  cudaFreeHost(c->failureHost);
  delete c;
}

/// Formats a failure record; returns its result (ccsynthSuccess when none).
inline ccsynthResult cudaFailureMessage(const CudaFailureRecord &rec,
                                        int askingRank, ccsynthError *err) {
  if (!reinterpret_cast<const volatile CudaFailureRecord &>(rec).failed)
    return ccsynthSuccess;
  ccsynthResult r =
      rec.flagKind >= 0 && (askingRank < 0 || rec.rank == askingRank)
          ? ccsynthTimeout
          : ccsynthAborted;
  if (err && rec.flagKind < 0) {
    err->result = r;
    err->rank = rec.rank;
    err->threadblock = err->step = -1;
    std::snprintf(err->message, sizeof err->message,
                  "aborted: rank %d failed a wait (epoch %llu); its own "
                  "report names the flag",
                  rec.rank, (unsigned long long)rec.epoch);
  } else if (err) {
    err->result = r;
    err->rank = rec.rank;
    err->threadblock = rec.threadblock;
    err->step = rec.step;
    const char *what = toString(CudaFlagKind(rec.flagKind));
    std::snprintf(err->message, sizeof err->message,
                  "rank %d threadblock %d step %d: timed out waiting for %s "
                  "%d: expected >= %llu (epoch %llu), found %llu",
                  rec.rank, rec.threadblock, rec.step, what, rec.flagIndex,
                  (unsigned long long)rec.expected,
                  (unsigned long long)rec.epoch, (unsigned long long)rec.seen);
  }
  return r;
}

/// After synchronizing the launch's stream: ccsynthSuccess, or the first
/// wait that timed out on any rank of the comm (fills `err`).
inline ccsynthResult cudaCommError(const CudaVirtualComm *c,
                                   ccsynthError *err) {
  if (!c || !c->failureHost)
    return ccsynthInvalidArgument;
  return cudaFailureMessage(*c->failureHost, -1, err);
}

/// Most ranks of one CUDA IPC comm (kernel argument size: two pointers per
/// rank).
inline constexpr int kMaxIpcRanks = 64;

/// One rank of a CUDA IPC launch (one process per rank, one node). Its
/// window is one device allocation exported with cudaIpcGetMemHandle:
/// kHeaderWords then flagWords flags (rounded up to a page), then
/// `dataBytes` for receive buffers and scratch. Peers map it with
/// cudaIpcOpenMemHandle; launches put into peers' data areas at the offsets
/// of their own (the same on every rank) and raise flags in peers' headers.
/// Create with cudaIpcCommCreate, hand the handle to every rank, then
/// cudaIpcCommConnect with all of them.
struct CudaIpcComm {
  static constexpr std::uint32_t kMagic = 0x63636970; // "ccip"
  std::uint32_t magic = kMagic;
  std::uint32_t structSize = sizeof(CudaIpcComm);
  int rank = 0, ranks = 0, device = -1; ///< -1 until created
  std::uint32_t flagWords = 0;
  bool connected = false;
  char *base = nullptr;        ///< this rank's window
  std::size_t headerBytes = 0; ///< offset of the data area
  std::size_t dataBytes = 0;
  char *peerBase[kMaxIpcRanks] = {}; ///< every rank's window, mapped here
  /// The device each rank's window is on, as this process numbers devices:
  /// ranks on this rank's device share its multiprocessors (under MPS).
  int peerDevice[kMaxIpcRanks] = {};
  CudaFailureRecord *failureHost = nullptr;
  CudaFailureRecord *failureDev = nullptr;
  cudaEvent_t lastLaunch = nullptr; ///< recorded after each launch
  bool launched = false;            ///< lastLaunch was recorded
  char *data() const { return base + headerBytes; }
};

inline CudaIpcComm *asIpcComm(void *comm) {
  auto *c = static_cast<CudaIpcComm *>(comm);
  return c && c->magic == CudaIpcComm::kMagic &&
                 c->structSize == sizeof(CudaIpcComm)
             ? c
             : nullptr;
}

/// Makes `device` current for the scope and then gives the calling thread
/// back the device it had: these calls run on the application's threads,
/// and its own later CUDA work must not move to another GPU. Only a switch
/// is undone (a thread that had no device made current stays as it was).
struct ScopedDevice {
  int saved = -1;
  bool switched = false;
  cudaError_t enter(int device) {
    if (device < 0)
      return cudaSuccess;
    cudaError_t e = cudaGetDevice(&saved);
    if (e != cudaSuccess)
      return e;
    if (saved == device)
      return cudaSuccess;
    e = cudaSetDevice(device);
    switched = e == cudaSuccess;
    return e;
  }
  ~ScopedDevice() {
    if (switched)
      cudaSetDevice(saved);
  }
};

/// Frees what cudaIpcCommCreate/Connect made; waits for the last launch.
inline void cudaIpcCommDestroy(CudaIpcComm *c) {
  if (!c)
    return;
  ScopedDevice onDevice; // frees on the window's device
  onDevice.enter(c->device);
  if (c->launched)
    cudaEventSynchronize(c->lastLaunch); // bounded: every wait has a deadline
  for (int r = 0; r < c->ranks; ++r)
    if (c->peerBase[r] && c->peerBase[r] != c->base)
      cudaIpcCloseMemHandle(c->peerBase[r]);
  if (c->lastLaunch)
    cudaEventDestroy(c->lastLaunch);
  if (c->base)
    cudaFree(c->base);
  if (c->failureHost)
    cudaFreeHost(c->failureHost);
  delete c;
}

/// Allocates this rank's window on `device` (-1: the current one) and
/// writes its IPC handle (CCSYNTH_IPC_HANDLE_BYTES bytes) to `handle`.
inline ccsynthResult cudaIpcCommCreate(int device, int rank, int ranks,
                                       std::uint32_t flagWords,
                                       std::uint64_t dataBytes,
                                       CudaIpcComm **out, void *handle,
                                       ccsynthError *err) {
  static_assert(sizeof(cudaIpcMemHandle_t) == CCSYNTH_IPC_HANDLE_BYTES);
  if (!out || !handle || ranks < 1 || ranks > kMaxIpcRanks || rank < 0 ||
      rank >= ranks)
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, rank,
                      nullptr, 0,
                      "rank %d of %d ranks (1 to %d supported), or no place "
                      "for the comm or its handle",
                      rank, ranks, kMaxIpcRanks);
  *out = nullptr;
  CudaIpcComm *c = new (std::nothrow) CudaIpcComm;
  if (!c)
    return cudaReport(err, ccsynthSystemError, CudaStatus::BadComm, rank,
                      nullptr, 0, "out of host memory");
  c->rank = rank;
  c->ranks = ranks;
  c->flagWords = flagWords;
  ScopedDevice onDevice;
  ccsynthResult r = [&]() -> ccsynthResult {
    CCSYNTH_CUDA_CHECK(err, rank, onDevice.enter(device));
    CCSYNTH_CUDA_CHECK(err, rank, cudaGetDevice(&c->device));
    std::size_t header =
        (kHeaderWords + std::size_t(flagWords)) * sizeof(std::uint64_t);
    c->headerBytes = (header + 4095) / 4096 * 4096;
    c->dataBytes = std::size_t((dataBytes + 255) / 256 * 256);
    CCSYNTH_CUDA_CHECK(err, rank,
                       cudaMalloc(reinterpret_cast<void **>(&c->base),
                                  c->headerBytes + c->dataBytes));
    CCSYNTH_CUDA_CHECK(err, rank, cudaMemset(c->base, 0, c->headerBytes));
    std::uint64_t first = 1; // epochs start at 1: zeroed flags are "never"
    CCSYNTH_CUDA_CHECK(err, rank,
                       cudaMemcpy(c->base + kHdrEpoch * sizeof(std::uint64_t),
                                  &first, sizeof first,
                                  cudaMemcpyHostToDevice));
    CCSYNTH_CUDA_CHECK(
        err, rank,
        cudaEventCreateWithFlags(&c->lastLaunch, cudaEventDisableTiming));
    cudaIpcMemHandle_t h;
    CCSYNTH_CUDA_CHECK(err, rank, cudaIpcGetMemHandle(&h, c->base));
    std::memcpy(handle, &h, sizeof h);
    return cudaFailureAlloc(c->failureHost, c->failureDev, err);
  }();
  if (r != ccsynthSuccess) {
    cudaIpcCommDestroy(c);
    return r;
  }
  c->peerBase[rank] = c->base;
  *out = c;
  return ccsynthSuccess;
}

/// Maps every other rank's window from `handles` (ranks x
/// CCSYNTH_IPC_HANDLE_BYTES, in rank order).
inline ccsynthResult cudaIpcCommConnect(CudaIpcComm *c, const void *handles,
                                        ccsynthError *err) {
  if (!c || !handles)
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, -1,
                      nullptr, 0, "comm is not a CudaIpcComm, or no handles");
  if (c->connected)
    return ccsynthSuccess;
  ScopedDevice onDevice;
  CCSYNTH_CUDA_CHECK(err, c->rank, onDevice.enter(c->device));
  for (int r = 0; r < c->ranks; ++r) {
    if (r == c->rank)
      continue;
    cudaIpcMemHandle_t h;
    std::memcpy(&h,
                static_cast<const char *>(handles) +
                    std::size_t(r) * CCSYNTH_IPC_HANDLE_BYTES,
                sizeof h);
    void *p = nullptr;
    cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess)
      return cudaReport(err, ccsynthSystemError, CudaStatus::PeerUnreachable,
                        c->rank, __FILE__, __LINE__,
                        "cannot map rank %d's window: %s (ranks on other "
                        "nodes, GPUs without peer access, or ranks of one "
                        "process)",
                        r, cudaGetErrorString(e));
    c->peerBase[r] = static_cast<char *>(p);
    cudaPointerAttributes at{};
    CCSYNTH_CUDA_CHECK(err, c->rank, cudaPointerGetAttributes(&at, p));
    c->peerDevice[r] = at.device;
  }
  c->peerDevice[c->rank] = c->device;
  c->connected = true;
  return ccsynthSuccess;
}

/// Raises this rank's abort word (from the host, on a stream of its own):
/// its waiting kernels end at their next poll.
inline ccsynthResult cudaIpcCommAbort(CudaIpcComm *c) {
  if (!c)
    return ccsynthInvalidArgument;
  std::uint64_t by = std::uint64_t(c->rank) + 1;
  cudaStream_t s = nullptr;
  ScopedDevice onDevice;
  if (onDevice.enter(c->device) != cudaSuccess ||
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return ccsynthSystemError;
  cudaError_t e = cudaMemcpyAsync(c->base + kHdrAbort * sizeof(std::uint64_t),
                                  &by, sizeof by, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  return e == cudaSuccess ? ccsynthSuccess : ccsynthSystemError;
}

/// ccsynthSuccess, or the first failed wait this rank saw (its own
/// timeout, or an abort a peer raised).
inline ccsynthResult cudaCommError(const CudaIpcComm *c, ccsynthError *err) {
  if (!c || !c->failureHost)
    return ccsynthInvalidArgument;
  return cudaFailureMessage(*c->failureHost, c->rank, err);
}

#if CCSYNTH_WITH_NCCL
/// GIN signals a rank's NCCL comm reserves: one per data and credit flag,
/// then one per source rank for "entered the launch".
inline int ncclSignalCount(std::uint32_t flagWords, int ranks) {
  return int(flagWords) + ranks;
}

/// One rank of an NCCL device-API launch. Create with cudaNcclCommCreate
/// (collective: every rank of `comm` calls it).
struct CudaNcclComm {
  static constexpr std::uint32_t kMagic = 0x6363636e; // "cccn"
  std::uint32_t magic = kMagic;
  std::uint32_t structSize = sizeof(CudaNcclComm);
  ncclComm_t comm = nullptr;
  int rank = 0, ranks = 0;
  bool gin = false; ///< GIN requested (peers outside the LSA team)
  std::uint32_t flagWords = 0;
  ncclDevComm devComm;
  /// The window holding sendbuff, recvbuff and scratch of every launch, at
  /// the same offsets on every rank; registered by the application.
  ncclWindow_t dataWindow = nullptr;
  char *dataBase = nullptr;
  std::size_t dataBytes = 0;
  /// kHeaderWords then flagWords flags, in a window the comm owns.
  ncclWindow_t flagWindow = nullptr;
  std::uint64_t *flags = nullptr;
  CudaFailureRecord *failureHost = nullptr;
  CudaFailureRecord *failureDev = nullptr;
};

/// The smallest of every rank's `mine` (a collective ncclAllReduce on a
/// stream of its own, on every rank of `comm`).
inline ccsynthResult agreeOnMin(ncclComm_t comm, int rank, int mine,
                                int &agreed, ccsynthError *err) {
  int *d = nullptr;
  cudaStream_t s = nullptr;
  ccsynthResult r = [&]() -> ccsynthResult {
    CCSYNTH_CUDA_CHECK(err, rank,
                       cudaMalloc(reinterpret_cast<void **>(&d), sizeof(int)));
    CCSYNTH_CUDA_CHECK(err, rank,
                       cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CCSYNTH_CUDA_CHECK(
        err, rank,
        cudaMemcpyAsync(d, &mine, sizeof mine, cudaMemcpyHostToDevice, s));
    CCSYNTH_NCCL_CHECK(err, rank,
                       ncclAllReduce(d, d, 1, ncclInt32, ncclMin, comm, s));
    CCSYNTH_CUDA_CHECK(
        err, rank,
        cudaMemcpyAsync(&agreed, d, sizeof agreed, cudaMemcpyDeviceToHost, s));
    CCSYNTH_CUDA_CHECK(err, rank, cudaStreamSynchronize(s));
    return ccsynthSuccess;
  }();
  if (s)
    cudaStreamDestroy(s);
  if (d)
    cudaFree(d);
  return r;
}

/// Creates this rank's part of an NCCL transport. `dataWindow` must have
/// been registered with ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC)
/// over [dataBase, dataBase + dataBytes). `gin` asks for GPU-initiated
/// networking to peers outside the NVLink (LSA) team; it fails where no
/// GIN-capable NIC exists.
inline ccsynthResult cudaNcclCommCreate(ncclComm_t comm,
                                        ncclWindow_t dataWindow, void *dataBase,
                                        std::size_t dataBytes,
                                        std::uint32_t flagWords, bool gin,
                                        CudaNcclComm **out, ccsynthError *err) {
  if (!out || !comm || !dataWindow || !dataBase)
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, -1,
                      nullptr, 0, "null argument");
  *out = nullptr;
  CudaNcclComm *c = new (std::nothrow) CudaNcclComm;
  if (!c)
    return cudaReport(err, ccsynthSystemError, CudaStatus::BadComm, -1, nullptr,
                      0, "out of host memory");
  std::memset(&c->devComm, 0, sizeof c->devComm);
  c->comm = comm;
  c->gin = gin;
  c->flagWords = flagWords;
  c->dataWindow = dataWindow;
  c->dataBase = static_cast<char *>(dataBase);
  c->dataBytes = dataBytes;
  bool devCommMade = false;
  ccsynthResult r = [&]() -> ccsynthResult {
    CCSYNTH_NCCL_CHECK(err, -1, ncclCommUserRank(comm, &c->rank));
    CCSYNTH_NCCL_CHECK(err, c->rank, ncclCommCount(comm, &c->ranks));
    std::size_t bytes =
        (kHeaderWords + std::size_t(flagWords)) * sizeof(std::uint64_t);
    bytes = (bytes + 4095) / 4096 * 4096; // windows are page-granular
    CCSYNTH_NCCL_CHECK(
        err, c->rank,
        ncclMemAlloc(reinterpret_cast<void **>(&c->flags), bytes));
    CCSYNTH_CUDA_CHECK(err, c->rank, cudaMemset(c->flags, 0, bytes));
    std::uint64_t first = 1;
    CCSYNTH_CUDA_CHECK(err, c->rank,
                       cudaMemcpy(c->flags + kHdrEpoch, &first, sizeof first,
                                  cudaMemcpyHostToDevice));
    CCSYNTH_NCCL_CHECK(err, c->rank,
                       ncclCommWindowRegister(comm, c->flags, bytes,
                                              &c->flagWindow,
                                              NCCL_WIN_COLL_SYMMETRIC));
    ncclDevCommRequirements reqs;
    std::memset(&reqs, 0, sizeof reqs); // 2.28 has no initializer macro
    if (gin) {
      reqs.ginForceEnable = true;
      reqs.ginContextCount = 1;
      reqs.ginSignalCount = ncclSignalCount(flagWords, c->ranks);
    }
    // NVLink SHARP for switch operations where every rank's GPU has
    // multicast (multimem.ld_reduce/st through the LSA team's multicast
    // object); otherwise the comm is made without (switch operations then
    // read and write each rank's copy). ncclDevCommCreate is collective:
    // every rank must ask for the same, so the ranks agree first, and a
    // failure is not retried another way on some ranks only.
    // The runtime API names no multicast attribute; its attributes share
    // the driver's numbers (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 132).
    constexpr auto kMulticastSupported = static_cast<cudaDeviceAttr>(132);
    int device = 0, multicast = 0, everywhere = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&multicast, kMulticastSupported, device) !=
            cudaSuccess)
      multicast = 0;
    ccsynthResult agreed =
        agreeOnMin(comm, c->rank, multicast ? 1 : 0, everywhere, err);
    if (agreed != ccsynthSuccess)
      return agreed;
    reqs.lsaMultimem = everywhere == 1;
    CCSYNTH_NCCL_CHECK(err, c->rank,
                       ncclDevCommCreate(comm, &reqs, &c->devComm));
    devCommMade = true;
    return cudaFailureAlloc(c->failureHost, c->failureDev, err);
  }();
  if (r != ccsynthSuccess) {
    if (devCommMade)
      ncclDevCommDestroy(comm, &c->devComm);
    if (c->flagWindow)
      ncclCommWindowDeregister(comm, c->flagWindow);
    if (c->flags)
      ncclMemFree(c->flags);
    if (c->failureHost)
      cudaFreeHost(c->failureHost);
    delete c;
    return r;
  }
  *out = c;
  return ccsynthSuccess;
}

/// Frees this rank's part (collective, like its creation).
inline void cudaNcclCommDestroy(CudaNcclComm *c) {
  if (!c)
    return;
  ncclDevCommDestroy(c->comm, &c->devComm);
  ncclCommWindowDeregister(c->comm, c->flagWindow);
  ncclMemFree(c->flags);
  cudaFreeHost(c->failureHost);
  delete c;
}

/// After synchronizing: ccsynthSuccess, or the first failed wait this rank
/// saw (its own timeout, or an abort raised by an NVLink peer).
inline ccsynthResult cudaCommError(const CudaNcclComm *c, ccsynthError *err) {
  if (!c || !c->failureHost)
    return ccsynthInvalidArgument;
  return cudaFailureMessage(*c->failureHost, c->rank, err);
}
#endif

} // namespace ccsynth::rt
