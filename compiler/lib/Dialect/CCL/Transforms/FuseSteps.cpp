//===- FuseSteps.cpp - ccl-fuse-steps -------------------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Fuses, per rank and in schedule order:
//   recv X ... send X                -> recv_copy_send
//   recv_reduce_copy X ... send X    -> recv_reduce_copy_send, or
//                                       recv_reduce_send when X is dead
//   recv S (scratch) ... reduce S->Y -> recv_reduce_copy with Y -> Y
//   recv X ... reduce S->X           -> recv_reduce_copy with S -> X
// A fused step takes the receive's place. With `forward` off only the
// last two (receive-and-reduce) are made: a forwarding step ties its send
// peer to its receive peer in one threadblock, which then runs every other
// step with either peer one after another. Legality: the forwarded range is
// unchanged in between, the send comes from a later schedule step, and no
// other send to the same peer lies in between (so the k-th send to a peer
// stays the k-th and still pairs with the same receive).
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"

#include "ccsynth/Dialect/CCL/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <cassert>
#include <map>

namespace ccsynth::ccl {
#define GEN_PASS_DEF_FUSESTEPSPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

using namespace mlir;
using ccsynth::Collective;
using ccsynth::Expected;
using namespace ccsynth::ccl;

namespace {

struct FuseSteps : public ccsynth::ccl::impl::FuseStepsPassBase<FuseSteps> {
  using Base::Base;

  void fuseRank(GpuOp gpu, const Collective &col);

  // Messages that meet in a fused step must share a channel, so a fused
  // step's two messages join one group. A group is placeable on a channel
  // only if, at every rank, its fused steps pair each send peer with one
  // receive peer and vice versa (a threadblock has one of each); fusions
  // that would break this are skipped.
  llvm::DenseMap<Operation *, int> inMsg, outMsg;
  std::vector<int> parent;
  using PeerPairs = std::map<int, std::vector<std::pair<int64_t, int64_t>>>;
  std::vector<PeerPairs> pairsOf;
  int find(int m) {
    while (parent[m] != m)
      m = parent[m] = parent[parent[m]];
    return m;
  }
  bool canJoin(int a, int b, int rank, std::pair<int64_t, int64_t> pair);
  void join(int a, int b, int rank, std::pair<int64_t, int64_t> pair);

  void runOnOperation() override {
    auto fused = forEachUnassignedProgram(
        getOperation(), [&](ProgramOp prog, const Collective &col) {
          // Fusion relies on the k-th send pairing with the k-th receive.
          std::vector<std::vector<StepOpInterface>> steps(prog.getRanks());
          for (GpuOp gpu : prog.getBody().front().getOps<GpuOp>())
            for (auto s : gpu.getBody().front().getOps<StepOpInterface>())
              steps[gpu.getRank()].push_back(s);
          auto paired = pairMessages(steps);
          if (failed(paired))
            return failure();
          inMsg.clear();
          outMsg.clear();
          parent.assign(paired->size(), 0);
          pairsOf.assign(paired->size(), {});
          for (int m = 0; m < (int)paired->size(); ++m) {
            const PairedMessage &pm = (*paired)[m];
            parent[m] = m;
            outMsg[steps[pm.send.rank][pm.send.index]] = m;
            inMsg[steps[pm.recv.rank][pm.recv.index]] = m;
          }
          for (GpuOp gpu : prog.getBody().front().getOps<GpuOp>())
            fuseRank(gpu, col);
          return success();
        });
    if (failed(fused))
      signalPassFailure();
  }
};

bool FuseSteps::canJoin(int a, int b, int rank,
                        std::pair<int64_t, int64_t> pair) {
  int ra = find(a), rb = find(b);
  PeerPairs merged = pairsOf[ra];
  if (rb != ra)
    for (auto &[r, list] : pairsOf[rb])
      merged[r].insert(merged[r].end(), list.begin(), list.end());
  merged[rank].push_back(pair);
  for (auto &[r, list] : merged) {
    std::map<int64_t, int64_t> recvOf, sendOf;
    for (auto [sp, rp] : list) {
      auto [i, fi] = recvOf.try_emplace(sp, rp);
      auto [j, fj] = sendOf.try_emplace(rp, sp);
      if (i->second != rp || j->second != sp)
        return false;
    }
  }
  return true;
}

void FuseSteps::join(int a, int b, int rank, std::pair<int64_t, int64_t> pair) {
  int ra = find(a), rb = find(b);
  if (ra != rb) {
    for (auto &[r, list] : pairsOf[rb])
      pairsOf[ra][r].insert(pairsOf[ra][r].end(), list.begin(), list.end());
    pairsOf[rb].clear();
    parent[rb] = ra;
  }
  pairsOf[ra][rank].push_back(pair);
}

bool intersects(ArrayRef<Slot> a, const llvm::DenseSet<Slot> &b) {
  for (Slot s : a)
    if (b.contains(s))
      return true;
  return false;
}

/// One rank's steps in schedule order, with what each touches indexed so
/// that the searches below visit only the steps that can matter: the steps
/// touching given slots, the sends to a peer, the receives from one. Without
/// the index, every receive scanned the rest of the rank's program, which
/// is quadratic: 36 s of a ring AllToAll on 64 ranks.
///
/// Entries have stable ids (their first position); `ord` maps positions to
/// ids and `pos` back. An entry moves only when a fusion moves it later,
/// which shifts the entries it passes by one and keeps their order, so the
/// per-slot and per-peer lists (ids sorted by position) stay sorted; the
/// moved entry is taken out of them first and put back after. The lists
/// hold live steps only: a step is taken out before it is erased.
class RankSteps {
public:
  RankSteps(GpuOp gpu, const Collective &col) {
    int rank = (int)gpu.getRank();
    auto steps = gpu.getBody().front().getOps<StepOpInterface>();
    op.assign(steps.begin(), steps.end());
    size_t n = op.size();
    eff.resize(n);
    erased.assign(n, false);
    ord.resize(n);
    pos.resize(n);
    for (int id = 0; id < (int)n; ++id) {
      eff[id] = effectsOf(op[id], col, rank);
      ord[id] = pos[id] = id;
      index(id);
    }
  }

