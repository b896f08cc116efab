//===- DecideTest.cpp - The interposer's decision -------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "Decide.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace ccsynth::interposer;

namespace {

ccsynthResult noLaunch(const ccsynthLaunchArgs *) { return ccsynthSuccess; }

ccsynthAlgorithm algo(const char *name, const char *coll, int backend,
                      int inplace = 0) {
  ccsynthAlgorithm a{};
  a.struct_size = sizeof a;
  a.name = name;
  a.collective = coll;
  a.ranks = 8;
  a.root = 0;
  a.inplace = inplace;
  a.min_bytes = 0;
  a.max_bytes = 0;
  a.dtype_mask = (1u << ccsynthFloat32) | (1u << ccsynthInt32);
  a.op_mask = std::string(coll) == "allgather" ? 0u : (1u << ccsynthSum);
  a.count_multiple = 1;
  a.backend = backend;
  a.transport_mask =
      backend == ccsynthBackendCuda
          ? (ccsynthTransportCudaVirtual | ccsynthTransportCudaIpc)
          : (ccsynthTransportHostThreads | ccsynthTransportHostShm);
  a.capture_safe = backend == ccsynthBackendCuda;
  a.flag_words = 4;
  a.ir_hash = "0";
  a.launch = &noLaunch;
  return a;
}

CallFacts call(const char *coll, Memory m, std::uint64_t count = 1024) {
  CallFacts c;
  c.collective = coll;
  c.nranks = 8;
  c.count = count;
  c.dtype = ccsynthFloat32;
  c.op = ccsynthSum;
  c.memory = m;
  return c;
}

CommFacts ready() {
  CommFacts f;
  f.hostStaging = 16u << 20;
  f.deviceStaging = 64u << 20;
  f.device = CommFacts::Device::Ready;
  return f;
}

struct Loaded {
  std::vector<ccsynthAlgorithm> descs;
  std::vector<AlgoFacts> facts;
  explicit Loaded(std::vector<ccsynthAlgorithm> d) : descs(std::move(d)) {
    for (const ccsynthAlgorithm &a : descs)
      facts.push_back({&a, "lib.so", a.backend == ccsynthBackendCuda});
  }
};

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("every rank decides a call the same way, whatever its buffers") {
  Loaded l({algo("host_ar", "allreduce", ccsynthBackendHost),
            algo("cuda_ar", "allreduce", ccsynthBackendCuda),
            algo("cuda_ag", "allgather", ccsynthBackendCuda, 1)});
  for (Memory m : {Memory::Host, Memory::Device})
    for (const char *coll : {"allreduce", "allgather", "reducescatter"})
      for (bool capture : {false, true}) {
        CallFacts base = call(coll, m);
        base.capturing = capture;
        Decision first = decide(base, l.facts, ready());
        static char buffers[8][64];
        for (int r = 0; r < 8; ++r) {
          for (bool inPlace : {false, true}) {
            CallFacts c = base;
            c.rank = r;
            c.recv = buffers[r];
            c.send = inPlace ? buffers[r] : buffers[(r + 3) % 8] + 8;
            Decision d = decide(c, l.facts, ready());
            CHECK(d.algo == first.algo);
            CHECK(d.cuda == first.cuda);
            CHECK(d.reason == first.reason);
          }
        }
      }
}

TEST_CASE("host buffers run host plugins, device buffers CUDA plugins") {
  Loaded l({algo("host_ar", "allreduce", ccsynthBackendHost),
            algo("cuda_ar", "allreduce", ccsynthBackendCuda)});
  Decision h = decide(call("allreduce", Memory::Host), l.facts, ready());
  CHECK(h.algo == 0);
  CHECK_FALSE(h.cuda);
  Decision d = decide(call("allreduce", Memory::Device), l.facts, ready());
  CHECK(d.algo == 1);
  CHECK(d.cuda);
  CHECK(contains(d.reason, "cuda_ar"));
  Decision mixed = decide(call("allreduce", Memory::Mixed), l.facts, ready());
  CHECK(mixed.algo == -1);
  CHECK(contains(mixed.reason, "one buffer is device memory"));

  Loaded hostOnly({algo("host_ar", "allreduce", ccsynthBackendHost)});
  Decision none =
      decide(call("allreduce", Memory::Device), hostOnly.facts, ready());
  CHECK(none.algo == -1);
  CHECK(contains(none.reason, "device buffers run CUDA-backend plugins"));
}

TEST_CASE("graph capture: capture-safe plugins are captured, others go to "
          "NCCL") {
  Loaded l({algo("cuda_ar", "allreduce", ccsynthBackendCuda)});
  CallFacts c = call("allreduce", Memory::Device);
  c.capturing = true;
  Decision safe = decide(c, l.facts, ready());
  CHECK(safe.algo == 0);

  l.descs[0].capture_safe = 0;
  Decision unsafe = decide(c, l.facts, ready());
  CHECK(unsafe.algo == -1);
  CHECK(contains(unsafe.reason, "not capture-safe"));

  // The device window is never allocated under capture.
  l.descs[0].capture_safe = 1;
  CommFacts notYet = ready();
  notYet.device = CommFacts::Device::NotYet;
  Decision first = decide(c, l.facts, notYet);
  CHECK(first.algo == -1);
  CHECK(contains(first.reason, "outside CUDA graph capture"));
  c.capturing = false;
  CHECK(decide(c, l.facts, notYet).algo == 0);
}

TEST_CASE("fallback reasons name what does not match") {
  Loaded l({algo("cuda_ar", "allreduce", ccsynthBackendCuda)});
  auto why = [&](CallFacts c, CommFacts f = ready()) {
    Decision d = decide(c, l.facts, f);
    CHECK(d.algo == -1);
    return d.reason;
  };
  CallFacts c = call("allreduce", Memory::Device);
  CallFacts dt = c;
  dt.dtype = ccsynthFloat64;
  CHECK(contains(why(dt), "dtype fp64 not built in"));
  CallFacts bad = c;
  bad.dtype = 12;
  CHECK(contains(why(bad), "no ccsynth equivalent"));
  CallFacts op = c;
  op.op = ccsynthMax;
  CHECK(contains(why(op), "op 2 not built in"));
  CallFacts big = c;
  big.count = (std::uint64_t(128) << 20) / 4;
  CHECK(contains(why(big), "exceed the device window"));
  CallFacts ranks = c;
  ranks.nranks = 4;
  CHECK(contains(why(ranks), "no CUDA plugin algorithm for allreduce on 4"));
  CommFacts gone = ready();
  gone.device = CommFacts::Device::Unusable;
  gone.deviceUnusable = "rank 3 could not map every peer's window";
  CHECK(contains(why(c, gone), "rank 3 could not map"));

  l.descs[0].min_bytes = 1 << 20;
  CHECK(contains(why(c), "outside its range"));
  l.descs[0].min_bytes = 0;
  l.descs[0].count_multiple = 3;
  CHECK(contains(why(c), "count not a multiple of 3"));
  l.descs[0].count_multiple = 1;
  l.descs[0].transport_mask = ccsynthTransportCudaVirtual;
  CHECK(contains(why(c), "not built for the CUDA IPC transport"));
  l.descs[0].transport_mask |= ccsynthTransportCudaIpc;
  l.facts[0].ipcComms = false;
  CHECK(contains(why(c), "no CUDA IPC communicator entry"));
  l.facts[0].ipcComms = true;
  CHECK(decide(c, l.facts, ready()).algo == 0);

  // Switch reductions that read every rank's input: only in place, where
  // the input is staged into the device window, at one offset everywhere.
  l.descs[0].reads_peer_inputs = 1;
  CHECK(contains(why(c), "read every rank's input at one address"));
  Loaded inplaceSwitch({algo("nvls_ip", "allreduce", ccsynthBackendCuda, 1)});
  inplaceSwitch.descs[0].reads_peer_inputs = 1;
  CHECK(decide(c, inplaceSwitch.facts, ready()).algo == 0);

  Loaded rs({algo("cuda_rs", "reducescatter", ccsynthBackendCuda, 1)});
  Decision d = decide(call("reducescatter", Memory::Device), rs.facts, ready());
  CHECK(d.algo == -1);
  CHECK(contains(d.reason, "offsets that differ by rank"));

  Loaded host({algo("host_ar", "allreduce", ccsynthBackendHost)});
  CommFacts small = ready();
  small.hostStaging = 1024;
  Decision h = decide(call("allreduce", Memory::Host), host.facts, small);
  CHECK(h.algo == -1);
  CHECK(contains(h.reason, "exceed the staging window"));
}

TEST_CASE("the first matching algorithm wins; the closest miss is named") {
  Loaded l({algo("a", "allreduce", ccsynthBackendCuda),
            algo("b", "allreduce", ccsynthBackendCuda)});
  l.descs[0].max_bytes = 1024;
  Decision small =
      decide(call("allreduce", Memory::Device, 16), l.facts, ready());
  CHECK(small.algo == 0);
  Decision large =
      decide(call("allreduce", Memory::Device, 4096), l.facts, ready());
  CHECK(large.algo == 1);
  l.descs[1].dtype_mask = 1u << ccsynthInt32;
  Decision miss =
      decide(call("allreduce", Memory::Device, 4096), l.facts, ready());
  CHECK(miss.algo == -1);
  CHECK(contains(miss.reason, "a: 16384 bytes outside its range"));
}

TEST_CASE("one program under two byte ranges: the sizes between go to NCCL") {
  // A generated program faster than NCCL at small and large sizes only: one
  // descriptor per range, the same launch.
  Loaded l({algo("rails", "allreduce", ccsynthBackendCuda),
            algo("rails_range2", "allreduce", ccsynthBackendCuda)});
  l.descs[0].min_bytes = 1024;
  l.descs[0].max_bytes = 4095;
  l.descs[1].min_bytes = 1 << 20;
  auto at = [&](std::uint64_t bytes) {
    return decide(call("allreduce", Memory::Device, bytes / 4), l.facts,
                  ready());
  };
  CHECK(at(512).algo == -1);
  CHECK(at(2048).algo == 0);
  Decision between = at(64 << 10);
  CHECK(between.algo == -1);
  CHECK(contains(between.reason, "rails: 65536 bytes outside its range"));
  CHECK(at(1 << 20).algo == 1);
  CHECK(at(std::uint64_t(48) << 20).algo == 1);
}

TEST_CASE("placement: out-of-place algorithms read the user's input") {
  ccsynthAlgorithm out = algo("o", "allreduce", ccsynthBackendCuda, 0);
  ccsynthAlgorithm in = algo("i", "allreduce", ccsynthBackendCuda, 1);
  CHECK(placement(out).inputInPlace);
  CHECK_FALSE(placement(in).inputInPlace);
  CHECK(contains(placement(out).describe(), "input read in place"));
  CHECK(contains(placement(in).describe(), "input and output staged"));
}
