//===- FakeNccl.cpp - A test double of libnccl on host memory -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Built by the tests as a shared library with soname libnccl.so.2, against
// NCCL 2.28's own nccl.h, so that a program linked with it and the
// interposer preloaded in front of it behave as with the real library:
// every rank a process, buffers in host memory, streams opaque.
//
// Communication: one POSIX shared-memory object per communicator, named
// from its unique id (ncclGetUniqueId makes a random one; the application
// passes it on, e.g. through a file). Each rank owns a slot there; a
// collective copies each rank's input into its slot, meets the others at a
// barrier, computes its own output from all slots in rank order, and meets
// them again. Send/receive use one mailbox per ordered pair of ranks, apart
// from the slots.
// Every wait has a deadline (CCSYNTH_FAKE_NCCL_TIMEOUT seconds, default
// 60); on expiry the call returns ncclSystemError.
//
// Device buffers work too, when the process has the CUDA driver loaded (a
// PyTorch job whose ranks share one GPU, which real NCCL refuses): the
// call synchronizes its stream, copies device input to the slot and the
// output back to the device, synchronously. Slow, and correct.
//
// Every call is recorded, one line each, in the file named by
// CCSYNTH_FAKE_NCCL_LOG (when set): the function, its arguments that
// matter for the test, and the communicator as name/rank.
//
//===----------------------------------------------------------------------===//
#include <nccl.h>

#include "ccsynth/runtime/HostTypes.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <random>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

using namespace ccsynth::rt;

constexpr std::uint64_t kDefaultSlotBytes = 8u << 20;

std::mutex logMutex;
FILE *logFile() {
  static FILE *f = [] {
    const char *path = std::getenv("CCSYNTH_FAKE_NCCL_LOG");
    return path && *path ? std::fopen(path, "a") : nullptr;
  }();
  return f;
}
void record(const char *fmt, ...) {
  FILE *f = logFile();
  if (!f)
    return;
  std::lock_guard<std::mutex> lock(logMutex);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(f, fmt, ap);
  va_end(ap);
  std::fputc('\n', f);
  std::fflush(f);
}

double timeoutSeconds() {
  const char *v = std::getenv("CCSYNTH_FAKE_NCCL_TIMEOUT");
  double s = v ? std::atof(v) : 0;
  return s > 0 ? s : 60;
}
std::uint64_t slotBytes() {
  const char *v = std::getenv("CCSYNTH_FAKE_NCCL_SLOT_BYTES");
  unsigned long long b = v ? std::strtoull(v, nullptr, 10) : 0;
  return b ? (b + 63) / 64 * 64 : kDefaultSlotBytes;
}

thread_local std::string lastError;
ncclResult_t failWith(ncclResult_t r, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  lastError = buf;
  std::fprintf(stderr, "fake-nccl: %s\n", buf);
  return r;
}

/// Layout of a communicator's shared object: counters, then per pair
/// mailbox counters, then per rank slots; each slot is split into nranks
/// mailboxes for send/receive and used whole for collectives.
struct Shared {
  std::uint64_t arrived; // barrier arrivals, monotonic
  std::uint64_t pad[7];
};

std::uint64_t loadA(std::uint64_t *p) {
  return std::atomic_ref<std::uint64_t>(*p).load(std::memory_order_acquire);
}
void storeR(std::uint64_t *p, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(*p).store(v, std::memory_order_release);
}
std::uint64_t fetchAdd(std::uint64_t *p, std::uint64_t v) {
  return std::atomic_ref<std::uint64_t>(*p).fetch_add(
      v, std::memory_order_acq_rel);
}

} // namespace

struct ncclComm {
  std::string name;
  int rank = 0, nranks = 1;
  int blocking = 1;
  bool reportInProgress = false; // a non-blocking init not yet observed
  std::uint64_t barriers = 0;    // barriers passed by this rank
  std::uint64_t splits = 0;
  char *base = nullptr;
  std::uint64_t bytes = 0, slot = 0;
  ncclResult_t asyncError = ncclSuccess;
  bool aborted = false;

