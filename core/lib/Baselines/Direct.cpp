//===- Direct.cpp - All-pairs (direct) schedules ------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Every rank talks to every other rank at once. Reductions receive each
// peer's contribution into its own scratch slot, so the transfers run in
// parallel, and then add them locally; pairs without a link are forwarded
// through scratch on the route's ranks. AllReduce is a direct
// ReduceScatter followed by a direct AllGather of the reduced blocks.
//
//===----------------------------------------------------------------------===//
#include "BaselineBuilder.h"

namespace ccsynth::baseline {

namespace {

/// Sum into `dst` on rank `owner` of every rank's `count` chunks at
/// `srcIndex` of its input: peers land in scratch, then local reduces.
void gatherReduce(ScheduleBuilder &b, int owner, int srcIndex, ChunkLoc dst,
                  int count) {
  int n = b.numRanks();
  std::vector<ChunkLoc> received;
  for (int i = 1; i < n; ++i) {
    int s = (owner + i) % n;
    ChunkLoc tmp = b.scratch(owner, count);
    b.copy(b.input(s, srcIndex), tmp, count);
    received.push_back(tmp);
  }
  b.copyLocal(b.input(owner, srcIndex), dst, count);
  for (ChunkLoc tmp : received)
    b.reduce(tmp, dst, count);
}

} // namespace

Expected<Schedule> makeDirectBaseline(CollectiveKind kind, const Topology &topo,
                                      const BaselineOptions &options) {
  int n = topo.numRanks();
  int pipeline = pipelineOr(options, 1);
  int factor = kind == CollectiveKind::AllReduce ? n * pipeline : pipeline;
  auto col = makeCollective(kind, n, factor, options.inPlace, options.root);
  if (!col)
    return col.error();
  ScheduleBuilder b(topo, col.take(), options.until);
  int c = factor, root = options.root;
  // Peers in the order (r+1, r+2, ...), so that at any position of the
  // loops each rank talks to a different peer.
  auto peer = [n](int r, int i) { return (r + i) % n; };
  switch (kind) {
  case CollectiveKind::AllGather:
    for (int r = 0; r < n; ++r) {
      b.copyLocal(b.input(r, 0), b.output(r, r * c), c);
      for (int i = 1; i < n; ++i)
        b.copy(b.input(r, 0), b.output(peer(r, i), r * c), c);
    }
    break;
  case CollectiveKind::ReduceScatter:
    for (int d = 0; d < n; ++d)
      gatherReduce(b, d, d * c, b.output(d, 0), c);
    break;
  case CollectiveKind::AllReduce: {
    // Rank j owns block j of `pipeline` chunks.
    int block = pipeline;
    for (int j = 0; j < n; ++j)
      gatherReduce(b, j, j * block, b.output(j, j * block), block);
    for (int j = 0; j < n; ++j)
      for (int i = 1; i < n; ++i)
        b.copy(b.output(j, j * block), b.output(peer(j, i), j * block), block);
    break;
  }
  case CollectiveKind::AllToAll:
    if (!options.inPlace) {
      for (int s = 0; s < n; ++s) {
        b.copyLocal(b.input(s, s * c), b.output(s, s * c), c);
        for (int i = 1; i < n; ++i) {
          int d = peer(s, i);
          b.copy(b.input(s, d * c), b.output(d, s * c), c);
        }
      }
    } else {
      // In place a received chunk would overwrite one its rank has yet to
      // send: stage everything in scratch first.
      std::vector<std::vector<ChunkLoc>> staged(n, std::vector<ChunkLoc>(n));
      for (int s = 0; s < n; ++s)
        for (int i = 1; i < n; ++i) {
          int d = peer(s, i);
          staged[s][d] = b.scratch(d, c);
          b.copy(b.input(s, d * c), staged[s][d], c);
        }
      for (int d = 0; d < n; ++d)
        for (int i = 1; i < n; ++i) {
          int s = peer(d, i);
          b.copyLocal(staged[s][d], b.output(d, s * c), c);
        }
    }
    break;
  case CollectiveKind::Broadcast:
    b.copyLocal(b.input(root, 0), b.output(root, 0), c);
    for (int i = 1; i < n; ++i)
      b.copy(b.input(root, 0), b.output(peer(root, i), 0), c);
    break;
  case CollectiveKind::Reduce:
    gatherReduce(b, root, 0, b.output(root, 0), c);
    break;
  case CollectiveKind::Gather:
    b.copyLocal(b.input(root, 0), b.output(root, root * c), c);
    for (int i = 1; i < n; ++i) {
      int s = peer(root, i);
      b.copy(b.input(s, 0), b.output(root, s * c), c);
    }
    break;
  case CollectiveKind::Scatter:
    b.copyLocal(b.input(root, root * c), b.output(root, 0), c);
    for (int i = 1; i < n; ++i) {
      int d = peer(root, i);
      b.copy(b.input(root, d * c), b.output(d, 0), c);
    }
    break;
  case CollectiveKind::Custom:
    return Error("the direct baseline does not implement custom collectives");
  }
  return b.finish(baselineName(BaselineKind::Direct, kind), "baseline:direct");
}

} // namespace ccsynth::baseline
