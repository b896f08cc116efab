//===- CudaVirtualBench.cu - Generated algorithms on one GPU, timed -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Times generated DGX-H100 ring algorithms (built in as plugins) with all 8
// ranks as blocks of one launch on one GPU, and in the same run a cudaMemcpy
// device-to-device of the same bytes: on one GPU both are bound by the
// same memory, so the ratio says what the generated code's copies,
// reductions and flags cost. Also prints microseconds per dependent step
// (launch time over the longest threadblock's steps) for 1 KiB to 1 MiB,
// where latency dominates.
//
// Not a test: it prints numbers. Needs a GPU (exits 77 without one).
//
//   ccsynth-cuda-bench [iterations]
//
//===----------------------------------------------------------------------===//
#include "ccsynth/runtime/CudaTransport.h"
#include "ccsynth/runtime/ccsynth_plugin.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

extern "C" const ccsynthAlgorithm *ccsynthAlgorithm_h100_ring_allgather(void);
extern "C" const ccsynthAlgorithm *ccsynthAlgorithm_h100_ring_allreduce(void);

namespace {

using namespace ccsynth::rt;

constexpr int kRanks = 8;

#define CUDA_OK(expr)                                                          \
  do {                                                                         \
    cudaError_t e_ = (expr);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,       \
                   cudaGetErrorString(e_));                                    \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

struct Buffers {
  std::vector<void *> in, out, scr;
};

void launchAll(const ccsynthAlgorithm *a, CudaVirtualComm *comm, Buffers &b,
               std::size_t count, cudaStream_t s) {
  ccsynthError err{};
  for (int r = 0; r < kRanks; ++r) {
    ccsynthLaunchArgs args{};
    args.struct_size = sizeof args;
    args.rank = r;
    args.sendbuff = b.in[r];
    args.recvbuff = b.out[r];
    args.count = count;
    args.dtype = ccsynthFloat32;
    args.op = ccsynthSum;
    args.scratch = b.scr[r];
    args.scratch_bytes = a->scratch_bytes;
    args.transport = ccsynthTransportCudaVirtual;
    args.comm = comm;
    args.stream = s;
    args.error = &err;
    if (a->launch(&args) != ccsynthSuccess) {
      std::fprintf(stderr, "%s: %s\n", a->name, err.message);
      std::exit(1);
    }
  }
}

/// Bytes of one rank's input and output for `count` floats.
void rankBytes(const ccsynthAlgorithm *a, std::size_t count, std::size_t &in,
               std::size_t &out) {
  bool gather = std::string_view(a->collective) == "allgather";
  in = count * sizeof(float);
  out = gather ? in * kRanks : in;
}

void bench(const ccsynthAlgorithm *a, int iters) {
  const std::size_t maxCount = std::size_t(64) << 20 >> 2; // 64 MiB per rank
  std::size_t maxIn, maxOut;
  rankBytes(a, maxCount, maxIn, maxOut);
  Buffers b;
  for (int r = 0; r < kRanks; ++r) {
    void *p;
    CUDA_OK(cudaMalloc(&p, maxIn));
    CUDA_OK(cudaMemset(p, 0, maxIn));
    b.in.push_back(p);
    CUDA_OK(cudaMalloc(&p, maxOut));
    b.out.push_back(p);
    CUDA_OK(cudaMalloc(&p, a->scratch_bytes ? a->scratch_bytes : 16));
    b.scr.push_back(p);
  }
  void *copySrc, *copyDst;
  CUDA_OK(cudaMalloc(&copySrc, maxOut * kRanks));
  CUDA_OK(cudaMalloc(&copyDst, maxOut * kRanks));
  CudaVirtualComm *comm = nullptr;
  ccsynthError err{};
  if (cudaVirtualCommCreate(kRanks, a->flag_words, &comm, &err) !=
      ccsynthSuccess) {
    std::fprintf(stderr, "%s\n", err.message);
    std::exit(1);
  }
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  cudaEvent_t t0, t1;
  CUDA_OK(cudaEventCreate(&t0));
  CUDA_OK(cudaEventCreate(&t1));
  std::printf("\n%s (%s, %d ranks on one GPU, %d steps in the longest "
              "threadblock)\n",
              a->name, a->collective, a->ranks, a->steps);
  std::printf("%12s %10s %10s %12s %12s %8s %10s\n", "bytes/rank", "us",
              "memcpy us", "algbw GB/s", "memcpy GB/s", "ratio", "us/step");
  for (std::size_t bytes = 1024; bytes <= maxIn; bytes *= 4) {
    std::size_t count = bytes / sizeof(float);
    std::size_t in, out;
    rankBytes(a, count, in, out);
    for (int w = 0; w < 3; ++w)
      launchAll(a, comm, b, count, s);
    CUDA_OK(cudaEventRecord(t0, s));
    for (int i = 0; i < iters; ++i)
      launchAll(a, comm, b, count, s);
    CUDA_OK(cudaEventRecord(t1, s));
    CUDA_OK(cudaEventSynchronize(t1));
    if (cudaCommError(comm, &err) != ccsynthSuccess) {
      std::fprintf(stderr, "%s\n", err.message);
      std::exit(1);
    }
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
    double us = 1e3 * ms / iters;
    // The same bytes as the collective writes into all ranks' outputs.
    std::size_t total = out * kRanks;
    CUDA_OK(
        cudaMemcpyAsync(copyDst, copySrc, total, cudaMemcpyDeviceToDevice, s));
    CUDA_OK(cudaEventRecord(t0, s));
    for (int i = 0; i < iters; ++i)
      CUDA_OK(cudaMemcpyAsync(copyDst, copySrc, total, cudaMemcpyDeviceToDevice,
                              s));
    CUDA_OK(cudaEventRecord(t1, s));
    CUDA_OK(cudaEventSynchronize(t1));
    CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
    double copyUs = 1e3 * ms / iters;
    double algbw = double(out > in ? out : in) / us / 1e3;
    double copyBw = double(total) / copyUs / 1e3;
    std::printf("%12zu %10.2f %10.2f %12.2f %12.2f %8.2f", bytes, us, copyUs,
                algbw, copyBw, copyUs / us);
    if (bytes <= (1u << 20))
      std::printf(" %10.3f", us / (a->steps > 0 ? a->steps : 1));
    std::printf("\n");
  }
  cudaVirtualCommDestroy(comm);
  for (int r = 0; r < kRanks; ++r) {
    cudaFree(b.in[r]);
    cudaFree(b.out[r]);
    cudaFree(b.scr[r]);
  }
  cudaFree(copySrc);
  cudaFree(copyDst);
  cudaStreamDestroy(s);
}

} // namespace

int main(int argc, char **argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing to time\n");
    return 77;
  }
  int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  if (iters < 1)
    iters = 1;
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s; %d iterations per size; ratio = memcpy time / "
              "collective time\n",
              prop.name, iters);
  bench(ccsynthAlgorithm_h100_ring_allgather(), iters);
  bench(ccsynthAlgorithm_h100_ring_allreduce(), iters);
  return 0;
}