  Shared *shared() const { return reinterpret_cast<Shared *>(base); }
  std::uint64_t *sendSeq(int from, int to) const {
    return reinterpret_cast<std::uint64_t *>(base + sizeof(Shared)) +
           (std::size_t(from) * nranks + to) * 8;
  }
  std::uint64_t *ackSeq(int from, int to) const {
    return sendSeq(from, to) + 1;
  }
  /// Rank r's area: its collective slot, then its outgoing mailboxes
  /// (never shared with collectives: a sent message may wait there while
  /// its sender runs the next collective).
  std::uint64_t mailboxBytes() const { return slot / nranks / 64 * 64; }
  std::uint64_t areaBytes() const { return slot + nranks * mailboxBytes(); }
  char *slotOf(int r) const {
    return base + sizeof(Shared) + std::size_t(nranks) * nranks * 64 +
           std::size_t(r) * areaBytes();
  }
  char *mailbox(int from, int to) const {
    return slotOf(from) + slot + std::size_t(to) * mailboxBytes();
  }
};

namespace {

const char *commName(ncclComm_t c) { return c ? c->name.c_str() : "null"; }

template <class Pred> bool waitUntil(Pred pred) {
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(timeoutSeconds()));
  int polls = 0;
  while (!pred()) {
    if (++polls > 64) {
      if (std::chrono::steady_clock::now() >= deadline)
        return false;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return true;
}

ncclResult_t barrier(ncclComm_t c) {
  std::uint64_t target = std::uint64_t(c->nranks) * (++c->barriers);
  fetchAdd(&c->shared()->arrived, 1);
  if (!waitUntil([&] { return loadA(&c->shared()->arrived) >= target; }))
    return failWith(ncclSystemError,
                    "%s rank %d: timed out at a barrier (peers missing)",
                    c->name.c_str(), c->rank);
  return ncclSuccess;
}

ncclResult_t attach(ncclComm_t c) {
  c->slot = slotBytes();
  c->bytes = sizeof(Shared) + std::uint64_t(c->nranks) * c->nranks * 64 +
             std::uint64_t(c->nranks) * c->areaBytes();
  std::string shm = "/" + c->name;
  int fd = ::shm_open(shm.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0)
    return failWith(ncclSystemError, "shm_open %s: %s", shm.c_str(),
                    std::strerror(errno));
  // Every rank sizes it the same; zero bytes are the initial state.
  if (::ftruncate(fd, off_t(c->bytes)) != 0) {
    ::close(fd);
    return failWith(ncclSystemError, "ftruncate %s: %s", shm.c_str(),
                    std::strerror(errno));
  }
  void *p =
      ::mmap(nullptr, c->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED)
    return failWith(ncclSystemError, "mmap %s: %s", shm.c_str(),
                    std::strerror(errno));
  c->base = static_cast<char *>(p);
  ncclResult_t r = barrier(c); // every rank attached
  ::shm_unlink(shm.c_str());   // then nobody needs the name
  return r;
}

void detach(ncclComm_t c) {
  if (c->base)
    ::munmap(c->base, c->bytes);
  ::shm_unlink(("/" + c->name).c_str()); // when a peer never came
  delete c;
}

int typeSize(ncclDataType_t t) { return dtypeSize(int(t)); }

template <class Op, class T>
void reduceInto(T *dst, const T *src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    dst[i] = combine<Op>(dst[i], src[i]);
}

template <class T>
bool reduceTyped(ncclRedOp_t op, void *dst, const void *src, std::size_t n) {
  T *d = static_cast<T *>(dst);
  const T *s = static_cast<const T *>(src);
  switch (op) {
  case ncclSum:
  case ncclAvg:
    reduceInto<SumOp>(d, s, n);
    return true;
  case ncclProd:
    reduceInto<ProdOp>(d, s, n);
    return true;
  case ncclMax:
    reduceInto<MaxOp>(d, s, n);
    return true;
  case ncclMin:
    reduceInto<MinOp>(d, s, n);
    return true;
  default:
    return false;
  }
}

template <class T> void divideTyped(void *buf, std::size_t n, int by) {
  T *b = static_cast<T *>(buf);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = Arith<T>::store(typename Arith<T>::type(Arith<T>::load(b[i]) / by));
}

/// dst = dst op src over n elements.
bool reduce(ncclDataType_t t, ncclRedOp_t op, void *dst, const void *src,
            std::size_t n) {
  switch (t) {
  case ncclInt8:
    return reduceTyped<std::int8_t>(op, dst, src, n);
  case ncclUint8:
    return reduceTyped<std::uint8_t>(op, dst, src, n);
  case ncclInt32:
    return reduceTyped<std::int32_t>(op, dst, src, n);
  case ncclUint32:
    return reduceTyped<std::uint32_t>(op, dst, src, n);
  case ncclInt64:
    return reduceTyped<std::int64_t>(op, dst, src, n);
  case ncclUint64:
    return reduceTyped<std::uint64_t>(op, dst, src, n);
  case ncclFloat16:
    return reduceTyped<Half>(op, dst, src, n);
  case ncclFloat32:
    return reduceTyped<float>(op, dst, src, n);
  case ncclFloat64:
    return reduceTyped<double>(op, dst, src, n);
  case ncclBfloat16:
    return reduceTyped<Bf16>(op, dst, src, n);
  default:
    return false;
  }
}
void divide(ncclDataType_t t, void *buf, std::size_t n, int by) {
  switch (t) {
  case ncclInt8:
    return divideTyped<std::int8_t>(buf, n, by);
  case ncclUint8:
    return divideTyped<std::uint8_t>(buf, n, by);
  case ncclInt32:
    return divideTyped<std::int32_t>(buf, n, by);
  case ncclUint32:
    return divideTyped<std::uint32_t>(buf, n, by);
  case ncclInt64:
    return divideTyped<std::int64_t>(buf, n, by);
  case ncclUint64:
    return divideTyped<std::uint64_t>(buf, n, by);
  case ncclFloat16:
    return divideTyped<Half>(buf, n, by);
  case ncclFloat32:
    return divideTyped<float>(buf, n, by);
  case ncclFloat64:
    return divideTyped<double>(buf, n, by);
  case ncclBfloat16:
    return divideTyped<Bf16>(buf, n, by);
  default:
    return;
  }
}

// --- device buffers, through the driver the process already loaded ----
struct Driver {
  using PointerGetAttribute = int (*)(void *, int, unsigned long long);
  using StreamSynchronize = int (*)(void *);
  using MemcpyDtoH = int (*)(void *, unsigned long long, std::size_t);
  using MemcpyHtoD = int (*)(unsigned long long, const void *, std::size_t);
  PointerGetAttribute attr = nullptr;
  StreamSynchronize sync = nullptr;
  MemcpyDtoH dtoh = nullptr;
  MemcpyHtoD htod = nullptr;
};

const Driver &driver() {
  static std::mutex m;
  static Driver d;
  std::lock_guard<std::mutex> lock(m);
  if (d.attr && d.sync && d.dtoh && d.htod)
    return d;
  void *h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  if (!h)
    return d;
  d.attr = reinterpret_cast<Driver::PointerGetAttribute>(
      ::dlsym(h, "cuPointerGetAttribute"));
  d.sync = reinterpret_cast<Driver::StreamSynchronize>(
      ::dlsym(h, "cuStreamSynchronize"));
  d.dtoh = reinterpret_cast<Driver::MemcpyDtoH>(::dlsym(h, "cuMemcpyDtoH_v2"));
  d.htod = reinterpret_cast<Driver::MemcpyHtoD>(::dlsym(h, "cuMemcpyHtoD_v2"));
  return d;
}

/// Device (or managed) memory, by CU_POINTER_ATTRIBUTE_MEMORY_TYPE.
bool onDevice(const void *p) {
  const Driver &d = driver();
  unsigned type = 0;
  return p && d.attr &&
         d.attr(&type, 2, reinterpret_cast<unsigned long long>(p)) == 0 &&
         type == 2;
}

/// Copies `bytes` from `src` (device when `dev`) to host `dst`.
bool fetch(void *dst, const void *src, std::size_t bytes, bool dev) {
  if (!dev) {
    std::memcpy(dst, src, bytes);
    return true;
  }
  return driver().dtoh(dst, reinterpret_cast<unsigned long long>(src), bytes) ==
         0;
}
/// Copies host `src` to `dst` (device when `dev`).
bool store(void *dst, const void *src, std::size_t bytes, bool dev) {
  if (!dev) {
    std::memcpy(dst, src, bytes);
    return true;
  }
  return driver().htod(reinterpret_cast<unsigned long long>(dst), src, bytes) ==
         0;
}

/// The stream of the collective being served (set by the API wrappers).
thread_local void *callStream = nullptr;

enum class Kind {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
  Gather,
  Scatter
};

/// One collective: every rank deposits `inBytes` of input, then builds its
/// output from the deposits.
ncclResult_t collective(Kind kind, const void *send, void *recv,
                        std::size_t count, ncclDataType_t t, ncclRedOp_t op,
                        int root, ncclComm_t c) {
  if (!c || !c->base)
    return failWith(ncclInvalidArgument, "invalid communicator");
  if (c->aborted)
    return ncclInvalidUsage;
  int es = typeSize(t);
  if (es == 0)
    return failWith(ncclInvalidArgument, "data type %d not supported", int(t));
  int n = c->nranks;
  std::size_t block = count * es;
  std::size_t inBytes = block;
  bool sends = true;
  switch (kind) {
  case Kind::ReduceScatter:
  case Kind::AllToAll:
  case Kind::Scatter:
    inBytes = block * n;
    break;
  default:
    break;
  }
  if ((kind == Kind::Broadcast || kind == Kind::Scatter) && c->rank != root)
    sends = false;
  if (inBytes > c->slot)
    return failWith(ncclInvalidArgument,
                    "%zu bytes exceed the double's slot of %llu (set "
                    "CCSYNTH_FAKE_NCCL_SLOT_BYTES)",
                    inBytes, (unsigned long long)c->slot);
  bool devIn = onDevice(send), devOut = onDevice(recv);
  if ((devIn || devOut) && driver().sync(callStream) != 0)
    return failWith(ncclUnhandledCudaError, "synchronizing the stream failed");
  if (sends && inBytes && !fetch(c->slotOf(c->rank), send, inBytes, devIn))
    return failWith(ncclUnhandledCudaError, "copying the input failed");
  if (ncclResult_t r = barrier(c); r != ncclSuccess)
    return r;
  std::size_t outBytes = block;
  if (kind == Kind::AllGather || kind == Kind::Gather || kind == Kind::AllToAll)
    outBytes = block * n;
  std::vector<char> staged(devOut ? outBytes : 0);
  char *out = devOut ? staged.data() : static_cast<char *>(recv);
  bool ok = true;
  switch (kind) {
  case Kind::AllReduce:
  case Kind::Reduce:
    if (kind == Kind::Reduce && c->rank != root)
      break;
    std::memcpy(out, c->slotOf(0), block);
    for (int r = 1; r < n && ok; ++r)
      ok = reduce(t, op, out, c->slotOf(r), count);
    if (op == ncclAvg)
      divide(t, out, count, n);
    break;
  case Kind::ReduceScatter:
    std::memcpy(out, c->slotOf(0) + c->rank * block, block);
    for (int r = 1; r < n && ok; ++r)
      ok = reduce(t, op, out, c->slotOf(r) + c->rank * block, count);
    if (op == ncclAvg)
      divide(t, out, count, n);
    break;
  case Kind::AllGather:
    for (int r = 0; r < n; ++r)
      std::memcpy(out + r * block, c->slotOf(r), block);
    break;
  case Kind::Gather:
    if (c->rank == root)
      for (int r = 0; r < n; ++r)
        std::memcpy(out + r * block, c->slotOf(r), block);
    break;
  case Kind::Broadcast:
    std::memcpy(out, c->slotOf(root), block);
    break;
  case Kind::Scatter:
    std::memcpy(out, c->slotOf(root) + c->rank * block, block);
    break;
  case Kind::AllToAll:
    for (int r = 0; r < n; ++r)
      std::memcpy(out + r * block, c->slotOf(r) + c->rank * block, block);
    break;
  }
  bool writes =
      !((kind == Kind::Reduce || kind == Kind::Gather) && c->rank != root);
  if (devOut && writes && ok && !store(recv, out, outBytes, true))
    return failWith(ncclUnhandledCudaError, "copying the output failed");
  ncclResult_t r = barrier(c);
  if (!ok)
    return failWith(ncclInvalidArgument, "reduction operator %d not supported",
                    int(op));
  return r;
}

// --- point to point ------------------------------------------------------
struct P2p {
  bool send;
  void *buf;
  std::size_t bytes;
  int peer;
  ncclComm_t comm;
  void *stream;
};
thread_local int groupDepth = 0;
thread_local std::vector<P2p> pending;

ncclResult_t doSend(const P2p &op) {
  ncclComm_t c = op.comm;
  if (op.bytes > c->mailboxBytes())
    return failWith(ncclInvalidArgument,
                    "send of %zu bytes exceeds the "
                    "mailbox",
                    op.bytes);
  std::uint64_t *seq = c->sendSeq(c->rank, op.peer);
  std::uint64_t *ack = c->ackSeq(c->rank, op.peer);
  std::uint64_t mine = loadA(seq);
  if (!waitUntil([&] { return loadA(ack) >= mine; }))
    return failWith(ncclSystemError, "%s rank %d: send to %d timed out",
                    c->name.c_str(), c->rank, op.peer);
  bool dev = onDevice(op.buf);
  if (dev && driver().sync(op.stream) != 0)
    return failWith(ncclUnhandledCudaError, "synchronizing the stream failed");
  if (!fetch(c->mailbox(c->rank, op.peer), op.buf, op.bytes, dev))
    return failWith(ncclUnhandledCudaError, "copying the send buffer failed");
  storeR(seq, mine + 1);
  return ncclSuccess;
}
ncclResult_t doRecv(const P2p &op) {
  ncclComm_t c = op.comm;
  std::uint64_t *seq = c->sendSeq(op.peer, c->rank);
  std::uint64_t *ack = c->ackSeq(op.peer, c->rank);
  std::uint64_t done = loadA(ack);
  if (!waitUntil([&] { return loadA(seq) > done; }))
    return failWith(ncclSystemError, "%s rank %d: receive from %d timed out",
                    c->name.c_str(), c->rank, op.peer);
  if (!store(op.buf, c->mailbox(op.peer, c->rank), op.bytes, onDevice(op.buf)))
    return failWith(ncclUnhandledCudaError, "copying into the receive buffer "
                                            "failed");
  storeR(ack, done + 1);
  return ncclSuccess;
}
ncclResult_t runPending() {
  std::vector<P2p> ops;
  ops.swap(pending);
  ncclResult_t result = ncclSuccess;
  for (const P2p &op : ops)
    if (op.send && result == ncclSuccess)
      result = doSend(op);
  for (const P2p &op : ops)
    if (!op.send && result == ncclSuccess)
      result = doRecv(op);
  return result;
}

void randomName(char *out, std::size_t size) {
  std::random_device rd;
  std::snprintf(out, size, "fakenccl-%d-%08x%08x", int(::getpid()), rd(), rd());
}

ncclResult_t initRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                      ncclConfig_t *config) {
  if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
    return failWith(ncclInvalidArgument, "bad arguments to init");
  auto *c = new ncclComm;
  c->name.assign(id.internal, strnlen(id.internal, sizeof id.internal));
  if (c->name.rfind("fakenccl-", 0) != 0) {
    delete c;
    return failWith(ncclInvalidArgument, "not a unique id of this double");
  }
  c->rank = rank;
  c->nranks = nranks;
  if (config && config->blocking == 0) {
    c->blocking = 0;
    c->reportInProgress = true;
  }
  if (ncclResult_t r = attach(c); r != ncclSuccess) {
    detach(c);
    *comm = nullptr;
    return r;
  }
  *comm = c;
  return c->blocking ? ncclSuccess : ncclInProgress;
}

} // namespace

