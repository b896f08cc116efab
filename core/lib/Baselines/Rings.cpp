//===- Rings.cpp - Searching disjoint rings at a common rate --------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements findRings (Rings.h). Capacity counts, at one rate, how many
// rings each link and each shared resource can still carry. Three searches
// use it: exactRings (undirected Hamiltonian cycles on point-to-point meshes,
// PathSearch and UndirectedSearch, within a work budget), multiNodeRings
// (paths through each node joined across node boundaries, a different NIC
// per ring) and greedyRings (whatever still fits). findRings tries each
// candidate rate among the links' bandwidths and keeps the one with the
// most rings x rate.
// Sections: Capacity, the path searches, the three ring searches, findRings.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Baselines/Rings.h"

#include "BaselineBuilder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <unordered_map>

namespace ccsynth {

namespace {

/// Largest point-to-point mesh given the exact search (its budget bounds
/// the time; beyond this the greedy search alone is used).
constexpr int kExactMaxRanks = 64;
/// Expansions allowed to one greedy cycle or path search.
constexpr long kGreedyBudget = 50'000;

/// Residual ring capacity of the arcs among `ranks` at one rate. Arcs are
/// addressed by positions in `ranks`.
class Capacity {
public:
  Capacity(const Topology &topo, const std::vector<int> &ranks,
           const std::vector<int> &best, double rate)
      : topo(topo), m((int)ranks.size()) {
    int n = topo.numRanks();
    arc.assign((size_t)m * m, -1);
    slot.assign((size_t)m * m, -1);
    out.assign(m, {});
    resCap.assign(topo.resources.size(), 0);
    // Capacities of the links among these ranks only (a node's 8 GPUs on
    // a machine of 16.7M links).
    // Where the ranks' pairs outnumber a quarter of the links (a whole
    // machine), a table indexed by link is smaller and faster than a map.
    std::unordered_map<int, int> slotMap;
    std::vector<int> slotTable;
    if ((size_t)m * m * 4 >= topo.links.size())
      slotTable.assign(topo.links.size(), -1);
    auto units = [&](double bw) { return (int)std::floor(bw / rate + 1e-9); };
    for (size_t i = 0; i < topo.resources.size(); ++i)
      resCap[i] = units(topo.resources[i].bandwidthGBps);
    for (int a = 0; a < m; ++a)
      for (int b = 0; b < m; ++b) {
        if (a == b)
          continue;
        int l = best[(size_t)ranks[a] * n + ranks[b]];
        if (l < 0 || topo.effectiveBandwidth(l) < rate * (1 - 1e-9))
          continue;
        arc[(size_t)a * m + b] = l;
        out[a].push_back(b);
        int *known = nullptr;
        if (!slotTable.empty()) {
          known = &slotTable[l];
        } else {
          auto it = slotMap.try_emplace(l, -1).first;
          known = &it->second;
        }
        if (*known < 0) {
          *known = (int)linkCap.size();
          linkCap.push_back(units(topo.links[l].bandwidthGBps));
        }
        slot[(size_t)a * m + b] = *known;
        if (!topo.links[l].resources.empty())
          hasResources = true;
      }
  }

  int size() const { return m; }
  bool exists(int a, int b) const { return arc[(size_t)a * m + b] >= 0; }
  int linkOf(int a, int b) const { return arc[(size_t)a * m + b]; }
  /// Rings the link of arc a -> b can still carry.
  int capLeft(int a, int b) const { return linkCap[slot[(size_t)a * m + b]]; }
  bool canUse(int a, int b) const {
    int l = arc[(size_t)a * m + b];
    if (l < 0 || linkCap[slot[(size_t)a * m + b]] <= 0)
      return false;
    for (int r : topo.links[l].resources)
      if (resCap[r] <= 0)
        return false;
    return true;
  }
  void use(int a, int b, int delta = 1) {
    int l = arc[(size_t)a * m + b];
    linkCap[slot[(size_t)a * m + b]] -= delta;
    for (int r : topo.links[l].resources)
      resCap[r] -= delta;
  }
  /// Uses every arc of the closed cycle when all fit (arcs sharing a
  /// resource are counted together), else changes nothing.
  bool tryUseCycle(const std::vector<int> &cycle) {
    for (size_t i = 0; i < cycle.size(); ++i) {
      int a = cycle[i], b = cycle[(i + 1) % cycle.size()];
      if (!canUse(a, b)) {
        for (size_t j = 0; j < i; ++j)
          use(cycle[j], cycle[(j + 1) % cycle.size()], -1);
        return false;
      }
      use(a, b);
    }
    return true;
  }
  /// Arcs that exist at this rate out of each position.
  const std::vector<int> &successors(int a) const { return out[a]; }
  bool anyResources() const { return hasResources; }

