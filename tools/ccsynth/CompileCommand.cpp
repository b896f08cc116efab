//===- CompileCommand.cpp - `ccsynth compile` -----------------------------===//
#include "Command.h"

#include "PluginBuild.h"
#include "StepPrediction.h"
#include "Tuning.h"

#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Core/Plot.h"
#include "ccsynth/Core/Simulator.h"
#include "ccsynth/Core/TextLimits.h"
#include "ccsynth/Import/ScheduleText.h"
#include "ccsynth/Target/MSCCLDir.h"
#include "ccsynth/Target/MSCCLXml.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>

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

/// Says how an MSCCL++ plan's threadblocks were merged to fit the budget
/// and, unless `predict` is off, what the step-level model predicts for the
/// program before and after merging (as MSCCL++ runs it: puts land in
/// buffers of their own, no MSCCL channel limits, each chunk moved whole).
void printPackingReport(const ThreadblockPacking &p, bool predict,
                        const std::string &topoArg, double busBwFactor) {
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
  std::string name = topoArg.empty() ? p.topology : topoArg;
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
    if (Status s = checkOutputsApart(
            {topologyPathArg("the topology {} that " + input + " names",
                             sched->topology)},
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

/// "[1K, 2M)" for the sizes minBytes..maxBytes (maxBytes 0: "no bound").
std::string byteRange(long long minBytes, long long maxBytes) {
  return "[" + formatBytes((double)minBytes) + ", " +
         (maxBytes > 0 ? formatBytes((double)maxBytes + 1)
                       : std::string("no bound")) +
         ")";
}

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

/// Whether `sched` has too many transfers to tune (a note ending "`byHand`
/// by hand" says so).
bool tooLargeToTune(const Schedule &sched, const char *byHand) {
  if (sched.transfers.size() <= kMaxTunedTransfers)
    return false;
  std::cerr << "ccsynth: note: not tuned: " << sched.transfers.size()
            << " transfers (tuning compiles every configuration; it stops "
               "at "
            << kMaxTunedTransfers << "); " << byHand << " by hand\n";
  return true;
}

/// The machine a tuned compile of one output times `sched` on; none (and a
/// note ending "`byHand` by hand") when the schedule has too many transfers
/// to tune or names no machine.
std::optional<Topology> machineToTune(const Schedule &sched,
                                      const CompileCliOptions &o,
                                      const char *byHand) {
  if (tooLargeToTune(sched, byHand))
    return std::nullopt;
  return tuningMachine(sched, o, "not tuned");
}

/// The configurations a tuned compile tries: every instance count and
/// protocol, except those the user fixed with --instances / --protocol.
TuneRequest tuningRequest(const CompileCliOptions &o, const CompileOptions &c,
                          const Schedule &sched) {
  TuneRequest req;
  req.instances = o.explicitInstances ? std::vector<int>{c.instances}
                                      : tuningInstances(sched);
  req.protocols = o.explicitProtocol
                      ? std::vector<std::string>{c.protocol}
                      : std::vector<std::string>{"Simple", "LL128", "LL"};
  req.narrow = sched.transfers.size() > kMaxFullyTunedTransfers;
  return req;
}

/// The tuned compile of generated code (--target cuda, and plugins for the
/// CUDA backend): when the schedule's machine is known and the user left
/// --instances open, every configuration (instances, fusion, local
/// threadblocks, pipeline parts, phases on separate channels) is timed by
/// the step model's variant for generated code and the best one replaces
/// `out`. Generated code moves data one way (no LL protocols) and is not
/// replaced by NCCL's program: a call it does not serve goes to NCCL
/// through the interposer anyway. Unless --no-fallback, the program
/// serves only the sizes where it is faster than what NCCL itself reaches
/// on the machine (its ring or tree, or NVLS, NVLS-tree, CollNet or NVLS with
/// SHARP where the switches allow them; ncclReachUs): its byte range says so,
/// and the interposer sends every other call to NCCL. Faster nowhere, nothing
/// is written. `sched` becomes the schedule written.
int tuneGenerated(CompileCliOptions &o, const CompileOptions &c, int loadsCap,
                  Schedule &sched, std::string &out) {
  if (o.noTune || o.explicitInstances)
    return kExitOk;
  auto topo = tuningMachine(sched, o, "not tuned");
  if (!topo)
    return kExitOk;
  TuneRequest req = tuningRequest(o, c, sched);
  req.protocols = {"Simple"};
  req.fallback = false;
  req.generatedCode = true;
  // Switch operations are timed on the generated-code path's step program
  // (no XML in between), each configuration a lowering down to it: only
  // the instance counts are weighed.
  if (sched.usesSwitches())
    req.narrow = true;
  req.tileBytes = (double)c.tileBytes;
  req.sizes = generatedTuningSizes(sched, c.minBytes, c.maxBytes);
  // The knob entry that runs on the machine's GPU: each configuration is
  // timed with every choice the kernels compile to (within the user's
  // --cuda-threads/--cuda-loads).
  int knobEntry =
      codegen::kernelKnobEntry(c.kernelKnobs, topo->stepModel.smArch);
  if (knobEntry >= 0) {
    int arch = c.kernelKnobs[knobEntry].arch;
    for (codegen::KernelKnob k : codegen::kernelKnobCandidates(arch))
      if ((!o.cudaThreads || k.threads == o.cudaThreads) &&
          (!o.cudaLoads || k.loads == o.cudaLoads) &&
          (!loadsCap || k.loads <= loadsCap))
        req.knobs.push_back(k);
    if (req.knobs.empty())
      req.knobs.push_back(c.kernelKnobs[knobEntry]);
  }
  // Where the program serves: the sizes of the grid (1K, 4K, ..., 1G within
  // the user's range) where it is faster than what NCCL reaches on the
  // machine (timed once, when first needed). nullopt: it serves every size
  // (--no-fallback, or NCCL runs nothing comparable here).
  std::vector<double> grid =
      tuningGrid(std::max(0LL, c.minBytes), std::max(0LL, c.maxBytes));
  std::optional<std::vector<double>> ncclUs;
  // The tiles a size may run with, where the user left the tile open: the
  // code does not depend on the tile, so each served range is a plugin
  // descriptor that runs it with the tile fastest for its sizes.
  std::vector<double> tileChoices =
      o.tileBytes.empty() ? generatedTileCandidates(sched, (double)c.tileBytes)
                          : std::vector<double>{};
  struct Guard {
    Served served;
    std::vector<double> us;    ///< the program's times on `grid`
    std::vector<double> tiles; ///< and the tile of each
  };
  auto guard = [&](const Schedule &program, const TuneCandidate &config,
                   const CompileOptions &timing) -> std::optional<Guard> {
    if (o.noFallback || grid.empty())
      return std::nullopt;
    if (!ncclUs)
      ncclUs = ncclReachUs(sched, *topo, grid);
    if (ncclUs->empty())
      return std::nullopt;
    TuneRequest g = req;
    g.sizes = grid;
    g.knobs.clear();
    if (config.knob.arch > 0)
      g.knobs.push_back(config.knob);
    g.tileBytes = (double)timing.tileBytes;
    // A program the model cannot time (more threadblocks than the GPU
    // holds at once) is left as it is.
    auto timed = timeCandidate(program, *topo, timing, config, g);
    if (!timed)
      return std::nullopt;
    Guard out;
    // Each size with the fastest tile: another than the program's where it
    // is faster by more than the model's noise (2%).
    std::vector<double> own = timed->timeUs;
    out.tiles.assign(grid.size(), (double)timing.tileBytes);
    for (double tile : tileChoices) {
      if (tile == (double)timing.tileBytes)
        continue;
      TuneRequest gt = g;
      gt.tileBytes = tile;
      CompileOptions tt = timing;
      tt.tileBytes = (unsigned long long)tile;
      auto other = timeCandidate(program, *topo, tt, config, gt);
      if (!other || other->timeUs.size() != grid.size())
        continue;
      for (size_t k = 0; k < grid.size(); ++k)
        if (other->timeUs[k] * 1.02 < own[k] &&
            other->timeUs[k] < timed->timeUs[k]) {
          timed->timeUs[k] = other->timeUs[k];
          out.tiles[k] = tile;
        }
    }
    TuneResult ref;
    ref.ncclBestUs = *ncclUs;
    out.served = splitServedByTile(servedRunsWhereFaster(*timed, ref, grid),
                                   grid, out.tiles);
    out.us = std::move(timed->timeUs);
    return out;
  };
  auto slowerNote = [&](const TuneCandidate &config, const Guard &g) {
    char buf[192];
    std::snprintf(buf, sizeof buf, "%s: at %s %.2f us against NCCL's %.2f us",
                  describeCandidate(config, false).c_str(),
                  formatBytes(grid.back()).c_str(), g.us.back(),
                  ncclUs->back());
    return std::string(buf);
  };
  auto nothingFaster = [&](const std::string &slower) {
    std::cerr << "ccsynth: error: the generated code is slower than what "
                 "NCCL reaches on "
              << topo->name << " (its ring or tree, or its in-network "
              << "algorithms where the switches allow them) at every size "
              << "from " << formatBytes(grid.front()) << " to "
              << formatBytes(grid.back()) << " (step-level model; " << slower
              << "): nothing written, since the interposer would send every "
                 "call to NCCL; --no-fallback writes it anyway\n";
    return kExitError;
  };
  // A program that serves part of the sizes, or all with another tile, is
  // compiled again with those byte ranges (one plugin descriptor each, with
  // its tile).
  auto partly = [](const Served &sv) {
    return sv.ranges.size() > 1 || sv.minBytes > 0 || sv.maxBytes > 0;
  };
  auto rewrite = [&](const Served &sv, unsigned long long tile) {
    return partly(sv) ||
           (!sv.ranges.empty() && sv.ranges.front().tileBytes != 0 &&
            sv.ranges.front().tileBytes != tile);
  };
  auto restrictTo = [&](const Served &sv, const Schedule &program,
                        CompileOptions opts) -> std::optional<std::string> {
    if (sv.minBytes > 0)
      opts.minBytes = sv.minBytes;
    if (sv.maxBytes > 0)
      opts.maxBytes = sv.maxBytes;
    if (!sv.ranges.empty() && sv.ranges.front().tileBytes != 0)
      opts.tileBytes = sv.ranges.front().tileBytes;
    for (size_t i = 1; i < sv.ranges.size(); ++i)
      opts.moreByteRanges.push_back({(std::uint64_t)sv.ranges[i].minBytes,
                                     (std::uint64_t)sv.ranges[i].maxBytes,
                                     sv.ranges[i].tileBytes});
    CompileResult r = compileSchedule(program, opts);
    if (!r.ok())
      return std::nullopt;
    return std::move(*r.output);
  };
  auto servedNote = [&](const Guard &g) {
    std::string ratios;
    for (size_t k = 0; k < grid.size(); ++k) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%s %.2fx", k ? ", " : "",
                    formatBytes(grid[k]).c_str(), (*ncclUs)[k] / g.us[k]);
      ratios += buf;
    }
    // The runs of sizes served (ranges that meet, cut only where the tile
    // changes, are one run).
    std::vector<Served::Range> runs;
    std::set<unsigned long long> tiles;
    for (const Served::Range &r : g.served.ranges) {
      tiles.insert(r.tileBytes);
      if (!runs.empty() && runs.back().maxBytes != 0 &&
          runs.back().maxBytes + 1 == r.minBytes)
        runs.back().maxBytes = r.maxBytes;
      else
        runs.push_back(r);
    }
    bool everywhere = runs.size() == 1 && runs.front().minBytes == 0 &&
                      runs.front().maxBytes == 0;
    std::string where;
    for (size_t i = 0; i < runs.size(); ++i)
      where += (i == 0                 ? ""
                : i + 1 == runs.size() ? " and "
                                       : ", ") +
               byteRange(runs[i].minBytes, runs[i].maxBytes);
    std::cerr << "ccsynth: note: serves "
              << (everywhere ? std::string("every size") : "only " + where)
              << ": against what NCCL reaches on " << topo->name
              << " (step-level model, NCCL's time / the generated code's): "
              << ratios
              << (everywhere ? ""
                             : "; the interposer sends other sizes to "
                               "NCCL (--no-fallback serves them all)")
              << "\n";
    if (tiles.size() > 1) {
      std::string each;
      for (const Served::Range &r : g.served.ranges)
        each += (each.empty() ? "" : ", ") + byteRange(r.minBytes, r.maxBytes) +
                " " + formatBytes((double)r.tileBytes);
      std::cerr << "ccsynth: note: tiles per size range (a plugin descriptor "
                   "each, the same code): "
                << each << "\n";
    }
  };
  // The program written as it is (untuned) serves only where it is faster
  // too.
  auto plainGuard = [&]() -> int {
    TuneCandidate plainConfig;
    plainConfig.instances = std::max(1, c.instances);
    plainConfig.fuse = c.fuse;
    plainConfig.forward = c.fuseForward;
    plainConfig.localTbs = c.localTbs;
    plainConfig.pipeline = c.pipeline;
    plainConfig.splitPhases = c.splitPhases;
    if (knobEntry >= 0)
      plainConfig.knob = c.kernelKnobs[knobEntry];
    std::optional<Guard> g = guard(sched, plainConfig, c);
    if (g && !g->served.any)
      return nothingFaster(slowerNote(plainConfig, *g));
    if (g && rewrite(g->served, c.tileBytes)) {
      auto restricted = restrictTo(g->served, sched, c);
      if (!restricted)
        return kExitOk;
      out = std::move(*restricted);
    }
    if (g)
      servedNote(*g);
    return kExitOk;
  };
  // Too large to tune, the program is still weighed against NCCL.
  if (tooLargeToTune(sched, "--instances chooses"))
    return plainGuard();
  // Where switch threadblocks wait for point-to-point steps the tile
  // decides how they overlap: each tile the user left open is weighed, and
  // a smaller one wins only by more than the model's noise (2%).
  TuneResult t;
  double tile = (double)c.tileBytes, tileScore = 0;
  for (double candidate : o.tileBytes.empty()
                              ? generatedTileCandidates(sched, tile)
                              : std::vector<double>{tile}) {
    req.tileBytes = candidate;
    TuneResult r = tuneCompile(sched, *topo, c, req);
    if (r.best < 0)
      continue;
    double score = 0;
    for (double us : r.candidates[r.best].timeUs)
      score += std::log(us);
    if (t.best < 0 || score < tileScore + std::log(0.98)) {
      t = std::move(r);
      tile = candidate;
      tileScore = score;
    }
  }
  req.tileBytes = tile;
  if (t.best < 0) {
    std::cerr << "ccsynth: note: not tuned: no configuration besides the "
                 "one written fits the GPU\n";
    return plainGuard();
  }
  // Generated code is straight-line per threadblock: the first
  // configuration of generatedOrder (the fewest instances within 2% of the
  // fastest first) whose code fits kGeneratedCodeBudget is written.
  std::vector<int> order = generatedOrder(t);
  // A configuration with at least as many instances, local threadblocks
  // and pipeline parts as one over the budget is over it too: not tried.
  std::vector<const TuneCandidate *> tooLong;
  auto dominated = [&](const TuneCandidate &cand) {
    return std::any_of(
        tooLong.begin(), tooLong.end(), [&](const TuneCandidate *l) {
          return cand.instances >= l->instances &&
                 cand.localTbs >= l->localTbs && cand.pipeline >= l->pipeline;
        });
  };
  std::optional<std::string> written;
  std::string over; // the faster programs left out for their size
  std::string slower; // the fastest program that is nowhere faster than NCCL
  std::optional<Guard> served; // where the written program serves
  size_t tries = 0;
  for (size_t j = 0;
       j < order.size() && tries < kGeneratedCodeTries && !written; ++j) {
    const TuneCandidate &cand = t.candidates[order[j]];
    if (dominated(cand))
      continue;
    ++tries;
    CompileOptions chosen = c;
    cand.applyTo(chosen);
    chosen.protocol = c.protocol;
    chosen.tileBytes = (unsigned long long)tile;
    if (knobEntry >= 0 && cand.knob.arch > 0)
      chosen.kernelKnobs[knobEntry] = cand.knob;
    CompileResult r =
        compileSchedule(candidateSchedule(t, cand, sched), chosen);
    if (!r.ok())
      continue;
    if (r.output->size() > kGeneratedCodeBudget) {
      tooLong.push_back(&cand);
      if (over.empty())
        over = describeCandidate(cand, false) + ", " +
               std::to_string(r.output->size() >> 10) + " KiB";
      continue;
    }
    std::optional<Guard> g =
        guard(candidateSchedule(t, cand, sched), cand, chosen);
    if (g && !g->served.any) {
      if (slower.empty())
        slower = slowerNote(cand, *g);
      continue;
    }
    if (g && rewrite(g->served, chosen.tileBytes)) {
      r.output =
          restrictTo(g->served, candidateSchedule(t, cand, sched), chosen);
      if (!r.output)
        continue;
    }
    t.best = order[j];
    written = std::move(*r.output);
    served = std::move(g);
  }
  if (!written && !slower.empty())
    return nothingFaster(slower);
  if (!written) {
    std::cerr << "ccsynth: note: not tuned: no configuration tried (" << tries
              << ", fastest first) compiled to code within "
              << (kGeneratedCodeBudget >> 10) << " KiB"
              << (over.empty() ? "" : " (the fastest: " + over + ")")
              << "; --instances chooses by hand\n";
    return plainGuard();
  }
  out = std::move(*written);
  const TuneCandidate &best = t.candidates[t.best];
  // The program as lowered without tuning, for comparison.
  const TuneCandidate *plain = nullptr;
  for (const TuneCandidate &cand : t.candidates)
    if (cand.program == -1 && cand.instances == 1 && cand.fuse == c.fuse &&
        cand.forward == c.fuseForward && cand.localTbs == c.localTbs &&
        cand.pipeline == c.pipeline && cand.splitPhases == c.splitPhases)
      plain = &cand;
  std::string times;
  for (size_t k = 0; k < req.sizes.size(); ++k) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s %.2f us", k ? ", " : "",
                  formatBytes(req.sizes[k]).c_str(), best.timeUs[k]);
    times += buf;
    if (plain && &best != plain) {
      std::snprintf(buf, sizeof buf, " (%.2fx as fast as without tuning)",
                    plain->timeUs[k] / best.timeUs[k]);
      times += buf;
    }
  }
  std::cerr << "ccsynth: note: tuned for generated code on " << topo->name
            << " by the step-level model: " << describeCandidate(best, false)
            << " (best of " << t.candidates.size()
            << " configurations that fit one threadblock per SM; --instances "
               "chooses by hand, --no-tune writes one instance); predicted "
               "with "
            << formatBytes(req.tileBytes) << " tiles: " << times << "\n";
  if (best.knob.arch > 0) {
    // The other knob choices of the same program, for comparison.
    std::string others;
    for (const codegen::KernelKnob &k : req.knobs)
      if (k != best.knob) {
        double scale = codegen::kernelKnobScale(k, topo->stepModel);
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%d loads: %.0f%%",
                      others.empty() ? "" : ", ", k.loads, 100 * scale);
        others += buf;
      }
    std::cerr << "ccsynth: note: CUDA kernels for " << topo->name
              << "'s GPUs: " << codegen::describeKernelKnob(best.knob)
              << " in flight per thread ("
              << (int)(16 * best.knob.threads * best.knob.loads) << " B per "
              << "threadblock; the model's per-threadblock throughput needs "
              << (int)topo->stepModel.tbInFlightBytes << " B"
              << (others.empty() ? "" : "; with " + others + " of it") << ")"
              << "; --cuda-threads/--cuda-loads choose by hand\n";
  }
  if (!over.empty())
    std::cerr << "ccsynth: note: a faster configuration (" << over
              << " of code) exceeds the " << (kGeneratedCodeBudget >> 10)
              << " KiB that nvcc builds in minutes; --instances and the "
                 "other lowering flags write it by hand\n";
  if (served)
    servedNote(*served);
  if (best.regridded() && t.regridded) {
    std::cerr << "ccsynth: note: the schedule's chunk factor "
              << sched.collective.chunkFactor << " has the odd factor "
              << oddPart(sched.collective.chunkFactor)
              << ": written on a grid of "
              << t.regridded->collective.chunkFactor
              << " sub-chunks per split, so that power-of-two counts are "
                 "multiples of the program's loop\n";
    sched = *t.regridded;
  }
  return kExitOk;
}

