//===- ShmWindow.h - A POSIX shared-memory window holding a communicator --===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The host-shm transport: ranks are processes, and a communicator block of
// HostWorld.h lives in a POSIX shared-memory object that every rank maps
// (each at its own address: the layout is address-free). Behind the control
// part each rank has a data area of equal size for its buffers and scratch,
// which peers reach through the window.
//
// Names are removed as early as possible: `create` (one creator that forks
// the ranks) may unlink at once and let the ranks map the inherited
// descriptor; `attach` (independent processes agreeing on a name) leaves it
// to the caller to unlink once every rank attached, and the destructor of
// an owner unlinks in every case.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/HostWorld.h"

#include <cstdint>
#include <memory>
#include <string>

namespace ccsynth::rt {

class ShmWindow {
public:
  ~ShmWindow();
  ShmWindow(const ShmWindow &) = delete;
  ShmWindow &operator=(const ShmWindow &) = delete;

  /// Creates a window with a name unique to this process and call, sized
  /// for `nranks` ranks, `flagWords` flags and `dataBytesPerRank` each; the
  /// header is initialized. Null and `error` set on failure.
  static std::unique_ptr<ShmWindow> create(int nranks, std::uint32_t flagWords,
                                           std::uint64_t dataBytesPerRank,
                                           std::string &error);

  /// Creates the window `name` or attaches to it when another rank created
  /// it first; waits at most `timeoutSeconds` for the creator to finish.
  /// Refuses a window of another configuration.
  static std::unique_ptr<ShmWindow> attach(const std::string &name, int nranks,
                                           std::uint32_t flagWords,
                                           std::uint64_t dataBytesPerRank,
                                           double timeoutSeconds,
                                           std::string &error);

  /// Maps the same object once more, at a new address, from the open
  /// descriptor (what a forked rank does). The copy does not own the name.
  std::unique_ptr<ShmWindow> remap(std::string &error) const;

  /// Removes the name (idempotent); mappings stay valid.
  void unlink();

  CommHeader *comm() const { return header; }
  const std::string &name() const { return shmName; }
  std::uint64_t bytes() const { return size; }

private:
  ShmWindow() = default;
  std::string shmName;
  int fd = -1;
  CommHeader *header = nullptr;
  std::uint64_t size = 0;
  bool ownsName = false;
};

} // namespace ccsynth::rt
