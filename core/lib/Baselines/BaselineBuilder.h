//===- BaselineBuilder.h - Emits routed, race-free baseline transfers -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Private to the baselines. A ScheduleBuilder takes transfers in program
// order (each sees the effect of every transfer emitted before it) and gives
// each the earliest step that keeps that meaning under the verifier's step
// rules: after the last write of every slot it reads, after the last write
// and the last read of every slot it writes. Steps therefore equal
// dependency depth, which is also the order the simulator runs a link's
// transfers in, so pipelines come out interleaved without bookkeeping in the
// algorithms. Hops between ranks that share no link are forwarded along
// Topology::route through fresh scratch chunks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ccsynth::baseline {

/// bestLinks(t)[s * n + d]: the link Topology::bestLink(s, d) picks, or -1;
/// computed in one pass over the links.
std::vector<int> bestLinks(const Topology &topology);

class ScheduleBuilder {
public:
  /// With `until`, building stops (finish() returns an error naming the
  /// time limit) once that instant has passed.
  ScheduleBuilder(
      const Topology &topology, Collective collective,
      std::optional<std::chrono::steady_clock::time_point> until = {});

  const Topology &topology() const { return topo; }
  const Collective &collective() const { return sched.collective; }
  int numRanks() const { return sched.collective.numRanks; }
  int chunkFactor() const { return sched.collective.chunkFactor; }

  ChunkLoc input(int rank, int index) const {
    return {rank, BufferKind::Input, index};
  }
  ChunkLoc output(int rank, int index) const {
    return {rank, BufferKind::Output, index};
  }
  /// Allocates `count` consecutive fresh scratch chunks on `rank`.
  ChunkLoc scratch(int rank, int count = 1);
  /// True when the two slots are one under the collective's in-place
  /// aliasing.
  bool aliases(ChunkLoc a, ChunkLoc b) const;
  bool adjacent(int src, int dst) const {
    return links[(size_t)src * numRanks() + dst] >= 0;
  }

  /// Lowering hint stamped on the transfers emitted from now on.
  void setChannel(int channel) { currentChannel = channel; }
  /// The transfers emitted from now on get at least this step: a pipeline
  /// whose chunk q starts at step q runs as a wavefront (a link carries its
  /// transfers in step order, so chunks that all start at step 0 would
  /// pass each link phase by phase).
  void setMinStep(int step) { minStep = step; }

  /// Copies within one rank, unless the slots alias (then nothing to do).
  void copyLocal(ChunkLoc src, ChunkLoc dst, int count = 1);
  /// Moves `count` chunks from src to dst, combining with `op` at the
  /// destination; forwarded through scratch when the ranks share no link.
  void send(ChunkLoc src, ChunkLoc dst, TransferOp op, int count = 1);
  void copy(ChunkLoc src, ChunkLoc dst, int count = 1) {
    send(src, dst, TransferOp::Copy, count);
  }
  void reduce(ChunkLoc src, ChunkLoc dst, int count = 1) {
    send(src, dst, TransferOp::Reduce, count);
  }

  /// One operation through switch `sw`: a SwitchReduce of every source
  /// into `ends[0]` (then `srcs` lists the sources), or a Multicast of
  /// `srcs[0]` to every destination in `ends`. All its members get one
  /// step, the earliest that keeps every one of them in order.
  void switchReduce(int sw, const std::vector<ChunkLoc> &srcs, ChunkLoc dst,
                    int count = 1);
  void multicast(int sw, ChunkLoc src, const std::vector<ChunkLoc> &dsts,
                 int count = 1);

  /// Names the schedule, verifies it against the topology and returns it;
  /// an unreachable pair or a failed verification is an Error.
  Expected<Schedule> finish(std::string name, std::string origin);

private:
  struct SlotState {
    int lastWrite = -1;
    int lastRead = -1;
  };

