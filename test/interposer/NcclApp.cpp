//===- NcclApp.cpp - An NCCL application for the interposer tests ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Launched as WORLD_SIZE processes the way torchrun does (environment RANK
// and WORLD_SIZE; or --rank R --world W). Rank 0 makes the unique ids and
// passes them on through files in DIR. Calls the NCCL API on host buffers
// and checks every result against values computed here:
//
//   nccl-app DIR                 the full scenario (below)
//   nccl-app DIR --expect-error  one AllReduce that must fail with an NCCL
//                                error (a plugin whose launch times out)
//
// Scenario: unrelated API calls; AllGather (out of place and in place,
// three counts), AllReduce sum / max, fp64 AllReduce, ReduceScatter,
// Broadcast, AlltoAll; a group mixing AllGather, AllReduce max and a ring of
// Send/Recv; a split communicator (two colors, keys reversed) with an
// AllGather and an AllReduce; a non-blocking communicator polled with
// ncclCommGetAsyncError. Prints a checksum of all outputs: runs with and
// without the interposer must print the same. Exit 0 when all is right, 3
// on a wrong result, 1 on an NCCL error or bad usage.
//
//===----------------------------------------------------------------------===//
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int rank = -1, world = -1;
std::string dir;
std::uint64_t checksum = 1469598103934665603ull;
int checked = 0;

[[noreturn]] void die(int code, const char *fmt, const char *a = "",
                      long b = 0) {
  std::fprintf(stderr, "rank %d: ", rank);
  std::fprintf(stderr, fmt, a, b);
  std::fprintf(stderr, "\n");
  std::exit(code);
}

void ok(ncclResult_t r, const char *what) {
  if (r != ncclSuccess)
    die(1, "%s failed: %ld", what, long(r));
}

void hash(const void *p, std::size_t n) {
  auto *b = static_cast<const unsigned char *>(p);
  for (std::size_t i = 0; i < n; ++i) {
    checksum ^= b[i];
    checksum *= 1099511628211ull;
  }
}

/// Rank r's input element i (small integers: exact in int32 and double).
std::int32_t value(int r, std::size_t i) {
  return std::int32_t((r + 1) * 1000 + (i * 7 + r * 13) % 991);
}

template <class T>
void expectEqual(const std::vector<T> &got, const std::vector<T> &want,
                 const char *what) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      std::fprintf(stderr, "rank %d: %s: element %zu is %g, expected %g\n",
                   rank, what, i, double(got[i]), double(want[i]));
      std::exit(3);
    }
  hash(got.data(), got.size() * sizeof(T));
  ++checked;
}

