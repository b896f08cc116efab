//===- Nvls.cpp - NVLink SHARP schedules, as NCCL's NVLS runs them
//-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// On one NVLS domain (an NVSwitch that reduces and multicasts) NCCL's NVLS
// algorithm gives each rank a slice of the buffer: the rank asks the switch
// for the sum of every rank's copy of its slice (multimem.ld_reduce) and
// writes the result to every rank at once (multimem.st). The slices are cut
// into `pipeline` chunks each (16 by default), which a rank's reductions
// and multicasts move one after another, the multicast of a chunk
// overlapping the reduction of the next (the simulator queues a rank's
// switch operations that way). ReduceScatter is the reduction half,
// AllGather the multicast half. Every address a switch operation touches
// is the same on each rank, as NVLS's multicast memory requires.
//
// On several nodes (NVLS-tree, AllReduce only) each node's switch reduces
// a slice into the slice's owner on that node, the owners of one slice on
// every node (one rail) combine their partial sums over the network along
// a chain of the nodes and spread the total back along it, and each node's
// switch multicasts it. NCCL runs a tree across nodes; a chain moves the
// same bytes per NIC (each node sends each slice's partial once and the
// total once) with a longer pipeline fill, and each chunk starts its chain
// at another node so that no NIC carries more than the others.
//
//===----------------------------------------------------------------------===//
#include "BaselineBuilder.h"

#include <numeric>

