//===- Collnet.cpp - IB SHARP schedules, as NCCL's CollNet ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// NCCL's CollNet Direct AllReduce on nodes of g GPUs, each with its own
// NIC: the buffer is cut into g slices and local rank k is the "head" of
// slice k on its node. Every rank sends its copy of slice k straight to
// head k over NVLink, where it lands in scratch and is added; each head
// hands its node's partial sum to the network, whose SHARP switches add
// the partials of every node and return the total to every node's head;
// the head sends the total straight to its node's other ranks. Slices are
// cut into `pipeline` chunks (16 by default) that flow through the three
// phases one after another.
//
// The network phase is one switch reduction of the heads' partials into
// one head and one multicast of the total from it, a round trip through
// the fabric as SHARP's reduce-to-all is. Slice k's total always lands on
// node k mod nodes: its head's NIC takes the sum in and sends the total
// out while every other head's NIC does the reverse, so each NIC moves a
// chunk's worth each way per chunk, both directions at once, as under
// SHARP (a destination that moved with the chunk would receive the next
// sum while it still receives the last total, and leave its other
// direction idle).
//
// NCCL's NVLS algorithm on several nodes with CollNet support (NVLS +
// SHARP) keeps the network phase and replaces both NVLink phases with the
// node's NVLS switch: the switch reduces every rank's copy of slice k into
// head k (multimem.ld_reduce), and after the fabric's round trip head k
// multicasts the total to its node (multimem.st). A rank's port then moves
// what an NVLS AllReduce moves on one node, where CollNet Direct sends its
// seven slices out and, as a head, the total out seven times.
//
// NCCL's CollNet Chain AllReduce replaces CollNet Direct's NVLink phases
// by chains: slice k's chain on each node runs through the node's other
// ranks to head k, each adding its copy to what the one before it sends on;
// after the fabric's round trip the head sends the total back down the
// chain. Each NVLink port moves what CollNet Direct's does, with a fill
// that grows with the chain.
//
// AllGather and ReduceScatter (NCCL runs both through CollNet Direct and
// NVLS where the network plugin offers SHARP's allgather and
// reduce-scatter and every GPU has its own NIC) use the rails: local rank
// k of every node is a member of rail k. In an AllGather each rank hands
// its input to the fabric, which delivers it to every member of the
// rank's rail, its own node's included (SHARP's allgather returns the
// whole gathered buffer, so each NIC takes in an eighth of the output);
// each member then passes it to its node's other ranks, straight over
// NVLink (CollNet Direct) or by one NVLS multicast. A ReduceScatter runs
// the other way: for each destination rank d, local rank k(d) of every
// node adds its node's copies of d's part (received over NVLink into
// scratch, or one NVLS reduction) and the fabric adds those partials into
// d. Each rank's part is cut into `pipeline` chunks (16 by default, fewer
// on many nodes).
//
//===----------------------------------------------------------------------===//
#include "BaselineBuilder.h"

#include <algorithm>
#include <set>

