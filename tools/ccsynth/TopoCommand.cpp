//===- TopoCommand.cpp - `ccsynth topo list|show|import` ------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "Command.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

namespace ccsynth::cli {

namespace {

struct TopoOptions {
  TopoProfileArgs profile;
  std::string name;
  std::string file;
  std::string output = "-";
  bool json = false;
  int nodes = 1;
  double nvlinkAlpha = 0.7, pcieAlpha = 1.0, netAlpha = 2.0;
};

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// A human summary: nodes, link classes with counts, resources.
std::string summarize(const Topology &t) {
  std::ostringstream os;
  os << t.name << ": " << t.numRanks() << " ranks in " << t.numNodes()
     << (t.numNodes() == 1 ? " node" : " nodes") << "\n";
  if (!t.description.empty())
    os << "  " << t.description << "\n";
  // Group links by (kind, alpha, bandwidth, shared?).
  std::map<std::tuple<std::string, double, double, bool>, int> classes;
  for (const Link &l : t.links)
    classes[{toString(l.kind), l.alphaUs, l.bandwidthGBps,
             !l.resources.empty()}]++;
  os << "  links: " << t.links.size() << "\n";
  for (auto &[k, count] : classes)
    os << "    " << count << " x " << std::get<0>(k) << "  alpha "
       << fmt(std::get<1>(k)) << " us  " << fmt(std::get<2>(k)) << " GB/s"
       << (std::get<3>(k) ? "  (through shared resources)" : "") << "\n";
  std::map<double, int> res;
  for (const Resource &r : t.resources)
    res[r.bandwidthGBps]++;
  if (!res.empty()) {
    os << "  shared resources: " << t.resources.size() << "\n";
    for (auto &[bw, count] : res)
      os << "    " << count << " x " << fmt(bw) << " GB/s\n";
  }
  if (!t.switches.empty()) {
    os << "  in-network switches: " << t.switches.size() << "\n";
    // Per switch, unless many alike (one per node): the first, then a
    // count of the others.
    size_t shown = t.switches.size() > 4 ? 1 : t.switches.size();
    for (size_t i = 0; i < shown; ++i) {
      const InNetworkSwitch &sw = t.switches[i];
      double lo = sw.ports.front().bandwidthGBps, hi = lo;
      for (const SwitchPort &p : sw.ports) {
        lo = std::min(lo, p.bandwidthGBps);
        hi = std::max(hi, p.bandwidthGBps);
      }
      os << "    " << sw.name << ": " << toString(sw.kind) << ", "
         << sw.ports.size() << " ports of "
         << (lo == hi ? fmt(lo) : fmt(lo) + "-" + fmt(hi))
         << " GB/s, reduces and multicasts at " << fmt(sw.efficiency)
         << " of a port's two directions, latency " << fmt(sw.alphaUs)
         << " us\n";
    }
    if (shown < t.switches.size())
      os << "    ... and " << t.switches.size() - shown << " more like it\n";
  }
  const StepModel &m = t.stepModel;
  auto three = [&](const double *v) {
    return fmt(v[0]) + "/" + fmt(v[1]) + "/" + fmt(v[2]);
  };
  os << "  step model (Simple/LL128/LL): launch " << three(m.launchUs)
     << " us, step " << three(m.stepUs) << " us, threadblock copy "
     << three(m.tbCopyGBps) << " GB/s, reduce " << three(m.tbReduceGBps)
     << " GB/s, link efficiency " << fmt(m.linkEfficiency) << ", GPUs sm_"
     << m.smArch << " (a threadblock needs " << fmt(m.tbInFlightBytes)
     << " B in flight)\n";
  if (t.numRanks() <= 16) {
    os << "  bandwidth matrix (GB/s, best link src->dst):\n      ";
    for (int d = 0; d < t.numRanks(); ++d)
      os << (d < 10 ? "    " : "   ") << d;
    os << "\n";
    for (int s = 0; s < t.numRanks(); ++s) {
      os << "    " << (s < 10 ? " " : "") << s;
      for (int d = 0; d < t.numRanks(); ++d) {
        auto l = t.bestLink(s, d);
        char cell[16];
        if (s == d)
          std::snprintf(cell, sizeof cell, "%5s", "-");
        else if (!l)
          std::snprintf(cell, sizeof cell, "%5s", ".");
        else
          std::snprintf(cell, sizeof cell, "%5.0f", t.effectiveBandwidth(*l));
        os << cell;
      }
      os << "\n";
    }
  }
  return os.str();
}

int runList() {
  std::cout
      << "Built-in topologies (append xN for N nodes, e.g. dgx-h100x8):\n";
  for (const BuiltinInfo &b : builtinTopologies()) {
    std::string name = b.name;
    name.resize(std::max<size_t>(name.size(), 16), ' ');
    std::cout << "  " << name << " " << b.description << "\n";
  }
  std::cout << "Also accepted wherever a topology is expected: a ccsynth "
               "topology JSON file (docs/formats.md) or an NCCL topology dump "
               "(.xml, written with NCCL_TOPO_DUMP_FILE).\n";
  return kExitOk;
}

int runShow(const TopoOptions &o) {
  if (Status s = checkOutputsApart({topologyPathArg("the input {}", o.name),
                                    {"--topo-profile", o.profile.file}},
                                   {{"-o", o.output}});
      !s)
    return usage(s.error());
  auto t = loadTopologyArg(o.name, o.profile);
  if (!t)
    return fail(t.error());
  if (Status s =
          writeOutput(o.output, o.json ? topologyToJson(*t) : summarize(*t));
      !s)
    return fail(s.error());
  return kExitOk;
}

int runImport(const TopoOptions &o) {
  for (auto [flag, value] : {std::pair{"--nvlink-alpha", o.nvlinkAlpha},
                             std::pair{"--pcie-alpha", o.pcieAlpha},
                             std::pair{"--net-alpha", o.netAlpha}})
    if (!isUsableAlpha(value))
      return usage(Error(std::string(flag) + " " + formatFigure(value) +
                         " is out of range: it must be " + alphaRangeText()));
  if (Status s =
          checkOutputsApart({{"the input {}", o.file}}, {{"-o", o.output}});
      !s)
    return usage(s.error());
  auto text = readFile(o.file);
  if (!text)
    return fail(text.error());
  dropByteOrderMark(*text);
  size_t first = text->find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (*text)[first] != '<') {
    SourceLoc loc = locationOf(o.file, *text, first);
    bool json = (*text)[first] == '{' || (*text)[first] == '[';
    return fail(Error(
        std::string("'topo import' reads NCCL topology dumps (the XML NCCL "
                    "writes when NCCL_TOPO_DUMP_FILE is set); this file ") +
            (json ? "is JSON: a ccsynth topology JSON file needs no import, "
                    "pass it wherever a topology is expected (e.g. 'ccsynth "
                    "topo show FILE')"
                  : "is not XML"),
        loc, caretLine(*text, loc)));
  }
  NcclImportOptions opts;
  opts.nodes = o.nodes;
  opts.nvlinkAlphaUs = o.nvlinkAlpha;
  opts.pcieAlphaUs = o.pcieAlpha;
  opts.netAlphaUs = o.netAlpha;
  std::vector<Error> warnings;
  opts.warnings = &warnings;
  auto t = importNcclTopology(o.file, *text, opts);
  printWarnings(warnings);
  if (!t)
    return fail(t.error());
  if (Status s =
          writeOutput(o.output, o.json || o.output != "-" ? topologyToJson(*t)
                                                          : summarize(*t));
      !s)
    return fail(s.error());
  if (o.output != "-")
    std::cerr << summarize(*t);
  return kExitOk;
}

} // namespace

