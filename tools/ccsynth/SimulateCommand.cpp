//===- SimulateCommand.cpp - `ccsynth simulate` ---------------------------===//
#include "Command.h"

#include "ccsynth/Core/Json.h"
#include "ccsynth/Core/LowerBound.h"
#include "ccsynth/Core/Plot.h"
#include "ccsynth/Core/Simulator.h"
#include "ccsynth/Core/Verifier.h"

#include <cstdio>
#include <iostream>
#include <memory>

namespace ccsynth::cli {

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
};

struct Row {
  double bytes;
  SimResult sim;
  LowerBound bound;
};

int runSimulate(const SimulateCliOptions &o) {
  auto sizes = parseSizes(o.sizes);
  if (!sizes)
    return usage(sizes.error());
  auto defs = parseDefines(o.defines);
  if (!defs)
    return usage(defs.error());
  double timelineBytes = sizes->back();
  if (!o.timelineSize.empty()) {
    auto ts = parseSizes(o.timelineSize);
    if (!ts || ts->size() != 1)
      return usage(Error("--timeline-size takes one size, e.g. 1M"));
    timelineBytes = ts->front();
  }
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
    for (double bytes : *sizes) {
      SimOptions so;
      so.bytes = bytes;
      auto sim = simulate(*sched, *topo, so);
      if (!sim)
        return fail(sim.error());
      rows.push_back(
          {bytes, *sim, lowerBound(sched->collective, *topo, bytes)});
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
  std::fflush(stdout);
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
      "nccl-tests' factors. The schedule is verified first.");
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
  cmd->callback([opts, &ctx] { ctx.exitCode = runSimulate(*opts); });
}

} // namespace ccsynth::cli
