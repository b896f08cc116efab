//===- PluginRun.cpp - Running one algorithm of a plugin and reporting it -===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/runtime/PluginRun.h"
#include "ccsynth/runtime/CudaRunner.h"
#include "ccsynth/runtime/HostRunner.h"
#include "ccsynth/runtime/HostTypes.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <unistd.h>

namespace ccsynth::rt {

namespace {

/// Bytes a run may ask for per rank buffer: far beyond any machine, low
/// enough that sums over ranks and both buffers cannot overflow.
constexpr unsigned long long kMaxBufferBytes = 1ull << 46; // 64 TiB

PluginRunOutcome failure(PluginRunOutcome::Status s, std::string msg) {
  return {s, std::move(msg)};
}

/// This machine's physical memory in bytes (0 when unknown).
long double physicalMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? (long double)pages * page : 0;
}

std::string gib(long double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1Lf GiB", bytes / (1ull << 30));
  return buf;
}

/// nccl-tests' bus bandwidth factor of a collective on `n` ranks.
double busFactor(std::string_view c, int n) {
  if (c == "allreduce")
    return 2.0 * (n - 1) / n;
  if (c == "allgather" || c == "reducescatter" || c == "alltoall")
    return double(n - 1) / n;
  return 1;
}

void printReport(const ccsynthAlgorithm &algo, const RunReport &rep,
                 bool compareMemcpy, FILE *out) {
  double bytes = double(std::max(rep.inBytes, rep.outBytes));
  double algbw = rep.secondsPerIter > 0 ? bytes / rep.secondsPerIter / 1e9 : 0;
  double factor = busFactor(algo.collective, algo.ranks);
  std::fprintf(out, "%12s %14s %12s %12s  %s\n", "bytes", "time/iter(us)",
               "algbw(GB/s)", "busbw(GB/s)", "check");
  std::fprintf(out, "%12.0f %14.1f %12.3f %12.3f  %s\n", bytes,
               rep.secondsPerIter * 1e6, algbw, algbw * factor,
               "correct (matches the reference)");
  if (compareMemcpy && rep.memcpySecondsPerIter > 0)
    std::fprintf(out, "%s: %.1f us; algorithm / memcpy time: %.2fx\n",
                 rep.memcpyWhat.c_str(), rep.memcpySecondsPerIter * 1e6,
                 rep.secondsPerIter / rep.memcpySecondsPerIter);
}

} // namespace

std::optional<unsigned long long> parseByteSize(const std::string &text) {
  if (text.empty() || !std::isdigit((unsigned char)text[0]))
    return std::nullopt;
  unsigned long long v = 0;
  size_t i = 0;
  for (; i < text.size() && std::isdigit((unsigned char)text[i]); ++i) {
    if (v > (1ull << 60) / 10)
      return std::nullopt;
    v = v * 10 + unsigned(text[i] - '0');
  }
  int shift = 0;
  if (i < text.size()) {
    switch (std::toupper((unsigned char)text[i])) {
    case 'K':
      shift = 10;
      break;
    case 'M':
      shift = 20;
      break;
    case 'G':
      shift = 30;
      break;
    default:
      return std::nullopt;
    }
    ++i;
    if (i < text.size() && std::toupper((unsigned char)text[i]) == 'B')
      ++i;
  }
  if (i != text.size() || v > ((1ull << 60) >> shift))
    return std::nullopt;
  return v << shift;
}

namespace {

/// Whether every algorithm of `plugin` is the same code (one program under a
/// descriptor per byte range it serves, each with its tile): one launch
/// entry, or one IR and shape.
bool oneCode(const Plugin &plugin) {
  const ccsynthAlgorithm &first = *plugin.begin();
  for (const ccsynthAlgorithm &a : plugin)
    if (a.launch != first.launch &&
        (!a.ir_hash || !first.ir_hash ||
         std::strcmp(a.ir_hash, first.ir_hash) != 0 || !a.collective ||
         !first.collective ||
         std::strcmp(a.collective, first.collective) != 0 ||
         a.ranks != first.ranks || a.root != first.root ||
         a.inplace != first.inplace || a.backend != first.backend))
      return false;
  return true;
}

} // namespace