void addTopoCommand(CLI::App &app, CommandContext &ctx) {
  auto opts = std::make_shared<TopoOptions>();
  CLI::App *topo =
      app.add_subcommand("topo", "List, show and import machine topologies.");
  topo->require_subcommand(1);

  CLI::App *list =
      topo->add_subcommand("list", "List the built-in topologies.");
  list->callback([&ctx] { ctx.exitCode = runList(); });

  CLI::App *show = topo->add_subcommand(
      "show", "Describe a topology: ranks, nodes, link classes, shared "
              "resources and (for up to 16 ranks) its bandwidth matrix.");
  show->add_option("NAME", opts->name,
                   "Built-in name (dgx1, ndv2x2, dgx-a100x4, ring:8, ...), "
                   "topology JSON file, or NCCL topology dump (.xml)")
      ->required();
  show->add_flag("--json", opts->json,
                 "Print ccsynth's topology JSON instead of a summary");
  show->add_option("-o,--output", opts->output, "Output file (default stdout)");
  addTopoProfileOptions(show, opts->profile);
  show->callback([opts, &ctx] { ctx.exitCode = runShow(*opts); });

  CLI::App *imp = topo->add_subcommand(
      "import", "Import an NCCL topology dump (the XML NCCL writes when "
                "NCCL_TOPO_DUMP_FILE is set) into ccsynth's topology JSON.");
  imp->add_option("FILE", opts->file, "NCCL topology XML")->required();
  imp->add_option("--nodes", opts->nodes,
                  "Number of identical nodes to connect through their NICs")
      ->check(CLI::Range(1, 512));
  imp->add_option("--nvlink-alpha", opts->nvlinkAlpha,
                  "NVLink latency in us (NCCL's dump has none)");
  imp->add_option("--pcie-alpha", opts->pcieAlpha, "PCIe latency in us");
  imp->add_option("--net-alpha", opts->netAlpha, "Network latency in us");
  imp->add_flag("--json", opts->json, "Print JSON to stdout");
  imp->add_option("-o,--output", opts->output,
                  "Write the topology JSON here (default: summary to stdout)");
  imp->callback([opts, &ctx] { ctx.exitCode = runImport(*opts); });
}

} // namespace ccsynth::cli
