//===- CheckCommand.cpp - `ccsynth check` ---------------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Compiles a .ccl program (parse, Sema, lowering with -D parameters), proves
// the resulting schedule implements its collective with the verifier, prints
// a summary, and optionally writes the schedule JSON (only when verified).
//
//===----------------------------------------------------------------------===//
#include "Command.h"

#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/DSL/Frontend.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

namespace ccsynth::cli {

namespace {

struct CheckCliOptions {
  std::string input;
  std::vector<std::string> defines;
  std::string output;
  std::string topo;
  bool quiet = false;
};

std::string summarize(const std::string &input,
                      const dsl::LoweredProgram &lowered, const VerifyResult &r,
                      const Topology *topo) {
  const Schedule &s = lowered.schedule;
  std::ostringstream os;
  os << input << ": OK: " << s.collective.describe() << " is implemented";
  if (topo)
    os << (s.usesSwitches() ? ", every transfer on a link or a switch port of "
                            : ", every transfer on a link of ")
       << topo->name;
  os << "\n";
  if (!lowered.params.empty()) {
    os << "  parameters:";
    for (const auto &[name, value] : lowered.params)
      os << " " << name << "=" << value;
    os << "\n";
  }
  int copies = 0, reduces = 0, switchReduces = 0, multicasts = 0;
  std::map<int, int> perStep;
  for (const Transfer &t : s.transfers) {
    (t.op == TransferOp::Copy           ? copies
     : t.op == TransferOp::Reduce       ? reduces
     : t.op == TransferOp::SwitchReduce ? switchReduces
                                        : multicasts)++;
    perStep[t.step]++;
  }
  int widest = 0;
  for (const auto &[step, count] : perStep)
    widest = std::max(widest, count);
  os << "  transfers: " << r.transfers << " (" << copies << " copy, " << reduces
     << " reduce";
  if (switchReduces + multicasts > 0)
    os << ", " << switchReduces << " switch_reduce, " << multicasts
       << " multicast";
  os << ") in " << r.steps << (r.steps == 1 ? " step" : " steps")
     << ", at most " << widest << " per step\n";
  os << "  chunks per rank: input " << s.bufferChunks(BufferKind::Input)
     << ", output " << s.bufferChunks(BufferKind::Output) << ", scratch "
     << s.scratchChunks << "\n";
  os << "  protocol " << s.protocol << ", instances " << s.instances << "\n";
  return os.str();
}

int runCheck(const CheckCliOptions &o) {
  auto defs = parseDefines(o.defines);
  if (!defs)
    return usage(defs.error());
  if (!o.input.ends_with(".ccl"))
    return fail(Error("'check' takes a .ccl program (use 'verify' for a "
                      "schedule JSON)",
                      SourceLoc{o.input}));
  if (Status s = checkOutputsApart(
          {{"the input {}", o.input}, topologyPathArg("--topo", o.topo)},
          {{"-o", o.output}});
      !s)
    return usage(s.error());
  dsl::LoweringOptions options;
  options.defines = *defs;
  auto lowered = dsl::compileFile(o.input, options);
  if (!lowered)
    return fail(lowered.error());
  const Schedule &sched = lowered->schedule;
  VerifyOptions vo;
  std::optional<Topology> topo;
  if (!o.topo.empty()) {
    auto t = topologyFor(sched, o.topo);
    if (!t)
      return fail(t.error());
    topo = t.take();
    vo.topology = &*topo;
  }
  VerifyResult r = verifySchedule(sched, vo);
  if (!r.ok()) {
    for (const VerifyIssue &issue : r.issues) {
      SourceLoc loc = issueLocation(sched, o.input, issue);
      std::string notes = caretFor(loc);
      if (issue.transfer < 0 && issue.loc.buffer == BufferKind::Output) {
        // An output chunk ends wrong: for a custom collective also show the
        // `output(...) = ...` condition it violates; when no transfer wrote
        // the chunk, point at that condition (or the collective) instead.
        SourceLoc post =
            lowered->postconditionLoc(issue.loc.rank, issue.loc.index);
        if (!loc.known()) {
          loc = post;
          notes = caretFor(loc);
        } else if (!lowered->postLocs.empty() && post.known()) {
          notes += "\n" + Error("", post).format();
          notes.resize(notes.size() - std::string("error: ").size());
          notes +=
              "note: the postcondition is declared here\n" + caretFor(post);
        }
      }
      std::cerr << Error("[" + std::string(toString(issue.kind)) + "] " +
                             issue.message,
                         loc, notes)
                       .format()
                << "\n";
    }
    std::cerr << o.input << ": " << sched.collective.describe()
              << " is NOT implemented by this program (" << r.issues.size()
              << (r.issues.size() == 1 ? " issue" : " issues") << " shown)\n";
    return kExitVerifyFailed;
  }
  if (!o.output.empty()) {
    if (Status s = writeOutput(o.output, scheduleToJson(sched)); !s)
      return fail(s.error());
  }
  if (!o.quiet && o.output != "-")
    std::cout << summarize(o.input, *lowered, r, topo ? &*topo : nullptr);
  return kExitOk;
}

} // namespace

void addCheckCommand(CLI::App &app, CommandContext &ctx) {
  auto opts = std::make_shared<CheckCliOptions>();
  CLI::App *cmd = app.add_subcommand(
      "check",
      "Compile a .ccl program (see docs/DSL.md) with its parameters, check "
      "it, and prove with the verifier that the schedule it describes "
      "implements its collective. Errors point at the program text "
      "(file:line:col and a caret line); exit 1 for an invalid program, 3 "
      "when the schedule does not implement the collective.");
  cmd->add_option("FILE", opts->input, ".ccl program")->required();
  cmd->add_option("-D,--define", opts->defines,
                  "Override a parameter, e.g. -D ranks=16 (repeatable)");
  cmd->add_option("-o,--output", opts->output,
                  "Write the verified schedule JSON here ('-' = stdout)");
  cmd->add_option("--topo", opts->topo,
                  "Also check that every transfer uses a link of this "
                  "topology");
  cmd->add_flag("-q,--quiet", opts->quiet, "Print nothing on success");
  cmd->callback([opts, &ctx] { ctx.exitCode = runCheck(*opts); });
}

} // namespace ccsynth::cli
