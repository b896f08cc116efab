//===- CudaApi.h - The CUDA runtime, loaded at run time -------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `ccsynth run --backend cuda` must run (and fail clearly) on machines
// without CUDA, so nothing of ccsynth links a CUDA library: the runtime
// library (libcudart) is opened with dlopen and the few entry points a run
// needs are looked up by name. The declarations below restate the CUDA
// runtime API's signatures with plain types (handles as pointers, enums
// and error codes as int), so this compiles with the host compiler alone.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace ccsynth::rt {

/// The CUDA runtime's values this file relies on (cudaError_t,
/// cudaDeviceAttr, cudaMemcpyKind, stream flags).
namespace cuda {
using Error = int;
using Stream = void *;
using Event = void *;
inline constexpr Error kSuccess = 0;
inline constexpr Error kNotReady = 600;
inline constexpr int kAttrMultiProcessorCount = 16;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;
inline constexpr int kMemcpyHostToDevice = 1;
inline constexpr int kMemcpyDeviceToHost = 2;
inline constexpr int kMemcpyDeviceToDevice = 3;
inline constexpr unsigned kStreamNonBlocking = 1;
} // namespace cuda

/// An opened CUDA runtime library; closes it when destroyed.
class CudaApi {
public:
  ~CudaApi();
  CudaApi(const CudaApi &) = delete;
  CudaApi &operator=(const CudaApi &) = delete;

  /// The libraries tried by default, in order: libcudart.so.13, .so.12 and
  /// libcudart.so on the loader's search path, then the same names under
  /// /usr/local/cuda/lib64.
  static std::vector<std::string> defaultLibraries();

  /// Opens the first of `libraries` that loads and has every entry point;
  /// on failure returns null and says, in `error`, what was tried.
  static std::unique_ptr<CudaApi>
  load(std::string &error,
       const std::vector<std::string> &libraries = defaultLibraries());

  /// The file that was opened.
  const std::string &library() const { return path; }

  /// "name: message" for a failed call, e.g. "cudaMalloc: out of memory".
  std::string describe(const char *call, cuda::Error e) const;

  // The entry points, as in cuda_runtime_api.h.
  cuda::Error (*getDeviceCount)(int *count) = nullptr;
  cuda::Error (*runtimeGetVersion)(int *version) = nullptr;
  cuda::Error (*driverGetVersion)(int *version) = nullptr;
  const char *(*getErrorString)(cuda::Error error) = nullptr;
  cuda::Error (*setDevice)(int device) = nullptr;
  cuda::Error (*deviceGetAttribute)(int *value, int attr, int device) = nullptr;
  cuda::Error (*malloc)(void **ptr, std::size_t bytes) = nullptr;
  cuda::Error (*free)(void *ptr) = nullptr;
  cuda::Error (*memcpyAsync)(void *dst, const void *src, std::size_t bytes,
                             int kind, cuda::Stream stream) = nullptr;
  cuda::Error (*memsetAsync)(void *dst, int value, std::size_t bytes,
                             cuda::Stream stream) = nullptr;
  cuda::Error (*streamCreateWithFlags)(cuda::Stream *stream,
                                       unsigned flags) = nullptr;
  cuda::Error (*streamQuery)(cuda::Stream stream) = nullptr;
  cuda::Error (*streamDestroy)(cuda::Stream stream) = nullptr;
  cuda::Error (*eventCreate)(cuda::Event *event) = nullptr;
  cuda::Error (*eventRecord)(cuda::Event event, cuda::Stream stream) = nullptr;
  cuda::Error (*eventElapsedTime)(float *ms, cuda::Event start,
                                  cuda::Event end) = nullptr;
  cuda::Error (*eventDestroy)(cuda::Event event) = nullptr;
  /// Optional (its symbol was renamed across versions): fills a
  /// cudaDeviceProp, whose first member is the device's name.
  cuda::Error (*getDeviceProperties)(void *prop, int device) = nullptr;

private:
  CudaApi() = default;
  void *handle = nullptr;
  std::string path;
};

/// What `ccsynth run --backend cuda` learns about a device before it
/// builds anything.
struct CudaDeviceInfo {
  int device = 0;
  int count = 0;            ///< devices visible
  int major = 0, minor = 0; ///< compute capability
  int sms = 0;
  std::string name; ///< empty when the runtime did not say
};

/// Checks that `device` exists and describes it; on failure returns false
/// with the reason in `error` (e.g. the runtime's "no CUDA-capable device
/// is detected", or "CUDA driver version is insufficient").
bool probeCudaDevice(const CudaApi &api, int device, CudaDeviceInfo &info,
                     std::string &error);

} // namespace ccsynth::rt
