//===- Decide.h - Which collective runs a plugin: the decision alone ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The interposer's choice for one collective call, as a pure function of
// what the call and the loaded plugins say, so that it can be tested
// without NCCL, CUDA or several processes.
//
// Every rank of a communicator must decide the same way, or some ranks
// run a plugin while the others wait in NCCL. So the decision reads only
// values all ranks share: the collective, rank count, count, dtype, op,
// root, the plugins (the same CCSYNTH_PLUGINS on every rank, checked when
// the ranks join), the staging limits (the same environment) and the state
// of the communicator's windows (set up collectively). Two facts are local
// but uniform in any working job: whether the buffers are device memory
// and whether the stream is being captured into a CUDA graph (NCCL itself
// requires both to agree across ranks). Rank, buffer addresses and whether
// the call is in place never decide: outputs are staged through windows,
// so an algorithm of either placement serves both (how it is staged is
// `placement`, a per-rank detail that never changes the choice).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/ccsynth_plugin.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ccsynth::interposer {

/// Where the call's buffers are. Mixed calls (one host, one device) go to
/// NCCL.
enum class Memory { Host, Device, Mixed };

/// One collective call as every rank sees it, plus the local facts a test
/// varies to show they do not decide.
struct CallFacts {
  std::string collective; ///< ccsynth's name: allreduce, allgather, ...
  int nranks = 0;
  std::uint64_t count = 0;
  int dtype = 0; ///< ncclDataType_t
  int op = 0;    ///< ncclRedOp_t (ncclSum for collectives without one)
  int root = -1; ///< -1 when not rooted
  Memory memory = Memory::Host;
  bool capturing = false; ///< the stream is capturing a CUDA graph
  // Local, never deciding:
  int rank = 0;
  const void *send = nullptr;
  const void *recv = nullptr;
};

/// One loaded algorithm.
struct AlgoFacts {
  const ccsynthAlgorithm *desc = nullptr;
  std::string plugin;    ///< its path, for messages
  bool ipcComms = false; ///< the plugin exports the CUDA IPC comm entries
};

/// What the communicator's state allows (the same on every rank).
struct CommFacts {
  std::uint64_t hostStaging = 0;   ///< bytes per buffer of the shm window
  std::uint64_t deviceStaging = 0; ///< bytes of the device window's output
  bool hostWindowUsable = true;    ///< false: `hostUnusable` says why
  std::string hostUnusable;
  /// The device (IPC) window of the algorithm's plugin: set up, or not yet
  /// (it is set up collectively at the first call that needs it, never
  /// under graph capture), or unusable (`deviceUnusable` says why).
  enum class Device { NotYet, Ready, Unusable };
  Device device = Device::NotYet;
  std::string deviceUnusable;
};

struct Decision {
  int algo = -1;      ///< index into the algorithms, or -1: NCCL runs it
  bool cuda = false;  ///< the CUDA IPC path (else the host shm path)
  std::string reason; ///< why (which plugin, or why NCCL)
};

/// Blocks of `count` elements in the input (`in`) or output buffer of a
/// rank for `collective` on `n` ranks (allgather: 1 in, n out).
int unitsOf(const std::string &collective, int n, bool in);

/// Bytes of the larger buffer of the call (allgather: its output, count x
/// ranks elements; reducescatter: its input; others: count elements).
std::uint64_t largerBufferBytes(const CallFacts &c);

/// The decision for `c`. `comm(i)` gives the communicator's facts for
/// algorithm i (the device window is per plugin).
template <class CommOf>
Decision decideEach(const CallFacts &c, const std::vector<AlgoFacts> &algos,
                    CommOf &&comm);

/// The same with one CommFacts for every algorithm.
Decision decide(const CallFacts &c, const std::vector<AlgoFacts> &algos,
                const CommFacts &comm);

/// Why algorithm `a` does not serve `c`, or "" when it does.
std::string mismatch(const CallFacts &c, const AlgoFacts &a,
                     const CommFacts &comm);

template <class CommOf>
Decision decideEach(const CallFacts &c, const std::vector<AlgoFacts> &algos,
                    CommOf &&comm) {
  Decision d;
  if (c.dtype < 0 || c.dtype >= ccsynthNumTypes) {
    d.reason =
        "data type " + std::to_string(c.dtype) + " has no ccsynth equivalent";
    return d;
  }
  if (c.memory == Memory::Mixed) {
    d.reason = "one buffer is device memory and the other is not";
    return d;
  }
  bool device = c.memory == Memory::Device;
  std::string closest;
  int candidates = 0;
  for (std::size_t i = 0; i < algos.size(); ++i) {
    const ccsynthAlgorithm &g = *algos[i].desc;
    bool cudaAlgo = g.backend == ccsynthBackendCuda;
    if (cudaAlgo != device || g.ranks != c.nranks ||
        c.collective != g.collective)
      continue;
    ++candidates;
    std::string why = mismatch(c, algos[i], comm(i));
    if (why.empty()) {
      d.algo = int(i);
      d.cuda = device;
      d.reason = "plugin " + algos[i].plugin + " algorithm " + g.name;
      return d;
    }
    if (closest.empty())
      closest = std::string(g.name) + ": " + why;
  }
  if (!closest.empty()) {
    d.reason = closest;
    return d;
  }
  d.reason = std::string("no ") + (device ? "CUDA" : "host") +
             " plugin algorithm for " + c.collective + " on " +
             std::to_string(c.nranks) + " ranks" +
             (device ? " (device buffers run CUDA-backend plugins only)"
                     : " (host buffers run host-backend plugins only)");
  return d;
}

/// How one rank stages a CUDA call (local: never part of the decision).
struct Placement {
  bool inputInPlace = false; ///< the kernel reads the user's sendbuff
  std::string describe() const;
};
Placement placement(const ccsynthAlgorithm &g);

} // namespace ccsynth::interposer