  size_t size() const { return ord.size(); }
  int idAt(size_t p) const { return ord[p]; }
  int posOf(int id) const { return pos[id]; }

  std::vector<StepOpInterface> op;
  std::vector<Effects> eff;
  std::vector<bool> erased;

  /// Calls `fn(id)` for each live step after position `after` that touches
  /// one of `slots`, in schedule order, until `fn` returns false.
  template <typename Fn>
  void forTouchers(ArrayRef<Slot> slots, int after, Fn fn) const {
    SmallVector<std::pair<const std::vector<int> *, size_t>, 4> cur;
    for (Slot s : slots) {
      auto it = touch.find(s);
      if (it != touch.end())
        cur.push_back({&it->second, firstAfter(it->second, after)});
    }
    while (true) {
      int best = -1;
      for (auto &[list, i] : cur)
        if (i < list->size() &&
            (best < 0 || pos[(*list)[i]] < pos[best]))
          best = (*list)[i];
      if (best < 0)
        return;
      // A step touching several of the slots is met once.
      for (auto &[list, i] : cur)
        if (i < list->size() && (*list)[i] == best)
          ++i;
      if (!fn(best))
        return;
    }
  }

  /// Whether a live step strictly between positions lo and hi touches one
  /// of `slots` (and, with `writesOnly`, writes it).
  bool touchedBetween(ArrayRef<Slot> slots, int lo, int hi,
                      bool writesOnly) const {
    bool found = false;
    forTouchers(slots, lo, [&](int id) {
      if (pos[id] >= hi)
        return false;
      if (!writesOnly) {
        found = true;
        return false;
      }
      for (Slot s : eff[id].writes)
        if (llvm::is_contained(slots, s)) {
          found = true;
          return false;
        }
      return true;
    });
    return found;
  }

  /// The position of the last live step sending to `peer` before position
  /// `hi`, or -1.
  int lastSendBefore(int64_t peer, int hi) const {
    auto it = sendsTo.find(peer);
    if (it == sendsTo.end())
      return -1;
    size_t i = firstAfter(it->second, hi - 1);
    return i == 0 ? -1 : pos[it->second[i - 1]];
  }

  /// Whether a live step receiving from `peer` lies in positions (lo, hi].
  bool receivesBetween(int64_t peer, int lo, int hi) const {
    auto it = recvsFrom.find(peer);
    if (it == recvsFrom.end())
      return false;
    size_t i = firstAfter(it->second, lo);
    return i < it->second.size() && pos[it->second[i]] <= hi;
  }

  /// Takes a step out of the lists before it changes, moves or goes.
  void unindex(int id) {
    forLists(id, [&](std::vector<int> &list) {
      auto it = at(list, id);
      assert(it != list.end() && *it == id && "step missing from its list");
      list.erase(it);
    });
  }

