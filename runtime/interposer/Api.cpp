//===- Api.cpp - The NCCL 2.28 API as libccsynth_nccl.so exports it -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Every function of nccl.h, each with its pnccl* alias (the profiling
// names NCCL exports too). Prototypes come from NCCL's own header, so a
// mismatch is a compile error. Collectives go through dispatch(); the
// communicator lifecycle and groups tell the dispatcher what happened;
// everything else is forwarded unchanged.
//
//===----------------------------------------------------------------------===//
#include "Interposer.h"

using namespace ccsynth::interposer;

#define EXPORT extern "C" __attribute__((visibility("default")))

// pnccl##NAME is an alias of NAME: same code, same prototype (nccl.h
// declares both).
#define ALIAS(NAME) EXPORT decltype(NAME) p##NAME __attribute__((alias(#NAME)));

#define REAL(NAME) real<decltype(&NAME)>(#NAME)

/// Forwards a call that returns ncclResult_t.
#define FORWARD(NAME, PARAMS, ARGS)                                            \
  EXPORT ncclResult_t NAME PARAMS {                                            \
    auto fn = REAL(NAME);                                                      \
    if (!fn)                                                                   \
      return ncclInternalError;                                                \
    ForwardScope scope;                                                        \
    return fn ARGS;                                                            \
  }                                                                            \
  ALIAS(NAME)

FORWARD(ncclMemAlloc, (void **ptr, size_t size), (ptr, size))
FORWARD(ncclMemFree, (void *ptr), (ptr))
FORWARD(ncclGetVersion, (int *version), (version))
FORWARD(ncclGetUniqueId, (ncclUniqueId * uniqueId), (uniqueId))
FORWARD(ncclCommInitAll, (ncclComm_t * comm, int ndev, const int *devlist),
        (comm, ndev, devlist))
FORWARD(ncclCommFinalize, (ncclComm_t comm), (comm))
FORWARD(ncclCommShrink,
        (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
         ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags),
        (comm, excludeRanksList, excludeRanksCount, newcomm, config,
         shrinkFlags))
FORWARD(ncclCommCount, (const ncclComm_t comm, int *count), (comm, count))
FORWARD(ncclCommCuDevice, (const ncclComm_t comm, int *device), (comm, device))
FORWARD(ncclCommUserRank, (const ncclComm_t comm, int *rank), (comm, rank))
FORWARD(ncclCommRegister,
        (const ncclComm_t comm, void *buff, size_t size, void **handle),
        (comm, buff, size, handle))
FORWARD(ncclCommDeregister, (const ncclComm_t comm, void *handle),
        (comm, handle))
FORWARD(ncclCommWindowRegister,
        (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
         int winFlags),
        (comm, buff, size, win, winFlags))
FORWARD(ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win),
        (comm, win))
FORWARD(ncclRedOpCreatePreMulSum,
        (ncclRedOp_t * op, void *scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm),
        (op, scalar, datatype, residence, comm))
FORWARD(ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm), (op, comm))
FORWARD(ncclSend,
        (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream),
        (sendbuff, count, datatype, peer, comm, stream))
FORWARD(ncclRecv,
        (void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream),
        (recvbuff, count, datatype, peer, comm, stream))

EXPORT const char *ncclGetErrorString(ncclResult_t result) {
  auto fn = REAL(ncclGetErrorString);
  if (!fn)
    return "NCCL library not loaded (see the ccsynth-nccl message)";
  ForwardScope scope;
  return fn(result);
}
ALIAS(ncclGetErrorString)

EXPORT const char *ncclGetLastError(ncclComm_t comm) {
  auto fn = REAL(ncclGetLastError);
  if (!fn)
    return "NCCL library not loaded (see the ccsynth-nccl message)";
  ForwardScope scope;
  return fn(comm);
}
ALIAS(ncclGetLastError)

// --- communicators -----------------------------------------------------------

