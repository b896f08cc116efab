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
// On x86-64 (GCC or Clang, no control-flow protection) the context switch
// is a few instructions that save the callee-saved registers on the
// fiber's stack and swap stack pointers (fiberSwitch). Elsewhere it is
// ucontext's, whose swapcontext also saves the signal mask: a system call
// per switch, which made switching most of a host run's time. Sanitizers
// that track stacks (ASan, TSan) are not told about the switches, so
// builds with them keep one thread per threadblock, as does
// CCSYNTH_HOST_TB_THREADS=1 in the environment (for debuggers and
// thread-level tools).
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
// Shadow stacks (control-flow protection) follow calls and returns, which
// a stack-pointer swap does not: ucontext knows them.
#if !defined(CCSYNTH_FIBERS_ASM)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&        \
    !defined(__CUDACC__) && !defined(__CET__)
#define CCSYNTH_FIBERS_ASM 1
#else
#define CCSYNTH_FIBERS_ASM 0
#endif
#endif

namespace ccsynth::rt {

class FiberGroup;

#if CCSYNTH_FIBERS_ASM
/// Saves the callee-saved registers, the SSE control/status word and the
/// x87 control word on the current stack, stores its pointer in `*from`,
/// then loads `to` as the stack pointer and restores what it holds: what a
/// switch away from it saved, or a fresh fiber's frame (FiberGroup's
/// prepare), whose return address is the fiber's entry.
/// (GCC's interprocedural register allocation would otherwise take the
/// body for one that clobbers nothing: noipa.)
#if defined(__clang__)
#define CCSYNTH_FIBER_SWITCH_ATTRS [[gnu::naked, gnu::noinline]]
#else
#define CCSYNTH_FIBER_SWITCH_ATTRS [[gnu::naked, gnu::noinline, gnu::noipa]]
#endif
CCSYNTH_FIBER_SWITCH_ATTRS inline void fiberSwitch(void ** /*from*/,
                                                   void * /*to*/) {
  asm volatile("pushq %rbp\n\t"
               "pushq %rbx\n\t"
               "pushq %r12\n\t"
               "pushq %r13\n\t"
               "pushq %r14\n\t"
               "pushq %r15\n\t"
               "subq $8, %rsp\n\t"
               "stmxcsr (%rsp)\n\t"
               "fnstcw 4(%rsp)\n\t"
               "movq %rsp, (%rdi)\n\t"
               "movq %rsi, %rsp\n\t"
               "ldmxcsr (%rsp)\n\t"
               "fldcw 4(%rsp)\n\t"
               "addq $8, %rsp\n\t"
               "popq %r15\n\t"
               "popq %r14\n\t"
               "popq %r13\n\t"
               "popq %r12\n\t"
               "popq %rbx\n\t"
               "popq %rbp\n\t"
               "ret\n\t");
}
#endif

/// The group whose fiber the calling thread is running, else null.
inline thread_local FiberGroup *tlsFiberGroup = nullptr;

/// Whether launches run threadblocks as fibers (see the file comment).
inline bool fibersEnabled() {
  if (!CCSYNTH_FIBERS_AVAILABLE)
    return false;
  const char *env = std::getenv("CCSYNTH_HOST_TB_THREADS");
  return !(env && *env && std::strcmp(env, "0") != 0);
}

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
    for (Fiber &f : fibers)
      if (f.map)
        FiberStacks::instance().give(f.map, f.mapBytes);
  }
  FiberGroup(const FiberGroup &) = delete;
  FiberGroup &operator=(const FiberGroup &) = delete;

  /// Gives every fiber a stack (with a guard page below it; FiberStacks);
  /// false when the system refused, and the caller runs threads instead.
  bool prepare() {
    std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    std::size_t bytes = stackBytes();
    bytes = (bytes + page - 1) / page * page;
    for (Fiber &f : fibers) {
      f.mapBytes = bytes + page;
      void *m = FiberStacks::instance().take(f.mapBytes, page);
      if (!m)
        return false;
      f.map = m;
#if CCSYNTH_FIBERS_ASM
      // The frame fiberSwitch restores, from the top of the stack down: a
      // null return address for the entry (it never returns; unwinders
      // stop there), the entry as the return address of the switch, six
      // zero registers, the default SSE and x87 control words. After the
      // switch's return the stack is aligned as at a function's entry.
      auto *top = reinterpret_cast<std::uintptr_t *>(
          (reinterpret_cast<std::uintptr_t>(m) + f.mapBytes) &
          ~std::uintptr_t(15));
      std::uintptr_t *sp = top - 9;
      std::memset(sp, 0, 9 * sizeof *sp);
      std::uint32_t controls[2] = {0x1F80u, 0x037Fu};
      std::memcpy(sp, controls, sizeof controls);
      sp[7] = reinterpret_cast<std::uintptr_t>(&FiberGroup::entry);
      f.sp = sp;
#else
      if (getcontext(&f.ctx) != 0)
        return false;
      f.ctx.uc_stack.ss_sp = static_cast<char *>(f.map) + page;
      f.ctx.uc_stack.ss_size = bytes;
      f.ctx.uc_link = &main;
      makecontext(&f.ctx, &FiberGroup::trampoline, 0);
#endif
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
#if CCSYNTH_FIBERS_ASM
        fiberSwitch(&mainSp, f.sp);
#else
        swapcontext(&main, &f.ctx);
#endif
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
#if CCSYNTH_FIBERS_ASM
    fiberSwitch(&fibers[current].sp, mainSp);
#else
    swapcontext(&fibers[current].ctx, &main);
#endif
  }

  /// True on the thread of a running group, inside one of its fibers.
  bool inFiber() const { return current >= 0; }

private:
  struct Fiber {
#if CCSYNTH_FIBERS_ASM
    void *sp = nullptr; ///< its stack pointer while it is switched out
#else
    ucontext_t ctx;
#endif
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

  /// Runs the current fiber's body to its end; its group.
  static FiberGroup *runCurrent() {
    FiberGroup *g = tlsFiberGroup;
    g->body(g->ctx, g->current);
    g->fibers[g->current].done = true;
    return g;
  }
#if CCSYNTH_FIBERS_ASM
  [[noreturn]] static void entry() {
    FiberGroup *g = runCurrent();
    // Back to the scheduler, which never switches to this fiber again.
    fiberSwitch(&g->fibers[g->current].sp, g->mainSp);
    __builtin_unreachable();
  }
#else
  // Returning resumes uc_link: the scheduler.
  static void trampoline() { runCurrent(); }
#endif

  Body body;
  void *ctx;
  std::vector<Fiber> fibers;
#if CCSYNTH_FIBERS_ASM
  void *mainSp = nullptr;
#else
  ucontext_t main{};
#endif
  int current = -1;
  bool progressed = false;
};

} // namespace ccsynth::rt
