//===- CudaApi.cpp - The CUDA runtime, loaded at run time -----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/runtime/CudaApi.h"

#include <cstring>
#include <dlfcn.h>
#include <type_traits>

namespace ccsynth::rt {

CudaApi::~CudaApi() {
  if (handle)
    ::dlclose(handle);
}

std::vector<std::string> CudaApi::defaultLibraries() {
  std::vector<std::string> names = {"libcudart.so.13", "libcudart.so.12",
                                    "libcudart.so"};
  std::vector<std::string> all = names;
  for (const std::string &n : names)
    all.push_back("/usr/local/cuda/lib64/" + n);
  return all;
}

std::unique_ptr<CudaApi> CudaApi::load(std::string &error,
                                       const std::vector<std::string> &libs) {
  std::string tried;
  for (const std::string &lib : libs) {
    ::dlerror();
    void *h = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *why = ::dlerror();
      tried += "\n  " + lib + ": " + (why ? why : "cannot be opened");
      continue;
    }
    std::unique_ptr<CudaApi> api(new CudaApi());
    api->handle = h;
    api->path = lib;
    std::string missing;
    auto bind = [&](auto &fn, const char *name) {
      void *sym = ::dlsym(h, name);
      if (!sym)
        missing += std::string(missing.empty() ? "" : ", ") + name;
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
    };
    bind(api->getDeviceCount, "cudaGetDeviceCount");
    bind(api->runtimeGetVersion, "cudaRuntimeGetVersion");
    bind(api->driverGetVersion, "cudaDriverGetVersion");
    bind(api->getErrorString, "cudaGetErrorString");
    bind(api->setDevice, "cudaSetDevice");
    bind(api->deviceGetAttribute, "cudaDeviceGetAttribute");
    bind(api->malloc, "cudaMalloc");
    bind(api->free, "cudaFree");
    bind(api->memcpyAsync, "cudaMemcpyAsync");
    bind(api->memsetAsync, "cudaMemsetAsync");
    bind(api->streamCreateWithFlags, "cudaStreamCreateWithFlags");
    bind(api->streamQuery, "cudaStreamQuery");
    bind(api->streamDestroy, "cudaStreamDestroy");
    bind(api->eventCreate, "cudaEventCreate");
    bind(api->eventRecord, "cudaEventRecord");
    bind(api->eventElapsedTime, "cudaEventElapsedTime");
    bind(api->eventDestroy, "cudaEventDestroy");
    if (!missing.empty()) {
      tried += "\n  " + lib + ": lacks " + missing;
      continue; // closes it
    }
    // CUDA 12 exports the current struct as cudaGetDeviceProperties_v2;
    // CUDA 13 under the plain name. Only the name (first member) is read.
    void *props = ::dlsym(h, "cudaGetDeviceProperties_v2");
    if (!props)
      props = ::dlsym(h, "cudaGetDeviceProperties");
    api->getDeviceProperties =
        reinterpret_cast<cuda::Error (*)(void *, int)>(props);
    return api;
  }
  error = "cannot load the CUDA runtime library; tried:" + tried;
  return nullptr;
}

std::string CudaApi::describe(const char *call, cuda::Error e) const {
  const char *msg = getErrorString ? getErrorString(e) : nullptr;
  return std::string(call) + ": " + (msg ? msg : "unknown error") +
         " (CUDA error " + std::to_string(e) + ")";
}

bool probeCudaDevice(const CudaApi &api, int device, CudaDeviceInfo &info,
                     std::string &error) {
  info = CudaDeviceInfo{};
  info.device = device;
  int count = 0;
  if (cuda::Error e = api.getDeviceCount(&count); e != cuda::kSuccess) {
    int driver = 0;
    api.driverGetVersion(&driver);
    error = api.describe("cudaGetDeviceCount", e) +
            (driver == 0 ? "; no CUDA driver is installed" : "");
    return false;
  }
  info.count = count;
  if (count == 0) {
    error = "cudaGetDeviceCount found no device";
    return false;
  }
  if (device < 0 || device >= count) {
    error = "device " + std::to_string(device) + " was asked for; " +
            std::to_string(count) + " device" + (count == 1 ? " is" : "s are") +
            " present (0 to " + std::to_string(count - 1) + ")";
    return false;
  }
  auto attr = [&](int which, int &out, const char *what) {
    if (cuda::Error e = api.deviceGetAttribute(&out, which, device);
        e != cuda::kSuccess) {
      error = api.describe(what, e);
      return false;
    }
    return true;
  };
  if (!attr(cuda::kAttrComputeCapabilityMajor, info.major,
            "cudaDeviceGetAttribute(compute capability major)") ||
      !attr(cuda::kAttrComputeCapabilityMinor, info.minor,
            "cudaDeviceGetAttribute(compute capability minor)") ||
      !attr(cuda::kAttrMultiProcessorCount, info.sms,
            "cudaDeviceGetAttribute(multiprocessor count)"))
    return false;
  if (api.getDeviceProperties) {
    // Larger than any version's cudaDeviceProp (about 1 KB).
    std::vector<char> props(16384, 0);
    if (api.getDeviceProperties(props.data(), device) == cuda::kSuccess)
      info.name.assign(props.data(), strnlen(props.data(), 256));
  }
  return true;
}

} // namespace ccsynth::rt
