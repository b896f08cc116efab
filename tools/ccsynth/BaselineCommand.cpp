//===- BaselineCommand.cpp - `ccsynth baseline` ---------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "Command.h"

#include "ccsynth/Baselines/Baselines.h"

#include <iostream>
#include <memory>

namespace ccsynth::cli {

namespace {

struct BaselineCliOptions {
  TopoProfileArgs profile;
  std::string kind;
  std::string collective;
  std::string topo;
  std::string output;
  bool inPlace = false;
  int root = 0;
  int pipeline = 0;
};

int runBaseline(const BaselineCliOptions &o) {
  auto kind = parseBaselineKind(o.kind);
  if (!kind)
    return usage(Error("unknown baseline '" + o.kind +
                       "' (expected ring, tree, direct, hierarchical, nvls, "
                       "collnet or nvls-sharp)"));
  auto coll = parseCollectiveKind(o.collective);
  if (!coll || *coll == CollectiveKind::Custom)
    return usage(Error("unknown collective '" + o.collective +
                       "' (expected one of: " + collectiveKindNames() + ")"));
  if (Status s = checkOutputsApart(
          {topologyPathArg("-t", o.topo), {"--topo-profile", o.profile.file}},
          {{"-o", o.output}});
      !s)
    return usage(s.error());
  if (Status s = checkOutputs({o.output}); !s)
    return fail(s.error());
  auto topo = loadTopologyArg(o.topo, o.profile);
  if (!topo)
    return fail(topo.error());
  BaselineOptions bo;
  bo.inPlace = o.inPlace;
  bo.root = o.root;
  bo.pipeline = o.pipeline;
  auto sched = makeBaseline(*kind, *coll, *topo, bo);
  if (!sched) {
    // What the topology lacks (e.g. a path between two ranks) is an error
    // in the topology file, when one was given.
    Error e = sched.error();
    if (e.loc.file.empty() && o.topo != topo->name)
      e.loc = SourceLoc{o.topo};
    return fail(e);
  }
  // Record the topology (a file by its path from the schedule's directory)
  // with its content hash, so that later commands find and check the same
  // machine.
  recordTopology(*sched, o.topo, *topo, o.output);
  if (Status s = writeOutput(o.output, scheduleToJson(*sched)); !s)
    return fail(s.error());
  std::cerr << "wrote " << o.output << ": " << sched->name << ", "
            << sched->collective.describe() << ", " << sched->transfers.size()
            << " transfers in " << sched->numSteps() << " steps (verified)\n";
  return kExitOk;
}

} // namespace

void addBaselineCommand(CLI::App &app, CommandContext &ctx) {
  auto opts = std::make_shared<BaselineCliOptions>();
  CLI::App *cmd = app.add_subcommand(
      "baseline", "Write a verified reference schedule (ring, tree, direct, "
                  "hierarchical, nvls, collnet, nvls-sharp, collnet-chain).");
  cmd->footer(
      "Kinds: ring (NCCL-style, as many edge-disjoint rings as the topology "
      "has; alltoall relays every chunk along the ring), tree (double binary "
      "tree for allreduce; binary tree for "
      "broadcast/reduce), direct (all-pairs), hierarchical (intra-node then "
      "inter-node; multi-node topologies only), nvls (NCCL's NVLink SHARP "
      "algorithm for allreduce, reducescatter and allgather: each rank "
      "reduces its slice in the NVSwitch and multicasts the result; on "
      "several nodes NVLS-tree, allreduce only: the slices' partial sums "
      "cross the network along a chain of nodes; needs an NVLS switch per "
      "node, as on dgx-h100, dgx-b200 and gb200-nvl72; its schedules "
      "compile to generated code only), collnet (NCCL's "
      "CollNet Direct allreduce through IB SHARP: each node's ranks send "
      "their slices to the slice's head over NVLink, the network's switches "
      "add the heads' partials and return the total, and the heads send it "
      "to their node; allgather and reducescatter through the rails, local "
      "rank k of every node: the network's allgather delivers each rank's "
      "input to its rail, own node included, and each member sends it to "
      "its node over NVLink (reducescatter the reverse, the network adding "
      "the heads' partials), with one NIC per GPU only, as NCCL; needs "
      "several nodes joined by a SHARP switch, as on "
      "dgx-h100xN, dgx-b200xN and gb200-nvl72xN; simulated, not compiled), "
      "nvls-sharp (NCCL's NVLS across nodes where the network "
      "reduces: for allreduce each node's NVSwitch reduces slice k into its "
      "rank k, the network's SHARP switches add the nodes' partials and "
      "return the total, and rank k multicasts it to its node through the "
      "NVSwitch; allgather and reducescatter as collnet's with the node's "
      "part done by one NVSwitch multicast or reduction; "
      "needs an NVLS switch per node and a SHARP switch, as on dgx-h100xN, "
      "dgx-b200xN and gb200-nvl72xN; simulated, not compiled), "
      "collnet-chain (NCCL's CollNet Chain allreduce: as collnet, with "
      "slice k reduced along a chain of the node's ranks that ends at rank "
      "k and the total sent back down it; simulated, not compiled). "
      "Where ranks are not adjacent the chunks are forwarded along the "
      "shortest route.");
  cmd->add_option("KIND", opts->kind,
                  "ring | tree | direct | hierarchical | nvls | collnet | "
                  "nvls-sharp | collnet-chain")
      ->required();
  cmd->add_option("-c,--collective", opts->collective,
                  "allgather, reducescatter, allreduce, broadcast, reduce, "
                  "gather, scatter, alltoall")
      ->required();
  cmd->add_option("-t,--topo", opts->topo,
                  "Topology: built-in name, JSON file or NCCL dump")
      ->required();
  addTopoProfileOptions(cmd, opts->profile);
  cmd->add_option("-o,--output", opts->output,
                  "Schedule JSON to write ('-' = stdout)")
      ->required();
  cmd->add_flag("--inplace", opts->inPlace, "In-place variant");
  cmd->add_option("--root", opts->root, "Root rank of rooted collectives");
  cmd->add_option("--pipeline", opts->pipeline,
                  "Pipeline depth (chunks per segment; 0 = default)")
      ->check(CLI::Range(0, 64));
  cmd->callback([opts, &ctx] { ctx.exitCode = runBaseline(*opts); });
}

} // namespace ccsynth::cli
