//===- LowerBound.cpp - Cut-based lower bounds on collective time ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Everything is derived from the collective's pre/postconditions, so custom
// collectives get bounds too. The unit of demand is a distinct output set W
// (the values one output chunk must hold): data "for W" is any chunk whose
// values all belong to W, because values only accumulate (a chunk that
// ends in an output of W cannot hold a value outside W). Demands are taken
// from a family of pairwise-disjoint sets W, so that no single chunk can
// serve two of them; built-in collectives' sets are disjoint already, and
// for custom ones a greedy disjoint subfamily keeps the bound valid.
//
// Cut bound: for a cut (S, T), every W needed in T with a value from S needs
// one chunk to cross S -> T. The time is that data over an upper bound of
// the cut's capacity.
//
// Total-traffic bound: W, with values originating at the ranks O and
// needed at the ranks D, needs at least (|O| - 1 + [O and D disjoint]) +
// (|D| - 1) chunk transfers in all: gathering W at the first rank x of D
// that holds it connects O and x through transfers, and every other rank of
// D needs its own completing transfer afterwards (one-way gossip). For an
// AllReduce this is the classical 2(n-1)/n * M per rank. The time is that
// traffic over an upper bound of what all links carry together.
//
// Quotient bounds: the same count on the machine with each group of ranks
// contracted to one vertex (each node; groups of 2, 4, ... consecutive
// nodes; each rail, GPU i of every node), counting only transfers between
// groups, over the links between groups. On m nodes an AllReduce needs
// 2(m-1) transfers of each element between nodes: 2(m-1)/m of the buffer
// per node over its NICs. The proof and its assumptions (no reduction
// inside the network, each link direction counted on its own) are in
// docs/bounds.md.
//
// Capacities are upper bounds from link/resource covers: every link is
// charged either its own bandwidth or one shared resource it crosses, a
// resource counted once however many links it carries. The smallest of a
// few covers (own bandwidths, first/last resources, a greedy cover) is used.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Analysis/LowerBound.h"

#include "ccsynth/Analysis/Plot.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <span>

namespace ccsynth {

namespace {

constexpr int kMaxRankSubsetRanks = 16;
constexpr int kMaxNodeSubsetNodes = 12;

/// One demand: a distinct output set W, the ranks its values start on and
/// the ranks that need it.
struct Demand {
  std::vector<int> origins; ///< sorted, distinct
  std::vector<int> dests;   ///< sorted, distinct
};

/// Orders (origins, ranks) pairs by value, ranks through their pointer.
struct OriginsThenRanks {
  bool operator()(
      const std::pair<std::vector<int>, const std::vector<int> *> &a,
      const std::pair<std::vector<int>, const std::vector<int> *> &b) const {
    if (a.first != b.first)
      return a.first < b.first;
    return *a.second < *b.second;
  }
};

std::string formatGBps(double gbps) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g GB/s", gbps);
  return buf;
}

class BoundComputer {
public:
  BoundComputer(const Collective &c, const Topology &t, double b,
                std::optional<std::chrono::steady_clock::time_point> until,
                BoundScope scope)
      : col(c), topo(t), bytes(b), searchUntil(until) {
    if (scope == BoundScope::Machine)
      switches = t.switches;
  }

  LowerBound compute();

private:
  const Collective &col;
  const Topology &topo;
  /// The switches the bound may use: none for point-to-point schedules.
  std::span<const InNetworkSwitch> switches;
  double bytes;
  std::optional<std::chrono::steady_clock::time_point> searchUntil;
  /// Past searchUntil: the remaining cuts are skipped (each cut tried is
  /// complete, so the largest of them still bounds the time).
  bool timeUp() {
    if (searchUntil && std::chrono::steady_clock::now() >= *searchUntil)
      best.cutsCutShort = true;
    return best.cutsCutShort;
  }
  int n = 0;
  double chunkBytes = 0;
  std::vector<Demand> demands;
  /// Every distinct constrained output set with its needing ranks (for the
  /// latency bound, which may use overlapping sets too).
  std::vector<std::pair<PostSet, std::vector<int>>> allSets;
  std::vector<int> originRank; ///< per value id
  std::vector<std::vector<int>> outLinks, inLinks;

