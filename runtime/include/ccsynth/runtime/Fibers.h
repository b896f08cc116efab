//===- Fibers.h - A rank's threadblocks as fibers on one host thread ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
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
// The context switch is Boost.Context's (fcontext: a few instructions
// that save the callee-saved registers and the floating-point control
// words on the fiber's stack and swap stack pointers, on x86-64, aarch64,
// ppc64 and the rest of its platforms). Sanitizers that track stacks are
// told about each switch (AddressSanitizer's __sanitizer_*_switch_fiber,
// ThreadSanitizer's __tsan_*_fiber), so sanitizer builds run fibers too.
// CCSYNTH_HOST_TB_THREADS=1 in the environment keeps one thread per
// threadblock (for debuggers and thread-level tools). Code that includes
// this header links boost_context (its static library in plugins, so that
// a plugin needs nothing of Boost where it runs).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#ifndef CCSYNTH_FIBERS
#define CCSYNTH_FIBERS 0
#endif
#if CCSYNTH_FIBERS
#include <boost/context/detail/fcontext.hpp>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define CCSYNTH_FIBERS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CCSYNTH_FIBERS_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CCSYNTH_FIBERS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CCSYNTH_FIBERS_TSAN 1
#endif
#endif
#ifndef CCSYNTH_FIBERS_ASAN
#define CCSYNTH_FIBERS_ASAN 0
#endif
#ifndef CCSYNTH_FIBERS_TSAN
#define CCSYNTH_FIBERS_TSAN 0
#endif

#if CCSYNTH_FIBERS_ASAN
extern "C" void __sanitizer_start_switch_fiber(void **fake_stack_save,
                                               const void *bottom,
                                               std::size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void *fake_stack_save,
                                                const void **bottom_old,
                                                std::size_t *size_old);
#endif
#if CCSYNTH_FIBERS_TSAN
extern "C" void *__tsan_get_current_fiber();
extern "C" void *__tsan_create_fiber(unsigned flags);
extern "C" void __tsan_destroy_fiber(void *fiber);
extern "C" void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

namespace ccsynth::rt {

class FiberGroup;

/// The group whose fiber the calling thread is running, else null.
inline thread_local FiberGroup *tlsFiberGroup = nullptr;

/// Whether launches run threadblocks as fibers (see the file comment).
inline bool fibersEnabled() {
  if (!CCSYNTH_FIBERS || CCSYNTH_FIBERS_TSAN)
    return false;
  const char *env = std::getenv("CCSYNTH_HOST_TB_THREADS");
  return !(env && *env && std::strcmp(env, "0") != 0);
}

#if CCSYNTH_FIBERS

/// Fiber stacks kept mapped from one launch to the next: mapping and
/// unmapping thousands of them per launch (an unmap in a process of many
/// threads stops them all to flush their TLBs) cost more than a small
/// program's whole run. At most kKept are kept (a 64-rank program of 212
/// threadblocks per rank has 13,568 fibers); each has its guard page.
class FiberStacks {
public:
  static constexpr std::size_t kKept = 16384;
  static FiberStacks &instance() {
    static FiberStacks stacks;
    return stacks;
  }
  /// A stack of `bytes` (its guard page included), or null when the
  /// system refused one.
  void *take(std::size_t bytes, std::size_t page) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // (One size per process in practice: the last one fits.)
      for (std::size_t i = free_.size(); i-- > 0;)
        if (free_[i].second == bytes) {
          void *m = free_[i].first;
          free_[i] = free_.back();
          free_.pop_back();
          return m;
        }
    }
    void *m =
        mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED)
      return nullptr;
    if (mprotect(m, page, PROT_NONE) != 0) {
      munmap(m, bytes);
      return nullptr;
    }
    return m;
  }
  void give(void *m, std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (free_.size() < kKept) {
        free_.push_back({m, bytes});
        return;
      }
    }
    munmap(m, bytes);
  }
  ~FiberStacks() {
    for (auto &[m, bytes] : free_)
      munmap(m, bytes);
  }

private:
  std::mutex mutex_;
  std::vector<std::pair<void *, std::size_t>> free_;
};

class FiberGroup {
public:
  using Body = void (*)(void *ctx, int index);

  FiberGroup(int count, Body body, void *ctx)
      : body(body), ctx(ctx), fibers(count) {}
  ~FiberGroup() {
    for (Fiber &f : fibers) {
#if CCSYNTH_FIBERS_TSAN
      if (f.tsan)
        __tsan_destroy_fiber(f.tsan);
#endif
      if (f.map)
        FiberStacks::instance().give(f.map, f.mapBytes);
    }
  }
  FiberGroup(const FiberGroup &) = delete;
  FiberGroup &operator=(const FiberGroup &) = delete;

