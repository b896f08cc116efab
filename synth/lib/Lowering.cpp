//===- Lowering.cpp - From route plans to ordered transfer lists ----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements the lowerings of Lowering.h, from a route plan to a TaskList in
// a correct sequential order: copy trees (appendCopyTree) for copy
// collectives, reduce trees on the reversed links (appendReduceTree) for
// ReduceScatter and Reduce (lowerInverse), AllReduce as ReduceScatter then
// AllGather (lowerAllReduce), and the gather-then-reduce forms, where each
// contribution moves unreduced to the owner of its result, which folds it
// in as it lands (lowerGatherReduce; lowerAllReduceGather then copies the
// result back along the reversed routes).
// See docs/synth.md ("Method").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Synth/Lowering.h"

#include <algorithm>
#include <map>

namespace ccsynth::synth {

namespace {

/// Output slots of each value, per rank (a copy collective may want a value
/// in several slots of one rank).
std::vector<std::map<int, std::vector<int>>> outputSlots(const Collective &c) {
  std::vector<std::map<int, std::vector<int>>> out(c.numValues());
  for (int r = 0; r < c.numRanks; ++r)
    for (int i = 0; i < c.outputChunks; ++i)
      if (PostSet want = c.postAt(r, i); want.isCopy())
        out[want.front()][r].push_back(i);
  return out;
}

Task makeTask(ChunkLoc src, ChunkLoc dst, TransferOp op, int link,
              double prio) {
  Task t;
  t.tr.src = src;
  t.tr.dst = dst;
  t.tr.count = 1;
  t.tr.op = op;
  t.tr.link = link;
  t.prio = prio;
  return t;
}

/// Sends sorted so that every parent precedes its children.
std::vector<int> bySlot(const Plan &plan) {
  std::vector<int> order(plan.sends.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = (int)i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const PlanSend &x = plan.sends[a], &y = plan.sends[b];
    if (x.slot != y.slot)
      return x.slot < y.slot;
    return x.value < y.value;
  });
  return order;
}

/// Appends the copy tasks that move every value of `plan` from `from(v)`
/// (on its origin) to `to(v, r)` (on each destination), via scratch on
/// relays. Fails when a plan send has an inconsistent parent.
template <typename FromFn, typename ToFn>
Status appendCopyTree(const RoutingProblem &p, const Plan &plan, FromFn from,
                      ToFn to, double prioBase, TaskList &out) {
  const Topology &t = *p.topo;
  int n = t.numRanks();
  std::vector<ChunkLoc> dstLoc(plan.sends.size());
  std::vector<int> scratchNext(n, out.scratchChunks);
  // Scratch slots on relays, grouped by receiving link so that consecutive
  // sends on a link land in consecutive slots (merge candidates).
  std::vector<int> order(plan.sends.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = (int)i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const PlanSend &x = plan.sends[a], &y = plan.sends[b];
    if (x.link != y.link)
      return x.link < y.link;
    if (x.slot != y.slot)
      return x.slot < y.slot;
    return x.value < y.value;
  });
  for (int i : order) {
    const PlanSend &s = plan.sends[i];
    int r = t.links[s.link].dst;
    std::optional<ChunkLoc> d = to(s.value, r);
    dstLoc[i] = d ? *d : ChunkLoc{r, BufferKind::Scratch, scratchNext[r]++};
  }
  for (int r = 0; r < n; ++r)
    out.scratchChunks = std::max(out.scratchChunks, scratchNext[r]);
  for (int i : bySlot(plan)) {
    const PlanSend &s = plan.sends[i];
    const Link &l = t.links[s.link];
    ChunkLoc src;
    if (s.parent < 0) {
      if (l.src != p.values[s.value].origin)
        return Error("internal: a plan send leaves rank " +
                     std::to_string(l.src) + " which does not hold " +
                     valueName(p.collective, s.value));
      src = from(s.value);
    } else {
      src = dstLoc[s.parent];
      if (src.rank != l.src)
        return Error("internal: a plan send's parent delivers elsewhere");
    }
    out.tasks.push_back(
        makeTask(src, dstLoc[i], TransferOp::Copy, s.link, prioBase + s.slot));
    out.tasks.back().planSend = i;
  }
  return Status::success();
}

