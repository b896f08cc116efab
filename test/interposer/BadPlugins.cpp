//===- BadPlugins.cpp - Plugins the loader must refuse, for the tests -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Built twice: -DCCSYNTH_BAD_ABI gives a library whose table reports ABI
// version 999; without it, a library that lacks the entry symbol.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/runtime/ccsynth_plugin.h"

#ifdef CCSYNTH_BAD_ABI
extern "C" __attribute__((visibility("default"))) const ccsynthPlugin *
ccsynthPluginGet(void) {
  static const ccsynthPlugin table = {999, sizeof(ccsynthPlugin), "test", 0,
                                      nullptr};
  return &table;
}
#else
extern "C" __attribute__((visibility("default"))) int notAPlugin(void) {
  return 0;
}
#endif
