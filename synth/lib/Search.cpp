//===- Search.cpp - Finding route plans: heuristic, routing, exact --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements Search.h: the cost model, busy times and a load lower bound
// from node cuts; heuristicPlan (greedy load-aware trees), minHopPlan and
// hierarchicalPlan (routes through rails between nodes on large machines);
// routingPlans and exactPlan are in SearchRouting.cpp, the helpers both
// use in SearchInternal.h.
// Sections: cost and busy times, heuristic plans.
// See docs/synth.md ("Method").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Synth/Search.h"
#include "SearchInternal.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <sstream>
#include <tuple>

namespace ccsynth::synth {

CostModel makeCostModel(const Topology &topo, double chunkBytes) {
  CostModel c;
  c.chunkBytes = chunkBytes;
  for (const Link &l : topo.links)
    c.link.push_back(l.alphaUs + chunkBytes / (l.bandwidthGBps * 1e3));
  for (const Resource &r : topo.resources)
    c.resource.push_back(chunkBytes / (r.bandwidthGBps * 1e3));
  return c;
}

double SearchContext::secondsLeft() const {
  return std::chrono::duration<double>(deadline -
                                       std::chrono::steady_clock::now())
      .count();
}


double busyTime(const RoutingProblem &p, const Plan &plan,
                const CostModel &cost) {
  const Topology &t = *p.topo;
  std::vector<double> link(t.links.size(), 0), res(t.resources.size(), 0);
  for (const PlanSend &s : plan.sends) {
    link[s.link] += cost.link[s.link];
    for (int x : t.links[s.link].resources)
      res[x] += cost.resource[x];
  }
  double m = 0;
  for (double v : link)
    m = std::max(m, v);
  for (double v : res)
    m = std::max(m, v);
  return m;
}

using namespace detail;


std::optional<Plan>
heuristicPlan(const RoutingProblem &p, const CostModel &cost,
              std::optional<std::chrono::steady_clock::time_point> deadline) {
  const Topology &t = *p.topo;
  int n = t.numRanks();
  std::vector<int> load(t.links.size(), 0);
  std::vector<double> resLoad(t.resources.size(), 0);
  Plan plan;
  plan.method = "heuristic shortest-path trees";
  std::vector<double> dist(n);
  std::vector<int> via(n), hops(n);
  // Trees are grown for orbit representatives, one destination at a time
  // (so that a tree sees the load it adds itself: a value should cross a
  // NIC once, not once per remote GPU); every image of a tree then adds its
  // load before the next representative is routed.
  for (int rep : p.reps) {
    const RouteValue &val = p.values[rep];
    std::vector<char> inTree(n, 0), wanted(n, 0);
    inTree[val.origin] = 1;
    std::vector<int> depthOf(n, 0), recvLink(n, -1);
    int remaining = 0;
    for (int d : val.dests)
      if (!inTree[d]) {
        wanted[d] = 1;
        ++remaining;
      }
    while (remaining > 0) {
      if (deadline && std::chrono::steady_clock::now() >= *deadline)
        return std::nullopt;
      std::fill(dist.begin(), dist.end(),
                std::numeric_limits<double>::infinity());
      std::fill(via.begin(), via.end(), -1);
      using Item = std::pair<double, int>;
      std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
      for (int r = 0; r < n; ++r)
        if (inTree[r]) {
          dist[r] = 0;
          hops[r] = depthOf[r];
          pq.push({0, r});
        }
      int target = -1;
      while (!pq.empty()) {
        auto [d, u] = pq.top();
        pq.pop();
        if (d > dist[u])
          continue;
        if (wanted[u] && !inTree[u]) {
          target = u;
          break;
        }
        for (int l : p.outLinks[u]) {
          int dst = t.links[l].dst;
          if (inTree[dst] || !p.allowed(rep, l))
            continue;
          // Shared resources (NICs, switch ports) count every transfer
          // that crosses them, whichever link it takes.
          double w = cost.link[l] * (1 + load[l]);
          for (int x : t.links[l].resources)
            w += cost.resource[x] * (1 + resLoad[x]);
          if (d + w < dist[dst]) {
            dist[dst] = d + w;
            via[dst] = l;
            hops[dst] = hops[u] + 1;
            pq.push({dist[dst], dst});
          }
        }
      }
      if (target < 0)
        break; // unreachable: explainInfeasible reports it
      std::vector<int> path;
      for (int r = target; !inTree[r]; r = t.links[via[r]].src)
        path.push_back(r);
      for (auto it = path.rbegin(); it != path.rend(); ++it) {
        int r = *it;
        inTree[r] = 1;
        depthOf[r] = hops[r];
        recvLink[r] = via[r];
        remaining -= wanted[r];
        ++load[via[r]];
        for (int x : t.links[via[r]].resources)
          resLoad[x] += 1;
      }
    }
    // Images of the tree, parents first.
    appendOrbitTrees(p, rep, recvLink, depthOf, plan, [&](int v, int l) {
      if (v != rep) {
        ++load[l];
        for (int x : t.links[l].resources)
          resLoad[x] += 1;
      }
    });
  }
  return plan;
}

std::optional<Plan>
minHopPlan(const RoutingProblem &p, const CostModel &cost,
           std::optional<std::chrono::steady_clock::time_point> deadline) {
  const Topology &t = *p.topo;
  int n = t.numRanks();
  Plan plan;
  plan.method = "minimum-hop routes";
  for (int v = 0; v < (int)p.values.size(); ++v) {
    if (deadline && std::chrono::steady_clock::now() >= *deadline)
      return std::nullopt;
    const RouteValue &val = p.values[v];
    // Lexicographic (hops, cost) Dijkstra from the origin.
    using Key = std::pair<int, double>;
    std::vector<Key> dist(n, {INT_MAX, 0});
    std::vector<int> via(n, -1);
    dist[val.origin] = {0, 0};
    using Item = std::pair<Key, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
    pq.push({dist[val.origin], val.origin});
    while (!pq.empty()) {
      auto [d, u] = pq.top();
      pq.pop();
      if (d > dist[u])
        continue;
      for (int l : p.outLinks[u]) {
        if (!p.allowed(v, l))
          continue;
        int w = t.links[l].dst;
        Key nd{d.first + 1, d.second + cost.link[l]};
        if (nd < dist[w]) {
          dist[w] = nd;
          via[w] = l;
          pq.push({nd, w});
        }
      }
    }
    std::vector<char> need(n, 0);
    for (int d : val.dests)
      for (int r = d; r != val.origin && via[r] >= 0 && !need[r];
           r = t.links[via[r]].src)
        need[r] = 1;
    std::vector<int> ranks;
    for (int r = 0; r < n; ++r)
      if (need[r])
        ranks.push_back(r);
    std::sort(ranks.begin(), ranks.end(), [&](int a, int b) {
      return dist[a] != dist[b] ? dist[a] < dist[b] : a < b;
    });
    std::vector<int> sendInto(n, -1);
    for (int r : ranks) {
      int l = via[r], src = t.links[l].src;
      PlanSend s;
      s.value = v;
      s.link = l;
      s.slot = dist[r].first;
      s.parent = src == val.origin ? -1 : sendInto[src];
      sendInto[r] = (int)plan.sends.size();
      plan.sends.push_back(s);
    }
  }
  return plan;
}

std::optional<Plan>
hierarchicalPlan(const RoutingProblem &p, const CostModel &cost,
                 std::optional<std::chrono::steady_clock::time_point> deadline,
                 RailRoutes rails) {
  const Topology &t = *p.topo;
  int n = t.numRanks(), nodes = t.numNodes();
  if (nodes < 2)
    return std::nullopt;
  std::vector<std::vector<int>> ranksOf(nodes);
  std::vector<int> pos(n);
  for (int r = 0; r < n; ++r) {
    pos[r] = (int)ranksOf[t.nodeOf[r]].size();
    ranksOf[t.nodeOf[r]].push_back(r);
  }
  std::vector<std::vector<int>> localOut(n);
  for (int l : p.usableLinks)
    if (t.sameNode(t.links[l].src, t.links[l].dst))
      localOut[t.links[l].src].push_back(l);
  // Minimum-hop (then cheapest) tree inside a node from each rank, built on
  // first use: the link each rank of the node receives over (-1 for the
  // root and for ranks it cannot reach), and the ranks in order of hops.
  struct NodeTree {
    std::vector<int> recv, hops, order;
  };
  std::vector<std::optional<NodeTree>> trees(n);
  auto treeFrom = [&](int root) -> const NodeTree & {
    if (trees[root])
      return *trees[root];
    const std::vector<int> &members = ranksOf[t.nodeOf[root]];
    NodeTree tr;
    size_t m = members.size();
    tr.recv.assign(m, -1);
    tr.hops.assign(m, INT_MAX);
    std::vector<double> dist(m, std::numeric_limits<double>::infinity());
    using Item = std::pair<std::pair<int, double>, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
    tr.hops[pos[root]] = 0;
    dist[pos[root]] = 0;
    pq.push({{0, 0.0}, root});
    while (!pq.empty()) {
      auto [key, u] = pq.top();
      pq.pop();
      if (key != std::make_pair(tr.hops[pos[u]], dist[pos[u]]))
        continue;
      tr.order.push_back(u);
      for (int l : localOut[u]) {
        int w = t.links[l].dst;
        std::pair<int, double> nk{key.first + 1, key.second + cost.link[l]};
        if (nk < std::make_pair(tr.hops[pos[w]], dist[pos[w]])) {
          tr.hops[pos[w]] = nk.first;
          dist[pos[w]] = nk.second;
          tr.recv[pos[w]] = l;
          pq.push({nk, w});
        }
      }
    }
    trees[root] = std::move(tr);
    return *trees[root];
  };

  Plan plan;
  plan.method = rails == RailRoutes::Direct
                    ? "hierarchical routes (rails, then within nodes)"
                : rails == RailRoutes::Ring
                    ? "hierarchical routes (a ring per rail, then within nodes)"
                    : "hierarchical routes (two rings per rail, then within "
                      "nodes)";
  // The link from `from` to its rail peer in `node` (same position in its
  // node), when the sketch lets value v take it.
  std::vector<std::vector<int>> railOut(n);
  auto railLink = [&](int v, int from, int node) {
    if (railOut[from].empty()) {
      railOut[from].assign(nodes, -1);
      for (int l : p.outLinks[from]) {
        int to = t.links[l].dst, b = t.nodeOf[to];
        if (b != t.nodeOf[from] && pos[to] == pos[from] && railOut[from][b] < 0)
          railOut[from][b] = l;
      }
    }
    int l = railOut[from][node];
    return l >= 0 && p.allowed(v, l) ? l : -1;
  };
  std::vector<int> sendInto(n, -1);
  std::vector<char> need(n, 0), keep(n, 0);
  // Per node: the chosen link into it from the current origin, and its
  // rank (rail peer first, then a rank that needs the value, then cost).
  std::vector<int> entry(nodes, -1);
  std::vector<std::tuple<int, int, double>> entryKey(nodes);
  // Sends along `root`'s tree in its node to the ranks marked in `need`;
  // false when one of them is out of the tree's reach.
  auto spread = [&](int v, int root, int level) {
    const NodeTree &tr = treeFrom(root);
    const std::vector<int> &members = ranksOf[t.nodeOf[root]];
    for (int r : members)
      keep[r] = 0;
    for (int r : members) {
      if (!need[r] || r == root)
        continue;
      if (tr.recv[pos[r]] < 0)
        return false;
      for (int x = r; x != root && !keep[x]; x = t.links[tr.recv[pos[x]]].src)
        keep[x] = 1;
    }
    for (int r : tr.order) {
      if (!keep[r])
        continue;
      int l = tr.recv[pos[r]];
      int src = t.links[l].src;
      PlanSend s;
      s.value = v;
      s.link = l;
      s.slot = level + tr.hops[pos[r]];
      s.parent = src == p.values[v].origin ? -1 : sendInto[src];
      sendInto[r] = (int)plan.sends.size();
      plan.sends.push_back(s);
    }
    return true;
  };
  for (int v = 0; v < (int)p.values.size(); ++v) {
    if ((v & 63) == 0 && deadline &&
        std::chrono::steady_clock::now() >= *deadline)
      return std::nullopt;
    const RouteValue &val = p.values[v];
    int o = val.origin, a = t.nodeOf[o];
    for (int d : val.dests)
      need[d] = 1;
    if (rails != RailRoutes::Direct) {
      bool ok = spread(v, o, 0);
      // Forward round the ring (and backward, for the second ring) as far
      // as the farthest node that needs the value.
      int forward = nodes - 1, backward = 0;
      if (rails == RailRoutes::BidirectionalRing) {
        forward = nodes / 2;
        backward = nodes - 1 - forward;
      }
      for (int dir = 0; dir < 2 && ok; ++dir) {
        int steps = dir == 0 ? forward : backward;
        auto nodeAt = [&](int i) {
          return ((a + (dir ? -i : i)) % nodes + nodes) % nodes;
        };
        int last = 0;
        for (int i = 1; i <= steps; ++i)
          if (p.destNode[v][nodeAt(i)])
            last = i;
        int at = o, parent = -1;
        for (int i = 1; i <= last && ok; ++i) {
          int l = railLink(v, at, nodeAt(i));
          if (l < 0) {
            ok = false;
            break;
          }
          PlanSend s;
          s.value = v;
          s.link = l;
          s.slot = i;
          s.parent = parent;
          at = t.links[l].dst;
          parent = (int)plan.sends.size();
          sendInto[at] = parent;
          plan.sends.push_back(s);
          ok = spread(v, at, i);
        }
      }
      for (int d : val.dests)
        need[d] = 0;
      if (!ok)
        return std::nullopt;
      continue;
    }
    std::fill(entry.begin(), entry.end(), -1);
    for (int l : p.outLinks[o]) {
      int dst = t.links[l].dst, b = t.nodeOf[dst];
      if (b == a || !p.destNode[v][b] || !p.allowed(v, l))
        continue;
      std::tuple<int, int, double> key{p.localOf[dst] == p.localOf[o] ? 0 : 1,
                                       need[dst] ? 0 : 1, cost.link[l]};
      if (entry[b] < 0 || key < entryKey[b]) {
        entry[b] = l;
        entryKey[b] = key;
      }
    }
    bool ok = true;
    for (int b = 0; b < nodes && ok; ++b) {
      if (b == a) {
        ok = spread(v, o, 0);
        continue;
      }
      if (!p.destNode[v][b])
        continue;
      if (entry[b] < 0) {
        ok = false;
        break;
      }
      int e = t.links[entry[b]].dst;
      PlanSend s;
      s.value = v;
      s.link = entry[b];
      s.slot = 1;
      s.parent = -1;
      sendInto[e] = (int)plan.sends.size();
      plan.sends.push_back(s);
      ok = spread(v, e, 1);
    }
    for (int d : val.dests)
      need[d] = 0;
    if (!ok)
      return std::nullopt;
  }
  return plan;
}

} // namespace ccsynth::synth
