//===- NvlsRails.cpp - NVLS inside nodes, AllReduce along the rails ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// ccsynth's own AllReduce for several NVLS nodes whose network does not
// reduce: each node's switch reduces slice k of the buffer into the node's
// local rank k (multimem.ld_reduce), the local ranks k of every node (one
// rail, one NIC each) AllReduce that slice over the network, and each
// node's switch multicasts the total from rank k (multimem.st).
//
// NCCL's NVLS-tree moves the same bytes per NIC but along a tree (here a
// chain) of whole chunks; a rail cuts each chunk into one piece per node,
// and every NIC carries its 2 (nodes - 1) / nodes of the slice both ways
// at once: the bandwidth bound of a point-to-point AllReduce across the
// nodes, with the NVLink ports left to the switch. Along a rail either a
// ring (a piece's way is 2 (nodes - 1) hops) or direct exchanges: node j
// owns piece j, every other node sends it its partial and it sends the
// total back to each (two hops; more peers per NIC, and more code, since
// each rank's peers differ).
//
// A link carries its transfers in step order. Built phase by phase (every
// chunk's reduction at step 0, its first ring hop at step 1, ...) a rail
// link would carry every chunk's first hop before any second one, so that
// the ring waits for the last reduction; the wavefront form starts chunk q
// at step q, as a pipelined kernel runs the chunks. Generated code
// pipelines by its passes over tiles, and there the phased form's fewer,
// larger steps are the faster program.
//
// The direct form (makeDirectRails) is the phased one with the switch's
// reduction and multicast done by point-to-point sends inside the node. It
// is a partner for mixes: NVLS is bound by the switch's throughput per
// port (each byte it reduces or multicasts crosses every member's port of
// the switch) while it leaves part of the NVLink ports idle; the direct
// form on a share of the buffer fills them, and its rail exchange sends
// the same bytes per NIC as NVLS's would, where a ring across the nodes
// sends almost twice as many.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Baselines/InNetworkMix.h"

#include "BaselineBuilder.h"

namespace ccsynth {

bool nvlsRailsSupports(CollectiveKind kind, const Topology &topology) {
  return kind == CollectiveKind::AllReduce && topology.numNodes() > 1 &&
         !baseline::nvlsSwitchesOf(topology).empty();
}

std::string nvlsRailsName(RailAllReduce rail, bool wavefront) {
  return std::string("nvls-rails") +
         (rail == RailAllReduce::Direct ? "-direct" : "") +
         (wavefront ? "" : "-phased");
}

namespace {

/// makeNvlsRails' schedule; without `throughSwitch` a node's reduction and
/// multicast are direct sends (makeDirectRails).
Expected<Schedule> buildRails(const Topology &topo,
                              const BaselineOptions &options, bool wavefront,
                              RailAllReduce rail, bool throughSwitch) {
  using namespace baseline;
  std::vector<int> sws = nvlsSwitchesOf(topo);
  if (topo.numNodes() < 2 || sws.empty())
    return Error("NVLS with rail rings needs several nodes, each with an "
                 "NVLS switch joining its ranks; '" +
                 topo.name + "' lacks them");
  std::vector<std::vector<int>> ranks = ranksByNode(topo);
  int nodes = (int)ranks.size(), g = (int)ranks[0].size();
  int p = pipelineOr(options, wavefront ? 16 : 4);
  auto col = makeCollective(CollectiveKind::AllReduce, topo.numRanks(),
                            g * p * nodes, options.inPlace, 0);
  if (!col)
    return col.error();
  ScheduleBuilder b(topo, col.take(), options.until);
  for (int q = 0; q < p; ++q)
    for (int k = 0; k < g; ++k) {
      if (wavefront)
        b.setMinStep(q);
      // Chunk q of slice k: pieces base .. base + nodes - 1.
      int base = (k * p + q) * nodes;
      // Local rank k sums slice k: through the switch, or sent to it by
      // each other local rank, the one s after it in round s.
      for (int m = 0; m < nodes; ++m) {
        int owner = ranks[m][k];
        if (throughSwitch) {
          nvlsReduceInto(b, sws[m], ranks[m], owner, base, nodes);
          continue;
        }
        b.copyLocal(b.input(owner, base), b.output(owner, base), nodes);
        for (int s = 1; s < g; ++s)
          b.reduce(b.input(ranks[m][(k + s) % g], base), b.output(owner, base),
                   nodes);
      }
      if (rail == RailAllReduce::Direct) {
        // Node j owns piece j: the others' partials land in its scratch and
        // are added there; it sends the total back to each. Round s pairs
        // every node with the one s after it, so that each rank meets its
        // peers in the same order relative to itself (its code then is
        // every other rank's, shifted).
        std::vector<std::vector<ChunkLoc>> got(nodes);
        for (int s = 1; s < nodes; ++s)
          for (int j = 0; j < nodes; ++j) {
            ChunkLoc tmp = b.scratch(ranks[j][k]);
            b.copy(b.output(ranks[(j + nodes - s) % nodes][k], base + j), tmp);
            got[j].push_back(tmp);
          }
        for (int s = 1; s < nodes; ++s)
          for (int j = 0; j < nodes; ++j)
            b.reduce(got[j][s - 1], b.output(ranks[j][k], base + j));
        for (int s = 1; s < nodes; ++s)
          for (int j = 0; j < nodes; ++j)
            b.copy(b.output(ranks[j][k], base + j),
                   b.output(ranks[(j + s) % nodes][k], base + j));
      } else {
        // Rail k's ring: piece j is summed along the ring ending at node j
        // and passed on around it from there.
        for (int j = 0; j < nodes; ++j) {
          std::vector<int> in, out;
          for (int s = 1; s <= nodes; ++s)
            in.push_back(ranks[(j + s) % nodes][k]);
          for (int s = 0; s < nodes; ++s)
            out.push_back(ranks[(j + s) % nodes][k]);
          SlotAt inAt = [&](int pos) { return b.output(in[pos], base + j); };
          reduceChain(b, in, inAt, inAt);
          broadcastChain(b, out, b.output(out.front(), base + j),
                         [&](int pos) { return b.output(out[pos], base + j); });
        }
      }
      for (int m = 0; m < nodes; ++m) {
        int owner = ranks[m][k];
        if (throughSwitch) {
          nvlsMulticastFrom(b, sws[m], ranks[m], owner, base, nodes);
          continue;
        }
        for (int s = 1; s < g; ++s)
          b.copy(b.output(owner, base), b.output(ranks[m][(k + s) % g], base),
                 nodes);
      }
    }
  if (!throughSwitch)
    return b.finish(std::string(kDirectRailsName) + "-allreduce",
                    std::string("synth:") + kDirectRailsName);
  // The origin names the algorithm, whichever its form.
  return b.finish(nvlsRailsName(rail, wavefront) + "-allreduce",
                  "synth:" + nvlsRailsName(rail, /*wavefront=*/true));
}

} // namespace

Expected<Schedule> makeNvlsRails(const Topology &topo,
                                 const BaselineOptions &options, bool wavefront,
                                 RailAllReduce rail) {
  return buildRails(topo, options, wavefront, rail, /*throughSwitch=*/true);
}

Expected<Schedule> makeDirectRails(const Topology &topo,
                                   const BaselineOptions &options) {
  return buildRails(topo, options, /*wavefront=*/false, RailAllReduce::Direct,
                    /*throughSwitch=*/false);
}

} // namespace ccsynth