/// Per value, the summed link latency (plus a hop term for ties) of its
/// route to the rank holding `landing[v]`; 0 for values that do not move.
std::vector<double> routeLatency(const RoutingProblem &p, const Plan &plan,
                                 const std::vector<ChunkLoc> &landing) {
  const Topology &t = *p.topo;
  std::vector<double> at(plan.sends.size(), 0), out(p.values.size(), 0);
  for (int i : bySlot(plan)) {
    const PlanSend &s = plan.sends[i];
    double before = s.parent >= 0 ? at[s.parent] : 0;
    at[i] = before + t.links[s.link].alphaUs + 1e-6;
    if (t.links[s.link].dst == landing[s.value].rank)
      out[s.value] = at[i];
  }
  return out;
}

/// Moves every routed value, unreduced, to a fresh scratch slot on its
/// only destination and folds it there into result(v), in estimated arrival
/// order (its route's latency, hops as tie-break). A fold into a result
/// slot not yet `initialized` copies, later ones reduce. The caller has
/// checked that each routed value has exactly one destination, the rank of
/// result(v).
template <typename ResultFn>
Status landAndFold(const RoutingProblem &p, const Plan &plan, ResultFn result,
                   std::vector<std::vector<char>> &initialized, TaskList &out) {
  int n = p.topo->numRanks();
  std::vector<int> scratchNext(n, 0);
  std::vector<ChunkLoc> landing(p.values.size(),
                                ChunkLoc{-1, BufferKind::Scratch, -1});
  for (size_t v = 0; v < p.values.size(); ++v) {
    const RouteValue &val = p.values[v];
    if (val.dests.empty())
      continue;
    int owner = val.dests[0];
    landing[v] = {owner, BufferKind::Scratch, scratchNext[owner]++};
  }
  out.scratchChunks = *std::max_element(scratchNext.begin(), scratchNext.end());
  auto from = [&](int v) {
    return ChunkLoc{p.values[v].origin, BufferKind::Input,
                    p.values[v].originIndex};
  };
  auto to = [&](int v, int r) -> std::optional<ChunkLoc> {
    if (r == landing[v].rank)
      return landing[v];
    return std::nullopt;
  };
  if (Status s = appendCopyTree(p, plan, from, to, 0, out); !s)
    return s;
  std::vector<double> arrival = routeLatency(p, plan, landing);
  std::vector<int> order(p.values.size());
  for (size_t v = 0; v < order.size(); ++v)
    order[v] = (int)v;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return arrival[a] < arrival[b]; });
  for (int v : order) {
    if (p.values[v].dests.empty())
      continue;
    ChunkLoc res = result(v);
    bool first = !initialized[res.rank][res.index];
    initialized[res.rank][res.index] = 1;
    out.tasks.push_back(makeTask(landing[v], res,
                                 first ? TransferOp::Copy : TransferOp::Reduce,
                                 -1, arrival[v] + 0.5));
  }
  return Status::success();
}

/// Link from l's destination back to its source (same kind preferred, then
/// the fastest), or -1.
std::vector<int> reverseLinks(const Topology &t) {
  std::map<std::pair<int, int>, std::vector<int>> byPair;
  for (int l = 0; l < (int)t.links.size(); ++l)
    byPair[{t.links[l].src, t.links[l].dst}].push_back(l);
  std::vector<int> rev(t.links.size(), -1);
  for (int l = 0; l < (int)t.links.size(); ++l) {
    auto it = byPair.find({t.links[l].dst, t.links[l].src});
    if (it == byPair.end())
      continue;
    int best = -1;
    for (int c : it->second) {
      auto key = [&](int x) {
        return std::make_pair(t.links[x].kind == t.links[l].kind,
                              t.effectiveBandwidth(x));
      };
      if (best < 0 || key(c) > key(best))
        best = c;
    }
    rev[l] = best;
  }
  return rev;
}

