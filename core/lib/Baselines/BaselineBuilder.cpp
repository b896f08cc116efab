//===- BaselineBuilder.cpp - Step assignment and routing for baselines ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements BaselineBuilder.h, shared by every baseline algorithm:
// makeCollective (a builtin collective, refused when its conditions would be
// too large to store) and bestLinks; the ScheduleBuilder, which gives each
// transfer the earliest step its reads and writes allow, forwards hops
// between unlinked ranks through scratch chunks and verifies the result in
// finish(); and the chain and tree helpers (reduceChain, broadcastChain,
// rotated, finishTree) the ring and tree baselines are built from. See
// docs/architecture.md ("Where the performance models live") and
// docs/in-network.md ("Baselines").
//
//===----------------------------------------------------------------------===//
#include "BaselineBuilder.h"

#include "ccsynth/Schedule/Verifier.h"

#include <algorithm>

namespace ccsynth::baseline {

/// Bound on the entries a baseline's collective stores (one per input and
/// output chunk slot, plus the values of the distinct reduction sets; about
/// 4 bytes each).
constexpr double kMaxConditionEntries = double(1 << 25);

namespace {

/// The entries the collective's conditions hold (one per input and output
/// chunk slot, plus the values of the distinct reduction sets).
double conditionEntries(CollectiveKind kind, int ranks, int chunkFactor) {
  double n = ranks, c = chunkFactor, in = c, out = c, pooled = 0;
  switch (kind) {
  case CollectiveKind::AllGather:
  case CollectiveKind::Gather:
    out = n * c;
    break;
  case CollectiveKind::ReduceScatter:
    in = n * c;
    pooled = n * c * n; // every output chunk sums its own n values
    break;
  case CollectiveKind::Scatter:
    in = n * c;
    break;
  case CollectiveKind::AllToAll:
    in = out = n * c;
    break;
  case CollectiveKind::AllReduce:
  case CollectiveKind::Reduce:
    pooled = c * n; // one set of n values per chunk, shared by every rank
    break;
  default:
    break;
  }
  return n * (in + out) + pooled;
}

} // namespace

std::optional<std::string> conditionsTooLarge(CollectiveKind kind, int ranks,
                                              int chunkFactor) {
  double entries = conditionEntries(kind, ranks, chunkFactor);
  if (entries <= kMaxConditionEntries)
    return std::nullopt;
  return std::string(toString(kind)) + " over " + std::to_string(ranks) +
         " ranks with chunk factor " + std::to_string(chunkFactor) +
         " is too large to build and verify (its conditions hold " +
         std::to_string((long long)entries) + " entries, the limit is " +
         std::to_string((long long)kMaxConditionEntries) + ")";
}

Expected<Collective> makeCollective(CollectiveKind kind, int ranks,
                                    int chunkFactor, bool inPlace, int root) {
  if (auto why = conditionsTooLarge(kind, ranks, chunkFactor))
    return Error(*why + "; use a smaller pipeline depth, another baseline or "
                        "fewer ranks");
  return Collective::builtin(kind, ranks, chunkFactor, inPlace, root);
}

std::vector<int> bestLinks(const Topology &topo) {
  int n = topo.numRanks();
  std::vector<int> best((size_t)n * n, -1);
  std::vector<double> bw(topo.links.size());
  for (size_t i = 0; i < topo.links.size(); ++i)
    bw[i] = topo.effectiveBandwidth((int)i);
  // Same rule as Topology::bestLink: the first link wins unless a later one
  // is strictly faster, or as fast with a lower alpha.
  for (size_t i = 0; i < topo.links.size(); ++i) {
    const Link &l = topo.links[i];
    if (l.src < 0 || l.src >= n || l.dst < 0 || l.dst >= n || l.src == l.dst)
      continue;
    int &cur = best[(size_t)l.src * n + l.dst];
    if (cur < 0 || bw[i] > bw[cur] ||
        (bw[i] == bw[cur] && l.alphaUs < topo.links[cur].alphaUs))
      cur = (int)i;
  }
  return best;
}

ScheduleBuilder::ScheduleBuilder(
    const Topology &topology, Collective col,
    std::optional<std::chrono::steady_clock::time_point> deadline)
    : topo(topology), links(bestLinks(topology)), until(deadline) {
  sched.collective = std::move(col);
  int n = numRanks();
  state.resize((size_t)n * 3);
  for (int r = 0; r < n; ++r) {
    state[r * 3 + (int)BufferKind::Input].resize(sched.collective.inputChunks);
    state[r * 3 + (int)BufferKind::Output].resize(
        sched.collective.outputChunks);
  }
  scratchUsed.assign(n, 0);
}

ChunkLoc ScheduleBuilder::scratch(int rank, int count) {
  ChunkLoc loc{rank, BufferKind::Scratch, scratchUsed[rank]};
  scratchUsed[rank] += count;
  state[rank * 3 + (int)BufferKind::Scratch].resize(scratchUsed[rank]);
  return loc;
}

bool ScheduleBuilder::aliases(ChunkLoc a, ChunkLoc b) const {
  return sched.collective.canonical(a) == sched.collective.canonical(b);
}

ScheduleBuilder::SlotState &ScheduleBuilder::slot(ChunkLoc loc) {
  ChunkLoc c = sched.collective.canonical(loc);
  return state[c.rank * 3 + (int)c.buffer][c.index];
}

void ScheduleBuilder::emit(ChunkLoc src, ChunkLoc dst, TransferOp op,
                           int count) {
  // The clock is read once per 4,096 transfers (a million take about a
  // second to build and verify).
  if ((sched.transfers.size() & 4095) == 0 && pastDeadline())
    return;
  if (sched.transfers.size() >= kMaxBaselineTransfers) {
    if (!failure)
      failure = Error("the schedule would need more than " +
                      std::to_string(kMaxBaselineTransfers) +
                      " transfers on '" + topo.name +
                      "'; use a smaller pipeline depth or "
                      "another baseline");
    return;
  }
  const std::pair<ChunkLoc, ChunkLoc> one[] = {{src, dst}};
  place(op, -1, one, count);
}

void ScheduleBuilder::place(
    TransferOp op, int sw,
    std::span<const std::pair<ChunkLoc, ChunkLoc>> members, int count) {
  // Every member reads before any writes: the step follows the state
  // before the operation.
  int step = minStep;
  for (const auto &[src, dst] : members)
    for (int k = 0; k < count; ++k) {
      const SlotState &s = slot({src.rank, src.buffer, src.index + k});
      const SlotState &d = slot({dst.rank, dst.buffer, dst.index + k});
      step = std::max({step, s.lastWrite + 1, d.lastWrite + 1, d.lastRead + 1});
    }
  for (const auto &[src, dst] : members)
    for (int k = 0; k < count; ++k) {
      SlotState &s = slot({src.rank, src.buffer, src.index + k});
      s.lastRead = std::max(s.lastRead, step);
    }
  for (const auto &[src, dst] : members) {
    for (int k = 0; k < count; ++k)
      slot({dst.rank, dst.buffer, dst.index + k}).lastWrite = step;
    Transfer t;
    t.src = src;
    t.dst = dst;
    t.count = count;
    t.op = op;
    t.step = step;
    t.sw = sw;
    t.channel = currentChannel;
    if (sw < 0 && src.rank != dst.rank)
      t.link = links[(size_t)src.rank * numRanks() + dst.rank];
    sched.transfers.push_back(t);
  }
}

void ScheduleBuilder::emitGroup(
    int sw, TransferOp op,
    const std::vector<std::pair<ChunkLoc, ChunkLoc>> &members, int count) {
  if (members.empty() || pastDeadline())
    return;
  if (sched.transfers.size() + members.size() > kMaxBaselineTransfers) {
    failure = Error("the schedule would need more than " +
                    std::to_string(kMaxBaselineTransfers) + " transfers on '" +
                    topo.name + "'; use a smaller pipeline depth");
    return;
  }
  place(op, sw, members, count);
}

void ScheduleBuilder::switchReduce(int sw, const std::vector<ChunkLoc> &srcs,
                                   ChunkLoc dst, int count) {
  std::vector<std::pair<ChunkLoc, ChunkLoc>> members;
  for (ChunkLoc src : srcs)
    members.push_back({src, dst});
  emitGroup(sw, TransferOp::SwitchReduce, members, count);
}

void ScheduleBuilder::multicast(int sw, ChunkLoc src,
                                const std::vector<ChunkLoc> &dsts, int count) {
  std::vector<std::pair<ChunkLoc, ChunkLoc>> members;
  for (ChunkLoc dst : dsts)
    members.push_back({src, dst});
  emitGroup(sw, TransferOp::Multicast, members, count);
}

std::vector<int> ScheduleBuilder::route(int src, int dst) {
  int n = numRanks();
  if (prevFrom.empty())
    prevFrom.resize(n);
  std::vector<int> &prev = prevFrom[src];
  if (prev.empty()) {
    // Topology::route's breadth-first search (minimum hops, then the
    // fastest bottleneck, links scanned in index order), run once per
    // source over adjacency lists: it is called for many pairs.
    if (outLinks.empty()) {
      outLinks.resize(n);
      for (size_t i = 0; i < topo.links.size(); ++i)
        outLinks[topo.links[i].src].push_back((int)i);
    }
    prev.assign(n, -1);
    std::vector<int> hops(n, -1);
    std::vector<double> bw(n, 0);
    std::vector<int> queue{src};
    hops[src] = 0;
    for (size_t head = 0; head < queue.size(); ++head) {
      int u = queue[head];
      for (int i : outLinks[u]) {
        int v = topo.links[i].dst;
        double b =
            std::min(u == src ? 1e300 : bw[u], topo.effectiveBandwidth(i));
        if (hops[v] < 0) {
          hops[v] = hops[u] + 1;
          prev[v] = u;
          bw[v] = b;
          queue.push_back(v);
        } else if (hops[v] == hops[u] + 1 && b > bw[v]) {
          prev[v] = u;
          bw[v] = b;
        }
      }
    }
  }
  if (src != dst && prev[dst] < 0)
    return {};
  std::vector<int> path;
  for (int v = dst; v != src; v = prev[v])
    path.push_back(v);
  path.push_back(src);
  std::reverse(path.begin(), path.end());
  return path;
}

void ScheduleBuilder::copyLocal(ChunkLoc src, ChunkLoc dst, int count) {
  // Aliased slots already hold the data (in-place collectives); a transfer
  // onto itself would be rejected by the verifier.
  bool same = true;
  for (int k = 0; k < count && same; ++k)
    same = aliases({src.rank, src.buffer, src.index + k},
                   {dst.rank, dst.buffer, dst.index + k});
  if (same)
    return;
  emit(src, dst, TransferOp::Copy, count);
}

void ScheduleBuilder::send(ChunkLoc src, ChunkLoc dst, TransferOp op,
                           int count) {
  if (failure)
    return;
  if (src.rank == dst.rank || adjacent(src.rank, dst.rank)) {
    emit(src, dst, op, count);
    return;
  }
  std::vector<int> path = route(src.rank, dst.rank);
  if (path.size() < 2) {
    if (!failure)
      failure = Error("topology '" + topo.name + "' has no path from rank " +
                      std::to_string(src.rank) + " to rank " +
                      std::to_string(dst.rank));
    return;
  }
  // Each intermediate rank stores the chunks in fresh scratch and forwards
  // them; only the last hop applies `op`.
  ChunkLoc at = src;
  for (size_t h = 1; h + 1 < path.size(); ++h) {
    ChunkLoc hop = scratch(path[h], count);
    emit(at, hop, TransferOp::Copy, count);
    at = hop;
  }
  emit(at, dst, op, count);
}

bool ScheduleBuilder::pastDeadline() {
  if (failure)
    return true;
  if (until && std::chrono::steady_clock::now() > *until)
    failure = Error("building the schedule stopped at its time limit (" +
                    std::to_string(sched.transfers.size()) +
                    " transfers built)");
  return failure.has_value();
}

Expected<Schedule> ScheduleBuilder::finish(std::string name,
                                           std::string origin) {
  if (pastDeadline())
    return *failure;
  sched.name = std::move(name);
  sched.origin = std::move(origin);
  sched.topology = topo.name;
  sched.protocol = "Simple";
  // Step order reads naturally and is what the verifier and simulator use
  // (stably) anyway.
  std::stable_sort(
      sched.transfers.begin(), sched.transfers.end(),
      [](const Transfer &a, const Transfer &b) { return a.step < b.step; });
  sched.scratchChunks = 0;
  for (int used : scratchUsed)
    sched.scratchChunks = std::max(sched.scratchChunks, used);
  VerifyOptions vo;
  vo.topology = &topo;
  vo.maxIssues = 1;
  VerifyResult vr = verifySchedule(sched, vo);
  if (!vr.ok())
    return Error("internal error: baseline '" + sched.name +
                 "' failed verification: " + vr.issues.front().message);
  return std::move(sched);
}

void reduceChain(ScheduleBuilder &b, const std::vector<int> &path,
                 const SlotAt &contrib, const SlotAt &acc, int count) {
  int m = (int)path.size();
  if (m == 0)
    return;
  if (m == 1) {
    b.copyLocal(contrib(0), acc(0), count);
    return;
  }
  // Where the accumulator already holds the rank's contribution (in place,
  // or a partial sum from an earlier phase) the hop reduces into it.
  // Otherwise the hop lands as a copy and the rank adds its own input
  // locally: initializing every accumulator up front instead would run all
  // those copies at once, before the first hop could start.
  for (int p = 1; p < m; ++p) {
    ChunkLoc from = p == 1 ? contrib(0) : acc(p - 1);
    bool holdsOwn = true;
    for (int k = 0; k < count && holdsOwn; ++k) {
      ChunkLoc a = contrib(p), c = acc(p);
      holdsOwn = b.aliases({a.rank, a.buffer, a.index + k},
                           {c.rank, c.buffer, c.index + k});
    }
    if (holdsOwn) {
      b.reduce(from, acc(p), count);
    } else {
      b.copy(from, acc(p), count);
      b.reduce(contrib(p), acc(p), count);
    }
  }
}

void broadcastChain(ScheduleBuilder &b, const std::vector<int> &path,
                    ChunkLoc src, const SlotAt &slot, int count) {
  int m = (int)path.size();
  if (m < 2)
    return;
  b.copy(src, slot(1), count);
  for (int p = 1; p + 1 < m; ++p)
    b.copy(slot(p), slot(p + 1), count);
}

std::vector<int> rotated(const std::vector<int> &ring, int start) {
  std::vector<int> out;
  int m = (int)ring.size();
  out.reserve(m);
  for (int i = 0; i < m; ++i)
    out.push_back(ring[(start + i) % m]);
  return out;
}

bool finishTree(Tree &tree, const std::vector<int> &members) {
  size_t n = tree.parent.size();
  tree.children.assign(n, {});
  tree.preorder.clear();
  if (tree.root < 0 || (size_t)tree.root >= n)
    return false;
  for (int r : members)
    if (r != tree.root) {
      int p = tree.parent[r];
      if (p < 0 || (size_t)p >= n)
        return false;
      tree.children[p].push_back(r);
    }
  // Breadth-first from the root; a cycle or a detached rank leaves some
  // member unvisited.
  tree.preorder.push_back(tree.root);
  for (size_t i = 0; i < tree.preorder.size(); ++i)
    for (int c : tree.children[tree.preorder[i]])
      tree.preorder.push_back(c);
  return tree.preorder.size() == members.size();
}

} // namespace ccsynth::baseline