// --- the API ---------------------------------------------------------------

FAKE_API ncclResult_t ncclGetVersion(int *version) {
  record("ncclGetVersion");
  if (!version)
    return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  record("ncclGetUniqueId");
  if (!id)
    return ncclInvalidArgument;
  std::memset(id, 0, sizeof *id);
  randomName(id->internal, sizeof id->internal);
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks,
                                       ncclUniqueId id, int rank) {
  record("ncclCommInitRank nranks=%d rank=%d", nranks, rank);
  return initRank(comm, nranks, id, rank, nullptr);
}

FAKE_API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                             ncclUniqueId id, int rank,
                                             ncclConfig_t *config) {
  record("ncclCommInitRankConfig nranks=%d rank=%d blocking=%d", nranks, rank,
         config ? config->blocking : -1);
  return initRank(comm, nranks, id, rank, config);
}

FAKE_API ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks,
                                               int rank, int nId,
                                               ncclUniqueId *ids,
                                               ncclConfig_t *config) {
  record("ncclCommInitRankScalable nranks=%d rank=%d nId=%d", nranks, rank,
         nId);
  if (nId < 1 || !ids)
    return ncclInvalidArgument;
  return initRank(comm, nranks, ids[0], rank, config);
}

FAKE_API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev,
                                      const int *) {
  record("ncclCommInitAll ndev=%d", ndev);
  return failWith(ncclInvalidUsage,
                  "ncclCommInitAll: the double runs one rank per process");
}

