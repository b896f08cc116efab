//===- Search.cpp - Finding route plans: heuristic, routing, exact --------===//
#include "ccsynth/Synth/Search.h"

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

namespace {

std::string fmt(double x, int prec = 2) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(prec);
  os << x;
  return os.str();
}

/// Largest per-link / per-resource busy time of a plan, µs.
} // namespace

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

namespace {

/// Hop distance from each value's origin to its farthest destination.
int minDepth(const RoutingProblem &p) {
  const Topology &t = *p.topo;
  int n = t.numRanks(), depth = 0;
  for (int v : p.reps) {
    std::vector<int> d(n, -1);
    std::deque<int> q{p.values[v].origin};
    d[p.values[v].origin] = 0;
    while (!q.empty()) {
      int u = q.front();
      q.pop_front();
      for (int l : p.outLinks[u])
        if (d[t.links[l].dst] < 0 && p.allowed(v, l)) {
          d[t.links[l].dst] = d[u] + 1;
          q.push_back(t.links[l].dst);
        }
    }
    for (int dst : p.values[v].dests)
      depth = std::max(depth, d[dst]);
  }
  return depth;
}

/// Upper estimate of send variables of an encoding with `horizon` slots.
long long estimateVars(const RoutingProblem &p, int horizon) {
  long long total = 0;
  for (int v : p.reps) {
    long long links = 0;
    for (int l : p.usableLinks)
      links += p.allowed(v, l);
    total += links * horizon;
  }
  return total;
}

std::vector<int> linkCaps(const RoutingProblem &p, const CostModel &cost,
                          double bound) {
  std::vector<int> caps(p.topo->links.size(), -1);
  for (int l : p.usableLinks)
    caps[l] = (int)std::floor(bound / cost.link[l] + 1e-9);
  return caps;
}

std::vector<int> resourceCaps(const RoutingProblem &p, const CostModel &cost,
                              double bound) {
  std::vector<int> caps(p.topo->resources.size(), -1);
  for (size_t x = 0; x < caps.size(); ++x)
    caps[x] = (int)std::floor(bound / cost.resource[x] + 1e-9);
  return caps;
}

/// One node's boundary in one direction (values entering the node, or
/// leaving it) and what must cross it: `count` values over the usable
/// `links` that cross it. A resource is `exclusive` when no usable link
/// outside the cut uses it; `width` is the most resources a crossing link
/// has.
struct NodeCut {
  int count = 0;
  std::vector<int> links;
  std::vector<char> exclusive;
  size_t width = 0;

