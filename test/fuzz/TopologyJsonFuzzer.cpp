//===- TopologyJsonFuzzer.cpp - libFuzzer entry for topology JSON ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Reads arbitrary bytes as a topology JSON file; a topology that reads must
// validate, round-trip through its JSON with the same content hash, and
// answer route queries.
//
//===----------------------------------------------------------------------===//
#include "FuzzCheck.h"

#include "ccsynth/Support/Json.h"
#include "ccsynth/Topology/Topology.h"

#include <cmath>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace ccsynth;
  std::string text(reinterpret_cast<const char *>(data), size);
  auto doc = JsonDocument::parse("fuzz.json", text);
  if (!doc) {
    fuzz::checkError(doc.error(), text);
    return 0;
  }
  auto topo = parseTopologyJson(*doc);
  if (!topo) {
    fuzz::checkError(topo.error(), text);
    return 0;
  }
  if (!topo->validate())
    std::abort();
  for (const Link &l : topo->links)
    if (!std::isfinite(l.bandwidthGBps) || !(l.bandwidthGBps > 0))
      std::abort();
  auto again = JsonDocument::parse("again.json", topologyToJson(*topo));
  if (!again)
    std::abort();
  auto back = parseTopologyJson(*again);
  if (!back || topologyHash(*back) != topologyHash(*topo))
    std::abort();
  if (topo->numRanks() <= 64) {
    (void)topo->shortestAlpha();
    (void)topo->route(0, topo->numRanks() - 1);
  }
  return 0;
}
