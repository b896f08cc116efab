//===- SwitchLowering.cpp - Switch operations as generated code's steps ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements SwitchLowering.h. lowerSwitchTransfers groups a schedule's
// switch transfers into operations and checks that they lower (one address
// per switch group, chunks owned by their issuing rank). Then
// attachSwitchThreadblocks adds one switch threadblock per rank and switch
// to the lowered program and orders it against the point-to-point
// threadblocks that touch the same chunks (accessOf, conflict), and
// planSwitchOps lists each switch threadblock's operations for code
// generation. See docs/runtime.md ("Switch threadblocks (NVLink SHARP)").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Target/SwitchLowering.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace ccsynth::msccl {

namespace {

/// One switch operation: its transfers and what they share.
struct Operation {
  std::vector<int> transfers;
  TransferOp op = TransferOp::SwitchReduce;
  int sw = -1;
  int step = 0;
  int issuer = 0;
  int count = 1;
  /// The address on every rank of the group (a reduction's operand, a
  /// multicast's destination), and the issuer's own end.
  BufferKind wideBuf = BufferKind::Input;
  int wideIndex = 0;
  ChunkLoc local;
  std::vector<int> ranks; ///< ascending
  /// Shares a chunk with point-to-point transfers on the issuer.
  bool ordered = false;
};

/// A switch operation's access to one rank's chunk.
struct Access {
  int op = 0;
  int rank = 0;
  bool write = false;
};

} // namespace

