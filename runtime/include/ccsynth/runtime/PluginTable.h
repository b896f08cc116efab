//===- PluginTable.h - The exported table of a plugin ---------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A plugin's table source (written by `ccsynth compile --target plugin`)
// declares each algorithm's descriptor function and lists them:
//
//   CCSYNTH_DECLARE_ALGORITHM(ring_allgather)
//   CCSYNTH_PLUGIN_TABLE(ccsynthAlgorithm_ring_allgather)
//
// Built by nvcc, the table also exports CCSYNTH_CUDA_COMMS_ENTRY: the
// virtual-ranks and CUDA IPC communicators of CudaTransport.h behind plain
// C pointers, for loaders that do not link the CUDA runtime (`ccsynth run
// --backend cuda`, the NCCL-API interposer).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/ccsynth_plugin.h"

#if defined(__CUDACC__)
#include "ccsynth/runtime/CudaTransport.h"

namespace ccsynth::rt {

inline ccsynthResult pluginVirtualCommCreate(int32_t device, int32_t ranks,
                                             uint32_t flagWords, void **comm,
                                             ccsynthError *err) {
  if (!comm)
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, -1,
                      nullptr, 0, "no place for the comm");
  *comm = nullptr;
  CCSYNTH_CUDA_CHECK(err, -1, cudaSetDevice(device));
  CudaVirtualComm *c = nullptr;
  ccsynthResult r = cudaVirtualCommCreate(ranks, flagWords, &c, err);
  if (r == ccsynthSuccess)
    *comm = c;
  return r;
}

inline CudaVirtualComm *asVirtualComm(void *comm) {
  auto *c = static_cast<CudaVirtualComm *>(comm);
  return c && c->magic == CudaVirtualComm::kMagic &&
                 c->structSize == sizeof(CudaVirtualComm)
             ? c
             : nullptr;
}

inline ccsynthResult pluginVirtualCommError(void *comm, ccsynthError *err) {
  CudaVirtualComm *c = asVirtualComm(comm);
  if (!c)
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, -1,
                      nullptr, 0, "comm is not a CudaVirtualComm");
  return cudaCommError(c, err);
}

inline void pluginVirtualCommDestroy(void *comm) {
  cudaVirtualCommDestroy(asVirtualComm(comm));
}

inline ccsynthResult pluginIpcCommCreate(int32_t device, int32_t rank,
                                         int32_t ranks, uint32_t flagWords,
                                         uint64_t dataBytes, void **comm,
                                         void *handle, ccsynthError *err) {
  if (!comm)
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, rank,
                      nullptr, 0, "no place for the comm");
  *comm = nullptr;
  CudaIpcComm *c = nullptr;
  ccsynthResult r = cudaIpcCommCreate(device, rank, ranks, flagWords, dataBytes,
                                      &c, handle, err);
  if (r == ccsynthSuccess)
    *comm = c;
  return r;
}

inline ccsynthResult pluginIpcCommConnect(void *comm, const void *handles,
                                          ccsynthError *err) {
  return cudaIpcCommConnect(asIpcComm(comm), handles, err);
}

inline ccsynthResult pluginIpcCommWindow(void *comm, void **data,
                                         uint64_t *bytes) {
  CudaIpcComm *c = asIpcComm(comm);
  if (!c || !data || !bytes)
    return ccsynthInvalidArgument;
  *data = c->data();
  *bytes = c->dataBytes;
  return ccsynthSuccess;
}

inline ccsynthResult pluginIpcCommError(void *comm, ccsynthError *err) {
  CudaIpcComm *c = asIpcComm(comm);
  if (!c)
    return cudaReport(err, ccsynthInvalidArgument, CudaStatus::BadComm, -1,
                      nullptr, 0, "comm is not a CudaIpcComm");
  return cudaCommError(c, err);
}

inline ccsynthResult pluginIpcCommAbort(void *comm) {
  return cudaIpcCommAbort(asIpcComm(comm));
}

inline void pluginIpcCommDestroy(void *comm) {
  cudaIpcCommDestroy(asIpcComm(comm));
}

} // namespace ccsynth::rt

#define CCSYNTH_PLUGIN_BACKEND_ENTRIES                                         \
  extern "C" __attribute__((visibility("default"))) const ccsynthCudaComms *   \
  ccsynthPluginCudaComms(void) {                                               \
    static const ccsynthCudaComms comms = {                                    \
        CCSYNTH_CUDA_COMMS_VERSION,                                            \
        sizeof(ccsynthCudaComms),                                              \
        &::ccsynth::rt::pluginVirtualCommCreate,                               \
        &::ccsynth::rt::pluginVirtualCommError,                                \
        &::ccsynth::rt::pluginVirtualCommDestroy,                              \
        &::ccsynth::rt::pluginIpcCommCreate,                                   \
        &::ccsynth::rt::pluginIpcCommConnect,                                  \
        &::ccsynth::rt::pluginIpcCommWindow,                                   \
        &::ccsynth::rt::pluginIpcCommError,                                    \
        &::ccsynth::rt::pluginIpcCommAbort,                                    \
        &::ccsynth::rt::pluginIpcCommDestroy};                                 \
    return &comms;                                                             \
  }
#else
#define CCSYNTH_PLUGIN_BACKEND_ENTRIES
#endif

#define CCSYNTH_DECLARE_ALGORITHM(NAME)                                        \
  extern "C" const ccsynthAlgorithm *ccsynthAlgorithm_##NAME(void);

#define CCSYNTH_PLUGIN_TABLE(...)                                              \
  extern "C" __attribute__((visibility("default"))) const ccsynthPlugin *      \
  ccsynthPluginGet(void) {                                                     \
    static const ccsynthAlgorithm *(*const getters[])(void) = {__VA_ARGS__};   \
    static ccsynthAlgorithm algos[sizeof(getters) / sizeof(getters[0])];       \
    static const ccsynthPlugin plugin = [] {                                   \
      for (unsigned i = 0; i < sizeof(getters) / sizeof(getters[0]); ++i)      \
        algos[i] = *getters[i]();                                              \
      return ccsynthPlugin{CCSYNTH_PLUGIN_ABI_VERSION, sizeof(ccsynthPlugin),  \
                           "ccsynth " CCSYNTH_VERSION_STRING,                  \
                           (int32_t)(sizeof(getters) / sizeof(getters[0])),    \
                           algos};                                             \
    }();                                                                       \
    return &plugin;                                                            \
  }                                                                            \
  CCSYNTH_PLUGIN_BACKEND_ENTRIES
