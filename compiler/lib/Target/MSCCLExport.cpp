//===- MSCCLExport.cpp - ccl.program to MSCCL XML -------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Target/MSCCLExport.h"

#include "ccsynth/Target/MSCCLXml.h"

#include <algorithm>
#include <set>

using namespace mlir;

namespace ccsynth::ccl {

/// Keeps names the runtime's parser reads intact: no quotes, no markup.
static std::string sanitizeName(llvm::StringRef name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    out += ok ? c : '_';
  }
  if (out.empty())
    out = "ccsynth";
  return out.substr(0, msccl::kMaxAttrLength);
}

FailureOr<ProgramOp> findProgram(Operation *op) {
  if (auto prog = dyn_cast<ProgramOp>(op))
    return prog;
  SmallVector<ProgramOp> progs;
  op->walk([&](ProgramOp p) { progs.push_back(p); });
  if (progs.size() == 1)
    return progs.front();
  if (progs.empty()) {
    bool hasAlgorithm = false;
    op->walk([&](AlgorithmOp) { hasAlgorithm = true; });
    op->emitError() << "no ccl.program to export"
                    << (hasAlgorithm ? " (the input holds a chunk-level "
                                       "ccl.algorithm; run the default "
                                       "pipeline first)"
                                     : "");
    return failure();
  }
  progs[1].emitError() << "more than one ccl.program; an exported file "
                          "holds exactly one algorithm";
  return failure();
}

LogicalResult bindCollective(ProgramOp prog, msccl::Algo &algo,
                             const MscclExportOptions &options) {
  int in = (int)prog.getInputChunks(), out = (int)prog.getOutputChunks();
  if (prog.getCollective() != "custom") {
    if (!options.launchAs.empty() && options.launchAs != algo.coll) {
      prog.emitError() << "the program implements " << algo.coll
                       << "; only a custom collective can be launched as '"
                       << options.launchAs << "'";
      return failure();
    }
    return success();
  }
  std::string name = prog.getCollectiveName()
                         ? prog.getCollectiveName()->str()
                         : std::string("custom");
  bool reduces = false;
  for (const msccl::Gpu &g : algo.gpus)
    for (const msccl::Threadblock &tb : g.tbs)
      for (const msccl::Step &st : tb.steps)
        reduces |= st.type == msccl::StepType::RecvReduceSend ||
                   st.type == msccl::StepType::RecvReduceCopy ||
                   st.type == msccl::StepType::RecvReduceCopySend ||
                   st.type == msccl::StepType::Reduce;
  if (options.launchAs.empty()) {
    std::vector<std::string> fits =
        msccl::customLaunchColls(algo.ngpus, in, out, reduces);
    std::string list;
    for (const std::string &c : fits)
      list += (list.empty() ? "" : ", ") + c;
    prog.emitError() << "MSCCL has no 'coll' for the custom collective '"
                     << name
                     << "': name the NCCL call that launches it with "
                        "--msccl-coll (these fit its buffers: "
                     << (list.empty() ? std::string("none") : list) << ")";
    return failure();
  }
  if (prog.getInplace()) {
    prog.emitError() << "the in-place custom collective '" << name
                     << "' cannot be launched through an NCCL call: the "
                        "call's aliasing of its buffers would have to match";
    return failure();
  }
  auto launch = msccl::launchCustomAs(options.launchAs, algo.ngpus, in, out,
                                      reduces);
  if (!launch) {
    prog.emitError() << "cannot launch the custom collective '" << name
                     << "' as '" << options.launchAs
                     << "': " << launch.error().message;
    return failure();
  }
  algo.coll = launch->coll;
  algo.nchunksperloop = launch->nchunksperloop;
  return success();
}

