//===- ccsynth-run.cpp - Run a plugin's algorithm without the compiler ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `ccsynth run` for plugin libraries, linking nothing but the runtime: no
// LLVM, MLIR, Z3 or CLI11. It is what a GPU cluster (or the GPU check,
// scripts/gpu-check.sh) builds to run plugins that `ccsynth compile
// --target plugin` or the runtime-only build made elsewhere. The options,
// output and exit codes are those of `ccsynth run` on a .so input.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/runtime/CudaApi.h"
#include "ccsynth/runtime/PluginLoader.h"
#include "ccsynth/runtime/PluginRun.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <sys/stat.h>

namespace {

using namespace ccsynth;

enum Exit { Ok = 0, Error = 1, Usage = 2, Wrong = 3, NoDevice = 5 };

const char *kHelp =
    "ccsynth-run: execute one algorithm of a plugin library and check it\n"
    "\n"
    "usage: ccsynth-run PLUGIN.so [options]\n"
    "\n"
    "Runs every rank on seeded random data, compares each output with the\n"
    "collective computed from its definition and prints time and bandwidth\n"
    "per iteration, like `ccsynth run` on a plugin (this runner links only\n"
    "the runtime: no LLVM, MLIR or Z3). With --backend cuda every rank's\n"
    "buffers live on one GPU and all ranks are blocks of one launch.\n"
    "\n"
    "options:\n"
    "  --backend host|cuda   host (default) or cuda (virtual ranks, one GPU)\n"
    "  --size BYTES          the larger buffer of a rank, e.g. 1M "
    "(nccl-tests)\n"
    "  --count N             elements, as NCCL's count for the collective\n"
    "  --dtype T             fp32 (default), fp16, bf16, fp64, int8, uint8,\n"
    "                        int32, uint32, int64, uint64\n"
    "  --op OP               sum (default), prod, max, min\n"
    "  --iters N             timed iterations (default 5)\n"
    "  --warmup N            untimed iterations (default 1)\n"
    "  --seed N              seed of the input data (default 1)\n"
    "  --timeout S           seconds any one wait may take (default 30)\n"
    "  --algorithm NAME      which algorithm of a plugin holding several\n"
    "  --ranks-as threads|processes   host: ranks as threads (default) or\n"
    "                        processes sharing a POSIX shared-memory window\n"
    "  --compare-memcpy      also time a plain copy of the same bytes and\n"
    "                        print the ratio (CUDA: cudaMemcpy D2D)\n"
    "  --device N            --backend cuda: the GPU (default 0)\n"
    "  -h, --help            this text\n"
    "\n"
    "exit: 0 correct, 1 error, 2 usage, 3 wrong result, 5 no CUDA device\n";

int report(int code, const std::string &msg) {
  std::fprintf(stderr, "ccsynth-run: error: %s\n", msg.c_str());
  return code;
}

bool parseInt(const char *text, long long lo, long long hi, long long &out) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (errno || !end || end == text || *end || v < lo || v > hi)
    return false;
  out = v;
  return true;
}

