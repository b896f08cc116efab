//===- IpcRanksTest.cu - Generated algorithms on ranks as processes -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The CUDA IPC transport as a job runs it: one process per rank (forked
// before anything touches CUDA), each with its own window, the handles
// exchanged through shared memory, each launching only its own rank's
// blocks on its own stream. Ranks take GPUs round-robin; on one GPU they
// share it (run under MPS, which test/gpu/ipc-ranks.sh starts when it
// exists: without it the processes' kernels are time-sliced and cannot
// wait for each other in time).
//
//   ccsynth-gpu-ipc-ranks [check]  DGX-H100 ring AllGather and AllReduce on
//       8 ranks, int32 and fp32 sums, counts 1, ragged and several passes,
//       back-to-back launches; every output compared with an exact host
//       reference (int32 results must be bit-identical to it, as they are
//       for the host backend); sendbuff outside the window, recvbuff in it.
//   ccsynth-gpu-ipc-ranks bench    AllGather and AllReduce with 64 MiB and
//       1 GiB output per rank: GB/s of the launch, and of cudaMemcpy D2D of
//       the same bytes on every rank at once, in the same run.
//
// Without a GPU it prints why and returns 77 (CTest's SKIP_RETURN_CODE).
//
//===----------------------------------------------------------------------===//
#include "ccsynth/runtime/CudaLaunch.cuh"
#include "ccsynth/runtime/ccsynth_plugin.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern "C" const ccsynthAlgorithm *ccsynthAlgorithm_h100_ring_allgather(void);
extern "C" const ccsynthAlgorithm *ccsynthAlgorithm_h100_ring_allreduce(void);

