//===- Launch.cpp - Running a plugin algorithm ----------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The chosen plugin algorithm runs:
//  - host buffers, host plugin: staged through the communicator's POSIX
//    shared-memory window, synchronously (launchHost);
//  - device buffers, CUDA plugin: the CUDA IPC transport, asynchronously on
//    the caller's stream; the output is staged through this rank's device
//    window (peers put into it), the input read in place when the
//    algorithm is out of place (launchCuda). A CUDA graph capture records
//    the same work (capture-safe plugins only).
// First a failed launch as the communicator's error (launchFailed) and the
// launch arguments (launchArgs), then the two paths and launch(). See
// docs/runtime.md, "The NCCL-API interposer".
//
//===----------------------------------------------------------------------===//
#include "Launch.h"

#include "CudaShim.h"

#include "ccsynth/runtime/HostTypes.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace ccsynth::interposer::detail {

namespace {

/// Records a failed launch as the communicator's error and returns it.
ncclResult_t launchFailed(const Call &c, CommState &s,
                          const ccsynthAlgorithm &g, ccsynthResult r,
                          const ccsynthError &err) {
  // A plugin that times out or loses a peer is a system error (the job
  // must abort the communicator); a refusal after a match is ours.
  ncclResult_t code =
      (r == ccsynthTimeout || r == ccsynthAborted || r == ccsynthSystemError)
          ? ncclSystemError
          : ncclInternalError;
  ncclResult_t none = ncclSuccess;
  if (s.error.compare_exchange_strong(none, code)) {
    char msg[768];
    std::snprintf(msg, sizeof msg,
                  "%s on communicator %.16s rank %d: plugin algorithm %s "
                  "failed: %s; returning %s",
                  c.ncclName, s.key.c_str(), s.rank, g.name, err.message,
                  code == ncclSystemError ? "ncclSystemError"
                                          : "ncclInternalError");
    warn(msg);
  }
  return code;
}

/// Whether this rank contributes input (broadcast and scatter: the root
/// only) and receives output (reduce and gather: the root only).
bool sendsOn(const Call &c, int me) {
  std::string coll = c.collective;
  return !((coll == "broadcast" || coll == "scatter") && me != c.root);
}
bool receivesOn(const Call &c, int me) {
  std::string coll = c.collective;
  return !((coll == "reduce" || coll == "gather") && me != c.root);
}

/// The launch arguments of `c` on this rank, with staged buffers.
ccsynthLaunchArgs launchArgs(const Call &c, const CommState &s,
                             const ccsynthAlgorithm &g, const void *send,
                             void *recv, void *scratch, int transport,
                             void *comm, ccsynthError &err) {
  ccsynthLaunchArgs args{};
  args.struct_size = sizeof args;
  args.rank = s.rank;
  args.sendbuff = send;
  args.recvbuff = recv;
  args.count = c.count;
  args.dtype = int(c.dtype);
  args.op = g.op_mask ? int(c.op) : 0;
  args.scratch = g.scratch_bytes ? scratch : nullptr;
  args.scratch_bytes = g.scratch_bytes;
  args.transport = transport;
  args.comm = comm;
  args.stream = c.stream;
  args.timeout_seconds = config().timeout;
  args.error = &err;
  return args;
}

ncclResult_t launchHost(const Call &c, CommState &s, const Algo &a) {
  const ccsynthAlgorithm &g = *a.desc;
  int n = s.nranks, me = s.rank;
  std::size_t es = rt::dtypeSize(int(c.dtype));
  std::uint64_t unit = std::uint64_t(c.count) * es;
  std::uint64_t inBytes = unit * unitsOf(c.collective, n, true);
  std::uint64_t outBytes = unit * unitsOf(c.collective, n, false);
  bool sends = sendsOn(c, me), receives = receivesOn(c, me);

  rt::CommHeader *h = s.window->comm();
  char *data = rt::commData(h, me);
  char *inArea = data, *outArea = data + s.staging;
  char *send, *recv;
  int inU = unitsOf(c.collective, n, true),
      outU = unitsOf(c.collective, n, false);
  if (!g.inplace) {
    send = inArea;
    recv = outArea;
  } else if (outU > inU) {
    recv = outArea;
    send = outArea + std::uint64_t(me) * unit;
  } else if (inU > outU) {
    send = inArea;
    recv = inArea + std::uint64_t(me) * unit;
  } else {
    send = recv = outArea;
  }
  if (sends && inBytes)
    std::memcpy(send, c.send, inBytes);

  ccsynthError err{};
  ccsynthLaunchArgs args = launchArgs(c, s, g, send, recv, data + 2 * s.staging,
                                      ccsynthTransportHostShm, h, err);
  ccsynthResult r = g.launch(&args);
  if (r == ccsynthSuccess) {
    if (receives && outBytes)
      std::memcpy(c.recv, recv, outBytes);
    return ncclSuccess;
  }
  return launchFailed(c, s, g, r, err);
}

/// The CUDA IPC path: queued on the caller's stream, returns at once.
/// Peers put into this rank's output, so the output is staged at the
/// start of the device window (the same offset on every rank) and copied
/// to the user's buffer after the kernel, on the same stream. An
/// out-of-place algorithm reads the user's input where it is; an in-place
/// one finds it in the staged output, copied there first.
ncclResult_t launchCuda(const Call &c, CommState &s, const Algo &a) {
  const ccsynthAlgorithm &g = *a.desc;
  IpcState &st = ipcOf(s, a.owner);
  int n = s.nranks, me = s.rank;
  std::size_t es = rt::dtypeSize(int(c.dtype));
  std::uint64_t unit = std::uint64_t(c.count) * es;
  int inU = unitsOf(c.collective, n, true),
      outU = unitsOf(c.collective, n, false);
  bool sends = sendsOn(c, me), receives = receivesOn(c, me);
  char *recv = st.data;
  const void *send = c.send;
  ccsynthError err{};
  bool captured = capturing(c.stream);
  if (!waitOrderEvent(st.order, c.stream, captured)) {
    std::snprintf(err.message, sizeof err.message,
                  "ordering the launch after the previous one on this "
                  "communicator failed");
    return launchFailed(c, s, g, ccsynthSystemError, err);
  }
  if (g.inplace) {
    // Decide() admits in-place algorithms whose output is the whole
    // buffer (allreduce, allgather, ...): the input sits inside it.
    char *in = recv + (outU > inU ? std::uint64_t(me) * unit : 0);
    if (sends && !copyAsync(in, c.send, unit * inU, c.stream)) {
      std::snprintf(err.message, sizeof err.message,
                    "staging the input on the stream failed");
      return launchFailed(c, s, g, ccsynthSystemError, err);
    }
    send = in;
  }
  ccsynthLaunchArgs args = launchArgs(c, s, g, send, recv, st.data + st.staging,
                                      ccsynthTransportCudaIpc, st.comm, err);
  ccsynthResult r = g.launch(&args);
  if (r != ccsynthSuccess)
    return launchFailed(c, s, g, r, err);
  if (receives && !copyAsync(c.recv, recv, unit * outU, c.stream)) {
    std::snprintf(err.message, sizeof err.message,
                  "copying the output to the user's buffer on the stream "
                  "failed");
    return launchFailed(c, s, g, ccsynthSystemError, err);
  }
  if (!recordOrderEvent(st.order, c.stream, captured)) {
    std::snprintf(err.message, sizeof err.message,
                  "recording the end of the launch failed");
    return launchFailed(c, s, g, ccsynthSystemError, err);
  }
  return ncclSuccess;
}

} // namespace

ncclResult_t launch(const Call &c, CommState &s, const Algo &a, bool cuda) {
  return cuda ? launchCuda(c, s, a) : launchHost(c, s, a);
}

} // namespace ccsynth::interposer::detail
