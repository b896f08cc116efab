//===- SelectionTest.cpp - Which calls MSCCL selects an algorithm for -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// MSCCL runs an algorithm only for calls whose count x sizeMultiplier is a
// multiple of nchunksperloop and whose size lies in minBytes..maxBytes,
// ignoring the root; the compiler must say so and warn when nothing a user
// runs would be served.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Target/MSCCLProgram.h"

#include <catch2/catch.hpp>

using namespace ccsynth::msccl;

namespace {
Algo algo(const std::string &coll, int ngpus, int p, long long minBytes = 0,
          long long maxBytes = 0) {
  Algo a;
  a.name = "x";
  a.coll = coll;
  a.ngpus = ngpus;
  a.nchunksperloop = p;
  a.minBytes = minBytes;
  a.maxBytes = maxBytes;
  return a;
}
bool has(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}
} // namespace

TEST_CASE("size multipliers follow the runtime's parser", "[msccl][select]") {
  CHECK(sizeMultiplier("allgather", 8) == 8);
  CHECK(sizeMultiplier("reducescatter", 8) == 8);
  CHECK(sizeMultiplier("alltoall", 8) == 8);
  CHECK(sizeMultiplier("allreduce", 8) == 1);
  CHECK(sizeMultiplier("broadcast", 8) == 1);
}

TEST_CASE("selection reports say which sizes are served", "[msccl][select]") {
  SECTION("an odd factor serves no power of two") {
    SelectionReport r = describeSelection(algo("allgather", 8, 48));
    CHECK(has(r.warning, "odd factor 3"));
    CHECK(has(r.served, "multiples of 192 B"));
    CHECK_FALSE(has(r.served, "power-of-two"));
  }
  SECTION("a power of two serves every power of two from one loop") {
    SelectionReport r = describeSelection(algo("allreduce", 8, 64));
    CHECK(r.warning.empty());
    CHECK(has(r.served, "every power-of-two size in that range from 256 B"));
    CHECK(has(r.served, "of any size"));
  }
  SECTION("a byte range without a multiple of the loop serves nothing") {
    CHECK(has(describeSelection(algo("allreduce", 8, 64, 1, 63)).warning,
              "never selects"));
    SelectionReport ok = describeSelection(algo("allreduce", 8, 64, 1, 64));
    CHECK(ok.warning.empty());
    CHECK(has(ok.served, "between 1 B and 64 B"));
  }
  SECTION("rooted collectives run for every root") {
    CHECK(has(describeSelection(algo("reduce", 8, 8), 5).served,
              "written for root 5"));
    CHECK_FALSE(
        has(describeSelection(algo("allreduce", 8, 8), 5).served, "root"));
  }
}

TEST_CASE("threadblock budgets follow the topology's GPU", "[mscclpp]") {
  std::string why;
  CHECK(ccsynth::residentThreadblocks("dgx-a100x2", &why) == 108);
  CHECK(why.find("A100") != std::string::npos);
  CHECK(ccsynth::residentThreadblocks("dgx-h100x8", nullptr) == 132);
  CHECK(ccsynth::residentThreadblocks("ndv2x4", nullptr) == 80);
  CHECK(ccsynth::residentThreadblocks("dgx1", nullptr) == 80);
  CHECK(ccsynth::residentThreadblocks("ring:8", nullptr) == 0);
}