/// Appends the reduction tasks of the inverse of `plan`: each value's tree
/// is walked from the leaves to its origin (the root), accumulating into
/// `result(v)` there. `contribution(v, r)` is rank r's input slot for v's
/// reduction.
template <typename ResultFn, typename ContribFn>
Status appendReduceTree(const RoutingProblem &p, const Plan &plan,
                        const Collective &target, ResultFn result,
                        ContribFn contribution, AccumulatorInit init,
                        TaskList &out) {
  const Topology &t = *p.topo;
  int n = t.numRanks();
  std::vector<int> rev = reverseLinks(t);
  int maxSlot = 0;
  for (const PlanSend &s : plan.sends)
    maxSlot = std::max(maxSlot, s.slot);
  int nv = (int)p.values.size();
  // Children count and accumulators per (value, rank).
  std::vector<std::vector<int>> children(nv, std::vector<int>(n, 0));
  for (const PlanSend &s : plan.sends)
    ++children[s.value][t.links[s.link].src];
  std::vector<std::map<int, ChunkLoc>> acc(nv);
  std::vector<int> scratchNext(n, out.scratchChunks);
  auto accOf = [&](int v, int r) -> ChunkLoc {
    auto it = acc[v].find(r);
    if (it != acc[v].end())
      return it->second;
    ChunkLoc loc = r == p.values[v].origin
                       ? result(v)
                       : ChunkLoc{r, BufferKind::Scratch, scratchNext[r]++};
    acc[v][r] = loc;
    return loc;
  };
  // Whether (v, r)'s accumulator already holds r's own contribution.
  std::vector<std::vector<char>> primed(nv, std::vector<char>(n, 0));
  for (int v = 0; v < nv; ++v) {
    int root = p.values[v].origin;
    primed[v][root] =
        target.canonical(result(v)) == target.canonical(contribution(v, root));
  }
  std::vector<std::vector<char>> started(nv, std::vector<char>(n, 0));
  bool reduceOnArrival =
      init == AccumulatorInit::EarlyReduceOnArrival ||
      init == AccumulatorInit::AfterFirstArrivalReduceOnArrival;
  if (init == AccumulatorInit::Early ||
      init == AccumulatorInit::EarlyReduceOnArrival) {
    // Every accumulator that children reduce into starts as a local copy of
    // its rank's contribution, before anything arrives.
    for (const PlanSend &s : plan.sends) {
      int r = t.links[s.link].src;
      if (primed[s.value][r])
        continue;
      out.tasks.push_back(makeTask(contribution(s.value, r), accOf(s.value, r),
                                   TransferOp::Copy, -1, 0));
      primed[s.value][r] = 1;
      started[s.value][r] = 1;
    }
  }
  std::vector<int> order = bySlot(plan);
  std::reverse(order.begin(), order.end());
  for (int i : order) {
    const PlanSend &s = plan.sends[i];
    // Every task of this reversed send records it.
    auto emit = [&](ChunkLoc from, ChunkLoc to, TransferOp op, int link,
                    double prio) {
      out.tasks.push_back(makeTask(from, to, op, link, prio));
      out.tasks.back().planSend = i;
      out.tasks.back().reversed = true;
    };
    int parent = t.links[s.link].src, child = t.links[s.link].dst;
    int back = rev[s.link];
    if (back < 0)
      return Error("cannot invert the route: topology '" + t.name +
                   "' has no link from rank " + std::to_string(child) +
                   " back to rank " + std::to_string(parent));
    ChunkLoc src = children[s.value][child] == 0 ? contribution(s.value, child)
                                                 : accOf(s.value, child);
    ChunkLoc acc = accOf(s.value, parent);
    double prio = maxSlot - s.slot;
    if (!started[s.value][parent]) {
      // The first arrival lands in the accumulator itself: a copy, then
      // the parent's own contribution; or a reduction when the
      // accumulator already holds it (in-place roots).
      started[s.value][parent] = 1;
      bool init = !primed[s.value][parent];
      emit(src, acc, init ? TransferOp::Copy : TransferOp::Reduce, back, prio);
      if (init)
        emit(contribution(s.value, parent), acc, TransferOp::Reduce, -1, prio);
      primed[s.value][parent] = 1;
      continue;
    }
    if (reduceOnArrival) {
      emit(src, acc, TransferOp::Reduce, back, prio);
      continue;
    }
    // Later arrivals land in their own scratch slot, so that transfers from
    // several children run at once, and are folded in by a local reduction
    // (chaining network reductions on one slot would serialize them).
    ChunkLoc landing{parent, BufferKind::Scratch, scratchNext[parent]++};
    emit(src, landing, TransferOp::Copy, back, prio);
    emit(landing, acc, TransferOp::Reduce, -1, prio);
  }
  // A root no send reached (a single rank) still needs its result.
  for (int v = 0; v < nv; ++v) {
    int root = p.values[v].origin;
    if (!started[v][root] && !primed[v][root])
      out.tasks.push_back(
          makeTask(contribution(v, root), result(v), TransferOp::Copy, -1, 0));
  }
  for (int r = 0; r < n; ++r)
    out.scratchChunks = std::max(out.scratchChunks, scratchNext[r]);
  return Status::success();
}

