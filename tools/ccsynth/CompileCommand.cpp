//===- CompileCommand.cpp - `ccsynth compile` -----------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `ccsynth compile`: its options, and runCompile, which loads the input,
// compiles it for the chosen target (MSCCL XML, an MSCCL algorithm
// directory, an MSCCL++ plan, generated code or a plugin), runs the tuned
// compile where the machine is known and the user left the choice open
// (tuneGenerated, tunedMscclDir), proves the schedule as `ccsynth verify`
// would, and writes the outputs. It prints chunk- and step-level
// predictions and how an MSCCL++ plan's threadblocks were merged.
// Sections: options, reports, one compile, the tuned compiles, the MSCCL
// directory, runCompile, the command's options.
// See docs/compiler.md ("The tuned compile", "MSCCL algorithm directories").
//
//===----------------------------------------------------------------------===//
#include "Command.h"

#include "PluginBuild.h"
#include "ccsynth/Perf/StepPrediction.h"
#include "ccsynth/Tuning/TunedCompile.h"
#include "ccsynth/Tuning/Tuning.h"

#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Analysis/Plot.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Support/TextLimits.h"
#include "ccsynth/Import/ScheduleText.h"
#include "ccsynth/Target/MSCCLDir.h"
#include "ccsynth/Target/MSCCLXml.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

