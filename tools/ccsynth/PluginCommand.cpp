//===- PluginCommand.cpp - `ccsynth plugin info` --------------------------===//
#include "Command.h"

#include "ccsynth/runtime/PluginLoader.h"

#include <iomanip>
#include <iostream>
#include <memory>

namespace ccsynth::cli {

namespace {

std::string bytes(unsigned long long b) {
  if (b == 0)
    return "0";
  const char *units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && b % 1024 == 0) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + units[u];
}

int runInfo(const std::string &path) {
  std::string error;
  auto plugin = rt::Plugin::open(path, error);
  if (!plugin)
    return fail(Error(error));
  const ccsynthPlugin &t = plugin->table();
  std::cout << path << ": " << (t.generator ? t.generator : "?")
            << ", ABI version " << t.abi_version << ", " << t.num_algorithms
            << " algorithm" << (t.num_algorithms == 1 ? "" : "s") << "\n";
  bool cuda = false;
  for (const ccsynthAlgorithm &a : *plugin)
    cuda |= a.backend == ccsynthBackendCuda;
  if (cuda)
    std::cout << "CUDA comms entry: "
              << (plugin->cudaComms()
                      ? "version " +
                            std::to_string(plugin->cudaComms()->version) +
                            " (virtual-ranks communicator; `ccsynth run "
                            "--backend cuda` can drive it)"
                      : std::string("absent (built before version 1; "
                                    "`ccsynth run --backend cuda` needs it: "
                                    "rebuild the plugin)"))
              << "\n";
  for (const ccsynthAlgorithm &a : *plugin) {
    std::cout << "\n" << a.name << "\n";
    auto row = [](const char *k, const std::string &v) {
      std::cout << "  " << std::left << std::setw(14) << k << v << "\n";
    };
    row("collective", a.collective);
    row("ranks", std::to_string(a.ranks));
    row("root", std::to_string(a.root));
    row("placement", a.inplace ? "in-place" : "out-of-place");
    row("sizes", bytes(a.min_bytes) + " .. " +
                     (a.max_bytes ? bytes(a.max_bytes) : "unbounded"));
    row("dtypes", rt::dtypeMaskNames(a.dtype_mask));
    row("ops", a.op_mask ? rt::opMaskNames(a.op_mask) : "- (no reduction)");
    row("scratch", std::to_string(a.scratch_bytes) + " bytes per rank");
    if (a.count_multiple > 1)
      row("count", "multiple of " + std::to_string(a.count_multiple));
    row("backend", rt::backendName(a.backend));
    row("transports", rt::transportMaskNames(a.transport_mask));
    row("graph capture", a.capture_safe ? "safe" : "no");
    row("threadblocks", std::to_string(a.threadblocks) + " per rank, " +
                            std::to_string(a.steps) + " steps at most");
    row("flag words", std::to_string(a.flag_words) + " per rank");
    row("IR hash", a.ir_hash ? a.ir_hash : "-");
  }
  return kExitOk;
}

} // namespace

void addPluginCommand(CLI::App &app, CommandContext &ctx) {
  CLI::App *cmd = app.add_subcommand(
      "plugin", "Inspect plugin libraries built by `ccsynth compile --target "
                "plugin`");
  cmd->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  CLI::App *info = cmd->add_subcommand(
      "info", "Load a plugin, check its ABI version and descriptors, and "
              "print its algorithms: collective, ranks, size range, dtypes, "
              "operators, placement, scratch, backend and transports");
  info->add_option("PLUGIN", *path, "Plugin shared library (.so)")->required();
  info->callback([path, &ctx] { ctx.exitCode = runInfo(*path); });
}

} // namespace ccsynth::cli
