//===- CudaLaunch.cuh - Launch entry of CUDA-backend plugins --------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// cudaLaunch<A> is the `launch` of a generated algorithm built by nvcc:
// it checks the arguments (LaunchChecks.h), checks the communicator of the
// chosen transport, picks the kernel instantiated for the call's dtype and
// operator (only those in CCSYNTH_DTYPE_MASK / CCSYNTH_OP_MASK are built),
// refuses grids that cannot be resident at once (their blocks wait on each
// other), and launches on the call's stream. Launches are asynchronous: a
// wait that times out is reported by cudaCommError() after the stream is
// synchronized, and refuses later launches on the same comm.
//
// The kernel picks the generated function once, with A::run's tree of
// direct branches; everything below it is inlined, so the kernel has no
// indirect branch, no call and no stack frame (checked by
// test/gpu/check_ptx.py).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/CudaContext.cuh"
#include "ccsynth/runtime/CudaTransport.h"
#include "ccsynth/runtime/CudaTransports.cuh"
#include "ccsynth/runtime/LaunchChecks.h"
#include "ccsynth/runtime/Watchdog.h"

#include <atomic>
#include <cuda_runtime.h>

#ifndef CCSYNTH_DTYPE_MASK
#define CCSYNTH_DTYPE_MASK 0x3ffu
#endif
#ifndef CCSYNTH_OP_MASK
#define CCSYNTH_OP_MASK 0xfu
#endif
/// The transports whose kernels a build instantiates (ccsynthTransportKind
/// bits): each is one kernel per dtype and operator.
#ifndef CCSYNTH_CUDA_TRANSPORTS
#define CCSYNTH_CUDA_TRANSPORTS                                                \
  (ccsynthTransportCudaVirtual | ccsynthTransportCudaIpc |                     \
   (CCSYNTH_WITH_NCCL ? ccsynthTransportNcclDevice : 0))
#endif

