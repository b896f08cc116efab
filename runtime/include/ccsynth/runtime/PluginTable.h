//===- PluginTable.h - The exported table of a plugin ---------------------===//
//
// A plugin's table source (written by `ccsynth compile --target plugin`)
// declares each algorithm's descriptor function and lists them:
//
//   CCSYNTH_DECLARE_ALGORITHM(ring_allgather)
//   CCSYNTH_PLUGIN_TABLE(ccsynthAlgorithm_ring_allgather)
//
// Built by nvcc, the table also exports CCSYNTH_CUDA_COMMS_ENTRY: the
// virtual-ranks communicator of CudaTransport.h behind plain C pointers, for
// loaders that do not link the CUDA runtime (`ccsynth run --backend cuda`).
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

} // namespace ccsynth::rt

#define CCSYNTH_PLUGIN_BACKEND_ENTRIES                                         \
  extern "C" __attribute__((visibility("default"))) const ccsynthCudaComms *   \
  ccsynthPluginCudaComms(void) {                                               \
    static const ccsynthCudaComms comms = {                                    \
        CCSYNTH_CUDA_COMMS_VERSION, sizeof(ccsynthCudaComms),                  \
        &::ccsynth::rt::pluginVirtualCommCreate,                               \
        &::ccsynth::rt::pluginVirtualCommError,                                \
        &::ccsynth::rt::pluginVirtualCommDestroy};                             \
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