/// For each value of the copy collective: the slot of `target` where its
/// reduction ends (on the value's origin) and each rank's contributing
/// input slot, derived from target's conditions.
struct ReductionMap {
  std::vector<ChunkLoc> result;
  std::vector<std::vector<ChunkLoc>> contribution; ///< [v][rank]
};

Expected<ReductionMap>
mapReduction(const RoutingProblem &p, const Collective &target,
             int (*resultIndex)(const Collective &, const RouteValue &)) {
  int n = target.numRanks;
  ReductionMap m;
  for (const RouteValue &val : p.values) {
    int idx = resultIndex(target, val);
    PostSet want = idx >= 0 && idx < target.outputChunks
                       ? target.postAt(val.origin, idx)
                       : PostSet();
    if (!want)
      return Error("internal: the route's collective does not match " +
                   target.describe());
    std::vector<ChunkLoc> contrib(n, ChunkLoc{-1, BufferKind::Input, -1});
    for (int w : want) {
      ChunkLoc where = target.valueOrigin(w);
      contrib[where.rank] = where;
    }
    for (int r = 0; r < n; ++r)
      if (contrib[r].rank < 0)
        return Error("internal: rank " + std::to_string(r) +
                     " contributes nothing to " + target.describe());
    m.result.push_back({val.origin, BufferKind::Output, idx});
    m.contribution.push_back(std::move(contrib));
  }
  return m;
}

} // namespace

Expected<TaskList> lowerCopy(const RoutingProblem &p, const Plan &plan) {
  const Collective &c = p.collective;
  TaskList out;
  out.collective = std::make_shared<const Collective>(c);
  auto slots = outputSlots(c);
  // Origins keep their own output copies (out-of-place) first.
  for (size_t v = 0; v < p.values.size(); ++v) {
    const RouteValue &val = p.values[v];
    ChunkLoc in{val.origin, BufferKind::Input, val.originIndex};
    auto it = slots[v].find(val.origin);
    if (it == slots[v].end())
      continue;
    for (int i : it->second) {
      ChunkLoc o{val.origin, BufferKind::Output, i};
      if (c.canonical(o) != c.canonical(in))
        out.tasks.push_back(makeTask(in, o, TransferOp::Copy, -1, 0));
    }
  }
  auto from = [&](int v) {
    return ChunkLoc{p.values[v].origin, BufferKind::Input,
                    p.values[v].originIndex};
  };
  auto to = [&](int v, int r) -> std::optional<ChunkLoc> {
    auto it = slots[v].find(r);
    if (it == slots[v].end())
      return std::nullopt;
    return ChunkLoc{r, BufferKind::Output, it->second.front()};
  };
  if (Status s = appendCopyTree(p, plan, from, to, 0, out); !s)
    return s.error();
  // Extra output slots of one value on one rank.
  for (size_t v = 0; v < p.values.size(); ++v)
    for (auto &[r, list] : slots[v]) {
      if (r == p.values[v].origin)
        continue;
      for (size_t k = 1; k < list.size(); ++k)
        out.tasks.push_back(makeTask({r, BufferKind::Output, list[0]},
                                     {r, BufferKind::Output, list[k]},
                                     TransferOp::Copy, -1, 0));
    }
  return out;
}

