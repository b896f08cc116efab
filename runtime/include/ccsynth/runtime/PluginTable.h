//===- PluginTable.h - The exported table of a plugin ---------------------===//
//
// A plugin's table source (written by `ccsynth compile --target plugin`)
// declares each algorithm's descriptor function and lists them:
//
//   CCSYNTH_DECLARE_ALGORITHM(ring_allgather)
//   CCSYNTH_PLUGIN_TABLE(ccsynthAlgorithm_ring_allgather)
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/ccsynth_plugin.h"

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
  }
