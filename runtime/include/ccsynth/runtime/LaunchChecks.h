//===- LaunchChecks.h - Launch arguments checked before anything runs -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Shared by the host and CUDA plugin entries: every argument a launch takes
// is checked against the algorithm before any rank waits on another, so a
// wrong call is refused with a clear message instead of hanging a job.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/Generated.h"
#include "ccsynth/runtime/HostTypes.h"
#include "ccsynth/runtime/Layout.h"

#include <cstdarg>
#include <cstdint>
#include <cstdio>

namespace ccsynth::rt {

inline ccsynthResult reportError(ccsynthError *err, ccsynthResult result,
                                 int rank, const char *fmt, ...) {
  if (err) {
    err->result = result;
    err->rank = rank;
    err->threadblock = -1;
    err->step = -1;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
  }
  return result;
}

/// How a rank's input sits relative to its output in an in-place call, in
/// blocks (allgather/gather: the input is the rank's block of the output;
/// reducescatter/scatter: the output is the rank's block of the input).
inline long inPlaceBlockOffset(const Shape &s, int rank) {
  switch (s.coll) {
  case Coll::AllGather:
  case Coll::Gather:
    return rank;
  case Coll::ReduceScatter:
  case Coll::Scatter:
    return -rank;
  default:
    return 0;
  }
}

/// Checks a launch; on success fills `blockCount` (elements per block) and
/// `inBlockOffset`.
inline ccsynthResult checkLaunch(const Shape &s, std::uint64_t tileBytes,
                                 std::uint32_t dtypeMask, std::uint32_t opMask,
                                 const ccsynthLaunchArgs *a,
                                 std::size_t &blockCount, long &inBlockOffset) {
  if (!a)
    return ccsynthInvalidArgument;
  ccsynthError *err =
      a->struct_size >= sizeof(ccsynthLaunchArgs) ? a->error : nullptr;
  if (a->struct_size < sizeof(ccsynthLaunchArgs))
    return ccsynthInvalidArgument;
  int rank = a->rank;
  if (rank < 0 || rank >= s.ranks)
    return reportError(err, ccsynthInvalidArgument, rank,
                       "%s: rank %d out of range (the algorithm has %d ranks)",
                       s.name, rank, s.ranks);
  int es = dtypeSize(a->dtype);
  if (es == 0 || !(dtypeMask & (1u << a->dtype)))
    return reportError(err, ccsynthUnsupported, rank,
                       "%s: data type %d is not built into this plugin", s.name,
                       a->dtype);
  if (s.reduces &&
      (a->op < 0 || a->op >= ccsynthNumOps || !(opMask & (1u << a->op))))
    return reportError(err, ccsynthUnsupported, rank,
                       "%s: reduction operator %d is not built into this "
                       "plugin",
                       s.name, a->op);
  if (a->count % std::size_t(s.countMultiple) != 0)
    return reportError(err, ccsynthInvalidArgument, rank,
                       "%s: count %zu is not a multiple of %d (the custom "
                       "collective's input chunks)",
                       s.name, a->count, s.countMultiple);
  blockCount = a->count / std::size_t(s.countMultiple);
  std::uint64_t need = scratchBytes(s, tileBytes);
  if (need > 0 && (!a->scratch || a->scratch_bytes < need ||
                   reinterpret_cast<std::uintptr_t>(a->scratch) % 16 != 0))
    return reportError(err, ccsynthInvalidArgument, rank,
                       "%s: needs %llu bytes of 16-byte aligned scratch, got "
                       "%llu at %p",
                       s.name, (unsigned long long)need,
                       (unsigned long long)a->scratch_bytes, a->scratch);
  bool needsSend = !((s.coll == Coll::Broadcast || s.coll == Coll::Scatter) &&
                     rank != s.root);
  if (a->count > 0 && (!a->recvbuff || (needsSend && !a->sendbuff)))
    return reportError(err, ccsynthInvalidArgument, rank,
                       "%s: null buffer (sendbuff %p, recvbuff %p)", s.name,
                       a->sendbuff, a->recvbuff);
  if (reinterpret_cast<std::uintptr_t>(a->sendbuff) % es != 0 ||
      reinterpret_cast<std::uintptr_t>(a->recvbuff) % es != 0)
    return reportError(err, ccsynthInvalidArgument, rank,
                       "%s: buffers are not aligned to the %d-byte element",
                       s.name, es);
  std::uint64_t blockBytes = std::uint64_t(blockCount) * es;
  std::uint64_t inBytes = blockBytes * s.inBlocks;
  std::uint64_t outBytes = blockBytes * s.outBlocks;
  std::uintptr_t in = reinterpret_cast<std::uintptr_t>(a->sendbuff);
  std::uintptr_t out = reinterpret_cast<std::uintptr_t>(a->recvbuff);
  inBlockOffset = 0;
  if (s.inplace) {
    long off = inPlaceBlockOffset(s, rank);
    if (a->count > 0 && needsSend &&
        in != out + std::intptr_t(off) * std::intptr_t(blockBytes))
      return reportError(err, ccsynthInvalidArgument, rank,
                         "%s: an in-place algorithm needs sendbuff == "
                         "recvbuff %+ld x %llu bytes on rank %d",
                         s.name, off, (unsigned long long)blockBytes, rank);
    inBlockOffset = off;
  } else if (a->count > 0 && needsSend && in < out + outBytes &&
             out < in + inBytes) {
    return reportError(err, ccsynthInvalidArgument, rank,
                       "%s: an out-of-place algorithm was given overlapping "
                       "buffers (an in-place call?)",
                       s.name);
  }
  std::size_t tileElems = tileBytes / es;
  std::uint64_t passes =
      (blockCount / s.blockChunks + tileElems - 1) / tileElems + 1;
  if (passes * std::uint64_t(s.maxSteps + 1) >= (1ull << 32))
    return reportError(err, ccsynthInvalidArgument, rank,
                       "%s: count %zu needs %llu passes, more than the flag "
                       "encoding allows",
                       s.name, a->count, (unsigned long long)passes);
  return ccsynthSuccess;
}

} // namespace ccsynth::rt
