//===- Hierarchical.cpp - Intra-node then inter-node schedules ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The two-level algorithms of Horovod/BlueConnect-style hierarchical
// collectives: the ranks of one node talk over a ring inside the node, and
// ranks with the same local index in different nodes ("rails") talk over a
// ring across nodes, so only 1/G of the data crosses each NIC.
//   AllReduce:     intra-node ReduceScatter, rail AllReduce, intra AllGather
//   AllGather:     rail AllGather, then intra-node AllGather of it all
//   ReduceScatter: intra-node ReduceScatter, then rail ReduceScatter
//   AllToAll:      intra-node exchange by destination local index, then
//                  rail exchange to the destination node
// Needs at least two nodes with the same number of ranks each.
//
//===----------------------------------------------------------------------===//
#include "BaselineBuilder.h"

#include "ccsynth/Baselines/Rings.h"

#include <algorithm>

namespace ccsynth::baseline {

namespace {

int indexOf(const std::vector<int> &v, int x) {
  return (int)(std::find(v.begin(), v.end(), x) - v.begin());
}

} // namespace

Expected<Schedule> makeHierarchicalBaseline(CollectiveKind kind,
                                            const Topology &topo,
                                            const BaselineOptions &options) {
  int n = topo.numRanks(), nodes = topo.numNodes();
  std::vector<std::vector<int>> local(nodes), ring(nodes);
  std::vector<int> best = bestLinks(topo);
  for (int m = 0; m < nodes; ++m) {
    local[m] = topo.ranksOfNode(m);
    if (local[m].size() != local[0].size())
      return Error("the hierarchical baseline needs the same number of ranks "
                   "in every node of '" +
                   topo.name + "'");
    ring[m] = findRings(topo, local[m], best).rings.front();
  }
  int g = (int)local[0].size();
  // rail[i]: the ranks with local index i, one per node in node order.
  std::vector<std::vector<int>> rail(g);
  for (int i = 0; i < g; ++i)
    for (int m = 0; m < nodes; ++m)
      rail[i].push_back(local[m][i]);
  std::vector<int> nodeOf(n), localOf(n);
  for (int m = 0; m < nodes; ++m)
    for (int i = 0; i < g; ++i) {
      nodeOf[local[m][i]] = m;
      localOf[local[m][i]] = i;
    }

  int pipeline = pipelineOr(options, 1);
  int factor =
      kind == CollectiveKind::AllReduce ? g * nodes * pipeline : pipeline;
  auto col = makeCollective(kind, n, factor, options.inPlace, 0);
  if (!col)
    return col.error();
  ScheduleBuilder b(topo, col.take(), options.until);
  int c = factor;

  switch (kind) {
  case CollectiveKind::AllReduce: {
    // Chunk (i, s, p): block i ends on local rank i of every node, its
    // sub-block s on node s of the rail.
    auto chunk = [&](int i, int s, int p) {
      return (i * nodes + s) * pipeline + p;
    };
    for (int m = 0; m < nodes; ++m)
      for (int i = 0; i < g; ++i) {
        std::vector<int> up =
            rotated(ring[m], indexOf(ring[m], local[m][i]) + 1);
        for (int s = 0; s < nodes; ++s)
          for (int p = 0; p < pipeline; ++p) {
            int k = chunk(i, s, p);
            reduceChain(
                b, up, [&](int x) { return b.input(up[x], k); },
                [&](int x) { return b.output(up[x], k); });
          }
      }
    for (int i = 0; i < g; ++i)
      for (int s = 0; s < nodes; ++s) {
        std::vector<int> up = rotated(rail[i], s + 1);
        std::vector<int> down = rotated(rail[i], s);
        for (int p = 0; p < pipeline; ++p) {
          int k = chunk(i, s, p);
          auto out = [&](const std::vector<int> &path) {
            return [&b, &path, k](int x) { return b.output(path[x], k); };
          };
          reduceChain(b, up, out(up), out(up));
          broadcastChain(b, down, b.output(rail[i][s], k), out(down));
        }
      }
    for (int m = 0; m < nodes; ++m)
      for (int i = 0; i < g; ++i) {
        int owner = local[m][i];
        std::vector<int> down = rotated(ring[m], indexOf(ring[m], owner));
        for (int s = 0; s < nodes; ++s)
          for (int p = 0; p < pipeline; ++p) {
            int k = chunk(i, s, p);
            broadcastChain(b, down, b.output(owner, k),
                           [&](int x) { return b.output(down[x], k); });
          }
      }
    break;
  }
  case CollectiveKind::AllGather:
    for (int i = 0; i < g; ++i)
      for (int m = 0; m < nodes; ++m) {
        int r = rail[i][m];
        std::vector<int> path = rotated(rail[i], m);
        for (int k = 0; k < c; ++k) {
          b.copyLocal(b.input(r, k), b.output(r, r * c + k));
          broadcastChain(b, path, b.input(r, k),
                         [&](int x) { return b.output(path[x], r * c + k); });
        }
      }
    for (int m = 0; m < nodes; ++m)
      for (int i = 0; i < g; ++i) {
        int holder = local[m][i];
        std::vector<int> path = rotated(ring[m], indexOf(ring[m], holder));
        for (int src : rail[i])
          for (int k = 0; k < c; ++k)
            broadcastChain(b, path, b.output(holder, src * c + k), [&](int x) {
              return b.output(path[x], src * c + k);
            });
      }
    break;
  case CollectiveKind::ReduceScatter: {
    // partial[d][m * c + k]: where node m's sum of rank d's chunk k ends.
    std::vector<std::vector<ChunkLoc>> partial(
        n, std::vector<ChunkLoc>(nodes * c));
    for (int m = 0; m < nodes; ++m)
      for (int i = 0; i < g; ++i) {
        int collector = local[m][i];
        std::vector<int> path =
            rotated(ring[m], indexOf(ring[m], collector) + 1);
        for (int d : rail[i])
          for (int k = 0; k < c; ++k) {
            std::vector<ChunkLoc> acc;
            for (int x = 0; x + 1 < g; ++x)
              acc.push_back(x == 0 ? b.input(path[0], d * c + k)
                                   : b.scratch(path[x]));
            acc.push_back(d == collector ? b.output(d, k)
                                         : b.scratch(collector));
            reduceChain(
                b, path, [&](int x) { return b.input(path[x], d * c + k); },
                [&](int x) { return acc[x]; });
            partial[d][m * c + k] = acc.back();
          }
      }
    for (int i = 0; i < g; ++i)
      for (int dn = 0; dn < nodes; ++dn) {
        int d = rail[i][dn];
        std::vector<int> path = rotated(rail[i], dn + 1);
        for (int k = 0; k < c; ++k) {
          auto part = [&](int x) {
            return partial[d][nodeOf[path[x]] * c + k];
          };
          reduceChain(b, path, part, part);
        }
      }
    break;
  }
  case CollectiveKind::AllToAll: {
    // Stage 1: rank s hands what is bound for (any node, local index j) to
    // its node's local rank j. In place, even its own share is staged,
    // because the outputs overwrite inputs still to be sent.
    std::vector<std::vector<ChunkLoc>> staged(n, std::vector<ChunkLoc>(n));
    for (int s = 0; s < n; ++s) {
      int m = nodeOf[s];
      for (int d = 0; d < n; ++d) {
        int via = local[m][localOf[d]];
        if (via == s && (!options.inPlace || d == s)) {
          staged[s][d] = b.input(s, d * c);
          continue;
        }
        staged[s][d] = b.scratch(via, c);
        b.copy(b.input(s, d * c), staged[s][d], c);
      }
    }
    // Stage 2: along the rail to the destination node.
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        ChunkLoc from = staged[s][d];
        if (from.rank == d)
          b.copyLocal(from, b.output(d, s * c), c);
        else
          b.copy(from, b.output(d, s * c), c);
      }
    break;
  }
  default:
    return Error(std::string("the hierarchical baseline does not implement ") +
                 toString(kind));
  }
  return b.finish(baselineName(BaselineKind::Hierarchical, kind),
                  "baseline:hierarchical");
}

} // namespace ccsynth::baseline
