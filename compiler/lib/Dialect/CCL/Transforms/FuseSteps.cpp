//===- FuseSteps.cpp - ccl-fuse-steps -------------------------------------===//
//
// Fuses, per rank and in schedule order:
//   recv X ... send X                -> recv_copy_send
//   recv_reduce_copy X ... send X    -> recv_reduce_copy_send, or
//                                       recv_reduce_send when X is dead
//   recv S (scratch) ... reduce S->Y -> recv_reduce_copy with Y -> Y
// A fused step takes the receive's place. Legality: the forwarded range is
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
    for (ProgramOp prog : getOperation().getOps<ProgramOp>()) {
      if (prog.isAssigned())
        continue;
      auto col = prog.buildCollective();
      if (!col) {
        prog.emitOpError() << col.error().message;
        return signalPassFailure();
      }
      // Fusion relies on the k-th send pairing with the k-th receive.
      std::vector<std::vector<StepOpInterface>> steps(prog.getRanks());
      for (GpuOp gpu : prog.getBody().front().getOps<GpuOp>())
        for (auto s : gpu.getBody().front().getOps<StepOpInterface>())
          steps[gpu.getRank()].push_back(s);
      auto paired = pairMessages(steps);
      if (failed(paired))
        return signalPassFailure();
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
        fuseRank(gpu, *col);
    }
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