static bool initOk(ncclResult_t r) {
  return r == ncclSuccess || r == ncclInProgress;
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                           ncclUniqueId commId, int rank,
                                           ncclConfig_t *config) {
  auto fn = REAL(ncclCommInitRankConfig);
  if (!fn)
    return ncclInternalError;
  bool outer = !ForwardScope::active();
  ncclResult_t r = callReal(fn, comm, nranks, commId, rank, config);
  if (outer && initOk(r) && comm && *comm)
    onCommInit(*comm, nranks, rank, &commId, sizeof commId);
  return r;
}
ALIAS(ncclCommInitRankConfig)

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks,
                                     ncclUniqueId commId, int rank) {
  auto fn = REAL(ncclCommInitRank);
  if (!fn)
    return ncclInternalError;
  bool outer = !ForwardScope::active();
  ncclResult_t r = callReal(fn, comm, nranks, commId, rank);
  if (outer && initOk(r) && comm && *comm)
    onCommInit(*comm, nranks, rank, &commId, sizeof commId);
  return r;
}
ALIAS(ncclCommInitRank)

EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks,
                                             int myrank, int nId,
                                             ncclUniqueId *commIds,
                                             ncclConfig_t *config) {
  auto fn = REAL(ncclCommInitRankScalable);
  if (!fn)
    return ncclInternalError;
  bool outer = !ForwardScope::active();
  ncclResult_t r = callReal(fn, newcomm, nranks, myrank, nId, commIds, config);
  if (outer && initOk(r) && newcomm && *newcomm && commIds && nId > 0)
    onCommInit(*newcomm, nranks, myrank, commIds,
               sizeof(ncclUniqueId) * std::size_t(nId));
  return r;
}
ALIAS(ncclCommInitRankScalable)

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                  ncclComm_t *newcomm, ncclConfig_t *config) {
  auto fn = REAL(ncclCommSplit);
  if (!fn)
    return ncclInternalError;
  bool outer = !ForwardScope::active();
  ncclResult_t r = callReal(fn, comm, color, key, newcomm, config);
  if (outer && initOk(r))
    onCommSplit(comm, newcomm ? *newcomm : nullptr, color);
  return r;
}
ALIAS(ncclCommSplit)

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  auto fn = REAL(ncclCommDestroy);
  if (!fn)
    return ncclInternalError;
  if (!ForwardScope::active())
    onCommRelease(comm);
  ForwardScope scope;
  return fn(comm);
}
ALIAS(ncclCommDestroy)

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  auto fn = REAL(ncclCommAbort);
  if (!fn)
    return ncclInternalError;
  bool outer = !ForwardScope::active();
  if (outer)
    onCommAbortStart(comm);
  ncclResult_t r = callReal(fn, comm);
  if (outer)
    onCommRelease(comm);
  return r;
}
ALIAS(ncclCommAbort)

EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  auto fn = REAL(ncclCommRevoke);
  if (!fn)
    return ncclInternalError;
  if (!ForwardScope::active())
    onCommRevoke(comm);
  ForwardScope scope;
  return fn(comm, revokeFlags);
}
ALIAS(ncclCommRevoke)

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm,
                                          ncclResult_t *asyncError) {
  auto fn = REAL(ncclCommGetAsyncError);
  if (!fn)
    return ncclInternalError;
  ncclResult_t r = callReal(fn, comm, asyncError);
  // A failed plugin launch is this communicator's asynchronous error too.
  ncclResult_t own = commError(comm);
  if (r == ncclSuccess && asyncError && own != ncclSuccess &&
      (*asyncError == ncclSuccess || *asyncError == ncclInProgress))
    *asyncError = own;
  return r;
}
ALIAS(ncclCommGetAsyncError)

// --- groups ------------------------------------------------------------------

EXPORT ncclResult_t ncclGroupStart() {
  auto fn = REAL(ncclGroupStart);
  if (!fn)
    return ncclInternalError;
  bool outer = !ForwardScope::active();
  ncclResult_t r = callReal(fn);
  if (outer && r == ncclSuccess)
    onGroupStart();
  return r;
}
ALIAS(ncclGroupStart)

EXPORT ncclResult_t ncclGroupEnd() {
  auto fn = REAL(ncclGroupEnd);
  if (!fn)
    return ncclInternalError;
  bool outer = !ForwardScope::active();
  ncclResult_t r = callReal(fn);
  return outer ? onGroupEnd(r) : r;
}
ALIAS(ncclGroupEnd)

EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  auto fn = REAL(ncclGroupSimulateEnd);
  if (!fn)
    return ncclInternalError;
  bool outer = !ForwardScope::active();
  ncclResult_t r = callReal(fn, simInfo);
  if (outer)
    onGroupSimulateEnd();
  return r;
}
ALIAS(ncclGroupSimulateEnd)

// --- collectives -------------------------------------------------------------

