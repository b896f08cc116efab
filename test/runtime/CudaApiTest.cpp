//===- CudaApiTest.cpp - Loading the CUDA runtime with dlopen -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The CUDA run driver is built by the host compiler and links no CUDA
// library; this checks its loader on any machine: libraries that do not
// exist or lack the runtime's entry points are refused with a message
// naming each one tried, and the real runtime (where installed) either
// describes a device or says why there is none. Never skipped: every
// branch checks something.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/runtime/CudaApi.h"

#include <cstdio>
#include <string>

using namespace ccsynth::rt;

namespace {
int failures = 0;

void expect(bool cond, const std::string &what) {
  if (!cond) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}
} // namespace

int main() {
  std::string error;
  auto none = CudaApi::load(
      error, {"libccsynth-no-such-cudart.so.99", "/nonexistent/libcudart.so"});
  expect(!none, "a missing library loaded");
  expect(contains(error, "cannot load the CUDA runtime library") &&
             contains(error, "libccsynth-no-such-cudart.so.99") &&
             contains(error, "/nonexistent/libcudart.so"),
         "the error names every library tried: " + error);

  // The C library opens but is no CUDA runtime.
  error.clear();
  auto wrong = CudaApi::load(error, {"libc.so.6"});
  expect(!wrong, "libc.so.6 was taken for the CUDA runtime");
  expect(contains(error, "libc.so.6: lacks cudaGetDeviceCount"),
         "the error names the missing entry points: " + error);

  error.clear();
  auto api = CudaApi::load(error);
  if (!api) {
    std::printf("no CUDA runtime here: %s\n", error.c_str());
    expect(contains(error, "libcudart.so.13"), "default names: " + error);
  } else {
    std::printf("loaded %s\n", api->library().c_str());
    CudaDeviceInfo info;
    std::string why;
    if (probeCudaDevice(*api, 0, info, why)) {
      std::printf("device 0: %s, sm_%d%d, %d SMs, %d device(s)\n",
                  info.name.c_str(), info.major, info.minor, info.sms,
                  info.count);
      expect(info.major >= 3 && info.sms > 0 && info.count >= 1,
             "a device with a compute capability and SMs");
      std::string past;
      expect(!probeCudaDevice(*api, info.count, info, past) &&
                 contains(past, "was asked for"),
             "a device past the last is refused: " + past);
    } else {
      std::printf("no device: %s\n", why.c_str());
      expect(!why.empty(), "a reason for having no device");
    }
    expect(contains(api->describe("cudaMalloc", 2), "cudaMalloc: ") &&
               contains(api->describe("cudaMalloc", 2), "CUDA error 2"),
           "errors are described with the call and the code");
  }
  std::printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
