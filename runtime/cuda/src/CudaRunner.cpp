//===- CudaRunner.cpp - Running a CUDA plugin algorithm on one GPU --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/runtime/CudaRunner.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace ccsynth::rt {

namespace {

using Clock = std::chrono::steady_clock;

/// The device resources of one run. Everything is released in the
/// destructor, in reverse order of need, unless a launch never finished:
/// then nothing is touched, since freeing would wait for the kernel.
class DeviceRun {
public:
  DeviceRun(const CudaApi &api, const ccsynthCudaComms &comms, double deadline)
      : api(api), comms(comms), deadlineSeconds(deadline) {}
  DeviceRun(const DeviceRun &) = delete;
  DeviceRun &operator=(const DeviceRun &) = delete;
  ~DeviceRun() {
    if (stuck)
      return;
    if (comm)
      comms.virtual_comm_destroy(comm);
    for (void *p : allocations)
      api.free(p);
    for (cuda::Event e : events)
      api.eventDestroy(e);
    if (stream)
      api.streamDestroy(stream);
  }

  /// True when `e` is success; else records the first failure.
  bool ok(cuda::Error e, const char *call) {
    if (e == cuda::kSuccess)
      return true;
    if (error.empty())
      error = api.describe(call, e);
    return false;
  }

  /// Device memory of at least 16 bytes (never null on success).
  unsigned char *alloc(std::size_t bytes) {
    void *p = nullptr;
    if (!ok(api.malloc(&p, std::max<std::size_t>(bytes, 16)), "cudaMalloc"))
      return nullptr;
    allocations.push_back(p);
    return static_cast<unsigned char *>(p);
  }

  bool createStreamAndEvents(int n) {
    if (!ok(api.streamCreateWithFlags(&stream, cuda::kStreamNonBlocking),
            "cudaStreamCreateWithFlags"))
      return false;
    for (int i = 0; i < n; ++i) {
      cuda::Event e = nullptr;
      if (!ok(api.eventCreate(&e), "cudaEventCreate"))
        return false;
      events.push_back(e);
    }
    return true;
  }

