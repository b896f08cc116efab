//===- DslFuzzer.cpp - libFuzzer entry point for the .ccl front end -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Compiles arbitrary bytes as a .ccl program; a crash, a hang, a sanitizer
// report or an error without a location inside the input is a bug. When a
// program compiles, the verifier runs on its schedule too.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/DSL/Frontend.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace ccsynth;
  std::string text(reinterpret_cast<const char *>(data), size);
  dsl::LoweringOptions options;
  // Small limits keep each input fast; the limits are exercised as well.
  options.maxIterations = 100'000;
  options.maxTransfers = 20'000;
  options.maxSlots = 1 << 15;
  options.maxChunkMoves = 1 << 20;
  auto lowered = dsl::compileProgram("fuzz.ccl", text, options);
  if (!lowered) {
    const Error &e = lowered.error();
    int lines = 1 + (int)std::count(text.begin(), text.end(), '\n');
    if (e.message.empty() || e.loc.line < 1 || e.loc.line > lines ||
        e.loc.col < 1 || e.message.starts_with("internal error"))
      std::abort();
    return 0;
  }
  if (lowered->schedule.transferLocs.size() !=
      lowered->schedule.transfers.size())
    std::abort();
  (void)verifySchedule(lowered->schedule);
  return 0;
}
