//===- VerifyCommand.cpp - `ccsynth verify` -------------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "Command.h"

#include "ccsynth/Schedule/Verifier.h"

#include <iostream>
#include <memory>

namespace ccsynth::cli {

namespace {

struct VerifyCliOptions {
  TopoProfileArgs profile;
  std::string input;
  std::string topo;
  std::vector<std::string> defines;
  bool noTopo = false;
};

int runVerify(const VerifyCliOptions &o) {
  auto defs = parseDefines(o.defines);
  if (!defs)
    return usage(defs.error());
  auto sched = loadScheduleInput(o.input, *defs);
  if (!sched)
    return fail(sched.error());
  std::optional<Topology> topo;
  VerifyResult r;
  if (int rc = proveSchedule(*sched, o.input, o.topo, o.noTopo, topo, r,
                             &o.profile))
    return rc;
  std::cout << o.input << ": OK: " << sched->collective.describe() << ", "
            << r.transfers << " transfers in " << r.steps << " steps"
            << (!topo ? ""
                : sched->usesSwitches()
                    ? ", every transfer on a link or a "
                      "switch port of " +
                          topo->name
                    : ", every transfer on a link of " + topo->name)
            << "\n";
  return kExitOk;
}

} // namespace

void addVerifyCommand(CLI::App &app, CommandContext &ctx) {
  auto opts = std::make_shared<VerifyCliOptions>();
  CLI::App *cmd = app.add_subcommand(
      "verify",
      "Prove that a schedule implements its collective: symbolic execution "
      "checks that every output chunk holds exactly the required inputs, each "
      "reduction counts every input once, and no transfer reads data before "
      "it arrives. With a topology (the schedule's own, or --topo) every "
      "transfer must use an existing link. Exits 3 and names the first wrong "
      "rank/buffer/chunk when the proof fails.");
  cmd->add_option("FILE", opts->input, "Schedule JSON (or .ccl program)")
      ->required();
  cmd->add_option("--topo", opts->topo,
                  "Check links against this topology instead of the "
                  "schedule's own");
  cmd->add_flag("--no-topo", opts->noTopo, "Do not check links");
  addTopoProfileOptions(cmd, opts->profile);
  cmd->add_option("-D,--define", opts->defines,
                  "Set a .ccl program parameter, e.g. -D ranks=16");
  cmd->callback([opts, &ctx] { ctx.exitCode = runVerify(*opts); });
}

} // namespace ccsynth::cli
