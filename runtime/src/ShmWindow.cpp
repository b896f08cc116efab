//===- ShmWindow.cpp - A POSIX shared-memory window holding a communicator ===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/runtime/ShmWindow.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace ccsynth::rt {

namespace {

std::string sysError(const std::string &what, const std::string &name) {
  return what + " of shared-memory window '" + name +
         "' failed: " + std::strerror(errno);
}

void *mapFd(int fd, std::uint64_t bytes) {
  void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

std::uint32_t loadMagic(CommHeader *h) {
  return std::atomic_ref<std::uint32_t>(h->magic).load(
      std::memory_order_acquire);
}

/// Writes the header; the magic last, released, so that attachers that
/// see it see the rest.
void initHeader(CommHeader *h, int nranks, std::uint32_t flagWords,
                std::uint64_t dataBytesPerRank) {
  commInit(h, nranks, flagWords, dataBytesPerRank, true);
  std::atomic_ref<std::uint32_t>(h->magic).store(0, std::memory_order_relaxed);
  std::atomic_ref<std::uint32_t>(h->magic).store(CommHeader::kMagic,
                                                 std::memory_order_release);
}

} // namespace

ShmWindow::~ShmWindow() {
  if (ownsName)
    unlink();
  if (header)
    ::munmap(header, size);
  if (fd >= 0)
    ::close(fd);
}

void ShmWindow::unlink() {
  if (!shmName.empty() && ownsName) {
    ::shm_unlink(shmName.c_str());
    ownsName = false;
  }
}

std::unique_ptr<ShmWindow> ShmWindow::create(int nranks,
                                             std::uint32_t flagWords,
                                             std::uint64_t dataBytesPerRank,
                                             std::string &error) {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  std::uint64_t nonce = (std::uint64_t(rd()) << 32) ^ rd();
  char name[96];
  std::snprintf(name, sizeof name, "/ccsynth-%d-%u-%016llx", int(::getpid()),
                counter.fetch_add(1), (unsigned long long)nonce);
  std::unique_ptr<ShmWindow> w(new ShmWindow);
  w->shmName = name;
  w->size = commTotalBytes(nranks, flagWords, dataBytesPerRank);
  w->fd = ::shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (w->fd < 0) {
    error = sysError("shm_open", name);
    return nullptr;
  }
  w->ownsName = true;
  if (::ftruncate(w->fd, off_t(w->size)) != 0) {
    error = sysError("sizing (" + std::to_string(w->size) + " bytes)", name);
    return nullptr; // the destructor unlinks
  }
  w->header = static_cast<CommHeader *>(mapFd(w->fd, w->size));
  if (!w->header) {
    error = sysError("mmap", name);
    return nullptr;
  }
  initHeader(w->header, nranks, flagWords, dataBytesPerRank);
  return w;
}

std::unique_ptr<ShmWindow>
ShmWindow::attach(const std::string &name, int nranks, std::uint32_t flagWords,
                  std::uint64_t dataBytesPerRank, double timeoutSeconds,
                  std::string &error) {
  std::unique_ptr<ShmWindow> w(new ShmWindow);
  w->shmName = name;
  w->size = commTotalBytes(nranks, flagWords, dataBytesPerRank);
  bool creator = false;
  w->fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (w->fd >= 0) {
    creator = true;
  } else if (errno == EEXIST) {
    w->fd = ::shm_open(name.c_str(), O_RDWR, 0600);
  }
  if (w->fd < 0) {
    error = sysError("shm_open", name);
    return nullptr;
  }
  w->ownsName = true; // an attacher removes the name too when it fails
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(timeoutSeconds));
  auto expired = [&] { return std::chrono::steady_clock::now() >= deadline; };
  if (creator) {
    if (::ftruncate(w->fd, off_t(w->size)) != 0) {
      error = sysError("sizing (" + std::to_string(w->size) + " bytes)", name);
      return nullptr;
    }
  } else {
    // The creator may not have sized it yet.
    for (;;) {
      struct stat st {};
      if (::fstat(w->fd, &st) != 0) {
        error = sysError("fstat", name);
        return nullptr;
      }
      if (std::uint64_t(st.st_size) == w->size)
        break;
      if (st.st_size != 0) {
        error = "shared-memory window '" + name + "' has " +
                std::to_string(st.st_size) + " bytes; this rank expects " +
                std::to_string(w->size) + " (ranks differ in configuration)";
        return nullptr;
      }
      if (expired()) {
        error = "shared-memory window '" + name +
                "' was not sized by its creator in time";
        return nullptr;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  w->header = static_cast<CommHeader *>(mapFd(w->fd, w->size));
  if (!w->header) {
    error = sysError("mmap", name);
    return nullptr;
  }
  if (creator) {
    initHeader(w->header, nranks, flagWords, dataBytesPerRank);
    return w;
  }
  while (loadMagic(w->header) != CommHeader::kMagic) {
    if (expired()) {
      error = "shared-memory window '" + name +
              "' was not initialized by its creator in time";
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  CommHeader *h = w->header;
  if (h->layoutVersion != CommHeader::kLayoutVersion || h->nranks != nranks ||
      h->flagWords != flagWords || h->dataBytesPerRank != dataBytesPerRank) {
    error = "shared-memory window '" + name +
            "' was created for another configuration (" +
            std::to_string(h->nranks) + " ranks, " +
            std::to_string(h->flagWords) + " flag words, " +
            std::to_string(h->dataBytesPerRank) + " data bytes per rank)";
    return nullptr;
  }
  return w;
}

std::unique_ptr<ShmWindow> ShmWindow::remap(std::string &error) const {
  std::unique_ptr<ShmWindow> w(new ShmWindow);
  w->shmName = shmName;
  w->size = size;
  w->fd = ::dup(fd);
  if (w->fd < 0) {
    error = sysError("dup", shmName);
    return nullptr;
  }
  w->header = static_cast<CommHeader *>(mapFd(w->fd, w->size));
  if (!w->header) {
    error = sysError("mmap", shmName);
    return nullptr;
  }
  return w;
}

} // namespace ccsynth::rt
