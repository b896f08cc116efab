//===- AssignThreadblocks.cpp - ccl-assign-threadblocks -------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// 1. Pair sends with receives (k-th with k-th per rank pair). Messages that
//    meet in a fused step must share a channel: union them into groups.
// 2. Place groups first-fit over channels (hint first). Per rank and
//    channel, a send peer and a receive peer each belong to one
//    threadblock; a threadblock has at most one of each, at most `budget`
//    steps, and a channel at most max-tbs-per-channel threadblocks.
// 3. Local steps go to peerless threadblocks, up to local-tbs per channel
//    hint, one per chain of steps writing the same slots (at most
//    max-local-steps each, when set).
// With bounded buffers (MSCCL), step 2 also keeps every send of a
// connection from waiting for room that only a receive of a later time
// frees (see roomInTime); such a group moves to another channel.
// 4. Each step waits for the last conflicting step of every other
//    threadblock of its rank. If the nops that extra dependencies cost push
//    a threadblock past max-steps, retry with a smaller budget.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"

#include "ccsynth/Dialect/CCL/Transforms/Passes.h"
#include "ccsynth/Target/MSCCLProgram.h"

#include "llvm/ADT/EquivalenceClasses.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

namespace ccsynth::ccl {
#define GEN_PASS_DEF_ASSIGNTHREADBLOCKSPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

using namespace mlir;
using ccsynth::Collective;
using ccsynth::Expected;
using namespace ccsynth::ccl;

namespace {

struct Tb {
  int channel = 0;
  int64_t sp = -1;
  int64_t rp = -1;
  bool local = false;
  std::vector<int> ops; // indices into the rank's step list
};

struct RankState {
  std::vector<Tb> tbs;
  std::map<std::pair<int, int64_t>, int> sendTb, recvTb; // (chan, peer)
  std::map<int, int> tbsOnChannel;
  /// Per (chan, send peer): the connection's messages, in send order.
  std::map<std::pair<int, int64_t>, std::vector<int>> connMsgs;
};

/// Reversible edits of the placement state.
class Placement {
public:
  explicit Placement(size_t ranks) : ranks(ranks) {}

  std::vector<RankState> ranks;

  void mark() { log.clear(); }
  void rollback() {
    while (!log.empty()) {
      log.back()();
      log.pop_back();
    }
  }

