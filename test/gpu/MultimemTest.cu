//===- MultimemTest.cu - The runtime's multimem primitives, for real -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Runs the NVLink SHARP primitives that generated switch threadblocks call
// (CudaPrimitives.cuh: multimemReduceBlock, multimemStoreBlock,
// multimemFence) through a real multicast object of this GPU, made with the
// driver's multicast API as NCCL makes its NVLS buffers: physical memory
// bound to the object, mapped once at its unicast address and once at the
// object's multicast address. With one member the switch's sum is the
// member's own value, so:
//   - multimem.ld_reduce (fp32, fp16, bf16 sums) through the multicast
//     address must return the unicast bytes bit for bit;
//   - multimem.st through it must leave the source bytes at the unicast
//     address;
// at several byte counts (one vector, a ragged last block, 64 MiB), each
// after poisoning what it writes. Then it times both against
// cudaMemcpy D2D of the same bytes in the same run (`bench`: at 64 MiB and
// 1 GiB; otherwise at 64 MiB only).
//
// One member measures the multimem instructions' path through this GPU's
// switch port, not a reduction over several GPUs: what the step model calls
// the switch's throughput per port needs 8 GPUs on one NVSwitch.
//
// Driver functions are looked up at run time (cudaGetDriverEntryPoint-
// ByVersion), so nothing links libcuda. Exit 77 (skipped) without a GPU,
// below sm_90, or where the driver offers no multicast object for this GPU
// (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0, or creating one is refused):
// the line printed says which.
//
//===----------------------------------------------------------------------===//
#include "GpuTest.h"
#include "ccsynth/runtime/CudaPrimitives.cuh"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using ccsynth::rt::Knobs;
using K = Knobs<256, 4>;

using ccsynth::gputest::failures;

/// The driver functions this test calls, looked up at run time.
struct Driver {
  decltype(&cuGetErrorString) errorString = nullptr;
  decltype(&cuDeviceGet) deviceGet = nullptr;
  decltype(&cuDeviceGetAttribute) attribute = nullptr;
  decltype(&cuMulticastGetGranularity) mcGranularity = nullptr;
  decltype(&cuMulticastCreate) mcCreate = nullptr;
  decltype(&cuMulticastAddDevice) mcAddDevice = nullptr;
  decltype(&cuMulticastBindMem) mcBindMem = nullptr;
  decltype(&cuMulticastUnbind) mcUnbind = nullptr;
  decltype(&cuMemGetAllocationGranularity) memGranularity = nullptr;
  decltype(&cuMemCreate) memCreate = nullptr;
  decltype(&cuMemRelease) memRelease = nullptr;
  decltype(&cuMemAddressReserve) addressReserve = nullptr;
  decltype(&cuMemAddressFree) addressFree = nullptr;
  decltype(&cuMemMap) memMap = nullptr;
  decltype(&cuMemUnmap) memUnmap = nullptr;
  decltype(&cuMemSetAccess) setAccess = nullptr;
};

template <class F>
bool lookUp(const char *name, unsigned version, F &fn, std::string &missing) {
  void *p = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault,
                                       &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || !p) {
    missing += missing.empty() ? name : std::string(", ") + name;
    return false;
  }
  fn = reinterpret_cast<F>(p);
  return true;
}

/// Empty when every function was found, else the missing names.
std::string loadDriver(Driver &d) {
  std::string missing;
  lookUp("cuGetErrorString", 6000, d.errorString, missing);
  lookUp("cuDeviceGet", 2000, d.deviceGet, missing);
  lookUp("cuDeviceGetAttribute", 2000, d.attribute, missing);
  lookUp("cuMulticastGetGranularity", 12010, d.mcGranularity, missing);
  lookUp("cuMulticastCreate", 12010, d.mcCreate, missing);
  lookUp("cuMulticastAddDevice", 12010, d.mcAddDevice, missing);
  lookUp("cuMulticastBindMem", 12010, d.mcBindMem, missing);
  lookUp("cuMulticastUnbind", 12010, d.mcUnbind, missing);
  lookUp("cuMemGetAllocationGranularity", 10020, d.memGranularity, missing);
  lookUp("cuMemCreate", 10020, d.memCreate, missing);
  lookUp("cuMemRelease", 10020, d.memRelease, missing);
  lookUp("cuMemAddressReserve", 10020, d.addressReserve, missing);
  lookUp("cuMemAddressFree", 10020, d.addressFree, missing);
  lookUp("cuMemMap", 10020, d.memMap, missing);
  lookUp("cuMemUnmap", 10020, d.memUnmap, missing);
  lookUp("cuMemSetAccess", 10020, d.setAccess, missing);
  return missing;
}

