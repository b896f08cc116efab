//===- CoalesceTransfers.cpp - ccl-coalesce-transfers ---------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Joins the transfers of one step between one pair of ranks into
// transfers of several chunks wherever their source and destination
// ranges are contiguous, after renaming each rank's scratch chunks so that
// chunks that travel together sit next to each other.
//
// Scratch layout. Transfers are visited in schedule order; a scratch chunk
// gets its new index when it is first written. Within one (step, source,
// destination) group the chunks are ordered by their future: the chain of
// (rank, step) of the transfers that forward the chunk on (the first reader
// of the written value, then its first reader, ...), compared
// lexicographically with a chain that ends sorting first. Chunks that are
// forwarded together the longest stay adjacent, and the one that leaves
// the group first (delivered here, or turning off) sits at the front, so
// a bundle that sheds one chunk per hop (the ring AllToAll) stays one
// contiguous range at every hop.
//
// Only ranks whose scratch is moved one chunk at a time are renamed (a
// multi-chunk transfer fixes a contiguous layout already).
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/Dialect/CCL/Transforms/Passes.h"
#include "ccsynth/Import/ScheduleImport.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace ccsynth::ccl {
#define GEN_PASS_DEF_COALESCETRANSFERSPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

using namespace mlir;
using namespace ccsynth::ccl;

namespace {

struct Node {
  int64_t key;
  int next;
};

struct Coalescer {
  explicit Coalescer(AlgorithmOp alg) : alg(alg) {}

  /// Renames scratch and joins transfers; false when nothing joins (the
  /// algorithm is then left untouched).
  bool run();

  AlgorithmOp alg;
  SmallVector<TransferOp> ts;
  std::vector<int> order; // transfer indices in (step, index) order
  int64_t ranks = 0, scratch = 0;
  std::vector<bool> renamable;
  std::vector<int> sig; // per transfer: its future chain, or -1
  std::vector<Node> nodes;
  std::vector<std::vector<int64_t>> newIndex; // per rank, per scratch chunk
  std::vector<int64_t> nextFree;

  bool scratchOf(int t, bool src) {
    TransferOp op = ts[t];
    Buffer b = src ? op.getSrcBuffer() : op.getDstBuffer();
    int64_t r = src ? op.getSrcRank() : op.getDstRank();
    return b == Buffer::Scratch && renamable[r];
  }
  bool futureLess(int a, int b) const {
    while (a >= 0 && b >= 0) {
      if (nodes[a].key != nodes[b].key)
        return nodes[a].key < nodes[b].key;
      a = nodes[a].next;
      b = nodes[b].next;
    }
    return a < 0 && b >= 0;
  }
  int64_t rename(int64_t rank, int64_t index) {
    int64_t &n = newIndex[rank][index];
    if (n < 0)
      n = nextFree[rank]++;
    return n;
  }
  int64_t srcIndex(int t) {
    TransferOp op = ts[t];
    return scratchOf(t, true) ? rename(op.getSrcRank(), op.getSrcIndex())
                              : op.getSrcIndex();
  }
  int64_t dstIndex(int t) {
    TransferOp op = ts[t];
    return scratchOf(t, false) ? rename(op.getDstRank(), op.getDstIndex())
                               : op.getDstIndex();
  }
};

bool Coalescer::run() {
  ts = llvm::to_vector(alg.getBody().front().getOps<TransferOp>());
  // Members of switch operations move together by definition: coalescing
  // leaves an algorithm with any of them as it is.
  for (TransferOp t : ts)
    if (t.getViaSwitch())
      return false;
  int n = (int)ts.size();
  ranks = alg.getRanks();
  scratch = alg.getScratchChunks();
  order.resize(n);
  for (int i = 0; i < n; ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return ts[a].getStep() < ts[b].getStep();
  });

  renamable.assign(ranks, scratch > 0);
  for (TransferOp t : ts) {
    if (t.getCount() == 1)
      continue;
    if (t.getSrcBuffer() == Buffer::Scratch)
      renamable[t.getSrcRank()] = false;
    if (t.getDstBuffer() == Buffer::Scratch)
      renamable[t.getDstRank()] = false;
  }

