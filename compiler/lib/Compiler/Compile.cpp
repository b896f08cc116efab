//===- Compile.cpp - Schedule or .mlir -> pipeline -> exporter ------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements Compile.h. compileModule applies the metadata overrides, runs
// the collective verifier, then the default pipeline for the target, and
// exports: MSCCL XML (checked by a round trip through the importer and the
// core verifier), an MSCCL++ plan (retried with smaller threadblocks, merged
// threadblocks and coalesced transfers until it fits MSCCL++'s limits) or
// generated code. compileSchedule imports a schedule first; schedules with
// switch operations go through compileWithSwitches; compileMlir parses a
// .mlir file. See docs/compiler.md ("Default pipeline").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Compiler/Compile.h"

#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/Import/MSCCLToSchedule.h"
#include "ccsynth/Target/MSCCLXml.h"
#include "ccsynth/Target/SwitchLowering.h"

#include "ccsynth/Dialect/CCL/IR/CCLDialect.h"
#include "ccsynth/Dialect/CCL/Transforms/Passes.h"
#include "ccsynth/Import/ScheduleImport.h"
#include "ccsynth/Target/CodeGenExport.h"
#include "ccsynth/Target/MSCCLExport.h"
#include "ccsynth/Target/MSCCLPPPlan.h"
#include "ccsynth/Target/MSCCLPPPlanCheck.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

using namespace mlir;

namespace ccsynth {

std::optional<CompileTarget> parseCompileTarget(const std::string &name) {
  if (name == "mlir")
    return CompileTarget::Mlir;
  if (name == "msccl-xml" || name == "xml")
    return CompileTarget::MscclXml;
  if (name == "mscclpp-json" || name == "mscclpp")
    return CompileTarget::MscclppJson;
  if (name == "cuda")
    return CompileTarget::Cuda;
  return std::nullopt;
}

int residentThreadblocks(const std::string &topology, std::string *reason) {
  // One block of 1024 threads per SM: two would need at most 32 registers
  // per thread (64K registers per SM on all three), which an interpreter
  // kernel does not promise.
  struct Gpu {
    const char *prefix;
    int sms;
    const char *name;
  };
  static const Gpu gpus[] = {
      {"dgx-b200", 148, "B200"}, {"dgx-h100", 132, "H100 SXM"},
      {"ndv5", 132, "H100 SXM"}, {"dgx-a100", 108, "A100"},
      {"ndv4", 108, "A100"},     {"dgx2", 80, "V100"},
      {"dgx1", 80, "V100"},      {"ndv2", 80, "V100"}};
  for (const Gpu &g : gpus)
    if (topology.rfind(g.prefix, 0) == 0) {
      if (reason)
        *reason = std::to_string(g.sms) + " SMs of an " + g.name + " (" +
                  topology + "), one 1024-thread block per SM";
      return g.sms;
    }
  return 0;
}

namespace {

/// Channels, and threadblocks per channel, when MSCCL's limits of 32 each
/// do not apply (MSCCL++ plans whose threadblocks are merged).
constexpr int kUnboundChannels = 1024;

/// Counts what is written to it.
class ByteCounter : public llvm::raw_ostream {
public:
  size_t bytes() const { return count; }

private:
  size_t count = 0;
  void write_impl(const char *, size_t size) override { count += size; }
  uint64_t current_pos() const override { return count; }
};

/// Collects every diagnostic of a context as located core-model Errors.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &d) {
          record(d);
          return success();
        }) {}

  std::vector<Error> errors;

  void clear() { errors.clear(); }

  CompileFailure failure(bool verification = false) const {
    CompileFailure f;
    f.verificationFailed = verification;
    if (errors.empty()) {
      f.error = Error("compilation failed");
      return f;
    }
    f.error = errors.front();
    for (size_t i = 1; i < errors.size(); ++i) {
      if (!f.error.notes.empty())
        f.error.notes += '\n';
      f.error.notes += errors[i].format();
    }
    return f;
  }

private:
  ScopedDiagnosticHandler handler;

  static SourceLoc toSourceLoc(Location loc) {
    if (auto flc = loc->findInstanceOf<FileLineColLoc>())
      return SourceLoc{flc.getFilename().str(), (int)flc.getLine(),
                       (int)flc.getColumn()};
    return {};
  }
  void record(Diagnostic &d) {
    if (d.getSeverity() != DiagnosticSeverity::Error)
      return;
    Error e(d.str(), toSourceLoc(d.getLocation()));
    for (Diagnostic &note : d.getNotes()) {
      SourceLoc nl = toSourceLoc(note.getLocation());
      std::string where = nl.known() ? nl.file + ":" + std::to_string(nl.line) +
                                           ":" + std::to_string(nl.col) + ": "
                                     : "";
      e.notes += (e.notes.empty() ? "" : "\n") + where + "note: " + note.str();
    }
    errors.push_back(std::move(e));
  }
};

