//===- SynthTestUtil.h - Helpers of the synthesizer's tests ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once

#include "ccsynth/Support/Json.h"
#include "ccsynth/Synth/Sketch.h"
#include "ccsynth/Topology/Topology.h"

#include <catch2/catch.hpp>

#include <string>

namespace ccsynth::synth::test {

/// A sketch from JSON text (file name "sk.json" in errors).
inline Expected<Sketch> parse(const std::string &text) {
  auto doc = JsonDocument::parse("sk.json", text);
  if (!doc)
    return doc.error();
  return parseSketch(*doc);
}

/// A built-in machine; the test fails if there is none of that name.
inline Topology topo(const std::string &name) {
  auto t = makeBuiltinTopology(name);
  REQUIRE(t.ok());
  return t.take();
}

} // namespace ccsynth::synth::test
