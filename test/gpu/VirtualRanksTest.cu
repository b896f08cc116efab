//===- VirtualRanksTest.cu - Generated algorithms on 8 virtual ranks ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Runs generated DGX-H100 AllGather, ReduceScatter, AllReduce and AllToAll
// (built into this executable as plugins by the build) with all 8 ranks as
// blocks of one launch on one GPU, through the plugin ABI, and compares
// every rank's output with a reference computed on the host: several
// counts (one element, ragged, several passes of the tiling loop),
// back-to-back launches without any reset, fp32 and bf16 sums. A
// hand-written algorithm that waits for a flag nobody raises checks the
// watchdog: the launch ends, the failure names rank/threadblock/step/flag,
// and the comm refuses the next launch (alone: `ccsynth-gpu-virtual-ranks
// watchdog`).
//
// Without a GPU it prints why and returns 77 (CTest's SKIP_RETURN_CODE).
//
//===----------------------------------------------------------------------===//
#include "GpuTest.h"
#include "ccsynth/runtime/CudaLaunch.cuh"
#include "ccsynth/runtime/HostTypes.h"
#include "ccsynth/runtime/ccsynth_plugin.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" const ccsynthAlgorithm *ccsynthAlgorithm_h100_ring_allgather(void);
extern "C" const ccsynthAlgorithm *
ccsynthAlgorithm_h100_ring_reducescatter(void);
extern "C" const ccsynthAlgorithm *ccsynthAlgorithm_h100_ring_allreduce(void);
extern "C" const ccsynthAlgorithm *ccsynthAlgorithm_h100_direct_alltoall(void);

