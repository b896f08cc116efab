//===- Watchdog.h - Deadlines and backoff for every wait on the host ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A wait spins briefly, then yields, then sleeps with a growing pause (so
// that hundreds of waiting threads let the others run on a few cores), and
// reaches its deadline after the timeout. Inside a fiber (Fibers.h) a pause
// switches to the rank's next threadblock instead; the fibers' scheduler
// does the yielding and sleeping for all of them. Nothing waits without a
// deadline. What happens there is the caller's: the host backend gives up
// only when nothing in the whole run changed during the last timeout
// (HostContext.h), so a wait that is slow because the machine is starved
// is not a hang.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/Fibers.h"

#include <chrono>
#include <cstdint>
#include <thread>

namespace ccsynth::rt {

using Clock = std::chrono::steady_clock;

/// Default deadline of one wait.
inline constexpr double kDefaultTimeoutSeconds = 30.0;
/// The longest deadline of one wait (a year): longer ones (and inf) are
/// cut to it, so that the deadline fits the clock's 64-bit nanoseconds.
inline constexpr double kMaxTimeoutSeconds = 365.0 * 86400;

/// One wait's pacing: call `pause()` after every failed poll; it returns
/// false once the deadline has passed.
class Backoff {
public:
  /// The deadline is `timeout` after the first pause that yields, so a wait
  /// that succeeds while spinning never reads the clock.
  explicit Backoff(Clock::duration timeout) : timeout(timeout) {}

  bool pause() {
    ++polls;
#if CCSYNTH_FIBERS
    if (FiberGroup *g = tlsFiberGroup; g && g->inFiber()) {
      if (polls == 1)
        deadline = Clock::now() + timeout;
      g->yield(polls == 1);
      return (polls & 15) != 0 || Clock::now() < deadline;
    }
#endif
    if (polls < 64)
      return true;
    if (polls == 64)
      deadline = Clock::now() + timeout;
    if (polls < 256) {
      std::this_thread::yield();
      return true;
    }
    if ((polls & 15) == 0 && Clock::now() >= deadline)
      return false;
    if (sleepNs < 200000)
      sleepNs = sleepNs ? sleepNs * 2 : 1000;
    std::this_thread::sleep_for(std::chrono::nanoseconds(sleepNs));
    return true;
  }

  /// Sets the next deadline one timeout from now.
  void restart() { deadline = Clock::now() + timeout; }

private:
  Clock::duration timeout;
  Clock::time_point deadline;
  std::uint64_t polls = 0;
  std::int64_t sleepNs = 0;
};

inline Clock::duration timeoutOf(double seconds) {
  if (!(seconds > 0))
    seconds = kDefaultTimeoutSeconds;
  if (seconds > kMaxTimeoutSeconds)
    seconds = kMaxTimeoutSeconds;
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(seconds));
}

} // namespace ccsynth::rt
