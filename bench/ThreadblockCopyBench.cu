//===- ThreadblockCopyBench.cu - What one threadblock copies and reduces
//---===//
//
// G threadblocks of T threads copy (dst = src; plain, and with four loads
// in flight per thread) or reduce (dst = a + b, fp32) 256 MiB of local
// device memory with 16-byte accesses, against cudaMemcpy in the same run
// (docs/calibration.md uses it for the per-threadblock throughput). Build: nvcc
// -O3 -arch=sm_90 ThreadblockCopyBench.cu
//
//===----------------------------------------------------------------------===//
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
    }
  return 0;
}
