//===- Interposer.h - Internals of the NCCL-API interposer ----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// libccsynth_nccl.so exports the NCCL 2.28 API. Every call goes to the real
// library (loaded once, RTLD_DEEPBIND | RTLD_LOCAL) except collectives that
// a loaded plugin algorithm covers on a communicator whose ranks share a
// host: on host buffers those run a host plugin over the communicator's
// shared-memory window; on device buffers a CUDA plugin over the CUDA IPC
// transport, on the caller's stream. See docs/runtime.md, "The NCCL-API
// interposer".
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>

namespace ccsynth::interposer {

/// The real library's `name`, or null (and one message on stderr) when the
/// library or the symbol is missing.
void *realSymbol(const char *name);

template <class F> F real(const char *name) {
  return reinterpret_cast<F>(realSymbol(name));
}

/// Calls into the real library are marked so that a call that comes back
/// into the interposer's exports (a library calling its own public API
/// without -Bsymbolic) is forwarded without a second dispatch.
struct ForwardScope {
  ForwardScope();
  ~ForwardScope();
  static bool active();
};

/// Calls `fn`, a function of the real library, inside a ForwardScope.
template <class F, class... Args> auto callReal(F fn, Args... args) {
  ForwardScope scope;
  return fn(args...);
}

/// One collective call as the application made it.
struct Call {
  const char *collective; ///< ccsynth's name: allreduce, allgather, ...
  const char *ncclName;   ///< for messages: ncclAllReduce, ...
  const void *send;
  void *recv;
  std::size_t count;
  ncclDataType_t dtype;
  ncclRedOp_t op; ///< ncclSum for collectives without reduction
  int root;       ///< -1 when not rooted
  ncclComm_t comm;
  cudaStream_t stream;
};

/// Runs `call` through a plugin when one covers it, else returns
/// `forwarded = true` and the caller forwards it to NCCL unchanged.
ncclResult_t dispatch(const Call &call, bool &forwarded);

// Communicator lifecycle (called after the real library's call succeeded
// or reported ncclInProgress).
void onCommInit(ncclComm_t comm, int nranks, int rank, const void *id,
                std::size_t idBytes);
void onCommSplit(ncclComm_t parent, ncclComm_t child, int color);
/// Releases the windows: before the real destroy, and after the real abort
/// (onCommAbortStart raised their abort words before it). It waits for the
/// last launch (bounded by the waits' timeout).
void onCommRelease(ncclComm_t comm);
/// Before the real abort: raises the device windows' abort words, so that
/// kernels still waiting end at their next poll. The real abort then ends
/// NCCL's own kernels, so that one of ours queued behind a hung NCCL kernel
/// starts, sees the word and ends before onCommRelease waits for it.
void onCommAbortStart(ncclComm_t comm);
void onCommRevoke(ncclComm_t comm);
/// The interposer's own error on `comm` (a failed plugin launch), or
/// ncclSuccess.
ncclResult_t commError(ncclComm_t comm);

// Groups: plugin launches inside a group run at its outermost end.
void onGroupStart();
/// After the real ncclGroupEnd returned `r`: runs deferred launches.
ncclResult_t onGroupEnd(ncclResult_t r);
void onGroupSimulateEnd();

} // namespace ccsynth::interposer