  /// The j-th resource of every crossing link, when each has one and it is
  /// exclusive (links list their resources in a fixed role order, e.g. the
  /// source's NIC, then the destination's, so these form a cover: a set of
  /// resources every crossing link uses one of); empty otherwise.
  std::vector<int> cover(const Topology &t, size_t j) const {
    std::vector<int> rs;
    for (int l : links) {
      const auto &lr = t.links[l].resources;
      if (j >= lr.size() || !exclusive[lr[j]])
        return {};
      rs.push_back(lr[j]);
    }
    return rs;
  }
};

/// Calls f(cut) for each node boundary of a multi-node problem, in each
/// direction, that some value must cross.
template <class F> void forEachNodeCut(const RoutingProblem &p, F &&f) {
  const Topology &t = *p.topo;
  for (int dir = 0; dir < 2 && t.numNodes() > 1; ++dir)
    for (int b = 0; b < t.numNodes(); ++b) {
      NodeCut cut;
      for (const RouteValue &v : p.values) {
        bool inside = t.nodeOf[v.origin] == b, other = false;
        for (int d : v.dests)
          other |= dir == 0 ? (t.nodeOf[d] == b) : (t.nodeOf[d] != b);
        cut.count += (dir == 0 ? !inside : inside) && other;
      }
      if (cut.count == 0)
        continue;
      cut.exclusive.assign(t.resources.size(), 1);
      for (int l : p.usableLinks) {
        int ns = t.nodeOf[t.links[l].src], nd = t.nodeOf[t.links[l].dst];
        bool in = dir == 0 ? (nd == b && ns != b) : (ns == b && nd != b);
        for (int x : t.links[l].resources)
          if (!in)
            cut.exclusive[x] = 0;
        if (in) {
          cut.links.push_back(l);
          cut.width = std::max(cut.width, t.links[l].resources.size());
        }
      }
      f(cut);
    }
}

/// A lower bound on the load objective: every needed reception of a rank
/// enters through its in-links, and every value a node needs from outside
/// crosses the links (and the shared resources) entering that node; the
/// same for values leaving their origin's node.
double loadLowerBound(const RoutingProblem &p, const CostModel &cost) {
  const Topology &t = *p.topo;
  std::vector<int> need(t.numRanks(), 0);
  for (const RouteValue &v : p.values)
    for (int d : v.dests)
      ++need[d];
  double lb = 0;
  for (int r = 0; r < t.numRanks(); ++r) {
    double rate = 0;
    for (int l : p.inLinks[r])
      rate += 1.0 / cost.link[l];
    if (rate > 0 && need[r] > 0)
      lb = std::max(lb, need[r] / rate);
  }
  // Node cuts: what crosses a node's boundary at its links' rate, and at
  // most at the rate of any cover of its links by shared resources.
  forEachNodeCut(p, [&](const NodeCut &cut) {
    double rate = 0;
    for (int l : cut.links)
      rate += 1.0 / cost.link[l];
    for (size_t j = 0; j < cut.width; ++j) {
      std::vector<int> rs = cut.cover(t, j);
      if (rs.empty())
        continue;
      std::set<int> cover(rs.begin(), rs.end());
      double resRate = 0;
      for (int x : cover)
        resRate += 1.0 / cost.resource[x];
      rate = std::min(rate, resRate);
    }
    if (rate > 0)
      lb = std::max(lb, cut.count / rate);
  });
  return lb;
}

std::string describePlan(const RoutingProblem &p, const Plan &plan,
                         const CostModel &cost) {
  int depth = 0;
  for (const PlanSend &s : plan.sends)
    depth = std::max(depth, s.slot);
  return std::to_string(plan.sends.size()) +
         " transfers, max link/resource "
         "busy " +
         fmt(busyTime(p, plan, cost)) + " us, depth " + std::to_string(depth);
}

/// Solves `query` (a base encoding plus query constraints) with a fresh
/// solver within a fraction of the time left; keeps the solver in `out`
/// for decoding and records timeouts.
SolveOutcome solveFresh(const BoolModel &query, SearchContext &ctx,
                        double fraction,
                        std::unique_ptr<IncrementalSolver> &out,
                        bool budgeted = true) {
  SolveOutcome o;
  double left = ctx.secondsLeft();
  if (left <= 0.01) {
    ctx.cutShort = ctx.deadlineHit = true;
    o.reason = "time limit";
    return o;
  }
  SolverOptions so;
  so.seed = ctx.seed;
  auto solver = std::make_unique<IncrementalSolver>(so);
  if (Status s = solver->sync(query); !s) {
    o.reason = s.error().message;
    return o;
  }
  o = solver->solve({}, std::max(0.01, left * fraction),
                    budgeted ? ctx.callConflicts : 0);
  if (o.status == SolveStatus::Unknown) {
    ctx.cutShort = true;
    ctx.deadlineHit |= ctx.secondsLeft() <= 0.05;
  }
  out = std::move(solver);
  return o;
}

} // namespace

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

