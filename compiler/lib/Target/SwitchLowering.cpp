//===- SwitchLowering.cpp - Switch operations as generated code's steps ---===//
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
                    "it spans " + std::to_string(o.ranks.size()) +
                        " ranks, but the operation at transfer #" +
                        std::to_string(it->second.second) +
                        " through the same switch spans " +
                        std::to_string(it->second.first.size()) +
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
  std::set<ChunkLoc> switchChunks;
  for (const auto &[c, owner] : wideOwner)
    switchChunks.insert(c);
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
      switchChunks.insert(c);
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
        if (switchChunks.count(c))
          return Error(
              "transfer #" + std::to_string(t) + " (" + toString(tr.op) +
                  ") touches " + toString(c) +
                  ", which a switch operation also reads or writes: switch "
                  "operations lower to generated code only when they share "
                  "no chunk with the point-to-point transfers",
              locOf(t));
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
  // which must stay in one threadblock, in order.
  std::vector<int> parent(ops.size());
  for (size_t i = 0; i < ops.size(); ++i)
    parent[i] = (int)i;
  auto find = [&](int i) {
    while (parent[i] != i)
      i = parent[i] = parent[parent[i]];
    return i;
  };
  {
    std::map<std::tuple<int, int, ChunkLoc>, int> firstOp;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Operation &o = ops[i];
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
      }
  // Chain c of n goes to lane c * L / n: runs of consecutive chains.
  std::vector<int> laneOfRoot(ops.size(), 0);
  for (const auto &[key, chains] : chainsOf) {
    int n = (int)chains.size(), l = lanesOf[key.second];
    for (int c = 0; c < n; ++c)
      laneOfRoot[chains[c]] = (int)((long long)c * l / n);
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation &o = ops[i];
    int lane = laneOfRoot[find((int)i)];
    Threadblock &tb =
        out.threadblocks[o.issuer][tbOf.at({o.issuer, o.sw, lane})];
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
    // The previous step of the threadblock continues into this one.
    if (!tb.steps.empty()) {
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
  }
  out.operations = (int)ops.size();
  return out;
}

void attachSwitchThreadblocks(Algo &algo, const SwitchLowering &lowering,
                              int refine) {
  refine = std::max(1, refine);
  for (Gpu &g : algo.gpus) {
    if (g.id < 0 || g.id >= (int)lowering.threadblocks.size())
      continue;
    int next = 0;
    for (const Threadblock &tb : g.tbs)
      next = std::max(next, tb.id + 1);
    for (Threadblock tb : lowering.threadblocks[g.id]) {
      tb.id = next++;
      for (Step &st : tb.steps) {
        st.srcOff *= refine;
        st.dstOff *= refine;
        st.cnt *= refine;
      }
      g.tbs.push_back(std::move(tb));
    }
  }
}

bool hasSwitchThreadblocks(const Algo &algo) {
  for (const Gpu &g : algo.gpus)
    for (const Threadblock &tb : g.tbs)
      if (tb.switchId >= 0)
        return true;
  return false;
}

} // namespace ccsynth::msccl
