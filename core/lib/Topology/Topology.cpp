//===- Topology.cpp - Topology queries and validation ---------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements Topology.h: names of link and switch kinds and their parsers,
// the queries on a machine (nodes and their ranks, links between two ranks,
// effective bandwidth, the best link, shortest latencies, and route: the
// fewest hops, preferring faster links) and
// Topology::validate, which checks ranks, links, resources and in-network
// switches and keeps bandwidths and latencies within the ranges the models
// accept. See docs/formats.md ("Topology").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Topology/Topology.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <queue>

namespace ccsynth {

const char *toString(LinkKind kind) {
  switch (kind) {
  case LinkKind::NVLink:
    return "nvlink";
  case LinkKind::PCIe:
    return "pcie";
  case LinkKind::RDMA:
    return "rdma";
  case LinkKind::SHM:
    return "shm";
  }
  return "?";
}

const char *toString(SwitchKind kind) {
  return kind == SwitchKind::NVLS ? "nvls" : "sharp";
}

std::optional<SwitchKind> parseSwitchKind(const std::string &s) {
  if (s == "nvls")
    return SwitchKind::NVLS;
  if (s == "sharp")
    return SwitchKind::SHARP;
  return std::nullopt;
}

int InNetworkSwitch::portOf(int rank) const {
  auto it =
      std::lower_bound(ports.begin(), ports.end(), rank,
                       [](const SwitchPort &p, int r) { return p.rank < r; });
  return it != ports.end() && it->rank == rank ? (int)(it - ports.begin()) : -1;
}

int Topology::switchNamed(const std::string &name) const {
  for (size_t i = 0; i < switches.size(); ++i)
    if (switches[i].name == name)
      return (int)i;
  return -1;
}

std::optional<LinkKind> parseLinkKind(const std::string &s) {
  if (s == "nvlink")
    return LinkKind::NVLink;
  if (s == "pcie")
    return LinkKind::PCIe;
  if (s == "rdma" || s == "net" || s == "ib")
    return LinkKind::RDMA;
  if (s == "shm")
    return LinkKind::SHM;
  return std::nullopt;
}

std::optional<int> stepProtocolIndex(const std::string &protocol) {
  for (int i = 0; i < 3; ++i)
    if (protocol == kStepProtocols[i])
      return i;
  return std::nullopt;
}

int Topology::numNodes() const {
  int n = 0;
  for (int node : nodeOf)
    n = std::max(n, node + 1);
  return n;
}

std::vector<int> Topology::ranksOfNode(int node) const {
  std::vector<int> out;
  for (int r = 0; r < numRanks(); ++r)
    if (nodeOf[r] == node)
      out.push_back(r);
  return out;
}

int Topology::localRank(int rank) const {
  int idx = 0;
  for (int r = 0; r < rank; ++r)
    idx += nodeOf[r] == nodeOf[rank];
  return idx;
}

std::vector<int> Topology::linksBetween(int src, int dst) const {
  std::vector<int> out;
  for (int i = 0; i < (int)links.size(); ++i)
    if (links[i].src == src && links[i].dst == dst)
      out.push_back(i);
  return out;
}

double Topology::effectiveBandwidth(int link) const {
  double bw = links[link].bandwidthGBps;
  for (int r : links[link].resources)
    bw = std::min(bw, resources[r].bandwidthGBps);
  return bw;
}

std::optional<int> Topology::bestLink(int src, int dst) const {
  std::optional<int> best;
  for (int i : linksBetween(src, dst)) {
    if (!best) {
      best = i;
      continue;
    }
    double bw = effectiveBandwidth(i), bestBw = effectiveBandwidth(*best);
    if (bw > bestBw ||
        (bw == bestBw && links[i].alphaUs < links[*best].alphaUs))
      best = i;
  }
  return best;
}

std::vector<std::vector<double>> Topology::shortestAlpha() const {
  const double inf = std::numeric_limits<double>::infinity();
  int n = numRanks();
  std::vector<std::vector<std::pair<int, double>>> adj(n);
  for (const Link &l : links)
    adj[l.src].push_back({l.dst, l.alphaUs});
  std::vector<std::vector<double>> dist(n, std::vector<double>(n, inf));
  for (int s = 0; s < n; ++s) {
    auto &d = dist[s];
    d[s] = 0;
    using Item = std::pair<double, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
    pq.push({0, s});
    while (!pq.empty()) {
      auto [du, u] = pq.top();
      pq.pop();
      if (du > d[u])
        continue;
      for (auto [v, w] : adj[u])
        if (du + w < d[v]) {
          d[v] = du + w;
          pq.push({d[v], v});
        }
    }
  }
  return dist;
}

std::vector<int> Topology::route(int src, int dst) const {
  int n = numRanks();
  if (src == dst)
    return {src};
  // BFS by hops; among equal-hop predecessors prefer the faster link.
  std::vector<int> prev(n, -1), hops(n, -1);
  std::vector<double> bw(n, 0);
  std::deque<int> q{src};
  hops[src] = 0;
  while (!q.empty()) {
    int u = q.front();
    q.pop_front();
    for (int i = 0; i < (int)links.size(); ++i) {
      if (links[i].src != u)
        continue;
      int v = links[i].dst;
      double b = std::min(u == src ? 1e300 : bw[u], effectiveBandwidth(i));
      if (hops[v] < 0) {
        hops[v] = hops[u] + 1;
        prev[v] = u;
        bw[v] = b;
        q.push_back(v);
      } else if (hops[v] == hops[u] + 1 && b > bw[v]) {
        prev[v] = u;
        bw[v] = b;
      }
    }
  }
  if (hops[dst] < 0)
    return {};
  std::vector<int> path;
  for (int v = dst; v != -1; v = prev[v])
    path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

bool isUsableBandwidth(double gbps) {
  return gbps >= kMinBandwidthGBps && gbps <= kMaxBandwidthGBps;
}

std::string formatFigure(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

namespace {
/// A range limit in positional notation ("0.000001", "1000000").
std::string plain(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9f", v);
  std::string s = buf;
  while (s.back() == '0')
    s.pop_back();
  if (s.back() == '.')
    s.pop_back();
  return s;
}
} // namespace

std::string bandwidthRangeText() {
  return "from " + plain(kMinBandwidthGBps) + " to " +
         plain(kMaxBandwidthGBps) + " GB/s";
}

std::string alphaRangeText() {
  return "0, or from " + plain(kMinAlphaUs) + " to " + plain(kMaxAlphaUs) +
         " us";
}

int UsedLinks::slot(const Topology &topo, int link) {
  auto [it, isNew] = slotOf_.try_emplace(link, (int)resources_.size());
  if (isNew) {
    const ResourceList &crossed = topo.links[link].resources;
    std::vector<int> res(crossed.begin(), crossed.end());
    // A link naming one resource twice would count it twice; keep one.
    std::sort(res.begin(), res.end());
    res.erase(std::unique(res.begin(), res.end()), res.end());
    resources_.push_back(std::move(res));
  }
  return it->second;
}

bool isUsableAlpha(double us) {
  return us == 0 || (us >= kMinAlphaUs && us <= kMaxAlphaUs);
}

Status Topology::validate() const {
  int n = numRanks();
  if (n <= 0)
    return Error("topology '" + name + "' has no ranks");
  std::vector<bool> seen(numNodes(), false);
  for (int r = 0; r < n; ++r) {
    if (nodeOf[r] < 0)
      return Error("rank " + std::to_string(r) + " has a negative node id");
    seen[nodeOf[r]] = true;
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i])
      return Error("node ids must be dense: node " + std::to_string(i) +
                   " has no ranks");
  for (size_t i = 0; i < resources.size(); ++i)
    if (!isUsableBandwidth(resources[i].bandwidthGBps))
      return Error("resource " + std::to_string(i) + " ('" + resources[i].name +
                   "') has a bandwidth of " +
                   formatFigure(resources[i].bandwidthGBps) +
                   " GB/s; it must be " + bandwidthRangeText());
  for (size_t i = 0; i < links.size(); ++i) {
    const Link &l = links[i];
    // Built only for an error: 16.7M links are checked on 4,096 ranks.
    auto id = [i] {
      std::string s = "link ";
      return s += std::to_string(i);
    };
    if (l.src < 0 || l.src >= n || l.dst < 0 || l.dst >= n)
      return Error(id() + " connects ranks " + std::to_string(l.src) + " -> " +
                   std::to_string(l.dst) + ", outside 0.." +
                   std::to_string(n - 1));
    if (l.src == l.dst)
      return Error(id() + " connects rank " + std::to_string(l.src) +
                   " to itself");
    if (!isUsableBandwidth(l.bandwidthGBps))
      return Error(id() + " has a bandwidth of " +
                   formatFigure(l.bandwidthGBps) + " GB/s; it must be " +
                   bandwidthRangeText());
    if (!isUsableAlpha(l.alphaUs))
      return Error(id() + " has an alpha of " + formatFigure(l.alphaUs) +
                   " us; it must be " + alphaRangeText());
    for (int r : l.resources)
      if (r < 0 || r >= (int)resources.size())
        return Error(id() + " names resource " + std::to_string(r) +
                     ", but there are " + std::to_string(resources.size()));
  }
  for (size_t i = 0; i < switches.size(); ++i) {
    const InNetworkSwitch &sw = switches[i];
    std::string id = "switch " + std::to_string(i) + " ('" + sw.name + "')";
    if (sw.ports.size() < 2)
      return Error(id + " has " + std::to_string(sw.ports.size()) +
                   " ports; a switch that reduces joins at least two ranks");
    if (!isUsableAlpha(sw.alphaUs))
      return Error(id + " has an alpha of " + formatFigure(sw.alphaUs) +
                   " us; it must be " + alphaRangeText());
    if (!(sw.efficiency >= 1e-3 && sw.efficiency <= 1))
      return Error(id + " has an efficiency of " + formatFigure(sw.efficiency) +
                   "; it must be from 0.001 to 1");
    for (size_t k = 0; k < sw.ports.size(); ++k) {
      const SwitchPort &p = sw.ports[k];
      if (p.rank < 0 || p.rank >= n)
        return Error(id + " has a port for rank " + std::to_string(p.rank) +
                     ", outside 0.." + std::to_string(n - 1));
      if (k > 0 && p.rank <= sw.ports[k - 1].rank)
        return Error(
            id + " lists rank " + std::to_string(p.rank) +
            (p.rank == sw.ports[k - 1].rank ? " twice" : " out of rank order"));
      if (!isUsableBandwidth(p.bandwidthGBps))
        return Error(id + "'s port for rank " + std::to_string(p.rank) +
                     " has a bandwidth of " + formatFigure(p.bandwidthGBps) +
                     " GB/s; it must be " + bandwidthRangeText());
      for (int r : {p.up, p.down})
        if (r < -1 || r >= (int)resources.size())
          return Error(id + "'s port for rank " + std::to_string(p.rank) +
                       " names resource " + std::to_string(r) +
                       ", but there are " + std::to_string(resources.size()));
    }
    for (size_t j = 0; j < i; ++j)
      if (switches[j].name == sw.name)
        return Error(id + " has the name of switch " + std::to_string(j));
  }
  return Status::success();
}

} // namespace ccsynth
