//===- MSCCLPPPacking.cpp - MSCCL threadblocks packed into MSCCL++ ones ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements MSCCLPPPacking.h. StepLevels gives each step its level in the
// program's wait graph; checkPacking checks a packing against the argument
// of MSCCLPPPacking.h (each MSCCL threadblock in one plan threadblock, in
// program order, and no cycle once the plan's orders are added). RankPacker
// packs one rank's MSCCL threadblocks into at most the threadblock budget,
// merging as little as it needs: the best pairs when the rank is a little
// over (pairwise), else a list schedule of the threadblocks or of groups
// joined along dependencies (cluster, schedule). packThreadblocks runs it
// on every rank; identityPacking leaves the program as it is.
// See docs/compiler.md ("Merging threadblocks without deadlock").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Target/MSCCLPPPacking.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <tuple>

namespace ccsynth::msccl {

bool Packing::merges() const {
  for (const auto &rank : ranks)
    for (const PackedThreadblock &tb : rank)
      if (tb.members.size() > 1)
        return true;
  return false;
}

Expected<StepLevels> StepLevels::compute(const Algo &algo,
                                         const Matching &matching) {
  StepLevels s;
  s.graph = buildWaitGraph(algo, matching, BufferModel::unbounded());
  std::optional<std::vector<int>> order = topologicalOrder(s.graph);
  if (!order)
    return Error("the program's steps wait for each other in a cycle");
  s.level.assign(s.graph.nodes.size(), 0);
  for (int v : *order)
    for (const WaitGraph::Pred &p : s.graph.preds[v])
      s.level[v] = std::max(s.level[v], s.level[p.node] + 1);
  return s;
}

int StepLevels::of(StepRef ref) const {
  int v = graph.nodeOf(ref);
  return v < 0 ? 0 : level[v];
}

bool StepLevels::before(StepRef a, StepRef b) const {
  return std::tuple(of(a), a.rank, a.tb, a.step) <
         std::tuple(of(b), b.rank, b.tb, b.step);
}

Packing identityPacking(const Algo &algo) {
  Packing p;
  p.ranks.resize(algo.ngpus);
  for (const Gpu &g : algo.gpus) {
    if (g.id < 0 || g.id >= algo.ngpus)
      continue;
    for (const Threadblock &tb : g.tbs) {
      PackedThreadblock ptb;
      ptb.members = {tb.id};
      for (int i = 0; i < (int)tb.steps.size(); ++i)
        ptb.steps.push_back({g.id, tb.id, i});
      p.ranks[g.id].push_back(std::move(ptb));
    }
  }
  return p;
}

Status checkPacking(const Algo &algo, const Matching &matching,
                    const Packing &packing) {
  if ((int)packing.ranks.size() != algo.ngpus)
    return Error("the packing has " + std::to_string(packing.ranks.size()) +
                 " ranks, the program " + std::to_string(algo.ngpus));
  WaitGraph graph = buildWaitGraph(algo, matching, BufferModel::unbounded());
  for (const Gpu &g : algo.gpus) {
    std::string rank = "rank " + std::to_string(g.id);
    std::map<int, int> runs; // threadblock id -> plan threadblocks running it
    for (const PackedThreadblock &ptb : packing.ranks[g.id]) {
      std::map<int, int> next; // member -> next step it must run
      for (int m : ptb.members)
        next[m] = 0;
      for (StepRef ref : ptb.steps) {
        auto it = next.find(ref.tb);
        if (ref.rank != g.id || it == next.end())
          return Error(rank +
                       ": a plan threadblock runs a step of "
                       "threadblock " +
                       std::to_string(ref.tb) + " of rank " +
                       std::to_string(ref.rank) + ", not one of its members");
        if (ref.step != it->second++)
          return Error(rank + ": threadblock " + std::to_string(ref.tb) +
                       "'s steps run out of program order");
      }
      for (int m : ptb.members) {
        ++runs[m];
        auto tb = graph.tbNodes.find({g.id, m});
        if (tb == graph.tbNodes.end())
          return Error(rank + " has no threadblock " + std::to_string(m));
        if (next[m] != tb->second.second)
          return Error(rank + ": threadblock " + std::to_string(m) + " runs " +
                       std::to_string(next[m]) + " of its " +
                       std::to_string(tb->second.second) + " steps");
      }
      for (size_t k = 1; k < ptb.steps.size(); ++k) {
        int u = graph.nodeOf(ptb.steps[k - 1]), v = graph.nodeOf(ptb.steps[k]);
        if (u >= 0 && v >= 0)
          graph.preds[v].push_back({u, WaitGraph::ProgramOrder});
      }
    }
    for (const Threadblock &tb : g.tbs)
      if (runs[tb.id] != 1)
        return Error(rank + ": threadblock " + std::to_string(tb.id) +
                     " runs in " + std::to_string(runs[tb.id]) +
                     " plan threadblocks");
  }
  if (!topologicalOrder(graph))
    return Error("the plan threadblocks' order closes a cycle of waits: "
                 "some run could deadlock");
  return Status::success();
}

namespace {

/// MSCCL threadblocks of one rank on their way to one plan threadblock.
struct Group {
  PackedThreadblock tb;
  int lo = INT_MAX, hi = INT_MIN; // level range of its steps
};

/// Packs one rank's threadblocks into at most `budget` plan threadblocks
/// (see packThreadblocks).
class RankPacker {
public:
  RankPacker(const Gpu &gpu, const StepLevels &levels,
             const PackOptions &options);

