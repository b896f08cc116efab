//===- Baselines.cpp - Choosing and checking baseline schedules -----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The families themselves live in BaselineRing/Tree/Direct/Hierarchical.cpp;
// this file names them, says which collectives each implements, validates
// the options and dispatches.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Baselines/Baselines.h"

#include "BaselineBuilder.h"

namespace ccsynth {

namespace {

struct KindName {
  BaselineKind kind;
  const char *name;
};
constexpr KindName kKinds[] = {
    {BaselineKind::Ring, "ring"},
    {BaselineKind::Tree, "tree"},
    {BaselineKind::Direct, "direct"},
    {BaselineKind::Hierarchical, "hierarchical"},
    {BaselineKind::Nvls, "nvls"},
    {BaselineKind::Collnet, "collnet"},
    {BaselineKind::NvlsSharp, "nvls-sharp"},
    {BaselineKind::CollnetChain, "collnet-chain"},
};

/// Largest pipelining depth accepted: beyond it schedules get huge without
/// modelling anything new.
constexpr int kMaxPipeline = 1024;

bool isRooted(CollectiveKind kind) {
  return kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce ||
         kind == CollectiveKind::Gather || kind == CollectiveKind::Scatter;
}

/// The families that cross the network through an IB SHARP switch.
bool usesSharp(BaselineKind kind) {
  return kind == BaselineKind::Collnet || kind == BaselineKind::NvlsSharp ||
         kind == BaselineKind::CollnetChain;
}

bool uniformNodes(const Topology &topo) {
  std::vector<int> sizes(topo.numNodes(), 0);
  for (int node : topo.nodeOf)
    ++sizes[node];
  for (int s : sizes)
    if (s != sizes[0])
      return false;
  return true;
}

/// The collectives a family implements, ignoring the topology.
std::vector<CollectiveKind> familyCollectives(BaselineKind kind) {
  using C = CollectiveKind;
  switch (kind) {
  case BaselineKind::Ring:
    return {C::AllGather, C::ReduceScatter, C::AllReduce, C::Broadcast,
            C::Reduce,    C::AllToAll};
  case BaselineKind::Tree:
    return {C::AllReduce, C::Broadcast, C::Reduce};
  case BaselineKind::Direct:
    return {C::AllGather, C::ReduceScatter, C::AllReduce, C::Broadcast,
            C::Reduce,    C::Gather,        C::Scatter,   C::AllToAll};
  case BaselineKind::Hierarchical:
    return {C::AllGather, C::ReduceScatter, C::AllReduce, C::AllToAll};
  case BaselineKind::Nvls:
    return {C::AllGather, C::ReduceScatter, C::AllReduce};
  case BaselineKind::Collnet:
  case BaselineKind::NvlsSharp:
    return {C::AllReduce, C::AllGather, C::ReduceScatter};
  case BaselineKind::CollnetChain:
    return {C::AllReduce};
  }
  return {};
}

std::string joinNames(const std::vector<CollectiveKind> &kinds) {
  std::string out;
  for (CollectiveKind k : kinds)
    out += std::string(out.empty() ? "" : ", ") + toString(k);
  return out;
}

} // namespace

const char *toString(BaselineKind kind) {
  for (const KindName &k : kKinds)
    if (k.kind == kind)
      return k.name;
  return "?";
}

std::optional<BaselineKind> parseBaselineKind(const std::string &s) {
  for (const KindName &k : kKinds)
    if (s == k.name)
      return k.kind;
  if (s == "allpairs" || s == "all-pairs")
    return BaselineKind::Direct;
  if (s == "hier")
    return BaselineKind::Hierarchical;
  return std::nullopt;
}

bool baselineSupports(BaselineKind kind, CollectiveKind collective,
                      const Topology &topology) {
  if (topology.numRanks() < 1)
    return false;
  if (kind == BaselineKind::Hierarchical &&
      (topology.numNodes() < 2 || !uniformNodes(topology)))
    return false;
  if (kind == BaselineKind::Nvls)
    return baseline::nvlsSupports(collective, topology);
  if (usesSharp(kind) && (topology.numNodes() < 2 || !uniformNodes(topology) ||
                          baseline::sharpSwitchOf(topology) < 0))
    return false;
  if (kind == BaselineKind::NvlsSharp &&
      baseline::nvlsSwitchesOf(topology).empty())
    return false;
  if (usesSharp(kind) && collective != CollectiveKind::AllReduce &&
      !baseline::sharpRailsPerGpu(topology))
    return false;
  for (CollectiveKind c : familyCollectives(kind))
    if (c == collective)
      return true;
  return false;
}

Expected<Schedule> makeBaseline(BaselineKind kind, CollectiveKind collective,
                                const Topology &topology,
                                const BaselineOptions &options) {
  std::string what = std::string("the ") + toString(kind) + " baseline";
  int n = topology.numRanks();
  if (n < 1)
    return Error(what + " needs a topology with ranks; '" + topology.name +
                 "' has none");
  if (!options.topologyValidated)
    if (Status s = topology.validate(); !s)
      return s.error();
  if (kind == BaselineKind::Hierarchical && topology.numNodes() < 2)
    return Error(what + " needs more than one node; '" + topology.name +
                 "' has one (use ring, tree or direct)");
  if (kind == BaselineKind::Hierarchical && !uniformNodes(topology))
    return Error(what + " needs the same number of ranks in every node of '" +
                 topology.name + "'");
  if (kind == BaselineKind::Nvls && baseline::nvlsSwitchesOf(topology).empty())
    return Error(what +
                     " needs an NVLS switch (NVLink SHARP) joining the "
                     "ranks of every node; '" +
                     topology.name + "' has none",
                 {},
                 "NVLS needs Hopper or Blackwell GPUs on an NVSwitch "
                 "(dgx-h100, dgx-b200, gb200-nvl72)");
  if (kind == BaselineKind::Nvls && topology.numNodes() > 1 &&
      collective != CollectiveKind::AllReduce)
    return Error(what + " across nodes (NVLS-tree) implements allreduce "
                        "only, as NCCL's does");
  if ((kind == BaselineKind::Collnet || kind == BaselineKind::CollnetChain) &&
      (topology.numNodes() < 2 || baseline::sharpSwitchOf(topology) < 0))
    return Error(what +
                     " needs several nodes joined by an IB SHARP switch with "
                     "a port for every rank; '" +
                     topology.name + "' has none",
                 {},
                 "dgx-h100xN, dgx-b200xN and gb200-nvl72xN (N >= 2) have "
                 "one; a topology file declares one with \"kind\": "
                 "\"sharp\"");
  if (kind == BaselineKind::NvlsSharp) {
    const char *lacks = topology.numNodes() < 2 ? "several nodes"
                        : baseline::nvlsSwitchesOf(topology).empty()
                            ? "an NVLS switch in every node"
                        : baseline::sharpSwitchOf(topology) < 0
                            ? "a SHARP switch"
                            : nullptr;
    if (lacks)
      return Error(what +
                       " needs several nodes, each with an NVLS switch "
                       "joining its ranks, and an IB SHARP switch with a "
                       "port for every rank; '" +
                       topology.name + "' lacks " + lacks,
                   {},
                   "dgx-h100xN, dgx-b200xN and gb200-nvl72xN (N >= 2) have "
                   "both");
  }
  if (usesSharp(kind) && !uniformNodes(topology))
    return Error(what + " needs the same number of ranks in every node of '" +
                 topology.name + "'");
  if (usesSharp(kind) &&
      (collective == CollectiveKind::AllGather ||
       collective == CollectiveKind::ReduceScatter) &&
      !baseline::sharpRailsPerGpu(topology))
    return Error(what + " implements " + toString(collective) +
                     " only where every GPU of a node reaches the SHARP "
                     "switch through a NIC of its own; on '" +
                     topology.name + "' some share one",
                 {},
                 "NCCL runs AllGather and ReduceScatter through SHARP only "
                 "with one GPU per NIC (its tuner turns CollNet off for "
                 "them otherwise)");
  if (!baselineSupports(kind, collective, topology))
    return Error(what + " does not implement " + toString(collective), {},
                 "it implements: " + joinNames(familyCollectives(kind)));
  if (options.pipeline < 0 || options.pipeline > kMaxPipeline)
    return Error("pipeline depth " + std::to_string(options.pipeline) +
                 " is out of range (0 = default, or 1.." +
                 std::to_string(kMaxPipeline) + ")");
  if (isRooted(collective) && (options.root < 0 || options.root >= n))
    return Error("root " + std::to_string(options.root) +
                 " is not a rank of '" + topology.name + "' (0.." +
                 std::to_string(n - 1) + ")");
  switch (kind) {
  case BaselineKind::Ring:
    return baseline::makeRingBaseline(collective, topology, options);
  case BaselineKind::Tree:
    return baseline::makeTreeBaseline(collective, topology, options);
  case BaselineKind::Direct:
    return baseline::makeDirectBaseline(collective, topology, options);
  case BaselineKind::Hierarchical:
    return baseline::makeHierarchicalBaseline(collective, topology, options);
  case BaselineKind::Nvls:
    return baseline::makeNvlsBaseline(collective, topology, options);
  case BaselineKind::Collnet:
    return baseline::makeCollnetBaseline(collective, topology, options);
  case BaselineKind::NvlsSharp:
    return baseline::makeNvlsSharpBaseline(collective, topology, options);
  case BaselineKind::CollnetChain:
    return baseline::makeCollnetChainBaseline(collective, topology, options);
  }
  return Error(what + " is unknown");
}

namespace baseline {

std::string baselineName(BaselineKind kind, CollectiveKind collective) {
  return std::string(toString(kind)) + "-" + toString(collective);
}

} // namespace baseline

} // namespace ccsynth