  LowerBound best;
  double bestTime = -1;

  /// The source side of the cut being considered (null for a quotient):
  /// switches with ports on both sides add what they can carry across.
  const std::vector<char> *cutSide = nullptr;

  // Scratch for capacity covers.
  std::vector<uint32_t> resStamp, linkStamp, firstStamp, lastStamp;
  uint32_t stamp = 0;
  std::vector<int> touched;
  std::vector<double> resLoad;
  std::vector<std::vector<int>> resLinks;

  void collectDemands();
  /// The links' capacity, plus what switches joining both sides of
  /// `cutSide` (when set) carry across; sets switchCrossed when one does.
  double capacity(const std::vector<int> &links);
  bool switchCrossed = false;
  /// Records the cut if it binds; `describe` names it (called only then,
  /// since most of the thousands of cuts tried do not bind).
  template <typename Describe>
  void consider(double chunks, const std::vector<int> &crossing,
                Describe describe);
  void crossingLinks(const std::vector<char> &inS, int sizeS,
                     std::vector<int> &out) const;
  /// The cuts around each single group (at most `maxGroups` of them).
  void singleGroupCuts(const std::vector<int> &groupOf, int numGroups,
                       const std::string &noun,
                       int maxGroups = std::numeric_limits<int>::max());
  void subsetCuts(const std::vector<int> &groupOf, int numGroups,
                  const std::string &noun);
  void totalTraffic();
  /// The total-traffic bound on the quotient that contracts each group of
  /// ranks to one vertex (transfers inside a group are free).
  void quotientTraffic(const std::vector<int> &groupOf,
                       const std::string &what);
  double latencyBound(bool &cutShort) const;
};

void BoundComputer::collectDemands() {
  if (!col.hasConditions() || col.numRanks != n)
    return;
  int numValues = col.numValues();
  originRank.assign(numValues, -1);
  for (int v = 0; v < numValues; ++v)
    originRank[v] = col.valueOrigin(v).rank;

  // Distinct constrained sets, found by their ids (equal sets share one),
  // with the ranks needing each; ordered by their values.
  std::vector<int> byValue(numValues, -1), byPool(col.numPostSets(), -1);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < col.outputChunks; ++i) {
      PostSet want = col.postAt(r, i);
      if (!want || want.empty())
        continue;
      int id = want.id();
      int &index = id >= 0 ? byValue[id] : byPool[-2 - id];
      if (index < 0) {
        index = (int)allSets.size();
        allSets.push_back({want, {}});
      }
      std::vector<int> &ranks = allSets[index].second;
      if (ranks.empty() || ranks.back() != r)
        ranks.push_back(r);
    }
  std::sort(allSets.begin(), allSets.end(), [](const auto &a, const auto &b) {
    return std::ranges::lexicographical_compare(a.first, b.first);
  });
  std::erase_if(allSets, [&](const auto &entry) {
    for (int v : entry.first)
      if (v < 0 || v >= numValues || originRank[v] < 0)
        return true;
    return false;
  });

  // A disjoint subfamily, smallest sets first: they add the most demands.
  std::vector<int> order(allSets.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = (int)i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return allSets[a].first.size() < allSets[b].first.size();
  });
  std::vector<bool> used(numValues, false);
  for (int i : order) {
    const auto &[set, ranks] = allSets[i];
    bool disjoint = true;
    for (int v : set)
      disjoint = disjoint && !used[v];
    if (!disjoint)
      continue;
    Demand d;
    for (int v : set) {
      used[v] = true;
      d.origins.push_back(originRank[v]);
    }
    std::sort(d.origins.begin(), d.origins.end());
    d.origins.erase(std::unique(d.origins.begin(), d.origins.end()),
                    d.origins.end());
    d.dests = ranks;
    demands.push_back(std::move(d));
  }
}

