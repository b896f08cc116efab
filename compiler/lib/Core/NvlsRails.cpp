//===- NvlsRails.cpp - NVLS inside nodes, direct exchanges along rails -===//
//
// ccsynth's own AllReduce for several NVLS nodes whose network does not
// reduce: each node's switch reduces slice k of the buffer into the node's
// local rank k (multimem.ld_reduce), the local ranks k of every node (one
// rail, one NIC each) AllReduce that slice over the network, and each
// node's switch multicasts the total from rank k (multimem.st).
//
// Along a rail each chunk is cut into one piece per node and node j owns
// piece j: every other node sends it its partial of the piece, and it
// sends the total back to each (a reduce-scatter and an all-gather by
// direct sends). Every NIC carries 2 (nodes - 1) / nodes of the slice,
// both ways at once: the bandwidth bound of a point-to-point AllReduce
// across the nodes, with the NVLink ports left to the switch, in two hops
// where a ring takes 2 (nodes - 1) (NCCL's NVLS-tree moves as many bytes
// along its tree, with a pipeline fill that grows with the nodes).
//
// A link carries its transfers in step order. Built phase by phase (every
// chunk's reduction at step 0, its sends at step 1, ...) a rail link would
// carry every chunk's partials before any total, so that the exchange
// waits for the last reduction; the wavefront form starts chunk q at step
// q, as a pipelined kernel runs the chunks. Generated code pipelines by
// its passes over tiles, and there the phased form's fewer, larger steps
// are the faster program.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Core/InNetworkMix.h"

#include "BaselineBuilder.h"

namespace ccsynth {

bool nvlsRailsSupports(CollectiveKind kind, const Topology &topology) {
  return kind == CollectiveKind::AllReduce && topology.numNodes() > 1 &&
         !baseline::nvlsSwitchesOf(topology).empty();
}

Expected<Schedule> makeNvlsRails(const Topology &topo,
                                 const BaselineOptions &options,
                                 bool wavefront) {
  using namespace baseline;
  std::vector<int> sws = nvlsSwitchesOf(topo);
  if (topo.numNodes() < 2 || sws.empty())
    return Error("NVLS with rail exchanges needs several nodes, each with an "
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
      for (int m = 0; m < nodes; ++m) {
        std::vector<ChunkLoc> srcs;
        for (int r : ranks[m])
          srcs.push_back(b.input(r, base));
        b.switchReduce(sws[m], srcs, b.output(ranks[m][k], base), nodes);
      }
      // Rail k's exchange: node j owns piece j; every other node sends it
      // its partial (into scratch, added locally), and it sends the total
      // back to each of them.
      for (int j = 0; j < nodes; ++j) {
        int owner = ranks[j][k];
        std::vector<ChunkLoc> got;
        for (int s = 1; s < nodes; ++s) {
          ChunkLoc tmp = b.scratch(owner);
          b.copy(b.output(ranks[(j + s) % nodes][k], base + j), tmp);
          got.push_back(tmp);
        }
        for (ChunkLoc tmp : got)
          b.reduce(tmp, b.output(owner, base + j));
        for (int s = 1; s < nodes; ++s)
          b.copy(b.output(owner, base + j),
                 b.output(ranks[(j + s) % nodes][k], base + j));
      }
      for (int m = 0; m < nodes; ++m) {
        std::vector<ChunkLoc> dsts;
        for (int r : ranks[m])
          if (r != ranks[m][k])
            dsts.push_back(b.output(r, base));
        b.multicast(sws[m], b.output(ranks[m][k], base), dsts, nodes);
      }
    }
  return b.finish(wavefront ? "nvls-rails-allreduce"
                            : "nvls-rails-phased-allreduce",
                  "synth:nvls-rails");
}

} // namespace ccsynth