  /// Per distinct link of the arcs (see slot), per resource.
  std::vector<int> linkCap, resCap;

private:
  const Topology &topo;
  int m;
  std::vector<int> arc;
  /// Per arc a * m + b: its link's index in linkCap.
  std::vector<int> slot;
  std::vector<std::vector<int>> out;
  bool hasResources = false;
};

/// Depth-first search for a Hamiltonian path over `allowed` positions from
/// `from` to `to` (a cycle when they are equal), Warnsdorff-ordered: the
/// successor with the fewest onward choices first. Arcs are used while on
/// the path, so shared resources are respected; on success they stay used.
class PathSearch {
public:
  PathSearch(Capacity &cap, const std::vector<int> &allowed, long budget)
      : cap(cap), budget(budget) {
    inSet.assign(cap.size(), false);
    for (int a : allowed)
      inSet[a] = true;
    want = (int)allowed.size();
  }

  std::vector<int> find(int from, int to) {
    target = to;
    visited.assign(cap.size(), false);
    path = {from};
    visited[from] = true;
    bool cycle = from == to;
    if (want == 1)
      return from == to ? path : std::vector<int>{};
    if (dfs(from, cycle))
      return path;
    return {};
  }

private:
  Capacity &cap;
  long budget;
  std::vector<bool> inSet, visited;
  std::vector<int> path;
  int target = 0;
  int want = 0;

  int onward(int v) const {
    int c = 0;
    for (int w : cap.successors(v))
      c += inSet[w] && !visited[w] && cap.canUse(v, w);
    return c;
  }

  bool dfs(int u, bool cycle) {
    if (--budget < 0)
      return false;
    if ((int)path.size() == want) {
      if (!cycle)
        return u == target;
      if (!cap.canUse(u, target))
        return false;
      cap.use(u, target);
      return true;
    }
    std::vector<std::pair<int, int>> next;
    for (int v : cap.successors(u)) {
      if (!inSet[v] || visited[v] || !cap.canUse(u, v))
        continue;
      // A path must end at its target: enter it only as the last rank.
      if (!cycle && v == target && (int)path.size() + 1 != want)
        continue;
      next.push_back({onward(v), v});
    }
    std::stable_sort(next.begin(), next.end());
    for (auto [score, v] : next) {
      (void)score;
      cap.use(u, v);
      visited[v] = true;
      path.push_back(v);
      if (dfs(v, cycle))
        return true;
      path.pop_back();
      visited[v] = false;
      cap.use(u, v, -1);
      if (budget < 0)
        return false;
    }
    return false;
  }
};

/// Exact search for k edge-disjoint undirected Hamiltonian cycles, with
/// w[a][b] parallel edges between positions a and b.
class UndirectedSearch {
public:
  UndirectedSearch(std::vector<std::vector<int>> w, long &budget)
      : w(std::move(w)), budget(budget), m((int)this->w.size()) {}

  /// Up to `k` cycles, all or nothing; empty when none or out of budget.
  std::vector<std::vector<int>> find(int k) {
    want = k;
    cycles.clear();
    visited.assign(m, false);
    if (!startCycle())
      return {};
    return cycles;
  }
  bool exhausted() const { return budget < 0; }

private:
  std::vector<std::vector<int>> w;
  long &budget;
  int m;
  int want = 0;
  std::vector<std::vector<int>> cycles;
  std::vector<int> path;
  std::vector<bool> visited;

  int residualDegree(int a) const {
    return std::accumulate(w[a].begin(), w[a].end(), 0);
  }