Expected<SwitchLowering> lowerSwitchTransfers(const Schedule &s, int lanes) {
  lanes = std::max(1, lanes);
  const Collective &col = s.collective;
  auto locOf = [&](int t) {
    return t < (int)s.transferLocs.size() ? s.transferLocs[t] : SourceLoc{};
  };
  auto refuse = [&](int t, const std::string &why) -> Error {
    return Error("transfer #" + std::to_string(t) + " (" +
                     toString(s.transfers[t].op) + " through switch " +
                     std::to_string(s.transfers[t].sw) +
                     ") does not lower to generated code: " + why,
                 locOf(t));
  };
  SwitchGroups groups = switchGroups(s.transfers);
  std::vector<Operation> ops;
  for (const std::vector<int> &members : groups.members) {
    const Transfer &first = s.transfers[members.front()];
    Operation o;
    o.transfers = members;
    o.op = first.op;
    o.sw = first.sw;
    o.step = first.step;
    o.count = first.count;
    bool reduce = o.op == TransferOp::SwitchReduce;
    o.issuer = reduce ? first.dst.rank : first.src.rank;
    o.local = reduce ? first.dst : first.src;
    const ChunkLoc &wide0 = reduce ? first.src : first.dst;
    o.wideBuf = wide0.buffer;
    o.wideIndex = wide0.index;
    std::set<int> ranks;
    for (int t : members) {
      const Transfer &tr = s.transfers[t];
      const ChunkLoc &wide = reduce ? tr.src : tr.dst;
      if (tr.count != o.count)
        return refuse(t, "its members move different chunk counts (" +
                             std::to_string(o.count) + " and " +
                             std::to_string(tr.count) + ")");
      if (wide.buffer != o.wideBuf || wide.index != o.wideIndex)
        return refuse(t, std::string("the switch ") +
                             (reduce ? "reads " : "writes ") + toString(wide) +
                             " but " + toString(wide0) +
                             " on another rank: multicast memory has one "
                             "address on every rank");
      if (!ranks.insert(wide.rank).second)
        return refuse(t, "rank " + std::to_string(wide.rank) +
                             " takes part twice");
    }
    if (!ranks.count(o.issuer)) {
      // The hardware operation includes the issuing rank: a reduction adds
      // its operand, a multicast writes its copy. A multicast from the
      // place it writes everywhere (in place) writes the same values.
      ChunkLoc own{o.issuer, o.wideBuf, o.wideIndex};
      bool same = true;
      for (int i = 0; i < o.count && same; ++i)
        same = col.canonical({own.rank, own.buffer, own.index + i}) ==
               col.canonical({o.local.rank, o.local.buffer, o.local.index + i});
      if (reduce || !same)
        return refuse(members.front(),
                      std::string("rank ") + std::to_string(o.issuer) +
                          (reduce ? " receives the reduction but adds no "
                                    "operand of its own"
                                  : " multicasts but is not among the "
                                    "destinations") +
                          ": the switch operation always includes the "
                          "issuing rank");
      ranks.insert(o.issuer);
    }
    o.ranks.assign(ranks.begin(), ranks.end());
    ops.push_back(std::move(o));
  }

  // One group of ranks per switch.
  std::map<int, std::pair<std::vector<int>, int>> groupOfSwitch;
  for (const Operation &o : ops) {
    auto [it, fresh] =
        groupOfSwitch.try_emplace(o.sw, o.ranks, o.transfers.front());
    if (!fresh && it->second.first != o.ranks)
      return refuse(o.transfers.front(),
                    "it spans ranks " + formatRankSet(o.ranks) +
                        ", but the operation at transfer #" +
                        std::to_string(it->second.second) +
                        " through the same switch spans ranks " +
                        formatRankSet(it->second.first) +
                        ": every operation of a switch spans the same "
                        "ranks (one multicast object)");
  }

  // Who touches each chunk: the issuer of the operations that read or write
  // it on every rank of the group, and every local access.
  std::map<ChunkLoc, std::pair<int, int>> wideOwner; // canonical -> issuer, t
  for (const Operation &o : ops)
    for (int r : o.ranks)
      for (int i = 0; i < o.count; ++i) {
        ChunkLoc c = col.canonical({r, o.wideBuf, o.wideIndex + i});
        auto [it, fresh] =
            wideOwner.try_emplace(c, o.issuer, o.transfers.front());
        if (!fresh && it->second.first != o.issuer)
          return refuse(o.transfers.front(),
                        "rank " + std::to_string(o.issuer) + " and rank " +
                            std::to_string(it->second.first) + " (transfer #" +
                            std::to_string(it->second.second) +
                            ") both issue operations on " + toString(c) +
                            ": the switch threadblocks of two ranks are not "
                            "ordered");
      }
  for (const Operation &o : ops)
    for (int i = 0; i < o.count; ++i) {
      ChunkLoc c =
          col.canonical({o.local.rank, o.local.buffer, o.local.index + i});
      auto it = wideOwner.find(c);
      if (it != wideOwner.end() && it->second.first != o.issuer)
        return refuse(o.transfers.front(),
                      "its own end " + toString(c) +
                          " is read or written on every rank by operations "
                          "rank " +
                          std::to_string(it->second.first) +
                          " issues (transfer #" +
                          std::to_string(it->second.second) +
                          "): the switch threadblocks of two ranks are not "
                          "ordered");
    }

  // Every chunk switch operations read or write, per rank.
  std::map<ChunkLoc, std::vector<Access>> switchAccess; // canonical
  for (int i = 0; i < (int)ops.size(); ++i) {
    const Operation &o = ops[i];
    bool reduce = o.op == TransferOp::SwitchReduce;
    for (int k = 0; k < o.count; ++k) {
      ChunkLoc local =
          col.canonical({o.local.rank, o.local.buffer, o.local.index + k});
      for (int r : o.ranks) {
        ChunkLoc wide = col.canonical({r, o.wideBuf, o.wideIndex + k});
        // A multicast from the place it writes leaves the issuer's copy.
        if (wide != local)
          switchAccess[wide].push_back({i, r, !reduce});
      }
      switchAccess[local].push_back({i, o.issuer, reduce});
    }
  }

  SwitchLowering out;
  out.pointToPoint = s;
  out.pointToPoint.transfers.clear();
  out.pointToPoint.transferLocs.clear();
  for (int t = 0; t < (int)s.transfers.size(); ++t) {
    const Transfer &tr = s.transfers[t];
    if (isSwitchOp(tr.op))
      continue;
    for (const ChunkLoc *end : {&tr.src, &tr.dst})
      for (int i = 0; i < tr.count; ++i) {
        ChunkLoc c = col.canonical({end->rank, end->buffer, end->index + i});
        auto it = switchAccess.find(c);
        if (it == switchAccess.end())
          continue;
        bool write = end == &tr.dst;
        for (const Access &a : it->second) {
          if (!write && !a.write)
            continue;
          Operation &o = ops[a.op];
          std::string what = "transfer #" + std::to_string(t) + " (" +
                             toString(tr.op) + ") " +
                             (write ? "writes " : "reads ") + toString(c) +
                             ", which the switch operation at transfer #" +
                             std::to_string(o.transfers.front()) + " " +
                             (a.write ? "writes" : "reads");
          if (a.rank != o.issuer)
            return Error(what + " on rank " + std::to_string(a.rank) +
                             " for rank " + std::to_string(o.issuer) +
                             ", which issues it: switch operations are "
                             "ordered with point-to-point transfers only on "
                             "their issuing rank",
                         locOf(t));
          if (o.step == tr.step)
            return Error(what + " at the same step (" +
                             std::to_string(tr.step) +
                             "): switch operations are ordered with "
                             "point-to-point transfers by their steps",
                         locOf(t));
          o.ordered = true;
        }
      }
    out.pointToPoint.transfers.push_back(tr);
    if (t < (int)s.transferLocs.size())
      out.pointToPoint.transferLocs.push_back(s.transferLocs[t]);
  }
  if (out.pointToPoint.transferLocs.size() != out.pointToPoint.transfers.size())
    out.pointToPoint.transferLocs.clear();

  // Steps in schedule order (step, then first transfer), per issuer.
  std::stable_sort(ops.begin(), ops.end(),
                   [](const Operation &a, const Operation &b) {
                     return std::pair(a.step, a.transfers.front()) <
                            std::pair(b.step, b.transfers.front());
                   });
  // Chains: the operations of one (issuer, switch) that share a chunk,
  // which must stay in one threadblock, in order. An operation ordered with
  // the point-to-point program orders the whole chain that way, and then
  // each of its operations is a threadblock step of its own that waits for
  // the others by schedule step (attachSwitchThreadblocks): a reduction
  // runs ahead while an earlier result is still on the network.
  std::vector<int> parent(ops.size());
  auto find = [&](int i) {
    while (parent[i] != i)
      i = parent[i] = parent[parent[i]];
    return i;
  };
  auto linkChains = [&](bool skipOrdered) {
    for (size_t i = 0; i < ops.size(); ++i)
      parent[i] = (int)i;
    std::map<std::tuple<int, int, ChunkLoc>, int> firstOp;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Operation &o = ops[i];
      if (skipOrdered && o.ordered)
        continue;
      auto link = [&](ChunkLoc c) {
        auto [it, fresh] =
            firstOp.try_emplace({o.issuer, o.sw, col.canonical(c)}, (int)i);
        if (!fresh)
          parent[find((int)i)] = find(it->second);
      };
      for (int k = 0; k < o.count; ++k) {
        link({o.issuer, o.wideBuf, o.wideIndex + k});
        link({o.local.rank, o.local.buffer, o.local.index + k});
      }
    }
  };
  {
    linkChains(false);
    std::set<int> orderedRoots;
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].ordered)
        orderedRoots.insert(find((int)i));
    for (size_t i = 0; i < ops.size(); ++i)
      ops[i].ordered = orderedRoots.count(find((int)i)) > 0;
    linkChains(true);
  }
  // Per (issuer, switch): its chains in the order of their first operation.
  std::map<std::pair<int, int>, std::vector<int>> chainsOf; // roots
  for (size_t i = 0; i < ops.size(); ++i)
    if (find((int)i) == (int)i)
      chainsOf[{ops[i].issuer, ops[i].sw}].push_back((int)i);
  // Lanes per switch: as many as its busiest issuer has chains, at most
  // `lanes`; every rank of the group runs each lane (its barriers), also
  // where it issues nothing.
  std::map<int, int> lanesOf;
  for (const auto &[key, chains] : chainsOf)
    lanesOf[key.second] =
        std::max(lanesOf[key.second], std::min(lanes, (int)chains.size()));
  out.threadblocks.resize(col.numRanks);
  out.orderedAt.resize(col.numRanks);
  std::map<std::tuple<int, int, int>, int> tbOf; // (rank, switch, lane)
  for (const auto &[sw, group] : groupOfSwitch)
    for (int r : group.first)
      for (int lane = 0; lane < lanesOf[sw]; ++lane) {
        Threadblock tb;
        tb.switchId = sw;
        tb.switchLane = lane;
        tb.group = group.first;
        tbOf[{r, sw, lane}] = (int)out.threadblocks[r].size();
        out.threadblocks[r].push_back(std::move(tb));
        out.orderedAt[r].emplace_back();
      }
  // Chain c of n goes to lane c * L / n: runs of consecutive chains, whose
  // consecutive chunks join into one step. An operation ordered with the
  // point-to-point program is a chain of its own and joins nothing: a run
  // of such operations of one kind (the reductions, then the multicasts)
  // deals its lanes out in turn instead, so that its first operations run
  // at once, one per lane (the network starts sooner, and the last results
  // are multicast at once).
  std::vector<int> laneOfRoot(ops.size(), 0);
  for (const auto &[key, chains] : chainsOf) {
    int n = (int)chains.size(), l = lanesOf[key.second];
    for (int c = 0; c < n; ++c)
      laneOfRoot[chains[c]] = (int)((long long)c * l / n);
    for (int b = 0; b < n;) {
      int e = b;
      while (e < n && ops[chains[e]].ordered &&
             ops[chains[e]].op == ops[chains[b]].op)
        ++e;
      if (e == b) {
        ++b;
        continue;
      }
      int lo = laneOfRoot[chains[b]];
      int width = laneOfRoot[chains[e - 1]] - lo + 1;
      for (int c = b; c < e; ++c)
        laneOfRoot[chains[c]] = lo + (c - b) % width;
      b = e;
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation &o = ops[i];
    int lane = laneOfRoot[find((int)i)];
    int tbIndex = tbOf.at({o.issuer, o.sw, lane});
    Threadblock &tb = out.threadblocks[o.issuer][tbIndex];
    std::vector<int> &orderedAt = out.orderedAt[o.issuer][tbIndex];
    Step st;
    st.cnt = o.count;
    if (o.op == TransferOp::SwitchReduce) {
      st.type = StepType::SwitchReduce;
      st.srcBuf = o.wideBuf;
      st.srcOff = o.wideIndex;
      st.dstBuf = o.local.buffer;
      st.dstOff = o.local.index;
    } else {
      st.type = StepType::Multicast;
      st.srcBuf = o.local.buffer;
      st.srcOff = o.local.index;
      st.dstBuf = o.wideBuf;
      st.dstOff = o.wideIndex;
    }
    st.loc = locOf(o.transfers.front());
    // The previous step of the threadblock continues into this one, unless
    // either waits for or is waited for by point-to-point steps.
    if (!tb.steps.empty() && !o.ordered && orderedAt.back() < 0) {
      Step &last = tb.steps.back();
      if (last.type == st.type && last.srcBuf == st.srcBuf &&
          last.dstBuf == st.dstBuf && last.srcOff + last.cnt == st.srcOff &&
          last.dstOff + last.cnt == st.dstOff) {
        last.cnt += st.cnt;
        continue;
      }
    }
    st.s = (int)tb.steps.size();
    tb.steps.push_back(st);
    orderedAt.push_back(o.ordered ? o.step : -1);
  }
  out.operations = (int)ops.size();
  for (const Operation &o : ops)
    out.orderedOperations += o.ordered;
  return out;
}

