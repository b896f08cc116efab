//===- ThreadblockCopyBench.cu - What one threadblock copies and reduces
//---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// G threadblocks of T threads copy (dst = src; plain, and with four loads
// in flight per thread) or reduce (dst = a + b, fp32) 256 MiB of local
// device memory with 16-byte accesses, against cudaMemcpy in the same run
// (docs/calibration.md uses it for the per-threadblock throughput). Then
// one block of the runtime's own blockCopy/blockReduce for each kernel
// knob choice (threads x loads in flight), beside what the step model's
// in-flight rule predicts from the first table (Little's law, saturating
// at the best one-block copy). Built as ccsynth-tb-copy-bench
// (bench/CMakeLists.txt); the GPU check runs it.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/runtime/CudaPrimitives.cuh"

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK_CUDA(call)                                                       \
  do {                                                                         \
    cudaError_t e = (call);                                                    \
    if (e != cudaSuccess) {                                                    \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                  \
                   cudaGetErrorString(e));                                     \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

__global__ void copyKernel(int4 *dst, const int4 *src, size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = src[i];
}

// Four 16-byte loads in flight per thread, as NCCL's copy loops unroll.
__global__ void copyKernel4(int4 *dst, const int4 *src, size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    int4 v0 = src[i], v1 = src[i + stride], v2 = src[i + 2 * stride],
         v3 = src[i + 3 * stride];
    dst[i] = v0;
    dst[i + stride] = v1;
    dst[i + 2 * stride] = v2;
    dst[i + 3 * stride] = v3;
  }
  for (; i < n; i += stride)
    dst[i] = src[i];
}

__global__ void reduceKernel(float4 *dst, const float4 *a, const float4 *b,
                             size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    float4 x = a[i], y = b[i];
    dst[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

// One block of the generated kernels' data loops with knobs K.
template <class K>
__global__ void __launch_bounds__(K::threads, 1)
    knobCopy(char *dst, const char *src, size_t bytes) {
  ccsynth::rt::blockCopy<K, unsigned char>(dst, src, bytes);
}
template <class K>
__global__ void __launch_bounds__(K::threads, 1)
    knobReduce(char *dst, const char *a, const char *b, size_t n) {
  ccsynth::rt::blockReduce<K, ccsynth::rt::DevSum, float>(dst, a, b, n);
}

int main() {
  const size_t bytes = 256ull << 20;
  const size_t n = bytes / 16;
  void *a, *b, *c;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMalloc(&c, bytes));
  CHECK_CUDA(cudaMemset(a, 0, bytes));
  CHECK_CUDA(cudaMemset(b, 0, bytes));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  auto timed = [&](auto launch) {
    launch(); // warm up
    CHECK_CUDA(cudaDeviceSynchronize());
    float best = 1e30f;
    for (int rep = 0; rep < 5; ++rep) {
      CHECK_CUDA(cudaEventRecord(start));
      launch();
      CHECK_CUDA(cudaEventRecord(stop));
      CHECK_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      best = ms < best ? ms : best;
    }
    return bytes / (best * 1e-3) / 1e9; // GB/s of bytes written
  };
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  double memcpyGBps = timed(
      [&] { CHECK_CUDA(cudaMemcpyAsync(c, a, bytes, cudaMemcpyDefault)); });
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::printf("cudaMemcpy device to device: %.1f GB/s\n", memcpyGBps);
  double perLoadNs = 0, saturated = 0;
  std::printf("%8s %8s %12s %12s %12s %10s\n", "blocks", "threads", "copy GB/s",
              "copy4 GB/s", "reduce GB/s", "copy/cpy");
  for (int threads : {544, 640})
    for (int blocks : {1, 8, 32}) {
      double cp = timed([&] {
        copyKernel<<<blocks, threads>>>((int4 *)c, (const int4 *)a, n);
        CHECK_CUDA(cudaGetLastError());
      });
      double cp4 = timed([&] {
        copyKernel4<<<blocks, threads>>>((int4 *)c, (const int4 *)a, n);
        CHECK_CUDA(cudaGetLastError());
      });
      double rd = timed([&] {
        reduceKernel<<<blocks, threads>>>((float4 *)c, (const float4 *)a,
                                          (const float4 *)b, n);
        CHECK_CUDA(cudaGetLastError());
      });
      std::printf("%8d %8d %12.1f %12.1f %12.1f %10.3f\n", blocks, threads, cp,
                  cp4, rd, cp / memcpyGBps);
      if (blocks == 1) {
        // Little's law: bytes in flight / latency, up to the best copy.
        if (perLoadNs == 0)
          perLoadNs = threads * 16.0 / cp; // bytes / (GB/s) = ns
        saturated = cp4 > saturated ? cp4 : saturated;
      }
    }
  // The runtime's loops, one block, each knob choice (64 MiB: one block
  // moves tens of GB/s).
  const size_t knobBytes = 64ull << 20;
  auto knobTimed = [&](auto launch) {
    return timed(launch) * double(knobBytes) / double(bytes);
  };
  std::printf("\nruntime blockCopy/blockReduce, 1 block (model: %.0f ns per "
              "load, saturating at %.1f GB/s)\n",
              perLoadNs, saturated);
  std::printf("%8s %8s %10s %12s %12s %12s\n", "threads", "loads", "in flight",
              "copy GB/s", "reduce GB/s", "model GB/s");
  auto row = [&](auto knobs) {
    using K = decltype(knobs);
    double cp = knobTimed([&] {
      knobCopy<K><<<1, K::threads>>>((char *)c, (const char *)a, knobBytes);
      CHECK_CUDA(cudaGetLastError());
    });
    double rd = knobTimed([&] {
      knobReduce<K><<<1, K::threads>>>((char *)c, (const char *)a,
                                       (const char *)b, knobBytes / 4);
      CHECK_CUDA(cudaGetLastError());
    });
    double inFlight = 16.0 * K::threads * K::loads;
    double model = inFlight / perLoadNs; // bytes per ns = GB/s
    model = model < saturated ? model : saturated;
    std::printf("%8d %8d %10.0f %12.1f %12.1f %12.1f\n", K::threads, K::loads,
                inFlight, cp, rd, model);
  };
  using ccsynth::rt::Knobs;
  row(Knobs<256, 1>{});
  row(Knobs<256, 2>{});
  row(Knobs<256, 4>{});
  row(Knobs<256, 8>{});
  row(Knobs<512, 4>{});
  row(Knobs<512, 8>{});
  return 0;
}