namespace {

using namespace ccsynth::rt;

constexpr int kRanks = 8;
constexpr double kWaitSeconds = 60; // host barriers

/// Shared by the forked ranks (MAP_SHARED before fork).
struct Shared {
  std::atomic<int> arrived[64];
  std::atomic<int> status[kRanks]; ///< 0 running, 1 ok, 2 failed, 3 no GPU
  unsigned char handles[kRanks][CCSYNTH_IPC_HANDLE_BYTES];
  double seconds[kRanks];
};

Shared *shared = nullptr;
int failures = 0;
int me = 0;

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::printf("FAIL rank %d %s:%d: ", me, __FILE__, __LINE__);             \
      std::printf(__VA_ARGS__);                                                \
      std::printf("\n");                                                       \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

#define CUDA_OK(expr)                                                          \
  do {                                                                         \
    cudaError_t e_ = (expr);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::printf("FAIL rank %d %s:%d: %s: %s\n", me, __FILE__, __LINE__,      \
                  #expr, cudaGetErrorString(e_));                              \
      std::fflush(stdout);                                                     \
      std::_Exit(2);                                                           \
    }                                                                          \
  } while (0)

/// Barrier `id` of all ranks, with a deadline: a rank that never comes
/// fails the test instead of hanging it.
void barrier(int id) {
  shared->arrived[id].fetch_add(1);
  auto end = std::chrono::steady_clock::now() +
             std::chrono::duration<double>(kWaitSeconds);
  while (shared->arrived[id].load() < kRanks) {
    if (std::chrono::steady_clock::now() > end) {
      std::printf("FAIL rank %d: barrier %d: only %d of %d ranks arrived\n", me,
                  id, shared->arrived[id].load(), kRanks);
      std::fflush(stdout);
      std::_Exit(2);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}
int nextBarrier = 0;
void sync() { barrier(nextBarrier++); }

enum class Kind { AllGather, AllReduce };

std::size_t outElems(Kind k, std::size_t count) {
  return k == Kind::AllGather ? count * kRanks : count;
}

int inputValue(int rank, std::size_t i, int iter) {
  return int((rank * 131 + i * 7 + iter * 3) % 17) - 8;
}

int expected(Kind k, std::size_t j, std::size_t count, int iter) {
  if (k == Kind::AllGather)
    return inputValue(int(j / count), j % count, iter);
  int s = 0;
  for (int q = 0; q < kRanks; ++q)
    s += inputValue(q, j, iter);
  return s;
}

struct Rank {
  CudaIpcComm *comm = nullptr;
  cudaStream_t stream = nullptr;
  std::uint64_t scratchOffset = 0; ///< in the data area, after the outputs
};

ccsynthResult launch(const ccsynthAlgorithm *a, Rank &rk, const void *in,
                     void *out, std::size_t count, int dtype,
                     ccsynthError &err) {
  ccsynthLaunchArgs args{};
  args.struct_size = sizeof args;
  args.rank = me;
  args.sendbuff = in;
  args.recvbuff = out;
  args.count = count;
  args.dtype = dtype;
  args.op = ccsynthSum;
  args.scratch =
      a->scratch_bytes ? rk.comm->data() + rk.scratchOffset : nullptr;
  args.scratch_bytes = a->scratch_bytes;
  args.transport = ccsynthTransportCudaIpc;
  args.comm = rk.comm;
  args.stream = rk.stream;
  args.timeout_seconds = 20;
  args.error = &err;
  return a->launch(&args);
}

template <class E>
void checkCase(const ccsynthAlgorithm *a, Kind kind, Rank &rk,
               std::size_t count, int dtype, int iters) {
  std::size_t outN = outElems(kind, count);
  E *in = nullptr;
  CUDA_OK(cudaMalloc(&in, count * sizeof(E) + 16));
  E *out = reinterpret_cast<E *>(rk.comm->data()); // peers put here
  std::vector<E> host(outN);
  for (int iter = 0; iter < iters; ++iter) {
    for (std::size_t i = 0; i < count; ++i)
      host[i] = E(inputValue(me, i, iter));
    CUDA_OK(
        cudaMemcpy(in, host.data(), count * sizeof(E), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(out, 0xff, outN * sizeof(E)));
    CUDA_OK(cudaDeviceSynchronize());
    sync(); // every rank's output is reset before anyone writes into it
    ccsynthError err{};
    ccsynthResult r = launch(a, rk, in, out, count, dtype, err);
    EXPECT(r == ccsynthSuccess, "%s launch returned %d: %s", a->name, int(r),
           err.message);
    CUDA_OK(cudaStreamSynchronize(rk.stream));
    r = cudaCommError(rk.comm, &err);
    EXPECT(r == ccsynthSuccess, "%s count %zu iter %d: %s", a->name, count,
           iter, err.message);
    CUDA_OK(
        cudaMemcpy(host.data(), out, outN * sizeof(E), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (std::size_t j = 0; j < outN && bad < 5; ++j) {
      E want = E(expected(kind, j, count, iter));
      // Bit-identical, not merely equal: integers and exact float sums.
      if (std::memcmp(&host[j], &want, sizeof(E)) != 0) {
        std::printf("FAIL rank %d %s dtype %d count %zu iter %d: out[%zu] = "
                    "%g, expected %g\n",
                    me, a->name, dtype, count, iter, j, double(host[j]),
                    double(want));
        ++bad;
      }
    }
    failures += bad;
    sync(); // nobody resets its output while a peer still writes into it
  }
  if (me == 0)
    std::printf("%s %s dtype %d count %zu: %d launches\n",
                failures ? "..." : "ok", a->name, dtype, count, iters);
  cudaFree(in);
}

void check(Rank &rk) {
  const ccsynthAlgorithm *ag = ccsynthAlgorithm_h100_ring_allgather();
  const ccsynthAlgorithm *ar = ccsynthAlgorithm_h100_ring_allreduce();
  for (std::size_t count :
       {std::size_t(1), std::size_t(1000) + 3, std::size_t(1) << 20}) {
    checkCase<std::int32_t>(ag, Kind::AllGather, rk, count, ccsynthInt32, 3);
    checkCase<std::int32_t>(ar, Kind::AllReduce, rk, count, ccsynthInt32, 3);
    checkCase<float>(ar, Kind::AllReduce, rk, count, ccsynthFloat32, 2);
  }
}

/// Seconds of `iters` back-to-back runs of `body` on every rank at once
/// (the slowest rank's).
template <class F> double timed(Rank &rk, int iters, F body) {
  cudaEvent_t t0, t1;
  CUDA_OK(cudaEventCreate(&t0));
  CUDA_OK(cudaEventCreate(&t1));
  body(); // warm-up
  CUDA_OK(cudaStreamSynchronize(rk.stream));
  sync();
  CUDA_OK(cudaEventRecord(t0, rk.stream));
  for (int i = 0; i < iters; ++i)
    body();
  CUDA_OK(cudaEventRecord(t1, rk.stream));
  CUDA_OK(cudaEventSynchronize(t1));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
  shared->seconds[me] = ms / 1e3 / iters;
  sync();
  double worst = 0;
  for (int r = 0; r < kRanks; ++r)
    worst = std::max(worst, shared->seconds[r]);
  sync(); // nobody overwrites seconds[] before every rank read them
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  return worst;
}

void bench(Rank &rk) {
  const ccsynthAlgorithm *ag = ccsynthAlgorithm_h100_ring_allgather();
  const ccsynthAlgorithm *ar = ccsynthAlgorithm_h100_ring_allreduce();
  if (me == 0)
    std::printf("%-10s %8s %12s %10s %10s %12s %8s\n", "collective", "bytes",
                "time us", "algbw GB/s", "busbw GB/s", "memcpy GB/s",
                "x memcpy");
  for (std::size_t bytes : {std::size_t(64) << 20, std::size_t(1) << 30}) {
    for (Kind kind : {Kind::AllGather, Kind::AllReduce}) {
      const ccsynthAlgorithm *a = kind == Kind::AllGather ? ag : ar;
      std::size_t count =
          kind == Kind::AllGather ? bytes / 4 / kRanks : bytes / 4;
      void *in = nullptr, *copy = nullptr;
      CUDA_OK(cudaMalloc(&in, count * 4));
      CUDA_OK(cudaMalloc(&copy, bytes));
      CUDA_OK(cudaMemset(in, 0, count * 4));
      void *out = rk.comm->data();
      int iters = bytes >= (std::size_t(1) << 30) ? 3 : 10;
      ccsynthResult bad = ccsynthSuccess;
      ccsynthError err{};
      double t = timed(rk, iters, [&] {
        ccsynthResult r = launch(a, rk, in, out, count, ccsynthFloat32, err);
        if (r != ccsynthSuccess)
          bad = r;
      });
      EXPECT(bad == ccsynthSuccess, "%s launch: %s", a->name, err.message);
      EXPECT(cudaCommError(rk.comm, &err) == ccsynthSuccess, "%s: %s", a->name,
             err.message);
      double tc = timed(rk, iters, [&] {
        CUDA_OK(cudaMemcpyAsync(copy, out, bytes, cudaMemcpyDeviceToDevice,
                                rk.stream));
      });
      if (me == 0) {
        double algbw = bytes / t / 1e9;
        double bus = kind == Kind::AllGather
                         ? algbw * (kRanks - 1) / kRanks
                         : algbw * 2 * (kRanks - 1) / kRanks;
        std::printf("%-10s %7zuM %12.1f %10.1f %10.1f %12.1f %8.3f\n",
                    kind == Kind::AllGather ? "allgather" : "allreduce",
                    bytes >> 20, t * 1e6, algbw, bus, bytes / tc / 1e9, tc / t);
      }
      cudaFree(in);
      cudaFree(copy);
    }
  }
}

int rankMain(bool benchMode) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    shared->status[me] = 3;
    return 0;
  }
  const ccsynthAlgorithm *ag = ccsynthAlgorithm_h100_ring_allgather();
  const ccsynthAlgorithm *ar = ccsynthAlgorithm_h100_ring_allreduce();
  std::uint32_t flags = std::max(ag->flag_words, ar->flag_words);
  std::uint64_t maxOut =
      benchMode ? (std::uint64_t(1) << 30) : (std::uint64_t(4) << 20) * kRanks;
  Rank rk;
  rk.scratchOffset = maxOut;
  std::uint64_t scratch = std::max(ag->scratch_bytes, ar->scratch_bytes);
  ccsynthError err{};
  ccsynthResult r =
      cudaIpcCommCreate(me % devices, me, kRanks, flags, maxOut + scratch,
                        &rk.comm, shared->handles[me], &err);
  if (r != ccsynthSuccess) {
    std::printf("FAIL rank %d: creating the IPC comm: %s\n", me, err.message);
    std::fflush(stdout);
    std::_Exit(2);
  }
  CUDA_OK(cudaStreamCreateWithFlags(&rk.stream, cudaStreamNonBlocking));
  sync(); // every handle is written
  r = cudaIpcCommConnect(rk.comm, shared->handles, &err);
  if (r != ccsynthSuccess) {
    std::printf("FAIL rank %d: connecting: %s\n", me, err.message);
    std::fflush(stdout);
    std::_Exit(2);
  }
  sync(); // every rank mapped every window
  if (me == 0)
    std::printf("%d ranks on %d GPU%s, one process each\n", kRanks,
                std::min(devices, kRanks), devices == 1 ? "" : "s");
  if (benchMode)
    bench(rk);
  else
    check(rk);
  sync(); // nobody unmaps a window a peer still writes into
  cudaStreamDestroy(rk.stream);
  cudaIpcCommDestroy(rk.comm);
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "check";
  if (mode != "check" && mode != "bench") {
    std::fprintf(stderr, "usage: %s [check|bench]\n", argv[0]);
    return 2;
  }
  void *m = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    std::perror("mmap");
    return 2;
  }
  shared = new (m) Shared();
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < kRanks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      me = r;
      int code = rankMain(mode == "bench");
      std::fflush(stdout);
      std::_Exit(code);
    }
    if (pid < 0) {
      std::perror("fork");
      return 2;
    }
    pids.push_back(pid);
  }
  int worst = 0, noGpu = 0;
  for (int r = 0; r < kRanks; ++r) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 3;
    worst = std::max(worst, code);
    noGpu += shared->status[r] == 3;
  }
  if (noGpu == kRanks) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  std::printf("%s\n", worst ? "FAILED" : "passed");
  return worst ? 1 : 0;
}