namespace ccsynth::rt {

/// `Tile`: bytes per chunk per pass; a descriptor may run A's code with
/// another tile than A's (the kernels take it at launch, so the code is
/// compiled once).
template <class A, unsigned long long Tile = A::tileBytes>
ccsynthResult cudaLaunch(const ccsynthLaunchArgs *a);

/// One kernel per (algorithm, element type, operator, transport), with the
/// threads per block of the architecture it is compiled for (A's
/// kernelKnobs); one block per SM.
template <class A, class T, class Op, class Tr>
__global__ void __launch_bounds__(KnobsOf<A>::threads, 1)
    ccsynthKernel(const __grid_constant__ typename Tr::Params p) {
  Tr tr(p);
  tr.announce();
  int tbs = threadblocksOf<A>(tr.rank);
  if (tr.tb < tbs) {
    CudaContext<A, T, Op, Tr> x(tr, tbs);
    if (x.enterLaunch())
      A::run(x, tr.rank, tr.tb);
  }
  tr.finish();
}

/// What the transport-specific part of a launch prepared.
template <class A> struct CudaLaunchPlan {
  int transport = 0;
  int rank = 0;
  unsigned grid = 0;
  /// Blocks that must be resident on the device at once: the grid, or with
  /// ranks of the CUDA IPC transport sharing the device the grids of all
  /// of them (their blocks wait on each other's).
  long together = 0;
  cudaStream_t stream = nullptr;
  typename VirtualTransport<A>::Params virt{};
  typename IpcTransport<A>::Params ipc{};
  CudaIpcComm *ipcComm = nullptr; ///< records its last launch
#if CCSYNTH_WITH_NCCL
  NcclParams nccl{};
#endif
};

/// How a kernel runs on one device: the threads per block its code was
/// built for and how many of its blocks the device holds at once.
struct KernelFit {
  int threads = 0;
  long resident = 0;
};

/// The threads per block of A's `kernel` as loaded on the current device
/// (the knob entry of the architecture its code was compiled for: the PTX
/// version, also when the driver compiled that PTX for a newer GPU) and
/// how many such blocks the device holds at once.
template <class A>
ccsynthResult kernelFit(const void *kernel, int rank, ccsynthError *err,
                        KernelFit &fit) {
  int dev = 0, sms = 0, perSm = 0;
  CCSYNTH_CUDA_CHECK(err, rank, cudaGetDevice(&dev));
  cudaFuncAttributes attr{};
  CCSYNTH_CUDA_CHECK(err, rank, cudaFuncGetAttributes(&attr, kernel));
  KernelKnobs k = knobsFor(A::kernelKnobs, attr.ptxVersion);
  if (attr.maxThreadsPerBlock < k.threads)
    return cudaReport(err, ccsynthUnsupported, CudaStatus::NotCoResident, rank,
                      __FILE__, __LINE__,
                      "%s: its sm_%d kernel was built for %d threads per "
                      "block; device %d runs it with at most %d",
                      A::shape.name, attr.ptxVersion, k.threads, dev,
                      attr.maxThreadsPerBlock);
  CCSYNTH_CUDA_CHECK(
      err, rank,
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CCSYNTH_CUDA_CHECK(err, rank,
                     cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                         &perSm, kernel, k.threads, 0));
  fit.threads = k.threads;
  fit.resident = long(sms) * perSm;
  return ccsynthSuccess;
}

template <class A, class T, class Op, class Tr>
ccsynthResult cudaLaunchKernel(const CudaLaunchPlan<A> &plan,
                               const typename Tr::Params &params,
                               ccsynthError *err) {
  const void *kernel =
      reinterpret_cast<const void *>(&ccsynthKernel<A, T, Op, Tr>);
  // The fit depends on the kernel and the device only: asked once per
  // device (more than 64 devices are asked every time). Threads and
  // residency are packed in one word so that readers see both or neither.
  static std::atomic<unsigned long long> cached[64];
  int dev = 0;
  CCSYNTH_CUDA_CHECK(err, plan.rank, cudaGetDevice(&dev));
  unsigned long long word = dev >= 0 && dev < 64 ? cached[dev].load() : 0;
  KernelFit fit;
  if (word == 0) {
    ccsynthResult r = kernelFit<A>(kernel, plan.rank, err, fit);
    if (r != ccsynthSuccess)
      return r;
    if (dev >= 0 && dev < 64)
      cached[dev].store((unsigned long long)fit.resident << 16 |
                        (unsigned long long)fit.threads);
  } else {
    fit.threads = int(word & 0xffff);
    fit.resident = long(word >> 16);
  }
  long together =
      plan.together > long(plan.grid) ? plan.together : long(plan.grid);
  if (together > fit.resident)
    return cudaReport(err, ccsynthUnsupported, CudaStatus::NotCoResident,
                      plan.rank, __FILE__, __LINE__,
                      "%s needs %ld threadblocks of %d threads resident at "
                      "once (%u of this rank%s); device %d holds %ld",
                      A::shape.name, together, fit.threads, plan.grid,
                      together > long(plan.grid)
                          ? ", the rest of the ranks sharing the device"
                          : "",
                      dev, fit.resident);
  ccsynthKernel<A, T, Op, Tr>
      <<<plan.grid, unsigned(fit.threads), 0, plan.stream>>>(params);
  CCSYNTH_CUDA_CHECK(err, plan.rank, cudaGetLastError());
  return ccsynthSuccess;
}

template <class A, class T, class Op>
ccsynthResult cudaRun(const CudaLaunchPlan<A> &plan, ccsynthError *err) {
  constexpr unsigned kBuilt = CCSYNTH_CUDA_TRANSPORTS;
  if constexpr ((kBuilt & ccsynthTransportCudaVirtual) != 0)
    if (plan.transport == ccsynthTransportCudaVirtual)
      return cudaLaunchKernel<A, T, Op, VirtualTransport<A>>(plan, plan.virt,
                                                             err);
  if constexpr ((kBuilt & ccsynthTransportCudaIpc) != 0)
    if (plan.transport == ccsynthTransportCudaIpc)
      return cudaLaunchKernel<A, T, Op, IpcTransport<A>>(plan, plan.ipc, err);
#if CCSYNTH_WITH_NCCL
  if constexpr ((kBuilt & ccsynthTransportNcclDevice) != 0)
    if (plan.transport == ccsynthTransportNcclDevice)
      return cudaLaunchKernel<A, T, Op, NcclTransport<A>>(plan, plan.nccl,
                                                          err);
#endif
  return cudaReport(err, ccsynthUnsupported, CudaStatus::BadComm, plan.rank,
                    nullptr, 0,
                    "%s: transport %d is not built into this plugin (built: "
                    "mask %u)",
                    A::shape.name, plan.transport, kBuilt);
}

template <class A, class T>
ccsynthResult cudaRunOp(const CudaLaunchPlan<A> &plan, int op,
                        ccsynthError *err) {
  constexpr std::uint32_t ops = CCSYNTH_OP_MASK;
  if constexpr (!A::shape.reduces) {
    return cudaRun<A, T, DevNoOp>(plan, err);
  } else {
    // A chain of compares on the host; the device never sees the operator.
    if constexpr ((ops & (1u << ccsynthSum)) != 0)
      if (op == ccsynthSum)
        return cudaRun<A, T, DevSum>(plan, err);
    if constexpr ((ops & (1u << ccsynthProd)) != 0)
      if (op == ccsynthProd)
        return cudaRun<A, T, DevProd>(plan, err);
    if constexpr ((ops & (1u << ccsynthMax)) != 0)
      if (op == ccsynthMax)
        return cudaRun<A, T, DevMax>(plan, err);
    if constexpr ((ops & (1u << ccsynthMin)) != 0)
      if (op == ccsynthMin)
        return cudaRun<A, T, DevMin>(plan, err);
    return ccsynthUnsupported;
  }
}

template <class A, int D, class T>
ccsynthResult cudaRunIf(const CudaLaunchPlan<A> &plan, int dtype, int op,
                        ccsynthError *err, bool &matched) {
  constexpr std::uint32_t dtypes = CCSYNTH_DTYPE_MASK;
  if constexpr ((dtypes & (1u << D)) != 0) {
    if (dtype == D) {
      matched = true;
      return cudaRunOp<A, T>(plan, op, err);
    }
  }
  return ccsynthUnsupported;
}

/// Element types of a reducing algorithm; a copying one has one kernel for
/// every element size.
template <class A>
ccsynthResult cudaRunType(const CudaLaunchPlan<A> &plan, int dtype, int op,
                          ccsynthError *err) {
  if constexpr (!A::shape.reduces) {
    return cudaRun<A, AnyWord, DevNoOp>(plan, err);
  } else {
    bool m = false;
    ccsynthResult r = ccsynthUnsupported;
#define CCSYNTH_TRY_TYPE(D, T)                                                 \
  r = cudaRunIf<A, D, T>(plan, dtype, op, err, m);                             \
  if (m)                                                                       \
    return r;
    CCSYNTH_TRY_TYPE(ccsynthInt8, std::int8_t)
    CCSYNTH_TRY_TYPE(ccsynthUint8, std::uint8_t)
    CCSYNTH_TRY_TYPE(ccsynthInt32, std::int32_t)
    CCSYNTH_TRY_TYPE(ccsynthUint32, std::uint32_t)
    CCSYNTH_TRY_TYPE(ccsynthInt64, std::int64_t)
    CCSYNTH_TRY_TYPE(ccsynthUint64, std::uint64_t)
    CCSYNTH_TRY_TYPE(ccsynthFloat16, __half)
    CCSYNTH_TRY_TYPE(ccsynthFloat32, float)
    CCSYNTH_TRY_TYPE(ccsynthFloat64, double)
    CCSYNTH_TRY_TYPE(ccsynthBfloat16, __nv_bfloat16)
#undef CCSYNTH_TRY_TYPE
    return r;
  }
}

inline std::uint64_t timeoutNsOf(double seconds) {
  if (!(seconds > 0))
    seconds = kDefaultTimeoutSeconds;
  double ns = seconds * 1e9;
  return ns >= 1.8e19 ? ~0ull : std::uint64_t(ns);
}

/// The fields of a per-rank parameter block (NCCL and IPC transports name
/// them alike) from a launch whose recvbuff and scratch lie in the window
/// starting at `base`.
template <class P>
void takeLaunch(P &q, const ccsynthLaunchArgs *a, const char *base,
                std::size_t scratchNeed, std::size_t n, std::size_t es,
                long inBlockOffset, std::uint64_t tile) {
  q.in = static_cast<const char *>(a->sendbuff);
  q.out = static_cast<char *>(a->recvbuff);
  q.scratch = static_cast<char *>(a->scratch);
  q.outOffset = std::size_t(q.out - base);
  q.scratchOffset = scratchNeed > 0 ? std::size_t(q.scratch - base) : 0;
  q.count = n;
  q.elemSize = std::uint32_t(es);
  q.inBlockOffset = int(inBlockOffset);
  q.tileBytes = tile;
  q.timeoutNs = timeoutNsOf(a->timeout_seconds);
}

/// Whether [p, p + bytes) lies in the window [base, base + size).
inline bool insideWindow(const void *p, std::size_t bytes, const char *base,
                         std::size_t size) {
  const char *q = static_cast<const char *>(p);
  return q >= base && bytes <= size && std::size_t(q - base) <= size - bytes;
}

inline ccsynthResult previousFailure(const CudaFailureRecord &rec, int rank,
                                     ccsynthError *err) {
  cudaFailureMessage(rec, rank, err);
  if (err)
    err->result = ccsynthAborted;
  return ccsynthAborted;
}

/// Drops the ranks a virtual-ranks group has posted so far: after one of
/// its ranks was refused the group can never complete, and the next group
/// must start empty (the ranks already posted got ccsynthSuccess for a call
/// that now never runs; the refused rank's error says why).
inline void abandonVirtualGroup(const ccsynthLaunchArgs *a, int ranks) {
  auto *c = static_cast<CudaVirtualComm *>(a->comm);
  if (!c || c->magic != CudaVirtualComm::kMagic ||
      c->structSize != sizeof(CudaVirtualComm) || c->ranks != ranks)
    return;
  for (int r = 0; r < ranks; ++r)
    c->postedRank[r] = 0;
  c->posted = 0;
}

/// Posts one rank of a virtual-ranks group; `complete` when it was the
/// last one, and `plan` then holds every rank's buffers. Posting is not
/// thread-safe: one host thread posts a group.
template <class A>
ccsynthResult planVirtual(const ccsynthLaunchArgs *a, std::size_t n,
                          std::uint64_t tile, const void *self,
                          CudaLaunchPlan<A> &plan, bool &complete) {
  const Shape &s = A::shape;
  ccsynthError *err = a->error;
  auto *c = static_cast<CudaVirtualComm *>(a->comm);
  complete = false;
  if (!c || c->magic != CudaVirtualComm::kMagic ||
      c->structSize != sizeof(CudaVirtualComm))
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, a->rank,
                      nullptr, 0, "%s: comm is not a CudaVirtualComm", s.name);
  if (c->ranks != s.ranks || c->flagWords < std::uint32_t(flagWords(s)))
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, a->rank,
                      nullptr, 0,
                      "%s: the comm has %d ranks and %u flag words; the "
                      "algorithm needs %d and %d",
                      s.name, c->ranks, c->flagWords, s.ranks, flagWords(s));
  if (reinterpret_cast<volatile CudaFailureRecord *>(c->failureHost)->failed)
    return previousFailure(*c->failureHost, a->rank, err);
  if (c->posted == 0) {
    c->groupAlgo = self;
    c->count = a->count;
    c->dtype = a->dtype;
    c->op = a->op;
    c->stream = a->stream;
    c->timeoutSeconds = a->timeout_seconds;
  } else if (c->groupAlgo != self || c->count != a->count ||
             c->dtype != a->dtype || (s.reduces && c->op != a->op) ||
             c->stream != a->stream || c->postedRank[a->rank]) {
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::GroupMismatch,
                      a->rank, nullptr, 0,
                      "%s: rank %d posted %s to a group of %d posted ranks "
                      "(every rank of a group must call the same algorithm "
                      "once with the same count, dtype, op and stream)",
                      s.name, a->rank,
                      c->postedRank[a->rank] ? "twice" : "a different call",
                      c->posted);
  }
  c->postedRank[a->rank] = 1;
  c->send[a->rank] = a->sendbuff;
  c->recv[a->rank] = a->recvbuff;
  c->scratch[a->rank] = a->scratch;
  if (++c->posted < s.ranks)
    return ccsynthSuccess;
  // The group is complete: its launch takes the posted buffers by value.
  complete = true;
  for (int r = 0; r < s.ranks; ++r) {
    plan.virt.send[r] = c->send[r];
    plan.virt.recv[r] = c->recv[r];
    plan.virt.scratch[r] = c->scratch[r];
    plan.virt.inBlockOffset[r] = s.inplace ? int(inPlaceBlockOffset(s, r)) : 0;
    c->postedRank[r] = 0;
  }
  c->posted = 0;
  plan.virt.count = n;
  plan.virt.elemSize = std::uint32_t(dtypeSize(c->dtype));
  plan.virt.tileBytes = tile;
  plan.virt.state = c->state;
  plan.virt.failure = c->failureDev;
  plan.virt.flagWords = c->flagWords;
  plan.virt.timeoutNs = timeoutNsOf(c->timeoutSeconds);
  plan.grid = unsigned(s.ranks) * unsigned(s.maxTbs);
  plan.stream = static_cast<cudaStream_t>(c->stream);
  return ccsynthSuccess;
}

