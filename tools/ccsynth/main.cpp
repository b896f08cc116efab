//===- main.cpp - The ccsynth command-line driver -------------------------===//
#include "Command.h"

#include <iostream>

int main(int argc, char **argv) {
  using namespace ccsynth::cli;
  CLI::App app{
      "ccsynth: synthesize, verify and compile collective communication "
      "algorithms for GPU clusters.\n\n"
      "Typical flow:\n"
      "  ccsynth topo show dgx-a100x2\n"
      "  ccsynth baseline ring --collective allreduce --topo dgx-a100 -o r.json\n"
      "  ccsynth verify r.json\n"
      "  ccsynth simulate r.json --sizes 1K,1M,1G --plot bw.svg\n"
      "  ccsynth compile r.json --target msccl-xml -o r.xml\n"
      "  ccsynth run r.json --backend host --size 1M --dtype bf16\n",
      "ccsynth"};
  app.require_subcommand(1);
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  return ctx.exitCode;
}