namespace ccsynth::baseline {

std::vector<std::vector<int>> ranksByNode(const Topology &topo) {
  std::vector<std::vector<int>> ranks(topo.numNodes());
  for (int r = 0; r < topo.numRanks(); ++r)
    ranks[topo.nodeOf[r]].push_back(r);
  return ranks;
}

std::vector<int> nvlsSwitchesOf(const Topology &topo) {
  int nodes = topo.numNodes();
  std::vector<int> of(nodes, -1);
  std::vector<std::vector<int>> ranks = ranksByNode(topo);
  for (size_t i = 0; i < topo.switches.size(); ++i) {
    const InNetworkSwitch &sw = topo.switches[i];
    if (sw.kind != SwitchKind::NVLS || sw.ports.empty())
      continue;
    int node = topo.nodeOf[sw.ports.front().rank];
    if (of[node] >= 0 || sw.ports.size() != ranks[node].size())
      continue;
    bool same = true;
    for (size_t k = 0; k < sw.ports.size() && same; ++k)
      same = sw.ports[k].rank == ranks[node][k];
    if (same)
      of[node] = (int)i;
  }
  for (int node = 0; node < nodes; ++node)
    if (of[node] < 0 || ranks[node].size() != ranks[0].size())
      return {};
  return of;
}

Expected<Schedule> buildSliced(CollectiveKind kind, const Topology &topo,
                               const BaselineOptions &options,
                               BaselineKind family, const SliceBody &body) {
  std::vector<std::vector<int>> ranks = ranksByNode(topo);
  int g = (int)ranks[0].size();
  int p = pipelineOr(options, 16);
  auto col = makeCollective(kind, topo.numRanks(), g * p, options.inPlace,
                            options.root);
  if (!col)
    return col.error();
  ScheduleBuilder b(topo, col.take(), options.until);
  for (int q = 0; q < p; ++q)
    for (int k = 0; k < g; ++k)
      body(b, ranks, SliceChunk{k, q, k * p + q});
  return b.finish(baselineName(family, kind),
                  std::string("baseline:") + toString(family));
}

void nvlsReduceInto(ScheduleBuilder &b, int sw, const std::vector<int> &ranks,
                    int owner, int index, int count) {
  std::vector<ChunkLoc> srcs;
  for (int r : ranks)
    srcs.push_back(b.input(r, index));
  b.switchReduce(sw, srcs, b.output(owner, index), count);
}

void nvlsMulticastFrom(ScheduleBuilder &b, int sw,
                       const std::vector<int> &ranks, int owner, int index,
                       int count) {
  std::vector<ChunkLoc> others;
  for (int r : ranks)
    if (r != owner)
      others.push_back(b.output(r, index));
  b.multicast(sw, b.output(owner, index), others, count);
}

bool nvlsSupports(CollectiveKind kind, const Topology &topo) {
  std::vector<int> sws = nvlsSwitchesOf(topo);
  if (sws.empty())
    return false;
  return kind == CollectiveKind::AllReduce ||
         (sws.size() == 1 && (kind == CollectiveKind::ReduceScatter ||
                              kind == CollectiveKind::AllGather));
}

namespace {

Expected<Schedule> makeNvlsTree(CollectiveKind kind, const Topology &topo,
                                const std::vector<int> &sws,
                                const BaselineOptions &options) {
  if (kind != CollectiveKind::AllReduce)
    return Error("the nvls baseline across nodes (NVLS-tree) implements "
                 "allreduce only, as NCCL's does");
  int nodes = (int)sws.size();
  return buildSliced(
      kind, topo, options, BaselineKind::Nvls,
      [&](ScheduleBuilder &b, const std::vector<std::vector<int>> &ranks,
          SliceChunk c) {
        int g = (int)ranks[0].size(), k = c.k, i = c.index;
        // Each node's switch reduces chunk i into the node's rank k.
        for (int m = 0; m < nodes; ++m)
          nvlsReduceInto(b, sws[m], ranks[m], ranks[m][k], i);
        // The rail of rank k combines the partials along a chain of nodes
        // that starts at another node for each chunk, and spreads the
        // total back along it.
        std::vector<int> chain;
        for (int m = 0; m < nodes; ++m)
          chain.push_back(ranks[(m + c.q * g + k) % nodes][k]);
        SlotAt at = [&](int pos) { return b.output(chain[pos], i); };
        reduceChain(b, chain, at, at);
        std::vector<int> back(chain.rbegin(), chain.rend());
        broadcastChain(b, back, b.output(back.front(), i),
                       [&](int pos) { return b.output(back[pos], i); });
        // Each node's switch multicasts the total from its rank k.
        for (int m = 0; m < nodes; ++m)
          nvlsMulticastFrom(b, sws[m], ranks[m], ranks[m][k], i);
      });
}

} // namespace

Expected<Schedule> makeNvlsBaseline(CollectiveKind kind, const Topology &topo,
                                    const BaselineOptions &options) {
  std::vector<int> sws = nvlsSwitchesOf(topo);
  if (sws.empty())
    return Error("the nvls baseline needs an NVLS switch joining the ranks "
                 "of every node; '" +
                 topo.name + "' has none");
  if (sws.size() > 1)
    return makeNvlsTree(kind, topo, sws, options);
  int sw = sws.front();
  int n = topo.numRanks();
  int p = pipelineOr(options, 16);
  int factor = kind == CollectiveKind::AllReduce ? n * p : p;
  auto col = makeCollective(kind, n, factor, options.inPlace, options.root);
  if (!col)
    return col.error();
  ScheduleBuilder b(topo, col.take(), options.until);
  auto every = [&](auto at) {
    std::vector<ChunkLoc> out;
    for (int r = 0; r < n; ++r)
      out.push_back(at(r));
    return out;
  };
  switch (kind) {
  case CollectiveKind::AllReduce: {
    // Chunk q of rank r's slice is chunk r * p + q of the buffer.
    std::vector<int> all(n);
    std::iota(all.begin(), all.end(), 0);
    for (int q = 0; q < p; ++q)
      for (int r = 0; r < n; ++r) {
        nvlsReduceInto(b, sw, all, r, r * p + q);
        nvlsMulticastFrom(b, sw, all, r, r * p + q);
      }
    break;
  }
  case CollectiveKind::ReduceScatter:
    for (int q = 0; q < p; ++q)
      for (int r = 0; r < n; ++r)
        b.switchReduce(sw, every([&](int j) { return b.input(j, r * p + q); }),
                       b.output(r, q));
    break;
  case CollectiveKind::AllGather:
    for (int q = 0; q < p; ++q)
      for (int r = 0; r < n; ++r) {
        std::vector<ChunkLoc> dsts;
        for (int j = 0; j < n; ++j)
          if (!b.aliases(b.input(r, q), b.output(j, r * p + q)))
            dsts.push_back(b.output(j, r * p + q));
        b.multicast(sw, b.input(r, q), dsts);
      }
    break;
  default:
    return Error("the nvls baseline does not implement " +
                 std::string(toString(kind)));
  }
  return b.finish(baselineName(BaselineKind::Nvls, kind), "baseline:nvls");
}

} // namespace ccsynth::baseline