ncclUniqueId shareId(const std::string &tag) {
  ncclUniqueId id{};
  std::string path = dir + "/id-" + tag;
  if (rank == 0) {
    ok(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::string tmp = path + ".tmp";
    FILE *f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0)
      die(1, "cannot write %s", tmp.c_str());
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      die(1, "cannot rename to %s", path.c_str());
    return id;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    if (FILE *f = std::fopen(path.c_str(), "rb")) {
      bool got = std::fread(&id, sizeof id, 1, f) == 1;
      std::fclose(f);
      if (got)
        return id;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      die(1, "no unique id in %s after 60 s", path.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<std::int32_t> input(int r, std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = value(r, i);
  return v;
}

/// members[k]: the parent rank holding rank k of the communicator.
void allGather(ncclComm_t comm, const std::vector<int> &members, int me,
               std::size_t n, bool inPlace) {
  int size = int(members.size());
  std::vector<std::int32_t> out(n * size, -1), want;
  for (int k = 0; k < size; ++k) {
    auto v = input(members[k], n);
    want.insert(want.end(), v.begin(), v.end());
  }
  auto in = input(members[me], n);
  if (inPlace) {
    std::memcpy(out.data() + me * n, in.data(), n * 4);
    ok(ncclAllGather(out.data() + me * n, out.data(), n, ncclInt32, comm,
                     nullptr),
       "ncclAllGather in place");
  } else {
    ok(ncclAllGather(in.data(), out.data(), n, ncclInt32, comm, nullptr),
       "ncclAllGather");
  }
  expectEqual(out, want, "allgather");
}

void allReduce(ncclComm_t comm, const std::vector<int> &members, int me,
               std::size_t n, ncclRedOp_t op) {
  std::vector<std::int32_t> out(n, -1), want(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int32_t acc = value(members[0], i);
    for (std::size_t k = 1; k < members.size(); ++k) {
      std::int32_t v = value(members[k], i);
      acc = op == ncclMax ? std::max(acc, v) : acc + v;
    }
    want[i] = acc;
  }
  auto in = input(members[me], n);
  ok(ncclAllReduce(in.data(), out.data(), n, ncclInt32, op, comm, nullptr),
     "ncclAllReduce");
  expectEqual(out, want, op == ncclMax ? "allreduce max" : "allreduce sum");
}

std::vector<int> iota(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = i;
  return v;
}

int expectError() {
  ncclComm_t comm;
  ok(ncclCommInitRank(&comm, world, shareId("main"), rank), "init");
  std::size_t n = 4099;
  std::vector<std::int32_t> in = input(rank, n), out(n);
  auto start = std::chrono::steady_clock::now();
  ncclResult_t r = ncclAllReduce(in.data(), out.data(), n, ncclInt32, ncclSum,
                                 comm, nullptr);
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm, &async);
  std::printf("rank %d: ncclAllReduce returned %d (%s) after %.1f s; async "
              "error %d\n",
              rank, int(r), ncclGetErrorString(r), s, int(async));
  ncclCommAbort(comm);
  return r != ncclSuccess && async != ncclSuccess ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  bool wantError = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rank" && i + 1 < argc)
      rank = std::atoi(argv[++i]);
    else if (a == "--world" && i + 1 < argc)
      world = std::atoi(argv[++i]);
    else if (a == "--expect-error")
      wantError = true;
    else if (dir.empty() && a[0] != '-')
      dir = a;
    else
      die(1, "unknown argument %s", a.c_str());
  }
  if (rank < 0 && std::getenv("RANK"))
    rank = std::atoi(std::getenv("RANK"));
  if (world < 0 && std::getenv("WORLD_SIZE"))
    world = std::atoi(std::getenv("WORLD_SIZE"));
  if (dir.empty() || world < 1 || rank < 0 || rank >= world)
    die(1,
        "usage: nccl-app DIR [--expect-error] with RANK and WORLD_SIZE "
        "set (or --rank R --world W)%s",
        "");
  if (wantError)
    return expectError();

  // Unrelated calls: they reach NCCL unchanged.
  int version = 0;
  ok(ncclGetVersion(&version), "ncclGetVersion");
  ncclComm_t comm;
  ok(ncclCommInitRank(&comm, world, shareId("main"), rank), "init");
  int count = 0, me = -1;
  ok(ncclCommCount(comm, &count), "ncclCommCount");
  ok(ncclCommUserRank(comm, &me), "ncclCommUserRank");
  if (count != world || me != rank)
    die(1, "communicator has %ld ranks", "", count);
  (void)ncclGetErrorString(ncclInvalidArgument);
  void *mem = nullptr;
  ok(ncclMemAlloc(&mem, 1 << 16), "ncclMemAlloc");
  ncclWindow_t win;
  ok(ncclCommWindowRegister(comm, mem, 1 << 16, &win, NCCL_WIN_COLL_SYMMETRIC),
     "ncclCommWindowRegister");
  ok(ncclCommWindowDeregister(comm, win), "ncclCommWindowDeregister");
  ok(ncclMemFree(mem), "ncclMemFree");

  std::vector<int> all = iota(world);
  for (std::size_t n : {std::size_t(1), std::size_t(1000), std::size_t(4099)})
    allGather(comm, all, rank, n, false);
  allGather(comm, all, rank, 4099, true);
  allReduce(comm, all, rank, 4099, ncclSum);
  allReduce(comm, all, rank, 4099, ncclMax);
  {
    // fp64: no plugin holds it.
    std::size_t n = 513;
    std::vector<double> in(n), out(n), want(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      in[i] = value(rank, i);
      for (int r = 0; r < world; ++r)
        want[i] += value(r, i);
    }
    ok(ncclAllReduce(in.data(), out.data(), n, ncclFloat64, ncclSum, comm,
                     nullptr),
       "ncclAllReduce fp64");
    expectEqual(out, want, "allreduce fp64");
  }
  {
    std::size_t n = 300;
    auto in = input(rank, n * world);
    std::vector<std::int32_t> out(n), want(n, 0);
    for (std::size_t i = 0; i < n; ++i)
      for (int r = 0; r < world; ++r)
        want[i] += value(r, rank * n + i);
    ok(ncclReduceScatter(in.data(), out.data(), n, ncclInt32, ncclSum, comm,
                         nullptr),
       "ncclReduceScatter");
    expectEqual(out, want, "reducescatter");
  }
  {
    std::size_t n = 257;
    auto in = input(world - 1, n);
    std::vector<std::int32_t> out(n, -1);
    ok(ncclBroadcast(in.data(), out.data(), n, ncclInt32, world - 1, comm,
                     nullptr),
       "ncclBroadcast");
    expectEqual(out, in, "broadcast");
  }
  {
    std::size_t n = 129;
    auto in = input(rank, n * world);
    std::vector<std::int32_t> out(n * world, -1), want(n * world);
    for (int r = 0; r < world; ++r)
      for (std::size_t i = 0; i < n; ++i)
        want[r * n + i] = value(r, rank * n + i);
    ok(ncclAlltoAll(in.data(), out.data(), n, ncclInt32, comm, nullptr),
       "ncclAlltoAll");
    expectEqual(out, want, "alltoall");
  }

  // A group mixing a plugin's collective, NCCL's, and point to point.
  {
    std::size_t n = 2048;
    auto in = input(rank, n);
    std::vector<std::int32_t> gathered(n * world, -1), maxed(n, -1),
        ring(n, -1);
    ok(ncclGroupStart(), "ncclGroupStart");
    ok(ncclAllGather(in.data(), gathered.data(), n, ncclInt32, comm, nullptr),
       "grouped ncclAllGather");
    ok(ncclAllReduce(in.data(), maxed.data(), n, ncclInt32, ncclMax, comm,
                     nullptr),
       "grouped ncclAllReduce");
    if (world > 1) {
      ok(ncclSend(in.data(), n, ncclInt32, (rank + 1) % world, comm, nullptr),
         "ncclSend");
      ok(ncclRecv(ring.data(), n, ncclInt32, (rank + world - 1) % world, comm,
                  nullptr),
         "ncclRecv");
    }
    ok(ncclGroupEnd(), "ncclGroupEnd");
    std::vector<std::int32_t> wantG, wantM(n),
        wantR = input((rank + world - 1) % world, n);
    for (int r = 0; r < world; ++r) {
      auto v = input(r, n);
      wantG.insert(wantG.end(), v.begin(), v.end());
    }
    for (std::size_t i = 0; i < n; ++i) {
      wantM[i] = value(0, i);
      for (int r = 1; r < world; ++r)
        wantM[i] = std::max(wantM[i], value(r, i));
    }
    expectEqual(gathered, wantG, "grouped allgather");
    expectEqual(maxed, wantM, "grouped allreduce max");
    if (world > 1)
      expectEqual(ring, wantR, "ring send/recv");
  }

  // A split communicator: colors rank % 2, ranks in reverse order.
  ncclComm_t half = nullptr;
  int color = rank % 2;
  ok(ncclCommSplit(comm, color, -rank, &half, nullptr), "ncclCommSplit");
  if (!half)
    die(1, "ncclCommSplit gave no communicator%s");
  std::vector<int> members;
  for (int r = world - 1; r >= 0; --r)
    if (r % 2 == color)
      members.push_back(r);
  int halfRank = 0;
  for (std::size_t k = 0; k < members.size(); ++k)
    if (members[k] == rank)
      halfRank = int(k);
  allGather(half, members, halfRank, 777, false);
  allReduce(half, members, halfRank, 1001, ncclSum);

  // A non-blocking communicator.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t nb = nullptr;
  ncclResult_t r =
      ncclCommInitRankConfig(&nb, world, shareId("nonblocking"), rank, &config);
  if (r != ncclSuccess && r != ncclInProgress)
    die(1, "non-blocking init failed: %ld", "", long(r));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ok(ncclCommGetAsyncError(nb, &state), "ncclCommGetAsyncError");
    if (state == ncclSuccess)
      break;
    if (state != ncclInProgress)
      die(1, "non-blocking init ended with %ld", "", long(state));
    if (std::chrono::steady_clock::now() >= deadline)
      die(1, "non-blocking init still in progress after 60 s%s");
  }
  allGather(nb, all, rank, 1000, false);

  ok(ncclCommDestroy(nb), "ncclCommDestroy");
  ok(ncclCommDestroy(half), "ncclCommDestroy");
  ok(ncclCommFinalize(comm), "ncclCommFinalize");
  ok(ncclCommDestroy(comm), "ncclCommDestroy");
  std::printf("rank %d: %d results correct, checksum %016llx\n", rank, checked,
              (unsigned long long)checksum);
  return 0;
}