namespace ccsynth::cli {

using namespace ccsynth::tuning;

namespace {

struct CompileCliOptions {
  TopoProfileArgs profile;
  std::vector<std::string> inputs;
  std::string output = "-";
  std::string target = "msccl-xml";
  std::vector<std::string> defines;
  CompileOptions compile;
  std::string minBytes, maxBytes;
  std::string split;
  bool noFuse = false;
  bool noFuseForward = false;
  int localTbs = 1;
  bool splitPhases = false;
  bool noCoalesce = false;
  bool noVerify = false;
  bool noPredict = false;
  bool noTune = false;
  bool noFallback = false;
  /// Whether --instances / --protocol were given (they fix that choice).
  bool explicitInstances = false;
  bool explicitProtocol = false;
  std::string predictTopo;
  std::string tileBytes;
  bool noRankSharing = false;
  std::string dtypes = "all", ops = "all";
  std::vector<std::string> cudaArchs;
  /// --cuda-threads / --cuda-loads (0: chosen by the tuned compile, else
  /// the architecture's default).
  int cudaThreads = 0;
  int cudaLoads = 0;
  /// --switch-lanes (0: chosen by the tuned compile).
  int switchLanes = 0;
  PluginBuildOptions plugin;
};

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
            << perf::describeProgram(*algo) << "):\n";
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

/// Says how an MSCCL++ plan's threadblocks were merged to fit the budget
/// and, unless `predict` is off, what the step-level model predicts for the
/// program before and after merging (as MSCCL++ runs it: puts land in
/// buffers of their own, no MSCCL channel limits, each chunk moved whole).
void printPackingReport(const ThreadblockPacking &p, bool predict,
                        const std::string &topoArg, const std::string &input,
                        double busBwFactor) {
  int merged = 0, ranks = (int)p.packing.ranks.size();
  int before = 0, after = 0;
  for (const msccl::Gpu &g : p.program.gpus) {
    int n = (int)g.tbs.size(), m = p.packing.threadblocks(g.id);
    merged += m < n;
    before = std::max(before, n);
    after = std::max(after, m);
  }
  std::cerr << "ccsynth: note: merged threadblocks on " << merged << " of "
            << ranks << " ranks to fit " << p.budget
            << " per rank resident at once (" << p.reason << "): at most "
            << before << " per rank before, " << after << " after\n";
  if (!predict)
    return;
  // The topology the program names is opened as topologyFor opens a
  // schedule's: by built-in name or under the input's directory.
  std::string name = topoArg;
  if (name.empty() && !p.topology.empty()) {
    auto path = namedTopologyPath(
        p.topology, std::filesystem::path(input).parent_path().string());
    if (!path) {
      std::cerr << "ccsynth: note: no prediction: " << path.error().message
                << "\n";
      return;
    }
    name = *path;
  }
  if (name.empty())
    return;
  auto topo = loadTopology(name);
  if (!topo) {
    std::cerr << "ccsynth: note: no prediction: " << topo.error().message
              << "\n";
    return;
  }
  std::cerr << "ccsynth: note: step-level prediction on " << topo->name
            << ", before and after merging:\n";
  for (double bytes : {1024.0, 1048576.0, 1073741824.0}) {
    msccl::StepSimOptions ss;
    ss.bytes = bytes;
    ss.busBwFactor = busBwFactor;
    ss.boundedBuffers = false;
    ss.runtimeRules = false;
    ss.wholeChunks = true;
    auto unmerged = msccl::simulateSteps(p.program, *topo, ss);
    ss.packing = &p.packing;
    auto packed = msccl::simulateSteps(p.program, *topo, ss);
    char line[240];
    std::snprintf(line, sizeof line, "ccsynth: note:   %6s",
                  formatBytes(bytes).c_str());
    std::cerr << line;
    for (auto *r : {&unmerged, &packed}) {
      if (*r)
        std::snprintf(line, sizeof line, "  %s %10.2f us (busbw %7.2f GB/s)",
                      r == &unmerged ? "before" : "after", (*r)->timeUs,
                      (*r)->busbwGBps);
      else
        std::snprintf(line, sizeof line, "  %s: %s",
                      r == &unmerged ? "before" : "after",
                      r->error().message.c_str());
      std::cerr << line;
    }
    std::cerr << "\n";
  }
}

/// Programs named with a '/' are files (a bare name is looked up on PATH).
std::string programPath(const std::string &program) {
  return program.find('/') != std::string::npos ? program : std::string();
}

/// The outputs a compile writes: -o, a file or (msccl-dir) a directory.
void compileOutputs(const CompileCliOptions &o, std::vector<PathArg> &files,
                    std::vector<PathArg> &dirs) {
  (o.target == "msccl-dir" ? dirs : files).push_back({"-o", o.output});
}

/// The tuned compile of generated code (defined below); `loadsCap` bounds
/// the loads in flight it weighs (0: none). Non-zero (after printing why)
/// when nothing is to be written.
int tuneGenerated(CompileCliOptions &o, const CompileOptions &c, int loadsCap,
                  Schedule &sched, std::string &out);

/// The most loads in flight a generated kernel of `sched` keeps by default
/// (0: no cap; switchLoadsCap). --cuda-loads overrides it.
int defaultLoadsCap(const Schedule &sched, const CompileCliOptions &o) {
  return o.cudaLoads ? 0 : switchLoadsCap(sched);
}

/// Without --cuda-arch, generated code for a machine whose GPUs are newer
/// than every architecture built (B200 and GB200: sm_100) is built for the
/// machine's too: kernels take their knobs from the entry of the
/// architecture they were compiled for, so only code compiled for it runs
/// the knobs the tuned compile chooses for that GPU. A CUDA plugin adds it
/// where nvcc builds it; elsewhere the newest architecture's PTX runs
/// there, and a note says so.
void addMachineArch(const Schedule &sched, CompileCliOptions &o,
                    CompileOptions &c) {
  auto topo = topologyFor(sched, o.predictTopo);
  if (!topo)
    return;
  int arch = topo->stepModel.smArch, newest = 0;
  for (const codegen::KernelKnob &k : c.kernelKnobs)
    newest = std::max(newest, k.arch);
  if (newest == 0 || arch <= newest)
    return;
  std::string name = std::to_string(arch);
  bool plugin = o.target == "plugin" && o.plugin.backend == "cuda";
  bool built = std::find(o.plugin.cudaArchs.begin(), o.plugin.cudaArchs.end(),
                         name) != o.plugin.cudaArchs.end();
  if (plugin && !built && !nvccBuildsArch(o.plugin.nvcc, name)) {
    std::cerr << "ccsynth: note: "
              << (o.plugin.nvcc.empty() ? std::string("nvcc") : o.plugin.nvcc)
              << " does not build sm_" << name << " (the GPUs of " << topo->name
              << "): the plugin carries sm_" << newest
              << " code and its PTX, which the driver compiles for them, "
                 "with sm_"
              << newest << "'s kernel knobs\n";
    return;
  }
  codegen::KernelKnob k = codegen::defaultKernelKnob(arch);
  if (o.cudaThreads)
    k.threads = o.cudaThreads;
  if (o.cudaLoads)
    k.loads = o.cudaLoads;
  c.kernelKnobs.push_back(k);
  if (plugin && !built)
    o.plugin.cudaArchs.push_back(name);
}

/// Compiles one input with `c`; on failure prints the error and returns
/// the exit code. `root` receives a schedule's root (when given), `loaded`
/// the schedule (when the input is not .mlir), `packing` how an MSCCL++
/// plan's threadblocks were merged (when they were).
int compileOne(const std::string &input, CompileCliOptions &o,
               const CompileOptions &c, std::string &out, int *root = nullptr,
               std::optional<Schedule> *loaded = nullptr,
               std::optional<ThreadblockPacking> *packing = nullptr) {
  CompileResult result;
  if (input.ends_with(".mlir")) {
    if (!o.defines.empty())
      return usage(Error("-D definitions apply only to .ccl programs",
                         SourceLoc{input}));
    auto text = readFile(input);
    if (!text)
      return fail(text.error());
    dropByteOrderMark(*text);
    if (Status s = checkMlirNesting(input, *text); !s)
      return fail(s.error());
    result = compileMlir(input, std::move(*text), c);
  } else {
    auto defs = parseDefines(o.defines);
    if (!defs)
      return usage(defs.error());
    auto sched = loadScheduleInput(input, *defs);
    if (!sched)
      return fail(sched.error());
    // Switch transfers lower to generated code and MSCCL++ plans (whose
    // compile refuses what they cannot take): any other target says so, in
    // its own terms, before anything is written.
    if (sched->usesSwitches() && c.target != CompileTarget::Cuda &&
        c.target != CompileTarget::MscclppJson) {
      locateTransfers(*sched, input);
      return fail(refuseSwitchTransfers(*sched, c.target).error());
    }
    // The topology the schedule names is read (for the proof and the
    // predictions) after the output was written.
    std::vector<PathArg> files, dirs;
    compileOutputs(o, files, dirs);
    if (auto named = scheduleTopologyPath(*sched))
      if (Status s = checkOutputsApart(
              {topologyPathArg("the topology {} that " + input + " names",
                               *named)},
              files, dirs);
          !s)
        return usage(s.error());
    if (c.verify) {
      std::optional<Topology> topo;
      VerifyResult proof;
      if (int rc =
              proveSchedule(*sched, input, "", false, topo, proof, &o.profile))
        return rc;
    }
    locateTransfers(*sched, input);
    if (root)
      *root = sched->collective.root;
    CompileOptions capped = c;
    if (c.target == CompileTarget::Cuda && o.cudaArchs.empty() &&
        (o.target == "cuda" || o.plugin.backend == "cuda"))
      addMachineArch(*sched, o, capped);
    int cap = c.target == CompileTarget::Cuda ? defaultLoadsCap(*sched, o) : 0;
    if (cap)
      for (codegen::KernelKnob &k : capped.kernelKnobs)
        k.loads = std::min(k.loads, cap);
    result = compileSchedule(*sched, capped);
    // Generated code for GPUs is tuned for the GPU machine the schedule
    // names (the host backend is not what the step model times).
    if (result.ok() && c.target == CompileTarget::Cuda &&
        (o.target == "cuda" || o.plugin.backend == "cuda"))
      if (int rc = tuneGenerated(o, capped, cap, *sched, *result.output))
        return rc;
    if (loaded)
      *loaded = std::move(*sched);
  }
  if (!result.ok())
    return fail(result.failure.error, result.failure.verificationFailed
                                          ? kExitVerifyFailed
                                          : kExitError);
  out = std::move(*result.output);
  if (result.coalesced)
    std::cerr << "ccsynth: note: " << input
              << ": transfers that move together were joined into "
                 "multi-chunk steps (ccl-coalesce-transfers), since as "
                 "scheduled the program does not fit: "
              << result.uncoalesced << "\n";
  if (packing)
    *packing = std::move(result.packing);
  return kExitOk;
}

/// Splits "a,b,c" at commas (an empty string gives no items).
std::vector<std::string> commaList(const std::string &s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size() && !s.empty()) {
    size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return out;
}

int writeMscclDir(CompileCliOptions &o, std::vector<msccl::DirEntry> &entries,
                  const std::vector<int> &roots);

/// The machine a tuned compile times `sched` on (the one it names, or
/// --predict-topo); a note starting with `notTuned` says why there is none.
std::optional<Topology> tuningMachine(const Schedule &sched,
                                      const CompileCliOptions &o,
                                      const char *notTuned) {
  auto topo = topologyFor(sched, o.predictTopo);
  if (topo)
    return topo.take();
  std::cerr << "ccsynth: note: " << notTuned << ": "
            << (sched.topology.empty() && o.predictTopo.empty()
                    ? std::string("the schedule names no machine; pass "
                                  "--predict-topo to tune for one")
                    : topo.error().message)
            << "\n";
  return std::nullopt;
}

/// The machine a tuned compile of one output times `sched` on; none (and a
/// note ending "`byHand` by hand") when the schedule has too many transfers
/// to tune or names no machine.
std::optional<Topology> machineToTune(const Schedule &sched,
                                      const CompileCliOptions &o,
                                      const char *byHand) {
  if (tooLargeToTune(sched, byHand, std::cerr))
    return std::nullopt;
  return tuningMachine(sched, o, "not tuned");
}

/// What the user fixed by hand, for the tuned compiles.
UserChoices userChoices(const CompileCliOptions &o) {
  UserChoices u;
  u.instances = o.explicitInstances;
  u.protocol = o.explicitProtocol;
  u.fallback = !o.noFallback;
  u.tileOpen = o.tileBytes.empty();
  u.cudaThreads = o.cudaThreads;
  u.cudaLoads = o.cudaLoads;
  return u;
}

/// The tuned compile of generated code (tuneForGeneratedCode): when the
/// schedule's machine is known and the user left --instances open. The
/// notes it prints say what was chosen; `out` and `sched` become what is
/// written. Non-zero (after printing why) when nothing is to be written.
int tuneGenerated(CompileCliOptions &o, const CompileOptions &c, int loadsCap,
                  Schedule &sched, std::string &out) {
  if (o.noTune || o.explicitInstances)
    return kExitOk;
  auto topo = tuningMachine(sched, o, "not tuned");
  if (!topo)
    return kExitOk;
  GeneratedCodePlan plan =
      tuneForGeneratedCode(sched, *topo, c, loadsCap, userChoices(o));
  std::cerr << plan.messages;
  if (plan.nothingWritten)
    return kExitError;
  if (plan.output)
    out = std::move(*plan.output);
  if (plan.schedule)
    sched = std::move(*plan.schedule);
  return kExitOk;
}

/// `--target msccl-dir` of one schedule without --split or --protocol: the
/// tuned compile per size (tuneForMscclDir). Sets `tuned` when it wrote
/// `entries`; leaves them empty (and the plain path runs) when the schedule
/// names no machine or tuning is off.
int tunedMscclDir(CompileCliOptions &o, const CompileOptions &c, long long lo,
                  long long hi, std::vector<msccl::DirEntry> &entries,
                  std::vector<int> &roots, bool &tuned) {
  tuned = false;
  if (o.noTune || (o.explicitInstances && o.explicitProtocol) ||
      o.inputs.front().ends_with(".mlir"))
    return kExitOk;
  const std::string &input = o.inputs.front();
  // Load and prove the input once, as a whole-range compile does.
  CompileOptions whole = c;
  whole.minBytes = lo;
  whole.maxBytes = hi;
  whole.origin = input;
  std::string xml;
  int root = -1;
  std::optional<Schedule> sched;
  if (int rc = compileOne(input, o, whole, xml, &root, &sched); rc != kExitOk)
    return rc;
  if (!sched || sched->transfers.size() > kMaxTunedTransfers)
    return kExitOk;
  auto topo = tuningMachine(*sched, o, "not tuned per size");
  if (!topo)
    return kExitOk;
  MscclDirPlan plan =
      tuneForMscclDir(*sched, *topo, c, lo, hi, userChoices(o), input);
  std::cerr << plan.messages;
  if (plan.error)
    return fail(*plan.error);
  for (msccl::DirEntry &e : plan.entries) {
    entries.push_back(std::move(e));
    roots.push_back(root);
  }
  tuned = plan.tuned;
  return kExitOk;
}

/// `--target msccl-dir`: one MSCCL XML per size range (and its protocol),
/// from one input for every range or one input per range, written with a
/// README as an MSCCL_ALGO_DIR layout.
int runMscclDir(CompileCliOptions &o, CompileOptions c) {
  if (o.output == "-")
    return usage(Error("--target msccl-dir writes a directory: name it with "
                       "-o"));
  // Size ranges: [min, b1), [b1, b2), ..., [bk, max].
  long long lo = c.minBytes < 0 ? 0 : c.minBytes;
  long long hi = c.maxBytes < 0 ? 0 : c.maxBytes; // 0: unbounded
  if (hi > 0 && lo > hi)
    return usage(Error("--min-bytes lies above --max-bytes"));
  std::vector<long long> bounds;
  if (!o.split.empty()) {
    auto sizes = parseSizes(o.split);
    if (!sizes)
      return usage(Error("--split: " + sizes.error().message));
    for (double b : *sizes)
      bounds.push_back((long long)b);
  }
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (bounds[i] <= lo + 1 || (i > 0 && bounds[i] <= bounds[i - 1]))
      return usage(Error("--split sizes must increase and lie above "
                         "--min-bytes + 1"));
    if (hi > 0 && bounds[i] > hi)
      return usage(Error("--split size " + std::to_string(bounds[i]) +
                         " lies above --max-bytes"));
  }
  struct Range {
    long long min, max;
  };
  std::vector<Range> ranges;
  long long start = lo;
  for (long long b : bounds) {
    ranges.push_back({start, b - 1});
    start = b;
  }
  ranges.push_back({start, hi});