double BoundComputer::capacity(const std::vector<int> &links) {
  double own = 0, first = 0, last = 0;
  switchCrossed = false;
  // One mark per call tags what this call has seen in each scratch array.
  uint32_t mark = ++stamp;
  touched.clear();
  for (int l : links) {
    const Link &link = topo.links[l];
    own += link.bandwidthGBps;
    if (link.resources.empty()) {
      first += link.bandwidthGBps;
      last += link.bandwidthGBps;
      continue;
    }
    int f = link.resources.front(), b = link.resources.back();
    if (firstStamp[f] != mark) {
      firstStamp[f] = mark;
      first += topo.resources[f].bandwidthGBps;
    }
    if (lastStamp[b] != mark) {
      lastStamp[b] = mark;
      last += topo.resources[b].bandwidthGBps;
    }
    for (size_t i = 0; i < link.resources.size(); ++i) {
      int r = link.resources[i];
      // A resource named twice by one link still carries that link once.
      if (std::find(link.resources.begin(), link.resources.begin() + i, r) !=
          link.resources.begin() + i)
        continue;
      if (resStamp[r] != mark) {
        resStamp[r] = mark;
        resLoad[r] = 0;
        resLinks[r].clear();
        touched.push_back(r);
      }
      resLinks[r].push_back(l);
      resLoad[r] += link.bandwidthGBps;
    }
  }

  // Greedy cover: repeatedly charge the resource that saves the most over
  // charging its (still unassigned) links their own bandwidth. Savings only
  // shrink as links get assigned, so a lazy max-heap is enough.
  double greedy = own;
  std::priority_queue<std::pair<double, int>> heap;
  for (int r : touched)
    if (resLoad[r] > topo.resources[r].bandwidthGBps)
      heap.push({resLoad[r] - topo.resources[r].bandwidthGBps, r});
  while (!heap.empty()) {
    auto [saving, r] = heap.top();
    heap.pop();
    double load = 0;
    for (int l : resLinks[r])
      if (linkStamp[l] != mark)
        load += topo.links[l].bandwidthGBps;
    double current = load - topo.resources[r].bandwidthGBps;
    if (current <= 0)
      continue;
    if (current < saving * (1 - 1e-12) && !heap.empty() &&
        current < heap.top().first) {
      heap.push({current, r});
      continue;
    }
    greedy -= current;
    for (int l : resLinks[r])
      linkStamp[l] = mark;
  }
  // Switches joining both sides carry data across too: at most the smaller
  // side's ports (derated where the switch's throughput binds), through
  // the ports' own
  // resources where the crossing links already count them (first and last)
  // and on top of them where not.
  if (cutSide)
    for (const InNetworkSwitch &sw : switches) {
      double from = 0, to = 0, upExtra = 0, downExtra = 0;
      for (const SwitchPort &p : sw.ports) {
        if ((*cutSide)[p.rank]) {
          from += p.bandwidthGBps;
          if (p.up < 0 || firstStamp[p.up] != mark)
            upExtra += p.bandwidthGBps;
          if (p.up >= 0)
            firstStamp[p.up] = mark;
        } else {
          to += p.bandwidthGBps;
          if (p.down < 0 || lastStamp[p.down] != mark)
            downExtra += p.bandwidthGBps;
          if (p.down >= 0)
            lastStamp[p.down] = mark;
        }
      }
      if (from <= 0 || to <= 0)
        continue;
      switchCrossed = true;
      // A port moves at most its line rate one way, and the switch moves
      // at most `efficiency` of its two directions together through it.
      double through = std::min(from, to) * std::min(1.0, 2 * sw.efficiency);
      own += through;
      greedy += through;
      first += std::min(upExtra, through);
      last += std::min(downExtra, through);
    }
  return std::min({own, first, last, greedy});
}