/// Applies the metadata overrides to every algorithm and program.
LogicalResult applyOverrides(ModuleOp module, const CompileOptions &o) {
  Builder b(module.getContext());
  bool ok = true;
  module.walk([&](Operation *op) {
    if (!isa<ccl::AlgorithmOp, ccl::ProgramOp>(op))
      return;
    if (!o.protocol.empty()) {
      auto proto = ccl::symbolizeProtocol(o.protocol);
      if (!proto) {
        op->emitError() << "unknown protocol '" << o.protocol
                        << "' (expected Simple, LL or LL128)";
        ok = false;
        return;
      }
      op->setAttr("protocol", b.getStringAttr(o.protocol));
    }
    if (o.minBytes >= 0)
      op->setAttr("min_bytes", b.getI64IntegerAttr(o.minBytes));
    if (o.maxBytes >= 0)
      op->setAttr("max_bytes", b.getI64IntegerAttr(o.maxBytes));
    if (!o.name.empty())
      op->setAttr(SymbolTable::getSymbolAttrName(), b.getStringAttr(o.name));
  });
  return success(ok);
}

/// XML -> runtime rules -> bounded-buffer deadlock check -> schedule ->
/// core verifier.
std::optional<Error> checkRoundTrip(ModuleOp module, const std::string &xml,
                                    bool boundedBuffers) {
  FailureOr<ccl::ProgramOp> prog = ccl::findProgram(module);
  if (failed(prog))
    return Error("round trip: no program");
  auto col = prog->buildCollective();
  if (!col)
    return col.error();
  std::string name = prog->getSymName().str() + ".xml";
  auto algo = msccl::parseXml(name, xml);
  if (!algo)
    return Error("round trip: " + algo.error().format());
  std::vector<msccl::ProgramIssue> issues = msccl::validateAlgo(*algo);
  if (!issues.empty())
    return Error("round trip: " + issues.front().message);
  if (boundedBuffers)
    issues = msccl::checkDeadlock(*algo, msccl::matchMessages(*algo),
                                  msccl::BufferModel::forProtocol(algo->proto));
  if (!issues.empty())
    return Error("round trip: " + issues.front().message);
  auto back = mscclToSchedule(*algo, *col);
  if (!back)
    return Error("round trip: " + back.error().message);
  VerifyResult proof = verifySchedule(*back);
  if (!proof.ok())
    return Error("round trip: the schedule recovered from the XML is wrong: " +
                 proof.issues.front().message);
  return std::nullopt;
}

/// The connection (ordered pair of ranks) with the most transfers in the
/// module's algorithms. Lowering gives each transfer between two ranks at
/// least one message, and instances and pipelining multiply them.
struct BusiestConnection {
  int64_t messages = 0;
  ccl::TransferOp first; // its first transfer
};

BusiestConnection busiestConnection(ModuleOp module, int64_t multiplier) {
  BusiestConnection best;
  llvm::DenseMap<std::pair<int64_t, int64_t>, BusiestConnection> byConn;
  module.walk([&](ccl::TransferOp t) {
    if (t.getSrcRank() == t.getDstRank())
      return;
    auto [it, fresh] = byConn.try_emplace({t.getSrcRank(), t.getDstRank()},
                                          BusiestConnection{0, t});
    it->second.messages += multiplier;
    if (it->second.messages > best.messages)
      best = it->second;
  });
  return best;
}

