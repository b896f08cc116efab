//===- Ring.cpp - NCCL-style ring schedules -----------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// One ring per disjoint Hamiltonian ring of the topology (findRings), each
// carrying an equal share of the data, as NCCL spreads a collective over
// its channels. AllGather passes every rank's chunk n-1 hops along the
// ring; ReduceScatter accumulates each rank's chunk over the n-1 hops that
// end at it; AllReduce is ReduceScatter then AllGather on n blocks per ring;
// Broadcast and Reduce pipeline chunks along the ring opened at the root;
// AllToAll relays every chunk along the ring from its source to its
// destination through scratch (the ring all-to-all of MPI libraries: each
// link carries n(n-1)/2 chunks per ring, so it only pays on machines
// without direct paths).
//
//===----------------------------------------------------------------------===//
#include "BaselineBuilder.h"

#include "ccsynth/Baselines/Rings.h"

#include <climits>

namespace ccsynth::baseline {

Expected<Schedule> makeRingBaseline(CollectiveKind kind, const Topology &topo,
                                    const BaselineOptions &options) {
  int n = topo.numRanks();
  bool chain =
      kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce;
  bool localAddsKind = kind == CollectiveKind::ReduceScatter ||
                       (kind == CollectiveKind::AllReduce && !options.inPlace);
  // The chunk factor is rings x pipeline (x n for AllReduce), so the size
  // of the collective's conditions is known before any ring is searched:
  // refuse at once when even one ring is too large, and search no more
  // rings than fit (on 4,096 ranks one ring's AllGather fits, two do not).
  auto factorOf = [&](int rings) {
    int pipeline = pipelineOr(
        options, chain ? 2 * n : (localAddsKind && rings == 1 ? 2 : 1));
    long long f = (long long)rings * pipeline;
    if (kind == CollectiveKind::AllReduce)
      f *= n;
    return f > INT_MAX ? INT_MAX : (int)f;
  };
  // The transfers the rings carry, at the least (every chunk's hops
  // around its ring): also known before the search.
  auto leastTransfers = [&](int rings) {
    double hops = (double)n * (n - 1);
    double perChunk = kind == CollectiveKind::AllGather ||
                              kind == CollectiveKind::ReduceScatter
                          ? hops
                      : kind == CollectiveKind::AllReduce ? 2 * hops
                      : kind == CollectiveKind::AllToAll  ? hops * n / 2
                      : chain                             ? n - 1.0
                                                          : 0.0;
    double per = kind == CollectiveKind::AllReduce ? (double)factorOf(rings) / n
                                                   : (double)factorOf(rings);
    return perChunk * per;
  };
  // Too large even on one ring: `what` is the excess, `then` what follows
  // it; the pipeline depth is named where it is part of the cause.
  auto oneRingRefused = [&](const std::string &what, const std::string &then) {
    bool piped = options.pipeline > 1;
    return Error(what + " with a single ring" +
                 (piped ? " and --pipeline " + std::to_string(options.pipeline)
                        : std::string()) +
                 then + "; use " + (piped ? "a smaller pipeline depth, " : "") +
                 "another baseline or fewer ranks");
  };
  if (double least = leastTransfers(1); least > (double)kMaxBaselineTransfers)
    return oneRingRefused("a ring " + std::string(toString(kind)) + " over " +
                              std::to_string(n) + " ranks needs at least " +
                              std::to_string((long long)least) + " transfers",
                          ", more than the " +
                              std::to_string(kMaxBaselineTransfers) +
                              " a schedule may hold");
  if (auto why = conditionsTooLarge(kind, n, factorOf(1)))
    return oneRingRefused(*why, "");
  RingSearchOptions search;
  int fitting = 1;
  while (fitting < search.maxRings &&
         !conditionsTooLarge(kind, n, factorOf(fitting + 1)) &&
         leastTransfers(fitting + 1) <= (double)kMaxBaselineTransfers)
    ++fitting;
  if (options.maxRings > 0)
    fitting = std::min(fitting, options.maxRings);
  search.maxRings = std::min(search.maxRings, fitting);
  RingSet ringSet = findRings(topo, search);
  if ((int)ringSet.rings.size() > fitting)
    ringSet.rings.resize(fitting);
  const std::vector<std::vector<int>> &rings = ringSet.rings;
  int numRings = (int)rings.size();
  // Chains need many chunks in flight to fill their n-1 hops; the
  // bandwidth-optimal ring collectives keep every link busy with one chunk
  // per step. Except: where a hop lands as a copy that the rank must add its
  // own input to before forwarding (reductions into scratch or out of
  // place), a single ring's links would idle during that addition; two
  // chunks per block overlap it with the next chunk's transfer. With
  // several rings the other rings' transfers fill the gap.
  bool localAdds = kind == CollectiveKind::ReduceScatter ||
                   (kind == CollectiveKind::AllReduce && !options.inPlace);
  int pipeline =
      pipelineOr(options, chain ? 2 * n : (localAdds && numRings == 1 ? 2 : 1));
  int factor = numRings * pipeline;
  if (kind == CollectiveKind::AllReduce)
    factor *= n;
  auto col = makeCollective(kind, n, factor, options.inPlace, options.root);
  if (!col)
    return col.error();
  ScheduleBuilder b(topo, col.take(), options.until);
  int c = factor, root = options.root;
  // position[q][rank]: where the rank sits on ring q.
  std::vector<std::vector<int>> position(numRings, std::vector<int>(n));
  for (int q = 0; q < numRings; ++q)
    for (int i = 0; i < n; ++i)
      position[q][rings[q][i]] = i;

  for (int q = 0; q < numRings; ++q) {
    const std::vector<int> &ring = rings[q];
    b.setChannel(q);
    for (int p = 0; p < pipeline; ++p) {
      switch (kind) {
      case CollectiveKind::AllGather: {
        int k = q * pipeline + p;
        for (int r = 0; r < n; ++r) {
          b.copyLocal(b.input(r, k), b.output(r, r * c + k));
          std::vector<int> path = rotated(ring, position[q][r]);
          broadcastChain(b, path, b.input(r, k),
                         [&](int i) { return b.output(path[i], r * c + k); });
        }
        break;
      }
      case CollectiveKind::ReduceScatter: {
        int k = q * pipeline + p;
        for (int d = 0; d < n; ++d) {
          // The chunk for rank d starts right after it and ends at it,
          // accumulating in scratch on the ranks in between.
          std::vector<int> path = rotated(ring, position[q][d] + 1);
          std::vector<ChunkLoc> acc;
          for (int i = 0; i + 1 < n; ++i)
            acc.push_back(i == 0 ? b.input(path[0], d * c + k)
                                 : b.scratch(path[i]));
          acc.push_back(b.output(d, k));
          reduceChain(
              b, path, [&](int i) { return b.input(path[i], d * c + k); },
              [&](int i) { return acc[i]; });
        }
        break;
      }
      case CollectiveKind::AllReduce: {
        for (int j = 0; j < n; ++j) {
          int k = (q * n + j) * pipeline + p;
          std::vector<int> up = rotated(ring, j + 1);
          reduceChain(
              b, up, [&](int i) { return b.input(up[i], k); },
              [&](int i) { return b.output(up[i], k); });
          // The block's chunks travel the AllGather together, once all are
          // reduced: one latency per hop instead of one per chunk.
          if (p + 1 < pipeline)
            continue;
          int first = (q * n + j) * pipeline;
          std::vector<int> down = rotated(ring, j);
          broadcastChain(
              b, down, b.output(ring[j], first),
              [&](int i) { return b.output(down[i], first); }, pipeline);
        }
        break;
      }
      case CollectiveKind::Broadcast: {
        int k = q * pipeline + p;
        b.copyLocal(b.input(root, k), b.output(root, k));
        std::vector<int> path = rotated(ring, position[q][root]);
        broadcastChain(b, path, b.input(root, k),
                       [&](int i) { return b.output(path[i], k); });
        break;
      }
      case CollectiveKind::Reduce: {
        int k = q * pipeline + p;
        std::vector<int> path = rotated(ring, position[q][root] + 1);
        std::vector<ChunkLoc> acc;
        for (int i = 0; i + 1 < n; ++i)
          acc.push_back(i == 0 ? b.input(path[0], k) : b.scratch(path[i]));
        acc.push_back(b.output(root, k));
        reduceChain(
            b, path, [&](int i) { return b.input(path[i], k); },
            [&](int i) { return acc[i]; });
        break;
      }
      case CollectiveKind::AllToAll: {
        int k = q * pipeline + p;
        for (int src = 0; src < n; ++src)
          b.copyLocal(b.input(src, src * c + k), b.output(src, src * c + k));
        // In place a chunk arriving at its destination would overwrite one
        // that rank has yet to send: it lands in scratch and is copied into
        // place after every send.
        std::vector<std::pair<ChunkLoc, ChunkLoc>> landed;
        // Nearest destinations first: every hop of a step then uses a
        // different link.
        for (int dist = 1; dist < n; ++dist)
          for (int src = 0; src < n; ++src) {
            std::vector<int> path = rotated(ring, position[q][src]);
            int dst = path[dist];
            ChunkLoc at = b.input(src, dst * c + k);
            ChunkLoc out = b.output(dst, src * c + k);
            for (int i = 1; i <= dist; ++i) {
              ChunkLoc next = i == dist && !options.inPlace
                                  ? out
                                  : b.scratch(path[i]);
              b.copy(at, next);
              at = next;
            }
            if (options.inPlace)
              landed.push_back({at, out});
          }
        for (auto [from, to] : landed)
          b.copyLocal(from, to);
        break;
      }
      default:
        return Error(std::string("the ring baseline does not implement ") +
                     toString(kind));
      }
    }
  }
  return b.finish(baselineName(BaselineKind::Ring, kind), "baseline:ring");
}

} // namespace ccsynth::baseline