  /// Puts a step (back) into the lists of what it touches.
  void index(int id) {
    forLists(id, [&](std::vector<int> &list) {
      auto it = at(list, id);
      if (it == list.end() || *it != id)
        list.insert(it, id);
    });
  }

  /// Moves the entry at position `from` to position `to` (from < to); the
  /// entries in between move one earlier. The moved entry must be out of
  /// the lists.
  void moveLater(int from, int to) {
    int id = ord[from];
    for (int p = from; p < to; ++p) {
      ord[p] = ord[p + 1];
      pos[ord[p]] = p;
    }
    ord[to] = id;
    pos[id] = to;
  }

  /// Moves the entry at position `from` to position `to` (to < from); the
  /// entries in between move one later. The moved entry must be out of the
  /// lists.
  void moveEarlier(int from, int to) {
    int id = ord[from];
    for (int p = from; p > to; --p) {
      ord[p] = ord[p - 1];
      pos[ord[p]] = p;
    }
    ord[to] = id;
    pos[id] = to;
  }

  /// The ids of the live steps sending to `peer` in positions (lo, hi), in
  /// order.
  SmallVector<int, 4> sendsBetween(int64_t peer, int lo, int hi) const {
    SmallVector<int, 4> out;
    auto it = sendsTo.find(peer);
    if (it == sendsTo.end())
      return out;
    for (size_t i = firstAfter(it->second, lo);
         i < it->second.size() && pos[it->second[i]] < hi; ++i)
      out.push_back(it->second[i]);
    return out;
  }

private:
  /// Where step `id` is or belongs in `list`, by its position.
  std::vector<int>::iterator at(std::vector<int> &list, int id) const {
    return std::lower_bound(list.begin(), list.end(), pos[id],
                            [&](int a, int p) { return pos[a] < p; });
  }

  /// The index of the first id in `list` whose position is after `p`.
  size_t firstAfter(const std::vector<int> &list, int p) const {
    return std::upper_bound(list.begin(), list.end(), p,
                            [&](int q, int a) { return q < pos[a]; }) -
           list.begin();
  }

  template <typename Fn> void forLists(int id, Fn fn) {
    SmallVector<Slot, 8> slots(eff[id].reads.begin(), eff[id].reads.end());
    slots.append(eff[id].writes.begin(), eff[id].writes.end());
    llvm::sort(slots);
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    for (Slot s : slots)
      fn(touch[s]);
    if (op[id].sends())
      fn(sendsTo[op[id].getSendPeerOrNone()]);
    if (op[id].receives())
      fn(recvsFrom[op[id].getRecvPeerOrNone()]);
  }