FailureOr<msccl::Algo> programToMsccl(ProgramOp prog, StepOrigins *origins) {
  if (!prog.isAssigned()) {
    prog.emitError() << "the program's steps are not assigned to "
                        "threadblocks yet (run ccl-assign-threadblocks)";
    return failure();
  }
  msccl::Algo algo;
  algo.name = sanitizeName(prog.getSymName());
  algo.proto = prog.getProtocol().str();
  algo.coll = prog.getCollective().str();
  if (algo.coll == "custom" && prog.getCollectiveName())
    algo.coll = prog.getCollectiveName()->str();
  algo.nchunksperloop = (int)std::max<int64_t>(
      1, std::max(prog.getInputChunks(), prog.getOutputChunks()));
  algo.ngpus = (int)prog.getRanks();
  algo.inplace = prog.getInplace() ? 1 : 0;
  algo.outofplace = prog.getInplace() ? 0 : 1;
  algo.minBytes = prog.getMinBytes();
  algo.maxBytes = prog.getMaxBytes();
  int maxChannel = 0;

  SmallVector<GpuOp> gpus(prog.getBody().front().getOps<GpuOp>());
  std::sort(gpus.begin(), gpus.end(),
            [](GpuOp a, GpuOp b) { return a.getRank() < b.getRank(); });
  for (GpuOp gpuOp : gpus) {
    msccl::Gpu g;
    g.id = (int)gpuOp.getRank();
    g.iChunks = (int)gpuOp.getInputChunks();
    g.oChunks = (int)gpuOp.getOutputChunks();
    g.sChunks = (int)gpuOp.getScratchChunks();
    SmallVector<ThreadblockOp> tbs(
        gpuOp.getBody().front().getOps<ThreadblockOp>());
    std::sort(tbs.begin(), tbs.end(), [](ThreadblockOp a, ThreadblockOp b) {
      return a.getId() < b.getId();
    });
    // MSCCL index of every step: k dependencies cost k-1 nops first.
    std::vector<std::vector<int>> sIndex(tbs.size());
    std::set<std::pair<int64_t, int64_t>> waitedOn;
    for (size_t t = 0; t < tbs.size(); ++t) {
      int s = 0;
      for (auto step : tbs[t].getBody().front().getOps<StepOpInterface>()) {
        ArrayRef<int64_t> deps = step.getDepList();
        s += std::max<int>(0, (int)deps.size() / 2 - 1);
        sIndex[t].push_back(s++);
        for (size_t i = 0; i + 1 < deps.size(); i += 2)
          waitedOn.insert({deps[i], deps[i + 1]});
      }
    }
    // MSCCL stores the threadblock a step waits for as int8_t (ids up to
    // 127). Where a waited-for threadblock is numbered past that, number
    // the waited-for ones first (in their order), then the others: a rank
    // may then have up to 1,024 threadblocks of which 128 are waited for.
    // Programs within the limit keep their numbering.
    std::vector<int> newId;
    if (!waitedOn.empty() && waitedOn.rbegin()->first > msccl::kMaxDepTb) {
      std::vector<bool> waited(tbs.size(), false);
      for (const auto &w : waitedOn)
        if (w.first >= 0 && w.first < (int64_t)tbs.size())
          waited[w.first] = true;
      newId.assign(tbs.size(), -1);
      int next = 0;
      for (int pass = 0; pass < 2; ++pass)
        for (size_t t = 0; t < tbs.size(); ++t)
          if (waited[t] == (pass == 0))
            newId[t] = next++;
    }
    // Threadblock ids are their positions here (`sIndex` relies on it).
    auto mscclTb = [&](int64_t id) {
      return !newId.empty() && id >= 0 && id < (int64_t)newId.size()
                 ? newId[id]
                 : (int)id;
    };
    for (size_t t = 0; t < tbs.size(); ++t) {
      ThreadblockOp tbOp = tbs[t];
      msccl::Threadblock tb;
      tb.id = mscclTb(tbOp.getId());
      tb.send = (int)tbOp.getSendPeer();
      tb.recv = (int)tbOp.getRecvPeer();
      tb.chan = (int)tbOp.getChannel();
      maxChannel = std::max(maxChannel, tb.chan);
      int pos = 0;
      int prevReal = -1;
      for (auto step : tbOp.getBody().front().getOps<StepOpInterface>()) {
        ArrayRef<int64_t> deps = step.getDepList();
        auto depIndex = [&](size_t i) {
          int64_t dtb = deps[i], dpos = deps[i + 1];
          return dtb < (int64_t)sIndex.size() &&
                         dpos < (int64_t)sIndex[dtb].size()
                     ? sIndex[dtb][dpos]
                     : (int)dpos;
        };
        for (size_t i = 0; i + 2 < deps.size(); i += 2) {
          msccl::Step nop;
          nop.s = (int)tb.steps.size();
          nop.type = msccl::StepType::Nop;
          nop.depid = mscclTb(deps[i]);
          nop.deps = depIndex(i);
          nop.cnt = 0;
          tb.steps.push_back(nop);
          if (origins)
            (*origins)[{g.id, tb.id, nop.s}] = step;
        }
        msccl::Step st;
        st.s = (int)tb.steps.size();
        st.type = *msccl::parseStepType(step.getMscclType().str());
        if (auto src = step.getSrcRef()) {
          st.srcBuf = toBufferKind(src->buffer);
          st.srcOff = (int)src->offset;
        }
        if (auto dst = step.getDstRef()) {
          st.dstBuf = toBufferKind(dst->buffer);
          st.dstOff = (int)dst->offset;
        }
        st.cnt = (int)step.getChunkCount();
        if (deps.size() >= 2) {
          st.depid = mscclTb(deps[deps.size() - 2]);
          st.deps = depIndex(deps.size() - 2);
        }
        st.hasdep = waitedOn.count({tbOp.getId(), pos}) ? 1 : 0;
        // The runtime folds consecutive `re` steps with one destination
        // into one reduction with the last count; a flag keeps them apart.
        if (st.type == msccl::StepType::Reduce && prevReal >= 0) {
          msccl::Step &prev = tb.steps[prevReal];
          if (prev.type == msccl::StepType::Reduce && st.depid < 0 &&
              prev.dstBuf == st.dstBuf && prev.dstOff == st.dstOff &&
              prev.srcBuf == st.srcBuf && prev.cnt != st.cnt)
            prev.hasdep = 1;
        }
        prevReal = (int)tb.steps.size();
        tb.steps.push_back(st);
        if (origins)
          (*origins)[{g.id, tb.id, st.s}] = step;
        ++pos;
      }
      g.tbs.push_back(std::move(tb));
    }
    if (!newId.empty())
      std::sort(g.tbs.begin(), g.tbs.end(),
                [](const msccl::Threadblock &a, const msccl::Threadblock &b) {
                  return a.id < b.id;
                });
    algo.gpus.push_back(std::move(g));
  }
  algo.nchannels = maxChannel + 1;
  return algo;
}

