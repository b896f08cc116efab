//===- CCLOps.cpp - Verifiers and custom syntax of the ccl ops ------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Verifiers and custom syntax of the ccl ops (CCLOps.h): the buffer enum
// conversions, the `after [tb:step, ...]` dependency syntax, the collective
// an AlgorithmOp or ProgramOp describes (builtin or custom conditions),
// and the verifiers of AlgorithmOp, TransferOp, ProgramOp, GpuOp,
// ThreadblockOp and the step ops (verifyStepOp).
// See docs/compiler.md ("Two levels of IR").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Dialect/CCL/IR/CCLOps.h"

#include "mlir/IR/OpImplementation.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <string>

using namespace mlir;
using namespace ccsynth;
using namespace ccsynth::ccl;

#include "ccsynth/Dialect/CCL/IR/CCLEnums.cpp.inc"
#include "ccsynth/Dialect/CCL/IR/CCLInterfaces.cpp.inc"

BufferKind ccsynth::ccl::toBufferKind(Buffer buffer) {
  switch (buffer) {
  case Buffer::Input:
    return BufferKind::Input;
  case Buffer::Output:
    return BufferKind::Output;
  case Buffer::Scratch:
    return BufferKind::Scratch;
  }
  return BufferKind::Input;
}

Buffer ccsynth::ccl::fromBufferKind(BufferKind kind) {
  switch (kind) {
  case BufferKind::Input:
    return Buffer::Input;
  case BufferKind::Output:
    return Buffer::Output;
  case BufferKind::Scratch:
    return Buffer::Scratch;
  }
  return Buffer::Input;
}