  int newTb(int rank, int channel, int64_t sp, int64_t rp, bool local) {
    RankState &rs = ranks[rank];
    rs.tbs.push_back({channel, -1, -1, local, {}});
    ++rs.tbsOnChannel[channel];
    int id = (int)rs.tbs.size() - 1;
    log.push_back([&rs, channel] {
      rs.tbs.pop_back();
      --rs.tbsOnChannel[channel];
    });
    setPeers(rank, id, sp, rp);
    return id;
  }
  void setPeers(int rank, int tb, int64_t sp, int64_t rp) {
    RankState &rs = ranks[rank];
    Tb &t = rs.tbs[tb];
    if (sp >= 0 && t.sp < 0) {
      t.sp = sp;
      rs.sendTb[{t.channel, sp}] = tb;
      log.push_back([&rs, tb, key = std::pair{t.channel, sp}] {
        rs.tbs[tb].sp = -1;
        rs.sendTb.erase(key);
      });
    }
    if (rp >= 0 && t.rp < 0) {
      t.rp = rp;
      rs.recvTb[{t.channel, rp}] = tb;
      log.push_back([&rs, tb, key = std::pair{t.channel, rp}] {
        rs.tbs[tb].rp = -1;
        rs.recvTb.erase(key);
      });
    }
  }
  /// Inserts message `msg` into a connection's sequence at `at`.
  void addMessage(int rank, std::pair<int, int64_t> conn, size_t at, int msg) {
    std::vector<int> &seq = ranks[rank].connMsgs[conn];
    seq.insert(seq.begin() + at, msg);
    log.push_back([&seq, at] { seq.erase(seq.begin() + at); });
  }
  void addOp(int rank, int tb, int op) {
    RankState &rs = ranks[rank];
    rs.tbs[tb].ops.push_back(op);
    log.push_back([&rs, tb] { rs.tbs[tb].ops.pop_back(); });
  }

private:
  std::vector<std::function<void()>> log;
};

struct AssignThreadblocks
    : public ccsynth::ccl::impl::AssignThreadblocksPassBase<
          AssignThreadblocks> {
  using Base::Base;

  LogicalResult assign(ProgramOp prog);

  void runOnOperation() override {
    if (maxSteps < 1 || maxTbsPerChannel < 1 || maxChannels < 1 ||
        maxLocalSteps < 0 || (boundedBuffers && slots < 1)) {
      getOperation().emitError() << "ccl-assign-threadblocks: limits must be "
                                    "at least 1 (max-local-steps at least 0)";
      return signalPassFailure();
    }
    for (ProgramOp prog : llvm::to_vector(getOperation().getOps<ProgramOp>()))
      if (!prog.isAssigned() && failed(assign(prog)))
        return signalPassFailure();
  }
};

LogicalResult AssignThreadblocks::assign(ProgramOp prog) {
  auto col = prog.buildCollective();
  if (!col)
    return prog.emitOpError() << col.error().message;
  int numRanks = (int)prog.getRanks();
  std::vector<GpuOp> gpus(numRanks);
  for (GpuOp g : prog.getBody().front().getOps<GpuOp>())
    gpus[g.getRank()] = g;
  std::vector<std::vector<StepOpInterface>> steps(numRanks);
  for (int r = 0; r < numRanks; ++r)
    for (auto s : gpus[r].getBody().front().getOps<StepOpInterface>())
      steps[r].push_back(s);

  auto paired = pairMessages(steps);
  if (failed(paired))
    return failure();

  // Group messages that meet in a fused step; a group is placed on one
  // channel. Steps are identified by (rank, index).
  auto key = [&](StepPos p) { return ((int64_t)p.rank << 32) | p.index; };
  llvm::EquivalenceClasses<int64_t> groups;
  std::map<int64_t, int> recvMsgOfStep, sendMsgOfStep;
  for (int m = 0; m < (int)paired->size(); ++m) {
    const PairedMessage &pm = (*paired)[m];
    groups.insert(key(pm.send));
    groups.unionSets(key(pm.send), key(pm.recv));
  }
  struct Group {
    std::vector<StepPos> ops;
    std::pair<int64_t, int64_t> first{INT64_MAX, INT64_MAX};
    int64_t hint = -1;
  };
  std::map<int64_t, Group> byLeader;
  for (int r = 0; r < numRanks; ++r)
    for (int i = 0; i < (int)steps[r].size(); ++i) {
      StepOpInterface s = steps[r][i];
      if (!s.sends() && !s.receives())
        continue;
      int64_t leader = groups.getLeaderValue(key({r, i}));
      Group &g = byLeader[leader];
      g.ops.push_back({r, i});
      g.first = std::min(g.first, {s.getStepKey(), s.getOrderKey()});
      if (auto h = s->getAttrOfType<IntegerAttr>("ccl.channel"))
        if (g.hint < 0 || h.getInt() < g.hint)
          g.hint = h.getInt();
    }
  std::vector<Group *> order;
  for (auto &[leader, g] : byLeader)
    order.push_back(&g);
  std::stable_sort(order.begin(), order.end(),
                   [](Group *a, Group *b) { return a->first < b->first; });

  // Send and receive peers that fused steps always join into one
  // threadblock (a send peer that fused steps pair with exactly one
  // receive peer, which they pair with no other send peer). A step with
  // only one of the two peers then opens a threadblock that can host the
  // fused steps too; ambiguous pairs are left alone. Where two rings leave
  // a rank for the same peer, that peer pairs with two receive peers over
  // the whole rank, and a ring's first send and last receive would open a
  // threadblock each on the ring's channel, pushing its fused steps onto
  // another channel, beside a second threadblock sending over the same
  // link. So peers are also pinned per channel hint, where the hint's
  // fused steps between them outnumber its steps that only send to the
  // one or only receive from the other (a ring; joining a few fused steps
  // would serialize many independent sends and receives).
  constexpr int kAnyChannel = -1;
  using Pins = std::map<std::pair<int, int64_t>, int64_t>; // (hint, peer)
  std::vector<Pins> pinnedRecv(numRanks), pinnedSend(numRanks);
  for (int r = 0; r < numRanks; ++r) {
    std::map<std::pair<int, int64_t>, std::set<int64_t>> recvsOf, sendsOf;
    std::map<std::pair<int, int64_t>, int> sendOnly, recvOnly, fused;
    for (StepOpInterface s : steps[r]) {
      int64_t sp = s.getSendPeerOrNone(), rp = s.getRecvPeerOrNone();
      auto h = s->getAttrOfType<IntegerAttr>("ccl.channel");
      int hint = h ? (int)h.getInt() : kAnyChannel;
      if (s.sends() && s.receives()) {
        recvsOf[{kAnyChannel, sp}].insert(rp);
        sendsOf[{kAnyChannel, rp}].insert(sp);
        if (hint != kAnyChannel) {
          recvsOf[{hint, sp}].insert(rp);
          sendsOf[{hint, rp}].insert(sp);
          ++fused[{hint, sp}];
        }
      } else if (s.sends()) {
        ++sendOnly[{hint, sp}];
      } else if (s.receives()) {
        ++recvOnly[{hint, rp}];
      }
    }
    for (auto &[at, rps] : recvsOf) {
      auto [hint, sp] = at;
      int64_t rp = *rps.begin();
      if (rps.size() != 1 || sendsOf[{hint, rp}].size() != 1)
        continue;
      if (hint != kAnyChannel &&
          fused[{hint, sp}] <= sendOnly[{hint, sp}] + recvOnly[{hint, rp}])
        continue;
      pinnedRecv[r][{hint, sp}] = rp;
      pinnedSend[r][{hint, rp}] = sp;
    }
  }
  // The pin of `peer` for step s placed on channel c: the rank's, else,
  // where c is the step's own hint, the hint's.
  auto pinned = [&](const Pins &pins, StepOpInterface s, int c,
                    int64_t peer) -> std::optional<int64_t> {
    if (auto it = pins.find({kAnyChannel, peer}); it != pins.end())
      return it->second;
    if (auto h = s->getAttrOfType<IntegerAttr>("ccl.channel");
        h && h.getInt() == c)
      if (auto it = pins.find({c, peer}); it != pins.end())
        return it->second;
    return std::nullopt;
  };

  // Bounded buffers: each step's time is the latest schedule key at or
  // before it in its rank's order (fusion moves some steps past later
  // keys). A send must not wait for room that a receive of a later or
  // equal time frees.
  using Key = std::pair<int64_t, int64_t>;
  std::vector<std::vector<Key>> time(numRanks);
  for (int r = 0; r < numRanks; ++r) {
    Key latest{INT64_MIN, INT64_MIN};
    for (StepOpInterface s : steps[r]) {
      latest = std::max(latest, Key{s.getStepKey(), s.getOrderKey()});
      time[r].push_back(latest);
    }
  }
  std::map<int64_t, int> msgOfSend; // key(send pos) -> message
  for (int m = 0; m < (int)paired->size(); ++m)
    msgOfSend[key((*paired)[m].send)] = m;
  long long slotsPerChunk =
      ccsynth::msccl::slotsPerCall(prog.getProtocol().str());
  auto msgSlots = [&](int m) {
    StepPos sp = (*paired)[m].send;
    return slotsPerChunk *
           std::max<int64_t>(1, steps[sp.rank][sp.index].getChunkCount());
  };
  // Whether the sends of a connection's sequence whose waits involve
  // position `from` wait only for earlier receives. Send k waits for the
  // receive of message j, the latest with messages j..k needing more slots
  // than the connection has (for a message larger than the buffer, j is
  // the one before it); a window spans at most slots + 1 messages.
  auto roomInTime = [&](const std::vector<int> &seq, size_t from) {
    size_t end = std::min(seq.size(), from + (size_t)slots + 2);
    for (size_t k = from; k < end; ++k) {
      long long used = msgSlots(seq[k]);
      size_t j = k;
      while (j > 0 && used <= slots)
        used += msgSlots(seq[--j]);
      if (used <= slots)
        continue; // all of 0..k fit
      if (j == k) {
        if (k == 0)
          continue;
        --j; // larger than the buffer: the previous receive must be done
      }
      const PairedMessage &pj = (*paired)[seq[j]];
      const PairedMessage &pk = (*paired)[seq[k]];
      if (!(time[pj.recv.rank][pj.recv.index] <
            time[pk.send.rank][pk.send.index]))
        return false;
    }
    return true;
  };

  int budget = maxSteps;
  while (true) {
    Placement pl(numRanks);
    // Place one step of a group on channel c; false when it does not fit.
    auto placeOp = [&](StepPos p, int c) -> bool {
      StepOpInterface s = steps[p.rank][p.index];
      int64_t sp = s.getSendPeerOrNone(), rp = s.getRecvPeerOrNone();
      RankState &rs = pl.ranks[p.rank];
      auto find = [&](std::map<std::pair<int, int64_t>, int> &m,
                      int64_t peer) -> int {
        if (peer < 0)
          return -1;
        auto it = m.find({c, peer});
        return it == m.end() ? -1 : it->second;
      };
      int ts = find(rs.sendTb, sp), tr = find(rs.recvTb, rp);
      int target = -1;
      if (sp >= 0 && rp >= 0) {
        if (ts >= 0 && tr >= 0) {
          if (ts != tr)
            return false;
          target = ts;
        } else if (ts >= 0) {
          if (rs.tbs[ts].rp >= 0)
            return false;
          target = ts;
        } else if (tr >= 0) {
          if (rs.tbs[tr].sp >= 0)
            return false;
          target = tr;
        }
      } else if (sp >= 0) {
        target = ts;
        // A peer that a fused step pairs with a receive peer gets a
        // threadblock that can host both.
        if (target < 0)
          if (std::optional<int64_t> pin =
                  pinned(pinnedRecv[p.rank], s, c, sp)) {
            int other = find(rs.recvTb, *pin);
            if (other >= 0 && rs.tbs[other].sp < 0 &&
                (int)rs.tbs[other].ops.size() + 1 <= budget)
              target = other;
            else if (other < 0)
              rp = *pin;
          }
      } else {
        target = tr;
        if (target < 0)
          if (std::optional<int64_t> pin =
                  pinned(pinnedSend[p.rank], s, c, rp)) {
            int other = find(rs.sendTb, *pin);
            if (other >= 0 && rs.tbs[other].rp < 0 &&
                (int)rs.tbs[other].ops.size() + 1 <= budget)
              target = other;
            else if (other < 0)
              sp = *pin;
          }
      }
      if (boundedBuffers && s.sends()) {
        int m = msgOfSend.at(key(p));
        auto connKey = std::pair{c, s.getSendPeerOrNone()};
        auto &seq = rs.connMsgs[connKey];
        size_t at = std::upper_bound(seq.begin(), seq.end(), m,
                                     [&](int a, int b) {
                                       return (*paired)[a].send.index <
                                              (*paired)[b].send.index;
                                     }) -
                    seq.begin();
        pl.addMessage(p.rank, connKey, at, m);
        if (!roomInTime(rs.connMsgs[connKey], at))
          return false;
      }
      if (target >= 0) {
        if ((int)rs.tbs[target].ops.size() + 1 > budget)
          return false;
        pl.setPeers(p.rank, target, sp, rp);
      } else {
        if (rs.tbsOnChannel[c] + 1 > maxTbsPerChannel)
          return false;
        target = pl.newTb(p.rank, c, sp, rp, false);
      }
      pl.addOp(p.rank, target, p.index);
      return true;
    };

    for (Group *g : order) {
      bool placed = false;
      int start = g->hint >= 0 ? (int)(g->hint % maxChannels) : 0;
      for (int k = 0; k < maxChannels && !placed; ++k) {
        int c = (start + k) % maxChannels;
        pl.mark();
        bool ok = true;
        for (StepPos p : g->ops)
          if (!placeOp(p, c)) {
            ok = false;
            break;
          }
        if (ok)
          placed = true;
        else
          pl.rollback();
      }
      if (!placed) {
        StepPos p = g->ops.front();
        auto diag = steps[p.rank][p.index]->emitError()
                    << "cannot place this step: no channel below "
                       "max-channels ("
                    << (int)maxChannels << ") has room within " << budget
                    << " steps per threadblock and " << (int)maxTbsPerChannel
                    << " threadblocks per channel";
        if (boundedBuffers)
          diag << " without a send waiting for room in a full connection "
                  "buffer ("
               << (int)slots << " slots, " << slotsPerChunk << " per "
               << prog.getProtocol() << " chunk) that only a later receive "
               << "frees";
        return diag;
      }
    }
    // Local steps: peerless threadblocks.
    int localBudget =
        maxLocalSteps > 0 ? std::min<int>(budget, maxLocalSteps) : budget;
    // Local steps of different channel hints (instances) get threadblocks
    // of their own, on their channel where it has room, so that the copies
    // and reductions of different instances run side by side rather than
    // one after another in one threadblock. Within a hint, steps that write
    // different slots form up to local-tbs chains (a step joins the chain
    // that last wrote one of its slots), each on its own threadblock: the
    // reductions of different chunks then run side by side too.
    int chains = std::max<int>(1, localTbs);
    for (int r = 0; r < numRanks; ++r) {
      RankState &rs = pl.ranks[r];
      // (channel hint, chain) -> threadblock
      std::map<std::pair<int64_t, int>, int> currentOf;
      std::map<int64_t, std::map<Slot, int>> chainOfSlot;
      std::map<int64_t, int> nextChain;
      for (int i = 0; i < (int)steps[r].size(); ++i) {
        StepOpInterface s = steps[r][i];
        if (s.sends() || s.receives())
          continue;
        int64_t hint = -1;
        if (auto h = s->getAttrOfType<IntegerAttr>("ccl.channel");
            h && spreadLocal)
          hint = h.getInt();
        int chain = 0;
        if (chains > 1 && spreadLocal) {
          std::map<Slot, int> &owner = chainOfSlot[hint];
          Effects e = effectsOf(s, *col, r);
          chain = -1;
          for (Slot w : e.writes)
            if (auto it = owner.find(w); it != owner.end()) {
              chain = it->second;
              break;
            }
          if (chain < 0)
            chain = nextChain[hint]++ % chains;
          for (Slot w : e.writes)
            owner[w] = chain;
        }
        int &current = currentOf.try_emplace({hint, chain}, -1).first->second;
        if (current < 0 || (int)rs.tbs[current].ops.size() + 1 > localBudget) {
          current = -1;
          if (hint >= 0 && hint < maxChannels &&
              rs.tbsOnChannel[(int)hint] < maxTbsPerChannel)
            current = pl.newTb(r, (int)hint, -1, -1, true);
          for (int c = 0; c < maxChannels && current < 0; ++c)
            if (rs.tbsOnChannel[c] < maxTbsPerChannel)
              current = pl.newTb(r, c, -1, -1, true);
          if (current < 0)
            return s->emitError() << "cannot place this local step: every "
                                     "channel has max-tbs-per-channel ("
                                  << (int)maxTbsPerChannel << ") threadblocks";
        }
        pl.addOp(r, current, i);
      }
    }

    // Threadblock order (channel, creation) and positions within them.
    struct RankLayout {
      std::vector<int> tbOrder;               // new id -> tb index
      std::vector<int> opTb, opPos;           // per step: new tb id, position
      std::vector<std::vector<int64_t>> deps; // per step: flattened pairs
    };
    std::vector<RankLayout> layout(numRanks);
    int worst = 0, worstRank = 0, worstTb = 0;
    for (int r = 0; r < numRanks; ++r) {
      RankState &rs = pl.ranks[r];
      RankLayout &lay = layout[r];
      lay.tbOrder.resize(rs.tbs.size());
      std::iota(lay.tbOrder.begin(), lay.tbOrder.end(), 0);
      std::stable_sort(
          lay.tbOrder.begin(), lay.tbOrder.end(),
          [&](int a, int b) { return rs.tbs[a].channel < rs.tbs[b].channel; });
      size_t n = steps[r].size();
      lay.opTb.assign(n, -1);
      lay.opPos.assign(n, -1);
      lay.deps.assign(n, {});
      for (int id = 0; id < (int)lay.tbOrder.size(); ++id) {
        Tb &t = rs.tbs[lay.tbOrder[id]];
        std::sort(t.ops.begin(), t.ops.end());
        for (int pos = 0; pos < (int)t.ops.size(); ++pos) {
          lay.opTb[t.ops[pos]] = id;
          lay.opPos[t.ops[pos]] = pos;
        }
      }
      // Dependencies from conflicting accesses, in schedule order.
      std::map<Slot, int> lastWrite;
      std::map<Slot, std::vector<int>> readsSince;
      std::map<std::pair<int, int>, int> waited; // (tb, other tb) -> pos
      for (int i = 0; i < (int)n; ++i) {
        Effects e = effectsOf(steps[r][i], *col, r);
        std::map<int, int> latest; // other tb -> latest conflicting pos
        auto need = [&](int j) {
          int t = lay.opTb[j];
          if (t == lay.opTb[i])
            return;
          auto [it, fresh] = latest.try_emplace(t, lay.opPos[j]);
          if (!fresh)
            it->second = std::max(it->second, lay.opPos[j]);
        };
        for (Slot s : e.reads)
          if (auto it = lastWrite.find(s); it != lastWrite.end())
            need(it->second);
        for (Slot s : e.writes) {
          if (auto it = lastWrite.find(s); it != lastWrite.end())
            need(it->second);
          for (int j : readsSince[s])
            need(j);
        }
        for (Slot s : e.reads)
          readsSince[s].push_back(i);
        for (Slot s : e.writes) {
          lastWrite[s] = i;
          readsSince[s].clear();
        }
        for (auto [t, pos] : latest) {
          auto [it, fresh] = waited.try_emplace({lay.opTb[i], t}, -1);
          if (pos <= it->second)
            continue;
          it->second = pos;
          lay.deps[i].push_back(t);
          lay.deps[i].push_back(pos);
        }
      }
      // MSCCL step count: a step with k dependencies costs k slots.
      for (int id = 0; id < (int)lay.tbOrder.size(); ++id) {
        int size = 0;
        for (int op : rs.tbs[lay.tbOrder[id]].ops)
          size += countDepNops ? std::max<int>(1, lay.deps[op].size() / 2) : 1;
        if (size > worst) {
          worst = size;
          worstRank = r;
          worstTb = id;
        }
      }
    }
    if (worst > maxSteps) {
      int next = budget - std::max(1, worst - (int)maxSteps);
      if (next < 1)
        return prog.emitError()
               << "threadblock " << worstTb << " of rank " << worstRank
               << " needs " << worst << " steps with its dependencies, more "
               << "than max-steps (" << (int)maxSteps << ")";
      budget = next;
      continue;
    }

    // Rewrite the IR.
    for (int r = 0; r < numRanks; ++r) {
      RankState &rs = pl.ranks[r];
      RankLayout &lay = layout[r];
      Block &body = gpus[r].getBody().front();
      OpBuilder b = OpBuilder::atBlockEnd(&body);
      for (int id = 0; id < (int)lay.tbOrder.size(); ++id) {
        Tb &t = rs.tbs[lay.tbOrder[id]];
        Location loc = t.ops.empty() ? gpus[r].getLoc()
                                     : steps[r][t.ops.front()]->getLoc();
        auto tbOp = b.create<ThreadblockOp>(loc, id, t.sp, t.rp, t.channel);
        Block *tbBody = &tbOp.getBody().emplaceBlock();
        for (int op : t.ops) {
          StepOpInterface s = steps[r][op];
          s->moveBefore(tbBody, tbBody->end());
          s->removeAttr("ccl.channel");
          s.setDepList(lay.deps[op]);
        }
      }
    }
    return success();
  }
}

} // namespace
