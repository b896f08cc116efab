//===- ScheduleImport.cpp - Schedules to and from ccl.algorithm -----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Import/ScheduleImport.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace ccsynth::ccl {

Location toLocation(MLIRContext *ctx, const SourceLoc &loc, Location fallback) {
  if (!loc.known())
    return fallback;
  return FileLineColLoc::get(ctx, loc.file.str(), loc.line,
                             std::max(loc.col, 1));
}

void setCollectiveAttrs(Operation *op, const Collective &col) {
  MLIRContext *ctx = op->getContext();
  Builder b(ctx);
  op->setAttr("collective", b.getStringAttr(toString(col.kind)));
  op->setAttr("ranks", b.getI64IntegerAttr(col.numRanks));
  op->setAttr("chunk_factor", b.getI64IntegerAttr(col.chunkFactor));
  op->setAttr("root", b.getI64IntegerAttr(col.root));
  if (col.inPlace)
    op->setAttr("inplace", b.getUnitAttr());
  else
    op->removeAttr("inplace");
  op->setAttr("input_chunks", b.getI64IntegerAttr(col.inputChunks));
  op->setAttr("output_chunks", b.getI64IntegerAttr(col.outputChunks));
  if (col.kind != CollectiveKind::Custom) {
    op->removeAttr("collective_name");
    op->removeAttr("precondition");
    op->removeAttr("postcondition");
    return;
  }
  op->setAttr("collective_name", b.getStringAttr(col.name));
  SmallVector<Attribute> pre;
  for (int r = 0; r < col.numRanks; ++r) {
    std::span<const int> in = col.preOf(r);
    pre.push_back(DenseI64ArrayAttr::get(
        ctx, SmallVector<int64_t>(in.begin(), in.end())));
  }
  SmallVector<Attribute> post;
  for (int r = 0; r < col.numRanks; ++r) {
    SmallVector<Attribute> chunks;
    for (int i = 0; i < col.outputChunks; ++i) {
      PostSet want = col.postAt(r, i);
      chunks.push_back(
          want ? Attribute(DenseI64ArrayAttr::get(
                     ctx, SmallVector<int64_t>(want.begin(), want.end())))
               : Attribute(b.getUnitAttr()));
    }
    post.push_back(b.getArrayAttr(chunks));
  }
  op->setAttr("precondition", b.getArrayAttr(pre));
  op->setAttr("postcondition", b.getArrayAttr(post));
}

/// The core model's transfer op of a dialect transfer kind, and back.
static ::ccsynth::TransferOp toTransferOp(TransferKind kind) {
  switch (kind) {
  case TransferKind::Copy:
    return ::ccsynth::TransferOp::Copy;
  case TransferKind::Reduce:
    return ::ccsynth::TransferOp::Reduce;
  case TransferKind::SwitchReduce:
    return ::ccsynth::TransferOp::SwitchReduce;
  case TransferKind::Multicast:
    break;
  }
  return ::ccsynth::TransferOp::Multicast;
}

static TransferKind fromTransferOp(::ccsynth::TransferOp op) {
  switch (op) {
  case ::ccsynth::TransferOp::Copy:
    return TransferKind::Copy;
  case ::ccsynth::TransferOp::Reduce:
    return TransferKind::Reduce;
  case ::ccsynth::TransferOp::SwitchReduce:
    return TransferKind::SwitchReduce;
  case ::ccsynth::TransferOp::Multicast:
    break;
  }
  return TransferKind::Multicast;
}

AlgorithmOp importSchedule(ModuleOp module, const Schedule &s,
                           Location fallback) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  OperationState state(fallback, AlgorithmOp::getOperationName());
  state.addRegion();
  AlgorithmOp alg = cast<AlgorithmOp>(b.create(state));
  alg.getBody().emplaceBlock();
  alg.setSymName(s.name.empty() ? "schedule" : s.name);
  setCollectiveAttrs(alg, s.collective);
  alg.setScratchChunks(s.scratchChunks);
  alg.setProtocol(s.protocol.empty() ? "Simple" : s.protocol);
  if (!s.topology.empty())
    alg.setTopology(s.topology);
  if (!s.origin.empty())
    alg.setOrigin(s.origin);

  b.setInsertionPointToEnd(&alg.getBody().front());
  for (size_t i = 0; i < s.transfers.size(); ++i) {
    const Transfer &t = s.transfers[i];
    Location loc = i < s.transferLocs.size()
                       ? toLocation(ctx, s.transferLocs[i], fallback)
                       : fallback;
    auto op = b.create<TransferOp>(
        loc, fromTransferOp(t.op), t.src.rank, fromBufferKind(t.src.buffer),
        t.src.index, t.dst.rank, fromBufferKind(t.dst.buffer), t.dst.index,
        t.count, t.step,
        /*link=*/nullptr, /*channel=*/nullptr, /*threadblock=*/nullptr,
        /*via_switch=*/nullptr);
    if (t.sw >= 0)
      op.setViaSwitch(t.sw);
    if (t.link >= 0)
      op.setLink(t.link);
    if (t.channel >= 0)
      op.setChannel(t.channel);
    if (t.threadblock >= 0)
      op.setThreadblock(t.threadblock);
  }
  return alg;
}

FailureOr<Schedule> exportSchedule(AlgorithmOp op) {
  auto col = op.buildCollective();
  if (!col) {
    op.emitOpError() << col.error().message;
    return failure();
  }
  Schedule s;
  s.name = op.getSymName().str();
  s.collective = col.take();
  s.scratchChunks = (int)op.getScratchChunks();
  s.protocol = op.getProtocol().str();
  if (op.getTopology())
    s.topology = op.getTopology()->str();
  if (op.getOrigin())
    s.origin = op.getOrigin()->str();
  for (TransferOp t : op.getBody().front().getOps<TransferOp>()) {
    Transfer tr;
    tr.op = toTransferOp(t.getKind());
    tr.sw = t.getViaSwitch() ? (int)*t.getViaSwitch() : -1;
    tr.src = {(int)t.getSrcRank(), toBufferKind(t.getSrcBuffer()),
              (int)t.getSrcIndex()};
    tr.dst = {(int)t.getDstRank(), toBufferKind(t.getDstBuffer()),
              (int)t.getDstIndex()};
    tr.count = (int)t.getCount();
    tr.step = (int)t.getStep();
    tr.link = t.getLink() ? (int)*t.getLink() : -1;
    tr.channel = t.getChannel() ? (int)*t.getChannel() : -1;
    tr.threadblock = t.getThreadblock() ? (int)*t.getThreadblock() : -1;
    s.transfers.push_back(tr);
  }
  return s;
}

} // namespace ccsynth::ccl
