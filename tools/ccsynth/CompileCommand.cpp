//===- CompileCommand.cpp - `ccsynth compile` -----------------------------===//
#include "Command.h"

#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Import/ScheduleText.h"
#include "ccsynth/Target/MSCCLXml.h"

#include <iostream>
#include <memory>

namespace ccsynth::cli {

namespace {

struct CompileCliOptions {
  std::string input;
  std::string output = "-";
  std::string target = "msccl-xml";
  std::vector<std::string> defines;
  CompileOptions compile;
  std::string minBytes, maxBytes;
  bool noFuse = false;
  bool noVerify = false;
};

Expected<long long> parseByteCount(const std::string &flag,
                                   const std::string &value) {
  if (value == "0")
    return 0LL;
  auto sizes = parseSizes(value);
  if (!sizes || sizes->size() != 1)
    return Error(flag + ": expected one byte count like 0, 4096, 1K or 64M");
  return (long long)sizes->front();
}

int runCompile(CompileCliOptions &o) {
  auto target = parseCompileTarget(o.target);
  if (!target)
    return fail(Error("unknown target '" + o.target +
                      "' (expected mlir, msccl-xml or mscclpp-json)"));
  CompileOptions &c = o.compile;
  c.target = *target;
  c.fuse = !o.noFuse;
  c.verify = !o.noVerify;
  if (!o.minBytes.empty()) {
    auto v = parseByteCount("--min-bytes", o.minBytes);
    if (!v)
      return fail(v.error());
    c.minBytes = *v;
  }
  if (!o.maxBytes.empty()) {
    auto v = parseByteCount("--max-bytes", o.maxBytes);
    if (!v)
      return fail(v.error());
    c.maxBytes = *v;
  }
  if (!c.mscclColl.empty() && c.target != CompileTarget::MscclXml)
    return fail(Error("--msccl-coll applies to --target msccl-xml only"));
  if (c.instances < 1 || c.pipeline < 1 || c.maxCount < 1 || c.maxTbSteps < 0 ||
      c.maxTbsPerChannel < 1 || c.maxChannels < 0)
    return fail(Error("--instances, --pipeline, --max-count and "
                      "--max-tbs-per-channel must be at least 1"));

  CompileResult result;
  int root = -1; // of a rooted collective, when the input says
  if (o.input.ends_with(".mlir")) {
    if (!o.defines.empty())
      return fail(Error("-D definitions apply only to .ccl programs",
                        SourceLoc{o.input}));
    auto text = readFile(o.input);
    if (!text)
      return fail(text.error());
    result = compileMlir(o.input, *text, c);
  } else {
    auto defs = parseDefines(o.defines);
    if (!defs)
      return fail(defs.error());
    auto sched = loadScheduleInput(o.input, *defs);
    if (!sched)
      return fail(sched.error());
    locateTransfers(*sched, o.input);
    root = sched->collective.root;
    result = compileSchedule(*sched, c);
  }
  if (!result.ok())
    return fail(result.failure.error, result.failure.verificationFailed
                                          ? kExitVerifyFailed
                                          : kExitError);
  if (Status s = writeOutput(o.output, *result.output); !s)
    return fail(s.error());
  if (c.target == CompileTarget::MscclXml)
    if (auto algo = msccl::parseXml(o.output, *result.output)) {
      msccl::SelectionReport sel = msccl::describeSelection(*algo, root);
      if (!sel.warning.empty())
        std::cerr << "ccsynth: warning: " << sel.warning << "\n";
      std::cerr << "ccsynth: note: " << sel.served << "\n";
    }
  if (!c.mscclColl.empty())
    std::cerr << "ccsynth: note: MSCCL will run this program for every "
              << c.mscclColl
              << " call on as many ranks whose size is in the algorithm's "
                 "minBytes..maxBytes; restrict that range with --min-bytes "
                 "and --max-bytes\n";
  return kExitOk;
}

} // namespace

void addCompileCommand(CLI::App &app, CommandContext &ctx) {
  auto opts = std::make_shared<CompileCliOptions>();
  CLI::App *cmd = app.add_subcommand(
      "compile",
      "Compile a schedule (JSON), a DSL program (.ccl) or a ccl dialect file "
      "(.mlir) through the default pipeline: verify, [instances, "
      "pipelining,] lower to per-threadblock steps, fuse, assign "
      "threadblocks and channels within the MSCCL runtime's limits, check "
      "for deadlocks, and export MSCCL XML, an MSCCL++ execution plan, or "
      "the final MLIR. Nothing is written when any check fails.");
  cmd->add_option("INPUT", opts->input,
                  "Schedule JSON, .ccl program or .mlir file")
      ->required();
  cmd->add_option("--target,-t", opts->target,
                  "mlir | msccl-xml | mscclpp-json (default msccl-xml)");
  cmd->add_option("-o,--output", opts->output, "Output file (- = stdout)");
  cmd->add_option("--instances", opts->compile.instances,
                  "Replicate the algorithm across this many channels");
  cmd->add_option("--pipeline", opts->compile.pipeline,
                  "Split chunks into this many pipelined parts");
  cmd->add_option("--protocol", opts->compile.protocol,
                  "Override the protocol: Simple, LL or LL128");
  cmd->add_option("--max-tb-steps", opts->compile.maxTbSteps,
                  "Most steps per threadblock (default: 64, or what fits "
                  "MSCCL++'s executor)");
  cmd->add_option("--max-tbs-per-channel", opts->compile.maxTbsPerChannel,
                  "Most threadblocks per channel (default 32)");
  cmd->add_option("--max-channels", opts->compile.maxChannels,
                  "Most channels (default: 32 for MSCCL XML, 64 for MSCCL++)");
  cmd->add_option("--max-tbs-per-rank", opts->compile.maxThreadblocksPerRank,
                  "MSCCL++ plans: most threadblocks per rank, all resident "
                  "at once (default: the SM count of the topology's GPU; 0 "
                  "= no limit)");
  cmd->add_option("--max-count", opts->compile.maxCount,
                  "Largest chunk count per step (default 71)");
  cmd->add_option("--min-bytes", opts->minBytes,
                  "Smallest buffer size the runtime selects this for");
  cmd->add_option("--max-bytes", opts->maxBytes,
                  "Largest buffer size (0 = unbounded)");
  cmd->add_option("--name", opts->compile.name, "Algorithm name");
  cmd->add_option("--msccl-coll", opts->compile.mscclColl,
                  "MSCCL XML of a custom collective: the NCCL call that "
                  "launches it (allgather, reducescatter, alltoall, "
                  "allreduce, broadcast or reduce). MSCCL then runs it for "
                  "every such call on as many ranks within "
                  "--min-bytes/--max-bytes");
  cmd->add_flag("--no-fuse", opts->noFuse, "Do not fuse steps");
  cmd->add_flag("--check-roundtrip", opts->compile.checkRoundTrip,
                "After writing MSCCL XML, read it back, check the runtime's "
                "rules, run it into a schedule and prove that schedule");
  cmd->add_flag("--no-verify", opts->noVerify,
                "Skip the collective proof (not recommended)");
  cmd->add_option("-D,--define", opts->defines,
                  "Set a .ccl program parameter, e.g. -D ranks=16");
  cmd->callback([opts, &ctx] { ctx.exitCode = runCompile(*opts); });
}

} // namespace ccsynth::cli