FAKE_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                    ncclComm_t *newcomm, ncclConfig_t *config) {
  record("ncclCommSplit comm=%s/%d color=%d key=%d", commName(comm),
         comm ? comm->rank : -1, color, key);
  if (!comm || !newcomm)
    return ncclInvalidArgument;
  // Everyone publishes (color, key); the ranks of one color sort by key.
  auto *mine = reinterpret_cast<std::int64_t *>(comm->slotOf(comm->rank));
  mine[0] = color;
  mine[1] = key;
  if (ncclResult_t r = barrier(comm); r != ncclSuccess)
    return r;
  std::vector<std::pair<std::pair<std::int64_t, int>, int>> members;
  for (int r = 0; r < comm->nranks; ++r) {
    auto *v = reinterpret_cast<std::int64_t *>(comm->slotOf(r));
    if (v[0] == color && color != NCCL_SPLIT_NOCOLOR)
      members.push_back({{v[1], r}, r});
  }
  if (ncclResult_t r = barrier(comm); r != ncclSuccess)
    return r;
  std::uint64_t seq = comm->splits++;
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  std::sort(members.begin(), members.end());
  ncclUniqueId id{};
  std::snprintf(id.internal, sizeof id.internal, "%s.s%llu.c%d",
                comm->name.c_str(), (unsigned long long)seq, color);
  int newRank = 0;
  for (std::size_t i = 0; i < members.size(); ++i)
    if (members[i].second == comm->rank)
      newRank = int(i);
  return initRank(newcomm, int(members.size()), id, newRank, config);
}

