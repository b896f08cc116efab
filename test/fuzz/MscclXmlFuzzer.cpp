//===- MscclXmlFuzzer.cpp - libFuzzer entry for MSCCL algorithm XML -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Reads arbitrary bytes as MSCCL XML; an algorithm that reads is checked
// against the runtime's rules (which must answer, not crash).
//
//===----------------------------------------------------------------------===//
#include "FuzzCheck.h"

#include "ccsynth/Target/MSCCLXml.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace ccsynth;
  std::string text(reinterpret_cast<const char *>(data), size);
  auto algo = msccl::parseXml("fuzz.xml", text);
  if (!algo) {
    fuzz::checkError(algo.error(), text);
    return 0;
  }
  (void)msccl::validateAlgo(*algo);
  return 0;
}
