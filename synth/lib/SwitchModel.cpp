//===- SwitchModel.cpp - A sketch's switches as shared bandwidth ----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// TACCL (microsoft/taccl): taccl/cli/common.py parse_and_get_topo() keeps
// every link, multiplies the links of a switch listed k times by k and
// divides their beta by k (_multiply_link_matrix, _div_beta_add_alpha), and
// asserts that two switches are disjoint or equal;
// taccl/topologies/topology.py _make_switch() gives each GPU of a switch an
// "out" hyperedge over its links to the others and an "in" one over theirs
// to it, at the cost of one such link; taccl/routing.py bounds the time by
// each hyperedge's total (switchin_/switchout_ constraints).
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Synth/SwitchModel.h"

#include <algorithm>
#include <map>
#include <set>

namespace ccsynth::synth {

namespace {

std::string fmtGBps(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

SourceLoc locOf(const Sketch &sk, const SourceLoc &loc) {
  return loc.known() ? loc : SourceLoc{sk.file};
}

} // namespace

Expected<std::vector<SwitchGroup>>
switchGroups(const Sketch &sk, int g, const std::string &topoName) {
  std::vector<SwitchGroup> groups;
  std::map<std::vector<int>, int> index;
  std::vector<int> owner((size_t)g * g, -1);
  for (size_t i = 0; i < sk.switches.size(); ++i) {
    const SketchSwitch &s = sk.switches[i];
    for (int id : s.gpus)
      if (id < 0 || id >= g)
        return Error("a switch names GPU " + std::to_string(id) +
                         ", but nodes of '" + topoName + "' have GPUs 0.." +
                         std::to_string(g - 1),
                     locOf(sk, s.loc));
    std::vector<int> set = s.gpus;
    std::sort(set.begin(), set.end());
    auto it = index.find(set);
    if (it != index.end()) {
      SwitchGroup &grp = groups[it->second];
      if (grp.strategy != s.strategy)
        return Error("switch " + std::to_string(i) + " repeats the GPUs of "
                         "switch " + std::to_string(grp.first) +
                         " with another hyperedge strategy (" +
                         toString(s.strategy) + " vs " +
                         toString(grp.strategy) +
                         "); a repeated switch is one switch counted several "
                         "times",
                     locOf(sk, s.loc));
      ++grp.multiplicity;
      continue;
    }
    int gi = (int)groups.size();
    for (size_t a = 0; a < set.size(); ++a)
      for (size_t b = a + 1; b < set.size(); ++b) {
        int &o = owner[(size_t)set[a] * g + set[b]];
        if (o >= 0)
          return Error(
              "switches " + std::to_string(groups[o].first) + " and " +
                  std::to_string(i) + " both contain GPUs " +
                  std::to_string(set[a]) + " and " + std::to_string(set[b]) +
                  ": it is not clear which switch their transfers cross. "
                  "Switches may share single GPUs, or repeat the same set "
                  "(counted as several switches), but not a pair of GPUs",
              locOf(sk, s.loc));
        o = gi;
      }
    index[set] = gi;
    groups.push_back({std::move(set), 1, (int)i, s.strategy});
  }
  return groups;
}

Expected<SwitchModel> applySketchSwitches(const Topology &machine,
                                          const Sketch &sk) {
  SwitchModel m;
  m.topo = machine;
  if (sk.intra != IntraStrategy::Switch)
    return m;
  Topology &t = m.topo;
  int n = t.numRanks(), nodes = t.numNodes();
  std::vector<int> sizes(nodes, 0), localOf(n, 0);
  for (int r = 0; r < n; ++r)
    localOf[r] = sizes[t.nodeOf[r]]++;
  for (int s : sizes)
    if (s != sizes[0])
      return Error("topology '" + t.name +
                   "' has nodes of different sizes; sketches name GPUs by "
                   "their local id and need equal nodes");
  int g = sizes[0];
  auto groups = switchGroups(sk, g, t.name);
  if (!groups)
    return groups.error();
  std::vector<int> owner((size_t)g * g, -1);
  for (int gi = 0; gi < (int)groups->size(); ++gi) {
    const auto &set = (*groups)[gi].gpus;
    for (int a : set)
      for (int b : set)
        if (a != b)
          owner[(size_t)a * g + b] = gi;
  }
  int numLinks = (int)t.links.size();
  std::vector<int> groupOfLink(numLinks, -1);
  std::vector<std::vector<int>> linksOfRes(t.resources.size());
  for (int l = 0; l < numLinks; ++l) {
    const Link &k = t.links[l];
    for (int x : k.resources)
      linksOfRes[x].push_back(l);
    if (t.sameNode(k.src, k.dst))
      groupOfLink[l] = owner[(size_t)localOf[k.src] * g + localOf[k.dst]];
  }
  // A switch listed k times: its links, and the machine's resources that
  // only its links cross (e.g. a DGX's NVSwitch ports), k times the
  // bandwidth.
  int scaledLinks = 0;
  for (int l = 0; l < numLinks; ++l)
    if (groupOfLink[l] >= 0 && (*groups)[groupOfLink[l]].multiplicity > 1) {
      t.links[l].bandwidthGBps *= (*groups)[groupOfLink[l]].multiplicity;
      ++scaledLinks;
    }
  for (size_t x = 0; x < t.resources.size(); ++x) {
    const auto &ls = linksOfRes[x];
    if (ls.empty())
      continue;
    int gi = groupOfLink[ls[0]];
    bool one = gi >= 0;
    for (int l : ls)
      one = one && groupOfLink[l] == gi &&
            t.nodeOf[t.links[l].src] == t.nodeOf[t.links[ls[0]].src];
    if (one && (*groups)[gi].multiplicity > 1)
      t.resources[x].bandwidthGBps *= (*groups)[gi].multiplicity;
  }
  // Ports: per node, switch and GPU, an egress and an ingress limit over
  // its links to the switch's other GPUs, as fast as the fastest of them.
  std::map<std::vector<int>, int> resOfSet;
  for (size_t x = 0; x < linksOfRes.size(); ++x)
    if (!linksOfRes[x].empty())
      resOfSet.emplace(linksOfRes[x], (int)x);
  // Links per (node, switch, GPU, direction), in link order.
  std::map<std::tuple<int, int, int, int>, std::vector<int>> portLinks;
  for (int l = 0; l < numLinks; ++l) {
    int gi = groupOfLink[l];
    if (gi < 0)
      continue;
    const Link &k = t.links[l];
    int node = t.nodeOf[k.src];
    portLinks[{node, gi, localOf[k.src], 0}].push_back(l);
    portLinks[{node, gi, localOf[k.dst], 1}].push_back(l);
  }
  int added = 0;
  std::set<int> unevenSwitches;
  // Each covered link gets its sender's egress port, then its receiver's
  // ingress port (the same order on every link, so that symmetries map
  // resources position by position).
  std::vector<int> outPort(numLinks, -1), inPort(numLinks, -1);
  for (auto &[key, ls] : portLinks) {
    auto [node, gi, gpu, dir] = key;
    if (resOfSet.count(ls))
      continue; // the machine already has this port
    double bw = 0, lo = 1e300;
    for (int l : ls) {
      bw = std::max(bw, t.links[l].bandwidthGBps);
      lo = std::min(lo, t.links[l].bandwidthGBps);
    }
    if (lo != bw && unevenSwitches.insert(gi).second)
      m.notes.push_back(
          "switch " + std::to_string((*groups)[gi].first) + ": GPU " +
          std::to_string(gpu) + "'s links to the switch's other GPUs differ "
          "in bandwidth (" + fmtGBps(lo) + " to " + fmtGBps(bw) +
          " GB/s); its switch port carries at most the fastest (TACCL "
          "requires equal links in a switch)");
    std::string name = "n";
    name += std::to_string(node);
    name += ".gpu";
    name += std::to_string(gpu);
    name += ".switch";
    name += std::to_string((*groups)[gi].first);
    name += dir == 0 ? ".out" : ".in";
    t.resources.push_back({std::move(name), bw});
    int x = (int)t.resources.size() - 1;
    for (int l : ls)
      (dir == 0 ? outPort : inPort)[l] = x;
    ++added;
  }
  for (int l = 0; l < numLinks; ++l)
    for (int x : {outPort[l], inPort[l]})
      if (x >= 0)
        t.links[l].resources.push_back(x);
  // Pairs a switch names without a link between them (checked on node 0;
  // nodes are equal in every shape a sketch can name).
  std::vector<int> node0 = t.ranksOfNode(0);
  for (const SwitchGroup &grp : *groups) {
    std::vector<std::string> missing;
    for (int a : grp.gpus)
      for (int b : grp.gpus)
        if (a < b && t.linksBetween(node0[a], node0[b]).empty() &&
            t.linksBetween(node0[b], node0[a]).empty())
          missing.push_back(std::to_string(a) + "-" + std::to_string(b));
    if (missing.empty())
      continue;
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 6; ++i)
      list += (i ? ", " : "") + missing[i];
    if (missing.size() > 6)
      list += ", ...";
    m.notes.push_back("switch " + std::to_string(grp.first) + " names GPU "
                      "pairs with no link between them in '" + t.name +
                      "' (" + list + "); a switch limits bandwidth, it adds "
                      "no links");
  }
  m.changed = added > 0 || scaledLinks > 0;
  if (m.changed)
    m.notes.push_back(
        "the sketch's switches model '" + t.name + "' with " +
        std::to_string(added) + " switch port limits added" +
        (scaledLinks ? " and " + std::to_string(scaledLinks) +
                           " links multiplied by their switch's repetitions"
                     : std::string()) +
        "; predicted times use that model (`ccsynth simulate` uses '" +
        t.name + "' as given)");
  return m;
}

} // namespace ccsynth::synth