FAKE_API ncclResult_t ncclCommShrink(ncclComm_t comm, int *, int count,
                                     ncclComm_t *, ncclConfig_t *, int) {
  record("ncclCommShrink comm=%s/%d exclude=%d", commName(comm),
         comm ? comm->rank : -1, count);
  return failWith(ncclInvalidUsage, "ncclCommShrink is not in the double");
}

FAKE_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  record("ncclCommFinalize comm=%s/%d", commName(comm), comm ? comm->rank : -1);
  return comm ? ncclSuccess : ncclInvalidArgument;
}

FAKE_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  record("ncclCommDestroy comm=%s/%d", commName(comm), comm ? comm->rank : -1);
  if (!comm)
    return ncclInvalidArgument;
  detach(comm);
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  record("ncclCommAbort comm=%s/%d", commName(comm), comm ? comm->rank : -1);
  if (!comm)
    return ncclSuccess;
  detach(comm);
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags) {
  record("ncclCommRevoke comm=%s/%d flags=%d", commName(comm),
         comm ? comm->rank : -1, flags);
  if (!comm)
    return ncclInvalidArgument;
  comm->aborted = true;
  return ncclSuccess;
}

FAKE_API const char *ncclGetErrorString(ncclResult_t result) {
  record("ncclGetErrorString result=%d", int(result));
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled cuda error";
  case ncclSystemError:
    return "unhandled system error";
  case ncclInternalError:
    return "internal error";
  case ncclInvalidArgument:
    return "invalid argument";
  case ncclInvalidUsage:
    return "invalid usage";
  case ncclRemoteError:
    return "remote process exited or there was a network "
           "error";
  case ncclInProgress:
    return "NCCL operation in progress";
  default:
    return "unknown result code";
  }
}