/// `--target msccl-dir` of one schedule without --split or --protocol: the
/// tuned compile per size. Every configuration (and NCCL's program for the
/// collective) is timed at 1K, 4K, ..., 1G within [lo, hi]; consecutive
/// sizes with the same fastest configuration form one range (boundaries at
/// the power of two between them) and each range gets that configuration's
/// XML. Sets `tuned` when it wrote `entries`; leaves them empty (and the
/// plain path runs) when the schedule names no machine or tuning is off.
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
  TuneRequest req = tuningRequest(o, c, *sched);
  req.sizes = tuningGrid(lo, hi);
  if (req.sizes.empty())
    return kExitOk;
  req.fallback = !o.noFallback && c.mscclColl.empty() && !o.explicitInstances;
  TuneResult t = tuneCompile(*sched, *topo, c, req);
  if (t.candidates.empty())
    return kExitOk;
  // The fastest configuration at each size; the schedule's own unless
  // NCCL's program is more than 2% faster there. Where NCCL's program wins
  // and the schedule serves some other size, no file serves it: MSCCL
  // leaves it to NCCL, which runs its program natively, tuned per size
  // (also with the rings an MSCCL file could not be selected for).
  std::vector<int> bestAt, ncclAt;
  bool ncclKnown = t.ncclBestUs.size() == req.sizes.size();
  for (size_t k = 0; k < req.sizes.size(); ++k) {
    int own = -1, any = -1, nccl = -1;
    for (int i = 0; i < (int)t.candidates.size(); ++i) {
      const TuneCandidate &cand = t.candidates[i];
      // A file MSCCL would not select at this size serves nothing there.
      if (!cand.selectableAt(req.sizes[k]))
        continue;
      if (any < 0 || cand.timeUs[k] < t.candidates[any].timeUs[k])
        any = i;
      int &slot = cand.fromSchedule() ? own : nccl;
      if (slot < 0 || cand.timeUs[k] < t.candidates[slot].timeUs[k])
        slot = i;
    }
    double rival = any >= 0 ? t.candidates[any].timeUs[k] : INFINITY;
    if (ncclKnown)
      rival = std::min(rival, t.ncclBestUs[k]);
    bool ownWins = own >= 0 && rival * 1.02 >= t.candidates[own].timeUs[k];
    // -1: NCCL's program is faster; -2: MSCCL would select none of the
    // schedule's programs at this size.
    bestAt.push_back(ownWins ? own : own < 0 ? -2 : ncclKnown ? -1 : any);
    ncclAt.push_back(nccl >= 0 ? nccl : any < 0 ? -2 : any);
  }
  // Where the schedule serves no size at all, NCCL's program is written
  // for every size (what compile writes instead of a schedule it beats).
  if (std::all_of(bestAt.begin(), bestAt.end(), [](int i) { return i < 0; }))
    bestAt = ncclAt;
  struct Piece {
    long long min, max;
    int cand;
  };
  std::vector<Piece> pieces;
  for (size_t k = 0; k < req.sizes.size(); ++k) {
    if (!pieces.empty() && pieces.back().cand == bestAt[k])
      continue;
    long long start = k == 0 ? lo : (long long)(req.sizes[k - 1] * 2);
    if (!pieces.empty())
      pieces.back().max = start - 1;
    pieces.push_back({start, hi, bestAt[k]});
  }
  // A file whose loop is too long for the first sizes of its range would
  // leave them to NCCL; the file before it, which serves smaller sizes,
  // serves them instead (MSCCL selects a file from 4 x its nchunksperloop
  // bytes up).
  for (size_t j = 1; j < pieces.size(); ++j) {
    if (pieces[j].cand < 0 || pieces[j - 1].cand < 0)
      continue;
    long long first = 4 * t.candidates[pieces[j].cand].nchunksperloop;
    if (pieces[j].min < first &&
        (pieces[j].max <= 0 || first <= pieces[j].max)) {
      pieces[j].min = first;
      pieces[j - 1].max = first - 1;
    }
  }
  size_t written = 0;
  for (size_t j = 0; j < pieces.size(); ++j) {
    if (pieces[j].cand < 0) {
      std::cerr << "ccsynth: note: " << byteRange(pieces[j].min, pieces[j].max)
                << ": no file; "
                << (pieces[j].cand == -1
                        ? "NCCL's own program for the collective is faster "
                          "there at the step level"
                        : "MSCCL would select none of the schedule's "
                          "lowerings there (a call's element count must be "
                          "a multiple of the program's nchunksperloop)")
                << ", and MSCCL leaves these sizes to NCCL\n";
      continue;
    }
    const TuneCandidate &cand = t.candidates[pieces[j].cand];
    CompileOptions cj = c;
    cj.minBytes = pieces[j].min;
    cj.maxBytes = pieces[j].max;
    cand.applyTo(cj);
    cj.origin = input;
    bool nccl = !cand.fromSchedule();
    CompileResult r = compileSchedule(candidateSchedule(t, cand, *sched), cj);
    if (!r.ok())
      return fail(r.failure.error);
    auto algo = msccl::parseXml(input, *r.output);
    if (!algo)
      return fail(Error("internal error: the XML written for this input "
                        "does not read back: " +
                            algo.error().message,
                        SourceLoc{input}));
    std::cerr << "ccsynth: note: " << byteRange(pieces[j].min, pieces[j].max)
              << ": "
              << (nccl               ? "NCCL's program for this collective"
                  : cand.regridded() ? "the schedule on a power-of-two chunk "
                                       "grid"
                                     : "the schedule")
              << ", " << describeCandidate(cand) << "\n";
    msccl::DirEntry e;
    e.file = msccl::dirFileName((int)written++, *algo);
    e.source = nccl ? input + " (NCCL's program for its collective)" : input;
    e.algo = algo.take();
    e.text = std::move(*r.output);
    entries.push_back(std::move(e));
    roots.push_back(root);
  }
  std::cerr << "ccsynth: note: tuned per size on " << topo->name
            << " by the step-level model: " << written << " range"
            << (written == 1 ? "" : "s") << " written";
  if (written < pieces.size())
    std::cerr << ", " << pieces.size() - written << " left to NCCL";
  std::cerr << " (--split and --protocol choose by hand, --no-tune writes "
               "one file)\n";
  tuned = true;
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

