//===- HostProcessRunner.cpp - Running a host algorithm, ranks as processes
//===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The parent creates a shared-memory window holding the communicator and,
// per rank, a result record, a pristine copy of the input, the send and
// receive buffers and scratch; it removes the window's name at once and
// forks one process per rank. Each rank maps the window again at an
// address of its own (dropping the inherited mapping, so that nothing can
// rely on equal addresses), runs the iterations and writes its result
// record. The parent reaps every child, killing the rest when a rank dies,
// when nothing in the run moved for two timeouts plus 10 s, or when a rank
// has not finished that long after the run failed (it names those ranks,
// and says when a process was stopped), then checks the outputs.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/runtime/HostRunner.h"

#include "ccsynth/runtime/HostTypes.h"
#include "ccsynth/runtime/ShmWindow.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace ccsynth::rt {

namespace {

/// What a rank reports to the parent, at the start of its data area.
struct alignas(64) RankRecord {
  std::uint32_t finished; ///< 1 when the record is complete (release)
  std::int32_t result;    ///< ccsynthResult of the first failed launch
  double seconds;         ///< timed iterations, this rank
  ccsynthError error;
};

std::uint64_t roundUp(std::uint64_t v, std::uint64_t a) {
  return (v + a - 1) / a * a;
}

/// Offsets of one rank's buffers in its data area.
struct Placement {
  std::uint64_t pristine = 0, send = 0, recv = 0, scratch = 0, total = 0;
};

Placement place(const ccsynthAlgorithm &algo, const RunSetup &su, int rank) {
  Placement p;
  std::uint64_t at = roundUp(sizeof(RankRecord), 64);
  p.pristine = at;
  at = roundUp(at + su.inBytes, 64);
  if (!su.inplace) {
    p.send = at;
    at = roundUp(at + su.inBytes, 64);
    p.recv = at;
    at = roundUp(at + su.outBytes, 64);
  } else {
    p.send = at + su.sendOffset(rank);
    p.recv = at + su.recvOffset(rank);
    at = roundUp(at + su.sharedBytes(), 64);
  }
  p.scratch = at;
  at = roundUp(at + algo.scratch_bytes, 64);
  p.total = at;
  return p;
}

/// The body of rank `rank`'s process; never returns.
[[noreturn]] void rankMain(const ShmWindow &parentWindow, pid_t parent,
                           const ccsynthAlgorithm &algo,
                           const HostRunOptions &o, int rank,
                           const Placement &p, std::uint64_t inBytes,
                           std::uint64_t outBytes) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent)
    ::_exit(1);
  std::string error;
  std::unique_ptr<ShmWindow> own = parentWindow.remap(error);
  if (!own)
    ::_exit(2);
  // Only the new mapping is used from here on.
  ::munmap(parentWindow.comm(), parentWindow.bytes());
  CommHeader *h = own->comm();
  char *data = commData(h, rank);
  auto *rec = reinterpret_cast<RankRecord *>(data);
  char *send = data + p.send, *recv = data + p.recv;
  int total = o.warmup + o.iters;
  double seconds = 0;
  ccsynthResult result = ccsynthSuccess;
  for (int it = 0; it < total && result == ccsynthSuccess; ++it) {
    std::memset(recv, 0xa5, outBytes);
    std::memcpy(send, data + p.pristine, inBytes);
    ccsynthLaunchArgs a =
        launchArgsFor(o, algo, rank, send, recv,
                      algo.scratch_bytes ? data + p.scratch : nullptr,
                      ccsynthTransportHostShm, h, &rec->error);
    auto start = std::chrono::steady_clock::now();
    result = algo.launch(&a);
    if (it >= o.warmup)
      seconds += std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  }
  rec->result = result;
  rec->seconds = seconds;
  std::atomic_ref<std::uint32_t>(rec->finished)
      .store(1, std::memory_order_release);
  ::_exit(result == ccsynthSuccess ? 0 : 1);
}

