//===- main.cpp - The ccsynth command-line driver -------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "Command.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

namespace {

/// Usage errors read like every other error: `ccsynth: error: ...`, with a
/// pointer to --help.
std::string usageMessage(const CLI::App *app, const CLI::Error &e) {
  std::string name = app->get_name().empty() ? "ccsynth" : app->get_name();
  return "ccsynth: error: " + std::string(e.what()) + "\nRun '" + name +
         " --help' (or '" + name +
         " SUBCOMMAND --help') for more "
         "information.\n";
}

/// Flushes and closes stdout after the command: output that could not be
/// written (a full disk, an I/O error) makes a successful command fail
/// with exit 1, so that `ccsynth ... > file` never reports success for a
/// truncated file. A command that failed already keeps its own code.
int finishStdout(int code) {
  using namespace ccsynth::cli;
  ccsynth::Status flushed = flushStdout();
  // Closing reports what a flush cannot (errors a file system defers to
  // close).
  errno = 0;
  bool closeFailed = std::fclose(stdout) != 0;
  int closeErr = errno;
  if (code != kExitOk)
    return code;
  if (!flushed)
    return fail(flushed.error());
  if (closeFailed)
    return fail(ccsynth::Error(
        std::string("cannot write to standard output") +
        (closeErr != 0 ? std::string(": ") + std::strerror(closeErr) : "")));
  return code;
}

/// Every option that takes a value refuses an empty one (CLI11 would take
/// `--root ''` as 0 and `--time-limit ''` as no limit), here and in every
/// subcommand.
void refuseEmptyValues(CLI::App *app) {
  for (CLI::Option *opt : app->get_options()) {
    if (opt->get_positional() || opt->get_expected_max() == 0)
      continue;
    // (CLI11 puts the option's name before the message.)
    opt->check(CLI::Validator(
        [](std::string &value) {
          return value.empty() ? std::string("an empty value (give one, or "
                                             "leave the option out)")
                               : std::string();
        },
        "", "non-empty"));
  }
  for (CLI::App *sub : app->get_subcommands({}))
    refuseEmptyValues(sub);
}

} // namespace

int main(int argc, char **argv) {
  using namespace ccsynth::cli;
  CLI::App app{
      "ccsynth: synthesize, verify and compile collective communication "
      "algorithms for GPU clusters.\n\n"
      "Typical flow:\n"
      "  ccsynth topo show dgx-a100x2\n"
      "  ccsynth baseline ring --collective allreduce --topo dgx-a100 -o "
      "r.json\n"
      "  ccsynth verify r.json\n"
      "  ccsynth simulate r.json --sizes 1K,1M,1G --plot bw.svg\n"
      "  ccsynth compile r.json --target msccl-xml -o r.xml\n"
      "  ccsynth run r.json --backend host --size 1M --dtype bf16\n",
      "ccsynth"};
  app.require_subcommand(1);
  app.failure_message(usageMessage);
  app.set_version_flag("--version", "ccsynth 0.1.0");
  CommandContext ctx;
  addTopoCommand(app, ctx);
  addBaselineCommand(app, ctx);
  addVerifyCommand(app, ctx);
  addCheckCommand(app, ctx);
  addSimulateCommand(app, ctx);
  addSynthCommand(app, ctx);
  addPluginCommand(app, ctx);
#ifdef CCSYNTH_HAVE_MLIR
  addCompileCommand(app, ctx);
  addRunCommand(app, ctx);
#endif
  refuseEmptyValues(&app);
  // Outputs are staged in temporaries; an interrupted run removes them.
  ccsynth::installTemporaryFileCleanup();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // --help and --version end parsing with code 0; every other parse error
    // (unknown option, missing argument, bad number, out of range, ...) is
    // a usage error, whatever CLI11's own code for it.
    return finishStdout(app.exit(e) == 0 ? kExitOk : kExitUsage);
  } catch (const std::bad_alloc &) {
    std::cerr << "ccsynth: error: out of memory (the input is too large for "
                 "this machine)\n";
    return finishStdout(kExitError);
  } catch (const std::exception &e) {
    std::cerr << "ccsynth: error: internal error: " << e.what() << "\n";
    return finishStdout(kExitError);
  }
  return finishStdout(ctx.exitCode);
}