  Expected<std::vector<PackedThreadblock>> run();

private:
  const Gpu &gpu;
  const StepLevels &levels;
  const PackOptions &options;
  int budget;
  /// One group per MSCCL threadblock, in the rank's order.
  std::vector<Group> singles;
  /// Dependencies between threadblocks (ids), both directions counted, and
  /// every dependency as (producer, consumer) in the consumer's level order.
  std::map<int, std::map<int, int>> deps;
  std::vector<std::pair<int, int>> depEdges;
  /// Level of each step, by threadblock id and step.
  std::map<int, std::vector<int>> levelOf;

  /// Level order (StepLevels::before) within this rank.
  bool before(StepRef x, StepRef y) const {
    return std::tuple(levelOf.at(x.tb)[x.step], x.tb, x.step) <
           std::tuple(levelOf.at(y.tb)[y.step], y.tb, y.step);
  }

  Group merged(const Group &a, const Group &b) const;
  bool fits(const Group &g, int cap) const {
    return options.operations(gpu.id, g.tb) <= cap;
  }
  /// Pairs merged one at a time until the budget is met, the best pair
  /// first: most dependencies between them, then least overlap of their
  /// level ranges, then most channels in common. Nothing when no further
  /// pair fits first.
  std::optional<std::vector<Group>> pairwise() const;
  /// Groups joined along dependencies while each stays within `cap`
  /// operations.
  std::vector<Group> cluster(int cap) const;
  /// List scheduling of `items` (in order of their first level) onto at
  /// most `budget` plan threadblocks. Each goes to the open one it shares
  /// the most dependencies with, then (unless `tight`) to a new one while
  /// the budget allows, then to the open one whose steps end earliest; the
  /// first that fits takes it. `tight` opens one only when none fits.
  std::optional<std::vector<Group>> schedule(std::vector<Group> items,
                                             bool tight) const;
};

RankPacker::RankPacker(const Gpu &gpu, const StepLevels &levels,
                       const PackOptions &options)
    : gpu(gpu), levels(levels), options(options),
      budget(options.maxThreadblocksPerRank) {
  std::vector<std::tuple<int, int, int>> edges; // (level, producer, consumer)
  for (const Threadblock &tb : gpu.tbs) {
    Group g;
    g.tb.members = {tb.id};
    for (int s = 0; s < (int)tb.steps.size(); ++s) {
      StepRef ref{gpu.id, tb.id, s};
      g.tb.steps.push_back(ref);
      int l = levels.of(ref);
      levelOf[tb.id].push_back(l);
      g.lo = std::min(g.lo, l);
      g.hi = std::max(g.hi, l);
      int producer = tb.steps[s].depid;
      if (producer >= 0 && producer != tb.id) {
        ++deps[tb.id][producer];
        ++deps[producer][tb.id];
        edges.push_back({l, producer, tb.id});
      }
    }
    singles.push_back(std::move(g));
  }
  std::stable_sort(edges.begin(), edges.end());
  for (auto [l, producer, consumer] : edges)
    depEdges.push_back({producer, consumer});
}

Group RankPacker::merged(const Group &a, const Group &b) const {
  Group out;
  std::merge(a.tb.members.begin(), a.tb.members.end(), b.tb.members.begin(),
             b.tb.members.end(), std::back_inserter(out.tb.members));
  std::merge(a.tb.steps.begin(), a.tb.steps.end(), b.tb.steps.begin(),
             b.tb.steps.end(), std::back_inserter(out.tb.steps),
             [&](StepRef x, StepRef y) { return before(x, y); });
  out.lo = std::min(a.lo, b.lo);
  out.hi = std::max(a.hi, b.hi);
  return out;
}

std::optional<std::vector<Group>> RankPacker::pairwise() const {
  struct Candidate {
    int deps, overlap, shared, a, b, va, vb;
    auto key() const { return std::tuple(deps, -overlap, shared, -a, -b); }
    bool operator<(const Candidate &o) const { return key() < o.key(); }
  };
  std::vector<Group> groups = singles;
  std::vector<int> version(groups.size(), 0);
  std::vector<std::set<std::pair<int, int>>> conns(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    const Threadblock &tb = gpu.tbs[i];
    for (int peer : {tb.send, tb.recv})
      if (peer >= 0)
        conns[i].insert({tb.chan, peer});
  }
  // Dependencies between groups (indices), both directions counted.
  std::map<int, int> indexOf; // threadblock id -> group
  for (size_t i = 0; i < groups.size(); ++i)
    indexOf[groups[i].tb.members.front()] = (int)i;
  std::vector<std::map<int, int>> between(groups.size());
  for (auto [producer, consumer] : depEdges) {
    int a = indexOf.at(producer), b = indexOf.at(consumer);
    ++between[a][b];
    ++between[b][a];
  }
  std::priority_queue<Candidate> queue;
  auto push = [&](int a, int b) {
    if (a > b)
      std::swap(a, b);
    const Group &ga = groups[a], &gb = groups[b];
    Candidate c{};
    auto it = between[a].find(b);
    c.deps = it == between[a].end() ? 0 : it->second;
    c.overlap =
        std::max(0, std::min(ga.hi, gb.hi) - std::max(ga.lo, gb.lo) + 1);
    for (const auto &conn : conns[a])
      c.shared += (int)conns[b].count(conn);
    c.a = a;
    c.b = b;
    c.va = version[a];
    c.vb = version[b];
    queue.push(c);
  };
  int n = (int)groups.size();
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      push(a, b);
  int live = n;
  while (live > budget && !queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    if (groups[c.a].tb.members.empty() || groups[c.b].tb.members.empty() ||
        version[c.a] != c.va || version[c.b] != c.vb)
      continue;
    Group candidate = merged(groups[c.a], groups[c.b]);
    if (!fits(candidate, options.maxOperations))
      continue;
    groups[c.a] = std::move(candidate);
    groups[c.b].tb.members.clear();
    conns[c.a].insert(conns[c.b].begin(), conns[c.b].end());
    ++version[c.a];
    --live;
    for (auto [other, count] : between[c.b]) {
      between[other].erase(c.b);
      if (other == c.a)
        continue;
      between[c.a][other] += count;
      between[other][c.a] += count;
    }
    between[c.b].clear();
    for (int o = 0; o < n; ++o)
      if (o != c.a && !groups[o].tb.members.empty())
        push(c.a, o);
  }
  if (live > budget)
    return std::nullopt;
  std::vector<Group> out;
  for (Group &g : groups)
    if (!g.tb.members.empty())
      out.push_back(std::move(g));
  return out;
}

std::vector<Group> RankPacker::cluster(int cap) const {
  std::vector<Group> groups = singles;
  std::map<int, int> groupOf; // threadblock id -> group
  for (int i = 0; i < (int)groups.size(); ++i)
    groupOf[groups[i].tb.members.front()] = i;
  for (auto [producer, consumer] : depEdges) {
    auto p = groupOf.find(producer), c = groupOf.find(consumer);
    if (p == groupOf.end() || c == groupOf.end() || p->second == c->second)
      continue;
    int a = std::min(p->second, c->second), b = std::max(p->second, c->second);
    Group candidate = merged(groups[a], groups[b]);
    if (!fits(candidate, cap))
      continue;
    for (int m : groups[b].tb.members)
      groupOf[m] = a;
    groups[a] = std::move(candidate);
    groups[b].tb.members.clear();
  }
  std::vector<Group> out;
  for (Group &g : groups)
    if (!g.tb.members.empty())
      out.push_back(std::move(g));
  return out;
}

std::optional<std::vector<Group>> RankPacker::schedule(std::vector<Group> items,
                                                       bool tight) const {
  std::stable_sort(items.begin(), items.end(),
                   [](const Group &a, const Group &b) { return a.lo < b.lo; });
  std::vector<Group> bins;
  std::map<int, int> binOf; // threadblock id -> bin
  for (Group &item : items) {
    std::map<int, int> shared; // bin -> dependencies with the item
    for (int m : item.tb.members)
      if (auto d = deps.find(m); d != deps.end())
        for (auto [other, count] : d->second)
          if (auto it = binOf.find(other); it != binOf.end())
            shared[it->second] += count;
    std::vector<int> prefs;
    for (int b = 0; b < (int)bins.size(); ++b)
      prefs.push_back(b);
    auto depsWith = [&](int b) {
      auto it = shared.find(b);
      return it == shared.end() ? 0 : it->second;
    };
    std::stable_sort(prefs.begin(), prefs.end(), [&](int a, int b) {
      if (depsWith(a) != depsWith(b))
        return depsWith(a) > depsWith(b);
      return bins[a].hi < bins[b].hi;
    });
    if ((int)bins.size() < budget)
      prefs.insert(tight ? prefs.end() : prefs.begin() + shared.size(), -1);
    bool placed = false;
    for (int b : prefs) {
      if (b < 0) {
        for (int m : item.tb.members)
          binOf[m] = (int)bins.size();
        bins.push_back(item);
        placed = true;
        break;
      }
      Group candidate = merged(bins[b], item);
      if (!fits(candidate, options.maxOperations))
        continue;
      bins[b] = std::move(candidate);
      for (int m : item.tb.members)
        binOf[m] = b;
      placed = true;
      break;
    }
    if (!placed)
      return std::nullopt;
  }
  return bins;
}

Expected<std::vector<PackedThreadblock>> RankPacker::run() {
  // Merge as little as the budget needs. A rank a little over it merges
  // the best pairs; one far over (or where no pair fits) is list scheduled:
  // the threadblocks themselves, then groups joined along dependencies,
  // smaller ones first (they pack with less waste), then larger (they save
  // more semaphores).
  std::optional<std::vector<Group>> bins;
  int max = options.maxOperations;
  if ((int)singles.size() <= 2 * budget)
    bins = pairwise();
  for (int cap : {0, max / 4, max / 2, max * 3 / 4, max}) {
    if (bins)
      break;
    std::vector<Group> items = cap ? cluster(cap) : singles;
    if ((int)items.size() <= budget) {
      bins = std::move(items);
      break;
    }
    for (bool tight : {false, true})
      if (!bins)
        bins = schedule(items, tight);
    if (bins)
      break;
  }
  if (!bins)
    return Error("rank " + std::to_string(gpu.id) + " needs " +
                 std::to_string(gpu.tbs.size()) +
                 " threadblocks, and no merge of them into " +
                 std::to_string(budget) + " keeps every one within " +
                 std::to_string(max) + " operations and its channel limits");
  // Plan threadblocks in the order of their first MSCCL threadblock.
  std::stable_sort(bins->begin(), bins->end(),
                   [](const Group &a, const Group &b) {
                     return a.tb.members.front() < b.tb.members.front();
                   });
  std::vector<PackedThreadblock> out;
  for (Group &g : *bins)
    out.push_back(std::move(g.tb));
  return out;
}

} // namespace

Expected<Packing> packThreadblocks(const Algo &algo, const Matching &matching,
                                   const PackOptions &options,
                                   int *failedRank) {
  Packing packing = identityPacking(algo);
  if (options.maxThreadblocksPerRank <= 0)
    return packing;
  bool over = false;
  for (const Gpu &g : algo.gpus)
    over |= (int)g.tbs.size() > options.maxThreadblocksPerRank;
  if (!over)
    return packing;
  auto levels = StepLevels::compute(algo, matching);
  if (!levels)
    return levels.error();
  for (const Gpu &g : algo.gpus) {
    if ((int)g.tbs.size() <= options.maxThreadblocksPerRank || g.id < 0 ||
        g.id >= algo.ngpus)
      continue;
    auto tbs = RankPacker(g, *levels, options).run();
    if (!tbs) {
      if (failedRank)
        *failedRank = g.id;
      return tbs.error();
    }
    packing.ranks[g.id] = tbs.take();
  }
  return packing;
}

} // namespace ccsynth::msccl
