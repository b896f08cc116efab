//===- Encoding.cpp - Time-expanded route encodings -----------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements FlowEncoding (Encoding.h), the pseudo-Boolean model the exact
// and routing stages share: the send variables of each representative
// value and the constraints that its sends form a tree from its origin to
// every rank that needs it (encodeRep), the sketch's symmetry ties
// (encodeTies, encodeArrivalTies), one transfer at a time per link and
// resource for the exact stage (encodeExclusive), the load bounds and
// distinct-link counts the routing stage minimizes, and decode, which reads
// a Plan back from a model. See docs/synth.md ("Method").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Synth/Encoding.h"

#include <algorithm>
#include <climits>
#include <map>
#include <queue>
#include <set>

namespace ccsynth::synth {

namespace {
constexpr int kInf = INT_MAX / 4;

/// Adds sum(coef * lit) <= cap when it can be violated.
void addBound(BoolModel &q, const std::map<int, int> &acc, int cap) {
  long long total = 0;
  bool unit = true;
  for (auto &kv : acc) {
    total += kv.second;
    unit &= kv.second == 1;
  }
  if (total <= cap)
    return;
  std::vector<int> lits, coefs;
  for (auto &kv : acc) {
    lits.push_back(kv.first);
    coefs.push_back(kv.second);
  }
  if (unit)
    q.addAtMost(std::move(lits), cap);
  else
    q.addPbLe(std::move(lits), std::move(coefs), cap);
}
} // namespace

FlowEncoding::FlowEncoding(const RoutingProblem &problem,
                           const EncodingOptions &options)
    : p(problem), opts(options) {
  int nl = (int)p.topo->links.size();
  if ((int)opts.duration.size() < nl)
    opts.duration.resize(nl, 1);
  int nreps = (int)p.reps.size();
  idxOfRep.assign(p.values.size(), -1);
  for (int i = 0; i < nreps; ++i)
    idxOfRep[p.reps[i]] = i;
  byRepLink.assign(nreps, std::vector<std::vector<int>>(nl));
  crosses.assign(nreps, std::vector<int>(nl, 0));
  hasLit.assign(nreps, {});
  earliest.assign(nreps, {});
  for (int ri = 0; ri < nreps; ++ri)
    encodeRep(ri);
  if (opts.ties != EncodingOptions::Ties::None && !p.ties.empty())
    encodeTies();
  if (opts.exclusiveLinks)
    encodeExclusive();
}

int FlowEncoding::dur(int l) const { return std::max(1, opts.duration[l]); }

void FlowEncoding::encodeRep(int ri) {
  const Topology &t = *p.topo;
  int v = p.reps[ri];
  const RouteValue &val = p.values[v];
  int n = t.numRanks(), H = opts.horizon;
  // Earliest slot each rank can hold the value (Dijkstra on durations).
  std::vector<int> &e = earliest[ri];
  e.assign(n, kInf);
  e[val.origin] = 0;
  using Item = std::pair<int, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
  pq.push({0, val.origin});
  while (!pq.empty()) {
    auto [d, u] = pq.top();
    pq.pop();
    if (d > e[u])
      continue;
    for (int l : p.outLinks[u]) {
      if (!p.allowed(v, l))
        continue;
      int w = t.links[l].dst, nd = d + dur(l);
      if (nd < e[w]) {
        e[w] = nd;
        pq.push({nd, w});
      }
    }
  }
  // Slots from each rank to the nearest destination (reverse Dijkstra).
  std::vector<int> toDest(n, kInf);
  std::vector<char> isDest(n, 0);
  for (int d : val.dests) {
    isDest[d] = 1;
    toDest[d] = 0;
    pq.push({0, d});
  }
  while (!pq.empty()) {
    auto [d, u] = pq.top();
    pq.pop();
    if (d > toDest[u])
      continue;
    for (int l : p.inLinks[u]) {
      if (!p.allowed(v, l))
        continue;
      int w = t.links[l].src, nd = d + dur(l);
      if (nd < toDest[w]) {
        toDest[w] = nd;
        pq.push({nd, w});
      }
    }
  }
  // Send variables.
  std::vector<std::vector<int>> arrivals(n); // var indices per receiving rank
  for (int l : p.usableLinks) {
    if (!p.allowed(v, l))
      continue;
    const Link &link = t.links[l];
    int src = link.src, dst = link.dst;
    if (dst == val.origin || e[src] >= kInf)
      continue;
    int d = dur(l);
    for (int s = e[src] + 1; s + d - 1 <= H; ++s) {
      int a = s + d - 1;
      if (!isDest[dst] && (toDest[dst] >= kInf || a + toDest[dst] > H))
        continue;
      int lit = m.newVar();
      byRepLink[ri][l].push_back((int)vars.size());
      arrivals[dst].push_back((int)vars.size());
      vars.push_back({ri, l, s, lit});
    }
  }
  for (int l : p.usableLinks) {
    const auto &ids = byRepLink[ri][l];
    if (ids.size() == 1) {
      crosses[ri][l] = vars[ids[0]].lit;
    } else if (ids.size() > 1) {
      int y = m.newVar();
      std::vector<int> any{-y};
      for (int idx : ids) {
        m.addImplies(vars[idx].lit, y);
        any.push_back(vars[idx].lit);
      }
      m.addClause(std::move(any));
      crosses[ri][l] = y;
    }
  }
  // has(r, t) for t in [earliest, H].
  auto &has = hasLit[ri];
  has.assign(n, {});
  for (int r = 0; r < n; ++r) {
    if (r == val.origin || arrivals[r].empty())
      continue;
    has[r].assign(H + 1, 0);
    for (int s = e[r]; s <= H; ++s)
      has[r][s] = m.newVar();
    std::vector<std::vector<int>> arriveAt(H + 1);
    for (int idx : arrivals[r])
      arriveAt[vars[idx].slot + dur(vars[idx].link) - 1].push_back(
          vars[idx].lit);
    for (int s = e[r]; s <= H; ++s) {
      std::vector<int> cl{-has[r][s]};
      if (s > e[r]) {
        cl.push_back(has[r][s - 1]);
        m.addImplies(has[r][s - 1], has[r][s]);
      }
      for (int x : arriveAt[s]) {
        cl.push_back(x);
        m.addImplies(x, has[r][s]);
      }
      m.addClause(std::move(cl));
    }
    // One reception per rank and value; exactly one for destinations
    // (implied by reachBy, but stated directly it propagates much sooner).
    std::vector<int> in;
    for (int idx : arrivals[r])
      in.push_back(vars[idx].lit);
    if (isDest[r])
      m.addClause(in);
    if (in.size() > 1)
      m.addAtMost(std::move(in), 1);
  }
  // With connected nodes a value enters each node at most once (a second
  // entry can always be replaced by forwarding inside the node); stated
  // directly, it makes NIC load bounds easy to satisfy exactly.
  if (opts.enterNodesOnce && p.nodesConnected && t.numNodes() > 1) {
    std::vector<std::vector<int>> entering(t.numNodes());
    for (int l : p.usableLinks) {
      int nb = t.nodeOf[t.links[l].dst];
      if (nb != t.nodeOf[t.links[l].src])
        for (int idx : byRepLink[ri][l])
          entering[nb].push_back(vars[idx].lit);
    }
    for (auto &lits : entering)
      if (lits.size() > 1)
        m.addAtMost(std::move(lits), 1);
  }
  // A rank forwards only what it holds.
  for (int l : p.usableLinks)
    for (int idx : byRepLink[ri][l]) {
      int src = t.links[l].src;
      if (src == val.origin)
        continue;
      int s = vars[idx].slot - 1;
      if (has[src].empty() || s < e[src] || has[src][s] == 0)
        m.addClause({-vars[idx].lit});
      else
        m.addImplies(vars[idx].lit, has[src][s]);
    }
  // Elements fixing the value map its route onto itself.
  for (int g : p.stabilizer[v])
    for (int l : p.usableLinks) {
      int gl = p.group.link[g][l];
      for (int idx : byRepLink[ri][l]) {
        int other = 0;
        for (int j : byRepLink[ri][gl])
          if (vars[j].slot == vars[idx].slot)
            other = vars[j].lit;
        if (other)
          m.addImplies(vars[idx].lit, other);
        else
          m.addClause({-vars[idx].lit});
      }
    }
}

bool FlowEncoding::possible(int ri, int l, int s) const {
  int v = p.reps[ri];
  const Link &link = p.topo->links[l];
  if (!p.allowed(v, l) || link.dst == p.values[v].origin)
    return false;
  int e = earliest[ri][link.src];
  if (e >= kInf)
    return false;
  if (s == 0)
    return e + dur(l) <= opts.horizon;
  return s > e && s + dur(l) - 1 <= opts.horizon;
}

template <typename Fn> void FlowEncoding::forEachTiedPair(Fn &&fn) const {
  for (const SymmetryTie &t : p.ties)
    for (size_t v = 0; v < p.values.size(); ++v) {
      int w = t.value[v];
      fn(t, (int)v, w, idxOfRep[p.repOf[v]], idxOfRep[p.repOf[w]]);
    }
}

void FlowEncoding::encodeTies() {
  using Side = std::pair<int, int>; // (rep index, link)
  // x and y are the literals of two tied sends (0 = no variable). A send
  // without a variable that could happen (the encoding drops sends that
  // lead to no destination in time) leaves the other side free; one that
  // cannot (the value is not there yet, the sketch forbids it, the link
  // enters its origin) forbids it, as TACCL's equality with a zero does.
  auto tie = [&](int x, int y, Side a, Side b, int slot) {
    if (x && y) {
      m.addImplies(x, y);
      m.addImplies(y, x);
    } else if (x && !possible(b.first, b.second, slot)) {
      m.addClause({-x});
    } else if (y && !possible(a.first, a.second, slot)) {
      m.addClause({-y});
    }
  };
  auto bySlot = [&](Side a) {
    std::map<int, int> lits;
    for (int idx : byRepLink[a.first][a.second])
      lits[vars[idx].slot] = vars[idx].lit;
    return lits;
  };
  std::set<std::pair<Side, Side>> done;
  forEachTiedPair([&](const SymmetryTie &t, int v, int w, int ri, int rj) {
    // Value v's sends are its representative's under the inverse of the
    // group element that makes it; likewise for its tied image w.
    const auto &fromV = p.group.link[p.group.inverse[p.elemOf[v]]];
    const auto &fromW = p.group.link[p.group.inverse[p.elemOf[w]]];
    for (int l : p.usableLinks) {
      if (t.link[l] < 0)
        continue;
      Side a{ri, fromV[l]}, b{rj, fromW[t.link[l]]};
      if (a.second < 0 || b.second < 0 || a == b)
        continue;
      if (b < a)
        std::swap(a, b);
      if (!done.insert({a, b}).second)
        continue;
      ++tiedPairs;
      if (opts.ties == EncodingOptions::Ties::Routes) {
        tie(crosses[a.first][a.second], crosses[b.first][b.second], a, b, 0);
        continue;
      }
      // Slot by slot: the tied links are alike, so their transfers take
      // equally long.
      std::map<int, int> xs = bySlot(a), ys = bySlot(b);
      for (auto [slot, x] : xs) {
        auto it = ys.find(slot);
        tie(x, it == ys.end() ? 0 : it->second, a, b, slot);
      }
      for (auto [slot, y] : ys)
        if (!xs.count(slot))
          tie(0, y, a, b, slot);
    }
  });
  if (opts.ties == EncodingOptions::Ties::Slots)
    encodeArrivalTies();
}

void FlowEncoding::encodeArrivalTies() {
  // TACCL also ties when each chunk is at each rank, over every rank (its
  // start[c, r] == start[c_sym, r_sym]), not only over links inside
  // blocks. Its start is only pinned where the chunk is received, so here:
  // where both values reach their ranks, they reach them in the same slot
  // (for destinations, which are always reached, that is plain equality).
  int H = opts.horizon, n = p.topo->numRanks();
  int truth = 0;
  auto constant = [&](bool value) {
    if (!truth) {
      truth = m.newVar();
      m.addClause({truth});
    }
    return value ? truth : -truth;
  };
  // "Representative ri holds its value at rank r by the end of slot s."
  auto hasAt = [&](int ri, int r, int s) {
    if (r == p.values[p.reps[ri]].origin)
      return constant(true);
    const std::vector<int> &h = hasLit[ri][r];
    if (h.empty() || s < earliest[ri][r] || h[s] == 0)
      return constant(false);
    return h[s];
  };
  using Side = std::pair<int, int>; // (rep index, rank)
  std::set<std::pair<Side, Side>> done;
  forEachTiedPair([&](const SymmetryTie &t, int v, int w, int ri, int rj) {
    const auto &toRepV = p.group.rank[p.group.inverse[p.elemOf[v]]];
    const auto &toRepW = p.group.rank[p.group.inverse[p.elemOf[w]]];
    for (int r = 0; r < n; ++r) {
      Side a{ri, toRepV[r]}, b{rj, toRepW[t.rank[r]]};
      if (a == b)
        continue;
      if (b < a)
        std::swap(a, b);
      if (!done.insert({a, b}).second)
        continue;
      int endA = hasAt(a.first, a.second, H),
          endB = hasAt(b.first, b.second, H);
      for (int s = 0; s <= H; ++s) {
        int x = hasAt(a.first, a.second, s), y = hasAt(b.first, b.second, s);
        if (x == y)
          continue;
        m.addClause({-x, -endB, y});
        m.addClause({-y, -endA, x});
      }
      ++tiedArrivals;
    }
  });
}

const std::vector<std::pair<int, int>> &FlowEncoding::loadTerms(int l) {
  auto it = termCache.find(l);
  if (it != termCache.end())
    return it->second;
  std::vector<std::pair<int, int>> &out = termCache[l];
  for (size_t v = 0; v < p.values.size(); ++v) {
    int g = p.elemOf[v];
    int pre = p.group.link[p.group.inverse[g]][l];
    if (pre >= 0)
      out.push_back({idxOfRep[p.repOf[v]], pre});
  }
  return out;
}

void FlowEncoding::encodeExclusive() {
  const Topology &t = *p.topo;
  int H = opts.horizon;
  // Windowed in-flight literals with multiplicity, per link orbit rep.
  auto window = [&](int l, int s, std::map<int, int> &acc) {
    for (auto [ri, pre] : loadTerms(l))
      for (int idx : byRepLink[ri][pre]) {
        int st = vars[idx].slot;
        if (st <= s && s <= st + dur(pre) - 1)
          ++acc[vars[idx].lit];
      }
  };
  auto emit = [&](std::map<int, int> &acc, int cap) { addBound(m, acc, cap); };
  for (int l : p.usableLinks) {
    if (p.linkOrbitRep[l] != l)
      continue;
    for (int s = 1; s <= H; ++s) {
      std::map<int, int> acc;
      window(l, s, acc);
      emit(acc, 1);
    }
  }
  if (opts.resourceCap.empty())
    return;
  std::vector<std::vector<int>> linksOf(t.resources.size());
  for (int l : p.usableLinks)
    for (int x : t.links[l].resources)
      linksOf[x].push_back(l);
  for (size_t x = 0; x < t.resources.size(); ++x) {
    if (p.resourceOrbitRep[x] != (int)x || x >= opts.resourceCap.size() ||
        opts.resourceCap[x] <= 0 || linksOf[x].size() <= 1)
      continue;
    for (int s = 1; s <= H; ++s) {
      std::map<int, int> acc;
      for (int l : linksOf[x])
        window(l, s, acc);
      emit(acc, opts.resourceCap[x]);
    }
  }
}

bool FlowEncoding::reachBy(BoolModel &q, int T) const {
  T = std::min(T, opts.horizon);
  for (size_t ri = 0; ri < p.reps.size(); ++ri)
    for (int d : p.values[p.reps[ri]].dests) {
      if (earliest[ri][d] > T || hasLit[ri][d].empty())
        return false;
      q.addClause({hasLit[ri][d][T]});
    }
  return true;
}

void FlowEncoding::loadBound(BoolModel &q, const std::vector<int> &linkCap,
                             const std::vector<int> &resCap) {
  const Topology &t = *p.topo;
  std::vector<std::vector<int>> linksOf(t.resources.size());
  for (int l : p.usableLinks) {
    for (int x : t.links[l].resources)
      linksOf[x].push_back(l);
    if (p.linkOrbitRep[l] != l || l >= (int)linkCap.size() || linkCap[l] < 0)
      continue;
    std::map<int, int> acc;
    for (auto [ri, pre] : loadTerms(l))
      if (crosses[ri][pre])
        ++acc[crosses[ri][pre]];
    addBound(q, acc, linkCap[l]);
  }
  for (size_t x = 0; x < t.resources.size(); ++x) {
    if (p.resourceOrbitRep[x] != (int)x || x >= resCap.size() || resCap[x] < 0)
      continue;
    std::map<int, int> acc;
    for (int l : linksOf[x])
      for (auto [ri, pre] : loadTerms(l))
        if (crosses[ri][pre])
          ++acc[crosses[ri][pre]];
    addBound(q, acc, resCap[x]);
  }
}

int FlowEncoding::usedLiteral(BoolModel &q, int l) {
  int u = q.newVar();
  std::vector<int> any{-u};
  for (auto [ri, pre] : loadTerms(l))
    if (int y = crosses[ri][pre]) {
      q.addImplies(y, u);
      any.push_back(y);
    }
  q.addClause(std::move(any));
  return u;
}

void FlowEncoding::distinctPerResource(BoolModel &q,
                                       const std::vector<int> &resources,
                                       int m) {
  const Topology &t = *p.topo;
  std::map<int, int> usedOf; // link orbit rep -> literal
  for (int x : resources) {
    std::vector<int> lits;
    for (int l : p.usableLinks) {
      const auto &rs = t.links[l].resources;
      if (std::find(rs.begin(), rs.end(), x) == rs.end())
        continue;
      // Images of one route: a link is used iff its orbit representative
      // is (the group maps used links to used links).
      int rep = p.linkOrbitRep[l];
      auto it = usedOf.find(rep);
      if (it == usedOf.end())
        it = usedOf.emplace(rep, usedLiteral(q, rep)).first;
      lits.push_back(it->second);
    }
    if ((int)lits.size() > m)
      q.addAtMost(std::move(lits), m);
  }
}

void FlowEncoding::distinctLinks(BoolModel &q, const std::vector<int> &links,
                                 int k, bool atMost) {
  std::vector<int> lits, coefs;
  int total = 0;
  for (int l : links) {
    int u = usedLiteral(q, l);
    lits.push_back(atMost ? u : -u);
    coefs.push_back(p.linkOrbitSize[l]);
    total += p.linkOrbitSize[l];
  }
  q.addPbLe(std::move(lits), std::move(coefs), atMost ? k : total - k);
}

void appendOrbitTrees(const RoutingProblem &p, int rep,
                      const std::vector<int> &recvLink,
                      const std::vector<int> &slot, Plan &plan,
                      const std::function<void(int, int)> &onSend) {
  const Topology &t = *p.topo;
  int n = t.numRanks();
  std::vector<int> order;
  for (int r = 0; r < n; ++r)
    if (recvLink[r] >= 0)
      order.push_back(r);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return slot[a] != slot[b] ? slot[a] < slot[b] : a < b;
  });
  for (size_t v = 0; v < p.values.size(); ++v) {
    if (p.repOf[v] != rep)
      continue;
    int g = p.elemOf[v];
    std::vector<int> sendInto(n, -1);
    for (int r : order) {
      int l = p.group.link[g][recvLink[r]];
      int src = t.links[l].src;
      PlanSend s;
      s.value = (int)v;
      s.link = l;
      s.slot = slot[r];
      s.parent = src == p.values[v].origin ? -1 : sendInto[src];
      sendInto[t.links[l].dst] = (int)plan.sends.size();
      plan.sends.push_back(s);
      if (onSend)
        onSend((int)v, l);
    }
  }
}

