//===- PluginCommand.cpp - `ccsynth plugin info` --------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "Command.h"

#ifdef CCSYNTH_HAVE_MLIR
#include "ccsynth/Target/MSCCLDir.h"
#endif
#include "ccsynth/runtime/PluginLoader.h"

#include <algorithm>
#include <sys/stat.h>

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

/// Lists an MSCCL algorithm directory (an msccl-dir output or any
/// MSCCL_ALGO_DIR) in the order MSCCL loads it.
int runDirInfo(const std::string &path) {
#ifndef CCSYNTH_HAVE_MLIR
  return fail(Error("reading MSCCL algorithm directories needs a build "
                    "with CCSYNTH_ENABLE_MLIR",
                    SourceLoc{path}));
#else
  auto dir = msccl::readAlgoDir(path);
  if (!dir)
    return fail(dir.error());
  std::cout << path << ": MSCCL algorithm directory, " << dir->entries.size()
            << " algorithm" << (dir->entries.size() == 1 ? "" : "s")
            << " (MSCCL_ALGO_DIR=" << dir->algoDir << ")\n";
  for (const msccl::DirEntry &e : dir->entries) {
    const msccl::Algo &a = e.algo;
    int tbs = 0, maxTbs = a.threadblocksPerRank();
    for (const msccl::Gpu &g : a.gpus)
      tbs += (int)g.tbs.size();
    std::cout << "\n" << e.file << "\n";
    auto row = [](const char *k, const std::string &v) {
      std::cout << "  " << std::left << std::setw(14) << k << v << "\n";
    };
    row("name", a.name);
    row("collective", a.coll);
    row("ranks", std::to_string(a.ngpus));
    row("sizes", msccl::sizeRange(a));
    row("protocol", a.proto);
    row("placement", a.inplace && a.outofplace ? "in-place and out-of-place"
                     : a.inplace               ? "in-place"
                                               : "out-of-place");
    row("chunks", "nchunksperloop " + std::to_string(a.nchunksperloop));
    row("channels", std::to_string(a.nchannels));
    row("threadblocks", std::to_string(maxTbs) + " per rank at most, " +
                            std::to_string(tbs) + " in all");
  }
  // MSCCL runs the first match in this order; say where that hides one.
  for (size_t i = 0; i < dir->entries.size(); ++i)
    for (size_t j = i + 1; j < dir->entries.size(); ++j)
      if (msccl::selectionOverlaps(dir->entries[i].algo, dir->entries[j].algo))
        std::cout << "\nnote: " << dir->entries[i].file << " and "
                  << dir->entries[j].file
                  << " serve overlapping calls; MSCCL runs "
                  << dir->entries[i].file << " for those\n";
  return kExitOk;
#endif
}

int runInfo(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return runDirInfo(path);
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
                            (plugin->cudaComms()->version >= 2
                                 ? " (virtual-ranks and CUDA IPC "
                                   "communicators; `ccsynth run --backend "
                                   "cuda` and the NCCL-API interposer can "
                                   "drive it)"
                                 : " (virtual-ranks communicator; `ccsynth "
                                   "run --backend cuda` can drive it)")
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
    if (a.reads_peer_inputs)
      row("inputs", "read on every rank by switch operations (every rank's "
                    "sendbuff at one offset of the shared window)");
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
                "plugin` and MSCCL algorithm directories (`--target "
                "msccl-dir`)");
  cmd->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  CLI::App *info = cmd->add_subcommand(
      "info", "Load a plugin, check its ABI version and descriptors, and "
              "print its algorithms: collective, ranks, size range, dtypes, "
              "operators, placement, scratch, backend and transports. Given "
              "a directory, read it as MSCCL does (MSCCL_ALGO_DIR, or an "
              "msccl-dir output) and list each XML: collective, ranks, size "
              "range, protocol, placement, nchunksperloop, channels and "
              "threadblocks");
  info->add_option("PLUGIN", *path,
                   "Plugin shared library (.so) or MSCCL algorithm "
                   "directory")
      ->required();
  info->callback([path, &ctx] { ctx.exitCode = runInfo(*path); });
}

} // namespace ccsynth::cli