  /// Polls the stream until its work is done, an error shows, or the
  /// host's deadline passes (then `stuck`).
  bool drain(const char *what) {
    auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(deadlineSeconds));
    auto pause = std::chrono::microseconds(10);
    for (;;) {
      cuda::Error e = api.streamQuery(stream);
      if (e == cuda::kSuccess)
        return true;
      if (e != cuda::kNotReady)
        return ok(e, "cudaStreamQuery");
      if (Clock::now() >= deadline) {
        stuck = true;
        error = std::string(what) + " did not finish within " +
                std::to_string(int(deadlineSeconds)) +
                " s (the host's deadline, 2 x --timeout + 10 s), although "
                "every device wait has a deadline of its own; the device "
                "may still be running it, so its memory is left to the "
                "end of the process";
        return false;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }

  /// Seconds between two recorded events.
  bool elapsed(cuda::Event a, cuda::Event b, double &seconds) {
    float ms = 0;
    if (!ok(api.eventElapsedTime(&ms, a, b), "cudaEventElapsedTime"))
      return false;
    seconds = double(ms) / 1e3;
    return true;
  }

  const CudaApi &api;
  const ccsynthCudaComms &comms;
  double deadlineSeconds;
  cuda::Stream stream = nullptr;
  std::vector<cuda::Event> events;
  std::vector<void *> allocations;
  void *comm = nullptr;
  bool stuck = false;
  std::string error;
};

} // namespace

RunReport runCudaAlgorithm(const CudaApi &api, const ccsynthCudaComms &comms,
                           const ccsynthAlgorithm &algo, int device,
                           const RunOptions &o) {
  RunReport report;
  int n = algo.ranks;
  if (algo.backend != ccsynthBackendCuda ||
      !(algo.transport_mask & ccsynthTransportCudaVirtual)) {
    report.error = std::string("algorithm '") + algo.name +
                   "' has no CUDA virtual-ranks transport";
    return report;
  }
  std::optional<RunSetup> setup = prepareRun(algo, o, report.error);
  if (!setup)
    return report;
  const RunSetup &su = *setup;
  report.inBytes = su.inBytes;
  report.outBytes = su.outBytes;

  DeviceRun d(api, comms, cudaHostDeadlineSeconds(o.timeoutSeconds));
  auto failed = [&](RunReport &rep) -> RunReport & {
    if (rep.error.empty() && !rep.launchError)
      rep.error = d.error.empty() ? "CUDA run failed" : d.error;
    return rep;
  };
  if (!d.ok(api.setDevice(device), "cudaSetDevice") ||
      !d.createStreamAndEvents(2))
    return failed(report);
  cuda::Event start = d.events[0], stop = d.events[1];
  ccsynthError commErr{};
  ccsynthResult made =
      comms.virtual_comm_create(device, n, algo.flag_words, &d.comm, &commErr);
  if (made != ccsynthSuccess) {
    d.comm = nullptr;
    report.error =
        std::string("cannot create the virtual-ranks comm: ") + commErr.message;
    return report;
  }

  // Buffers: out of place an input and an output per rank; in place one
  // buffer holding both; a pristine copy of each input to reset from.
  std::vector<unsigned char *> send(n), recv(n), scratch(n), pristine(n);
  for (int r = 0; r < n; ++r) {
    if (su.inplace) {
      unsigned char *b = d.alloc(su.sharedBytes());
      if (!b)
        return failed(report);
      send[r] = b + su.sendOffset(r);
      recv[r] = b + su.recvOffset(r);
    } else {
      send[r] = d.alloc(su.inBytes);
      recv[r] = d.alloc(su.outBytes);
    }
    pristine[r] = d.alloc(su.inBytes);
    scratch[r] = algo.scratch_bytes ? d.alloc(algo.scratch_bytes) : nullptr;
    if (!send[r] || !recv[r] || !pristine[r] ||
        (algo.scratch_bytes && !scratch[r]))
      return failed(report);
    if (su.inBytes &&
        !d.ok(api.memcpyAsync(pristine[r], su.inputs[r].data(), su.inBytes,
                              cuda::kMemcpyHostToDevice, d.stream),
              "cudaMemcpyAsync (inputs to the device)"))
      return failed(report);
  }
  if (!d.drain("copying the inputs to the device"))
    return failed(report);

  std::vector<std::vector<unsigned char>> host(n);
  for (auto &h : host)
    h.resize(su.outBytes);
  auto checkOutputs = [&]() -> bool {
    for (int r = 0; r < n; ++r)
      if (su.outBytes &&
          !d.ok(api.memcpyAsync(host[r].data(), recv[r], su.outBytes,
                                cuda::kMemcpyDeviceToHost, d.stream),
                "cudaMemcpyAsync (outputs to the host)"))
        return false;
    if (!d.drain("copying the outputs to the host"))
      return false;
    std::vector<const unsigned char *> outs(n);
    for (int r = 0; r < n; ++r)
      outs[r] = host[r].data();
    report.mismatch = su.check(outs, o.dtype, o.op);
    return true;
  };

  std::vector<ccsynthError> errors(n);
  std::vector<ccsynthResult> results(n, ccsynthSuccess);
  int total = o.warmup + o.iters;
  double timed = 0;
  for (int it = 0; it < total; ++it) {
    for (int r = 0; r < n; ++r) {
      if (su.outBytes &&
          !d.ok(api.memsetAsync(recv[r], 0xa5, su.outBytes, d.stream),
                "cudaMemsetAsync"))
        return failed(report);
      if (su.inBytes &&
          !d.ok(api.memcpyAsync(send[r], pristine[r], su.inBytes,
                                cuda::kMemcpyDeviceToDevice, d.stream),
                "cudaMemcpyAsync (resetting an input)"))
        return failed(report);
    }
    if (!d.ok(api.eventRecord(start, d.stream), "cudaEventRecord"))
      return failed(report);
    // Every rank posts its buffers; the last call launches the kernel.
    for (int r = 0; r < n; ++r) {
      ccsynthLaunchArgs a =
          launchArgsFor(o, algo, r, send[r], recv[r], scratch[r],
                        ccsynthTransportCudaVirtual, d.comm, &errors[r]);
      a.stream = d.stream;
      results[r] = algo.launch(&a);
      if (results[r] != ccsynthSuccess)
        break;
    }
    if ((report.launchError = firstLaunchError(results, errors))) {
      // Refused before the kernel started; what was queued still drains.
      if (!d.drain("the stream"))
        report.error = d.error;
      return report;
    }
    if (!d.ok(api.eventRecord(stop, d.stream), "cudaEventRecord") ||
        !d.drain("the launch"))
      return failed(report);
    ccsynthError e{};
    if (ccsynthResult r = comms.virtual_comm_error(d.comm, &e);
        r != ccsynthSuccess) {
      e.result = r;
      report.launchError = e;
      return report;
    }
    double seconds = 0;
    if (!d.elapsed(start, stop, seconds))
      return failed(report);
    if (it >= o.warmup)
      timed += seconds;
    if (it == 0 || it == total - 1) {
      if (!checkOutputs())
        return failed(report);
      if (report.mismatch)
        return report;
    }
  }
  report.secondsPerIter = o.iters > 0 ? timed / o.iters : 0;

  if (o.timeMemcpy) {
    // The same bytes the collective writes into all ranks' outputs, in
    // one copy on the same device.
    std::size_t bytes = su.outBytes * std::size_t(n);
    unsigned char *src = d.alloc(bytes), *dst = d.alloc(bytes);
    if (!src || !dst)
      return failed(report);
    if (bytes) {
      if (!d.ok(api.memsetAsync(src, 1, bytes, d.stream), "cudaMemsetAsync") ||
          !d.ok(api.memcpyAsync(dst, src, bytes, cuda::kMemcpyDeviceToDevice,
                                d.stream),
                "cudaMemcpyAsync (warm-up copy)") ||
          !d.ok(api.eventRecord(start, d.stream), "cudaEventRecord"))
        return failed(report);
      for (int it = 0; it < o.iters; ++it)
        if (!d.ok(api.memcpyAsync(dst, src, bytes, cuda::kMemcpyDeviceToDevice,
                                  d.stream),
                  "cudaMemcpyAsync (baseline copy)"))
          return failed(report);
      double seconds = 0;
      if (!d.ok(api.eventRecord(stop, d.stream), "cudaEventRecord") ||
          !d.drain("the cudaMemcpy baseline") ||
          !d.elapsed(start, stop, seconds))
        return failed(report);
      report.memcpySecondsPerIter = o.iters > 0 ? seconds / o.iters : 0;
    }
    report.memcpyWhat = "cudaMemcpy device-to-device of all " +
                        std::to_string(n) + " ranks' output bytes (" +
                        std::to_string(bytes) + ") in one call";
  }
  report.ok = true;
  return report;
}

} // namespace ccsynth::rt
