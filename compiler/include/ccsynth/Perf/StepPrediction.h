//===- StepPrediction.h - Step-level predictions for simulate and compile -===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Both commands time the lowered program (what the MSCCL runtime runs)
// with the step-level simulator: `simulate --level steps` and the
// predictions `compile` prints. Needs the MLIR-based compiler to lower a
// schedule; an MSCCL XML input is timed as written.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Target/MSCCLProgram.h"
#include "ccsynth/Perf/StepSimulator.h"

#include <string>
#include <vector>

namespace ccsynth::perf {

/// Whether `path` holds MSCCL XML (by extension or first character).
bool isMscclXmlInput(const std::string &path);

/// The step-level program of an input: an MSCCL XML file as written, else
/// the schedule lowered through the default pipeline to MSCCL XML with
/// `options` (target forced to msccl-xml; a cuda target lowers as for
/// generated code: no bounded buffers, 64 channels).
Expected<msccl::Algo> stepProgram(const std::string &path,
                                  const Schedule &schedule,
                                  CompileOptions options);

/// The step simulator's options for a program of `collective` at `bytes`:
/// as MSCCL runs it, or with `generatedCode` as ccsynth's generated code
/// runs it, `tileBytes` per pass.
msccl::StepSimOptions stepSimOptions(const Collective &collective, double bytes,
                                     bool generatedCode, double tileBytes);

/// "LL, 8 channels, 16 threadblocks per rank, 64 chunks per loop".
std::string describeProgram(const msccl::Algo &algo);

} // namespace ccsynth::perf