std::vector<Plan> routingPlans(const RoutingProblem &p, const CostModel &cost,
                               const RoutingSearchOptions &opts,
                               SearchContext &ctx) {
  std::vector<Plan> out;
  int d0 = minDepth(p);
  int slack = opts.slack;
  long long perLevel = estimateVars(p, 1);
  while (slack > 0 && perLevel * (d0 + slack) > ctx.maxVars)
    --slack;
  int H = d0 + slack;
  if (perLevel * H > ctx.maxVars) {
    ctx.say("routing: skipped, the encoding would exceed " +
            std::to_string(ctx.maxVars) + " variables");
    return out;
  }
  EncodingOptions eo;
  eo.horizon = H;
  std::optional<FlowEncoding> encoding;
  encoding.emplace(p, eo);
  FlowEncoding *enc = &*encoding;
  std::unique_ptr<IncrementalSolver> solver;
  // Query models: the base encoding, the depth requirement, and bounds.
  std::vector<int> nics;
  if (opts.nicLinks > 0) {
    const Topology &t = *p.topo;
    std::set<int> xs;
    for (int l : p.usableLinks)
      if (!t.sameNode(t.links[l].src, t.links[l].dst))
        for (int x : t.links[l].resources)
          xs.insert(p.resourceOrbitRep[x]);
    nics.assign(xs.begin(), xs.end());
  }
  auto query = [&](int depth) {
    std::optional<BoolModel> q(enc->base());
    if (!enc->reachBy(*q, depth))
      q.reset();
    else if (!nics.empty())
      enc->distinctPerResource(*q, nics, opts.nicLinks);
    return q;
  };
  auto describe = [&] {
    ctx.say("routing: " + std::to_string(p.reps.size()) + " of " +
            std::to_string(p.values.size()) + " values encoded (symmetry), " +
            std::to_string(enc->numSendVars()) + " send variables" +
            (enc->numTiedPairs() ? ", " + std::to_string(enc->numTiedPairs()) +
                                       " tied link pairs"
                                 : std::string()) +
            ", depth <= " + std::to_string(H));
  };
  describe();
  // Depth-first: the smallest depth with any route, then bisection there.
  int depth = H;
  std::optional<BoolModel> q0;
  SolveOutcome o;
  // The first route is worth its time (only the deadline bounds it): a
  // hint bound (the heuristic's busy time) steers it to good routes.
  auto firstRoute = [&] {
    for (int d = opts.depthFirst ? d0 : H; d <= H; ++d) {
      q0 = query(d);
      if (!q0)
        continue;
      if (opts.hintBound > 0) {
        BoolModel hinted = *q0;
        enc->loadBound(hinted, linkCaps(p, cost, opts.hintBound),
                       resourceCaps(p, cost, opts.hintBound));
        o = solveFresh(hinted, ctx, 0.25, solver, /*budgeted=*/false);
        if (o.status == SolveStatus::Sat) {
          depth = d;
          return;
        }
      }
      o = solveFresh(*q0, ctx, 0.25, solver, /*budgeted=*/false);
      if (o.status == SolveStatus::Sat) {
        depth = d;
        return;
      }
    }
  };
  firstRoute();
  // TACCL's ties can leave no route at all (its model would be
  // infeasible): search without them rather than give up the solver.
  if (enc->numTiedPairs() && q0 && o.status == SolveStatus::Unsat &&
      ctx.secondsLeft() > 0.01) {
    ctx.say("routing: no route within depth " + std::to_string(H) +
            " satisfies the symmetry ties; searching without them");
    ctx.tiesUnsatisfiable = true;
    eo.ties = EncodingOptions::Ties::None;
    encoding.reset();
    encoding.emplace(p, eo);
    enc = &*encoding;
    describe();
    firstRoute();
  }
  if (!q0 || o.status != SolveStatus::Sat) {
    ctx.say("routing: no route within depth " + std::to_string(H) + " (" +
            toString(o.status) + (o.reason.empty() ? "" : ", " + o.reason) +
            ")");
    return out;
  }
  Plan best = enc->decode(*solver);
  std::string bestSmt = ctx.keepSmt ? solver->toSmtLib2() : "";
  double ub = busyTime(p, best, cost);
  // Candidate bounds: every achievable busy time up to the first route's.
  std::vector<double> points;
  double lb = loadLowerBound(p, cost);
  for (int l : p.usableLinks)
    if (p.linkOrbitRep[l] == l)
      for (int k = 1; k * cost.link[l] <= ub * (1 + 1e-9) && k < 100000; ++k)
        if (k * cost.link[l] >= lb * (1 - 1e-9))
          points.push_back(k * cost.link[l]);
  for (size_t x = 0; x < p.topo->resources.size(); ++x)
    if (p.resourceOrbitRep[x] == (int)x)
      for (int k = 1; k * cost.resource[x] <= ub * (1 + 1e-9) && k < 100000;
           ++k)
        if (k * cost.resource[x] >= lb * (1 - 1e-9))
          points.push_back(k * cost.resource[x]);
  std::sort(points.begin(), points.end());
  std::vector<double> uniq;
  for (double x : points)
    if (uniq.empty() || x > uniq.back() * (1 + 1e-9))
      uniq.push_back(x);
  if (uniq.empty() || uniq.back() < ub * (1 - 1e-9))
    uniq.push_back(ub);
  size_t lo = 0, hi = uniq.size() - 1;
  double bestBound = ub;
  bool proven = true;
  // Within 2% of the lower bound the list scheduler, not the routing,
  // decides the makespan: stop bisecting there.
  while (lo < hi && ctx.secondsLeft() > 0.01 && bestBound > lb * 1.02) {
    size_t mid = (lo + hi) / 2;
    double bound = uniq[mid];
    BoolModel q = *q0;
    enc->loadBound(q, linkCaps(p, cost, bound), resourceCaps(p, cost, bound));
    SolveOutcome r = solveFresh(q, ctx, 0.25, solver);
    ctx.say("routing: busy time <= " + fmt(bound) +
            " us: " + toString(r.status) + " (" + fmt(r.seconds) + " s)");
    if (r.status == SolveStatus::Sat) {
      best = enc->decode(*solver);
      if (ctx.keepSmt)
        bestSmt = solver->toSmtLib2();
      double got = busyTime(p, best, cost);
      bestBound = got;
      hi = mid;
      while (hi > lo && uniq[hi - 1] >= got * (1 - 1e-9))
        --hi;
    } else {
      if (r.status == SolveStatus::Unknown)
        proven = false;
      lo = mid + 1;
    }
  }
  best.method = depth < H ? "routing (depth " + std::to_string(depth) +
                                ", then min busy time)"
                          : "routing (min busy time)";
  best.provenOptimal = proven && (lo == hi || bestBound <= lb * (1 + 1e-9));
  if (ctx.keepSmt)
    best.smt = "; ccsynth routing model with the smallest busy-time bound "
               "found (" +
               fmt(bestBound) + " us)\n" + bestSmt;
  ctx.say("routing: " + describePlan(p, best, cost));
  out.push_back(best);
  // Every later query keeps the best bound.
  auto bounded = [&](int depth) {
    auto q = query(depth);
    if (q)
      enc->loadBound(*q, linkCaps(p, cost, bestBound),
                     resourceCaps(p, cost, bestBound));
    return q;
  };

  // Shallowest routes at that bound (latency).
  for (int d = d0; d < depth && ctx.secondsLeft() > 0.01; ++d) {
    auto q = bounded(d);
    if (!q)
      continue;
    SolveOutcome r = solveFresh(*q, ctx, 0.25, solver);
    if (r.status == SolveStatus::Sat) {
      Plan shallow = enc->decode(*solver);
      shallow.method =
          "routing (min busy time, depth " + std::to_string(d) + ")";
      ctx.say("routing: depth " + std::to_string(d) + ": " +
              describePlan(p, shallow, cost));
      out.push_back(std::move(shallow));
      break;
    }
  }

  // Distinct-link objectives at the best bound.
  auto distinct = [&](const std::vector<int> &links, bool atMost,
                      const std::string &what) {
    if (links.empty() || ctx.secondsLeft() <= 0.01)
      return;
    int total = 0;
    for (int l : links)
      total += p.linkOrbitSize[l];
    int lo2 = 0, hi2 = total;
    std::optional<Plan> found;
    // atMost: smallest k that is satisfiable; else largest.
    while (lo2 < hi2 && ctx.secondsLeft() > 0.01) {
      int mid = atMost ? (lo2 + hi2) / 2 : (lo2 + hi2 + 1) / 2;
      auto q = bounded(depth);
      if (!q)
        return;
      enc->distinctLinks(*q, links, mid, atMost);
      SolveOutcome r = solveFresh(*q, ctx, 0.2, solver);
      bool sat = r.status == SolveStatus::Sat;
      if (sat)
        found = enc->decode(*solver);
      if (atMost) {
        if (sat)
          hi2 = mid;
        else
          lo2 = mid + 1;
      } else {
        if (sat)
          lo2 = mid;
        else
          hi2 = mid - 1;
      }
    }
    if (found) {
      found->method = "routing (min busy time, " + what + ")";
      ctx.say("routing: " + what + ": " + describePlan(p, *found, cost));
      out.push_back(std::move(*found));
    }
  };
  for (size_t s = 0; s < p.switchStrategy.size(); ++s) {
    std::vector<int> links;
    for (int l : p.usableLinks)
      if (p.switchOfLink[l] == (int)s && p.linkOrbitRep[l] == l)
        links.push_back(l);
    bool min = p.switchStrategy[s] == HyperedgeStrategy::UcMin;
    distinct(links, min,
             std::string(min ? "uc-min" : "uc-max") + " on switch " +
                 std::to_string(s));
  }
  if (opts.concentrate && opts.nicLinks == 0) {
    // Resources loaded to within 10% of the bound decide the makespan.
    const Topology &t = *p.topo;
    std::vector<double> res(t.resources.size(), 0);
    for (const PlanSend &s : out.front().sends)
      for (int x : t.links[s.link].resources)
        res[x] += cost.resource[x];
    double top = busyTime(p, out.front(), cost);
    std::set<int> links;
    for (int l : p.usableLinks)
      for (int x : t.links[l].resources)
        if (res[x] >= 0.9 * top)
          links.insert(p.linkOrbitRep[l]);
    distinct(std::vector<int>(links.begin(), links.end()), true,
             "few links through binding resources");
  }
  return out;
}

