//===- Fibers.h - A rank's threadblocks as fibers on one host thread ------===//
//
// On the host backend a rank's threadblocks run as fibers on the thread
// that launched the rank: a wait whose flag is not yet set switches to the
// next threadblock of the same rank instead of blocking its own OS thread.
// A 64-rank program with 60 threadblocks per rank then runs 64 threads
// instead of 3,840, and the threadblock that can move is run next instead
// of whichever thread the kernel happens to wake on a starved machine.
//
// Scheduling is round-robin. A round in which no fiber got past a wait (or
// finished) means the whole rank waits on other ranks: the thread then
// yields, and after a few such rounds sleeps with a growing pause, as one
// waiting thread does (Watchdog.h). Every wait keeps its own deadline.
//
// The context switch is ucontext's. Sanitizers that track stacks (ASan,
// TSan) are not told about the switches, so builds with them keep one
// thread per threadblock, as does CCSYNTH_HOST_TB_THREADS=1 in the
// environment (for debuggers and thread-level tools).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CCSYNTH_FIBERS_AVAILABLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CCSYNTH_FIBERS_AVAILABLE 0
#endif
#endif
#ifndef CCSYNTH_FIBERS_AVAILABLE
#define CCSYNTH_FIBERS_AVAILABLE 1
#endif

namespace ccsynth::rt {

class FiberGroup;

/// The group whose fiber the calling thread is running, else null.
inline thread_local FiberGroup *tlsFiberGroup = nullptr;

/// Whether launches run threadblocks as fibers (see the file comment).
inline bool fibersEnabled() {
  if (!CCSYNTH_FIBERS_AVAILABLE)
    return false;
  const char *env = std::getenv("CCSYNTH_HOST_TB_THREADS");
  return !(env && *env && std::strcmp(env, "0") != 0);
}

class FiberGroup {
public:
  using Body = void (*)(void *ctx, int index);

  FiberGroup(int count, Body body, void *ctx)
      : body(body), ctx(ctx), fibers(count) {}
  ~FiberGroup() {
    for (Fiber &f : fibers)
      if (f.map)
        munmap(f.map, f.mapBytes);
  }
  FiberGroup(const FiberGroup &) = delete;
  FiberGroup &operator=(const FiberGroup &) = delete;

  /// Maps every fiber's stack (with a guard page below it); false when the
  /// system refused, and the caller runs threads instead.
  bool prepare() {
    std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    std::size_t bytes = stackBytes();
    bytes = (bytes + page - 1) / page * page;
    for (Fiber &f : fibers) {
      f.mapBytes = bytes + page;
      void *m = mmap(nullptr, f.mapBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                     -1, 0);
      if (m == MAP_FAILED)
        return false;
      f.map = m;
      if (mprotect(m, page, PROT_NONE) != 0)
        return false;
      if (getcontext(&f.ctx) != 0)
        return false;
      f.ctx.uc_stack.ss_sp = static_cast<char *>(m) + page;
      f.ctx.uc_stack.ss_size = bytes;
      f.ctx.uc_link = &main;
      makecontext(&f.ctx, &FiberGroup::trampoline, 0);
    }
    return true;
  }

  /// Runs every fiber to its end on the calling thread.
  void run() {
    FiberGroup *outer = tlsFiberGroup;
    tlsFiberGroup = this;
    int live = (int)fibers.size();
    int idleRounds = 0;
    long sleepNs = 0;
    while (live > 0) {
      bool moved = false;
      for (int i = 0; i < (int)fibers.size(); ++i) {
        Fiber &f = fibers[i];
        if (f.done)
          continue;
        current = i;
        progressed = false;
        swapcontext(&main, &f.ctx);
        if (f.done) {
          --live;
          moved = true;
        } else if (progressed) {
          moved = true;
        }
      }
      current = -1;
      if (moved || live == 0) {
        idleRounds = 0;
        sleepNs = 0;
        continue;
      }
      if (++idleRounds < 16) {
        std::this_thread::yield();
        continue;
      }
      sleepNs = std::min<long>(sleepNs ? sleepNs * 2 : 1000, 100000);
      std::this_thread::sleep_for(std::chrono::nanoseconds(sleepNs));
    }
    tlsFiberGroup = outer;
  }

  /// From inside a fiber: back to the scheduler. `fresh` says the fiber got
  /// somewhere since it last yielded (this is a new wait).
  void yield(bool fresh) {
    if (fresh)
      progressed = true;
    swapcontext(&fibers[current].ctx, &main);
  }

  /// True on the thread of a running group, inside one of its fibers.
  bool inFiber() const { return current >= 0; }

private:
  struct Fiber {
    ucontext_t ctx;
    void *map = nullptr;
    std::size_t mapBytes = 0;
    bool done = false;
  };

  /// As large as a thread's default stack: generated code built with -O0
  /// keeps large frames.
  static std::size_t stackBytes() {
    std::size_t bytes = std::size_t(8) << 20;
    rlimit rl{};
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      bytes = std::max<std::size_t>(bytes, std::min<std::size_t>(
                                               rl.rlim_cur, std::size_t(256)
                                                                << 20));
    return bytes;
  }

  static void trampoline() {
    FiberGroup *g = tlsFiberGroup;
    int i = g->current;
    g->body(g->ctx, i);
    g->fibers[i].done = true;
    // Returning resumes uc_link: the scheduler.
  }

  Body body;
  void *ctx;
  std::vector<Fiber> fibers;
  ucontext_t main{};
  int current = -1;
  bool progressed = false;
};

} // namespace ccsynth::rt
