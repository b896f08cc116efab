//===- TransformUtils.cpp - Helpers shared by the ccl passes --------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TransformUtils.h"

#include "ccsynth/Import/ScheduleImport.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace ccsynth::ccl {

Expected<Collective> refineCollective(const Collective &col, int factor) {
  if (factor == 1)
    return col;
  if ((long long)std::max(col.inputChunks, col.outputChunks) * factor >
      (1 << 24))
    return Error("refining " + col.describe() + " by " +
                 std::to_string(factor) + " makes buffers too large");
  if (col.kind != CollectiveKind::Custom)
    return Collective::builtin(col.kind, col.numRanks, col.chunkFactor * factor,
                               col.inPlace, col.root);
  std::vector<std::vector<int>> pre(col.numRanks);
  std::vector<std::vector<std::optional<std::vector<int>>>> post(col.numRanks);
  for (int r = 0; r < col.numRanks; ++r) {
    for (int v : col.preOf(r))
      for (int k = 0; k < factor; ++k)
        pre[r].push_back(v < 0 ? -1 : v * factor + k);
    for (int i = 0; i < col.outputChunks; ++i) {
      PostSet want = col.postAt(r, i);
      for (int k = 0; k < factor; ++k) {
        if (!want) {
          post[r].push_back(std::nullopt);
          continue;
        }
        std::vector<int> refined;
        for (int v : want)
          refined.push_back(v * factor + k);
        post[r].push_back(refined);
      }
    }
  }
  return Collective::custom(col.name, col.numRanks, col.inputChunks * factor,
                            col.outputChunks * factor, std::move(pre),
                            std::move(post), col.inPlace);
}

LogicalResult
refineAlgorithm(AlgorithmOp alg, int64_t factor, llvm::StringRef passName,
                llvm::StringRef optionName,
                llvm::function_ref<void(OpBuilder &, TransferOp)> split) {
  if (factor < 1)
    return alg.emitError() << passName << ": " << optionName
                           << " must be at least 1 (got " << factor << ")";
  if (factor == 1)
    return success();
  auto col = alg.buildCollective();
  if (!col)
    return alg.emitOpError() << col.error().message;
  auto refined = refineCollective(*col, (int)factor);
  if (!refined)
    return alg.emitError() << passName << ": " << refined.error().message;
  OpBuilder b(alg.getContext());
  for (TransferOp t :
       llvm::to_vector(alg.getBody().front().getOps<TransferOp>())) {
    b.setInsertionPoint(t);
    split(b, t);
    t.erase();
  }
  setCollectiveAttrs(alg, *refined);
  alg.setScratchChunks(alg.getScratchChunks() * factor);
  return success();
}

Slot slotOf(const Collective &col, int rank, Buffer buffer, int64_t index) {
  ChunkLoc c =
      col.canonical({rank, toBufferKind(buffer), static_cast<int>(index)});
  return (static_cast<int64_t>(c.buffer) << 32) | c.index;
}

SmallVector<Slot, 4> rangeSlots(const Collective &col, int rank, SlotRef ref,
                                int64_t count) {
  SmallVector<Slot, 4> out;
  for (int64_t i = 0; i < count; ++i)
    out.push_back(slotOf(col, rank, ref.buffer, ref.offset + i));
  return out;
}

Effects effectsOf(StepOpInterface step, const Collective &col, int rank) {
  Effects e;
  int64_t n = step.getChunkCount();
  if (auto src = step.getSrcRef())
    e.reads = rangeSlots(col, rank, *src, n);
  if (auto dst = step.getDstRef()) {
    e.writes = rangeSlots(col, rank, *dst, n);
    if (step.readsDst())
      e.reads.append(e.writes.begin(), e.writes.end());
  }
  return e;
}

FailureOr<std::vector<PairedMessage>>
pairMessages(const std::vector<std::vector<StepOpInterface>> &steps) {
  std::map<std::pair<int, int>, std::vector<int>> sendsTo, recvsFrom;
  for (int r = 0; r < (int)steps.size(); ++r)
    for (int i = 0; i < (int)steps[r].size(); ++i) {
      StepOpInterface s = steps[r][i];
      if (s.sends())
        sendsTo[{r, (int)s.getSendPeerOrNone()}].push_back(i);
      if (s.receives())
        recvsFrom[{(int)s.getRecvPeerOrNone(), r}].push_back(i);
    }
  std::vector<PairedMessage> out;
  auto report = [&](std::pair<int, int> key) -> LogicalResult {
    auto [from, to] = key;
    auto &s = sendsTo[key];
    auto &r = recvsFrom[key];
    size_t n = std::min(s.size(), r.size());
    for (size_t k = 0; k < n; ++k) {
      StepOpInterface a = steps[from][s[k]], b = steps[to][r[k]];
      if (a.getChunkCount() != b.getChunkCount()) {
        a->emitError() << "message " << k << " from rank " << from
                       << " to rank " << to << " sends " << a.getChunkCount()
                       << " chunk(s) but the matching "
                       << "receive takes " << b.getChunkCount();
        return failure();
      }
      out.push_back({{from, s[k]}, {to, r[k]}});
    }
    if (s.size() != r.size()) {
      StepOpInterface extra =
          s.size() > r.size() ? steps[from][s[n]] : steps[to][r[n]];
      Operation *at = extra.getOperation();
      at->emitError() << "rank " << from << " sends " << s.size()
                      << " message(s) to rank " << to << " but rank " << to
                      << " receives " << r.size()
                      << "; this step has no partner";
      return failure();
    }
    return success();
  };
  std::vector<std::pair<int, int>> keys;
  for (auto &[k, v] : sendsTo)
    keys.push_back(k);
  for (auto &[k, v] : recvsFrom)
    if (!sendsTo.count(k))
      keys.push_back(k);
  for (auto key : keys)
    if (failed(report(key)))
      return failure();
  return out;
}

mlir::LogicalResult forEachUnassignedProgram(
    mlir::ModuleOp module,
    llvm::function_ref<mlir::LogicalResult(ProgramOp, const Collective &)> fn) {
  for (ProgramOp prog : module.getOps<ProgramOp>()) {
    if (prog.isAssigned())
      continue;
    auto col = prog.buildCollective();
    if (!col) {
      prog.emitOpError() << col.error().message;
      return mlir::failure();
    }
    if (mlir::failed(fn(prog, *col)))
      return mlir::failure();
  }
  return mlir::success();
}

} // namespace ccsynth::ccl