Driver drv;

std::string cuText(CUresult r) {
  const char *s = nullptr;
  if (drv.errorString && drv.errorString(r, &s) == CUDA_SUCCESS && s)
    return s;
  return "CUresult " + std::to_string(int(r));
}

#define CU_OK(expr)                                                            \
  do {                                                                         \
    CUresult r_ = (expr);                                                      \
    if (r_ != CUDA_SUCCESS) {                                                  \
      std::printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr,           \
                  cuText(r_).c_str());                                         \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

/// This block's slice of `bytes`, one block per `perBlock` bytes, as
/// switch threadblocks move their slices: its offset, and its length (0
/// past the end).
__device__ std::size_t blockSlice(std::size_t perBlock, std::size_t bytes,
                                  std::size_t &off) {
  off = std::size_t(blockIdx.x) * perBlock;
  if (off >= bytes)
    return 0;
  return bytes - off < perBlock ? bytes - off : perBlock;
}

template <class T>
__global__ void reduceKernel(char *dst, const char *mc, std::size_t perBlock,
                             std::size_t bytes) {
  std::size_t off = 0, n = blockSlice(perBlock, bytes, off);
  if (n == 0)
    return;
  ccsynth::rt::multimemReduceBlock<K, T>(dst + off, mc + off, n);
  ccsynth::rt::multimemFence();
}

__global__ void storeKernel(char *mc, const char *src, std::size_t perBlock,
                            std::size_t bytes) {
  std::size_t off = 0, n = blockSlice(perBlock, bytes, off);
  if (n == 0)
    return;
  ccsynth::rt::multimemStoreBlock<K>(mc + off, src + off, n);
  ccsynth::rt::multimemFence();
}

constexpr std::size_t kPerBlock = 1 << 20;

unsigned blocksFor(std::size_t bytes) {
  return unsigned((bytes + kPerBlock - 1) / kPerBlock);
}

/// A multicast object of this GPU with `size` bytes bound and mapped twice.
struct Multicast {
  CUmemGenericAllocationHandle object = 0, memory = 0;
  CUdeviceptr unicast = 0, multicast = 0;
  std::size_t size = 0;
  CUdevice dev = 0;
};

/// Creates it; false (with the reason printed) where the driver refuses a
/// multicast object on this machine.
bool makeMulticast(CUdevice dev, std::size_t want, Multicast &m) {
  m.dev = dev;
  CUmulticastObjectProp prop = {};
  prop.numDevices = 1;
  prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.size = want;
  std::size_t mcGran = 0, memGran = 0;
  CU_OK(
      drv.mcGranularity(&mcGran, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED));
  CUmemAllocationProp ap = {};
  ap.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  ap.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  ap.location.id = int(dev);
  ap.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CU_OK(
      drv.memGranularity(&memGran, &ap, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  std::size_t gran = mcGran > memGran ? mcGran : memGran;
  m.size = (want + gran - 1) / gran * gran;
  prop.size = m.size;
  // What the machine refuses (no NVSwitch multicast, no fabric manager,
  // a virtual machine's limits) skips; any other error fails.
  auto refused = [](const char *call, CUresult r) {
    if (r != CUDA_ERROR_NOT_SUPPORTED && r != CUDA_ERROR_NOT_PERMITTED &&
        r != CUDA_ERROR_SYSTEM_NOT_READY &&
        r != CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
      return false;
    std::printf("skipped: %s refused (%s): the multimem path is not "
                "checked on this machine\n",
                call, cuText(r).c_str());
    return true;
  };
  CUresult r = drv.mcCreate(&m.object, &prop);
  if (refused("cuMulticastCreate", r))
    return false;
  CU_OK(r);
  r = drv.mcAddDevice(m.object, dev);
  if (refused("cuMulticastAddDevice", r))
    return false;
  CU_OK(r);
  CU_OK(drv.memCreate(&m.memory, m.size, &ap, 0));
  r = drv.mcBindMem(m.object, 0, m.memory, 0, m.size, 0);
  if (refused("cuMulticastBindMem", r))
    return false;
  CU_OK(r);
  CUmemAccessDesc access = {};
  access.location = ap.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_OK(drv.addressReserve(&m.unicast, m.size, gran, 0, 0));
  CU_OK(drv.memMap(m.unicast, m.size, 0, m.memory, 0));
  CU_OK(drv.setAccess(m.unicast, m.size, &access, 1));
  CU_OK(drv.addressReserve(&m.multicast, m.size, gran, 0, 0));
  CU_OK(drv.memMap(m.multicast, m.size, 0, m.object, 0));
  CU_OK(drv.setAccess(m.multicast, m.size, &access, 1));
  return true;
}

void freeMulticast(Multicast &m) {
  CU_OK(drv.memUnmap(m.multicast, m.size));
  CU_OK(drv.addressFree(m.multicast, m.size));
  CU_OK(drv.memUnmap(m.unicast, m.size));
  CU_OK(drv.addressFree(m.unicast, m.size));
  CU_OK(drv.mcUnbind(m.object, m.dev, 0, m.size));
  CU_OK(drv.memRelease(m.memory));
  CU_OK(drv.memRelease(m.object));
}

char *ptr(CUdeviceptr p) { return reinterpret_cast<char *>(p); }

/// Random bytes that are finite, non-zero values of every tested type
/// (exponent bits kept away from all-ones and from zero in each 16-bit
/// half, so fp32, fp16 and bf16 all read numbers, never -0, NaN or inf).
std::vector<unsigned char> pattern(std::size_t bytes, unsigned seed) {
  std::uint32_t x = 2463534242u ^ seed; // xorshift32: fast on 64 MiB
  std::vector<unsigned char> v(bytes);
  for (std::size_t i = 0; i + 1 < bytes; i += 2) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    std::uint16_t h =
        std::uint16_t((x & 0x83ff) | (std::uint16_t(1 + (x >> 16) % 29) << 10));
    std::memcpy(&v[i], &h, 2);
  }
  return v;
}

template <class T>
void reduceCase(const Multicast &m, char *dst, std::size_t bytes,
                const char *type, unsigned seed) {
  std::vector<unsigned char> in = pattern(bytes, seed), out(bytes);
  CUDA_OK(cudaMemcpy(ptr(m.unicast), in.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dst, 0xff, bytes));
  reduceKernel<T><<<blocksFor(bytes), K::threads>>>(dst, ptr(m.multicast),
                                                    kPerBlock, bytes);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(out.data(), dst, bytes, cudaMemcpyDeviceToHost));
  std::size_t bad = 0, first = bytes;
  for (std::size_t i = 0; i < bytes; ++i)
    if (in[i] != out[i] && bad++ == 0)
      first = i;
  EXPECT(bad == 0,
         "multimem.ld_reduce %s over one member, %zu bytes: %zu bytes differ "
         "from the member's own (first at %zu)",
         type, bytes, bad, first);
}

void storeCase(const Multicast &m, char *src, std::size_t bytes,
               unsigned seed) {
  std::vector<unsigned char> in = pattern(bytes, seed), out(bytes);
  CUDA_OK(cudaMemcpy(src, in.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(ptr(m.unicast), 0, bytes));
  storeKernel<<<blocksFor(bytes), K::threads>>>(ptr(m.multicast), src,
                                                kPerBlock, bytes);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(
      cudaMemcpy(out.data(), ptr(m.unicast), bytes, cudaMemcpyDeviceToHost));
  std::size_t bad = 0;
  for (std::size_t i = 0; i < bytes; ++i)
    bad += in[i] != out[i];
  EXPECT(bad == 0, "multimem.st over one member, %zu bytes: %zu bytes differ",
         bytes, bad);
}

/// Median milliseconds of `iters` launches of f after two warm-ups.
template <class F> float timeMs(F f, int iters) {
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  f();
  f();
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int i = 0; i < iters; ++i) {
    CUDA_OK(cudaEventRecord(a));
    f();
    CUDA_OK(cudaEventRecord(b));
    CUDA_OK(cudaEventSynchronize(b));
    float t = 0;
    CUDA_OK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void timeAt(const Multicast &m, char *other, std::size_t bytes) {
  int iters = bytes >= (std::size_t(1) << 30) ? 5 : 20;
  unsigned blocks = blocksFor(bytes);
  float copy = timeMs(
      [&] {
        CUDA_OK(cudaMemcpyAsync(other, ptr(m.unicast), bytes,
                                cudaMemcpyDeviceToDevice));
      },
      iters);
  float reduce = timeMs(
      [&] {
        reduceKernel<float>
            <<<blocks, K::threads>>>(other, ptr(m.multicast), kPerBlock, bytes);
      },
      iters);
  float store = timeMs(
      [&] {
        storeKernel<<<blocks, K::threads>>>(ptr(m.multicast), other, kPerBlock,
                                            bytes);
      },
      iters);
  auto gbps = [&](float ms) { return double(bytes) / (ms * 1e6); };
  std::printf("multimem %6zuM: ld_reduce f32 %8.1f GB/s, st %8.1f GB/s, "
              "cudaMemcpy D2D %8.1f GB/s (bytes moved / time; "
              "ld_reduce / memcpy time %.2fx, st / memcpy %.2fx; %u blocks "
              "of %d threads x %d loads, 1 MiB each)\n",
              bytes >> 20, gbps(reduce), gbps(store), gbps(copy), reduce / copy,
              store / copy, blocks, K::threads, K::loads);
}

} // namespace

int main(int argc, char **argv) {
  bool bench = argc > 1 && std::strcmp(argv[1], "bench") == 0;
  if (argc > 1 && !bench) {
    std::printf("usage: %s [bench]\n", argv[0]);
    return 2;
  }
  if (ccsynth::gputest::noCudaDevice())
    return 77;
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaFree(nullptr)); // the primary context, for the driver calls
  cudaDeviceProp props;
  CUDA_OK(cudaGetDeviceProperties(&props, 0));
  if (props.major < 9) {
    std::printf("skipped: %s is sm_%d%d; multimem needs sm_90 or later\n",
                props.name, props.major, props.minor);
    return 77;
  }
  std::string missing = loadDriver(drv);
  if (!missing.empty()) {
    std::printf("skipped: the driver has no %s\n", missing.c_str());
    return 77;
  }
  CUdevice dev = 0;
  CU_OK(drv.deviceGet(&dev, 0));
  int supported = 0;
  CU_OK(
      drv.attribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev));
  if (!supported) {
    std::printf("skipped: %s reports CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED "
                "= 0 (no NVSwitch multicast on this machine): the multimem "
                "path is not checked here\n",
                props.name);
    return 77;
  }
  std::size_t want = std::size_t(bench ? 1024 : 64) << 20;
  Multicast m;
  if (!makeMulticast(dev, want, m))
    return 77;
  std::printf("%s: multicast object of %zu MiB, one member\n", props.name,
              m.size >> 20);
  char *dst = nullptr;
  CUDA_OK(cudaMalloc(&dst, m.size));
  // One vector, a ragged last block, several blocks, 64 MiB.
  const std::size_t counts[] = {16, kPerBlock + 48, 5 * kPerBlock - 16,
                                std::size_t(64) << 20};
  unsigned seed = 1;
  for (std::size_t bytes : counts) {
    reduceCase<float>(m, dst, bytes, "f32", seed++);
    reduceCase<__half>(m, dst, bytes, "f16", seed++);
    reduceCase<__nv_bfloat16>(m, dst, bytes, "bf16", seed++);
    storeCase(m, dst, bytes, seed++);
  }
  if (!failures) {
    timeAt(m, dst, std::size_t(64) << 20);
    if (bench)
      timeAt(m, dst, want);
  }
  CUDA_OK(cudaFree(dst));
  freeMulticast(m);
  std::printf("%s: %d failures\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
