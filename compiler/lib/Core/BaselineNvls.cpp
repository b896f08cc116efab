//===- BaselineNvls.cpp - NVLink SHARP schedules, as NCCL's NVLS runs them
//-===//
//
// On one NVLS domain (an NVSwitch that reduces and multicasts) NCCL's NVLS
// algorithm gives each rank a slice of the buffer: the rank asks the switch
// for the sum of every rank's copy of its slice (multimem.ld_reduce) and
// writes the result to every rank at once (multimem.st). The slices are cut
// into `pipeline` chunks each, which a rank's reductions and multicasts
// move one after another, the multicast of a chunk overlapping the
// reduction of the next (the simulator queues a rank's switch operations
// that way). ReduceScatter is the reduction half, AllGather the multicast
// half. Every address a switch operation touches is the same on each rank,
// as NVLS's multicast memory requires.
//
// Multi-node NVLS (NVLS-tree) is not built: these schedules need one switch
// joining every rank.
//
//===----------------------------------------------------------------------===//
#include "BaselineBuilder.h"

namespace ccsynth::baseline {

int nvlsSwitchOf(const Topology &topo) {
  int n = topo.numRanks();
  for (size_t i = 0; i < topo.switches.size(); ++i) {
    const InNetworkSwitch &sw = topo.switches[i];
    if (sw.kind == SwitchKind::NVLS && (int)sw.ports.size() == n)
      return (int)i;
  }
  return -1;
}

Expected<Schedule> makeNvlsBaseline(CollectiveKind kind, const Topology &topo,
                                    const BaselineOptions &options) {
  int sw = nvlsSwitchOf(topo);
  if (sw < 0)
    return Error("the nvls baseline needs an NVLS switch joining every rank; "
                 "'" +
                 topo.name + "' has none" +
                 (topo.numNodes() > 1 ? " (NVLS-tree across nodes is not "
                                        "built yet)"
                                      : ""));
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
  case CollectiveKind::AllReduce:
    // Chunk q of rank r's slice is chunk r * p + q of the buffer.
    for (int q = 0; q < p; ++q)
      for (int r = 0; r < n; ++r) {
        int i = r * p + q;
        b.switchReduce(sw, every([&](int j) { return b.input(j, i); }),
                       b.output(r, i));
        std::vector<ChunkLoc> others;
        for (int j = 0; j < n; ++j)
          if (j != r)
            others.push_back(b.output(j, i));
        b.multicast(sw, b.output(r, i), others);
      }
    break;
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
