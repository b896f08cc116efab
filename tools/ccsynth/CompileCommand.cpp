//===- CompileCommand.cpp - `ccsynth compile` -----------------------------===//
#include "Command.h"

#include "PluginBuild.h"
#include "StepPrediction.h"

#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Core/Plot.h"
#include "ccsynth/Core/Simulator.h"
#include "ccsynth/Core/TextLimits.h"
#include "ccsynth/Import/ScheduleText.h"
#include "ccsynth/Target/MSCCLXml.h"

#include <cstdio>
#include <iostream>
#include <memory>

namespace ccsynth::cli {

namespace {

struct CompileCliOptions {
  TopoProfileArgs profile;
  std::vector<std::string> inputs;
  std::string output = "-";
  std::string target = "msccl-xml";
  std::vector<std::string> defines;
  CompileOptions compile;
  std::string minBytes, maxBytes;
  bool noFuse = false;
  bool noVerify = false;
  bool noPredict = false;
  std::string predictTopo;
  std::string tileBytes;
  bool noRankSharing = false;
  std::string dtypes = "all", ops = "all";
  std::vector<std::string> cudaArchs;
  PluginBuildOptions plugin;
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

/// Prints, for a few sizes, the chunk-level prediction of `sched` and the
/// step-level prediction of the program `xml` that was written for it.
/// Predictions are notes: a topology that cannot be resolved skips them.
void printPredictions(const Schedule &sched, const std::string &file,
                      const std::string &xml, const std::string &topoArg) {
  // The chunk-level simulation of the largest schedules takes seconds per
  // size; `ccsynth simulate` gives both levels for them on request.
  constexpr size_t kMaxPredictedTransfers = 40000;
  if (sched.transfers.size() > kMaxPredictedTransfers) {
    std::cerr << "ccsynth: note: no prediction printed for "
              << sched.transfers.size()
              << " transfers; run `ccsynth simulate` (with --level steps for "
                 "the program)\n";
    return;
  }
  auto topo = topologyFor(sched, topoArg);
  if (!topo) {
    std::cerr << "ccsynth: note: no prediction: "
              << (sched.topology.empty() && topoArg.empty()
                      ? std::string("the schedule names no topology; pass "
                                    "--predict-topo")
                      : topo.error().message)
              << "\n";
    return;
  }
  auto algo = msccl::parseXml(file, xml);
  if (!algo)
    return;
  std::cerr << "ccsynth: note: predicted on " << topo->name
            << " (chunk level: the schedule's transfers; step level: this "
               "program, "
            << describeProgram(*algo) << "):\n";
  for (double bytes : {1024.0, 1048576.0, 1073741824.0}) {
    SimOptions so;
    so.bytes = bytes;
    auto chunk = simulate(sched, *topo, so);
    msccl::StepSimOptions ss;
    ss.bytes = bytes;
    ss.busBwFactor = sched.collective.busBwFactor();
    auto step = msccl::simulateSteps(*algo, *topo, ss);
    char line[200];
    std::snprintf(line, sizeof line, "ccsynth: note:   %6s",
                  formatBytes(bytes).c_str());
    std::cerr << line;
    if (chunk) {
      std::snprintf(line, sizeof line,
                    "  chunk level %10.2f us (busbw %7.2f GB/s)", chunk->timeUs,
                    chunk->busbwGBps);
      std::cerr << line;
    }
    if (step) {
      std::snprintf(line, sizeof line,
                    "  step level %10.2f us (busbw %7.2f GB/s)", step->timeUs,
                    step->busbwGBps);
      std::cerr << line;
    } else {
      std::cerr << "  step level: " << step.error().message;
    }
    std::cerr << "\n";
  }
}

/// Compiles one input with `c`; on failure prints the error and returns
/// the exit code. `root` receives a schedule's root (when given), `loaded`
/// the schedule (when the input is not .mlir).
int compileOne(const std::string &input, CompileCliOptions &o,
               const CompileOptions &c, std::string &out, int *root = nullptr,
               std::optional<Schedule> *loaded = nullptr) {
  CompileResult result;
  if (input.ends_with(".mlir")) {
    if (!o.defines.empty())
      return usage(Error("-D definitions apply only to .ccl programs",
                         SourceLoc{input}));
    auto text = readFile(input);
    if (!text)
      return fail(text.error());
    if (Status s = checkMlirNesting(input, *text); !s)
      return fail(s.error());
    result = compileMlir(input, *text, c);
  } else {
    auto defs = parseDefines(o.defines);
    if (!defs)
      return usage(defs.error());
    auto sched = loadScheduleInput(input, *defs);
    if (!sched)
      return fail(sched.error());
    if (c.verify) {
      std::optional<Topology> topo;
      VerifyResult proof;
      if (int rc = proveSchedule(*sched, input, "", false, topo, proof,
                                 &o.profile))
        return rc;
    }
    locateTransfers(*sched, input);
    if (root)
      *root = sched->collective.root;
    result = compileSchedule(*sched, c);
    if (loaded)
      *loaded = std::move(*sched);
  }
  if (!result.ok())
    return fail(result.failure.error, result.failure.verificationFailed
                                          ? kExitVerifyFailed
                                          : kExitError);
  out = std::move(*result.output);
  return kExitOk;
}

int runCompile(CompileCliOptions &o) {
  bool plugin = o.target == "plugin";
  auto target = plugin ? std::optional(CompileTarget::Cuda)
                       : parseCompileTarget(o.target);
  if (!target)
    return usage(Error("unknown target '" + o.target +
                       "' (expected mlir, msccl-xml, mscclpp-json, cuda or "
                       "plugin)"));
  if (o.inputs.size() > 1 && !plugin)
    return usage(Error("several inputs make one plugin: use --target plugin"));
  CompileOptions &c = o.compile;
  c.target = *target;
  c.tileBytes = plugin && o.plugin.backend == "host" ? 64 << 10 : 1 << 20;
  c.shareRanks = !o.noRankSharing;
  if (!o.tileBytes.empty()) {
    auto v = parseByteCount("--tile-bytes", o.tileBytes);
    if (!v)
      return usage(v.error());
    if (*v < 16 || *v % 16 != 0)
      return usage(Error("--tile-bytes must be a positive multiple of 16"));
    c.tileBytes = (unsigned long long)*v;
  }
  if (o.plugin.backend != "host" && o.plugin.backend != "cuda")
    return usage(Error("unknown backend '" + o.plugin.backend +
                       "' (expected host or cuda)"));
  auto dtypes = parseDtypeMask(o.dtypes);
  if (!dtypes)
    return usage(dtypes.error());
  auto ops = parseOpMask(o.ops);
  if (!ops)
    return usage(ops.error());
  o.plugin.dtypeMask = *dtypes;
  o.plugin.opMask = *ops;
  if (!o.cudaArchs.empty())
    o.plugin.cudaArchs = o.cudaArchs;
  c.fuse = !o.noFuse;
  c.verify = !o.noVerify;
  if (!o.minBytes.empty()) {
    auto v = parseByteCount("--min-bytes", o.minBytes);
    if (!v)
      return usage(v.error());
    c.minBytes = *v;
  }
  if (!o.maxBytes.empty()) {
    auto v = parseByteCount("--max-bytes", o.maxBytes);
    if (!v)
      return usage(v.error());
    c.maxBytes = *v;
  }
  if (!c.mscclColl.empty() && c.target != CompileTarget::MscclXml)
    return usage(Error("--msccl-coll applies to --target msccl-xml only"));
  if (c.instances < 1 || c.pipeline < 1 || c.maxCount < 1 || c.maxTbSteps < 0 ||
      c.maxTbsPerChannel < 1 || c.maxChannels < 0)
    return usage(Error("--instances, --pipeline, --max-count and "
                       "--max-tbs-per-channel must be at least 1"));

  // The same proof `ccsynth verify` gives, links included: every transfer
  // on a link of the topology its schedule or algorithm names.
  c.checkLinks = c.verify;
  if (Status s = checkOutputs({o.output}); !s)
    return fail(s.error());

  if (plugin) {
    if (o.output == "-")
      return usage(Error("--target plugin writes a shared library: name it "
                         "with -o"));
    std::vector<GeneratedSource> sources;
    for (const std::string &input : o.inputs) {
      std::string code;
      c.origin = input;
      if (int rc = compileOne(input, o, c, code); rc != kExitOk)
        return rc;
      auto name = generatedName(code);
      if (!name)
        return fail(name.error());
      sources.push_back({*name, std::move(code)});
    }
    std::cerr << "ccsynth: building the " << o.plugin.backend << " plugin "
              << o.output << " (" << sources.size() << " algorithm"
              << (sources.size() == 1 ? "" : "s") << ")\n";
    if (Status s = buildPlugin(sources, o.plugin, o.output); !s)
      return fail(s.error());
    return kExitOk;
  }
  std::string out;
  int root = -1; // of a rooted collective, when the input says
  c.origin = o.inputs.front();
  std::optional<Schedule> sched;
  if (int rc = compileOne(o.inputs.front(), o, c, out, &root, &sched);
      rc != kExitOk)
    return rc;
  if (Status s = writeOutput(o.output, out); !s)
    return fail(s.error());
  if (c.target == CompileTarget::MscclXml)
    if (auto algo = msccl::parseXml(o.output, out)) {
      msccl::SelectionReport sel = msccl::describeSelection(*algo, root);
      if (!sel.warning.empty())
        std::cerr << "ccsynth: warning: " << sel.warning << "\n";
      std::cerr << "ccsynth: note: " << sel.served << "\n";
    }
  if (c.target == CompileTarget::MscclXml && sched && !o.noPredict)
    printPredictions(*sched, o.output, out, o.predictTopo);
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
  cmd->add_option("INPUT", opts->inputs,
                  "Schedule JSON, .ccl program or .mlir file (several for "
                  "one plugin holding each)")
      ->required();
  cmd->add_option("--target,-t", opts->target,
                  "mlir | msccl-xml | mscclpp-json | cuda (generated code, "
                  "built by nvcc or the host C++ compiler) | plugin (a "
                  "shared library exporting the ccsynth plugin ABI); default "
                  "msccl-xml");
  cmd->add_option("--backend", opts->plugin.backend,
                  "--target plugin: host (threads as threadblocks, built by "
                  "the system C++ compiler) or cuda (nvcc); default host");
  cmd->add_option("--dtypes", opts->dtypes,
                  "--target plugin: data types built in, e.g. fp32,bf16 "
                  "(default all)");
  cmd->add_option("--ops", opts->ops,
                  "--target plugin: reduction operators built in, e.g. "
                  "sum,max (default all)");
  cmd->add_option("--tile-bytes", opts->tileBytes,
                  "Generated code: bytes per chunk slice per pass (default "
                  "1M; 64K for host plugins)");
  cmd->add_flag("--no-rank-sharing", opts->noRankSharing,
               "Generated code: one function per (rank, threadblock) even "
               "where symmetric ranks could share one (for comparison)");
  cmd->add_option("--cuda-arch", opts->cudaArchs,
                  "--backend cuda: SM architectures (default 80 and 90)");
  cmd->add_option("--cxx", opts->plugin.cxx,
                  "--backend host: the C++ compiler (default $CXX or c++)");
  cmd->add_option("--nvcc", opts->plugin.nvcc,
                  "--backend cuda: nvcc (default: on PATH, else "
                  "/usr/local/cuda/bin/nvcc)");
  cmd->add_option("--plugin-flag", opts->plugin.flags,
                  "--target plugin: an extra compiler flag (repeatable)");
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
  addTopoProfileOptions(cmd, opts->profile);
  cmd->add_flag("--no-predict", opts->noPredict,
                "MSCCL XML: do not print the chunk- and step-level "
                "predictions at 1K, 1M and 1G");
  cmd->add_option("--predict-topo", opts->predictTopo,
                  "MSCCL XML: the topology for the printed predictions "
                  "(default: the one the schedule names)");
  cmd->add_flag("--no-verify", opts->noVerify,
                "Skip the collective proof (not recommended)");
  cmd->add_option("-D,--define", opts->defines,
                  "Set a .ccl program parameter, e.g. -D ranks=16");
  cmd->callback([opts, &ctx] { ctx.exitCode = runCompile(*opts); });
}

} // namespace ccsynth::cli