/// Dispatches CALL; forwards ARGS to NAME when no plugin takes it.
#define COLLECTIVE(NAME, CALL, ARGS)                                           \
  auto fn = REAL(NAME);                                                        \
  if (!ForwardScope::active()) {                                               \
    bool forwarded = false;                                                    \
    ncclResult_t r = dispatch(CALL, forwarded);                                \
    if (!forwarded)                                                            \
      return r;                                                                \
  }                                                                            \
  if (!fn)                                                                     \
    return ncclInternalError;                                                  \
  ForwardScope scope;                                                          \
  return fn ARGS;

EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff,
                                  size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm,
                                  cudaStream_t stream){
    COLLECTIVE(ncclAllReduce,
               (Call{"allreduce", "ncclAllReduce", sendbuff, recvbuff, count,
                     datatype, op, -1, comm, stream}),
               (sendbuff, recvbuff, count, datatype, op, comm,
                stream))} ALIAS(ncclAllReduce)

    EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff,
                                      size_t sendcount, ncclDataType_t datatype,
                                      ncclComm_t comm, cudaStream_t stream){
        COLLECTIVE(ncclAllGather,
                   (Call{"allgather", "ncclAllGather", sendbuff, recvbuff,
                         sendcount, datatype, ncclSum, -1, comm, stream}),
                   (sendbuff, recvbuff, sendcount, datatype, comm,
                    stream))} ALIAS(ncclAllGather)

        EXPORT ncclResult_t
    ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                      cudaStream_t stream){
        COLLECTIVE(ncclReduceScatter,
                   (Call{"reducescatter", "ncclReduceScatter", sendbuff,
                         recvbuff, recvcount, datatype, op, -1, comm, stream}),
                   (sendbuff, recvbuff, recvcount, datatype, op, comm,
                    stream))} ALIAS(ncclReduceScatter)

        EXPORT ncclResult_t
    ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                  ncclDataType_t datatype, int root, ncclComm_t comm,
                  cudaStream_t stream){
        COLLECTIVE(ncclBroadcast,
                   (Call{"broadcast", "ncclBroadcast", sendbuff, recvbuff,
                         count, datatype, ncclSum, root, comm, stream}),
                   (sendbuff, recvbuff, count, datatype, root, comm,
                    stream))} ALIAS(ncclBroadcast)

        EXPORT ncclResult_t
    ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
              ncclComm_t comm, cudaStream_t stream){
        COLLECTIVE(ncclBcast,
                   (Call{"broadcast", "ncclBcast", buff, buff, count, datatype,
                         ncclSum, root, comm, stream}),
                   (buff, count, datatype, root, comm,
                    stream))} ALIAS(ncclBcast)

        EXPORT ncclResult_t
    ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
               ncclDataType_t datatype, ncclRedOp_t op, int root,
               ncclComm_t comm, cudaStream_t stream){
        COLLECTIVE(ncclReduce,
                   (Call{"reduce", "ncclReduce", sendbuff, recvbuff, count,
                         datatype, op, root, comm, stream}),
                   (sendbuff, recvbuff, count, datatype, op, root, comm,
                    stream))} ALIAS(ncclReduce)

        EXPORT ncclResult_t
    ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream){
        COLLECTIVE(ncclAlltoAll,
                   (Call{"alltoall", "ncclAlltoAll", sendbuff, recvbuff, count,
                         datatype, ncclSum, -1, comm, stream}),
                   (sendbuff, recvbuff, count, datatype, comm,
                    stream))} ALIAS(ncclAlltoAll)

        EXPORT ncclResult_t
    ncclGather(const void *sendbuff, void *recvbuff, size_t count,
               ncclDataType_t datatype, int root, ncclComm_t comm,
               cudaStream_t stream){
        COLLECTIVE(ncclGather,
                   (Call{"gather", "ncclGather", sendbuff, recvbuff, count,
                         datatype, ncclSum, root, comm, stream}),
                   (sendbuff, recvbuff, count, datatype, root, comm,
                    stream))} ALIAS(ncclGather)

        EXPORT ncclResult_t
    ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                ncclDataType_t datatype, int root, ncclComm_t comm,
                cudaStream_t stream){
        COLLECTIVE(ncclScatter,
                   (Call{"scatter", "ncclScatter", sendbuff, recvbuff, count,
                         datatype, ncclSum, root, comm, stream}),
                   (sendbuff, recvbuff, count, datatype, root, comm,
                    stream))} ALIAS(ncclScatter)