  std::vector<std::string> protocols = commaList(o.compile.protocol);
  if (protocols.size() > 1 && protocols.size() != ranges.size())
    return usage(Error("--protocol: " + std::to_string(protocols.size()) +
                       " protocols for " + std::to_string(ranges.size()) +
                       " size ranges; give one, or one per range"));
  size_t jobs = ranges.size();
  if (o.inputs.size() > 1) {
    if (ranges.size() > 1 && o.inputs.size() != ranges.size())
      return usage(Error(std::to_string(o.inputs.size()) + " inputs for " +
                         std::to_string(ranges.size()) +
                         " size ranges; give one input for every range, or "
                         "one per range"));
    jobs = o.inputs.size();
  }

  // Check the destination before the work that fills it.
  auto ours = [](const std::string &dir) {
    auto readme = readFile(dir + "/README.md");
    return readme && readme->rfind(msccl::kDirReadmeTitle, 0) == 0;
  };
  if (Status s = checkDirectoryWritable(o.output, ours); !s)
    return fail(s.error());

  std::vector<msccl::DirEntry> entries;
  std::vector<int> roots;
  if (o.split.empty() && o.inputs.size() == 1 && protocols.empty()) {
    bool tuned = false;
    if (int rc = tunedMscclDir(o, c, lo, hi, entries, roots, tuned);
        rc != kExitOk)
      return rc;
    if (tuned)
      return writeMscclDir(o, entries, roots);
  }
  for (size_t j = 0; j < jobs; ++j) {
    const std::string &input = o.inputs[o.inputs.size() > 1 ? j : 0];
    Range r = ranges[ranges.size() > 1 ? j : 0];
    CompileOptions cj = c;
    cj.minBytes = r.min;
    cj.maxBytes = r.max;
    if (!protocols.empty())
      cj.protocol = protocols[protocols.size() > 1 ? j : 0];
    cj.origin = input;
    std::string xml;
    int root = -1;
    if (int rc = compileOne(input, o, cj, xml, &root); rc != kExitOk)
      return rc;
    auto algo = msccl::parseXml(input, xml);
    if (!algo)
      return fail(Error("internal error: the XML written for this input "
                        "does not read back: " +
                            algo.error().message,
                        SourceLoc{input}));
    std::vector<msccl::ProgramIssue> issues = msccl::validateAlgo(*algo);
    if (!issues.empty())
      return fail(Error("internal error: the XML written for this input "
                        "breaks a runtime rule: " +
                            issues.front().message,
                        SourceLoc{input}));
    msccl::DirEntry e;
    e.file = msccl::dirFileName((int)j, *algo);
    e.source = input;
    e.algo = algo.take();
    e.text = std::move(xml);
    entries.push_back(std::move(e));
    roots.push_back(root);
  }
  return writeMscclDir(o, entries, roots);
}

/// Checks and writes the entries of an msccl-dir, with its README.
int writeMscclDir(CompileCliOptions &o, std::vector<msccl::DirEntry> &entries,
                  const std::vector<int> &roots) {
  auto ours = [](const std::string &dir) {
    auto readme = readFile(dir + "/README.md");
    return readme && readme->rfind(msccl::kDirReadmeTitle, 0) == 0;
  };
  if ((int)entries.size() > msccl::kMaxAlgos)
    return usage(Error("MSCCL holds at most " +
                       std::to_string(msccl::kMaxAlgos) + " algorithms"));
  if (Status s = msccl::checkNoOverlap(entries); !s)
    return fail(s.error());

  std::vector<OutputFile> files;
  files.push_back({"README.md", msccl::dirReadme(entries)});
  for (const msccl::DirEntry &e : entries)
    files.push_back({std::string(msccl::kAlgoSubdir) + "/" + e.file, e.text});
  if (Status s = writeDirectoryAtomic(o.output, files, ours); !s)
    return fail(s.error());
  for (size_t j = 0; j < entries.size(); ++j) {
    msccl::SelectionReport sel =
        msccl::describeSelection(entries[j].algo, roots[j]);
    if (!sel.warning.empty())
      std::cerr << "ccsynth: warning: " << entries[j].file << ": "
                << sel.warning << "\n";
  }
  std::cerr << "ccsynth: wrote " << entries.size() << " algorithm"
            << (entries.size() == 1 ? "" : "s") << " to " << o.output << "/"
            << msccl::kAlgoSubdir << " (set MSCCL_ALGO_DIR to it; see "
            << o.output << "/README.md)\n";
  return kExitOk;
}

/// The tuned compile of one MSCCL XML (tuneForMscclXml): when the
/// schedule's machine is known and the user left instances or protocol
/// open. Notes say what was chosen; `out` and `sched` become what is
/// written.
Status tuneOutput(CompileCliOptions &o, const CompileOptions &c,
                  Schedule &sched, std::string &out) {
  if (o.noTune || (o.explicitInstances && o.explicitProtocol))
    return Status::success();
  auto topo = machineToTune(sched, o, "--instances and --protocol choose");
  if (!topo)
    return Status::success();
  MscclXmlPlan plan = tuneForMscclXml(sched, *topo, c, userChoices(o));
  std::cerr << plan.messages;
  if (plan.error)
    return *plan.error;
  if (plan.output)
    out = std::move(*plan.output);
  if (plan.schedule)
    sched = std::move(*plan.schedule);
  return Status::success();
}

int runCompile(CompileCliOptions &o) {
  bool plugin = o.target == "plugin";
  bool mscclDir = o.target == "msccl-dir";
  auto target = plugin     ? std::optional(CompileTarget::Cuda)
                : mscclDir ? std::optional(CompileTarget::MscclXml)
                           : parseCompileTarget(o.target);
  if (!target)
    return usage(Error("unknown target '" + o.target +
                       "' (expected mlir, msccl-xml, msccl-dir, mscclpp-json, "
                       "cuda or plugin)"));
  if (o.inputs.size() > 1 && !plugin && !mscclDir)
    return usage(Error("several inputs make one plugin or one MSCCL "
                       "algorithm directory: use --target plugin or "
                       "msccl-dir"));
  if (!o.split.empty() && !mscclDir)
    return usage(Error("--split applies to --target msccl-dir only"));
  if (!mscclDir && o.compile.protocol.find(',') != std::string::npos)
    return usage(Error("--protocol takes one protocol (a list, one per "
                       "size range, only with --target msccl-dir)"));
  CompileOptions &c = o.compile;
  c.target = *target;
  c.tileBytes = plugin && o.plugin.backend == "host" ? 64 << 10 : 1 << 20;
  c.shareRanks = !o.noRankSharing;
  if (!o.tileBytes.empty()) {
    auto v = parseTileBytes(o.tileBytes);
    if (!v)
      return usage(v.error());
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
  // Kernel knobs: one entry per architecture built (the user's threads and
  // loads, else the architecture's default; the tuned compile replaces the
  // entry that runs on the machine's GPU).
  c.kernelKnobs.clear();
  for (const std::string &arch : o.plugin.cudaArchs) {
    size_t digits = 0;
    while (digits < arch.size() && std::isdigit((unsigned char)arch[digits]))
      ++digits;
    if (digits == 0 || digits > 4)
      return usage(Error("--cuda-arch '" + arch +
                         "' is not an SM architecture (e.g. 80 or 90)"));
    codegen::KernelKnob k =
        codegen::defaultKernelKnob(std::stoi(arch.substr(0, digits)));
    if (o.cudaThreads)
      k.threads = o.cudaThreads;
    if (o.cudaLoads)
      k.loads = o.cudaLoads;
    if (!codegen::validKernelKnob(k))
      return usage(Error("--cuda-threads must be a multiple of 32 from 32 to "
                         "1024 and --cuda-loads 1, 2, 4, 8 or 16 (got " +
                         std::to_string(k.threads) + " threads, " +
                         std::to_string(k.loads) + " loads)"));
    bool dup = false;
    for (const codegen::KernelKnob &e : c.kernelKnobs)
      dup |= e.arch == k.arch;
    if (!dup)
      c.kernelKnobs.push_back(k);
  }
  c.fuse = !o.noFuse;
  c.fuseForward = !o.noFuseForward;
  if (o.localTbs < 1)
    return usage(Error("--local-tbs must be at least 1"));
  c.localTbs = o.localTbs;
  c.splitPhases = o.splitPhases;
  if (o.switchLanes < 0 || o.switchLanes > 64)
    return usage(Error("--switch-lanes must be from 1 to 64, or 0 for the "
                       "tuned compile's choice (got " +
                       std::to_string(o.switchLanes) + ")"));
  c.switchLanes = o.switchLanes;
  c.coalesce = !o.noCoalesce;
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
    return usage(Error("--msccl-coll applies to --target msccl-xml and "
                       "msccl-dir only"));
  if (c.instances < 1 || c.pipeline < 1 || c.maxCount < 1 || c.maxTbSteps < 0 ||
      c.maxTbsPerChannel < 1 || c.maxChannels < 0)
    return usage(Error("--instances, --pipeline, --max-count and "
                       "--max-tbs-per-channel must be at least 1"));

  // The same proof `ccsynth verify` gives, links included: every transfer
  // on a link of the topology its schedule or algorithm names.
  c.checkLinks = c.verify;

  // No output may replace an input (or another output).
  {
    std::vector<PathArg> inputs{
        {"--topo-profile", o.profile.file},
        topologyPathArg("--predict-topo", o.predictTopo),
        {"--cxx", programPath(o.plugin.cxx)},
        {"--nvcc", programPath(o.plugin.nvcc)}};
    for (const std::string &input : o.inputs)
      inputs.push_back({"the input {}", input});
    std::vector<PathArg> files, dirs;
    compileOutputs(o, files, dirs);
    if (Status s = checkOutputsApart(inputs, files, dirs); !s)
      return usage(s.error());
  }
  if (mscclDir)
    return runMscclDir(o, c);
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
  std::optional<ThreadblockPacking> packing;
  if (int rc = compileOne(o.inputs.front(), o, c, out, &root, &sched, &packing);
      rc != kExitOk)
    return rc;
  if (c.target == CompileTarget::MscclXml && sched)
    if (Status s = tuneOutput(o, c, *sched, out); !s)
      return fail(s.error());
  if (Status s = writeOutput(o.output, out); !s)
    return fail(s.error());
  if (packing)
    printPackingReport(*packing, !o.noPredict, o.predictTopo,
                       o.inputs.front(),
                       sched ? sched->collective.busBwFactor() : 1.0);
  if (c.target == CompileTarget::MscclXml)
    if (auto algo = msccl::parseXml(o.output, out)) {
      msccl::SelectionReport sel = msccl::describeSelection(*algo, root);
      if (!sel.warning.empty())
        std::cerr << "ccsynth: warning: " << sel.warning << "\n";
      std::cerr << "ccsynth: note: " << sel.served << "\n";
      // MSCCL launches a rank's threadblocks together and they wait on
      // each other: more than the GPU holds at once can hang the call.
      std::string machine = !o.predictTopo.empty()
                                ? o.predictTopo
                                : (sched ? sched->topology : std::string());
      int resident = residentThreadblocks(machine, nullptr);
      int most = algo->threadblocksPerRank();
      if (resident > 0 && most > resident)
        std::cerr << "ccsynth: warning: a rank runs " << most
                  << " threadblocks, more than can be resident at once (one "
                     "per SM, "
                  << resident << " SMs on " << machine
                  << "): MSCCL launches them together and they wait on each "
                     "other, so the call can hang; use fewer --instances "
                     "(the tuned compile never writes such a program)\n";
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
                  "one plugin holding each, or for an msccl-dir: one per "
                  "--split range, or any number of different collectives "
                  "or rank counts)")
      ->required();
  cmd->add_option("--target,-t", opts->target,
                  "mlir | msccl-xml | msccl-dir (a directory for "
                  "MSCCL_ALGO_DIR: one XML per size range, with a README) | "
                  "mscclpp-json | cuda (generated code, built by nvcc or the "
                  "host C++ compiler) | plugin (a shared library exporting "
                  "the ccsynth plugin ABI); default msccl-xml");
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
                  "1M; 64K for host plugins; for schedules with switch "
                  "operations the tuned compile weighs 1M, 256K, 64K, 32K, "
                  "16K, 12K and 8K)");
  cmd->add_flag("--no-rank-sharing", opts->noRankSharing,
                "Generated code: one function per (rank, threadblock) even "
                "where symmetric ranks could share one (for comparison)");
  cmd->add_option("--cuda-arch", opts->cudaArchs,
                  "--backend cuda and --target cuda: SM architectures "
                  "(default 80 and 90, and the schedule's machine's GPU "
                  "where it is newer, as 100 on dgx-b200 and gb200-nvl72, "
                  "when nvcc builds it); generated code carries kernel "
                  "knobs for each, and a plugin the newest one's PTX too, "
                  "which the driver compiles for newer GPUs");
  cmd->add_option("--cuda-threads", opts->cudaThreads,
                  "Generated CUDA kernels: threads per block, a multiple of "
                  "32 (default: the tuned compile's choice for the "
                  "machine's GPU, else 256; the kernels need about 235 "
                  "registers per thread, so more than 256 spill)");
  cmd->add_option("--cuda-loads", opts->cudaLoads,
                  "Generated CUDA kernels: 16-byte loads each thread keeps "
                  "in flight, 1, 2, 4, 8 or 16 (default: the tuned "
                  "compile's choice for the machine's GPU, else 8, as "
                  "NCCL's copy loops unroll from sm_80 on; at most 4 where "
                  "switch operations wait for point-to-point steps, as in "
                  "NVLS-tree, whose kernels spill at 8)");
  cmd->add_option("--switch-lanes", opts->switchLanes,
                  "Generated code and MSCCL++ plans of schedules with switch "
                  "operations: the most switch threadblocks per rank and "
                  "switch (default: the tuned compile's choice of 16, "
                  "NCCL's NVLS channels, or 4, which reach the switch's "
                  "peak as NCCL's NVLS kernels do on registered buffers "
                  "and, each carrying a larger share, fill and drain a "
                  "pipeline across nodes sooner; untuned 16)");
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
                  "Override the protocol: Simple, LL or LL128 (msccl-dir: "
                  "one, or a comma list with one per --split range)");
  cmd->add_option("--split", opts->split,
                  "--target msccl-dir: sizes that cut --min-bytes.."
                  "--max-bytes into ranges, one XML each, e.g. 64K,4M gives "
                  "[min, 64K), [64K, 4M), [4M, max]");
  cmd->add_option("--max-tb-steps", opts->compile.maxTbSteps,
                  "Most steps per threadblock (default: 64, or what fits "
                  "MSCCL++'s executor)");
  cmd->add_option("--max-tbs-per-channel", opts->compile.maxTbsPerChannel,
                  "Most threadblocks per channel (default 32)");
  cmd->add_option("--max-channels", opts->compile.maxChannels,
                  "Most channels (default: 32 for MSCCL XML, 64 for MSCCL++)");
  cmd->add_option("--max-tbs-per-rank", opts->compile.maxThreadblocksPerRank,
                  "MSCCL++ plans: most threadblocks per rank, all resident "
                  "at once; a rank with more gets its threadblocks merged "
                  "(default: the SM count of the topology's GPU; 0 = no "
                  "limit)");
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
  cmd->add_flag("--no-fuse-forward", opts->noFuseForward,
                "Fuse only receive-and-reduce steps (rrc), not a receive "
                "with the send that forwards it (rcs, rrs, rrcs), which "
                "ties both peers to one threadblock (the tuned compile "
                "tries all three fusion choices)");
  cmd->add_option("--local-tbs", opts->localTbs,
                  "Most threadblocks per instance for local copies and "
                  "reductions: those writing different chunks run side by "
                  "side, and above 1 chains of reductions into one chunk "
                  "become trees (default 1; the tuned compile also tries "
                  "8, with and without 2 pipeline parts)");
  cmd->add_flag("--split-phases", opts->splitPhases,
                "A reduction's transfers that spread finished values "
                "(AllReduce's second half) on channels of their own, so "
                "that the next loop iteration's reduction runs while this "
                "one spreads (the tuned compile tries it both ways for "
                "such schedules)");
  cmd->add_flag("--no-tune", opts->noTune,
                "MSCCL XML and generated code for GPUs (--target cuda, "
                "CUDA plugins): write one instance in the schedule's "
                "protocol instead of the configuration the step-level model "
                "times fastest");
  cmd->add_flag(
      "--no-fallback", opts->noFallback,
      "MSCCL XML: write the schedule even where NCCL's own ring "
      "(direct sends for AllToAll; for AllReduce on several nodes "
      "its double binary tree too) lowered the same way runs "
      "faster. Generated code for GPUs (--target cuda, CUDA "
      "plugins): serve every size, also where NCCL's ring, tree "
      "or in-network algorithm (NVLS, NVLS-tree, CollNet, NVLS with SHARP) is "
      "faster by the step-level model (by default the program's "
      "byte range holds only the sizes where it is faster, and a "
      "program faster nowhere is not written)");
  cmd->add_flag("--no-coalesce", opts->noCoalesce,
                "Do not join transfers that move together when the program "
                "does not fit otherwise");
  cmd->add_flag("--check-roundtrip", opts->compile.checkRoundTrip,
                "After writing MSCCL XML, read it back, check the runtime's "
                "rules, run it into a schedule and prove that schedule");
  addTopoProfileOptions(cmd, opts->profile);
  cmd->add_flag("--no-predict", opts->noPredict,
                "MSCCL XML: do not print the chunk- and step-level "
                "predictions at 1K, 1M and 1G (MSCCL++ plans with merged "
                "threadblocks: the step-level ones before and after "
                "merging)");
  cmd->add_option("--predict-topo", opts->predictTopo,
                  "The topology for the printed predictions (default: the "
                  "one the schedule names)");
  cmd->add_flag("--no-verify", opts->noVerify,
                "Skip the collective proof (not recommended)");
  cmd->add_option("-D,--define", opts->defines,
                  "Set a .ccl program parameter, e.g. -D ranks=16");
  cmd->callback([opts, &ctx, cmd] {
    opts->explicitInstances = cmd->count("--instances") > 0;
    opts->explicitProtocol = cmd->count("--protocol") > 0;
    ctx.exitCode = runCompile(*opts);
  });
}

} // namespace ccsynth::cli