  const Topology &topo;
  Schedule sched;
  std::vector<int> links;
  /// prevFrom[src][v]: v's predecessor on the route from src (lazily).
  std::vector<std::vector<int>> prevFrom;
  std::vector<std::vector<int>> outLinks;
  /// state[rank * 3 + buffer][index], of canonical slots.
  std::vector<std::vector<SlotState>> state;
  std::vector<int> scratchUsed;
  int currentChannel = -1;
  int minStep = 0;
  std::optional<Error> failure;
  std::optional<std::chrono::steady_clock::time_point> until;
  bool pastDeadline();

  SlotState &slot(ChunkLoc loc);
  /// Topology::route(src, dst), computed per source for all destinations.
  std::vector<int> route(int src, int dst);
  /// One hop: a transfer between the same or adjacent ranks.
  void emit(ChunkLoc src, ChunkLoc dst, TransferOp op, int count);
  /// The members (source, destination) of one switch operation.
  void emitGroup(int sw, TransferOp op,
                 const std::vector<std::pair<ChunkLoc, ChunkLoc>> &members,
                 int count);
  /// Appends the members of one operation (one transfer, or a switch
  /// operation through `sw`) at the earliest step that keeps every member
  /// after what it reads and overwrites.
  void place(TransferOp op, int sw,
             std::span<const std::pair<ChunkLoc, ChunkLoc>> members, int count);
};

/// Slot of the chunk at a path position.
using SlotAt = std::function<ChunkLoc(int position)>;

/// Reduction along a chain: path[0] sends contrib(0) to path[1], which
/// combines it with its contrib(1) in acc(1) and forwards acc(1), and so on;
/// the sum of every position's contribution ends in acc(last). A hop
/// reduces straight into acc(p) when that aliases contrib(p); otherwise it
/// lands as a copy and contrib(p) is added locally. A one-rank path copies
/// contrib(0) into acc(0).
void reduceChain(ScheduleBuilder &b, const std::vector<int> &path,
                 const SlotAt &contrib, const SlotAt &acc, int count = 1);

/// Pipelined copy along a chain: path[0] sends `src` to slot(1), path[1]
/// forwards slot(1) to slot(2), and so on.
void broadcastChain(ScheduleBuilder &b, const std::vector<int> &path,
                    ChunkLoc src, const SlotAt &slot, int count = 1);

/// The ring read from position `start` onwards (all of it).
std::vector<int> rotated(const std::vector<int> &ring, int start);

/// A rooted tree over some ranks: parent[i] of the ranks in `members`.
struct Tree {
  int root = -1;
  /// parent[rank] or -1 (root and ranks outside the tree).
  std::vector<int> parent;
  /// children[rank], in the order they were attached.
  std::vector<std::vector<int>> children;
  /// Ranks ordered so that a parent precedes its children.
  std::vector<int> preorder;
};

/// Completes `children` and `preorder` from `parent` and `root`; false when
/// `parent` does not describe a tree spanning `members`.
bool finishTree(Tree &tree, const std::vector<int> &members);

/// Collective::builtin, after checking that the collective and its
/// symbolic verification stay a reasonable size (a reduction's
/// postcondition lists every rank's value for every output chunk, so it
/// grows as ranks^2 x chunk factor).
Expected<Collective> makeCollective(CollectiveKind kind, int ranks,
                                    int chunkFactor, bool inPlace, int root);

/// Why the collective's conditions are too large to build and verify
/// (what makeCollective refuses, without its advice), or nothing when they
/// fit: known before anything is searched or built.
std::optional<std::string> conditionsTooLarge(CollectiveKind kind, int ranks,
                                              int chunkFactor);
/// Bound on a baseline's size, so that a huge topology or pipeline depth
/// fails with a message instead of exhausting memory (a transfer is ~60
/// bytes, and the verifier and simulator keep per-transfer state too).
inline constexpr size_t kMaxBaselineTransfers = size_t(1) << 22;

