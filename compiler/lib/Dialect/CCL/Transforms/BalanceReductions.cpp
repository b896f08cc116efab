//===- BalanceReductions.cpp - ccl-balance-reductions ---------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A schedule that gathers k contributions of a chunk into scratch and then
// adds them to the chunk one by one lowers to a chain of k local reduces,
// each waiting for the one before:
//   reduce s1 -> d; reduce s2 -> d; ...; reduce sk -> d
// Per rank, in step order, such a chain (k >= 3, the same destination
// range, nothing else touching it in between, every source a scratch range
// that nothing reads before it is written again) becomes a pairwise tree
// over [d, s1, .., sk]: level by level, element 2m+1 is reduced into
// element 2m. It does the same k reduces, but ceil(log2(k+1)) deep instead
// of k, and the reduces of one level write different ranges, so that
// ccl-assign-threadblocks (local-tbs) can run them side by side. The tree
// takes the place of the chain's last reduce.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"

#include "ccsynth/Dialect/CCL/Transforms/Passes.h"

namespace ccsynth::ccl {
#define GEN_PASS_DEF_BALANCEREDUCTIONSPASS
#include "ccsynth/Dialect/CCL/Transforms/Passes.h.inc"
} // namespace ccsynth::ccl

using namespace mlir;
using ccsynth::Collective;
using namespace ccsynth::ccl;

namespace {

struct BalanceReductions
    : public ccsynth::ccl::impl::BalanceReductionsPassBase<BalanceReductions> {
  using Base::Base;

  void balanceRank(GpuOp gpu, const Collective &col);

  void runOnOperation() override {
    auto balanced = forEachUnassignedProgram(
        getOperation(), [&](ProgramOp prog, const Collective &col) {
          for (GpuOp gpu : prog.getBody().front().getOps<GpuOp>())
            balanceRank(gpu, col);
          return success();
        });
    if (failed(balanced))
      signalPassFailure();
  }
};

bool overlaps(llvm::ArrayRef<Slot> a, llvm::ArrayRef<Slot> b) {
  for (Slot x : a)
    if (llvm::is_contained(b, x))
      return true;
  return false;
}

void BalanceReductions::balanceRank(GpuOp gpu, const Collective &col) {
  int rank = (int)gpu.getRank();
  SmallVector<StepOpInterface> ops(
      gpu.getBody().front().getOps<StepOpInterface>());
  int n = (int)ops.size();
  std::vector<Effects> eff(n);
  for (int i = 0; i < n; ++i)
    eff[i] = effectsOf(ops[i], col, rank);
  // What a reduce reads besides its destination.
  auto sourceOf = [&](int j) {
    SmallVector<Slot, 4> src;
    for (Slot s : eff[j].reads)
      if (!llvm::is_contained(eff[j].writes, s))
        src.push_back(s);
    return src;
  };
  std::vector<bool> used(n, false);
  for (int i = 0; i < n; ++i) {
    if (used[i])
      continue;
    auto first = dyn_cast<ReduceOp>(ops[i].getOperation());
    if (!first || first.getSrcBuffer() != Buffer::Scratch)
      continue;
    SmallVector<int> chain{i};
    ArrayRef<Slot> dst = eff[i].writes;
    for (int j = i + 1; j < n; ++j) {
      if (used[j])
        continue; // erased by an earlier tree, which touches other slots
      auto r = dyn_cast<ReduceOp>(ops[j].getOperation());
      if (r && r.getDstBuffer() == first.getDstBuffer() &&
          r.getDstOffset() == first.getDstOffset() &&
          r.getCount() == first.getCount() &&
          r.getSrcBuffer() == Buffer::Scratch) {
        chain.push_back(j);
        continue;
      }
      if (overlaps(eff[j].reads, dst) || overlaps(eff[j].writes, dst))
        break;
    }
    if (chain.size() < 3)
      continue;
    // The tree reads every source where the chain's last reduce was and
    // writes into some of them: from its reduce on, nothing else may touch
    // a source, and after the tree nothing may read it before writing it.
    // Sources are distinct and apart from the destination.
    int lastPos = chain.back();
    bool ok = true;
    SmallVector<Slot, 16> seen(dst.begin(), dst.end());
    for (int j : chain) {
      SmallVector<Slot, 4> src = sourceOf(j);
      if (src.empty() || overlaps(src, seen)) {
        ok = false;
        break;
      }
      seen.append(src.begin(), src.end());
      for (int k = j + 1; k <= lastPos && ok; ++k)
        if (!used[k] && !llvm::is_contained(chain, k) &&
            (overlaps(eff[k].reads, src) || overlaps(eff[k].writes, src)))
          ok = false;
      for (Slot s : src) {
        for (int k = lastPos + 1; k < n && ok; ++k) {
          if (used[k])
            continue;
          if (llvm::is_contained(eff[k].reads, s))
            ok = false;
          else if (llvm::is_contained(eff[k].writes, s))
            break;
        }
      }
      if (!ok)
        break;
    }
    if (!ok)
      continue;
    for (int j : chain)
      used[j] = true;
    auto last = cast<ReduceOp>(ops[chain.back()].getOperation());
    SmallVector<SlotRef> level{{first.getDstBuffer(), first.getDstOffset()}};
    for (int j : chain) {
      auto r = cast<ReduceOp>(ops[j].getOperation());
      level.push_back({r.getSrcBuffer(), r.getSrcOffset()});
    }
    OpBuilder b(last);
    while (level.size() > 1) {
      SmallVector<SlotRef> next;
      for (size_t m = 0; m + 1 < level.size(); m += 2) {
        auto op = b.create<ReduceOp>(last.getLoc(), level[m + 1].buffer,
                                     level[m + 1].offset, level[m].buffer,
                                     level[m].offset, last.getCount(),
                                     last.getStep(), last.getOrder(), nullptr);
        if (auto hint = last->getAttr("ccl.channel"))
          op->setAttr("ccl.channel", hint);
        next.push_back(level[m]);
      }
      if (level.size() % 2)
        next.push_back(level.back());
      level = std::move(next);
    }
    for (int j : chain)
      ops[j]->erase();
  }
}

} // namespace