Expected<TaskList> lowerInverse(const RoutingProblem &p, const Plan &plan,
                                const Collective &target,
                                AccumulatorInit init) {
  auto map =
      mapReduction(p, target, [](const Collective &, const RouteValue &v) {
        return v.originIndex;
      });
  if (!map)
    return map.error();
  TaskList out;
  out.collective = std::make_shared<const Collective>(target);
  auto result = [&](int v) { return map->result[v]; };
  auto contrib = [&](int v, int r) { return map->contribution[v][r]; };
  if (Status s = appendReduceTree(p, plan, target, result, contrib, init, out);
      !s)
    return s.error();
  return out;
}

Expected<TaskList> lowerAllReduce(const RoutingProblem &p, const Plan &plan,
                                  const Collective &target,
                                  AccumulatorInit init) {
  // AllGather value (j, k) owns AllReduce chunk j*c + k.
  auto map =
      mapReduction(p, target, [](const Collective &t, const RouteValue &v) {
        int c = t.chunkFactor / t.numRanks;
        return v.origin * c + v.originIndex;
      });
  if (!map)
    return map.error();
  TaskList out;
  out.collective = std::make_shared<const Collective>(target);
  auto result = [&](int v) { return map->result[v]; };
  auto contrib = [&](int v, int r) { return map->contribution[v][r]; };
  if (Status s = appendReduceTree(p, plan, target, result, contrib, init, out);
      !s)
    return s.error();
  int maxSlot = 0;
  for (const PlanSend &s : plan.sends)
    maxSlot = std::max(maxSlot, s.slot);
  auto to = [&](int v, int r) -> std::optional<ChunkLoc> {
    return ChunkLoc{r, BufferKind::Output, map->result[v].index};
  };
  if (Status s = appendCopyTree(p, plan, result, to, maxSlot + 1, out); !s)
    return s.error();
  return out;
}

Expected<TaskList> lowerGatherReduce(const RoutingProblem &p, const Plan &plan,
                                     const Collective &target) {
  const Topology &t = *p.topo;
  int n = t.numRanks();
  const Collective &route = p.collective;
  if (route.numRanks != n || route.inputChunks != target.inputChunks)
    return Error("internal: the gather route does not match " +
                 target.describe());
  // Result slot of every contribution (target value id).
  std::vector<ChunkLoc> resultOf(target.numValues(),
                                 ChunkLoc{-1, BufferKind::Output, -1});
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < target.outputChunks; ++i)
      for (int v : target.postAt(r, i))
        resultOf[v] = {r, BufferKind::Output, i};
  TaskList out;
  out.collective = std::make_shared<const Collective>(target);
  std::vector<std::vector<char>> initialized(n);
  for (int r = 0; r < n; ++r)
    initialized[r].assign(target.outputChunks, 0);
  // Owners start from their own contribution (a local copy unless the
  // result slot aliases it).
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < target.inputChunks; ++i) {
      int v = target.preAt(r, i);
      if (v < 0 || resultOf[v].rank != r)
        continue;
      ChunkLoc in{r, BufferKind::Input, i};
      if (target.canonical(in) != target.canonical(resultOf[v]))
        out.tasks.push_back(makeTask(in, resultOf[v], TransferOp::Copy, -1, 0));
      initialized[r][resultOf[v].index] = 1;
    }
  // Each routed value carries one contribution to its owner.
  for (const RouteValue &val : p.values) {
    if (val.dests.empty())
      continue; // the owner's own contribution, copied above
    int contrib = target.preAt(val.origin, val.originIndex);
    if (contrib < 0 || resultOf[contrib].rank < 0)
      return Error("internal: a routed value is no contribution of " +
                   target.describe());
    if (val.dests.size() != 1 || val.dests[0] != resultOf[contrib].rank)
      return Error("internal: a gather route goes elsewhere than the "
                   "result's owner");
  }
  auto result = [&](int v) {
    const RouteValue &val = p.values[v];
    return resultOf[target.preAt(val.origin, val.originIndex)];
  };
  if (Status s = landAndFold(p, plan, result, initialized, out); !s)
    return s.error();
  return out;
}

