//===- SketchFuzzer.cpp - libFuzzer entry for communication sketches ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Reads arbitrary bytes as a sketch; a sketch that reads is also applied to
// a one-node (dgx-a100) or two-node (ndv2x2) machine: its switch model and
// routing problem are built, or refused with a located error.
//
//===----------------------------------------------------------------------===//
#include "FuzzCheck.h"

#include "ccsynth/Support/Json.h"
#include "ccsynth/Synth/Problem.h"
#include "ccsynth/Synth/Sketch.h"
#include "ccsynth/Synth/SwitchModel.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace ccsynth;
  static const Topology one = makeBuiltinTopology("dgx-a100").take();
  static const Topology two = makeBuiltinTopology("ndv2x2").take();
  std::string text(reinterpret_cast<const char *>(data), size);
  auto doc = JsonDocument::parse("fuzz.json", text);
  if (!doc) {
    fuzz::checkError(doc.error(), text);
    return 0;
  }
  auto sketch = synth::parseSketch(*doc);
  if (!sketch) {
    fuzz::checkError(sketch.error(), text);
    return 0;
  }
  if (sketch->nnodes != 1 && sketch->nnodes != 2)
    return 0;
  const Topology &t = sketch->nnodes == 1 ? one : two;
  auto model = synth::applySketchSwitches(t, *sketch);
  if (!model) {
    fuzz::checkError(model.error(), text);
    return 0;
  }
  if (!model->topo.validate() || model->topo.links.size() != t.links.size())
    std::abort();
  auto col = Collective::builtin(CollectiveKind::AllGather, t.numRanks(), 1);
  if (!col)
    std::abort();
  auto problem = synth::buildRoutingProblem(model->topo, *sketch, *col);
  if (!problem) {
    fuzz::checkError(problem.error(), text);
    return 0;
  }
  if (auto why = synth::explainInfeasible(*problem, *sketch))
    fuzz::checkError(*why, text);
  return 0;
}