/// The pipelining depth asked for, or `fallback` when the options leave it
/// to the baseline.
inline int pipelineOr(const BaselineOptions &options, int fallback) {
  return options.pipeline > 0 ? options.pipeline : fallback;
}

/// Builders of each family, for a collective the family supports on the
/// topology (makeBaseline has checked the options).
Expected<Schedule> makeRingBaseline(CollectiveKind kind, const Topology &topo,
                                    const BaselineOptions &options);
Expected<Schedule> makeTreeBaseline(CollectiveKind kind, const Topology &topo,
                                    const BaselineOptions &options);
Expected<Schedule> makeDirectBaseline(CollectiveKind kind, const Topology &topo,
                                      const BaselineOptions &options);
Expected<Schedule> makeHierarchicalBaseline(CollectiveKind kind,
                                            const Topology &topo,
                                            const BaselineOptions &options);
Expected<Schedule> makeNvlsBaseline(CollectiveKind kind, const Topology &topo,
                                    const BaselineOptions &options);
Expected<Schedule> makeCollnetBaseline(CollectiveKind kind,
                                       const Topology &topo,
                                       const BaselineOptions &options);
Expected<Schedule> makeNvlsSharpBaseline(CollectiveKind kind,
                                         const Topology &topo,
                                         const BaselineOptions &options);
Expected<Schedule> makeCollnetChainBaseline(CollectiveKind kind,
                                            const Topology &topo,
                                            const BaselineOptions &options);

/// The ranks of each node, in rank order.
std::vector<std::vector<int>> ranksByNode(const Topology &topo);

/// The IB SHARP switch with a port for every rank, in rank order, or -1.
int sharpSwitchOf(const Topology &topo);
/// Whether every GPU of a node reaches that switch through a NIC of its
/// own (distinct up and down resources): NCCL runs AllGather and
/// ReduceScatter through SHARP only then (one GPU per NIC).
bool sharpRailsPerGpu(const Topology &topo);

/// Per node, the NVLS switch joining exactly its ranks; empty unless every
/// node has one and all nodes have as many ranks.
std::vector<int> nvlsSwitchesOf(const Topology &topo);
/// Whether the nvls baseline builds `kind` on `topo`: AllReduce wherever
/// every node has its NVLS switch (NVLS-tree on several nodes),
/// ReduceScatter and AllGather on one node.
bool nvlsSupports(CollectiveKind kind, const Topology &topo);

/// Chunk q of slice k of a per-slice in-network baseline on nodes of g
/// ranks each: chunk k * p + q of the buffer, slice k owned by each node's
/// local rank k.
struct SliceChunk {
  int k;
  int q;
  int index;
};
using SliceBody = std::function<void(
    ScheduleBuilder &, const std::vector<std::vector<int>> &ranksByNode,
    SliceChunk)>;
/// Builds `kind` on nodes of equal size with the buffer cut into one slice
/// per local rank and `options.pipeline` chunks per slice (16 by default):
/// `body` emits each chunk, chunk 0 of every slice first.
Expected<Schedule> buildSliced(CollectiveKind kind, const Topology &topo,
                               const BaselineOptions &options,
                               BaselineKind family, const SliceBody &body);

/// Node switch `sw` reduces every copy of chunks `index` .. `index` +
/// `count` - 1 on the node's `ranks` into the output of `owner`.
void nvlsReduceInto(ScheduleBuilder &b, int sw, const std::vector<int> &ranks,
                    int owner, int index, int count = 1);
/// Node switch `sw` multicasts `owner`'s output chunks `index` .. `index` +
/// `count` - 1 to the outputs of the node's other `ranks`.
void nvlsMulticastFrom(ScheduleBuilder &b, int sw,
                       const std::vector<int> &ranks, int owner, int index,
                       int count = 1);

/// "ring-allreduce".
std::string baselineName(BaselineKind kind, CollectiveKind collective);

} // namespace ccsynth::baseline