FAKE_API const char *ncclGetLastError(ncclComm_t comm) {
  record("ncclGetLastError comm=%s", commName(comm));
  return lastError.c_str();
}

FAKE_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm,
                                            ncclResult_t *asyncError) {
  record("ncclCommGetAsyncError comm=%s/%d", commName(comm),
         comm ? comm->rank : -1);
  if (!comm || !asyncError)
    return ncclInvalidArgument;
  if (comm->reportInProgress) {
    comm->reportInProgress = false; // "completes" at the first poll
    *asyncError = ncclInProgress;
    return ncclSuccess;
  }
  *asyncError = comm->asyncError;
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  record("ncclCommCount comm=%s/%d", commName(comm), comm ? comm->rank : -1);
  if (!comm || !count)
    return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
  record("ncclCommCuDevice comm=%s/%d", commName(comm), comm ? comm->rank : -1);
  if (!comm || !device)
    return ncclInvalidArgument;
  *device = 0;
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  record("ncclCommUserRank comm=%s/%d", commName(comm), comm ? comm->rank : -1);
  if (!comm || !rank)
    return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
  record("ncclMemAlloc size=%zu", size);
  if (!ptr)
    return ncclInvalidArgument;
  *ptr = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096 + 4096);
  return *ptr ? ncclSuccess : ncclSystemError;
}