#if CCSYNTH_WITH_NCCL
template <class A>
ccsynthResult planNccl(const ccsynthLaunchArgs *a, std::size_t n,
                       long inBlockOffset, std::uint64_t tile,
                       CudaLaunchPlan<A> &plan) {
  const Shape &s = A::shape;
  ccsynthError *err = a->error;
  auto *c = static_cast<CudaNcclComm *>(a->comm);
  if (!c || c->magic != CudaNcclComm::kMagic ||
      c->structSize != sizeof(CudaNcclComm))
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, a->rank,
                      nullptr, 0, "%s: comm is not a CudaNcclComm", s.name);
  if (c->ranks != s.ranks || c->rank != a->rank ||
      c->flagWords < std::uint32_t(flagWords(s)))
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, a->rank,
                      nullptr, 0,
                      "%s: the comm is rank %d of %d with %u flag words; the "
                      "call is rank %d of %d needing %d",
                      s.name, c->rank, c->ranks, c->flagWords, a->rank, s.ranks,
                      flagWords(s));
  if (c->devComm.lsaSize < c->ranks && !(CCSYNTH_NCCL_GIN && c->gin))
    return cudaReport(err, ccsynthUnsupported, CudaStatus::PeerUnreachable,
                      a->rank, nullptr, 0,
                      "%s: only %d of %d ranks share this GPU's NVLink "
                      "domain; the others need GIN (build with "
                      "-DCCSYNTH_NCCL_GIN=1 and create the comm with gin)",
                      s.name, c->devComm.lsaSize, c->ranks);
  if (reinterpret_cast<volatile CudaFailureRecord *>(c->failureHost)->failed)
    return previousFailure(*c->failureHost, a->rank, err);
  if (n == 0)
    return ccsynthSuccess; // every rank has the same count: none launches
  std::size_t es = std::size_t(dtypeSize(a->dtype));
  std::size_t blockBytes = n * es;
  auto inside = [&](const void *p, std::size_t bytes) {
    return insideWindow(p, bytes, c->dataBase, c->dataBytes);
  };
  bool needsSend = !((s.coll == Coll::Broadcast || s.coll == Coll::Scatter) &&
                     a->rank != s.root);
  std::size_t scratchNeed = scratchBytes(s, tile);
  if (!inside(a->recvbuff, blockBytes * s.outBlocks) ||
      (needsSend && !inside(a->sendbuff, blockBytes * s.inBlocks)) ||
      (scratchNeed > 0 && !inside(a->scratch, scratchNeed)))
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::OutsideWindow,
                      a->rank, nullptr, 0,
                      "%s: sendbuff, recvbuff and scratch must lie in the "
                      "comm's symmetric window [%p, +%zu) at the same "
                      "offsets on every rank",
                      s.name, static_cast<const void *>(c->dataBase),
                      c->dataBytes);
  NcclParams &q = plan.nccl;
  q.devComm = c->devComm;
  q.dataWindow = c->dataWindow;
  q.flagWindow = c->flagWindow;
  q.dataBase = c->dataBase;
  takeLaunch(q, a, c->dataBase, scratchNeed, n, es, inBlockOffset, tile);
  q.header = c->flags;
  q.failure = c->failureDev;
  q.flagWords = c->flagWords;
  q.gin = c->gin ? 1 : 0;
  int tbs = A::threadblocks[a->rank];
  plan.grid = unsigned(tbs > 0 ? tbs : 1);
  plan.stream = static_cast<cudaStream_t>(a->stream);
  return ccsynthSuccess;
}
#endif