  bool startCycle() {
    if ((int)cycles.size() == want)
      return true;
    // Every later cycle needs two edges at every rank.
    int need = 2 * (want - (int)cycles.size());
    for (int a = 0; a < m; ++a)
      if (residualDegree(a) < need)
        return false;
    path = {0};
    std::fill(visited.begin(), visited.end(), false);
    visited[0] = true;
    return extend(0);
  }

  bool extend(int u) {
    // An expansion scans every rank: charge it that much, so the budget
    // bounds time whatever the size.
    budget -= m;
    if (budget < 0)
      return false;
    if ((int)path.size() == m) {
      // Each cycle is found in one direction only.
      if (w[u][0] <= 0 || path[1] > path[m - 1])
        return false;
      --w[u][0];
      --w[0][u];
      cycles.push_back(path);
      std::vector<int> saved = path;
      std::vector<bool> savedVisited = visited;
      if (startCycle())
        return true;
      path = saved;
      visited = savedVisited;
      cycles.pop_back();
      ++w[u][0];
      ++w[0][u];
      return false;
    }
    std::vector<std::pair<int, int>> next;
    for (int v = 0; v < m; ++v)
      if (!visited[v] && w[u][v] > 0) {
        int onward = 0;
        for (int x = 0; x < m; ++x)
          onward += !visited[x] && x != v && w[v][x] > 0;
        next.push_back({onward, v});
      }
    std::stable_sort(next.begin(), next.end());
    for (auto [score, v] : next) {
      (void)score;
      --w[u][v];
      --w[v][u];
      visited[v] = true;
      path.push_back(v);
      if (extend(v))
        return true;
      path.pop_back();
      visited[v] = false;
      ++w[u][v];
      ++w[v][u];
      if (budget < 0)
        return false;
    }
    return false;
  }
};

/// Directed rings found greedily: a few structured candidates (rank order,
/// strided orders and their reverses), then Warnsdorff searches, each ring
/// followed by its reverse when that fits.
void greedyRings(Capacity &cap, int maxRings,
                 std::vector<std::vector<int>> &rings) {
  int m = cap.size();
  std::vector<int> all(m);
  std::iota(all.begin(), all.end(), 0);
  auto add = [&](std::vector<int> cycle) {
    if ((int)rings.size() >= maxRings || !cap.tryUseCycle(cycle))
      return false;
    rings.push_back(cycle);
    std::reverse(cycle.begin() + 1, cycle.end());
    if ((int)rings.size() < maxRings && cap.tryUseCycle(cycle))
      rings.push_back(cycle);
    return true;
  };
  for (int s = 1; s < m && (int)rings.size() < maxRings; ++s) {
    if (std::gcd(s, m) != 1)
      continue;
    std::vector<int> cycle;
    for (int i = 0; i < m; ++i)
      cycle.push_back((int)((long)i * s % m));
    add(cycle);
  }
  while ((int)rings.size() < maxRings) {
    PathSearch search(cap, all, kGreedyBudget);
    std::vector<int> cycle = search.find(0, 0);
    if (cycle.empty())
      break;
    // The search left the cycle's arcs used; release them so that add()
    // accounts for the ring and its reverse uniformly.
    for (int i = 0; i < m; ++i)
      cap.use(cycle[i], cycle[(i + 1) % m], -1);
    if (!add(cycle))
      break;
  }
}

/// Exact undirected decomposition for meshes without shared resources;
/// each cycle yields two directed rings.
void exactRings(Capacity &cap, int maxRings, long budget,
                std::vector<std::vector<int>> &rings) {
  int m = cap.size();
  // Parallel edges between a pair = rings both its directions can carry
  // (no shared resources here, so only the two links count).
  std::vector<std::vector<int>> w(m, std::vector<int>(m, 0));
  for (int a = 0; a < m; ++a)
    for (int b = 0; b < m; ++b)
      if (a != b && cap.exists(a, b) && cap.exists(b, a))
        w[a][b] = std::max(0, std::min(cap.capLeft(a, b), cap.capLeft(b, a)));
  int bound = maxRings / 2;
  for (int a = 0; a < m; ++a)
    bound = std::min(bound, std::accumulate(w[a].begin(), w[a].end(), 0) / 2);
  for (int k = bound; k >= 1; --k) {
    UndirectedSearch search(w, budget);
    std::vector<std::vector<int>> cycles = search.find(k);
    if (!cycles.empty()) {
      for (std::vector<int> c : cycles) {
        if (!cap.tryUseCycle(c))
          break;
        rings.push_back(c);
        std::reverse(c.begin() + 1, c.end());
        if (!cap.tryUseCycle(c))
          break;
        rings.push_back(c);
      }
      break;
    }
    if (search.exhausted())
      break;
  }
}

/// Multi-node rings that cross each node boundary once: ring q enters
/// node 0 at its q-th rank, leaves every node through the next rank that
/// still has capacity towards the next node (so rings spread over NICs),
/// and visits each node's ranks on a Hamiltonian path in between.
void multiNodeRings(Capacity &cap, const std::vector<int> &ranks,
                    const Topology &topo, int maxRings,
                    std::vector<std::vector<int>> &rings) {
  // Members of each node, as positions in `ranks`, in node order.
  std::vector<int> nodeIds;
  for (int r : ranks)
    nodeIds.push_back(topo.nodeOf[r]);
  std::sort(nodeIds.begin(), nodeIds.end());
  nodeIds.erase(std::unique(nodeIds.begin(), nodeIds.end()), nodeIds.end());
  int nodes = (int)nodeIds.size();
  std::vector<std::vector<int>> members(nodes);
  for (int p = 0; p < (int)ranks.size(); ++p) {
    int node = (int)(std::lower_bound(nodeIds.begin(), nodeIds.end(),
                                      topo.nodeOf[ranks[p]]) -
                     nodeIds.begin());
    members[node].push_back(p);
  }
  auto indexIn = [](const std::vector<int> &v, int x) {
    return (int)(std::find(v.begin(), v.end(), x) - v.begin());
  };
  // Path through the node from e to x. Greedy first: the least used link
  // next (rank order breaks ties), so that rings spread over a switch's
  // links rather than queue on the same ones; then a search.
  auto intraPath = [&](int node, int e, int x) -> std::vector<int> {
    const std::vector<int> &mem = members[node];
    int g = (int)mem.size();
    if (g == 1)
      return {e};
    std::vector<int> path{e};
    std::vector<bool> seen(cap.size(), false);
    seen[e] = true;
    for (int step = 1; step < g; ++step) {
      int cur = path.back(), ci = indexIn(mem, cur), best = -1, bestCap = 0;
      for (int i = 1; i < g; ++i) {
        int v = mem[(ci + i) % g];
        if (seen[v] || (v == x) != (step == g - 1) || !cap.canUse(cur, v))
          continue;
        int left = cap.capLeft(cur, v);
        if (best < 0 || left > bestCap) {
          best = v;
          bestCap = left;
        }
      }
      if (best < 0)
        break;
      cap.use(cur, best);
      seen[best] = true;
      path.push_back(best);
    }
    if ((int)path.size() == g)
      return path;
    for (size_t i = 0; i + 1 < path.size(); ++i)
      cap.use(path[i], path[i + 1], -1);
    PathSearch search(cap, mem, kGreedyBudget);
    return search.find(e, x);
  };
  auto release = [&](const std::vector<int> &path) {
    for (size_t i = 0; i + 1 < path.size(); ++i)
      cap.use(path[i], path[i + 1], -1);
  };

  // Ring q enters the first node at its q-th rank (or the next that works).
  auto addRing = [&](int q) {
    const std::vector<int> &first = members[0];
    int g0 = (int)first.size();
    bool found = false;
    for (int t = 0; t < g0 && !found; ++t) {
      int e0 = first[(q + t) % g0];
      int e0Index = (q + t) % g0;
      std::vector<int> savedLinks = cap.linkCap, savedRes = cap.resCap;
      std::vector<int> ring;
      int e = e0;
      bool ok = true;
      for (int node = 0; node < nodes && ok; ++node) {
        const std::vector<int> &mem = members[node];
        int g = (int)mem.size(), next = (node + 1) % nodes;
        const std::vector<int> &nextMem = members[next];
        int ei = indexIn(mem, e);
        std::vector<int> exits;
        if (g == 1)
          exits.push_back(e);
        for (int xi = 1; xi < g; ++xi)
          exits.push_back(mem[(ei + xi) % g]);
        bool chosen = false;
        for (size_t xi = 0; xi < exits.size() && !chosen; ++xi) {
          int x = exits[xi];
          std::vector<int> path = intraPath(node, e, x);
          if (path.empty())
            continue;
          int options = next == 0 ? 1 : (int)nextMem.size();
          for (int j = 0; j < options && !chosen; ++j) {
            int en = next == 0 ? e0 : nextMem[(e0Index + j) % nextMem.size()];
            if (!cap.canUse(x, en))
              continue;
            cap.use(x, en);
            ring.insert(ring.end(), path.begin(), path.end());
            e = en;
            chosen = true;
          }
          if (!chosen)
            release(path);
        }
        ok = chosen;
      }
      if (ok) {
        rings.push_back(ring);
        found = true;
      } else {
        cap.linkCap = savedLinks;
        cap.resCap = savedRes;
      }
    }
    return found;
  };

  // A second pass visits the nodes in reverse, for machines whose links
  // still have room for rings the other way round.
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1)
      std::reverse(members.begin(), members.end());
    for (int q = 0; (int)rings.size() < maxRings; ++q) {
      if (!addRing(q))
        break;
    }
  }
}

} // namespace