FAKE_API ncclResult_t ncclMemFree(void *ptr) {
  record("ncclMemFree");
  std::free(ptr);
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff,
                                       size_t size, void **handle) {
  record("ncclCommRegister comm=%s/%d size=%zu", commName(comm),
         comm ? comm->rank : -1, size);
  if (!comm || !handle)
    return ncclInvalidArgument;
  *handle = buff;
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *) {
  record("ncclCommDeregister comm=%s/%d", commName(comm),
         comm ? comm->rank : -1);
  return comm ? ncclSuccess : ncclInvalidArgument;
}

FAKE_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff,
                                             size_t size, ncclWindow_t *win,
                                             int flags) {
  record("ncclCommWindowRegister comm=%s/%d size=%zu flags=%d", commName(comm),
         comm ? comm->rank : -1, size, flags);
  if (!comm || !win)
    return ncclInvalidArgument;
  *win = reinterpret_cast<ncclWindow_t>(buff);
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t) {
  record("ncclCommWindowDeregister comm=%s/%d", commName(comm),
         comm ? comm->rank : -1);
  return comm ? ncclSuccess : ncclInvalidArgument;
}

FAKE_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *, void *,
                                               ncclDataType_t dtype,
                                               ncclScalarResidence_t,
                                               ncclComm_t comm) {
  record("ncclRedOpCreatePreMulSum dtype=%d comm=%s", int(dtype),
         commName(comm));
  return failWith(ncclInvalidUsage, "PreMulSum is not in the double");
}

FAKE_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  record("ncclRedOpDestroy op=%d comm=%s", int(op), commName(comm));
  return ncclInvalidArgument;
}

#define COMM_ARGS                                                              \
  commName(comm), comm ? comm->rank : -1, comm ? comm->nranks : 0

FAKE_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff,
                                    size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, ncclComm_t comm,
                                    cudaStream_t stream) {
  callStream = stream;
  record("ncclAllReduce count=%zu dtype=%d op=%d inplace=%d comm=%s/%d/%d",
         count, int(datatype), int(op), sendbuff == recvbuff, COMM_ARGS);
  return collective(Kind::AllReduce, sendbuff, recvbuff, count, datatype, op, 0,
                    comm);
}

FAKE_API ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff,
                                    size_t sendcount, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream) {
  callStream = stream;
  record("ncclAllGather count=%zu dtype=%d comm=%s/%d/%d", sendcount,
         int(datatype), COMM_ARGS);
  return collective(Kind::AllGather, sendbuff, recvbuff, sendcount, datatype,
                    ncclSum, 0, comm);
}

FAKE_API ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
                                        size_t recvcount,
                                        ncclDataType_t datatype, ncclRedOp_t op,
                                        ncclComm_t comm, cudaStream_t stream) {
  callStream = stream;
  record("ncclReduceScatter count=%zu dtype=%d op=%d comm=%s/%d/%d", recvcount,
         int(datatype), int(op), COMM_ARGS);
  return collective(Kind::ReduceScatter, sendbuff, recvbuff, recvcount,
                    datatype, op, 0, comm);
}

FAKE_API ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff,
                                    size_t count, ncclDataType_t datatype,
                                    int root, ncclComm_t comm,
                                    cudaStream_t stream) {
  callStream = stream;
  record("ncclBroadcast count=%zu dtype=%d root=%d comm=%s/%d/%d", count,
         int(datatype), root, COMM_ARGS);
  return collective(Kind::Broadcast, sendbuff, recvbuff, count, datatype,
                    ncclSum, root, comm);
}

