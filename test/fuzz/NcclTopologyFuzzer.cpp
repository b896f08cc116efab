//===- NcclTopologyFuzzer.cpp - libFuzzer entry for NCCL topology dumps ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Imports arbitrary bytes as an NCCL_TOPO_DUMP_FILE XML, on one node and on
// two; an imported topology must validate.
//
//===----------------------------------------------------------------------===//
#include "FuzzCheck.h"

#include "ccsynth/Topology/Topology.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace ccsynth;
  std::string text(reinterpret_cast<const char *>(data), size);
  for (int nodes : {1, 2}) {
    NcclImportOptions options;
    options.nodes = nodes;
    auto topo = importNcclTopology("fuzz.xml", text, options);
    if (!topo) {
      fuzz::checkError(topo.error(), text);
      continue;
    }
    if (!topo->validate())
      std::abort();
  }
  return 0;
}
