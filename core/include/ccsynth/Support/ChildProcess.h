//===- ChildProcess.h - Children and temporary trees on a signal ----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Additions to the signal cleanup of Diagnostic.h (installTemporaryFileCleanup)
// for work that runs another program: the compiler a plugin build spawns,
// in a process group of its own, and the temporary directory it builds in.
// On SIGINT, SIGTERM or SIGHUP the handler kills the registered child's
// whole process group (SIGKILL), reaps it, removes every registered
// temporary (a directory with everything in it), and re-raises the signal.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <csignal>
#include <pthread.h>
#include <string>
#include <sys/types.h>

namespace ccsynth {

/// The running child (the leader of its own process group) that a signal
/// must take down with this process; one at a time. Release it once it was
/// reaped.
void registerChildProcess(pid_t pid);
void releaseChildProcess();

/// Registers a temporary directory: on a signal it is removed with its
/// whole contents (async-signal-safe). Returns its slot for
/// releaseTemporaryFile (Diagnostic.h), or -1 when every slot is taken.
int registerTemporaryDirectory(const std::string &path);

/// Holds SIGINT, SIGTERM and SIGHUP back for its lifetime (this thread),
/// so that creating a temporary and registering it happen as one.
class SignalsHeld {
public:
  SignalsHeld() {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    ::pthread_sigmask(SIG_BLOCK, &stop, &saved);
  }
  ~SignalsHeld() { ::pthread_sigmask(SIG_SETMASK, &saved, nullptr); }
  SignalsHeld(const SignalsHeld &) = delete;
  SignalsHeld &operator=(const SignalsHeld &) = delete;
  /// The mask before: what a spawned child should run with.
  const sigset_t &previous() const { return saved; }

private:
  sigset_t saved;
};

} // namespace ccsynth
