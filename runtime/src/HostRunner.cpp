//===- HostRunner.cpp - Running a host plugin algorithm, ranks as threads -===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/runtime/HostRunner.h"

#include "ccsynth/runtime/HostTypes.h"
#include "ccsynth/runtime/HostWorld.h"

#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace ccsynth::rt {

namespace {

struct AlignedFree {
  void operator()(unsigned char *p) const { std::free(p); }
};
using Bytes = std::unique_ptr<unsigned char[], AlignedFree>;

Bytes allocate(std::size_t bytes) {
  std::size_t size = (bytes + 63) / 64 * 64;
  return Bytes(
      static_cast<unsigned char *>(std::aligned_alloc(64, size ? size : 64)));
}

/// Seconds per iteration of n threads each copying `bytes` between two
/// private buffers at once.
double timeParallelMemcpy(int n, std::size_t bytes, int iters) {
  std::vector<Bytes> src(n), dst(n);
  for (int r = 0; r < n; ++r) {
    src[r] = allocate(bytes);
    dst[r] = allocate(bytes);
    std::memset(src[r].get(), r, bytes);
    std::memset(dst[r].get(), 0, bytes);
  }
  std::barrier sync(n + 1);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      for (int it = 0; it <= iters; ++it) {
        sync.arrive_and_wait();
        std::memcpy(dst[r].get(), src[r].get(), bytes);
        sync.arrive_and_wait();
      }
    });
  double total = 0;
  for (int it = 0; it <= iters; ++it) {
    sync.arrive_and_wait();
    auto start = std::chrono::steady_clock::now();
    sync.arrive_and_wait();
    if (it > 0) // the first copy touches fresh pages
      total += std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                             start)
                   .count();
  }
  for (std::thread &t : threads)
    t.join();
  return total / iters;
}

} // namespace

HostRunReport runHostAlgorithm(const ccsynthAlgorithm &algo,
                               const HostRunOptions &o) {
  HostRunReport report;
  int n = algo.ranks;
  std::optional<RunSetup> setup = prepareRun(algo, o, report.error);
  if (!setup)
    return report;
  const RunSetup &su = *setup;
  report.inBytes = su.inBytes;
  report.outBytes = su.outBytes;

  std::vector<Bytes> inStore(n), outStore(n), scratch(n);
  std::vector<unsigned char *> send(n), recv(n);
  for (int r = 0; r < n; ++r) {
    scratch[r] = allocate(algo.scratch_bytes);
    if (!su.inplace) {
      inStore[r] = allocate(su.inBytes);
      outStore[r] = allocate(su.outBytes);
      send[r] = inStore[r].get();
      recv[r] = outStore[r].get();
    } else {
      outStore[r] = allocate(su.sharedBytes());
      send[r] = outStore[r] ? outStore[r].get() + su.sendOffset(r) : nullptr;
      recv[r] = outStore[r] ? outStore[r].get() + su.recvOffset(r) : nullptr;
    }
    if (!scratch[r] || !send[r] || !recv[r]) {
      report.error = "cannot allocate the buffers of rank " + std::to_string(r);
      return report;
    }
  }
  auto resetBuffers = [&] {
    for (int r = 0; r < n; ++r) {
      std::memset(recv[r], 0xa5, su.outBytes);
      std::memcpy(send[r], su.inputs[r].data(), su.inBytes);
    }
  };

  HostWorld world(n, algo.flag_words);
  if (!world.comm()) {
    report.error = "cannot allocate the communicator";
    return report;
  }
  std::vector<ccsynthError> errors(n);
  std::vector<ccsynthResult> results(n, ccsynthSuccess);
  int total = o.warmup + o.iters;
  std::barrier sync(n + 1);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      for (int it = 0; it < total; ++it) {
        sync.arrive_and_wait(); // buffers are ready
        ccsynthLaunchArgs a = launchArgsFor(
            o, algo, r, send[r], recv[r], scratch[r].get(),
            ccsynthTransportHostThreads, world.comm(), &errors[r]);
        ccsynthResult res = algo.launch(&a);
        if (res != ccsynthSuccess && results[r] == ccsynthSuccess)
          results[r] = res;
        sync.arrive_and_wait(); // every rank is done
      }
    });

  auto check = [&]() -> bool {
    report.launchError = firstLaunchError(results, errors);
    if (report.launchError)
      return false;
    std::vector<const unsigned char *> outs(recv.begin(), recv.end());
    report.mismatch = su.check(outs, o.dtype, o.op);
    return !report.mismatch;
  };

  bool ok = true;
  double timed = 0;
  for (int it = 0; it < total && ok; ++it) {
    resetBuffers();
    sync.arrive_and_wait();
    auto start = std::chrono::steady_clock::now();
    sync.arrive_and_wait();
    auto end = std::chrono::steady_clock::now();
    if (it >= o.warmup)
      timed += std::chrono::duration<double>(end - start).count();
    if (it == 0 || it == total - 1)
      ok = check();
    else
      for (int r = 0; r < n; ++r)
        ok &= results[r] == ccsynthSuccess;
    if (!ok && !report.launchError && !report.mismatch)
      check();
    if (!ok) {
      // Let the rank threads run out the remaining iterations at once.
      for (int rest = it + 1; rest < total; ++rest) {
        sync.arrive_and_wait();
        sync.arrive_and_wait();
      }
      break;
    }
  }
  for (std::thread &t : threads)
    t.join();
  report.ok = ok;
  report.secondsPerIter = o.iters > 0 ? timed / o.iters : 0;
  if (ok && o.timeMemcpy) {
    report.memcpySecondsPerIter = timeParallelMemcpy(n, su.outBytes, o.iters);
    report.memcpyWhat = "memcpy of each rank's " + std::to_string(su.outBytes) +
                        " output bytes, " + std::to_string(n) +
                        " threads at once";
  }
  return report;
}

} // namespace ccsynth::rt