template <typename Describe>
void BoundComputer::consider(double chunks, const std::vector<int> &crossing,
                             Describe describe) {
  if (chunks <= 0)
    return;
  double data = chunks * chunkBytes;
  // A cut no link crosses may still be crossed through a switch.
  switchCrossed = false;
  double cap = crossing.empty() && (!cutSide || switches.empty())
                   ? 0
                   : capacity(crossing);
  double time =
      cap > 0 ? data / (cap * 1e3) : std::numeric_limits<double>::infinity();
  if (time <= bestTime)
    return;
  bestTime = time;
  best.bandwidthUs = time;
  std::string what = describe();
  if (cap > 0)
    best.bindingCut =
        what + ": " + formatBytes(data) + " must cross " +
        std::to_string(crossing.size()) + " link" +
        (crossing.size() == 1 ? "" : "s") +
        (switchCrossed ? " and the switches joining both sides" : "") +
        " carrying at most " + formatGBps(cap);
  else
    best.bindingCut = what + ": " + formatBytes(data) +
                      " must cross, but no link does (the collective cannot "
                      "complete on this topology)";
}

void BoundComputer::crossingLinks(const std::vector<char> &inS, int sizeS,
                                  std::vector<int> &out) const {
  out.clear();
  if (sizeS <= n - sizeS) {
    for (int r = 0; r < n; ++r)
      if (inS[r])
        for (int l : outLinks[r])
          if (!inS[topo.links[l].dst])
            out.push_back(l);
  } else {
    for (int r = 0; r < n; ++r)
      if (!inS[r])
        for (int l : inLinks[r])
          if (inS[topo.links[l].src])
            out.push_back(l);
  }
}