namespace ccsynth::baseline {

namespace {

/// The fabric adds the partials of chunk i that slice k's heads hold and
/// returns the total to every head.
void sharpRoundTrip(ScheduleBuilder &b, int sw,
                    const std::vector<std::vector<int>> &ranks, int k, int i) {
  int nodes = (int)ranks.size();
  int to = k % nodes;
  std::vector<ChunkLoc> partials, others;
  for (int m = 0; m < nodes; ++m) {
    partials.push_back(b.output(ranks[m][k], i));
    if (m != to)
      others.push_back(b.output(ranks[m][k], i));
  }
  b.switchReduce(sw, partials, b.output(ranks[to][k], i));
  b.multicast(sw, b.output(ranks[to][k], i), others);
}

/// CollNet Direct's NVLink gather: the node's head, local rank k, takes
/// every other rank's copy of input chunk `index` into scratch and adds
/// them, with its own, into `acc` (a slot on the head).
void gatherAdd(ScheduleBuilder &b, const std::vector<int> &node, int k,
               int index, ChunkLoc acc) {
  int g = (int)node.size(), head = node[k];
  std::vector<ChunkLoc> received;
  for (int j = 1; j < g; ++j) {
    ChunkLoc tmp = b.scratch(head);
    b.copy(b.input(node[(k + j) % g], index), tmp);
    received.push_back(tmp);
  }
  b.copyLocal(b.input(head, index), acc);
  for (ChunkLoc tmp : received)
    b.reduce(tmp, acc);
}

/// Chunks per rank's part of an AllGather or ReduceScatter through the
/// rails: 16, as the AllReduce cuts each slice (a node hands on its last
/// chunk after the network delivered it, so that chunk's NVLink phase is
/// exposed: with 2 chunks per part 8 x 8 B200 lose 17% of the AllGather's
/// busbw, with 16 under 1%), fewer where the schedule would hold more than
/// about 200,000 transfers (a chunk of each rank's part makes g on every
/// node: 1 chunk per part on 64 nodes of 8).
int railPipeline(const Topology &topo, const BaselineOptions &options) {
  long n = topo.numRanks(), nodes = topo.numNodes(), g = n / nodes;
  long fit = 200000 / std::max(1L, g * n * nodes);
  return pipelineOr(options, (int)std::clamp(fit, 1L, 16L));
}

/// AllGather or ReduceScatter through the rails of IB SHARP switch `sharp`.
/// A node hands on what its rail member holds, or gathers what the member
/// adds, through its NVLS switch `nvls[node]`, or over NVLink (CollNet
/// Direct) where `nvls` is empty.
Expected<Schedule> buildRails(CollectiveKind kind, const Topology &topo,
                              const BaselineOptions &options,
                              BaselineKind family, int sharp,
                              const std::vector<int> &nvls) {
  std::vector<std::vector<int>> ranks = ranksByNode(topo);
  int nodes = (int)ranks.size(), g = (int)ranks[0].size();
  int n = topo.numRanks();
  int p = railPipeline(topo, options);
  auto col = makeCollective(kind, n, p, options.inPlace, options.root);
  if (!col)
    return col.error();
  ScheduleBuilder b(topo, col.take(), options.until);
  bool viaNvls = !nvls.empty();
  for (int q = 0; q < p; ++q)
    for (int m = 0; m < nodes; ++m)
      for (int k = 0; k < g; ++k) {
        int r = ranks[m][k], idx = r * p + q;
        if (kind == CollectiveKind::AllGather) {
          // Rank r's chunk q: the fabric delivers it to every member of
          // rail k (into scratch where the destination is r's own input,
          // in place); each member hands it to its node.
          ChunkLoc src = b.input(r, q);
          std::vector<ChunkLoc> at;
          for (int mm = 0; mm < nodes; ++mm) {
            ChunkLoc dst = b.output(ranks[mm][k], idx);
            at.push_back(b.aliases(src, dst) ? b.scratch(r) : dst);
          }
          b.multicast(sharp, src, at);
          for (int mm = 0; mm < nodes; ++mm) {
            std::vector<ChunkLoc> others;
            for (int j = 0; j < g; ++j)
              if (j != k)
                others.push_back(b.output(ranks[mm][j], idx));
            if (viaNvls) {
              b.multicast(nvls[mm], at[mm], others);
            } else {
              for (ChunkLoc o : others)
                b.copy(at[mm], o);
            }
          }
          continue;
        }
        // ReduceScatter: rank r's chunk q is the sum of every rank's input
        // chunk r * p + q. Rail k's member on each node adds its node's
        // copies, the fabric adds the partials into r.
        ChunkLoc dst = b.output(r, q);
        std::vector<ChunkLoc> partials;
        for (int mm = 0; mm < nodes; ++mm) {
          // (Into scratch on r's node too: SHARP takes every member's
          // partial through its NIC, r's own included.)
          ChunkLoc acc = b.scratch(ranks[mm][k]);
          if (viaNvls) {
            std::vector<ChunkLoc> copies;
            for (int j = 0; j < g; ++j)
              copies.push_back(b.input(ranks[mm][j], idx));
            b.switchReduce(nvls[mm], copies, acc);
          } else {
            gatherAdd(b, ranks[mm], k, idx, acc);
          }
          partials.push_back(acc);
        }
        b.switchReduce(sharp, partials, dst);
      }
  return b.finish(baselineName(family, kind),
                  std::string("baseline:") + toString(family));
}

} // namespace

bool sharpRailsPerGpu(const Topology &topo) {
  int sw = sharpSwitchOf(topo);
  if (sw < 0)
    return false;
  const InNetworkSwitch &s = topo.switches[sw];
  std::vector<std::vector<int>> ranks = ranksByNode(topo);
  for (const std::vector<int> &node : ranks) {
    std::set<int> ups, downs;
    for (int r : node) {
      const SwitchPort &port = s.ports[s.portOf(r)];
      if (port.up < 0 || port.down < 0 || !ups.insert(port.up).second ||
          !downs.insert(port.down).second)
        return false;
    }
  }
  return true;
}

int sharpSwitchOf(const Topology &topo) {
  for (size_t i = 0; i < topo.switches.size(); ++i) {
    const InNetworkSwitch &sw = topo.switches[i];
    if (sw.kind != SwitchKind::SHARP ||
        (int)sw.ports.size() != topo.numRanks())
      continue;
    bool all = true;
    for (size_t k = 0; k < sw.ports.size() && all; ++k)
      all = sw.ports[k].rank == (int)k;
    if (all)
      return (int)i;
  }
  return -1;
}

Expected<Schedule> makeCollnetBaseline(CollectiveKind kind,
                                       const Topology &topo,
                                       const BaselineOptions &options) {
  // makeBaseline has checked the collective, the switch and the nodes.
  int sw = sharpSwitchOf(topo);
  if (kind != CollectiveKind::AllReduce)
    return buildRails(kind, topo, options, BaselineKind::Collnet, sw, {});
  return buildSliced(
      kind, topo, options, BaselineKind::Collnet,
      [&](ScheduleBuilder &b, const std::vector<std::vector<int>> &ranks,
          SliceChunk c) {
        int g = (int)ranks[0].size(), k = c.k, i = c.index;
        // Each node's head k gathers the node's copies and adds them.
        for (const std::vector<int> &node : ranks)
          gatherAdd(b, node, k, i, b.output(node[k], i));
        sharpRoundTrip(b, sw, ranks, k, i);
        // Each head sends the total to its node's other ranks.
        for (const std::vector<int> &node : ranks)
          for (int j = 1; j < g; ++j)
            b.copy(b.output(node[k], i), b.output(node[(k + j) % g], i));
      });
}

Expected<Schedule> makeNvlsSharpBaseline(CollectiveKind kind,
                                         const Topology &topo,
                                         const BaselineOptions &options) {
  // makeBaseline has checked the collective, both switches and the nodes.
  int sharp = sharpSwitchOf(topo);
  std::vector<int> nvls = nvlsSwitchesOf(topo);
  if (kind != CollectiveKind::AllReduce)
    return buildRails(kind, topo, options, BaselineKind::NvlsSharp, sharp,
                      nvls);
  return buildSliced(
      kind, topo, options, BaselineKind::NvlsSharp,
      [&](ScheduleBuilder &b, const std::vector<std::vector<int>> &ranks,
          SliceChunk c) {
        for (size_t m = 0; m < ranks.size(); ++m)
          nvlsReduceInto(b, nvls[m], ranks[m], ranks[m][c.k], c.index);
        sharpRoundTrip(b, sharp, ranks, c.k, c.index);
        for (size_t m = 0; m < ranks.size(); ++m)
          nvlsMulticastFrom(b, nvls[m], ranks[m], ranks[m][c.k], c.index);
      });
}

Expected<Schedule> makeCollnetChainBaseline(CollectiveKind kind,
                                            const Topology &topo,
                                            const BaselineOptions &options) {
  // makeBaseline has checked the collective, the switch and the nodes.
  int sw = sharpSwitchOf(topo);
  return buildSliced(
      kind, topo, options, BaselineKind::CollnetChain,
      [&](ScheduleBuilder &b, const std::vector<std::vector<int>> &ranks,
          SliceChunk c) {
        int g = (int)ranks[0].size(), k = c.k, i = c.index;
        // As a wavefront: chunk q starts at step q, so that a link carries
        // one chunk's hop after the one before it (a link runs its
        // transfers in step order: chunks that all started at step 0 would
        // pass every link phase by phase).
        b.setMinStep(c.q);
        // Slice k's chain on each node ends at its head, local rank k:
        // every rank adds its copy to what the one before it sends on.
        std::vector<std::vector<int>> chains;
        for (const std::vector<int> &node : ranks) {
          std::vector<int> chain;
          for (int j = 1; j <= g; ++j)
            chain.push_back(node[(k + j) % g]);
          reduceChain(
              b, chain, [&](int pos) { return b.input(chain[pos], i); },
              [&](int pos) { return b.output(chain[pos], i); });
          chains.push_back(std::move(chain));
        }
        sharpRoundTrip(b, sw, ranks, k, i);
        // The head sends the total back down its chain.
        for (const std::vector<int> &chain : chains) {
          std::vector<int> down(chain.rbegin(), chain.rend());
          broadcastChain(b, down, b.output(down.front(), i),
                         [&](int pos) { return b.output(down[pos], i); });
        }
      });
}

} // namespace ccsynth::baseline