/// One rank of a CUDA IPC launch: recvbuff and scratch must lie in the
/// comm's data area (at the same offsets on every rank: peers put there);
/// sendbuff may be anywhere on this rank's device (only this rank reads
/// it).
template <class A>
ccsynthResult planIpc(const ccsynthLaunchArgs *a, std::size_t n,
                      long inBlockOffset, std::uint64_t tile,
                      CudaLaunchPlan<A> &plan) {
  const Shape &s = A::shape;
  ccsynthError *err = a->error;
  CudaIpcComm *c = asIpcComm(a->comm);
  if (!c)
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, a->rank,
                      nullptr, 0, "%s: comm is not a CudaIpcComm", s.name);
  if (c->ranks != s.ranks || c->rank != a->rank ||
      c->flagWords < std::uint32_t(flagWords(s)) || !c->connected)
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, a->rank,
                      nullptr, 0,
                      "%s: the comm is rank %d of %d with %u flag words%s; "
                      "the call is rank %d of %d needing %d",
                      s.name, c->rank, c->ranks, c->flagWords,
                      c->connected ? "" : ", not connected", a->rank, s.ranks,
                      flagWords(s));
  if (reinterpret_cast<volatile CudaFailureRecord *>(c->failureHost)->failed)
    return previousFailure(*c->failureHost, a->rank, err);
  if (n == 0)
    return ccsynthSuccess; // every rank has the same count: none launches
  std::size_t es = std::size_t(dtypeSize(a->dtype));
  std::size_t blockBytes = n * es;
  char *data = c->data();
  auto inside = [&](const void *p, std::size_t bytes) {
    return insideWindow(p, bytes, data, c->dataBytes);
  };
  std::size_t scratchNeed = scratchBytes(s, tile);
  if (!inside(a->recvbuff, blockBytes * s.outBlocks) ||
      (scratchNeed > 0 && !inside(a->scratch, scratchNeed)))
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::OutsideWindow,
                      a->rank, nullptr, 0,
                      "%s: recvbuff and scratch must lie in the IPC comm's "
                      "data area [%p, +%zu) at the same offsets on every rank",
                      s.name, static_cast<const void *>(data), c->dataBytes);
  // A switch reduction reads every rank's input at one address: the
  // inputs must lie in the data area at the same offset on every rank.
  bool inputShared = inside(a->sendbuff, blockBytes * s.inBlocks);
  if constexpr (switchReadsInputOf<A>())
    if (!inputShared)
      return cudaReport(err, ccsynthInvalidArgument, CudaStatus::OutsideWindow,
                        a->rank, nullptr, 0,
                        "%s: its switch operations read every rank's input, "
                        "so sendbuff must lie in the IPC comm's data area "
                        "[%p, +%zu) at the same offset on every rank",
                        s.name, static_cast<const void *>(data), c->dataBytes);
  auto &q = plan.ipc;
  takeLaunch(q, a, data, scratchNeed, n, es, inBlockOffset, tile);
  q.inOffset = inputShared ? std::size_t(q.in - data) : 0;
  q.rank = a->rank;
  q.failure = c->failureDev;
  q.flagWords = c->flagWords;
  q.headerBytes = c->headerBytes;
  for (int r = 0; r < s.ranks; ++r)
    q.window[r] = c->peerBase[r];
  int tbs = A::threadblocks[a->rank];
  plan.grid = unsigned(tbs > 0 ? tbs : 1);
  for (int r = 0; r < s.ranks; ++r)
    if (c->peerDevice[r] == c->device)
      plan.together += A::threadblocks[r] > 0 ? A::threadblocks[r] : 1;
  plan.stream = static_cast<cudaStream_t>(a->stream);
  plan.ipcComm = c;
  return ccsynthSuccess;
}

