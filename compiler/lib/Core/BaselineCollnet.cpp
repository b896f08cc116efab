//===- BaselineCollnet.cpp - IB SHARP AllReduce, as NCCL's CollNet Direct -===//
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
//===----------------------------------------------------------------------===//
#include "BaselineBuilder.h"

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

} // namespace

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
  return buildSliced(
      kind, topo, options, BaselineKind::Collnet,
      [&](ScheduleBuilder &b, const std::vector<std::vector<int>> &ranks,
          SliceChunk c) {
        int g = (int)ranks[0].size(), k = c.k, i = c.index;
        // Each node's head k gathers the node's copies and adds them.
        for (const std::vector<int> &node : ranks) {
          int head = node[k];
          std::vector<ChunkLoc> received;
          for (int j = 1; j < g; ++j) {
            ChunkLoc tmp = b.scratch(head);
            b.copy(b.input(node[(k + j) % g], i), tmp);
            received.push_back(tmp);
          }
          b.copyLocal(b.input(head, i), b.output(head, i));
          for (ChunkLoc tmp : received)
            b.reduce(tmp, b.output(head, i));
        }
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

} // namespace ccsynth::baseline