/// Whether `pid` is stopped (by SIGSTOP, SIGTSTP or a debugger): state
/// T or t in /proc/PID/stat.
bool processStopped(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
  FILE *f = std::fopen(path, "r");
  if (!f)
    return false;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  // "pid (comm) S ...": the state follows the last ')'.
  const char *close = std::strrchr(buf, ')');
  return close && close[1] == ' ' && (close[2] == 'T' || close[2] == 't');
}

} // namespace

HostRunReport runHostAlgorithmProcesses(const ccsynthAlgorithm &algo,
                                        const HostRunOptions &o) {
  HostRunReport report;
  int n = algo.ranks;
  std::optional<RunSetup> setup = prepareRun(algo, o, report.error);
  if (!setup)
    return report;
  const RunSetup &su = *setup;
  std::uint64_t inBytes = su.inBytes, outBytes = su.outBytes;
  report.inBytes = inBytes;
  report.outBytes = outBytes;

  std::vector<Placement> places(n);
  std::uint64_t perRank = 0;
  for (int r = 0; r < n; ++r) {
    places[r] = place(algo, su, r);
    perRank = std::max(perRank, places[r].total);
  }
  std::string error;
  std::unique_ptr<ShmWindow> window =
      ShmWindow::create(n, algo.flag_words, perRank, error);
  if (!window) {
    report.error = error;
    return report;
  }
  // The ranks map the inherited descriptor: the name is not needed.
  window->unlink();
  CommHeader *h = window->comm();
  for (int r = 0; r < n; ++r)
    std::memcpy(commData(h, r) + places[r].pristine, su.inputs[r].data(),
                inBytes);

  std::fflush(nullptr);
  pid_t self = ::getpid();
  std::vector<pid_t> pids(n, -1);
  std::vector<int> status(n, 0);
  std::vector<bool> reaped(n, false);
  for (int r = 0; r < n; ++r) {
    pid_t pid = ::fork();
    if (pid == 0)
      rankMain(*window, self, algo, o, r, places[r], inBytes, outBytes);
    if (pid < 0) {
      report.error = std::string("cannot fork rank ") + std::to_string(r) +
                     ": " + std::strerror(errno);
      ccsynthError e{};
      e.result = ccsynthAborted;
      e.rank = e.threadblock = e.step = -1;
      std::snprintf(e.message, sizeof e.message, "the run could not start");
      commFail(h, e);
      break;
    }
    pids[r] = pid;
  }

  // The whole run is bounded by its progress, not by the sum of its waits:
  // the parent ends it when nothing in it moved for `stall` (longer than a
  // rank's watchdog needs to report: one to two timeouts), or when it was
  // aborted and some rank has still not finished `stall` later (a stopped
  // process, or one stuck outside any wait). The rank that did not answer
  // is named. An absolute limit of twice (iterations x timeout) stays as
  // the last resort.
  using SteadyClock = std::chrono::steady_clock;
  auto secondsSince = [](SteadyClock::time_point t) {
    return std::chrono::duration<double>(SteadyClock::now() - t).count();
  };
  double stall = 2.0 * o.timeoutSeconds + 10.0;
  double limit = 2.0 * (o.warmup + o.iters) * o.timeoutSeconds + 30.0;
  auto started = SteadyClock::now();
  std::uint64_t lastProgress = commProgress(h);
  auto lastMove = started;
  std::optional<SteadyClock::time_point> abortedAt;
  std::vector<bool> stoppedBySignal(n, false);
  std::string killedWhy;
  std::vector<int> unanswered;
  int polls = 0;
  int died = -1, diedSignal = 0;
  bool killed = false;
  for (;;) {
    int alive = 0;
    for (int r = 0; r < n; ++r) {
      if (pids[r] < 0 || reaped[r])
        continue;
      pid_t got = ::waitpid(pids[r], &status[r], WNOHANG);
      if (got == pids[r] || (got < 0 && errno == ECHILD)) {
        reaped[r] = true;
        if (got == pids[r] && WIFSIGNALED(status[r]) && died < 0 && !killed) {
          died = r;
          diedSignal = WTERMSIG(status[r]);
          ccsynthError e{};
          e.result = ccsynthAborted;
          e.rank = r;
          e.threadblock = e.step = -1;
          std::snprintf(e.message, sizeof e.message,
                        "rank %d: the process died (signal %d)", r, diedSignal);
          commFail(h, e); // the others stop waiting for it
        }
        continue;
      }
      ++alive;
    }
    if (alive == 0)
      break;
    if (!killed && ++polls % 25 == 0) { // every 50 ms
      std::uint64_t progress = commProgress(h);
      if (progress != lastProgress) {
        lastProgress = progress;
        lastMove = SteadyClock::now();
      }
      if (!abortedAt && commAborted(h))
        abortedAt = SteadyClock::now();
      char why[160] = "";
      if (abortedAt && secondsSince(*abortedAt) >= stall)
        std::snprintf(why, sizeof why,
                      "did not finish within %.0f s of the run's failure",
                      stall);
      else if (secondsSince(lastMove) >= stall)
        std::snprintf(why, sizeof why,
                      "stopped answering: nothing in the run moved for "
                      "%.0f s",
                      stall);
      else if (secondsSince(started) >= limit)
        std::snprintf(why, sizeof why, "did not finish within %.0f s", limit);
      if (why[0]) {
        killedWhy = why;
        for (int r = 0; r < n; ++r)
          if (pids[r] > 0 && !reaped[r]) {
            unanswered.push_back(r);
            stoppedBySignal[r] = processStopped(pids[r]);
            ::kill(pids[r], SIGKILL);
          }
        killed = true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!report.error.empty())
    return report;
  if (killed) {
    // Name the ranks that did not answer (and say when a process had been
    // stopped), then the first wait that gave up, if one did.
    ccsynthError e{};
    e.result = ccsynthTimeout;
    e.rank = unanswered.empty() ? -1 : unanswered.front();
    e.threadblock = e.step = -1;
    std::string who;
    for (int r : unanswered) {
      who += (who.empty() ? "rank " : ", rank ") + std::to_string(r);
      if (stoppedBySignal[r])
        who += " (its process was stopped)";
    }
    std::string msg = who + " " + killedWhy + "; killed";
    if (commAborted(h))
      msg +=
          "; the first wait that gave up: " + std::string(commError(h).message);
    std::snprintf(e.message, sizeof e.message, "%s", msg.c_str());
    report.launchError = e;
    return report;
  }

  // Results: the rank that failed first over the ones it aborted.
  auto record = [&](int r) {
    return reinterpret_cast<RankRecord *>(commData(h, r));
  };
  auto finished = [&](int r) {
    return std::atomic_ref<std::uint32_t>(record(r)->finished)
               .load(std::memory_order_acquire) != 0;
  };
  int pick = -1;
  for (int r = 0; r < n && pick < 0; ++r)
    if (finished(r) && record(r)->result != ccsynthSuccess &&
        record(r)->result != ccsynthAborted)
      pick = r;
  for (int r = 0; r < n && pick < 0; ++r)
    if (!finished(r) || record(r)->result != ccsynthSuccess)
      pick = r;
  if (pick >= 0) {
    RankRecord *rec = record(pick);
    ccsynthError e{};
    if (finished(pick)) {
      e = rec->error;
      e.result = rec->result;
    } else if (died >= 0) {
      e = commError(h);
    } else {
      e.result = ccsynthSystemError;
      e.rank = pick;
      e.threadblock = e.step = -1;
      std::snprintf(e.message, sizeof e.message,
                    "rank %d: the process exited without a result (status "
                    "%d)",
                    pick, status[pick]);
    }
    report.launchError = e;
    return report;
  }
  std::vector<const unsigned char *> outs(n);
  double slowest = 0;
  for (int r = 0; r < n; ++r) {
    outs[r] = reinterpret_cast<const unsigned char *>(commData(h, r) +
                                                      places[r].recv);
    slowest = std::max(slowest, record(r)->seconds);
  }
  report.mismatch = su.check(outs, o.dtype, o.op);
  report.ok = !report.mismatch;
  report.secondsPerIter = o.iters > 0 ? slowest / o.iters : 0;
  return report;
}

} // namespace ccsynth::rt