/// The plugin entry of algorithm A on the CUDA backend, with `Tile` bytes
/// per chunk per pass.
template <class A, unsigned long long Tile>
ccsynthResult cudaLaunch(const ccsynthLaunchArgs *a) {
  const Shape &s = A::shape;
  constexpr std::uint64_t tile = Tile;
  constexpr std::uint32_t dtypes =
      A::shape.reduces ? CCSYNTH_DTYPE_MASK : 0x3ffu;
  constexpr std::uint32_t ops = A::shape.reduces ? CCSYNTH_OP_MASK : 0u;
  std::size_t n = 0;
  long off = 0;
  ccsynthResult r = checkLaunch(s, tile, dtypes, ops, a, n, off);
  if (r != ccsynthSuccess) {
    if (a && a->transport == ccsynthTransportCudaVirtual)
      abandonVirtualGroup(a, s.ranks);
    return r;
  }
  CudaLaunchPlan<A> plan;
  plan.transport = a->transport;
  plan.rank = a->rank;
  if (a->transport == ccsynthTransportCudaVirtual) {
    bool complete = false;
    // A virtual-ranks group is one launch of one descriptor (code and
    // tile).
    const void *self = reinterpret_cast<const void *>(&cudaLaunch<A, Tile>);
    r = planVirtual<A>(a, n, tile, self, plan, complete);
    if (r != ccsynthSuccess)
      abandonVirtualGroup(a, s.ranks);
    if (r != ccsynthSuccess || !complete)
      return r;
  } else if (a->transport == ccsynthTransportCudaIpc) {
    r = planIpc<A>(a, n, off, tile, plan);
    if (r != ccsynthSuccess)
      return r;
#if CCSYNTH_WITH_NCCL
  } else if (a->transport == ccsynthTransportNcclDevice) {
    r = planNccl<A>(a, n, off, tile, plan);
    if (r != ccsynthSuccess)
      return r;
#endif
  } else {
    return cudaReport(a->error, ccsynthUnsupported, CudaStatus::BadComm,
                      a->rank, nullptr, 0,
                      "%s: the CUDA backend runs on the virtual-ranks, CUDA "
                      "IPC or NCCL device transport (got transport %d)",
                      s.name, a->transport);
  }
  if (n == 0)
    return ccsynthSuccess;
  r = cudaRunType<A>(plan, a->dtype, a->op, a->error);
  if (r == ccsynthSuccess && plan.ipcComm) {
    // What destroying the IPC comm waits for. Under graph capture the
    // record would be a node of the graph: nothing to wait for then.
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(plan.stream, &st) == cudaSuccess &&
        st == cudaStreamCaptureStatusNone &&
        cudaEventRecord(plan.ipcComm->lastLaunch, plan.stream) == cudaSuccess)
      plan.ipcComm->launched = true;
  }
  return r;
}

} // namespace ccsynth::rt