Expected<TaskList> lowerAllReduceGather(const RoutingProblem &p,
                                        const Plan &plan,
                                        const Collective &target) {
  const Topology &t = *p.topo;
  int n = t.numRanks();
  if (target.kind != CollectiveKind::AllReduce || target.chunkFactor % n != 0 ||
      p.collective.inputChunks != target.inputChunks)
    return Error("internal: the route does not match " + target.describe());
  int c = target.chunkFactor / n;
  TaskList out;
  out.collective = std::make_shared<const Collective>(target);
  // Owners start from their own contribution: every result slot is
  // initialized, so every fold reduces.
  std::vector<std::vector<char>> initialized(n);
  for (int r = 0; r < n; ++r)
    initialized[r].assign(target.outputChunks, 0);
  for (int x = 0; x < target.inputChunks; ++x) {
    int owner = x / c;
    ChunkLoc in{owner, BufferKind::Input, x}, res{owner, BufferKind::Output, x};
    if (target.canonical(in) != target.canonical(res))
      out.tasks.push_back(makeTask(in, res, TransferOp::Copy, -1, 0));
    initialized[owner][x] = 1;
  }
  for (const RouteValue &val : p.values)
    if (!val.dests.empty() &&
        (val.dests.size() != 1 || val.dests[0] != val.originIndex / c))
      return Error("internal: a gather route goes elsewhere than the "
                   "chunk's owner");
  auto result = [&](int v) {
    const RouteValue &val = p.values[v];
    return ChunkLoc{val.dests[0], BufferKind::Output, val.originIndex};
  };
  if (Status s = landAndFold(p, plan, result, initialized, out); !s)
    return s.error();
  int maxSlot = 0;
  for (const PlanSend &s : plan.sends)
    maxSlot = std::max(maxSlot, s.slot);
  // All-gather each result along the union of its contributions' routes,
  // reversed: a breadth-first tree from the owner.
  std::vector<int> rev = reverseLinks(t);
  std::vector<std::vector<int>> edges(target.inputChunks);
  for (const PlanSend &s : plan.sends) {
    int back = rev[s.link];
    if (back < 0)
      return Error("cannot invert the route: topology '" + t.name +
                   "' has no link from rank " +
                   std::to_string(t.links[s.link].dst) + " back to rank " +
                   std::to_string(t.links[s.link].src));
    edges[p.values[s.value].originIndex].push_back(back);
  }
  for (int x = 0; x < target.inputChunks; ++x) {
    int owner = x / c;
    std::vector<int> depth(n, -1);
    depth[owner] = 0;
    std::vector<int> frontier{owner};
    std::sort(edges[x].begin(), edges[x].end());
    edges[x].erase(std::unique(edges[x].begin(), edges[x].end()),
                   edges[x].end());
    while (!frontier.empty()) {
      std::vector<int> next;
      for (int u : frontier)
        for (int l : edges[x])
          if (t.links[l].src == u && depth[t.links[l].dst] < 0) {
            int w = t.links[l].dst;
            depth[w] = depth[u] + 1;
            out.tasks.push_back(
                makeTask({u, BufferKind::Output, x}, {w, BufferKind::Output, x},
                         TransferOp::Copy, l, maxSlot + 1 + depth[w]));
            next.push_back(w);
          }
      frontier = std::move(next);
    }
    for (int r = 0; r < n; ++r)
      if (depth[r] < 0)
        return Error("internal: the reversed routes of chunk " +
                     std::to_string(x) + " do not reach rank " +
                     std::to_string(r));
  }
  return out;
}

} // namespace ccsynth::synth
