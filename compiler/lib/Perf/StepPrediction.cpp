//===- StepPrediction.cpp - Step-level predictions for simulate/compile ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Perf/StepPrediction.h"

#include "ccsynth/Target/MSCCLXml.h"

#include <algorithm>

namespace ccsynth::perf {

bool isMscclXmlInput(const std::string &path) {
  if (path.ends_with(".xml"))
    return true;
  if (path.ends_with(".json") || path.ends_with(".ccl"))
    return false;
  auto text = readFile(path);
  if (!text)
    return false;
  size_t first = text->find_first_not_of(" \t\r\n");
  return first != std::string::npos && (*text)[first] == '<';
}

msccl::StepSimOptions stepSimOptions(const Collective &collective, double bytes,
                                     bool generatedCode, double tileBytes) {
  msccl::StepSimOptions so;
  so.bytes = bytes;
  so.busBwFactor = collective.busBwFactor();
  so.generatedCode = generatedCode;
  so.tileBytes = tileBytes;
  return so;
}

Expected<msccl::Algo> stepProgram(const std::string &path,
                                  const Schedule &schedule,
                                  CompileOptions options) {
  if (isMscclXmlInput(path)) {
    auto text = readFile(path);
    if (!text)
      return text.error();
    msccl::XmlReadOptions ro;
    ro.legacyAttributes = true;
    return msccl::parseXml(path, *text, ro);
  }
  if (options.target == CompileTarget::Cuda) {
    // The program the generated source is made from (no bounded buffers,
    // 64 channels), not an XML form of it: switch threadblocks have none,
    // and MSCCL's limits (a dependency's threadblock id in an int8_t) do
    // not bind generated code.
    options.programOnly = true;
    CompileResult compiled = compileSchedule(schedule, options);
    if (!compiled.ok())
      return compiled.failure.error;
    return std::move(*compiled.program);
  }
  options.target = CompileTarget::MscclXml;
  CompileResult compiled = compileSchedule(schedule, options);
  if (!compiled.ok())
    return compiled.failure.error;
  return msccl::parseXml(path + " (lowered)", *compiled.output);
}

std::string describeProgram(const msccl::Algo &algo) {
  int tbs = algo.threadblocksPerRank();
  int switchTbs = 0;
  for (const msccl::Gpu &g : algo.gpus) {
    int n = 0;
    for (const msccl::Threadblock &tb : g.tbs)
      n += tb.switchId >= 0;
    switchTbs = std::max(switchTbs, n);
  }
  std::string s = algo.proto + ", " + std::to_string(algo.nchannels) +
                  " channel" + (algo.nchannels == 1 ? "" : "s") + ", " +
                  std::to_string(tbs) + " threadblock" + (tbs == 1 ? "" : "s") +
                  " per rank";
  if (switchTbs > 0) {
    s += " (";
    s += std::to_string(switchTbs);
    s += " of them switch threadblocks)";
  }
  s += ", ";
  s += std::to_string(algo.nchunksperloop);
  s += " chunks per loop";
  return s;
}

} // namespace ccsynth::perf
