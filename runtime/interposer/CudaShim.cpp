//===- CudaShim.cpp - The CUDA driver calls of the interposer -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Cuda, the few driver entry points the interposer calls, looked up in the
// driver the application already loaded (cuda()); then buffer kinds and
// graph capture (capturing, deviceMemory, deviceOf), the staging copies
// (copyAsync) and the events that order one communicator's launches. See
// docs/runtime.md, "The NCCL-API interposer".
//
//===----------------------------------------------------------------------===//
#include "CudaShim.h"

#include <chrono>
#include <cstddef>
#include <dlfcn.h>
#include <mutex>
#include <thread>

namespace ccsynth::interposer::detail {

namespace {

/// The few driver calls the interposer makes itself, looked up in the
/// driver the application already loaded (libcuda.so.1 is in every process
/// that uses CUDA, whichever runtime it linked): buffer kinds, graph
/// capture and the staging copies on the caller's stream. Looked up again
/// at each call until found, so a process that starts CUDA after its first
/// NCCL call still gets it.
struct Cuda {
  using PointerGetAttribute = int (*)(void *, int, unsigned long long);
  using StreamIsCapturing = int (*)(void *, int *);
  using MemcpyDtoDAsync = int (*)(unsigned long long, unsigned long long,
                                  std::size_t, void *);
  using EventCreate = int (*)(void **, unsigned);
  using EventRecordWithFlags = int (*)(void *, void *, unsigned);
  using StreamWaitEvent = int (*)(void *, void *, unsigned);
  using EventDestroy = int (*)(void *);
  using EventQuery = int (*)(void *);
  PointerGetAttribute pointerGetAttribute = nullptr;
  StreamIsCapturing streamIsCapturing = nullptr;
  MemcpyDtoDAsync memcpyDtoDAsync = nullptr;
  EventCreate eventCreate = nullptr;
  EventRecordWithFlags eventRecordWithFlags = nullptr;
  StreamWaitEvent streamWaitEvent = nullptr;
  EventDestroy eventDestroy = nullptr;
  EventQuery eventQuery = nullptr;
  bool ok() const {
    return pointerGetAttribute && streamIsCapturing && memcpyDtoDAsync &&
           eventCreate && eventRecordWithFlags && streamWaitEvent &&
           eventDestroy && eventQuery;
  }
};

const Cuda &cuda() {
  static std::mutex m;
  static Cuda c;
  std::lock_guard<std::mutex> lock(m);
  if (c.ok())
    return c;
  // Only a driver the application already has: loading one here would
  // pull CUDA into a process that does not use it.
  void *h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  if (!h)
    return c;
  c.pointerGetAttribute = reinterpret_cast<Cuda::PointerGetAttribute>(
      ::dlsym(h, "cuPointerGetAttribute"));
  c.streamIsCapturing = reinterpret_cast<Cuda::StreamIsCapturing>(
      ::dlsym(h, "cuStreamIsCapturing"));
  c.memcpyDtoDAsync = reinterpret_cast<Cuda::MemcpyDtoDAsync>(
      ::dlsym(h, "cuMemcpyDtoDAsync_v2"));
  c.eventCreate =
      reinterpret_cast<Cuda::EventCreate>(::dlsym(h, "cuEventCreate"));
  c.eventRecordWithFlags = reinterpret_cast<Cuda::EventRecordWithFlags>(
      ::dlsym(h, "cuEventRecordWithFlags"));
  c.streamWaitEvent =
      reinterpret_cast<Cuda::StreamWaitEvent>(::dlsym(h, "cuStreamWaitEvent"));
  c.eventDestroy =
      reinterpret_cast<Cuda::EventDestroy>(::dlsym(h, "cuEventDestroy_v2"));
  c.eventQuery = reinterpret_cast<Cuda::EventQuery>(::dlsym(h, "cuEventQuery"));
  return c;
}

} // namespace

bool capturing(cudaStream_t s) {
  const Cuda &c = cuda();
  int status = 0; // CU_STREAM_CAPTURE_STATUS_NONE
  return c.streamIsCapturing && c.streamIsCapturing(s, &status) == 0 &&
         status != 0;
}

// cuPointerGetAttribute: CU_POINTER_ATTRIBUTE_MEMORY_TYPE (2) is
// CU_MEMORYTYPE_DEVICE (2) for device and managed memory; host memory the
// driver does not know fails the call. DEVICE_ORDINAL is attribute 9.
constexpr int kAttrMemoryType = 2, kMemoryDevice = 2, kAttrDeviceOrdinal = 9;

bool deviceMemory(const void *p) {
  const Cuda &c = cuda();
  if (!c.pointerGetAttribute || !p)
    return false;
  unsigned type = 0;
  return c.pointerGetAttribute(&type, kAttrMemoryType,
                               reinterpret_cast<unsigned long long>(p)) == 0 &&
         type == kMemoryDevice;
}

int deviceOf(const void *p) {
  const Cuda &c = cuda();
  int ordinal = -1;
  if (!c.pointerGetAttribute ||
      c.pointerGetAttribute(&ordinal, kAttrDeviceOrdinal,
                            reinterpret_cast<unsigned long long>(p)) != 0)
    return -1;
  return ordinal;
}

bool copyAsync(void *dst, const void *src, std::size_t bytes,
               cudaStream_t stream) {
  if (bytes == 0 || dst == src)
    return true;
  const Cuda &c = cuda();
  return c.memcpyDtoDAsync &&
         c.memcpyDtoDAsync(reinterpret_cast<unsigned long long>(dst),
                           reinterpret_cast<unsigned long long>(src), bytes,
                           stream) == 0;
}

// CU_EVENT_DISABLE_TIMING; CU_EVENT_RECORD_EXTERNAL and CU_EVENT_WAIT_EXTERNAL
// (under stream capture: an event node that records or waits at replay).
constexpr unsigned kEventDisableTiming = 2, kEventExternal = 1;

void *createOrderEvent() {
  const Cuda &c = cuda();
  void *e = nullptr;
  if (!c.eventCreate || c.eventCreate(&e, kEventDisableTiming) != 0)
    return nullptr;
  return e;
}

bool waitOrderEvent(void *event, cudaStream_t stream, bool captured) {
  const Cuda &c = cuda();
  return c.streamWaitEvent &&
         c.streamWaitEvent(stream, event, captured ? kEventExternal : 0) == 0;
}

bool recordOrderEvent(void *event, cudaStream_t stream, bool captured) {
  const Cuda &c = cuda();
  return c.eventRecordWithFlags &&
         c.eventRecordWithFlags(event, stream, captured ? kEventExternal : 0) ==
             0;
}

bool awaitOrderEvent(void *event, double seconds) {
  const Cuda &c = cuda();
  if (!event || !c.eventQuery)
    return true;
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(seconds));
  for (;;) {
    int r = c.eventQuery(event);
    if (r != 600)
      return r == 0;
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void destroyOrderEvent(void *&event) {
  const Cuda &c = cuda();
  if (event && c.eventDestroy)
    c.eventDestroy(event);
  event = nullptr;
}

} // namespace ccsynth::interposer::detail