std::optional<Plan> exactPlan(const RoutingProblem &p, const CostModel &cost,
                              SearchContext &ctx) {
  const Topology &t = *p.topo;
  int n = t.numRanks();
  double tau = std::numeric_limits<double>::infinity();
  for (int l : p.usableLinks)
    tau = std::min(tau, cost.link[l]);
  if (!std::isfinite(tau))
    return std::nullopt;
  EncodingOptions eo;
  eo.exclusiveLinks = true;
  eo.duration.assign(t.links.size(), 1);
  for (int l : p.usableLinks)
    eo.duration[l] = std::max(1, (int)std::lround(cost.link[l] / tau));
  eo.resourceCap.assign(t.resources.size(), 0);
  {
    std::vector<double> fastest(t.resources.size(), 0);
    std::vector<int> count(t.resources.size(), 0);
    for (int l : p.usableLinks)
      for (int x : t.links[l].resources) {
        fastest[x] = std::max(fastest[x], t.effectiveBandwidth(l));
        ++count[x];
      }
    for (size_t x = 0; x < t.resources.size(); ++x)
      if (count[x] > 1)
        eo.resourceCap[x] = std::max(
            1,
            (int)std::floor(t.resources[x].bandwidthGBps / fastest[x] + 1e-9));
  }
  // Lower bound on the horizon: the slowest first arrival, and every
  // rank's receptions over its in-links' capacity per slot.
  int tlb = 1;
  for (int v : p.reps) {
    std::vector<int> e(n, INT_MAX);
    e[p.values[v].origin] = 0;
    using Item = std::pair<int, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
    pq.push({0, p.values[v].origin});
    while (!pq.empty()) {
      auto [d, u] = pq.top();
      pq.pop();
      if (d > e[u])
        continue;
      for (int l : p.outLinks[u])
        if (p.allowed(v, l) && d + eo.duration[l] < e[t.links[l].dst]) {
          e[t.links[l].dst] = d + eo.duration[l];
          pq.push({e[t.links[l].dst], t.links[l].dst});
        }
    }
    for (int d : p.values[v].dests)
      tlb = std::max(tlb, e[d]);
  }
  std::vector<int> need(n, 0);
  for (const RouteValue &v : p.values)
    for (int d : v.dests)
      ++need[d];
  for (int r = 0; r < n; ++r) {
    double perSlot = 0;
    for (int l : p.inLinks[r])
      perSlot += 1.0 / eo.duration[l];
    if (perSlot > 0)
      tlb = std::max(tlb, (int)std::ceil(need[r] / perSlot - 1e-9));
  }
  // Node cuts: the values a node needs from outside (or sends out) cross
  // its boundary links, at most one transfer per link per duration, and at
  // most `cap` at a time through a covering set of shared resources.
  forEachNodeCut(p, [&](const NodeCut &cut) {
    double rate = 0;
    for (int l : cut.links)
      rate += 1.0 / eo.duration[l];
    for (size_t j = 0; j < cut.width; ++j) {
      std::vector<int> rs = cut.cover(t, j);
      if (rs.empty())
        continue;
      std::map<int, int> cover; // resource -> shortest duration through it
      bool ok = true;
      for (size_t k = 0; k < rs.size() && ok; ++k) {
        int l = cut.links[k], x = rs[k];
        ok = eo.resourceCap[x] > 0;
        auto it = cover.find(x);
        if (it == cover.end())
          cover[x] = eo.duration[l];
        else
          it->second = std::min(it->second, eo.duration[l]);
      }
      if (!ok)
        continue;
      double resRate = 0;
      for (auto [x, d] : cover)
        resRate += (double)eo.resourceCap[x] / d;
      rate = std::min(rate, resRate);
    }
    if (rate > 0)
      tlb = std::max(tlb, (int)std::ceil(cut.count / rate - 1e-9));
  });
  int H = tlb + std::max(2, tlb / 3);
  // Variables grow linearly with the horizon: one count per slot (a
  // gather on 256 ranks has 512 values and 63k links to count).
  long long perSlot = estimateVars(p, 1);
  if (perSlot > 0)
    H = std::max<long long>(tlb, std::min<long long>(H, ctx.maxVars / perSlot));
  if (perSlot * H > ctx.maxVars) {
    ctx.say("exact: skipped, the slot model would exceed " +
            std::to_string(ctx.maxVars) + " variables");
    return std::nullopt;
  }
  eo.horizon = H;
  // TACCL ties send times as well as routes, and when each chunk reaches
  // each rank.
  eo.ties = EncodingOptions::Ties::Slots;
  std::unique_ptr<IncrementalSolver> solver;
  // The smallest satisfiable horizon; `unsat` says whether every horizon
  // was proven unsatisfiable.
  auto solve = [&](bool &unsat) -> std::optional<Plan> {
    FlowEncoding enc(p, eo);
    ctx.say("exact: slot = " + fmt(tau) + " us, horizon " +
            std::to_string(tlb) + ".." + std::to_string(H) + " slots, " +
            std::to_string(enc.numSendVars()) + " send variables" +
            (enc.numTiedPairs() ? ", " + std::to_string(enc.numTiedPairs()) +
                                      " tied link pairs"
                                : std::string()) +
            (enc.numTiedArrivals()
                 ? ", " + std::to_string(enc.numTiedArrivals()) +
                       " tied arrivals"
                 : std::string()));
    unsat = enc.numTiedPairs() > 0 || enc.numTiedArrivals() > 0;
    bool proven = true;
    int unknowns = 0;
    for (int T = tlb; T <= H && unknowns < 2; ++T) {
      if (ctx.secondsLeft() <= 0.01) {
        ctx.cutShort = ctx.deadlineHit = true;
        unsat = false;
        break;
      }
      BoolModel q = enc.base();
      if (!enc.reachBy(q, T))
        continue;
      SolveOutcome r = solveFresh(q, ctx, 0.5, solver);
      ctx.say("exact: " + std::to_string(T) + " slots: " + toString(r.status) +
              " (" + fmt(r.seconds) + " s)");
      if (r.status == SolveStatus::Sat) {
        Plan plan = enc.decode(*solver);
        if (ctx.keepSmt)
          plan.smt = "; ccsynth exact slot model: satisfiable with horizon " +
                     std::to_string(T) + "\n" + solver->toSmtLib2();
        plan.method = "exact slot model (" + std::to_string(T) + " slots of " +
                      fmt(tau) + " us)";
        plan.provenOptimal = proven;
        return plan;
      }
      if (r.status == SolveStatus::Unknown) {
        proven = false;
        unsat = false;
        ++unknowns;
      }
    }
    return std::nullopt;
  };
  bool unsat = false;
  if (auto plan = solve(unsat))
    return plan;
  // As in routingPlans: ties that admit no schedule are dropped.
  if (unsat && ctx.secondsLeft() > 0.01) {
    ctx.say("exact: no horizon up to " + std::to_string(H) +
            " satisfies the symmetry ties; solving without them");
    ctx.tiesUnsatisfiable = true;
    eo.ties = EncodingOptions::Ties::None;
    return solve(unsat);
  }
  return std::nullopt;
}

} // namespace ccsynth::synth