  std::vector<int> ord, pos;
  llvm::DenseMap<Slot, std::vector<int>> touch;
  llvm::DenseMap<int64_t, std::vector<int>> sendsTo, recvsFrom;
};

void FuseSteps::fuseRank(GpuOp gpu, const Collective &col) {
  int rank = (int)gpu.getRank();
  RankSteps rs(gpu, col);
  auto &ops = rs.op;
  auto &eff = rs.eff;
  auto &erased = rs.erased;

  // Output chunks whose final value the collective constrains (in-place
  // aliases resolved): a value left there is observed.
  llvm::DenseSet<Slot> observable;
  for (int i = 0; i < col.outputChunks; ++i)
    if (col.postAt(rank, i))
      observable.insert(slotOf(col, rank, Buffer::Output, i));
  // Whether the values in `slots` after step `j` are never used: each slot
  // is overwritten before any live step reads it, or is left alone and is
  // not an observed output.
  auto deadAfter = [&](int j, const llvm::DenseSet<Slot> &slots) {
    for (Slot s : slots) {
      bool read = false, overwritten = false;
      rs.forTouchers({s}, rs.posOf(j), [&](int k) {
        if (llvm::is_contained(eff[k].reads, s))
          read = true;
        else
          overwritten = llvm::is_contained(eff[k].writes, s);
        return !read && !overwritten;
      });
      if (read || (!overwritten && observable.contains(s)))
        return false;
    }
    return true;
  };

  // Replaces receive i and reduction j with one rrc at the receive: dst =
  // received + src.
  auto joinRecvReduce = [&](int i, int j, RecvOp recv, ReduceOp red,
                            auto srcBuf, int64_t srcOff, auto dstBuf,
                            int64_t dstOff) {
    auto r = cast<StepOpInterface>(recv.getOperation());
    OpBuilder b(recv);
    auto f = b.create<RecvReduceCopyOp>(
        recv.getLoc(), recv.getRecvPeer(), srcBuf, srcOff, dstBuf, dstOff,
        r.getChunkCount(), r.getStepKey(), r.getOrderKey(), nullptr);
    if (auto h = recv->getAttr("ccl.channel"))
      f->setAttr("ccl.channel", h);
    rs.unindex(i);
    rs.unindex(j);
    inMsg[f] = inMsg.lookup(recv);
    inMsg.erase(recv);
    recv->erase();
    red->erase();
    ops[i] = cast<StepOpInterface>(f.getOperation());
    eff[i] = effectsOf(ops[i], col, rank);
    erased[j] = true;
    rs.index(i);
  };

  for (size_t p = 0; p < rs.size(); ++p) {
    int i = rs.idAt(p);
    if (erased[i])
      continue;
    auto recv = dyn_cast<RecvOp>(ops[i].getOperation());
    auto rrc = dyn_cast<RecvReduceCopyOp>(ops[i].getOperation());
    if (!recv && !rrc)
      continue;
    StepOpInterface r = ops[i];
    SlotRef dst = *r.getDstRef();
    int64_t cnt = r.getChunkCount();
    int64_t from = r.getRecvPeerOrNone();
    SmallVector<Slot, 4> xs(eff[i].writes);
    llvm::DenseSet<Slot> x(xs.begin(), xs.end());
    SmallVector<Slot, 4> srcOfR(eff[i].reads);

    // Receive followed by a send of the same range. Only steps touching
    // the range can be that send, read it in between or overwrite it.
    bool readBetween = false;
    bool fused = false;
    SmallVector<int, 4> hoist;
    rs.forTouchers(xs, (int)p, [&](int j) {
      if (!forward)
        return false;
      StepOpInterface o = ops[j];
      auto send = dyn_cast<SendOp>(o.getOperation());
      if (send && send.getStep() > r.getStepKey() && send.getCount() == cnt &&
          eff[j].reads == eff[i].writes) {
        // The fused step must sit after the last send to the same peer
        // before j (keeping the k-th send the k-th); moving the receive
        // there must not pass a receive from the same peer or a step
        // touching its data.
        int at = std::max((int)p, rs.lastSendBefore(send.getSendPeer(),
                                                    rs.posOf(j)));
        if (at != (int)p &&
            (rs.receivesBetween(from, (int)p, at) ||
             rs.touchedBetween(xs, (int)p, at + 1, /*writesOnly=*/false) ||
             rs.touchedBetween(srcOfR, (int)p, at + 1, /*writesOnly=*/true))) {
          // Send first instead: the sends to that peer in between move
          // ahead of the receive, in their order, when each is a plain send
          // whose data no step from the receive on has written.
          if (!sendFirst)
            return false;
          auto early = rs.sendsBetween(send.getSendPeer(), (int)p, rs.posOf(j));
          bool ok = !early.empty();
          for (int k : early)
            if (!isa<SendOp>(ops[k].getOperation()) ||
                rs.touchedBetween(eff[k].reads, (int)p - 1, rs.posOf(k),
                                  /*writesOnly=*/true))
              ok = false;
          if (ok)
            hoist.assign(early.begin(), early.end());
          return false;
        }
        int mIn = inMsg.lookup(r), mOut = outMsg.lookup(send);
        std::pair<int64_t, int64_t> peers{send.getSendPeer(), from};
        if (!canJoin(mIn, mOut, rank, peers))
          return false;
        join(mIn, mOut, rank, peers);
        OpBuilder b(r);
        Operation *f;
        if (recv) {
          f = b.create<RecvCopySendOp>(r.getLoc(), recv.getRecvPeer(),
                                       dst.buffer, dst.offset,
                                       send.getSendPeer(), cnt, r.getStepKey(),
                                       r.getOrderKey(), nullptr);
        } else if (!readBetween && deadAfter(j, x) &&
                   rrc.getSrcBuffer() == rrc.getDstBuffer() &&
                   rrc.getSrcOffset() == rrc.getDstOffset()) {
          f = b.create<RecvReduceSendOp>(
              r.getLoc(), rrc.getRecvPeer(), rrc.getSrcBuffer(),
              rrc.getSrcOffset(), send.getSendPeer(), cnt, r.getStepKey(),
              r.getOrderKey(), nullptr);
        } else {
          f = b.create<RecvReduceCopySendOp>(
              r.getLoc(), rrc.getRecvPeer(), rrc.getSrcBuffer(),
              rrc.getSrcOffset(), dst.buffer, dst.offset, send.getSendPeer(),
              cnt, r.getStepKey(), r.getOrderKey(), nullptr);
        }
        if (auto h = r->getAttr("ccl.channel"))
          f->setAttr("ccl.channel", h);
        else if (auto h2 = send->getAttr("ccl.channel"))
          f->setAttr("ccl.channel", h2);
        rs.unindex(i);
        rs.unindex(j);
        inMsg[f] = mIn;
        outMsg[f] = mOut;
        inMsg.erase(r);
        outMsg.erase(send);
        r->erase();
        send->erase();
        ops[i] = cast<StepOpInterface>(f);
        eff[i] = effectsOf(ops[i], col, rank);
        erased[j] = true;
        if (at != (int)p) {
          f->moveAfter(ops[rs.idAt(at)]);
          rs.moveLater((int)p, at);
        }
        rs.index(i);
        fused = true;
        return false;
      }
      if (intersects(eff[j].reads, x))
        readBetween = true;
      // X changes: later sends do not forward what arrived here.
      return !intersects(eff[j].writes, x);
    });
    if (!hoist.empty()) {
      // Sends keep their order among themselves (the k-th send to a peer
      // stays the k-th) and only pass steps that do not write what they
      // read; the receive is visited again where it now stands.
      for (size_t h = 0; h < hoist.size(); ++h) {
        int k = hoist[h];
        rs.unindex(k);
        ops[k]->moveBefore(ops[rs.idAt(p + h)]);
        rs.moveEarlier(rs.posOf(k), (int)(p + h));
        rs.index(k);
      }
      p += hoist.size() - 1; // the loop's ++ reaches the receive
      continue;
    }
    if (fused) {
      if (rs.idAt(p) != i)
        --p; // position p now holds the next unvisited step (wraps at 0)
      continue;
    }
    if (!recv)
      continue;

    // recv into X, then a reduce of a local range S into X (X += S): one
    // rrc that stores received + S into X. The reduce is the first step
    // after the receive to touch X (nothing reads the bare received value
    // or changes X in between) and nothing writes S in between, so S holds
    // at the receive what the reduce would read. The new rrc is visited
    // again, so that a later send of X fuses with it into an rrcs.
    bool reducedInto = false;
    rs.forTouchers(xs, (int)p, [&](int j) {
      auto red = dyn_cast<ReduceOp>(ops[j].getOperation());
      if (!red || red.getStep() <= r.getStepKey() || red.getCount() != cnt ||
          ArrayRef<Slot>(eff[j].writes) != ArrayRef<Slot>(xs))
        return false;
      SmallVector<Slot, 4> src(ArrayRef<Slot>(eff[j].reads).take_front(cnt));
      for (Slot s : src)
        if (x.contains(s))
          return false;
      if (rs.touchedBetween(src, (int)p, rs.posOf(j), /*writesOnly=*/true))
        return false;
      joinRecvReduce(i, j, recv, red, red.getSrcBuffer(), red.getSrcOffset(),
                     dst.buffer, dst.offset);
      reducedInto = true;
      return false;
    });
    if (reducedInto) {
      --p; // visit the rrc again (wraps at 0)
      continue;
    }

    // recv into scratch, then a reduce of that scratch range into Y.
    bool allScratch = true;
    for (Slot s : xs)
      if ((s >> 32) != (int64_t)ccsynth::BufferKind::Scratch)
        allScratch = false;
    if (!allScratch)
      continue;
    rs.forTouchers(xs, (int)p, [&](int j) {
      auto red = dyn_cast<ReduceOp>(ops[j].getOperation());
      if (red && red.getStep() > r.getStepKey() && red.getCount() == cnt &&
          ArrayRef<Slot>(eff[j].reads).take_front(cnt) == ArrayRef<Slot>(xs)) {
        // eff[j].reads is src then dst; writes is dst (Y), which no step
        // in between may touch.
        SmallVector<Slot, 4> y(eff[j].writes);
        bool yTouched = rs.touchedBetween(y, (int)p, rs.posOf(j),
                                          /*writesOnly=*/false);
        for (Slot s : y)
          if (x.contains(s))
            yTouched = true;
        if (!yTouched && deadAfter(j, x))
          joinRecvReduce(i, j, recv, red, red.getDstBuffer(),
                         red.getDstOffset(), red.getDstBuffer(),
                         red.getDstOffset());
        return false;
      }
      // Anything else touching the received scratch uses it.
      return false;
    });
  }
}

} // namespace