namespace {

/// One step's reads and writes of its rank's chunks (canonical).
struct StepAccess {
  int tb = 0, step = 0, at = 0; ///< threadblock id, index, schedule step
  std::vector<ChunkLoc> reads, writes;
};

StepAccess accessOf(const Collective &col, int rank, const Threadblock &tb,
                    int k, int at) {
  const Step &st = tb.steps[k];
  StepAccess a{tb.id, k, at, {}, {}};
  if (tb.switchId >= 0) {
    // Every rank's copy of the address the switch reads or writes.
    for (int i = 0; i < st.cnt; ++i) {
      if (st.type == StepType::SwitchReduce) {
        for (int r : tb.group)
          a.reads.push_back(col.canonical({r, st.srcBuf, st.srcOff + i}));
        a.writes.push_back(col.canonical({rank, st.dstBuf, st.dstOff + i}));
      } else if (st.type == StepType::Multicast) {
        ChunkLoc src = col.canonical({rank, st.srcBuf, st.srcOff + i});
        a.reads.push_back(src);
        for (int r : tb.group)
          if (ChunkLoc c = col.canonical({r, st.dstBuf, st.dstOff + i});
              c != src)
            a.writes.push_back(c);
      }
    }
    return a;
  }
  for (int i = 0; i < st.cnt; ++i) {
    if (readsSrc(st.type))
      a.reads.push_back(col.canonical({rank, st.srcBuf, st.srcOff + i}));
    if (readsDst(st.type))
      a.reads.push_back(col.canonical({rank, st.dstBuf, st.dstOff + i}));
    if (writesDst(st.type))
      a.writes.push_back(col.canonical({rank, st.dstBuf, st.dstOff + i}));
  }
  return a;
}

bool conflict(const StepAccess &a, const StepAccess &b) {
  auto meets = [](const std::vector<ChunkLoc> &x,
                  const std::vector<ChunkLoc> &y) {
    for (const ChunkLoc &c : x)
      if (std::find(y.begin(), y.end(), c) != y.end())
        return true;
    return false;
  };
  return meets(a.writes, b.writes) || meets(a.writes, b.reads) ||
         meets(a.reads, b.writes);
}

} // namespace