int run(int argc, char **argv) {
  std::string input, backend = "host", size, count, dtypeName = "fp32",
                     opName = "sum", ranksAs = "threads", algorithm;
  long long iters = 5, warmup = 1, seed = 1, device = 0;
  double timeout = 30;
  bool compareMemcpy = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return Ok;
    }
    if (a == "--compare-memcpy") {
      compareMemcpy = true;
      continue;
    }
    if (a.rfind("--", 0) == 0) {
      std::string name = a, value;
      if (auto eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return report(Usage, a + " needs a value");
      }
      const char *v = value.c_str();
      if (name == "--backend")
        backend = value;
      else if (name == "--size")
        size = value;
      else if (name == "--count")
        count = value;
      else if (name == "--dtype")
        dtypeName = value;
      else if (name == "--op")
        opName = value;
      else if (name == "--algorithm")
        algorithm = value;
      else if (name == "--ranks-as")
        ranksAs = value;
      else if (name == "--iters") {
        if (!parseInt(v, 1, 1000000, iters))
          return report(Usage, "--iters: expected 1 to 1000000");
      } else if (name == "--warmup") {
        if (!parseInt(v, 0, 1000000, warmup))
          return report(Usage, "--warmup: expected 0 to 1000000");
      } else if (name == "--seed") {
        if (!parseInt(v, 0, (1ll << 62), seed))
          return report(Usage, "--seed: expected a non-negative number");
      } else if (name == "--device") {
        if (!parseInt(v, 0, 1023, device))
          return report(Usage, "--device: expected a GPU index");
      } else if (name == "--timeout") {
        char *end = nullptr;
        errno = 0;
        timeout = std::strtod(v, &end);
        if (errno || !end || end == v || *end || !std::isfinite(timeout) ||
            timeout <= 0 || timeout > 86400)
          return report(Usage, "--timeout '" + value +
                                   "': expected seconds above 0 and at most "
                                   "86400");
      } else {
        return report(Usage, "unknown option " + name + " (see --help)");
      }
      continue;
    }
    if (!input.empty())
      return report(Usage,
                    "one plugin at a time ('" + input + "' and '" + a + "')");
    input = a;
  }
  if (input.empty())
    return report(Usage, "no plugin given (see --help)");
  bool cuda = backend == "cuda";
  if (!cuda && backend != "host")
    return report(Usage,
                  "unknown backend '" + backend + "' (expected host or cuda)");
  int dtype = rt::parseDtype(dtypeName);
  if (dtype < 0)
    return report(Usage, "unknown --dtype '" + dtypeName + "' (expected " +
                             rt::dtypeMaskNames(0x3ff) + ")");
  int op = rt::parseOp(opName);
  if (op < 0)
    return report(Usage, "unknown --op '" + opName + "' (expected " +
                             rt::opMaskNames(0xf) + ")");
  if (ranksAs != "threads" && ranksAs != "processes")
    return report(Usage, "unknown --ranks-as '" + ranksAs +
                             "' (expected threads or processes)");
  bool processes = ranksAs == "processes";
  if (processes && (cuda || compareMemcpy))
    return report(Usage, "--ranks-as processes is for the host backend, "
                         "without --compare-memcpy");
  if (!cuda && device != 0)
    return report(Usage, "--device needs --backend cuda");
  if (size.empty() == count.empty())
    return report(Usage, "give exactly one of --size BYTES and --count N");

  rt::PluginRunRequest req;
  if (!size.empty()) {
    req.sizeBytes = rt::parseByteSize(size);
    if (!req.sizeBytes)
      return report(Usage, "--size '" + size +
                               "': expected a byte count like 4096 or 1M");
  } else {
    long long n = 0;
    if (!parseInt(count.c_str(), 0, (1ll << 62), n))
      return report(Usage, "--count '" + count +
                               "': expected a number of elements below 2^62");
    req.count = (unsigned long long)n;
  }
  struct stat st {};
  if (::stat(input.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return report(Error, "cannot read '" + input + "': " +
                             (errno ? std::strerror(errno) : "not a file"));

  std::unique_ptr<rt::CudaApi> api;
  rt::CudaDeviceInfo info;
  if (cuda) {
    std::string why;
    api = rt::CudaApi::load(why);
    if (!api || !rt::probeCudaDevice(*api, int(device), info, why))
      return report(NoDevice, "no CUDA device: " + why);
  }
  std::string error;
  auto plugin = rt::Plugin::open(input, error);
  if (!plugin)
    return report(Error, error);

  req.algorithm = algorithm;
  req.cuda = cuda;
  req.processes = processes;
  req.device = int(device);
  req.cudaApi = api.get();
  req.deviceInfo = &info;
  req.run.dtype = dtype;
  req.run.op = op;
  req.run.iters = int(iters);
  req.run.warmup = int(warmup);
  req.run.seed = (unsigned long long)seed;
  req.run.timeoutSeconds = timeout;
  req.run.timeMemcpy = compareMemcpy;
  rt::PluginRunOutcome r = rt::runPluginAlgorithm(*plugin, req, stdout);
  switch (r.status) {
  case rt::PluginRunOutcome::Ok:
    return Ok;
  case rt::PluginRunOutcome::Usage:
    return report(Usage, r.message);
  case rt::PluginRunOutcome::WrongResult:
    return report(Wrong, r.message);
  case rt::PluginRunOutcome::Error:
    break;
  }
  return report(Error, r.message);
}

} // namespace

int main(int argc, char **argv) {
  int rc = run(argc, argv);
  // A result nobody could read is no result.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr,
                 "ccsynth-run: error: cannot write to standard "
                 "output: %s\n",
                 std::strerror(errno));
    return rc ? rc : Error;
  }
  return rc;
}