namespace {

using namespace ccsynth::rt;

constexpr int kRanks = 8;
using ccsynth::gputest::failures;

enum class Kind { AllGather, ReduceScatter, AllReduce, AllToAll };

/// Elements of the input and output buffers of one rank.
void bufferElems(Kind k, std::size_t count, std::size_t &in, std::size_t &out) {
  switch (k) {
  case Kind::AllGather:
    in = count, out = count * kRanks;
    break;
  case Kind::ReduceScatter:
    in = count * kRanks, out = count;
    break;
  case Kind::AllReduce:
    in = out = count;
    break;
  case Kind::AllToAll:
    in = out = count * kRanks;
    break;
  }
}

/// Small integers: fp32 and bf16 sums of 8 of them are exact.
float inputValue(int rank, std::size_t i, int iter) {
  return float((rank * 131 + i * 7 + iter * 3) % 17);
}

/// What rank r's output element j must be.
float expected(Kind k, int r, std::size_t j, std::size_t count, int iter) {
  switch (k) {
  case Kind::AllGather:
    return inputValue(int(j / count), j % count, iter);
  case Kind::ReduceScatter: {
    float s = 0;
    for (int q = 0; q < kRanks; ++q)
      s += inputValue(q, r * count + j, iter);
    return s;
  }
  case Kind::AllReduce: {
    float s = 0;
    for (int q = 0; q < kRanks; ++q)
      s += inputValue(q, j, iter);
    return s;
  }
  case Kind::AllToAll:
    return inputValue(int(j / count), r * count + j % count, iter);
  }
  return 0;
}

template <class E> E fromFloat(float f);
template <> float fromFloat<float>(float f) { return f; }
template <> Bf16 fromFloat<Bf16>(float f) { return toBf16(f); }
float toF(float f) { return f; }
float toF(Bf16 b) { return toFloat(b); }

/// One launch of all ranks; returns the plugin results of every call.
bool launchAll(const ccsynthAlgorithm *a, CudaVirtualComm *comm,
               std::vector<void *> &in, std::vector<void *> &out,
               std::vector<void *> &scr, std::size_t count, int dtype,
               cudaStream_t stream, double timeout, ccsynthError &err) {
  for (int r = 0; r < kRanks; ++r) {
    ccsynthLaunchArgs args{};
    args.struct_size = sizeof args;
    args.rank = r;
    args.sendbuff = in[r];
    args.recvbuff = out[r];
    args.count = count;
    args.dtype = dtype;
    args.op = ccsynthSum;
    args.scratch = scr[r];
    args.scratch_bytes = a->scratch_bytes;
    args.transport = ccsynthTransportCudaVirtual;
    args.comm = comm;
    args.stream = stream;
    args.timeout_seconds = timeout;
    args.error = &err;
    ccsynthResult res = a->launch(&args);
    if (res != ccsynthSuccess) {
      std::printf("FAIL %s rank %d: launch returned %d: %s\n", a->name, r,
                  int(res), err.message);
      ++failures;
      return false;
    }
  }
  return true;
}

template <class E>
void runCase(const ccsynthAlgorithm *a, Kind kind, CudaVirtualComm *comm,
             std::size_t count, int dtype, int iters) {
  std::size_t inN = 0, outN = 0;
  bufferElems(kind, count, inN, outN);
  std::vector<void *> in(kRanks), out(kRanks), scr(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    CUDA_OK(cudaMalloc(&in[r], inN * sizeof(E) + 16));
    CUDA_OK(cudaMalloc(&out[r], outN * sizeof(E) + 16));
    CUDA_OK(cudaMalloc(&scr[r], a->scratch_bytes ? a->scratch_bytes : 16));
  }
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  std::vector<E> host(inN > outN ? inN : outN);
  for (int iter = 0; iter < iters; ++iter) {
    for (int r = 0; r < kRanks; ++r) {
      for (std::size_t i = 0; i < inN; ++i)
        host[i] = fromFloat<E>(inputValue(r, i, iter));
      CUDA_OK(cudaMemcpy(in[r], host.data(), inN * sizeof(E),
                         cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(out[r], 0xff, outN * sizeof(E)));
    }
    ccsynthError err{};
    if (!launchAll(a, comm, in, out, scr, count, dtype, stream, 20.0, err))
      break;
    CUDA_OK(cudaStreamSynchronize(stream));
    if (cudaCommError(comm, &err) != ccsynthSuccess) {
      std::printf("FAIL %s count %zu iter %d: %s\n", a->name, count, iter,
                  err.message);
      ++failures;
      break;
    }
    int bad = 0;
    for (int r = 0; r < kRanks && bad < 5; ++r) {
      CUDA_OK(cudaMemcpy(host.data(), out[r], outN * sizeof(E),
                         cudaMemcpyDeviceToHost));
      for (std::size_t j = 0; j < outN && bad < 5; ++j) {
        float want = expected(kind, r, j, count, iter);
        float got = toF(host[j]);
        if (got != want) {
          std::printf("FAIL %s dtype %d count %zu iter %d: rank %d out[%zu] "
                      "= %g, expected %g\n",
                      a->name, dtype, count, iter, r, j, got, want);
          ++bad;
        }
      }
    }
    failures += bad;
  }
  std::printf("%s %s dtype %d count %zu: %d launches\n",
              failures ? "..." : "ok", a->name, dtype, count, iters);
  CUDA_OK(cudaStreamDestroy(stream));
  for (int r = 0; r < kRanks; ++r) {
    cudaFree(in[r]);
    cudaFree(out[r]);
    cudaFree(scr[r]);
  }
}

/// Rank 0 waits for a data flag no rank ever raises.
struct HangAlgo {
  static constexpr Shape shape = {"hang", "custom", Coll::Custom,
                                  2,      0,        false,
                                  false,  1,        1,
                                  1,      0,        0,
                                  1,      0,        1,
                                  1,      false,    1,
                                  "none"};
  static constexpr unsigned long long tileBytes = 1024;
  static constexpr int threadblocks[2] = {1, 1};
  static constexpr KernelKnobs kernelKnobs[1] = {{80, 256, 8}};
  template <class X> static CCSYNTH_INLINE bool run(X &x, int rank, int tb) {
    (void)tb;
    if (rank == 0)
      CCSYNTH_TRY(x.waitData(0, 0));
    return true;
  }
};

void watchdogCase() {
  CudaVirtualComm *comm = nullptr;
  ccsynthError err{};
  EXPECT(cudaVirtualCommCreate(2, flagWords(HangAlgo::shape), &comm, &err) ==
             ccsynthSuccess,
         "comm: %s", err.message);
  void *buf[2][2];
  for (auto &b : buf)
    for (void *&p : b)
      CUDA_OK(cudaMalloc(&p, 64));
  auto launch = [&](int r) {
    ccsynthLaunchArgs args{};
    args.struct_size = sizeof args;
    args.rank = r;
    args.sendbuff = buf[r][0];
    args.recvbuff = buf[r][1];
    args.count = 4;
    args.dtype = ccsynthFloat32;
    args.transport = ccsynthTransportCudaVirtual;
    args.comm = comm;
    args.timeout_seconds = 0.2;
    args.error = &err;
    return cudaLaunch<HangAlgo>(&args);
  };
  EXPECT(launch(0) == ccsynthSuccess && launch(1) == ccsynthSuccess,
         "hang launch refused: %s", err.message);
  CUDA_OK(cudaDeviceSynchronize()); // returns: the watchdog ended the wait
  ccsynthResult r = cudaCommError(comm, &err);
  EXPECT(r == ccsynthTimeout, "watchdog result %d, expected timeout", int(r));
  EXPECT(err.rank == 0 && err.threadblock == 0 && err.step == 0,
         "watchdog named rank %d tb %d step %d", err.rank, err.threadblock,
         err.step);
  EXPECT(std::strstr(err.message, "data flag 0") != nullptr,
         "watchdog message: %s", err.message);
  std::printf("watchdog: %s\n", err.message);
  ccsynthError again{};
  {
    ccsynthLaunchArgs args{};
    args.struct_size = sizeof args;
    args.rank = 0;
    args.sendbuff = buf[0][0];
    args.recvbuff = buf[0][1];
    args.count = 4;
    args.dtype = ccsynthFloat32;
    args.transport = ccsynthTransportCudaVirtual;
    args.comm = comm;
    args.error = &again;
    EXPECT(cudaLaunch<HangAlgo>(&args) == ccsynthAborted,
           "a failed comm accepted another launch");
  }
  for (auto &b : buf)
    for (void *p : b)
      cudaFree(p);
  cudaVirtualCommDestroy(comm);
}

void algorithmCases(const ccsynthAlgorithm *a, Kind kind,
                    std::size_t manyPasses) {
  EXPECT(a->ranks == kRanks, "%s has %d ranks", a->name, a->ranks);
  CudaVirtualComm *comm = nullptr;
  ccsynthError err{};
  if (cudaVirtualCommCreate(kRanks, a->flag_words, &comm, &err) !=
      ccsynthSuccess) {
    std::printf("FAIL comm: %s\n", err.message);
    ++failures;
    return;
  }
  bool reduces = a->op_mask != 0;
  for (std::size_t count : {std::size_t(1), std::size_t(5), std::size_t(1000),
                            std::size_t(65536 * 3 + 7), manyPasses})
    runCase<float>(a, kind, comm, count, ccsynthFloat32, 3);
  if (reduces && (a->dtype_mask & (1u << ccsynthBfloat16)))
    runCase<Bf16>(a, kind, comm, 4099, ccsynthBfloat16, 2);
  cudaVirtualCommDestroy(comm);
}

} // namespace

int main(int argc, char **argv) {
  // `watchdog`: only the watchdog case (the GPU check's hang check).
  bool watchdogOnly = argc > 1 && std::strcmp(argv[1], "watchdog") == 0;
  if (argc > 1 && !watchdogOnly) {
    std::printf("usage: %s [watchdog]\n", argv[0]);
    return 2;
  }
  if (ccsynth::gputest::noCudaDevice())
    return 77;
  if (watchdogOnly) {
    watchdogCase();
    std::printf("%s: %d failures\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
  }
  // Counts whose chunks span several 1 MiB tiles (several passes), given
  // the DGX-H100 ring baselines' chunks per block (1, 2, 16; alltoall 1).
  algorithmCases(ccsynthAlgorithm_h100_ring_allgather(), Kind::AllGather,
                 300000 + 5);
  algorithmCases(ccsynthAlgorithm_h100_ring_reducescatter(),
                 Kind::ReduceScatter, 2 * 300000 + 5);
  algorithmCases(ccsynthAlgorithm_h100_ring_allreduce(), Kind::AllReduce,
                 16 * 300000 + 5);
  algorithmCases(ccsynthAlgorithm_h100_direct_alltoall(), Kind::AllToAll,
                 300000 + 5);
  watchdogCase();
  std::printf("%s: %d failures\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