  // The first reader of the value each transfer writes into renamable
  // scratch: a read of a later step, before the slot is written again.
  std::vector<std::vector<int>> events(ranks *
                                       scratch); // +1+t read, -1-t write
  for (int t : order) {
    if (scratchOf(t, true))
      events[ts[t].getSrcRank() * scratch + ts[t].getSrcIndex()].push_back(1 +
                                                                           t);
    if (scratchOf(t, false))
      events[ts[t].getDstRank() * scratch + ts[t].getDstIndex()].push_back(-1 -
                                                                           t);
  }
  std::vector<int> reader(n, -1);
  for (const std::vector<int> &ev : events)
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev[i] > 0)
        continue;
      int w = -1 - ev[i];
      for (size_t j = i + 1; j < ev.size(); ++j) {
        int t = ev[j] > 0 ? ev[j] - 1 : -1 - ev[j];
        if (ts[t].getStep() <= ts[w].getStep())
          continue;
        if (ev[j] > 0)
          reader[w] = t;
        break;
      }
    }
  events.clear();

  int64_t steps = 0;
  for (TransferOp t : ts)
    steps = std::max<int64_t>(steps, t.getStep() + 1);
  sig.assign(n, -1);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    int r = reader[*it];
    if (r < 0)
      continue;
    nodes.push_back(
        {(int64_t)ts[r].getDstRank() * steps + ts[r].getStep(), sig[r]});
    sig[*it] = (int)nodes.size() - 1;
  }

  // New scratch indices, group by group in schedule order.
  newIndex.assign(ranks, {});
  for (int64_t r = 0; r < ranks; ++r)
    if (renamable[r])
      newIndex[r].assign(scratch, -1);
  nextFree.assign(ranks, 0);
  // Groups: (step, source rank, destination rank), in order of first member.
  std::vector<std::vector<int>> groups;
  {
    std::map<std::tuple<int64_t, int64_t, int64_t>, int> groupOf;
    for (int t : order) {
      auto key =
          std::tuple{(int64_t)ts[t].getStep(), (int64_t)ts[t].getSrcRank(),
                     (int64_t)ts[t].getDstRank()};
      auto [it, fresh] = groupOf.try_emplace(key, (int)groups.size());
      if (fresh)
        groups.emplace_back();
      groups[it->second].push_back(t);
    }
  }
  std::vector<int64_t> src(n), dst(n);
  for (std::vector<int> &g : groups) {
    for (int t : g)
      src[t] = srcIndex(t);
    std::stable_sort(g.begin(), g.end(), [&](int a, int b) {
      if (futureLess(sig[a], sig[b]))
        return true;
      if (futureLess(sig[b], sig[a]))
        return false;
      return std::tuple{(int)ts[a].getSrcBuffer(), src[a]} <
             std::tuple{(int)ts[b].getSrcBuffer(), src[b]};
    });
    for (int t : g)
      dst[t] = dstIndex(t);
  }

  // Runs of a group with contiguous sources and destinations (same kind,
  // buffers and hints) become one transfer.
  auto attrsOf = [&](int t) {
    TransferOp op = ts[t];
    return std::tuple{(int)op.getKind(),
                      (int)op.getSrcBuffer(),
                      (int)op.getDstBuffer(),
                      op.getLink().value_or(-1),
                      op.getChannel().value_or(-1),
                      op.getThreadblock().value_or(-1)};
  };
  std::vector<std::vector<int>> runs;
  for (std::vector<int> &g : groups) {
    std::vector<int> byStart(g);
    std::stable_sort(byStart.begin(), byStart.end(), [&](int a, int b) {
      return std::tuple{attrsOf(a), src[a]} < std::tuple{attrsOf(b), src[b]};
    });
    for (size_t i = 0; i < byStart.size(); ++i) {
      int t = byStart[i];
      if (!runs.empty() && i > 0) {
        std::vector<int> &run = runs.back();
        int last = run.back();
        int64_t cnt = ts[last].getCount();
        if (attrsOf(last) == attrsOf(t) && src[t] == src[last] + cnt &&
            dst[t] == dst[last] + cnt) {
          run.push_back(t);
          continue;
        }
      }
      runs.push_back({t});
    }
  }
  if (runs.size() == (size_t)n)
    return false;

  // Every scratch chunk never written keeps a slot of its own.
  for (int64_t r = 0; r < ranks; ++r)
    for (int64_t i = 0; i < (int64_t)newIndex[r].size(); ++i)
      rename(r, i);

  for (int t = 0; t < n; ++t) {
    ts[t].setSrcIndex(src[t]);
    ts[t].setDstIndex(dst[t]);
  }
  for (std::vector<int> &run : runs) {
    if (run.size() == 1)
      continue;
    int keep = *std::min_element(run.begin(), run.end());
    int64_t total = 0;
    for (int t : run)
      total += ts[t].getCount();
    ts[keep].setSrcIndex(src[run.front()]);
    ts[keep].setDstIndex(dst[run.front()]);
    ts[keep].setCount(total);
    for (int t : run)
      if (t != keep)
        ts[t]->erase();
  }
  return true;
}

struct CoalesceTransfers
    : public ccsynth::ccl::impl::CoalesceTransfersPassBase<CoalesceTransfers> {
  using Base::Base;

  void runOnOperation() override {
    for (AlgorithmOp alg :
         llvm::to_vector(getOperation().getOps<AlgorithmOp>())) {
      Coalescer c(alg);
      if (!c.run())
        continue;
      // The renaming is a permutation of each rank's scratch, and a joined
      // transfer moves exactly its members' chunks in their step; prove
      // the result anyway, as every refinement is.
      FailureOr<ccsynth::Schedule> sched = exportSchedule(alg);
      if (failed(sched))
        return signalPassFailure();
      ccsynth::VerifyResult proof = ccsynth::verifySchedule(*sched);
      if (!proof.ok()) {
        alg.emitError() << "internal error: ccl-coalesce-transfers changed "
                           "what the algorithm computes: "
                        << proof.issues.front().message;
        return signalPassFailure();
      }
    }
  }
};

} // namespace
