//===- TacclProfileFuzzer.cpp - libFuzzer entry for TACCL profiles --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Reads arbitrary bytes as a TACCL topology profile and applies it to the
// built-in shapes TACCL profiles describe (ndv2x2, dgx2x2) and to a single
// node; a profile that applies must give a valid topology with the shape's
// links.
//
//===----------------------------------------------------------------------===//
#include "FuzzCheck.h"

#include "ccsynth/Support/Json.h"
#include "ccsynth/Topology/TacclProfile.h"

#include <cmath>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace ccsynth;
  static const Topology shapes[] = {makeBuiltinTopology("ndv2x2").take(),
                                    makeBuiltinTopology("dgx2x2").take(),
                                    makeBuiltinTopology("dgx-a100").take()};
  std::string text(reinterpret_cast<const char *>(data), size);
  auto doc = JsonDocument::parse("fuzz.json", text);
  if (!doc) {
    fuzz::checkError(doc.error(), text);
    return 0;
  }
  for (const Topology &shape : shapes) {
    auto t = applyTacclProfile(shape, *doc);
    if (!t) {
      fuzz::checkError(t.error(), text);
      continue;
    }
    if (!t->validate() || t->links.size() != shape.links.size())
      std::abort();
    for (const Link &l : t->links)
      if (!std::isfinite(l.bandwidthGBps) || !(l.bandwidthGBps > 0))
        std::abort();
  }
  return 0;
}