void emitIssues(ArrayRef<msccl::ProgramIssue> issues,
                const StepOrigins &origins, Operation *fallback) {
  for (const msccl::ProgramIssue &issue : issues) {
    Operation *at = fallback;
    if (!issue.steps.empty()) {
      const msccl::StepRef &r = issue.steps.front();
      auto it = origins.find({r.rank, r.tb, r.step});
      if (it != origins.end())
        at = it->second;
    }
    at->emitError() << issue.message;
  }
}

FailureOr<msccl::Algo> exportMSCCLAlgo(Operation *op,
                                       const MscclExportOptions &options) {
  FailureOr<ProgramOp> prog = findProgram(op);
  if (failed(prog))
    return failure();
  StepOrigins origins;
  FailureOr<msccl::Algo> algo = programToMsccl(*prog, &origins);
  if (failed(algo) || failed(bindCollective(*prog, *algo, options)))
    return failure();
  std::vector<msccl::ProgramIssue> issues = msccl::validateAlgo(*algo);
  if (!issues.empty()) {
    emitIssues(issues, origins, *prog);
    return failure();
  }
  return algo;
}

LogicalResult exportMSCCLXml(Operation *op, llvm::raw_ostream &os,
                             const MscclExportOptions &options) {
  FailureOr<msccl::Algo> algo = exportMSCCLAlgo(op, options);
  if (failed(algo))
    return failure();
  os << msccl::printXml(*algo);
  return success();
}

} // namespace ccsynth::ccl