Status attachSwitchThreadblocks(Algo &algo, const SwitchLowering &lowering,
                                int refine, ScheduleStepMap *steps) {
  refine = std::max(1, refine);
  const Collective &col = lowering.pointToPoint.collective;
  bool needsOrder = lowering.orderedOperations > 0;
  for (Gpu &g : algo.gpus) {
    if (g.id < 0 || g.id >= (int)lowering.threadblocks.size())
      continue;
    int next = 0;
    for (const Threadblock &tb : g.tbs)
      next = std::max(next, tb.id + 1);
    int firstSwitchTb = next;
    for (size_t i = 0; i < lowering.threadblocks[g.id].size(); ++i) {
      Threadblock tb = lowering.threadblocks[g.id][i];
      tb.id = next++;
      for (Step &st : tb.steps) {
        st.srcOff *= refine;
        st.dstOff *= refine;
        st.cnt *= refine;
      }
      if (steps)
        for (int k = 0; k < (int)tb.steps.size(); ++k)
          if (int at = lowering.orderedAt[g.id][i][k]; at >= 0)
            (*steps)[{g.id, tb.id, k}] = at;
      g.tbs.push_back(std::move(tb));
    }
    if (!needsOrder)
      continue;

    // The switch steps ordered with the point-to-point program, and that
    // program's steps.
    std::vector<StepAccess> switchSteps, p2pSteps;
    for (const Threadblock &tb : g.tbs) {
      if (tb.switchId >= 0) {
        const std::vector<std::vector<int>> &orderedAt =
            lowering.orderedAt[g.id];
        for (int k = 0; k < (int)tb.steps.size(); ++k)
          if (int at = orderedAt[tb.id - firstSwitchTb][k]; at >= 0)
            switchSteps.push_back(accessOf(col, g.id, tb, k, at));
        continue;
      }
      for (int k = 0; k < (int)tb.steps.size(); ++k) {
        if (tb.steps[k].type == StepType::Nop)
          continue;
        const int *at = nullptr;
        if (steps)
          if (auto it = steps->find({g.id, tb.id, k}); it != steps->end())
            at = &it->second;
        if (!at)
          return Error("rank " + std::to_string(g.id) + " threadblock " +
                       std::to_string(tb.id) + " step " + std::to_string(k) +
                       ": its schedule step is unknown, so it cannot be "
                       "ordered with the switch threadblocks");
        p2pSteps.push_back(accessOf(col, g.id, tb, k, *at));
      }
    }
    if (switchSteps.empty())
      continue;
    // (threadblock, step) -> per threadblock waited for, its latest step.
    std::map<std::pair<int, int>, std::map<int, int>> waits;
    auto wait = [&](const StepAccess &who, const StepAccess &forWhom) {
      int &latest = waits[{who.tb, who.step}]
                        .try_emplace(forWhom.tb, forWhom.step)
                        .first->second;
      latest = std::max(latest, forWhom.step);
    };
    auto order = [&](const StepAccess &a, const StepAccess &b) {
      if (a.at < b.at)
        wait(b, a);
      else
        wait(a, b);
    };
    for (const StepAccess &sw : switchSteps)
      for (const StepAccess &p : p2pSteps)
        if (p.at != sw.at && conflict(sw, p))
          order(sw, p);
    // Ordered switch operations of one chain run in several threadblocks.
    for (size_t i = 0; i < switchSteps.size(); ++i)
      for (size_t j = i + 1; j < switchSteps.size(); ++j) {
        const StepAccess &a = switchSteps[i], &b = switchSteps[j];
        if (a.tb == b.tb || !conflict(a, b))
          continue;
        if (a.at == b.at)
          return Error("rank " + std::to_string(g.id) +
                       ": two switch operations touch the same chunk at "
                       "schedule step " +
                       std::to_string(a.at) +
                       ", one writing it: their order is not defined");
        order(a, b);
      }
    if (waits.empty())
      continue;
    // Rebuild each threadblock: nops carry the waits beyond the first.
    std::map<int, std::vector<int>> newIndex; // tb id -> old step -> new
    for (Threadblock &tb : g.tbs) {
      std::vector<Step> rebuilt;
      std::vector<int> &index = newIndex[tb.id];
      for (int k = 0; k < (int)tb.steps.size(); ++k) {
        Step st = tb.steps[k];
        std::vector<std::pair<int, int>> on;
        if (st.depid >= 0)
          on.push_back({st.depid, st.deps});
        if (auto it = waits.find({tb.id, k}); it != waits.end())
          for (auto [otherTb, otherStep] : it->second)
            if (!(st.depid == otherTb && st.deps >= otherStep))
              on.push_back({otherTb, otherStep});
        for (size_t w = 1; w < on.size(); ++w) {
          Step nop;
          nop.type = StepType::Nop;
          nop.cnt = 0;
          nop.depid = on[w].first;
          nop.deps = on[w].second;
          nop.loc = st.loc;
          rebuilt.push_back(nop);
        }
        if (!on.empty()) {
          st.depid = on[0].first;
          st.deps = on[0].second;
        }
        index.push_back((int)rebuilt.size());
        rebuilt.push_back(st);
      }
      tb.steps = std::move(rebuilt);
    }
    std::set<std::pair<int, int>> waitedFor;
    for (Threadblock &tb : g.tbs)
      for (int k = 0; k < (int)tb.steps.size(); ++k) {
        Step &st = tb.steps[k];
        st.s = k;
        if (st.depid >= 0 && newIndex.count(st.depid) &&
            st.deps < (int)newIndex[st.depid].size()) {
          st.deps = newIndex[st.depid][st.deps];
          waitedFor.insert({st.depid, st.deps});
        }
      }
    for (Threadblock &tb : g.tbs)
      for (int k = 0; k < (int)tb.steps.size(); ++k)
        if (waitedFor.count({tb.id, k}))
          tb.steps[k].hasdep = 1;
    if (steps) {
      ScheduleStepMap moved;
      for (auto &[key, at] : *steps) {
        auto [rank, tb, k] = key;
        if (rank == g.id && newIndex.count(tb) && k < (int)newIndex[tb].size())
          moved[{rank, tb, newIndex[tb][k]}] = at;
        else
          moved[key] = at;
      }
      *steps = std::move(moved);
    }
  }
  if (needsOrder) {
    Matching matching = matchMessages(algo);
    std::vector<ProgramIssue> cycle = checkDeadlock(algo, matching);
    if (!cycle.empty())
      return Error("ordering the switch threadblocks with the point-to-point "
                   "program closes a cycle of waits: " +
                   cycle.front().message);
  }
  return Status::success();
}