/// The tuned compile of one MSCCL XML (see Tuning.h): when the schedule's
/// machine is known and the user left instances or protocol open, every
/// configuration is timed by the step-level model and the best one (or
/// NCCL's ring, when that beats them all) replaces `out`. Notes say what
/// was chosen; `sched` becomes the schedule that was written.
Status tuneOutput(CompileCliOptions &o, const CompileOptions &c,
                  Schedule &sched, std::string &out) {
  if (o.noTune || (o.explicitInstances && o.explicitProtocol))
    return Status::success();
  auto topo = machineToTune(sched, o, "--instances and --protocol choose");
  if (!topo)
    return Status::success();
  TuneRequest req = tuningRequest(o, c, sched);
  req.fallback = !o.noFallback && c.mscclColl.empty() &&
                 !o.explicitInstances && !o.explicitProtocol;
  // Without a size range of the user's, the XML serves only the sizes at
  // which it beats NCCL's own program (MSCCL leaves the others to NCCL):
  // that needs the sizes in between too.
  bool narrow = c.minBytes < 0 && c.maxBytes < 0 && req.fallback;
  req.sizes = narrow ? tuningGrid(0, 0) : tuningSizes(c.minBytes, c.maxBytes);
  TuneResult t = tuneCompile(sched, *topo, c, req);
  if (t.best < 0) {
    std::cerr << "ccsynth: note: not tuned: no configuration besides the "
                 "one written fits the runtime\n";
    return Status::success();
  }
  // The schedule's configuration that gains most over NCCL where it is
  // faster, restricted to those sizes.
  std::optional<Served> served;
  if (narrow && !t.ncclBestUs.empty()) {
    for (int i = 0; i < (int)t.candidates.size(); ++i) {
      if (!t.candidates[i].fromSchedule())
        continue;
      Served sv = servedWhereFaster(t.candidates[i], t, req.sizes);
      if (sv.any && sv.score > 1.001 && (!served || sv.score > served->score)) {
        served = sv;
        t.best = i;
      }
    }
    if (served) {
      t.replacement.reset();
    } else {
      // Nowhere faster than NCCL: what is written serves only the longest
      // run of sizes where it is as fast as NCCL's program tuned per size
      // (the schedule's own configurations first, then NCCL's program), so
      // that MSCCL leaves every size where it would be slower to NCCL.
      for (int pass = 0; pass < 2 && !served; ++pass)
        for (int i = 0; i < (int)t.candidates.size(); ++i) {
          if (t.candidates[i].fromSchedule() != (pass == 0))
            continue;
          Served sv = servedWhereFaster(t.candidates[i], t, req.sizes,
                                        /*ties=*/true);
          if (sv.any &&
              (!served || sv.count > served->count ||
               (sv.count == served->count && sv.score > served->score))) {
            served = sv;
            t.best = i;
          }
        }
      if (served) {
        const TuneCandidate &cand = t.candidates[t.best];
        if (cand.fromSchedule())
          t.replacement.reset();
        else
          t.replacement = t.ncclPrograms[cand.program];
      } else {
        // Nothing an XML can hold is as fast as what NCCL runs (its
        // in-network algorithms, where no ring of its fits MSCCL) at any
        // size: MSCCL would select it for every call, each slower.
        return Error(
            "at no size is any lowering of this schedule (or NCCL's program "
            "in its place) as fast as what NCCL runs for the collective on " +
                topo->name +
                " at the step level (its NVLS or CollNet where the machine's "
                "switches allow them), so MSCCL would select a slower program "
                "for every call: nothing written",
            {},
            "--min-bytes/--max-bytes write it for a range of your choosing, "
            "--no-fallback for every size");
      }
    }
  }
  const TuneCandidate &best = t.candidates[t.best];
  std::string sizes;
  for (double b : req.sizes)
    sizes += (sizes.empty() ? "" : ", ") + formatBytes(b);
  CompileOptions chosen = c;
  best.applyTo(chosen);
  if (served) {
    chosen.minBytes = served->minBytes;
    chosen.maxBytes = served->maxBytes;
  }
  const Schedule &source =
      t.replacement ? *t.replacement : candidateSchedule(t, best, sched);
  CompileResult r = compileSchedule(source, chosen);
  if (!r.ok()) {
    std::cerr << "ccsynth: note: not tuned: the chosen configuration ("
              << describeCandidate(best)
              << ") failed: " << r.failure.error.message << "\n";
    return Status::success();
  }
  out = std::move(*r.output);
  std::cerr << "ccsynth: note: tuned on " << topo->name << " by the "
            << "step-level model at " << sizes << ": "
            << describeCandidate(best) << " (best of "
            << t.candidates.size() << " configurations that fit; "
            << "--instances and --protocol choose by hand, --no-tune "
               "writes one instance)\n";
  if (!t.replacement && best.regridded() && t.regridded) {
    int c = sched.collective.chunkFactor,
        g = t.regridded->collective.chunkFactor;
    std::cerr << "ccsynth: note: the schedule's chunk factor " << c
              << " has the odd factor " << oddPart(c)
              << ", so MSCCL would select none of its own lowerings for a "
                 "power-of-two size: written with each chunk cut into "
              << g / c << (g % c ? " or " + std::to_string(g / c + 1) : "")
              << " of " << g
              << " sub-chunks per split (the same routes and steps; the "
                 "chunk level below is the re-cut schedule's)\n";
    sched = *t.regridded;
  }
  if (t.replacement) {
    char ratio[32];
    // The schedule's best against NCCL's program tuned per size where that
    // is known, else against the configuration written.
    double slower = 0;
    if (t.bestOwn >= 0 && t.ncclBestUs.size() == req.sizes.size()) {
      double logSum = 0;
      for (size_t k = 0; k < req.sizes.size(); ++k)
        logSum += std::log(t.candidates[t.bestOwn].timeUs[k] / t.ncclBestUs[k]);
      slower = std::exp(logSum / (double)req.sizes.size());
    } else if (t.bestOwn >= 0) {
      slower = t.candidates[t.bestOwn].score / best.score;
    }
    std::snprintf(ratio, sizeof ratio, "%.2f", slower);
    const char *what = sched.collective.kind == CollectiveKind::AllToAll
                           ? "direct sends"
                       : isNcclTree(*t.replacement) ? "double binary tree"
                                                    : "ring";
    // Faster, but at sizes MSCCL never selects it for.
    if (t.bestOwn >= 0 && slower < 1 &&
        t.candidates[t.bestOwn].oddFactor() > 1) {
      std::cerr << "ccsynth: note: MSCCL selects no lowering of this "
                   "schedule for power-of-two sizes (its nchunksperloop has "
                   "the odd factor "
                << t.candidates[t.bestOwn].oddFactor() << "; the best, "
                << describeCandidate(t.candidates[t.bestOwn]) << ", takes "
                << ratio
                << "x the time of NCCL's program at the step level, "
                   "geometric mean over those sizes): writing NCCL's "
                << what << " for this collective on " << topo->name
                << " instead (--no-fallback keeps the schedule)\n";
    } else {
      std::cerr << "ccsynth: note: NCCL's " << what
                << " for this collective on " << topo->name
                << " runs faster than every lowering of this schedule at the "
                   "step level";
      if (t.bestOwn >= 0)
        std::cerr << " (the schedule's best, "
                  << describeCandidate(t.candidates[t.bestOwn]) << ", takes "
                  << ratio << "x its time, geometric mean over those sizes)";
      else
        std::cerr << " (no lowering of the schedule fits)";
      std::cerr << ": writing it instead (--no-fallback keeps the "
                   "schedule)\n";
    }
    sched = *t.replacement;
  }
  if (served) {
    char gain[32];
    std::snprintf(gain, sizeof gain, "%.2f", served->score);
    std::cerr << "ccsynth: note: it serves "
              << (served->minBytes == 0 && served->maxBytes == 0
                      ? std::string("every size")
                      : byteRange(served->minBytes, served->maxBytes))
              << ": where the step-level model has it at least as fast as "
                 "NCCL's own program for the collective, tuned per size ("
              << gain
              << "x NCCL's speed, geometric mean over 1K, 4K, .., 1G with "
                 "NCCL's own at the other sizes); MSCCL leaves the other "
                 "sizes to NCCL (--min-bytes/--max-bytes set the range by "
                 "hand)\n";
    // One file holds one configuration (one protocol) for one run of sizes:
    // where the schedule's other configurations beat NCCL at other sizes,
    // an MSCCL_ALGO_DIR of one file per range serves those too.
    double logSum = 0;
    for (size_t k = 0; k < req.sizes.size() && k < t.ncclBestUs.size(); ++k) {
      double ownUs = INFINITY;
      for (const TuneCandidate &cand : t.candidates)
        if (cand.fromSchedule() && cand.selectableAt(req.sizes[k]))
          ownUs = std::min(ownUs, cand.timeUs[k]);
      if (ownUs < t.ncclBestUs[k])
        logSum += std::log(t.ncclBestUs[k] / ownUs);
    }
    double perRange = std::exp(logSum / (double)req.sizes.size());
    if (perRange > served->score * 1.02) {
      char dir[32];
      std::snprintf(dir, sizeof dir, "%.2f", perRange);
      std::cerr << "ccsynth: note: with a file per size range "
                   "(`--target msccl-dir`, tuned per size) the schedule "
                   "would reach about "
                << dir << "x NCCL's speed on the same measure, against " << gain
                << "x for this one file\n";
    }
  }
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