  /// Gives every fiber a stack (with a guard page below it; FiberStacks);
  /// false when the system refused, and the caller runs threads instead.
  bool prepare() {
    namespace bc = boost::context::detail;
    std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    std::size_t bytes = stackBytes();
    bytes = (bytes + page - 1) / page * page;
    for (Fiber &f : fibers) {
      f.mapBytes = bytes + page;
      void *m = FiberStacks::instance().take(f.mapBytes, page);
      if (!m)
        return false;
      f.map = m;
      f.stackBottom = static_cast<char *>(m) + page;
      f.stackBytes = bytes;
      // fcontext stacks grow down from their top.
      f.context = bc::make_fcontext(static_cast<char *>(m) + f.mapBytes,
                                    bytes, &FiberGroup::entry);
#if CCSYNTH_FIBERS_TSAN
      f.tsan = __tsan_create_fiber(0);
#endif
    }
    return true;
  }

  /// Runs every fiber to its end on the calling thread.
  void run() {
    FiberGroup *outer = tlsFiberGroup;
    tlsFiberGroup = this;
#if CCSYNTH_FIBERS_TSAN
    mainTsan = __tsan_get_current_fiber();
#endif
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
        toFiber(f);
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
    toScheduler(false);
  }

  /// True on the thread of a running group, inside one of its fibers.
  bool inFiber() const { return current >= 0; }

private:
  struct Fiber {
    /// Its context while it is switched out (fcontext).
    boost::context::detail::fcontext_t context = nullptr;
    void *map = nullptr;
    std::size_t mapBytes = 0;
    /// Its stack's lowest usable byte and size (above the guard page).
    void *stackBottom = nullptr;
    std::size_t stackBytes = 0;
    bool done = false;
#if CCSYNTH_FIBERS_TSAN
    void *tsan = nullptr;
#endif
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

  /// The scheduler switches to fiber `f` and returns when it yields or
  /// ends.
  void toFiber(Fiber &f) {
#if CCSYNTH_FIBERS_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f.stackBottom, f.stackBytes);
#endif
#if CCSYNTH_FIBERS_TSAN
    __tsan_switch_to_fiber(f.tsan, 0);
#endif
    auto back = boost::context::detail::jump_fcontext(f.context, this);
    // Back on the scheduler's stack: the fiber's context to resume it.
#if CCSYNTH_FIBERS_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
    f.context = back.fctx;
  }

  /// A fiber switches to the scheduler (`last`: it ended and is never
  /// switched to again).
  void toScheduler(bool last) {
#if CCSYNTH_FIBERS_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(last ? nullptr : &fake, mainStackBottom,
                                   mainStackBytes);
#endif
#if CCSYNTH_FIBERS_TSAN
    __tsan_switch_to_fiber(mainTsan, 0);
#endif
    auto back = boost::context::detail::jump_fcontext(mainContext, nullptr);
    // Resumed by the scheduler, whose context changed meanwhile.
    mainContext = back.fctx;
#if CCSYNTH_FIBERS_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  }

  /// A fiber's first instructions: `from` is the scheduler's context and
  /// its data the group.
  static void entry(boost::context::detail::transfer_t from) {
    auto *g = static_cast<FiberGroup *>(from.data);
    g->mainContext = from.fctx;
#if CCSYNTH_FIBERS_ASAN
    // The scheduler's stack, learnt on the first switch away from it.
    const void *bottom = nullptr;
    __sanitizer_finish_switch_fiber(nullptr, &bottom, &g->mainStackBytes);
    g->mainStackBottom = bottom;
#endif
    g->body(g->ctx, g->current);
    g->fibers[g->current].done = true;
    // Back to the scheduler, which never switches to this fiber again.
    g->toScheduler(true);
    __builtin_unreachable();
  }

  Body body;
  void *ctx;
  std::vector<Fiber> fibers;
  /// The scheduler's context while a fiber runs.
  boost::context::detail::fcontext_t mainContext = nullptr;
#if CCSYNTH_FIBERS_ASAN
  const void *mainStackBottom = nullptr;
  std::size_t mainStackBytes = 0;
#endif
#if CCSYNTH_FIBERS_TSAN
  void *mainTsan = nullptr;
#endif
  int current = -1;
  bool progressed = false;
};

#endif // CCSYNTH_FIBERS

} // namespace ccsynth::rt