/// Compiles `module`, which it takes over: the attempts run on clones of it,
/// and its operations are freed once none is needed (before a ccl module is
/// printed), so the caller must not use it afterwards.
CompileResult compileModule(MLIRContext &ctx, DiagnosticCollector &diags,
                            ModuleOp module, const CompileOptions &o,
                            const msccl::SwitchLowering *switches = nullptr) {
  CompileResult result;
  if (failed(applyOverrides(module, o)) || failed(mlir::verify(module))) {
    result.failure = diags.failure();
    return result;
  }
  if (o.verify) {
    PassManager pm(&ctx);
    ccl::VerifyCollectivePassOptions vo;
    vo.checkLinks = o.checkLinks;
    pm.addPass(ccl::createVerifyCollectivePass(vo));
    if (failed(pm.run(module))) {
      result.failure = diags.failure(/*verification=*/true);
      return result;
    }
  }

  // MSCCL++ allows 64 operations per threadblock and a step costs several;
  // try smaller threadblocks until the plan fits. A rank over the
  // threadblock budget gets its threadblocks merged; when no merge fits,
  // try again for merging: every local step in a threadblock of its own
  // (it can join the threadblock of the receive it waits for), and
  // without MSCCL's channel limits, which MSCCL++ does not have (small
  // threadblocks spread a connection's messages over many channels).
  bool plan = o.target == CompileTarget::MscclppJson;
  struct Attempt {
    int steps;
    bool forMerging;
    bool coalesce = false;
    /// Without the freedoms that make programs faster but can break a
    /// runtime limit: fusion's send-first order (a send ahead of a receive
    /// can wait for room that only a later receive frees) and local steps
    /// spread over one threadblock per instance (more threadblocks: past
    /// MSCCL's 127 dependency ids). Every attempt is tried with them first,
    /// then without.
    bool conservative = false;
  };
  std::vector<int> budgets;
  if (o.maxTbSteps > 0)
    budgets = {o.maxTbSteps};
  else if (plan)
    budgets = {16, 8, 4, 2, 1};
  else if (o.target == CompileTarget::Cuda)
    budgets = {1024}; // generated code has no step table to fit in
  else
    budgets = {64};
  std::vector<Attempt> attempts;
  for (int b : budgets)
    attempts.push_back({b, false});
  if (plan)
    for (int b : budgets)
      attempts.push_back({b, true});
  // Joining transfers that travel together trades the parallelism of
  // separate steps for fewer of them, so it is tried only when the
  // program as scheduled does not fit (the ring AllToAll: thousands of
  // one-chunk steps per connection overflow every channel).
  size_t plainAttempts = attempts.size();
  if (o.coalesce)
    for (size_t i = 0; i < plainAttempts; ++i)
      attempts.push_back(
          {attempts[i].steps, attempts[i].forMerging, /*coalesce=*/true});
  {
    std::vector<Attempt> twins;
    for (Attempt a : attempts) {
      twins.push_back(a);
      a.conservative = true;
      twins.push_back(a);
    }
    attempts = std::move(twins);
    plainAttempts *= 2;
  }
  // What the attempts without coalescing report; a coalesced attempt
  // either succeeds or leaves this as the answer.
  std::optional<CompileFailure> plainFailure;
  auto toCoalesced = [&](size_t &attempt) {
    if (attempt < plainAttempts)
      attempt = plainAttempts - 1; // the loop's ++ starts them
  };
  // A threadblock serves one connection per channel, so a connection
  // carries at most channels x steps-per-threadblock messages. A program
  // over that cannot fit without coalescing: say so at once rather than
  // after lowering, fusing and placing it (most of a large compile).
  BusiestConnection busiest = busiestConnection(
      module, (int64_t)std::max(1, o.instances) * std::max(1, o.pipeline));
  // Generated code is not bound to NCCL's 32 channels.
  bool generated = o.target == CompileTarget::Cuda;
  int channels = o.maxChannels > 0 ? o.maxChannels : plan || generated ? 64
                                                                       : 32;
  for (size_t attempt = 0; attempt < attempts.size(); ++attempt) {
    diags.clear();
    if (!attempts[attempt].coalesce && !attempts[attempt].forMerging &&
        busiest.first) {
      int64_t capacity = (int64_t)channels * attempts[attempt].steps;
      if (busiest.messages > capacity) {
        if (attempt == 0) {
          busiest.first->emitError()
              << "rank " << busiest.first.getSrcRank() << " sends "
              << busiest.messages << " messages to rank "
              << busiest.first.getDstRank()
              << ", but a connection has one threadblock per channel: at "
                 "most "
              << channels << " channels (max-channels) x "
              << attempts[attempt].steps
              << " steps per threadblock = " << capacity << " messages";
          plainFailure = diags.failure();
          toCoalesced(attempt);
        }
        continue;
      }
    }
    OwningOpRef<ModuleOp> work(cast<ModuleOp>(module->clone()));
    ccl::PipelineOptions p;
    // The input was proven above; re-prove only what the pipeline refines.
    p.verify = o.verify && (o.instances != 1 || o.pipeline != 1);
    p.instances = o.instances;
    p.splitPhases = o.splitPhases;
    p.pipelineParts = o.pipeline;
    p.maxCount = o.maxCount;
    p.fuse = o.fuse;
    p.fuseForward = o.fuseForward;
    p.sendFirst = !attempts[attempt].conservative;
    p.spreadLocal = !attempts[attempt].conservative;
    p.localTbs = o.localTbs;
    p.coalesce = attempts[attempt].coalesce;
    p.maxSteps = attempts[attempt].steps;
    p.maxTbsPerChannel = o.maxTbsPerChannel;
    p.maxChannels = channels;
    if (attempts[attempt].forMerging) {
      p.maxLocalSteps = 1;
      p.maxTbsPerChannel = std::max(p.maxTbsPerChannel, kUnboundChannels);
      if (o.maxChannels <= 0)
        p.maxChannels = kUnboundChannels;
    }
    p.countDepNops = !plan;
    // MSCCL++ and generated code do not run on NCCL's bounded connection
    // buffers: every message has a landing place of its own.
    p.boundedBuffers =
        o.boundedBuffers && !plan && o.target != CompileTarget::Cuda;
    PassManager pm(&ctx);
    pm.enableVerifier(o.verifyPasses);
    ccl::buildDefaultPipeline(pm, p);
    if (failed(pm.run(*work))) {
      if (!attempts[attempt].conservative)
        continue; // its conservative twin is next
      // A retry whose threadblocks the assignment cannot place adds
      // nothing to the failure that asked for it (attempt 1 is the first
      // attempt's conservative twin).
      if (attempt == 1) {
        plainFailure = diags.failure();
        toCoalesced(attempt);
      }
      continue;
    }
    std::string out;
    llvm::raw_string_ostream os(out);
    LogicalResult exported = success();
    bool retryable = false; // fewer steps per threadblock could help
    switch (o.target) {
    case CompileTarget::Mlir:
      // One algorithm per file, as every exporter writes it: the next
      // compile would refuse more.
      if (failed(ccl::findProgram(*work))) {
        result.failure = diags.failure();
        return result;
      }
      // Nothing after this can fail, so no later attempt needs the input:
      // its operations go before the output is made. The output is printed
      // once to count its bytes, then into a string of that size: no copy
      // of a large module's text while the string doubles.
      // The ccl dialect defines no aliases: the printer is not asked to
      // look for them (a table of every attribute of the module), and the
      // module prints as its text has it.
      module.getBody()->clear();
      {
        ByteCounter counter;
        work->print(counter, OpPrintingFlags().useLocalScope());
        counter.flush();
        out.reserve(counter.bytes() + 1);
      }
      work->print(os, OpPrintingFlags().useLocalScope());
      os << '\n'; // as the printer ends a module it prints whole
      break;
    case CompileTarget::MscclXml:
      if (o.programOnly) {
        FailureOr<msccl::Algo> program =
            ccl::exportMSCCLAlgo(*work, {o.mscclColl});
        exported = failure(failed(program));
        if (succeeded(program))
          result.program = std::move(*program);
      } else {
        exported = ccl::exportMSCCLXml(*work, os, {o.mscclColl});
      }
      break;
    case CompileTarget::MscclppJson: {
      ccl::MscclppExportOptions po;
      po.maxThreadblocksPerRank = o.maxThreadblocksPerRank;
      po.budgetReason = "--max-tbs-per-rank";
      FailureOr<ccl::ProgramOp> prog = ccl::findProgram(*work);
      StringAttr topo;
      if (succeeded(prog))
        topo = (*prog)->getAttrOfType<StringAttr>("topology");
      if (o.maxThreadblocksPerRank < 0) {
        po.maxThreadblocksPerRank = 0;
        if (topo)
          po.maxThreadblocksPerRank =
              residentThreadblocks(topo.str(), &po.budgetReason);
      }
      // Which ranks share a node decides memory or port channels.
      FailureOr<std::vector<int>> nodes = ccl::programNodes(*work);
      if (failed(nodes)) {
        result.failure = diags.failure();
        return result;
      }
      po.nodeOfRank = *nodes;
      po.fewerStepsMayFit = &retryable;
      po.switches = switches;
      po.switchRefine = std::max(1, o.instances);
      msccl::Packing packing;
      po.packing = &packing;
      exported = ccl::exportMSCCLPPPlan(*work, os, po);
      if (succeeded(exported) && packing.merges()) {
        FailureOr<msccl::Algo> program = ccl::programToMsccl(*prog);
        if (succeeded(program))
          result.packing = ThreadblockPacking{
              po.maxThreadblocksPerRank, po.budgetReason,
              topo ? topo.str() : std::string(), *program, std::move(packing)};
      }
      // With switch threadblocks only the plan is the whole collective.
      if (succeeded(exported) && (o.verify || switches)) {
        // Run the plan as the executor would and prove its outputs.
        os.flush();
        auto col = (*prog).buildCollective();
        if (col) {
          msccl::PlanCheckOptions co;
          co.nodeOfRank = po.nodeOfRank;
          co.maxThreadblocksPerRank = po.maxThreadblocksPerRank;
          auto checked = msccl::checkMscclppPlan("<plan>", out, *col, co);
          if (!checked) {
            result.failure.error =
                Error("internal error: the MSCCL++ plan written for this "
                      "program does not run correctly: " +
                      checked.error().message);
            return result;
          }
        }
      }
      break;
    }
    case CompileTarget::Cuda: {
      msccl::Algo program;
      exported = ccl::exportGeneratedCode(*work, os,
                                          {o.tileBytes, o.origin, o.shareRanks,
                                           o.kernelKnobs, switches,
                                           std::max(1, o.instances), &program,
                                           o.moreByteRanges, o.programOnly});
      if (succeeded(exported))
        result.program = std::move(program);
      break;
    }
    }
    if (succeeded(exported)) {
      os.flush();
      if (o.checkRoundTrip && o.target == CompileTarget::MscclXml) {
        if (std::optional<Error> e =
                checkRoundTrip(*work, out, o.boundedBuffers)) {
          result.failure.error = *e;
          return result;
        }
      }
      result.output = std::move(out);
      if (attempts[attempt].coalesce) {
        result.coalesced = true;
        if (plainFailure) {
          std::string why = plainFailure->error.format();
          result.uncoalesced = why.substr(0, why.find('\n'));
        }
      }
      return result;
    }
    if (!attempts[attempt].conservative)
      continue; // its conservative twin is next
    bool coalesced = attempts[attempt].coalesce;
    if (!coalesced)
      plainFailure = diags.failure();
    if (!retryable) {
      if (coalesced)
        break;
      toCoalesced(attempt);
    }
  }
  if (plainFailure)
    result.failure = *plainFailure;
  return result;
}

} // namespace