Expected<std::vector<std::vector<std::vector<PlanSwitchOp>>>>
planSwitchOps(const SwitchLowering &lowering) {
  const Collective &col = lowering.pointToPoint.collective;
  std::vector<std::vector<std::vector<PlanSwitchOp>>> out(
      lowering.threadblocks.size());
  for (size_t r = 0; r < lowering.threadblocks.size(); ++r)
    for (size_t t = 0; t < lowering.threadblocks[r].size(); ++t) {
      const Threadblock &tb = lowering.threadblocks[r][t];
      std::vector<PlanSwitchOp> &ops = out[r].emplace_back();
      std::vector<bool> taken(tb.steps.size(), false);
      auto chunks = [&](BufferKind b, int off, int cnt) {
        std::set<ChunkLoc> c;
        for (int i = 0; i < cnt; ++i)
          c.insert(col.canonical({(int)r, b, off + i}));
        return c;
      };
      auto meets = [](const std::set<ChunkLoc> &a,
                      const std::set<ChunkLoc> &b) {
        for (const ChunkLoc &c : a)
          if (b.count(c))
            return true;
        return false;
      };
      for (size_t k = 0; k < tb.steps.size(); ++k) {
        const Step &st = tb.steps[k];
        if (lowering.orderedAt[r][t][k] >= 0)
          return Error("this switch operation does not lower to an MSCCL++ "
                       "plan: it waits for or is waited for by point-to-point "
                       "transfers, which plans do not order with switch "
                       "channels yet",
                       st.loc);
        if (taken[k])
          continue;
        if (st.type == StepType::Multicast) {
          ops.push_back(
              {false, st.srcBuf, st.srcOff, st.dstBuf, st.dstOff, st.cnt});
          continue;
        }
        // A reduction: the multicast of its result back to the same place,
        // with nothing between them touching either range.
        std::set<ChunkLoc> result = chunks(st.dstBuf, st.dstOff, st.cnt);
        bool paired = false;
        for (size_t j = k + 1; j < tb.steps.size(); ++j) {
          const Step &m = tb.steps[j];
          std::set<ChunkLoc> from = chunks(m.srcBuf, m.srcOff, m.cnt),
                             to = chunks(m.dstBuf, m.dstOff, m.cnt);
          if (m.type == StepType::Multicast && from == result && to == result) {
            ops.push_back(
                {true, st.srcBuf, st.srcOff, m.dstBuf, m.dstOff, st.cnt});
            taken[j] = paired = true;
            break;
          }
          std::set<ChunkLoc> touched = to;
          touched.insert(from.begin(), from.end());
          if (meets(touched, result))
            break;
        }
        if (!paired)
          return Error("this switch reduction does not lower to an MSCCL++ "
                       "plan: its result is not multicast back to its place "
                       "on every rank by the same threadblock: "
                       "MSCCL++'s switch channels reduce into every rank's "
                       "copy at once (glres), never into one rank alone",
                       st.loc);
      }
    }
  return out;
}

bool hasSwitchThreadblocks(const Algo &algo) {
  for (const Gpu &g : algo.gpus)
    for (const Threadblock &tb : g.tbs)
      if (tb.switchId >= 0)
        return true;
  return false;
}

} // namespace ccsynth::msccl