void FuseSteps::fuseRank(GpuOp gpu, const Collective &col) {
  int rank = (int)gpu.getRank();
  SmallVector<StepOpInterface> ops(
      gpu.getBody().front().getOps<StepOpInterface>());
  size_t n = ops.size();
  std::vector<Effects> eff(n);
  for (size_t i = 0; i < n; ++i)
    eff[i] = effectsOf(ops[i], col, rank);
  std::vector<bool> erased(n, false);

  // Output chunks whose final value the collective constrains (in-place
  // aliases resolved): a value left there is observed.
  llvm::DenseSet<Slot> observable;
  for (int i = 0; i < col.outputChunks; ++i)
    if (col.postAt(rank, i))
      observable.insert(slotOf(col, rank, Buffer::Output, i));
  // Whether the values in `slots` after step `j` are never used: each slot
  // is overwritten before any live step reads it, or is left alone and is
  // not an observed output.
  auto deadAfter = [&](size_t j, const llvm::DenseSet<Slot> &slots) {
    for (Slot s : slots) {
      bool overwritten = false;
      for (size_t k = j + 1; k < n && !overwritten; ++k) {
        if (erased[k])
          continue;
        if (llvm::is_contained(eff[k].reads, s))
          return false;
        overwritten = llvm::is_contained(eff[k].writes, s);
      }
      if (!overwritten && observable.contains(s))
        return false;
    }
    return true;
  };

  // Moves entry `from` to just after entry `to` (from < to).
  auto moveAfter = [&](size_t from, size_t to) {
    std::rotate(ops.begin() + from, ops.begin() + from + 1,
                ops.begin() + to + 1);
    std::rotate(eff.begin() + from, eff.begin() + from + 1,
                eff.begin() + to + 1);
    std::vector<bool>::iterator eb = erased.begin();
    bool e = erased[from];
    for (size_t k = from; k < to; ++k)
      eb[k] = erased[k + 1];
    eb[to] = e;
  };

  for (size_t i = 0; i < n; ++i) {
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
    llvm::DenseSet<Slot> x;
    for (Slot s : eff[i].writes)
      x.insert(s);
    llvm::DenseSet<Slot> srcOfR;
    for (Slot s : eff[i].reads)
      srcOfR.insert(s);

    // Receive followed by a send of the same range.
    bool readBetween = false;
    bool fused = false;
    for (size_t j = i + 1; j < n && !fused; ++j) {
      if (erased[j])
        continue;
      StepOpInterface o = ops[j];
      auto send = dyn_cast<SendOp>(o.getOperation());
      if (send && send.getStep() > r.getStepKey() && send.getCount() == cnt &&
          eff[j].reads == eff[i].writes) {
        // The fused step must sit after the last send to the same peer
        // before j (keeping the k-th send the k-th); moving the receive
        // there must not pass a receive from the same peer or a step
        // touching its data.
        size_t at = i;
        for (size_t k = i + 1; k < j; ++k)
          if (!erased[k] && ops[k].sends() &&
              ops[k].getSendPeerOrNone() == send.getSendPeer())
            at = k;
        bool movable = true;
        for (size_t k = i + 1; k <= at && movable; ++k) {
          if (erased[k])
            continue;
          if ((ops[k].receives() && ops[k].getRecvPeerOrNone() == from) ||
              intersects(eff[k].reads, x) || intersects(eff[k].writes, x) ||
              intersects(eff[k].writes, srcOfR))
            movable = false;
        }
        if (!movable)
          break;
        int mIn = inMsg.lookup(r), mOut = outMsg.lookup(send);
        std::pair<int64_t, int64_t> peers{send.getSendPeer(), from};
        if (!canJoin(mIn, mOut, rank, peers))
          break;
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
        Effects fe = effectsOf(cast<StepOpInterface>(f), col, rank);
        inMsg[f] = mIn;
        outMsg[f] = mOut;
        inMsg.erase(r);
        outMsg.erase(send);
        r->erase();
        send->erase();
        ops[i] = cast<StepOpInterface>(f);
        eff[i] = fe;
        erased[j] = true;
        if (at != i) {
          f->moveAfter(ops[at]);
          moveAfter(i, at);
          --i; // entry i now holds the next unvisited step (wraps at 0)
        }
        fused = true;
        break;
      }
      if (intersects(eff[j].reads, x))
        readBetween = true;
      if (intersects(eff[j].writes, x))
        break; // X changes: later sends do not forward what arrived here.
    }
    if (fused || !recv)
      continue;

    // recv into scratch, then a reduce of that scratch range into Y.
    bool allScratch = true;
    for (Slot s : eff[i].writes)
      if ((s >> 32) != (int64_t)ccsynth::BufferKind::Scratch)
        allScratch = false;
    if (!allScratch)
      continue;
    llvm::DenseSet<Slot> touched; // slots used strictly between i and j
    for (size_t j = i + 1; j < n; ++j) {
      if (erased[j])
        continue;
      auto red = dyn_cast<ReduceOp>(ops[j].getOperation());
      if (red && red.getStep() > r.getStepKey() && red.getCount() == cnt &&
          ArrayRef<Slot>(eff[j].reads).take_front(cnt) ==
              ArrayRef<Slot>(eff[i].writes)) {
        // eff[j].reads is src then dst; writes is dst (Y).
        SmallVector<Slot, 4> y(eff[j].writes);
        llvm::DenseSet<Slot> ySet(y.begin(), y.end());
        bool yTouched = false;
        for (Slot s : y)
          if (touched.contains(s) || x.contains(s))
            yTouched = true;
        if (!yTouched && deadAfter(j, x)) {
          OpBuilder b(r);
          auto f = b.create<RecvReduceCopyOp>(
              r.getLoc(), recv.getRecvPeer(), red.getDstBuffer(),
              red.getDstOffset(), red.getDstBuffer(), red.getDstOffset(), cnt,
              r.getStepKey(), r.getOrderKey(), nullptr);
          if (auto h = r->getAttr("ccl.channel"))
            f->setAttr("ccl.channel", h);
          Effects fe =
              effectsOf(cast<StepOpInterface>(f.getOperation()), col, rank);
          inMsg[f] = inMsg.lookup(r);
          inMsg.erase(r);
          r->erase();
          red->erase();
          ops[i] = cast<StepOpInterface>(f.getOperation());
          eff[i] = fe;
          erased[j] = true;
        }
        break;
      }
      if (intersects(eff[j].reads, x) || intersects(eff[j].writes, x))
        break; // the received scratch is used by someone else
      for (Slot s : eff[j].reads)
        touched.insert(s);
      for (Slot s : eff[j].writes)
        touched.insert(s);
    }
  }
}

} // namespace