namespace {

/// The file a schedule's transfers came from, for diagnostics.
std::string fileOf(const Schedule &schedule) {
  return schedule.transferLocs.empty()
             ? std::string("<schedule>")
             : schedule.transferLocs.front().file.str();
}

/// Imports `schedule` (its transfers located in `file`) into a context of
/// its own and compiles it; `switches`: switch threadblocks the generated
/// code runs beside its program.
CompileResult compileImported(const Schedule &schedule, const std::string &file,
                              const CompileOptions &options,
                              const msccl::SwitchLowering *switches = nullptr) {
  MLIRContext ctx;
  ctx.loadDialect<ccl::CCLDialect>();
  ctx.printOpOnDiagnostic(false);
  DiagnosticCollector diags(&ctx);
  Location loc = FileLineColLoc::get(&ctx, file, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  ccl::importSchedule(*module, schedule, loc);
  return compileModule(ctx, diags, *module, options, switches);
}

/// Generated code or an MSCCL++ plan for a schedule with switch
/// operations: they become switch threadblocks (SwitchLowering.h), the
/// point-to-point transfers go through the ccl pipeline as any schedule's,
/// and the output runs both.
CompileResult compileWithSwitches(const Schedule &schedule,
                                  const CompileOptions &options) {
  CompileResult result;
  auto lowered = msccl::lowerSwitchTransfers(
      schedule, options.switchLanes > 0 ? options.switchLanes
                                        : msccl::kDefaultSwitchLanes);
  if (!lowered) {
    result.failure.error = lowered.error();
    return result;
  }
  if (options.target == CompileTarget::MscclppJson)
    if (auto ops = msccl::planSwitchOps(*lowered); !ops) {
      result.failure.error = ops.error();
      return result;
    }
  if (options.pipeline != 1) {
    std::string why = "a schedule with switch operations compiles with one "
                      "pipeline part (got --pipeline ";
    why += std::to_string(options.pipeline);
    why += "): its switch operations are not cut into parts";
    result.failure.error = Error(why);
    return result;
  }
  if (options.verify) {
    // The point-to-point part alone is not the collective: the whole
    // schedule is proven here, the part compiled unproven.
    VerifyResult proof = verifySchedule(schedule);
    if (!proof.ok()) {
      const VerifyIssue &first = proof.issues.front();
      SourceLoc at;
      if (first.transfer >= 0 &&
          first.transfer < (int)schedule.transferLocs.size())
        at = schedule.transferLocs[first.transfer];
      result.failure.error = Error(first.message, at);
      result.failure.verificationFailed = true;
      return result;
    }
  }
  CompileOptions o = options;
  o.verify = false;
  if (o.splitPhases) {
    // The point-to-point part alone does not know which of its values are
    // finished (the switch reduced them): the phases come from the whole
    // schedule, as channel hints on the part, which keeps its transfers in
    // the schedule's order.
    std::vector<int> phase =
        reductionPhases(schedule.collective, schedule.transfers);
    if (!phase.empty()) {
      auto &part = lowered->pointToPoint.transfers;
      size_t k = 0;
      for (size_t t = 0; t < schedule.transfers.size(); ++t) {
        if (isSwitchOp(schedule.transfers[t].op))
          continue;
        Transfer &tr = part[k++];
        tr.channel = 2 * std::max(0, tr.channel) + phase[t];
      }
    }
    o.splitPhases = false;
  }
  return compileImported(lowered->pointToPoint, fileOf(schedule), o, &*lowered);
}

} // namespace

Status refuseSwitchTransfers(const Schedule &schedule, CompileTarget target) {
  switch (target) {
  case CompileTarget::MscclXml:
    return pointToPointOnly(schedule, "MSCCL XML has no switch operations");
  case CompileTarget::MscclppJson: {
    auto lowered = msccl::lowerSwitchTransfers(schedule);
    if (!lowered)
      return lowered.error();
    if (auto ops = msccl::planSwitchOps(*lowered); !ops)
      return ops.error();
    return Status::success();
  }
  case CompileTarget::Cuda:
    if (auto lowered = msccl::lowerSwitchTransfers(schedule); !lowered)
      return lowered.error();
    return Status::success();
  case CompileTarget::Mlir:
    break;
  }
  return pointToPointOnly(schedule, "the ccl dialect does not express them");
}

CompileResult compileSchedule(const Schedule &schedule,
                              const CompileOptions &options) {
  if ((options.target == CompileTarget::Cuda ||
       options.target == CompileTarget::MscclppJson) &&
      schedule.usesSwitches())
    return compileWithSwitches(schedule, options);
  if (Status s = refuseSwitchTransfers(schedule, options.target); !s) {
    CompileResult refused;
    refused.failure.error = s.error();
    return refused;
  }
  return compileImported(schedule, fileOf(schedule), options);
}

namespace {

/// Parses and compiles `text`; frees it once parsed when `release` is set.
CompileResult compileMlirText(const std::string &file, const std::string &text,
                              std::string *release,
                              const CompileOptions &options) {
  MLIRContext ctx;
  ctx.loadDialect<ccl::CCLDialect>();
  ctx.printOpOnDiagnostic(false);
  DiagnosticCollector diags(&ctx);
  ParserConfig config(&ctx);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, config, file);
  bool empty = text.find_first_not_of(" \t\r\n") == std::string::npos;
  if (release)
    std::string().swap(*release);
  if (!module) {
    CompileResult r;
    r.failure = diags.failure();
    return r;
  }
  // An empty file (or a module without a ccl op) would compile to an
  // empty module or nothing at all.
  bool hasProgram = false;
  module->walk([&](Operation *op) {
    if (isa<ccl::AlgorithmOp, ccl::ProgramOp>(op)) {
      hasProgram = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (!hasProgram) {
    CompileResult r;
    r.failure.error = Error(std::string("no ccl program in the file") +
                                (empty ? " (it is empty)" : "") +
                                ": expected a ccl.algorithm (a chunk-level "
                                "schedule) or a ccl.program (per-threadblock "
                                "steps)",
                            SourceLoc{file});
    return r;
  }
  return compileModule(ctx, diags, *module, options);
}

} // namespace

CompileResult compileMlir(const std::string &file, const std::string &text,
                          const CompileOptions &options) {
  return compileMlirText(file, text, nullptr, options);
}

CompileResult compileMlir(const std::string &file, std::string &&text,
                          const CompileOptions &options) {
  return compileMlirText(file, text, &text, options);
}

} // namespace ccsynth
