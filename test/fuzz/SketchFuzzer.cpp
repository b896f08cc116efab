//===- SketchFuzzer.cpp - libFuzzer entry for communication sketches ------===//
#include "FuzzCheck.h"

#include "ccsynth/Core/Json.h"
#include "ccsynth/Synth/Sketch.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace ccsynth;
  std::string text(reinterpret_cast<const char *>(data), size);
  auto doc = JsonDocument::parse("fuzz.json", text);
  if (!doc) {
    fuzz::checkError(doc.error(), text);
    return 0;
  }
  auto sketch = synth::parseSketch(*doc);
  if (!sketch)
    fuzz::checkError(sketch.error(), text);
  return 0;
}
