//===- SimulateCommand.cpp - `ccsynth simulate` ---------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `ccsynth simulate`: times a schedule or an MSCCL program at each size.
// runSimulate gives the chunk-level simulation and the lower bound at each
// size and, with the step level, simulateStepLevel: the compiled program
// (or NCCL's kernel, for NCCL's own programs) timed by the step simulator,
// with the critical path of the largest size (formatCriticalPath). It
// writes the report and, on request, the SVG timeline and bandwidth plot.
// See docs/calibration.md ("Chunk level and step level").
//
//===----------------------------------------------------------------------===//
#include "Command.h"

#include "ccsynth/Analysis/LowerBound.h"
#include "ccsynth/Analysis/Plot.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Perf/NcclKernel.h"
#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/Support/Json.h"

#ifdef CCSYNTH_HAVE_MLIR
#include "ccsynth/Perf/StepPrediction.h"
#include "ccsynth/Tuning/Tuning.h"
#endif

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <set>

namespace ccsynth::cli {

#ifdef CCSYNTH_HAVE_MLIR
using namespace ccsynth::tuning;
#endif

namespace {

struct SimulateCliOptions {
  TopoProfileArgs profile;
  std::vector<std::string> inputs;
  std::string topo;
  std::string sizes = "1K,1M,1G";
  std::string plot;
  std::string timeline;
  std::string timelineSize;
  std::vector<std::string> defines;
  bool json = false;
  /// chunks: the schedule's transfers; steps: the lowered program.
  std::string level = "chunks";
  /// Lowering for --level steps.
  std::string protocol;
  int instances = 1;
  int pipeline = 1;
  /// What runs the program: msccl-xml (MSCCL's interpreter) or cuda
  /// (ccsynth's generated code).
  std::string target = "msccl-xml";
  std::string tileBytes;
  /// --target cuda: switch threadblocks per rank and switch (0: the
  /// untuned lowering's 16).
  int switchLanes = 0;
  /// Print the program's critical path at the largest size (first input).
  int criticalPath = 0;
  /// --target nccl: the communicator's channels; each size then runs on
  /// the channels NCCL launches for it (0: --instances for every size).
  int ncclChannels = 0;
};

/// Whether `s` is one of the programs NCCL's own kernels run: its rings,
/// its double binary tree, or direct sends for AllToAll, as `ccsynth
/// baseline` builds them.
bool isNcclProgram(const Schedule &s) {
  return s.origin == "baseline:ring" || s.origin == "baseline:tree" ||
         (s.origin == "baseline:direct" &&
          s.collective.kind == CollectiveKind::AllToAll);
}

struct Row {
  double bytes;
  SimResult sim;
  LowerBound bound;
};

#ifdef CCSYNTH_HAVE_MLIR
/// The report of --critical-path: the latest `shown` steps of the path,
/// then where its time goes.
std::string formatCriticalPath(const msccl::StepSimResult &r, double bytes,
                               int shown) {
  const std::vector<msccl::CriticalStep> &path = r.criticalPath;
  std::string out;
  char line[320];
  std::string passes =
      r.simulated < r.iterations
          ? std::to_string(r.simulated) + " of its " +
                std::to_string(r.iterations) +
                " passes (the rest are extrapolated from the last)"
          : std::to_string(r.iterations) +
                (r.iterations == 1 ? " pass" : " passes");
  std::snprintf(line, sizeof line,
                "  critical path at %s: %zu steps over %s, in us from the "
                "kernel's start (its launch, %.2f us, comes before); latest "
                "first:\n",
                formatBytes(bytes).c_str(), path.size(), passes.c_str(),
                r.launchUs);
  out += line;
  for (size_t i = 0; i < path.size() && (int)i < shown; ++i) {
    const msccl::CriticalStep &c = path[i];
    char rate[48] = "";
    if (c.rateGBps > 0)
      std::snprintf(rate, sizeof rate, " at %.2f GB/s", c.rateGBps);
    std::snprintf(line, sizeof line,
                  "    rank %d tb %d pass %lld step %d: %s x%d%s, %.2f-%.2f "
                  "us, after %s\n",
                  c.rank, c.tb, c.pass, c.step, msccl::toString(c.type),
                  c.count, rate, c.startUs, c.endUs, toString(c.after));
    out += line;
  }
  if ((int)path.size() > shown) {
    std::snprintf(line, sizeof line, "    ... %zu earlier steps\n",
                  path.size() - (size_t)shown);
    out += line;
  }
  // Where the path's time goes: each step's own time, per threadblock,
  // and the gaps before the steps that waited for an arrival (the path's
  // first step starts at 0).
  std::map<std::pair<int, int>, double> busy;
  double waiting = 0, total = path.empty() ? 0 : path.front().endUs;
  for (size_t i = 0; i < path.size(); ++i) {
    const msccl::CriticalStep &c = path[i];
    busy[{c.rank, c.tb}] += c.endUs - c.startUs;
    if (i + 1 < path.size())
      waiting += std::max(0.0, c.startUs - path[i + 1].endUs);
  }
  std::vector<std::pair<double, std::pair<int, int>>> byTb;
  for (const auto &[tb, us] : busy)
    byTb.push_back({us, tb});
  std::sort(byTb.begin(), byTb.end(), [](const auto &a, const auto &b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  std::snprintf(line, sizeof line,
                "  on the path: %.2f us; %.2f us waiting for messages to "
                "arrive, the rest moving data in %zu threadblocks",
                total, waiting, byTb.size());
  out += line;
  for (size_t i = 0; i < byTb.size() && i < 3; ++i) {
    std::snprintf(line, sizeof line, "%s rank %d tb %d %.2f us",
                  i == 0 ? ", most in" : ",", byTb[i].second.first,
                  byTb[i].second.second, byTb[i].first);
    out += line;
  }
  out += "\n";
  return out;
}
#endif

/// Times one input at every size with the step-level simulator; `program`
/// receives a description of what was timed.
int simulateStepLevel(const SimulateCliOptions &o, const std::string &input,
                      const Schedule &sched, const Topology &topo,
                      const std::vector<double> &sizes, std::vector<Row> &rows,
                      std::string &program, std::string *pathReport) {
  if (sched.usesSwitches() && o.target != "cuda") {
    if (pathReport)
      return usage(Error("--critical-path follows a step program; one with "
                         "switch transfers is timed with NCCL's NVLS "
                         "runtime model (add --target cuda to time it as "
                         "ccsynth's generated code)",
                         SourceLoc{input}));
    if (!o.protocol.empty() || o.instances != 1 || o.pipeline != 1 ||
        !o.tileBytes.empty())
      return usage(Error("--protocol, --instances, --pipeline and "
                         "--tile-bytes lower a schedule to a step program; "
                         "one with switch transfers is timed with NCCL's "
                         "NVLS runtime model instead (or, with --target "
                         "cuda, as ccsynth's generated code runs it)",
                         SourceLoc{input}));
    program = "NCCL's NVLS runtime model: the chunk simulation at the step "
              "model's data rates plus one Simple launch";
    auto results = simulateInNetworkRuntime(sched, topo, sizes);
    if (!results)
      return fail(results.error());
    for (size_t i = 0; i < sizes.size(); ++i)
      rows.push_back({sizes[i], (*results)[i],
                      lowerBound(sched.collective, topo, sizes[i])});
    return kExitOk;
  }
#ifdef CCSYNTH_HAVE_MLIR
  CompileOptions c;
  c.instances = o.instances;
  c.pipeline = o.pipeline;
  c.protocol = o.protocol;
  c.switchLanes = o.switchLanes;
  c.verify = false; // proven just above
  bool generated = o.target == "cuda";
  if (generated)
    c.target = CompileTarget::Cuda;
  if (perf::isMscclXmlInput(input) &&
      (!o.protocol.empty() || o.instances != 1 || o.pipeline != 1))
    return usage(Error("--protocol, --instances and --pipeline lower a "
                       "schedule; an MSCCL XML input is timed as written",
                       SourceLoc{input}));
  if (perf::isMscclXmlInput(input) && generated)
    return usage(Error("--target cuda times the program generated from a "
                       "schedule; an MSCCL XML input runs on MSCCL",
                       SourceLoc{input}));
  double tile = 1 << 20;
  if (!o.tileBytes.empty()) {
    auto v = parseTileBytes(o.tileBytes);
    if (!v)
      return usage(v.error());
    tile = (double)*v;
  }
  bool native = o.target == "nccl";
  if (native && perf::isMscclXmlInput(input))
    return usage(Error("--target nccl times a schedule (`ccsynth baseline "
                       "ring`, `tree` or `direct`); an MSCCL XML input runs "
                       "on MSCCL",
                       SourceLoc{input}));
  if (native && !isNcclProgram(sched))
    return usage(Error(
        "--target nccl times one of NCCL's own programs as "
        "NCCL's kernel runs it: a `ccsynth baseline ring`, "
        "`tree` or `direct` schedule (this one's origin is '" +
            (sched.origin.empty() ? std::string("none") : sched.origin) + "')",
        SourceLoc{input}));
  // NCCL's kernel loops over a ring of any length on one threadblock per
  // ring and channel; MSCCL's interpreter cuts a ring longer than its 64
  // steps per threadblock over several, which share its links. Where the
  // lowering of generated code (no step table to fit in) leaves such a
  // threadblock, that program is timed as NCCL's kernel runs it, as the
  // tuned compile times what NCCL reaches; elsewhere the MSCCL lowering is
  // NCCL's.
  Expected<msccl::Algo> algo = Error("");
  bool longRing = false;
  if (native) {
    CompileOptions n = c;
    n.target = CompileTarget::Cuda;
    algo = perf::stepProgram(input, sched, n);
    longRing = algo && passesMscclSteps(*algo);
    if (longRing && !o.protocol.empty())
      algo->proto = o.protocol;
  }
  if (!longRing)
    algo = perf::stepProgram(input, sched, c);
  if (!algo)
    return fail(algo.error());
  program = perf::describeProgram(*algo);
  if (native)
    program += longRing ? ", each ring on one threadblock per channel as "
                          "NCCL's kernel runs it"
                        : ", the hops MSCCL's lowering gives (no threadblock "
                          "passes MSCCL's 64 steps) timed as NCCL's kernel "
                          "runs them";
  std::vector<msccl::StepSimOptions> perSize;
  for (double bytes : sizes)
    perSize.push_back(native ? ncclNativeStepOptions(sched.collective, bytes)
                             : perf::stepSimOptions(sched.collective, bytes,
                                                    generated, tile));
  // The largest size's timing records its critical path.
  perSize.back().criticalPath = pathReport != nullptr;
  auto timed = msccl::simulateStepsAt(*algo, topo, perSize);
  if (!timed)
    return fail(timed.error());
  if (pathReport)
    *pathReport =
        formatCriticalPath(timed->back(), sizes.back(), o.criticalPath);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const msccl::StepSimResult &r = (*timed)[i];
    SimResult sim;
    sim.timeUs = r.timeUs;
    sim.algbwGBps = r.algbwGBps;
    sim.busbwGBps = r.busbwGBps;
    rows.push_back(
        {sizes[i], sim, lowerBound(sched.collective, topo, sizes[i])});
  }
  return kExitOk;
#else
  (void)o, (void)sched, (void)topo, (void)sizes, (void)rows, (void)program,
      (void)pathReport;
  return fail(Error("--level steps needs the compiler, which this build "
                    "(without MLIR) lacks",
                    SourceLoc{input}));
#endif
}

int runSimulate(const SimulateCliOptions &o) {
  auto sizes = parseSizes(o.sizes);
  if (!sizes)
    return usage(sizes.error());
  auto defs = parseDefines(o.defines);
  if (!defs)
    return usage(defs.error());
  bool steps = o.level == "steps";
  if (!steps && o.level != "chunks")
    return usage(
        Error("unknown level '" + o.level + "' (expected chunks or steps)"));
  if (!steps && (!o.protocol.empty() || o.instances != 1 || o.pipeline != 1))
    return usage(Error("--protocol, --instances and --pipeline apply to "
                       "--level steps"));
  if (o.target != "msccl-xml" && o.target != "cuda" && o.target != "nccl")
    return usage(Error("unknown target '" + o.target +
                       "' (expected msccl-xml, cuda or nccl)"));
  if (!steps && (o.target != "msccl-xml" || !o.tileBytes.empty()))
    return usage(Error("--target and --tile-bytes apply to --level steps"));
  if (o.target != "cuda" && !o.tileBytes.empty())
    return usage(Error("--tile-bytes applies to --target cuda"));
  if (o.switchLanes != 0 && (!steps || o.target != "cuda"))
    return usage(Error("--switch-lanes applies to --level steps --target "
                       "cuda (generated code's switch threadblocks)"));
  if (o.instances < 1 || o.pipeline < 1)
    return usage(Error("--instances and --pipeline must be at least 1"));
  if (o.ncclChannels != 0 && (o.target != "nccl" || o.instances != 1))
    return usage(Error("--nccl-channels applies to --level steps --target "
                       "nccl, without --instances (it picks the channels "
                       "per size)"));
  if (o.ncclChannels < 0 || o.ncclChannels > 64)
    return usage(Error("--nccl-channels must be from 1 to 64"));
  if (o.criticalPath > 0 && !steps)
    return usage(Error("--critical-path follows the step program; add "
                       "--level steps"));
  if (o.criticalPath > 0 && o.json)
    return usage(Error("--critical-path prints text; drop --json"));
  if (steps && !o.timeline.empty())
    return usage(Error("--timeline draws the chunk-level simulation; drop "
                       "--level steps"));
  double timelineBytes = sizes->back();
  if (!o.timelineSize.empty()) {
    auto ts = parseSizes(o.timelineSize);
    if (!ts || ts->size() != 1)
      return usage(Error("--timeline-size takes one size, e.g. 1M"));
    timelineBytes = ts->front();
  }
  // No output may replace an input or the other output.
  std::vector<PathArg> inputs{topologyPathArg("-t", o.topo),
                              {"--topo-profile", o.profile.file}};
  for (const std::string &input : o.inputs)
    inputs.push_back({"the input {}", input});
  std::vector<PathArg> outputPaths{{"--plot", o.plot},
                                   {"--timeline", o.timeline}};
  if (Status s = checkOutputsApart(inputs, outputPaths); !s)
    return usage(s.error());
  // Both outputs are checked before the work and written together at the
  // end: when one cannot be written, neither is.
  if (Status s = checkOutputs({o.timeline, o.plot}); !s)
    return fail(s.error());
  std::vector<OutputFile> outputs;
  std::vector<PlotSeries> series;
  OrderedJson report = OrderedJson::array();
  for (const std::string &input : o.inputs) {
    auto sched = loadScheduleInput(input, *defs);
    if (!sched)
      return fail(sched.error());
    if (o.topo.empty())
      if (auto named = scheduleTopologyPath(*sched))
        if (Status s = checkOutputsApart(
                {topologyPathArg("the topology {} that " + input + " names",
                                 *named)},
                outputPaths);
            !s)
          return usage(s.error());
    auto topo = topologyFor(*sched, o.topo, &o.profile);
    if (!topo)
      return fail(topo.error());
    VerifyOptions vo;
    vo.topology = &*topo;
    VerifyResult vr = verifySchedule(*sched, vo);
    if (!vr.ok())
      return fail(Error("refusing to simulate a schedule that does not "
                        "verify: " +
                            vr.issues[0].message +
                            " (run `ccsynth verify` for details)",
                        SourceLoc{input}),
                  kExitVerifyFailed);
    std::vector<Row> rows;
    std::string program, pathReport;
    if (steps && o.ncclChannels > 0) {
      // NCCL drops channels for small calls: each size on the channels
      // NCCL launches for it (one instance is one channel per ring).
      std::set<int> rings;
      for (const Transfer &t : sched->transfers)
        rings.insert(t.channel);
      int perInstance = std::max<int>(1, (int)rings.size());
      int proto = stepProtocolIndex(o.protocol.empty() ? std::string("Simple")
                                                       : o.protocol)
                      .value_or(0);
      std::map<int, std::vector<double>> byInstances;
      for (double bytes : *sizes)
        byInstances[std::max(1, perf::ncclRingLaunch(proto,
                                                     sched->collective.numRanks,
                                                     bytes, o.ncclChannels)
                                        .channels /
                                    perInstance)]
            .push_back(bytes);
      std::map<double, Row> bySize;
      for (const auto &[k, subset] : byInstances) {
        SimulateCliOptions one = o;
        one.instances = k;
        std::vector<Row> part;
        bool last = subset.back() == sizes->back();
        if (int rc = simulateStepLevel(
                one, input, *sched, *topo, subset, part, program,
                o.criticalPath > 0 && last && &input == &o.inputs.front()
                    ? &pathReport
                    : nullptr);
            rc != kExitOk)
          return rc;
        for (const Row &r : part)
          bySize.emplace(r.bytes, r);
      }
      for (double bytes : *sizes)
        rows.push_back(bySize.at(bytes));
      program += "; channels per size as NCCL launches them out of " +
                 std::to_string(o.ncclChannels);
    } else if (steps) {
      bool first = &input == &o.inputs.front();
      if (int rc = simulateStepLevel(
              o, input, *sched, *topo, *sizes, rows, program,
              o.criticalPath > 0 && first ? &pathReport : nullptr);
          rc != kExitOk)
        return rc;
    } else {
      for (double bytes : *sizes) {
        SimOptions so;
        so.bytes = bytes;
        auto sim = simulate(*sched, *topo, so);
        if (!sim)
          return fail(sim.error());
        rows.push_back(
            {bytes, *sim, lowerBound(sched->collective, *topo, bytes)});
      }
    }
    PlotSeries busbw{sched->name.empty() ? input : sched->name, {}};
    PlotSeries boundSeries{"lower bound (" + topo->name + ")", {}};
    double factor = sched->collective.busBwFactor();
    for (const Row &r : rows) {
      busbw.points.push_back({r.bytes, r.sim.busbwGBps});
      boundSeries.points.push_back(
          {r.bytes, r.bytes / (r.bound.timeUs() * 1e3) * factor});
    }
    series.push_back(busbw);
    if (o.inputs.size() == 1)
      series.push_back(boundSeries);
    if (o.json) {
      OrderedJson j;
      j["input"] = input;
      j["schedule"] = sched->name;
      j["topology"] = topo->name;
      j["collective"] = sched->collective.describe();
      j["level"] = o.level;
      if (steps) {
        j["program"] = program;
        j["target"] = o.target;
      }
      for (const Row &r : rows)
        j["results"].push_back(
            {{"bytes", r.bytes},
             {"time_us", r.sim.timeUs},
             {"algbw_gbps", r.sim.algbwGBps},
             {"busbw_gbps", r.sim.busbwGBps},
             {"bound_us", r.bound.timeUs()},
             {"pct_of_bound", 100 * r.bound.timeUs() / r.sim.timeUs}});
      report.push_back(j);
      continue;
    }
    std::printf("%s: %s on %s (%d ranks), %zu transfers in %d steps\n",
                input.c_str(), sched->collective.describe().c_str(),
                topo->name.c_str(), topo->numRanks(), sched->transfers.size(),
                sched->numSteps());
    if (steps)
      std::printf(sched->usesSwitches() && o.target != "cuda"
                      ? "  step level: %s%s\n"
                      : "  step level: the lowered "
                        "program (%s)%s\n",
                  program.c_str(),
                  o.target == "cuda"
                      ? ", as ccsynth's generated code runs it (not "
                        "calibrated on hardware)"
                      : "");
    std::printf("%10s %12s %12s %12s %12s %8s\n", "size", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)", "bound(us)", "%bound");
    for (const Row &r : rows)
      std::printf("%10s %12.2f %12.2f %12.2f %12.2f %7.1f%%\n",
                  formatBytes(r.bytes).c_str(), r.sim.timeUs, r.sim.algbwGBps,
                  r.sim.busbwGBps, r.bound.timeUs(),
                  100 * r.bound.timeUs() / r.sim.timeUs);
    const Row &last = rows.back();
    std::printf("  bound at %s: %s\n", formatBytes(last.bytes).c_str(),
                last.bound.bandwidthUs >= last.bound.latencyUs
                    ? ("bandwidth, " + last.bound.bindingCut).c_str()
                    : "latency (topology diameter)");
    std::fputs(pathReport.c_str(), stdout);
    if (!o.timeline.empty() && &input == &o.inputs.front()) {
      SimOptions so;
      so.bytes = timelineBytes;
      so.recordTimeline = true;
      auto sim = simulate(*sched, *topo, so);
      if (!sim)
        return fail(sim.error());
      std::string title = (sched->name.empty() ? input : sched->name) + " on " +
                          topo->name + " at " + formatBytes(timelineBytes);
      outputs.push_back({o.timeline, timelineSvg(*sched, *topo, *sim, title)});
    }
  }
  if (o.json)
    std::cout << report.dump(2) << "\n";
  if (!o.plot.empty())
    outputs.push_back({o.plot, bandwidthPlotSvg("busbw vs size", series)});
  // The report first: when it cannot be printed, no file is written.
  if (Status s = flushStdout(); !s)
    return fail(s.error());
  if (Status s = writeOutputs(outputs); !s)
    return fail(s.error());
  if (!o.timeline.empty())
    std::fprintf(stderr, "wrote timeline %s\n", o.timeline.c_str());
  if (!o.plot.empty())
    std::fprintf(stderr, "wrote plot %s\n", o.plot.c_str());
  return kExitOk;
}

} // namespace

void addSimulateCommand(CLI::App &app, CommandContext &ctx) {
  auto opts = std::make_shared<SimulateCliOptions>();
  CLI::App *cmd = app.add_subcommand(
      "simulate", "Predict time, algbw and busbw per buffer size, with the "
                  "gap to a cut-based lower bound.");
  cmd->footer(
      "Model: alpha-beta per link; transfers on a link run one at a time in "
      "schedule order; NVSwitch ports and NICs shared by several links are "
      "divided max-min fairly; a transfer starts when its inputs have "
      "arrived. Sizes follow nccl-tests (total bytes for allgather/"
      "reducescatter/alltoall; K/M/G are powers of 1024); busbw uses "
      "nccl-tests' factors. The schedule is verified first. --level steps "
      "times the program the compiler lowers it to instead (docs/"
      "calibration.md).");
  cmd->add_option("FILE", opts->inputs,
                  "Schedule JSON or .ccl program (several to compare)")
      ->required();
  cmd->add_option("-t,--topo", opts->topo,
                  "Topology (default: the one the schedule names)");
  addTopoProfileOptions(cmd, opts->profile);
  cmd->add_option("-s,--sizes", opts->sizes,
                  "Comma-separated buffer sizes (default 1K,1M,1G)");
  cmd->add_option("--plot", opts->plot, "Write an SVG plot of busbw vs size");
  cmd->add_option("--timeline", opts->timeline,
                  "Write an SVG timeline (one lane per link) of the first "
                  "schedule");
  cmd->add_option("--timeline-size", opts->timelineSize,
                  "Size for the timeline (default: the largest size)");
  cmd->add_option("-D,--define", opts->defines,
                  "Set a .ccl program parameter, e.g. -D ranks=16");
  cmd->add_flag("--json", opts->json, "Print results as JSON");
  cmd->add_option("--level", opts->level,
                  "chunks (default): time the schedule's transfers; steps: "
                  "time the lowered per-threadblock program MSCCL runs "
                  "(protocol, channels, threadblocks, bounded buffers; an "
                  "MSCCL XML input as written)");
  cmd->add_option("--protocol", opts->protocol,
                  "--level steps: lower with this protocol (Simple, LL, "
                  "LL128; default: the schedule's)");
  cmd->add_option("--instances", opts->instances,
                  "--level steps: lower with this many instances (channels)");
  cmd->add_option("--pipeline", opts->pipeline,
                  "--level steps: split chunks into this many pipelined "
                  "parts");
  cmd->add_option("--target", opts->target,
                  "--level steps: what runs the program: msccl-xml "
                  "(default; MSCCL's interpreter) or cuda (ccsynth's "
                  "generated code: passes of --tile-bytes, puts straight "
                  "into the receiver's memory, no MSCCL buffers or limits; "
                  "not calibrated on hardware) or nccl (NCCL's own kernel, "
                  "for `baseline ring`, `tree` and `direct` schedules: as "
                  "MSCCL runs them, except that a ring longer than MSCCL's "
                  "64 steps per threadblock runs on one threadblock per "
                  "channel, which MSCCL would cut over several; what the "
                  "tuned compile compares with)");
  cmd->add_option("--nccl-channels", opts->ncclChannels,
                  "--target nccl: the communicator's channel count (NCCL "
                  "2.18 on 8 x H100: 24, or NCCL_MIN_NCHANNELS); each size "
                  "then runs on the channels NCCL launches for it, fewer "
                  "for small calls (its enqueue rule: channels, then "
                  "threads, dropped while the buffer is under channels x "
                  "threads x a per-protocol threshold)");
  cmd->add_option("--tile-bytes", opts->tileBytes,
                  "--target cuda: bytes per chunk per pass (default 1M, as "
                  "compile --target cuda)");
  cmd->add_option("--switch-lanes", opts->switchLanes,
                  "--target cuda: lower a schedule's switch operations "
                  "into at most this many switch threadblocks per rank and "
                  "switch (default 16, NCCL's NVLS channels; the tuned "
                  "compile also weighs 4, as `compile --switch-lanes`); "
                  "schedules without switch operations are unaffected")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--critical-path", opts->criticalPath,
                  "--level steps: after the table, print the first input's "
                  "critical path at the largest size: the step that ends "
                  "last, the step it waited for, and so on back to the "
                  "start (the latest N of them, each with what it waited "
                  "for: its threadblock's previous step, another "
                  "threadblock of its rank, its message's arrival, room at "
                  "the receiver), and where the path's time goes: moving "
                  "data per threadblock, and waiting for arrivals")
      ->check(CLI::Range(1, 100000));
  cmd->callback([opts, &ctx] { ctx.exitCode = runSimulate(*opts); });
}

} // namespace ccsynth::cli