static const char *bufferName(Buffer b) {
  switch (b) {
  case Buffer::Input:
    return "input";
  case Buffer::Output:
    return "output";
  case Buffer::Scratch:
    return "scratch";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Custom directive: `after [tb:step, ...]`
//===----------------------------------------------------------------------===//

static ParseResult parseDeps(OpAsmParser &parser, DenseI64ArrayAttr &deps) {
  if (failed(parser.parseOptionalKeyword("after")))
    return success();
  SmallVector<int64_t> values;
  auto parseOne = [&]() -> ParseResult {
    int64_t tb = 0, step = 0;
    if (parser.parseInteger(tb) || parser.parseColon() ||
        parser.parseInteger(step))
      return failure();
    values.push_back(tb);
    values.push_back(step);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseOne))
    return failure();
  deps = DenseI64ArrayAttr::get(parser.getContext(), values);
  return success();
}

static void printDeps(OpAsmPrinter &printer, Operation *,
                      DenseI64ArrayAttr deps) {
  if (!deps || deps.empty())
    return;
  printer << "after [";
  ArrayRef<int64_t> v = deps.asArrayRef();
  for (size_t i = 0; i + 1 < v.size(); i += 2)
    printer << (i ? ", " : "") << v[i] << ":" << v[i + 1];
  if (v.size() % 2)
    printer << (v.size() > 1 ? ", " : "") << v.back();
  printer << "]";
}

#define GET_OP_CLASSES
#include "ccsynth/Dialect/CCL/IR/CCLOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Collective metadata (AlgorithmOp, ProgramOp)
//===----------------------------------------------------------------------===//

/// Reads a custom collective's conditions from the metadata arrays.
template <typename OpT>
static Expected<Collective> buildCustomCollective(OpT op) {
  ArrayAttr preAttr = op.getPreconditionAttr();
  ArrayAttr postAttr = op.getPostconditionAttr();
  if (!preAttr || !postAttr)
    return Error("a custom collective needs 'precondition' and "
                 "'postcondition' arrays");
  std::vector<std::vector<int>> pre;
  for (Attribute rank : preAttr) {
    auto values = dyn_cast<DenseI64ArrayAttr>(rank);
    if (!values)
      return Error("'precondition' must hold one array<i64: ...> per rank");
    pre.emplace_back(values.asArrayRef().begin(), values.asArrayRef().end());
  }
  std::vector<std::vector<std::optional<std::vector<int>>>> post;
  for (Attribute rank : postAttr) {
    auto chunks = dyn_cast<ArrayAttr>(rank);
    if (!chunks)
      return Error("'postcondition' must hold one array per rank");
    std::vector<std::optional<std::vector<int>>> row;
    for (Attribute chunk : chunks) {
      if (isa<UnitAttr>(chunk)) {
        row.push_back(std::nullopt);
        continue;
      }
      auto values = dyn_cast<DenseI64ArrayAttr>(chunk);
      if (!values)
        return Error("a postcondition entry must be array<i64: ...> or unit");
      row.push_back(std::vector<int>(values.asArrayRef().begin(),
                                     values.asArrayRef().end()));
    }
    post.push_back(std::move(row));
  }
  std::string name = op.getCollectiveName() ? op.getCollectiveName()->str()
                                            : op.getSymName().str();
  return Collective::custom(name, (int)op.getRanks(), (int)op.getInputChunks(),
                            (int)op.getOutputChunks(), std::move(pre),
                            std::move(post), op.getInplace());
}

template <typename OpT>
static Expected<Collective> buildCollectiveFrom(OpT op) {
  std::string name = op.getCollective().str();
  auto kind = parseCollectiveKind(name);
  if (!kind)
    return Error("unknown collective '" + name +
                 "' (expected one of: " + collectiveKindNames() + ")");
  if (op.getRanks() < 1 || op.getRanks() > 65536)
    return Error("'ranks' must be between 1 and 65536");
  if (op.getInputChunks() < 0 || op.getOutputChunks() < 0 ||
      op.getInputChunks() > (1 << 24) || op.getOutputChunks() > (1 << 24))
    return Error("chunk counts must be between 0 and 2^24");
  if (*kind == CollectiveKind::Custom)
    return buildCustomCollective(op);
  if (op.getChunkFactor() < 1 || op.getChunkFactor() > (1 << 20))
    return Error("'chunk_factor' must be between 1 and 2^20");
  auto col =
      Collective::builtin(*kind, (int)op.getRanks(), (int)op.getChunkFactor(),
                          op.getInplace(), (int)op.getRoot());
  if (!col)
    return col.error();
  if (col->inputChunks != op.getInputChunks() ||
      col->outputChunks != op.getOutputChunks())
    return Error("chunk counts (" + std::to_string(op.getInputChunks()) +
                 " in, " + std::to_string(op.getOutputChunks()) +
                 " out) do not match " + col->describe() + " (" +
                 std::to_string(col->inputChunks) + " in, " +
                 std::to_string(col->outputChunks) + " out)");
  return col;
}

template <typename OpT> static LogicalResult verifyMetadata(OpT op) {
  auto col = buildCollectiveFrom(op);
  if (!col)
    return op.emitOpError() << col.error().message;
  if (!symbolizeProtocol(op.getProtocol()))
    return op.emitOpError() << "protocol '" << op.getProtocol()
                            << "' is not Simple, LL or LL128";
  if (op.getMinBytes() < 0 || op.getMaxBytes() < 0)
    return op.emitOpError() << "'min_bytes' and 'max_bytes' must be >= 0";
  if (op.getMaxBytes() != 0 && op.getMaxBytes() < op.getMinBytes())
    return op.emitOpError()
           << "'max_bytes' (" << op.getMaxBytes() << ") is below 'min_bytes' ("
           << op.getMinBytes() << "); use 0 for no upper bound";
  return success();
}

Expected<Collective> AlgorithmOp::buildCollective() {
  return buildCollectiveFrom(*this);
}

Expected<Collective> ProgramOp::buildCollective() {
  return buildCollectiveFrom(*this);
}

//===----------------------------------------------------------------------===//
// AlgorithmOp, TransferOp
//===----------------------------------------------------------------------===//

LogicalResult AlgorithmOp::verify() {
  if (failed(verifyMetadata(*this)))
    return failure();
  if (getScratchChunks() < 0 || getScratchChunks() > (1 << 24))
    return emitOpError() << "'scratch_chunks' must be between 0 and 2^24";
  for (Operation &op : getBody().front())
    if (!isa<TransferOp>(op))
      return op.emitOpError() << "is not allowed in a ccl.algorithm (only "
                                 "ccl.transfer is)";
  return success();
}

LogicalResult TransferOp::verify() {
  auto alg = (*this)->getParentOfType<AlgorithmOp>();
  if (getCount() < 1)
    return emitOpError() << "count must be at least 1 (got " << getCount()
                         << ")";
  if (getStep() < 0)
    return emitOpError() << "step must be non-negative (got " << getStep()
                         << ")";
  auto checkSide = [&](const char *side, int64_t rank, Buffer buffer,
                       int64_t index) -> LogicalResult {
    if (rank < 0 || rank >= alg.getRanks())
      return emitOpError() << side << " rank " << rank
                           << " is not a rank of the algorithm (0.."
                           << alg.getRanks() - 1 << ")";
    int64_t size = buffer == Buffer::Input    ? alg.getInputChunks()
                   : buffer == Buffer::Output ? alg.getOutputChunks()
                                              : alg.getScratchChunks();
    if (index < 0 || index + getCount() > size)
      return emitOpError() << side << " range " << stringifyBuffer(buffer)
                           << "[" << index << ".." << index + getCount()
                           << ") is outside the " << bufferName(buffer)
                           << " buffer (" << size << " chunks)";
    return success();
  };
  if (failed(
          checkSide("source", getSrcRank(), getSrcBuffer(), getSrcIndex())) ||
      failed(checkSide("destination", getDstRank(), getDstBuffer(),
                       getDstIndex())))
    return failure();
  bool viaSwitch = getKind() == TransferKind::SwitchReduce ||
                   getKind() == TransferKind::Multicast;
  // A switch reduction's destination may be one of its own sources.
  if (getSrcRank() == getDstRank() && getSrcBuffer() == getDstBuffer() &&
      getSrcIndex() == getDstIndex() && getKind() != TransferKind::SwitchReduce)
    return emitOpError() << "moves a range onto itself";
  if (viaSwitch && !getViaSwitch())
    return emitOpError() << "a " << stringifyTransferKind(getKind())
                         << " goes through a switch: name it with "
                            "'through N'";
  if (!viaSwitch && getViaSwitch())
    return emitOpError() << "a " << stringifyTransferKind(getKind())
                         << " goes point to point: 'through' names the "
                            "switch of a switch_reduce or multicast";
  if (viaSwitch && getLink())
    return emitOpError() << "a " << stringifyTransferKind(getKind())
                         << " goes through switch " << *getViaSwitch()
                         << " and names no link";
  for (auto [name, value] :
       {std::pair{"link", getLink()}, std::pair{"channel", getChannel()},
        std::pair{"threadblock", getThreadblock()},
        std::pair{"through", getViaSwitch()}})
    if (value && *value < 0)
      return emitOpError() << "'" << name << "' must be non-negative";
  return success();
}

//===----------------------------------------------------------------------===//
// ProgramOp, GpuOp, ThreadblockOp
//===----------------------------------------------------------------------===//

bool ProgramOp::isAssigned() {
  for (auto gpu : getBody().front().getOps<GpuOp>())
    for (Operation &op : gpu.getBody().front())
      if (!isa<ThreadblockOp>(op))
        return false;
  return true;
}

LogicalResult ProgramOp::verify() {
  if (failed(verifyMetadata(*this)))
    return failure();
  std::vector<bool> seen(getRanks(), false);
  int64_t count = 0;
  for (Operation &op : getBody().front()) {
    auto gpu = dyn_cast<GpuOp>(op);
    if (!gpu)
      return op.emitOpError() << "is not allowed in a ccl.program (only "
                                 "ccl.gpu is)";
    int64_t r = gpu.getRank();
    if (r < 0 || r >= getRanks())
      return success(); // GpuOp::verify reports it.
    if (seen[r])
      return gpu.emitOpError() << "duplicates rank " << r;
    seen[r] = true;
    ++count;
  }
  if (count != getRanks()) {
    for (int64_t r = 0; r < getRanks(); ++r)
      if (!seen[r])
        return emitOpError()
               << "has no ccl.gpu for rank " << r << " (every rank needs one)";
  }
  return success();
}

int64_t GpuOp::bufferSize(Buffer buffer) {
  switch (buffer) {
  case Buffer::Input:
    return getInputChunks();
  case Buffer::Output:
    return getOutputChunks();
  case Buffer::Scratch:
    return getScratchChunks();
  }
  return 0;
}

LogicalResult GpuOp::verify() {
  auto prog = (*this)->getParentOfType<ProgramOp>();
  if (getRank() < 0 || getRank() >= prog.getRanks())
    return emitOpError() << "rank " << getRank()
                         << " is not a rank of the program (0.."
                         << prog.getRanks() - 1 << ")";
  if (getInputChunks() != prog.getInputChunks() ||
      getOutputChunks() != prog.getOutputChunks())
    return emitOpError() << "buffer sizes (" << getInputChunks() << ", "
                         << getOutputChunks() << ") differ from the program's ("
                         << prog.getInputChunks() << ", "
                         << prog.getOutputChunks() << ")";
  if (getScratchChunks() < 0 || getScratchChunks() > (1 << 24))
    return emitOpError() << "scratch size must be between 0 and 2^24";

  int numTbs = 0, numSteps = 0;
  for (Operation &op : getBody().front()) {
    if (isa<ThreadblockOp>(op))
      ++numTbs;
    else if (isa<StepOpInterface>(op))
      ++numSteps;
    else
      return op.emitOpError() << "is not allowed in a ccl.gpu (only steps "
                                 "or ccl.threadblock are)";
  }
  if (numTbs && numSteps)
    return emitOpError() << "mixes threadblocks and unassigned steps";

  if (numSteps) {
    for (auto step : getBody().front().getOps<StepOpInterface>())
      if (!step.getDepList().empty())
        return step->emitOpError()
               << "has threadblock dependencies but is not in a threadblock";
    return success();
  }

  // Threadblock ids are dense from 0 and dependencies name existing steps.
  std::vector<ThreadblockOp> byId(numTbs);
  for (auto tb : getBody().front().getOps<ThreadblockOp>())
    if (tb.getId() < 0)
      return success(); // ThreadblockOp::verify reports it.
  for (auto tb : getBody().front().getOps<ThreadblockOp>()) {
    int64_t id = tb.getId();
    if (id < 0 || id >= numTbs)
      return tb.emitOpError() << "id " << id << " is not dense (expected 0.."
                              << numTbs - 1 << ")";
    if (byId[id])
      return tb.emitOpError() << "duplicates threadblock id " << id;
    byId[id] = tb;
  }
  std::vector<int64_t> sizes(numTbs);
  for (int i = 0; i < numTbs; ++i)
    sizes[i] = std::distance(byId[i].getBody().front().begin(),
                             byId[i].getBody().front().end());
  for (auto tb : byId) {
    for (auto step : tb.getBody().front().getOps<StepOpInterface>()) {
      ArrayRef<int64_t> deps = step.getDepList();
      for (size_t i = 0; i + 1 < deps.size(); i += 2) {
        int64_t depTb = deps[i], depStep = deps[i + 1];
        if (depTb == tb.getId())
          return step->emitOpError()
                 << "depends on its own threadblock " << depTb
                 << " (program order already covers it)";
        if (depTb >= numTbs)
          return step->emitOpError()
                 << "depends on threadblock " << depTb << ", which rank "
                 << getRank() << " does not have";
        if (depStep >= sizes[depTb])
          return step->emitOpError()
                 << "depends on step " << depStep << " of threadblock " << depTb
                 << ", which has only " << sizes[depTb] << " steps";
      }
    }
  }
  return success();
}

LogicalResult ThreadblockOp::verify() {
  auto gpu = (*this)->getParentOfType<GpuOp>();
  auto prog = gpu ? gpu->getParentOfType<ProgramOp>() : ProgramOp();
  int64_t ranks = prog ? prog.getRanks() : INT64_MAX;
  if (getId() < 0)
    return emitOpError() << "id must be non-negative";
  if (getChannel() < 0)
    return emitOpError() << "channel must be non-negative (got " << getChannel()
                         << ")";
  for (auto [dir, peer] :
       {std::pair{"send", getSendPeer()}, std::pair{"recv", getRecvPeer()}}) {
    if (peer < -1 || peer >= ranks)
      return emitOpError() << dir << " peer " << peer
                           << " is neither -1 nor a rank";
    if (gpu && peer == gpu.getRank())
      return emitOpError() << dir << " peer " << peer
                           << " is the threadblock's own rank";
  }
  for (Operation &op : getBody().front())
    if (!isa<StepOpInterface>(op))
      return op.emitOpError() << "is not allowed in a ccl.threadblock (only "
                                 "steps are)";
  return success();
}

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

LogicalResult ccsynth::ccl::verifyStepOp(Operation *op) {
  auto step = cast<StepOpInterface>(op);
  auto gpu = op->getParentOfType<GpuOp>();
  if (!gpu)
    return success(); // ParentOneOf reports the misplaced op.
  auto prog = gpu->getParentOfType<ProgramOp>();
  int64_t ranks = prog ? prog.getRanks() : INT64_MAX;
  int64_t rank = gpu.getRank();
  int64_t count = step.getChunkCount();
  if (count < 1)
    return op->emitOpError()
           << "count must be at least 1 (got " << count << ")";
  if (step.getStepKey() < 0 || step.getOrderKey() < 0)
    return op->emitOpError() << "'step' and 'order' must be non-negative";
  for (auto [dir, peer] : {std::pair{"send", step.getSendPeerOrNone()},
                           std::pair{"recv", step.getRecvPeerOrNone()}}) {
    bool has = std::string(dir) == "send" ? step.sends() : step.receives();
    if (!has)
      continue;
    if (peer < 0 || peer >= ranks)
      return op->emitOpError() << dir << " peer " << peer
                               << " is not a rank (0.." << ranks - 1 << ")";
    if (peer == rank)
      return op->emitOpError()
             << dir << " peer " << peer << " is the step's own rank";
  }
  for (auto [side, ref] : {std::pair{"source", step.getSrcRef()},
                           std::pair{"destination", step.getDstRef()}}) {
    if (!ref)
      continue;
    int64_t size = gpu.bufferSize(ref->buffer);
    if (ref->offset < 0 || ref->offset + count > size)
      return op->emitOpError()
             << side << " range " << stringifyBuffer(ref->buffer) << "["
             << ref->offset << ".." << ref->offset + count
             << ") is outside rank " << rank << "'s " << bufferName(ref->buffer)
             << " buffer (" << size << " chunks)";
  }
  ArrayRef<int64_t> deps = step.getDepList();
  if (deps.size() % 2)
    return op->emitOpError()
           << "dependency list must hold threadblock:step pairs";
  for (int64_t v : deps)
    if (v < 0)
      return op->emitOpError() << "dependencies must be non-negative";
  if (auto tb = dyn_cast<ThreadblockOp>(op->getParentOp())) {
    int64_t sp = step.getSendPeerOrNone(), rp = step.getRecvPeerOrNone();
    if (sp >= 0 && sp != tb.getSendPeer())
      return op->emitOpError()
             << "sends to " << sp << " but threadblock " << tb.getId()
             << " sends to " << tb.getSendPeer();
    if (rp >= 0 && rp != tb.getRecvPeer())
      return op->emitOpError()
             << "receives from " << rp << " but threadblock " << tb.getId()
             << " receives from " << tb.getRecvPeer();
  }
  return success();
}
