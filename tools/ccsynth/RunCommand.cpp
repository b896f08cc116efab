//===- RunCommand.cpp - `ccsynth run`: execute an algorithm and check it --===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `ccsynth run`: executes an algorithm and checks its result. runRun reads
// the input, the element count, the dtype and operator and the backend
// (host threads, host processes or CUDA, checking the CUDA runtime and
// device first), builds a plugin from the input unless one is given, runs
// it and compares every rank's output with the reference (customReference
// for custom collectives). See docs/runtime.md ("`ccsynth run`") and
// docs/runtime-device.md ("Running on a GPU: `ccsynth run --backend cuda`").
//
//===----------------------------------------------------------------------===//
#include "Command.h"
#include "PluginBuild.h"

#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Support/ChildProcess.h"
#include "ccsynth/Support/TextLimits.h"
#include "ccsynth/Import/ScheduleText.h"
#include "ccsynth/runtime/CudaApi.h"
#include "ccsynth/runtime/HostTypes.h"
#include "ccsynth/runtime/PluginLoader.h"
#include "ccsynth/runtime/PluginRun.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <regex>
#include <unistd.h>

namespace fs = std::filesystem;

namespace ccsynth::cli {

namespace {

struct RunOptions {
  std::string input;
  std::string backend = "host";
  std::string size, count;
  std::string dtype = "fp32", op = "sum";
  int iters = 5, warmup = 1;
  unsigned long long seed = 1;
  double timeout = 30;
  std::string algorithm;
  std::vector<std::string> defines;
  std::string tileBytes; ///< default: 64K on the host, 1M on CUDA
  std::string keepPlugin;
  std::vector<std::string> pluginFlags;
  bool compareMemcpy = false;
  std::string ranksAs = "threads";
  int device = 0;
  std::string cudaArch, nvcc;
};

/// The reference of a custom collective, in chunks.
rt::ReferenceSpec customReference(const Collective &c) {
  rt::ReferenceSpec s;
  s.ranks = c.numRanks;
  s.inUnits = c.inputChunks;
  s.outUnits = c.outputChunks;
  s.reduces = c.isReduction();
  s.out.assign(c.numRanks, std::vector<rt::Contributions>(c.outputChunks));
  for (int r = 0; r < c.numRanks; ++r)
    for (int j = 0; j < c.outputChunks; ++j)
      if (PostSet want = c.postAt(r, j)) {
        std::vector<std::pair<int, int>> v;
        for (int value : want) {
          ChunkLoc at = c.valueOrigin(value);
          v.push_back({at.rank, at.index});
        }
        std::sort(v.begin(), v.end());
        s.out[r][j] = v;
      }
  return s;
}

/// A decimal element count below 2^63, or the error to report.
Expected<unsigned long long> parseCount(const std::string &text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return Error("--count '" + text + "': expected a whole number of elements");
  size_t first = text.find_first_not_of('0');
  std::string digits = first == std::string::npos ? "0" : text.substr(first);
  unsigned long long v = 0;
  for (char ch : digits) {
    if (digits.size() > 19 || v > (~0ull - 9) / 10)
      break;
    v = v * 10 + unsigned(ch - '0');
  }
  if (digits.size() > 19 || v >= (1ull << 63))
    return Error("--count '" + text +
                 "' is out of range: at most 9223372036854775807 (2^63 - 1) "
                 "elements");
  return v;
}

int runRun(RunOptions &o) {
  bool cuda = o.backend == "cuda";
  if (!cuda && o.backend != "host")
    return usage(
        Error("unknown backend '" + o.backend + "' (expected host or cuda)"));
  int dtype = rt::parseDtype(o.dtype);
  if (dtype < 0)
    return usage(Error("unknown --dtype '" + o.dtype + "' (expected " +
                       rt::dtypeMaskNames(0x3ff) + ")"));
  int op = rt::parseOp(o.op);
  if (op < 0)
    return usage(Error("unknown --op '" + o.op + "' (expected " +
                       rt::opMaskNames(0xf) + ")"));
  if (o.ranksAs != "threads" && o.ranksAs != "processes")
    return usage(Error("unknown --ranks-as '" + o.ranksAs +
                       "' (expected threads or processes)"));
  bool processes = o.ranksAs == "processes";
  if (processes && o.compareMemcpy)
    return usage(Error("--compare-memcpy needs --ranks-as threads"));
  if (cuda && processes)
    return usage(Error("--ranks-as processes is for the host backend; "
                       "--backend cuda runs every rank as blocks of one "
                       "launch on one GPU"));
  if (!cuda && (!o.cudaArch.empty() || !o.nvcc.empty() || o.device != 0))
    return usage(Error("--device, --cuda-arch and --nvcc need --backend cuda"));
  if (!o.cudaArch.empty() &&
      !std::regex_match(o.cudaArch, std::regex("[0-9]{2,3}[a-z]?")))
    return usage(Error("--cuda-arch '" + o.cudaArch +
                       "': expected an SM version like 80, 90 or 90a"));
  if (o.iters < 1 || o.warmup < 0)
    return usage(Error("--iters must be at least 1 and --warmup at least 0"));
  // As ccsynth-run: a wait longer than a day is no watchdog (and nan, inf
  // or a negative number none at all).
  if (!(o.timeout > 0 && o.timeout <= 86400))
    return usage(Error("--timeout " + formatFigure(o.timeout) +
                       ": expected seconds above 0 and at most 86400"));
  if (o.size.empty() == o.count.empty())
    return usage(
        Error("give exactly one of --size BYTES and --count ELEMENTS"));

  // The tile is the generated code's: checked whatever the input, and
  // refused where the plugin is already built (its tile is compiled in).
  std::optional<unsigned long long> tileBytes;
  if (!o.tileBytes.empty()) {
    if (o.input.ends_with(".so"))
      return usage(Error("--tile-bytes applies when run builds the plugin "
                         "from a schedule, .ccl or .mlir; the plugin '" +
                         o.input +
                         "' was built with its tile (`ccsynth compile "
                         "--target plugin --tile-bytes`)"));
    auto tile = parseTileBytes(o.tileBytes);
    if (!tile)
      return usage(tile.error());
    tileBytes = (unsigned long long)*tile;
  }
  if (!o.size.empty()) {
    auto sizes = parseSizes(o.size);
    if (!sizes)
      return usage(Error("--size: " + sizes.error().message));
    if (sizes->size() != 1)
      return usage(Error("--size: expected one byte count like 4096 or 1M"));
  }
  // The count before anything is built: the run checks what it needs
  // against the machine before allocating.
  std::optional<unsigned long long> count;
  if (!o.count.empty()) {
    auto v = parseCount(o.count);
    if (!v)
      return usage(v.error());
    count = *v;
  }

  if (Status s = checkOutputsApart(
          {{"the input {}", o.input},
           {"--nvcc", o.nvcc.find('/') != std::string::npos ? o.nvcc : ""}},
          {{"--keep-plugin", o.keepPlugin}});
      !s)
    return usage(s.error());

  // CUDA: the runtime and the device before anything is built, so that a
  // machine without them says so at once and prints nothing else.
  std::unique_ptr<rt::CudaApi> cudaApi;
  rt::CudaDeviceInfo device;
  if (cuda) {
    std::error_code ec;
    if (!fs::is_regular_file(o.input, ec))
      return fail(Error("cannot read '" + o.input + "': no such file"));
    std::string why;
    cudaApi = rt::CudaApi::load(why);
    if (!cudaApi || !rt::probeCudaDevice(*cudaApi, o.device, device, why))
      return fail(Error("no CUDA device: " + why), kExitNoDevice);
  }
  std::string arch = o.cudaArch;
  if (cuda && arch.empty())
    arch = device.major > 0 ? std::to_string(device.major * 10 + device.minor)
                            : "90";

  // The plugin: given, or built from the input for this dtype and operator.
  std::optional<Collective> collective;
  std::string pluginPath = o.input;
  std::string tempPlugin;
  struct Cleanup {
    std::string &path;
    int slot = -1;
    ~Cleanup() {
      if (!path.empty()) {
        ::unlink(path.c_str());
        releaseTemporaryFile(slot);
      }
    }
  } cleanup{tempPlugin};
  if (!o.input.ends_with(".so")) {
    CompileOptions c;
    c.target = CompileTarget::Cuda;
    c.origin = o.input;
    // What runs is proven first, links included, as by compile and verify.
    c.checkLinks = true;
    c.tileBytes = tileBytes ? *tileBytes : cuda ? 1ull << 20 : 64ull << 10;
    CompileResult result;
    if (o.input.ends_with(".mlir")) {
      auto text = readFile(o.input);
      if (!text)
        return fail(text.error());
      dropByteOrderMark(*text);
      if (Status s = checkMlirNesting(o.input, *text); !s)
        return fail(s.error());
      result = compileMlir(o.input, std::move(*text), c);
    } else {
      auto defs = parseDefines(o.defines);
      if (!defs)
        return fail(defs.error());
      auto sched = loadScheduleInput(o.input, *defs);
      if (!sched)
        return fail(sched.error());
      if (auto named = scheduleTopologyPath(*sched))
        if (Status s = checkOutputsApart(
                {topologyPathArg("the topology {} that " + o.input + " names",
                                 *named)},
                {{"--keep-plugin", o.keepPlugin}});
            !s)
          return usage(s.error());
      {
        std::optional<Topology> topo;
        VerifyResult proof;
        if (int rc = proveSchedule(*sched, o.input, "", false, topo, proof))
          return rc;
      }
      locateTransfers(*sched, o.input);
      collective = sched->collective;
      result = compileSchedule(*sched, c);
    }
    if (!result.ok())
      return fail(result.failure.error, result.failure.verificationFailed
                                            ? kExitVerifyFailed
                                            : kExitError);
    auto name = generatedName(*result.output);
    if (!name)
      return fail(name.error());
    PluginBuildOptions b;
    b.dtypeMask = 1u << dtype;
    b.opMask = 1u << op;
    b.flags = o.pluginFlags;
    if (cuda) {
      b.backend = "cuda";
      b.cudaArchs = {arch};
      b.nvcc = o.nvcc;
      // A run uses the virtual-ranks transport only: a third of the
      // kernels.
      b.flags.insert(b.flags.begin(), "-DCCSYNTH_CUDA_TRANSPORTS=4");
      b.flags.insert(b.flags.begin(), "-DCCSYNTH_WITH_NCCL=0");
    }
    if (o.keepPlugin.empty()) {
      SignalsHeld held; // created and registered as one
      std::string tmpl =
          (fs::temp_directory_path() / "ccsynth-run-XXXXXX.so").string();
      int fd = ::mkstemps(tmpl.data(), 3);
      if (fd < 0)
        return fail(Error("cannot create a temporary plugin file"));
      ::close(fd);
      tempPlugin = tmpl;
      pluginPath = tmpl;
      // An interrupted run removes it too.
      cleanup.slot = registerTemporaryFile(tmpl);
    } else {
      pluginPath = o.keepPlugin;
    }
    std::cerr << "ccsynth: building " << *name << " for the "
              << (cuda ? "cuda backend (sm_" + arch + ")" : "host backend")
              << "\n";
    if (Status s = buildPlugin({{*name, *result.output}}, b, pluginPath); !s)
      return fail(s.error());
  }
  std::string error;
  auto plugin = rt::Plugin::open(pluginPath, error);
  if (!plugin)
    return fail(Error(error));

  rt::PluginRunRequest req;
  req.algorithm = o.algorithm;
  req.cuda = cuda;
  req.processes = processes;
  req.device = o.device;
  req.cudaApi = cudaApi.get();
  req.deviceInfo = &device;
  req.run.dtype = dtype;
  req.run.op = op;
  req.run.iters = o.iters;
  req.run.warmup = o.warmup;
  req.run.seed = o.seed;
  req.run.timeoutSeconds = o.timeout;
  req.run.timeMemcpy = o.compareMemcpy;
  if (collective && collective->kind == CollectiveKind::Custom)
    req.customReference = customReference(*collective);
  if (count) {
    req.count = *count;
  } else {
    auto sizes = parseSizes(o.size);
    if (!sizes || sizes->size() != 1)
      return usage(Error("--size: expected one byte count like 4096 or 1M"));
    req.sizeBytes = (unsigned long long)sizes->front();
  }
  std::fflush(stdout);
  rt::PluginRunOutcome result = rt::runPluginAlgorithm(*plugin, req, stdout);
  switch (result.status) {
  case rt::PluginRunOutcome::Ok:
    return kExitOk;
  case rt::PluginRunOutcome::Usage:
    return usage(Error(result.message));
  case rt::PluginRunOutcome::WrongResult:
    return fail(Error(result.message), kExitVerifyFailed);
  case rt::PluginRunOutcome::Error:
    break;
  }
  return fail(Error(result.message));
}

} // namespace

void addRunCommand(CLI::App &app, CommandContext &ctx) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App *cmd = app.add_subcommand(
      "run",
      "Execute an algorithm and check it: build a plugin from a schedule, "
      ".ccl or .mlir (or take a plugin .so), run every rank as a thread on "
      "seeded random data, compare each output with the collective computed "
      "directly from its definition (exact for integers, max and min; a "
      "stated tolerance for floating sums and products), and print time and "
      "bandwidth per iteration. Exit 3 names the rank and first wrong "
      "element; a wait that passes --timeout reports rank, threadblock, step "
      "and flag. With --ranks-as processes every rank is a process of its "
      "own and the ranks share a POSIX shared-memory window. With --backend "
      "cuda the plugin is built by nvcc and every rank's buffers live on "
      "one GPU, all ranks being blocks of one launch (the virtual-ranks "
      "transport); the CUDA runtime is loaded at run time, and a machine "
      "without it or without a device exits 5 (\"no CUDA device\").");
  cmd->add_option("INPUT", opts->input,
                  "Schedule JSON, .ccl program, .mlir file or plugin .so")
      ->required();
  cmd->add_option("--backend", opts->backend,
                  "host (default) or cuda (virtual ranks on one GPU)");
  cmd->add_option("--size", opts->size,
                  "Bytes of the larger buffer of a rank (nccl-tests' size), "
                  "e.g. 1M");
  cmd->add_option("--count", opts->count,
                  "Elements, as NCCL's count for the collective");
  cmd->add_option("--dtype", opts->dtype,
                  "fp32 (default), fp16, bf16, fp64, int8, uint8, int32, "
                  "uint32, int64, uint64");
  cmd->add_option("--op", opts->op, "sum (default), prod, max, min");
  cmd->add_option("--iters", opts->iters, "Timed iterations (default 5)");
  cmd->add_option("--warmup", opts->warmup, "Untimed iterations (default 1)");
  cmd->add_option("--seed", opts->seed, "Seed of the input data");
  cmd->add_option("--timeout", opts->timeout,
                  "Seconds any one wait may take before the run stops "
                  "(default 30)");
  cmd->add_option("--algorithm", opts->algorithm,
                  "Which algorithm of a plugin holding several");
  cmd->add_option("--tile-bytes", opts->tileBytes,
                  "Bytes per chunk slice per pass of the plugin run builds "
                  "from INPUT (default 64K on the host, 1M on CUDA); a "
                  "built .so carries its own");
  cmd->add_option("--keep-plugin", opts->keepPlugin,
                  "Write the plugin built from INPUT here");
  cmd->add_option("--plugin-flag", opts->pluginFlags,
                  "An extra compiler flag for the plugin (repeatable)");
  cmd->add_option("-D,--define", opts->defines,
                  "Set a .ccl program parameter, e.g. -D ranks=16");
  cmd->add_option("--ranks-as", opts->ranksAs,
                  "threads (default: every rank a thread of this process) or "
                  "processes (one forked process per rank, sharing a POSIX "
                  "shared-memory window, as NCCL jobs run)");
  cmd->add_flag("--compare-memcpy", opts->compareMemcpy,
                "Also time a plain copy of the same bytes in the same run "
                "and print the ratio: on the host every rank copying its "
                "output bytes with memcpy at once, on CUDA one cudaMemcpy "
                "device-to-device of all ranks' output bytes");
  cmd->add_option("--device", opts->device,
                  "--backend cuda: the GPU to run on (default 0)");
  cmd->add_option("--cuda-arch", opts->cudaArch,
                  "--backend cuda: the SM architecture to build for "
                  "(default: the device's, e.g. 90)");
  cmd->add_option("--nvcc", opts->nvcc,
                  "--backend cuda: nvcc (default: on PATH, else "
                  "/usr/local/cuda/bin/nvcc)");
  cmd->callback([opts, &ctx] { ctx.exitCode = runRun(*opts); });
}

} // namespace ccsynth::cli