RingSet findRings(const Topology &topo, const std::vector<int> &ranks,
                  const RingSearchOptions &options) {
  if (ranks.size() <= 1)
    return findRings(topo, ranks, {}, options);
  return findRings(topo, ranks, baseline::bestLinks(topo), options);
}

RingSet findRings(const Topology &topo, const std::vector<int> &ranks,
                  const std::vector<int> &best,
                  const RingSearchOptions &options) {
  RingSet result;
  int m = (int)ranks.size();
  if (m == 0)
    return result;
  if (m == 1) {
    result.rings = {ranks};
    return result;
  }
  int maxRings = std::max(1, options.maxRings);
  int n = topo.numRanks();
  std::set<double, std::greater<>> rates;
  bool multiNode = false;
  // Links come in runs of one rate: insert a rate only when it changes.
  double lastRate = -1;
  for (int a : ranks) {
    multiNode |= topo.nodeOf[a] != topo.nodeOf[ranks[0]];
    for (int b : ranks)
      if (a != b && best[(size_t)a * n + b] >= 0) {
        double rate = topo.effectiveBandwidth(best[(size_t)a * n + b]);
        if (rate != lastRate)
          rates.insert(rate);
        lastRate = rate;
      }
  }
  double bestScore = 0;
  for (double rate : rates) {
    Capacity cap(topo, ranks, best, rate);
    std::vector<std::vector<int>> rings;
    if (m == 2) {
      while ((int)rings.size() < maxRings && cap.tryUseCycle({0, 1}))
        rings.push_back({0, 1});
    } else if (multiNode) {
      multiNodeRings(cap, ranks, topo, maxRings, rings);
    } else {
      if (!cap.anyResources() && m <= kExactMaxRanks)
        exactRings(cap, maxRings, options.budget, rings);
      greedyRings(cap, maxRings, rings);
    }
    // Rates come fastest first: a slower rate must carry strictly more.
    double score = rate * (double)rings.size();
    if (score > bestScore * (1 + 1e-9)) {
      bestScore = score;
      result.rateGBps = rate;
      result.rings.clear();
      for (const std::vector<int> &ring : rings) {
        std::vector<int> out;
        for (int p : ring)
          out.push_back(ranks[p]);
        result.rings.push_back(std::move(out));
      }
    }
  }
  if (result.rings.empty()) {
    // No Hamiltonian ring: one logical ring, node-major, forwarded hop by
    // hop through whatever ranks the route crosses.
    std::vector<int> order = ranks;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return topo.nodeOf[a] < topo.nodeOf[b];
    });
    result.rings = {order};
    result.routed = true;
  }
  return result;
}

RingSet findRings(const Topology &topo, const RingSearchOptions &options) {
  std::vector<int> all(topo.numRanks());
  std::iota(all.begin(), all.end(), 0);
  return findRings(topo, all, options);
}

} // namespace ccsynth