PluginRunOutcome runPluginAlgorithm(const Plugin &plugin,
                                    const PluginRunRequest &req, FILE *out) {
  using S = PluginRunOutcome;
  const ccsynthAlgorithm *algo = nullptr;
  if (!req.algorithm.empty()) {
    algo = plugin.find(req.algorithm);
    if (!algo)
      return failure(S::Error,
                     "the plugin has no algorithm '" + req.algorithm + "'");
  } else if (plugin.table().num_algorithms == 1 || oneCode(plugin)) {
    algo = plugin.begin();
  } else {
    return failure(S::Usage, "the plugin holds several algorithms: choose one "
                             "with --algorithm (see `ccsynth plugin info`)");
  }
  std::string backend = req.cuda ? "cuda" : "host";
  int wantBackend = req.cuda ? ccsynthBackendCuda : ccsynthBackendHost;
  if (algo->backend != wantBackend)
    return failure(S::Error, std::string("algorithm '") + algo->name +
                                 "' was built for the " +
                                 backendName(algo->backend) + " backend, not " +
                                 backend);
  if (req.cuda && !(algo->transport_mask & ccsynthTransportCudaVirtual))
    return failure(S::Error, std::string("algorithm '") + algo->name +
                                 "' was built without the virtual-ranks "
                                 "transport");
  if (req.cuda && !plugin.cudaComms())
    return failure(S::Error, "plugin '" + plugin.path() + "' has no " +
                                 CCSYNTH_CUDA_COMMS_ENTRY +
                                 " entry (built by an older ccsynth): "
                                 "rebuild it");
  if (req.cuda && (!req.cudaApi || !req.deviceInfo))
    return failure(S::Error, "no CUDA runtime was loaded for the run");

  RunOptions r = req.run;
  int inUnits = 1, outUnits = 1;
  unsigned long long unitsPerCount = 1; // count elements per unit
  if (auto spec = builtinReference(algo->collective, algo->ranks, algo->root)) {
    inUnits = spec->inUnits;
    outUnits = spec->outUnits;
  } else if (req.customReference) {
    r.reference = req.customReference;
    inUnits = req.customReference->inUnits;
    outUnits = req.customReference->outUnits;
    unitsPerCount = (unsigned long long)req.customReference->inUnits;
  } else {
    return failure(S::Error, std::string("no reference for collective '") +
                                 algo->collective +
                                 "': run it from its source file");
  }
  int es = dtypeSize(r.dtype);
  if (es <= 0)
    return failure(S::Usage, "unknown dtype");
  if (req.count.has_value() == req.sizeBytes.has_value())
    return failure(S::Usage,
                   "give exactly one of --size BYTES and --count ELEMENTS");
  // The larger buffer of a rank, in units of its chunks.
  unsigned long long unitsMax = (unsigned long long)std::max(inUnits, outUnits);
  unsigned long long count;
  if (req.count) {
    count = *req.count;
  } else {
    // nccl-tests' size: the larger buffer of a rank.
    count = *req.sizeBytes / (unsigned long long)es / unitsMax * unitsPerCount;
    // A size below one element per chunk of the larger buffer would run
    // nothing and report it correct.
    if (count == 0) {
      return failure(S::Usage,
                     "--size " + std::to_string(*req.sizeBytes) +
                         " bytes holds no element of " + dtypeName(r.dtype) +
                         " per chunk of " + algo->collective +
                         "'s larger buffer: give at least " +
                         std::to_string((unsigned long long)es * unitsMax) +
                         " bytes");
    }
  }
  // The larger buffer of a rank, in bytes, without overflow.
  long double largest = (long double)count * es * (long double)unitsMax /
                        (long double)unitsPerCount;
  if (largest > (long double)kMaxBufferBytes)
    return failure(
        S::Usage,
        "count " + std::to_string(count) + " of " + dtypeName(r.dtype) +
            " needs " +
            std::to_string((unsigned long long)(largest / (1ull << 30))) +
            " GiB per rank buffer; at most " +
            std::to_string(kMaxBufferBytes >> 30) + " GiB is accepted");
  r.count = std::size_t(count);
  if (unitsPerCount > 1) {
    if (r.count % unitsPerCount != 0)
      return failure(S::Error, "count " + std::to_string(r.count) +
                                   " is not a multiple of the custom "
                                   "collective's " +
                                   std::to_string(unitsPerCount) +
                                   " input chunks");
    r.unitElems = r.count / unitsPerCount;
  }

  // What the run holds in host memory at once, per rank: the seeded
  // inputs kept for the reference, the send and receive buffers (on the
  // host backend; CUDA reads the outputs back instead), scratch, and for
  // --compare-memcpy two more buffers. More than the machine has is
  // refused before anything is allocated (an allocation may succeed
  // lazily and the run die filling it).
  {
    long double elems = r.unitElems ? (long double)r.unitElems : r.count;
    long double in = elems * inUnits * es, outB = elems * outUnits * es;
    long double perRank = req.cuda ? in + outB
                                   : 2 * in + outB + algo->scratch_bytes +
                                         (r.timeMemcpy ? 2 * outB : 0);
    long double need = perRank * algo->ranks;
    long double have = physicalMemoryBytes();
    if (have > 0 && need > have)
      return failure(S::Usage, "count " + std::to_string(r.count) + " of " +
                                   dtypeName(r.dtype) + " needs about " +
                                   gib(need) + " of host memory (" +
                                   std::to_string(algo->ranks) +
                                   " ranks' inputs, buffers" +
                                   (req.cuda ? "" : " and scratch") +
                                   "), more than this machine's " + gib(have));
  }

  std::string where = req.processes ? "processes" : "threads";
  if (req.cuda) {
    const CudaDeviceInfo &d = *req.deviceInfo;
    where = "virtual ranks on GPU " + std::to_string(d.device) +
            (d.name.empty() ? "" : ": " + d.name) + ", sm_" +
            std::to_string(d.major * 10 + d.minor);
  }
  std::fprintf(out,
               "# %s: %s on %d ranks (%s), %s%s, count %zu, %d "
               "iterations\n",
               algo->name, algo->collective, algo->ranks, where.c_str(),
               dtypeName(r.dtype),
               algo->op_mask ? (std::string(" ") + opName(r.op)).c_str() : "",
               r.count, r.iters);
  std::fflush(out);
  RunReport rep;
  try {
    rep = req.cuda ? runCudaAlgorithm(*req.cudaApi, *plugin.cudaComms(), *algo,
                                      req.device, r)
          : req.processes ? runHostAlgorithmProcesses(*algo, r)
                          : runHostAlgorithm(*algo, r);
  } catch (const std::bad_alloc &) {
    return failure(S::Error, "out of host memory for count " +
                                 std::to_string(r.count) + " (" +
                                 std::to_string(algo->ranks) +
                                 " ranks' buffers and their reference)");
  }
  if (!rep.error.empty())
    return failure(S::Error, rep.error);
  if (rep.launchError)
    return failure(S::Error,
                   std::string("launch failed: ") + rep.launchError->message);
  if (rep.mismatch) {
    const Mismatch &m = *rep.mismatch;
    std::string msg = "wrong result: rank " + std::to_string(m.rank) +
                      " output element " + std::to_string(m.element) +
                      " (unit " + std::to_string(m.unit) + ") is " + m.found +
                      ", expected " + m.expected;
    if (m.allowed > 0)
      msg += " (tolerance " + std::to_string(m.allowed) + ")";
    return failure(S::WrongResult, msg);
  }
  printReport(*algo, rep, r.timeMemcpy, out);
  return {};
}

} // namespace ccsynth::rt