/// The distinct groups of `ranks`, ascending, into `out`.
void groupsOf(const std::vector<int> &ranks, const std::vector<int> &groupOf,
              std::vector<int> &out) {
  out.clear();
  for (int r : ranks)
    out.push_back(groupOf[r]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

/// Cuts that put one group (a rank or a node) on one side: demands are
/// counted for all groups in one pass over the demands.
void BoundComputer::singleGroupCuts(const std::vector<int> &groupOf,
                                    int numGroups, const std::string &noun,
                                    int maxGroups) {
  std::vector<double> outOf(numGroups, 0), into(numGroups, 0);
  std::vector<int> og, dg;
  for (const Demand &d : demands) {
    groupsOf(d.origins, groupOf, og);
    groupsOf(d.dests, groupOf, dg);
    // S = {g}: W needs a chunk out of g when g holds a value of W and some
    // other group needs W; symmetrically into g.
    for (int g : og)
      if (dg.size() > 1 || (dg.size() == 1 && dg[0] != g))
        outOf[g] += 1;
    for (int g : dg)
      if (og.size() > 1 || (og.size() == 1 && og[0] != g))
        into[g] += 1;
  }
  std::vector<char> inS(n);
  std::vector<int> crossing;
  // Under a deadline the groups with the most chunks to move go first (a
  // broadcast's root), so that the cuts most likely to bind are tried
  // before it; without one, in group order.
  std::vector<int> visit(numGroups);
  for (int g = 0; g < numGroups; ++g)
    visit[g] = g;
  if (searchUntil)
    std::stable_sort(visit.begin(), visit.end(), [&](int a, int b) {
      return std::max(outOf[a], into[a]) > std::max(outOf[b], into[b]);
    });
  for (int i = 0; i < std::min(numGroups, maxGroups); ++i) {
    int g = visit[i];
    if (i % 64 == 0 && timeUp())
      return;
    int size = 0;
    for (int r = 0; r < n; ++r)
      size += (inS[r] = groupOf[r] == g);
    std::string name = noun + " " + std::to_string(g);
    cutSide = &inS;
    if (outOf[g] > 0) {
      crossingLinks(inS, size, crossing);
      consider(outOf[g], crossing,
               [&] { return name + " -> the other " + noun + "s"; });
    }
    if (into[g] > 0) {
      for (int r = 0; r < n; ++r)
        inS[r] = !inS[r];
      crossingLinks(inS, n - size, crossing);
      consider(into[g], crossing,
               [&] { return "the other " + noun + "s -> " + name; });
    }
    cutSide = nullptr;
  }
}

/// Every proper subset of groups (numGroups <= 16) as S.
void BoundComputer::subsetCuts(const std::vector<int> &groupOf, int numGroups,
                               const std::string &noun) {
  // Demands grouped by (origin groups, destination groups) masks.
  std::map<std::pair<uint32_t, uint32_t>, double> byMask;
  for (const Demand &d : demands) {
    uint32_t om = 0, dm = 0;
    for (int r : d.origins)
      om |= 1u << groupOf[r];
    for (int r : d.dests)
      dm |= 1u << groupOf[r];
    byMask[{om, dm}] += 1;
  }
  std::vector<std::pair<std::pair<uint32_t, uint32_t>, double>> masks(
      byMask.begin(), byMask.end());
  uint32_t full = (1u << numGroups) - 1;
  std::vector<char> inS(n);
  std::vector<int> crossing;
  for (uint32_t s = 1; s < full; ++s) {
    if (s % 64 == 0 && timeUp())
      return;
    double chunks = 0;
    for (const auto &[m, count] : masks)
      if ((m.first & s) && (m.second & ~s & full))
        chunks += count;
    if (chunks <= 0)
      continue;
    int size = 0;
    for (int r = 0; r < n; ++r)
      size += (inS[r] = (s >> groupOf[r]) & 1);
    crossingLinks(inS, size, crossing);
    cutSide = &inS;
    consider(chunks, crossing, [&] {
      std::vector<int> sSide, tSide;
      for (int g = 0; g < numGroups; ++g)
        ((s >> g) & 1 ? sSide : tSide).push_back(g);
      return noun + "s " + formatRankSet(sSide) + " -> " + noun + "s " +
             formatRankSet(tSide);
    });
    cutSide = nullptr;
  }
}

void BoundComputer::quotientTraffic(const std::vector<int> &groupOf,
                                    const std::string &what) {
  // All or nothing: a quotient's capacity needs every link between groups.
  if (timeUp())
    return;
  // The count assumes every transfer between groups takes a link: a switch
  // joining two groups reduces k contributions, or delivers k copies, in
  // one operation, so no such count holds there.
  for (const InNetworkSwitch &sw : switches)
    for (const SwitchPort &p : sw.ports)
      if (groupOf[p.rank] != groupOf[sw.ports.front().rank])
        return;
  double chunks = 0;
  std::vector<int> og, dg;
  for (const Demand &d : demands) {
    if (d.dests.empty())
      continue;
    groupsOf(d.origins, groupOf, og);
    groupsOf(d.dests, groupOf, dg);
    bool common = false;
    for (size_t i = 0, j = 0; i < og.size() && j < dg.size() && !common;) {
      if (og[i] < dg[j])
        ++i;
      else if (dg[j] < og[i])
        ++j;
      else
        common = true;
    }
    chunks += (double)og.size() - 1 + (common ? 0 : 1) + (double)dg.size() - 1;
  }
  std::vector<int> crossing;
  for (size_t l = 0; l < topo.links.size(); ++l)
    if (groupOf[topo.links[l].src] != groupOf[topo.links[l].dst])
      crossing.push_back((int)l);
  consider(chunks, crossing, [&] { return what; });
}

void BoundComputer::totalTraffic() {
  std::vector<int> rankGroup(n);
  for (int r = 0; r < n; ++r)
    rankGroup[r] = r;
  quotientTraffic(rankGroup, "all links together (every chunk transfer any "
                             "correct schedule needs, summed over ranks)");
  int nodes = topo.numNodes();
  if (nodes < 2)
    return;
  // Nodes contracted: an AllReduce's classical 2(m-1)/m of the buffer per
  // node on m nodes, over the links between nodes (their NICs).
  quotientTraffic(topo.nodeOf, "the node quotient (every chunk transfer "
                               "between nodes any correct schedule needs, "
                               "over the links between nodes)");
  // Groups of 2, 4, ... consecutive nodes.
  for (int g = 2; g < nodes; g *= 2) {
    std::vector<int> groupOf(n);
    for (int r = 0; r < n; ++r)
      groupOf[r] = topo.nodeOf[r] / g;
    quotientTraffic(groupOf, "the quotient of groups of " + std::to_string(g) +
                                 " nodes (transfers between groups over the "
                                 "links between them)");
  }
  // Rails: GPU i of every node contracted, when the nodes are alike.
  std::vector<int> railOf(n);
  int perNode = -1;
  bool alike = true;
  for (int node = 0; node < nodes && alike; ++node) {
    auto ranks = topo.ranksOfNode(node);
    alike = perNode < 0 || (int)ranks.size() == perNode;
    perNode = (int)ranks.size();
    for (size_t i = 0; i < ranks.size(); ++i)
      railOf[ranks[i]] = (int)i;
  }
  if (alike && perNode > 1)
    quotientTraffic(railOf, "the rail quotient (GPU i of every node "
                            "contracted; transfers between rails over the "
                            "links between them)");
}

/// Least total alpha from `src` to every rank (Dijkstra). A dense topology
/// (fc:4096 has 16M links) uses the heap-free O(n^2 + links) form.
std::vector<double> alphaFrom(const Topology &topo,
                              const std::vector<std::vector<int>> &outLinks,
                              int src) {
  const double inf = std::numeric_limits<double>::infinity();
  int n = topo.numRanks();
  std::vector<double> dist(n, inf);
  dist[src] = 0;
  if (topo.links.size() >= (size_t)n * (size_t)n / 16) {
    std::vector<char> done(n, 0);
    for (int round = 0; round < n; ++round) {
      int u = -1;
      for (int v = 0; v < n; ++v)
        if (!done[v] && dist[v] < inf && (u < 0 || dist[v] < dist[u]))
          u = v;
      if (u < 0)
        break;
      done[u] = 1;
      for (int l : outLinks[u]) {
        const Link &link = topo.links[l];
        dist[link.dst] = std::min(dist[link.dst], dist[u] + link.alphaUs);
      }
    }
    return dist;
  }
  using Item = std::pair<double, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
  pq.push({0, src});
  while (!pq.empty()) {
    auto [du, u] = pq.top();
    pq.pop();
    if (du > dist[u])
      continue;
    for (int l : outLinks[u]) {
      const Link &link = topo.links[l];
      if (du + link.alphaUs < dist[link.dst]) {
        dist[link.dst] = du + link.alphaUs;
        pq.push({dist[link.dst], link.dst});
      }
    }
  }
  return dist;
}

double BoundComputer::latencyBound(bool &cutShort) const {
  // Distances are needed only from the ranks where demanded values
  // originate, to the ranks that need them. Any path into d ends with a
  // link into d, so a direct link o -> d as fast as d's fastest incoming
  // link is the shortest path: fully connected machines need no search.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> minIn(n, inf), minOut(n, inf);
  for (const Link &l : topo.links) {
    minIn[l.dst] = std::min(minIn[l.dst], l.alphaUs);
    minOut[l.src] = std::min(minOut[l.src], l.alphaUs);
  }
  // Sets with the same origins and ranks add the same pairs: each such
  // pair of lists counts once (an AllReduce's c sets are one).
  std::vector<std::vector<int>> destsOf(n);
  std::set<std::pair<std::vector<int>, const std::vector<int> *>,
           OriginsThenRanks>
      seen;
  for (const auto &[set, ranks] : allSets) {
    std::vector<int> origins;
    for (int v : set)
      origins.push_back(originRank[v]);
    std::sort(origins.begin(), origins.end());
    origins.erase(std::unique(origins.begin(), origins.end()), origins.end());
    if (!seen.insert({origins, &ranks}).second)
      continue;
    for (int o : origins)
      destsOf[o].insert(destsOf[o].end(), ranks.begin(), ranks.end());
  }
  double worst = 0;
  std::vector<double> direct(n, inf);
  for (int o = 0; o < n; ++o) {
    std::vector<int> &dests = destsOf[o];
    if (dests.empty())
      continue;
    std::sort(dests.begin(), dests.end());
    dests.erase(std::unique(dests.begin(), dests.end()), dests.end());
    for (int l : outLinks[o])
      direct[topo.links[l].dst] =
          std::min(direct[topo.links[l].dst], topo.links[l].alphaUs);
    bool needSearch = false;
    // Past the deadline: a path from o to d is its direct link or has at
    // least two links, o's fastest way out and d's fastest way in.
    bool cheap =
        searchUntil && std::chrono::steady_clock::now() >= *searchUntil;
    // The shortest path to d is at most the direct link, so a search cannot
    // raise `worst` when every such link is within it; on symmetric
    // machines the first origin's search settles every later one.
    std::vector<int> open;
    for (int d : dests)
      if (d != o) {
        if (direct[d] == minIn[d])
          worst = std::max(worst, direct[d]);
        else if (cheap) {
          worst = std::max(worst, std::min(direct[d], minOut[o] + minIn[d]));
          cutShort = true;
        } else
          open.push_back(d);
      }
    for (int d : open)
      if (!(direct[d] <= worst))
        needSearch = true;
    for (int l : outLinks[o])
      direct[topo.links[l].dst] = inf;
    if (!needSearch)
      continue;
    std::vector<double> dist = alphaFrom(topo, outLinks, o);
    for (int d : open)
      worst = std::max(worst, dist[d]);
  }
  // A path through a switch costs at least the switch's latency: each
  // pair's bound is the smaller of its link path and the cheapest switch.
  for (const InNetworkSwitch &sw : switches)
    worst = std::min(worst, sw.alphaUs);
  return worst;
}

LowerBound BoundComputer::compute() {
  n = topo.numRanks();
  if (col.numRanks != n) {
    best.bindingCut = "no bound: the collective has " +
                      std::to_string(col.numRanks) +
                      " ranks but the topology has " + std::to_string(n);
    return best;
  }
  if (Status s = topo.validate(); !s) {
    best.bindingCut = "no bound: " + s.error().message;
    return best;
  }
  if (!std::isfinite(bytes) || bytes < 0) {
    best.bindingCut = "no bound: the size must be a non-negative number";
    return best;
  }
  chunkBytes = bytes / col.sizeDivisor();
  outLinks.assign(n, {});
  inLinks.assign(n, {});
  for (size_t l = 0; l < topo.links.size(); ++l) {
    outLinks[topo.links[l].src].push_back((int)l);
    inLinks[topo.links[l].dst].push_back((int)l);
  }
  resStamp.assign(topo.resources.size(), 0);
  firstStamp.assign(topo.resources.size(), 0);
  lastStamp.assign(topo.resources.size(), 0);
  resLoad.assign(topo.resources.size(), 0);
  resLinks.assign(topo.resources.size(), {});
  linkStamp.assign(topo.links.size(), 0);

  collectDemands();
  best.bindingCut = "no data has to move between ranks";

  std::vector<int> rankGroup(n);
  for (int r = 0; r < n; ++r)
    rankGroup[r] = r;
  // Under a deadline the cuts most likely to bind come first: the one
  // around the rank with the most chunks to move (a broadcast's root),
  // then the quotients (on multi-node machines the node quotient usually
  // binds, and on 4,096 ranks the single-rank cuts alone take seconds).
  // The maximum is the same in any order; only the description of a tied
  // cut may differ.
  if (searchUntil) {
    singleGroupCuts(rankGroup, n, "rank", 1);
    totalTraffic();
  }
  singleGroupCuts(rankGroup, n, "rank");
  int nodes = topo.numNodes();
  if (nodes > 1) {
    if (nodes <= kMaxNodeSubsetNodes)
      subsetCuts(topo.nodeOf, nodes, "node");
    else
      singleGroupCuts(topo.nodeOf, nodes, "node");
  }
  if (n > 2 && n <= kMaxRankSubsetRanks)
    subsetCuts(rankGroup, n, "rank");
  if (!searchUntil)
    totalTraffic();
  if (bestTime < 0)
    best.bandwidthUs = 0;
  best.latencyUs = latencyBound(best.latencyCutShort);
  return best;
}

} // namespace

LowerBound
lowerBound(const Collective &collective, const Topology &topology, double bytes,
           std::optional<std::chrono::steady_clock::time_point> searchUntil,
           BoundScope scope) {
  BoundComputer computer(collective, topology, bytes, searchUntil, scope);
  return computer.compute();
}

} // namespace ccsynth