FAKE_API ncclResult_t ncclBcast(void *buff, size_t count,
                                ncclDataType_t datatype, int root,
                                ncclComm_t comm, cudaStream_t stream) {
  callStream = stream;
  record("ncclBcast count=%zu dtype=%d root=%d comm=%s/%d/%d", count,
         int(datatype), root, COMM_ARGS);
  return collective(Kind::Broadcast, buff, buff, count, datatype, ncclSum, root,
                    comm);
}

FAKE_API ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff,
                                 size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, int root, ncclComm_t comm,
                                 cudaStream_t stream) {
  callStream = stream;
  record("ncclReduce count=%zu dtype=%d op=%d root=%d comm=%s/%d/%d", count,
         int(datatype), int(op), root, COMM_ARGS);
  return collective(Kind::Reduce, sendbuff, recvbuff, count, datatype, op, root,
                    comm);
}

FAKE_API ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff,
                                   size_t count, ncclDataType_t datatype,
                                   ncclComm_t comm, cudaStream_t stream) {
  callStream = stream;
  record("ncclAlltoAll count=%zu dtype=%d comm=%s/%d/%d", count, int(datatype),
         COMM_ARGS);
  return collective(Kind::AllToAll, sendbuff, recvbuff, count, datatype,
                    ncclSum, 0, comm);
}

FAKE_API ncclResult_t ncclGather(const void *sendbuff, void *recvbuff,
                                 size_t count, ncclDataType_t datatype,
                                 int root, ncclComm_t comm,
                                 cudaStream_t stream) {
  callStream = stream;
  record("ncclGather count=%zu dtype=%d root=%d comm=%s/%d/%d", count,
         int(datatype), root, COMM_ARGS);
  return collective(Kind::Gather, sendbuff, recvbuff, count, datatype, ncclSum,
                    root, comm);
}

FAKE_API ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff,
                                  size_t count, ncclDataType_t datatype,
                                  int root, ncclComm_t comm,
                                  cudaStream_t stream) {
  callStream = stream;
  record("ncclScatter count=%zu dtype=%d root=%d comm=%s/%d/%d", count,
         int(datatype), root, COMM_ARGS);
  return collective(Kind::Scatter, sendbuff, recvbuff, count, datatype, ncclSum,
                    root, comm);
}

FAKE_API ncclResult_t ncclSend(const void *sendbuff, size_t count,
                               ncclDataType_t datatype, int peer,
                               ncclComm_t comm, cudaStream_t stream) {
  callStream = stream;
  record("ncclSend count=%zu dtype=%d peer=%d comm=%s/%d/%d", count,
         int(datatype), peer, COMM_ARGS);
  if (!comm || peer < 0 || peer >= comm->nranks || !typeSize(datatype))
    return ncclInvalidArgument;
  pending.push_back({true, const_cast<void *>(sendbuff),
                     count * typeSize(datatype), peer, comm, stream});
  return groupDepth > 0 ? ncclSuccess : runPending();
}

FAKE_API ncclResult_t ncclRecv(void *recvbuff, size_t count,
                               ncclDataType_t datatype, int peer,
                               ncclComm_t comm, cudaStream_t stream) {
  callStream = stream;
  record("ncclRecv count=%zu dtype=%d peer=%d comm=%s/%d/%d", count,
         int(datatype), peer, COMM_ARGS);
  if (!comm || peer < 0 || peer >= comm->nranks || !typeSize(datatype))
    return ncclInvalidArgument;
  pending.push_back(
      {false, recvbuff, count * typeSize(datatype), peer, comm, stream});
  return groupDepth > 0 ? ncclSuccess : runPending();
}

FAKE_API ncclResult_t ncclGroupStart() {
  record("ncclGroupStart");
  ++groupDepth;
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclGroupEnd() {
  record("ncclGroupEnd");
  if (groupDepth <= 0)
    return ncclInvalidUsage;
  if (--groupDepth > 0)
    return ncclSuccess;
  return runPending();
}

FAKE_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *info) {
  record("ncclGroupSimulateEnd");
  if (groupDepth <= 0)
    return ncclInvalidUsage;
  --groupDepth;
  pending.clear();
  if (info)
    info->estimatedTime = 0;
  return ncclSuccess;
}