Plan FlowEncoding::decode(const IncrementalSolver &solver) const {
  const Topology &t = *p.topo;
  int n = t.numRanks();
  Plan plan;
  for (size_t ri = 0; ri < p.reps.size(); ++ri) {
    int rep = p.reps[ri];
    const RouteValue &val = p.values[rep];
    // Reception of each rank (link, slot).
    std::vector<int> recvLink(n, -1), recvSlot(n, 0);
    for (int l : p.usableLinks)
      for (int idx : byRepLink[ri][l])
        if (solver.value(vars[idx].lit)) {
          int dst = t.links[l].dst;
          if (recvLink[dst] < 0 || vars[idx].slot < recvSlot[dst]) {
            recvLink[dst] = l;
            recvSlot[dst] = vars[idx].slot;
          }
        }
    // Keep receptions on a path to a destination.
    std::vector<char> keep(n, 0);
    for (int d : val.dests)
      for (int r = d; r != val.origin && r >= 0 && !keep[r];
           r = recvLink[r] >= 0 ? t.links[recvLink[r]].src : -1)
        keep[r] = 1;
    for (int r = 0; r < n; ++r)
      if (!keep[r])
        recvLink[r] = -1;
    appendOrbitTrees(p, rep, recvLink, recvSlot, plan);
  }
  return plan;
}

} // namespace ccsynth::synth
