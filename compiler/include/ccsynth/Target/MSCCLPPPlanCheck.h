//===- MSCCLPPPlanCheck.h - Symbolic run of an MSCCL++ execution plan
//------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Reads an execution plan the way MSCCL++'s executor does (channels and
// remote buffers flattened per channel type, channel pairing in order,
// per-threadblock channel and buffer references) and runs it on symbolic
// chunk values: every threadblock advances until it blocks on a wait or a
// semaphore, puts land in the peer's buffer, signals and semaphore releases
// wake waiters. At the end each output chunk must hold exactly what the
// collective requires. It also checks the rules ccsynth's plans promise:
// memory channels only between ranks of one node, port channels only
// across nodes, and a per-rank threadblock budget. Plain C++, no MLIR.
//
// One interleaving is run (each threadblock until it blocks, in rank and
// threadblock order), not every one: races between threadblocks are the
// chunk-level verifier's and the dependency analysis' business.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Support/Diagnostic.h"

#include <string>
#include <vector>

namespace ccsynth::msccl {

struct PlanCheckOptions {
  /// Node of each rank; empty: all ranks on one node (so any port channel
  /// is refused).
  std::vector<int> nodeOfRank;
  /// Most threadblocks per rank (0: no limit).
  int maxThreadblocksPerRank = 0;
};

/// What a successful run saw, for tests and reports.
struct PlanCheckSummary {
  int memoryChannels = 0; ///< over all ranks
  int portChannels = 0;
  int maxThreadblocks = 0; ///< of any rank
  int operations = 0;      ///< executed, over all ranks
  int switchChannels = 0;  ///< over all ranks
  int switchOperations = 0; ///< glres and gstore executed
};

/// Runs the plan `text` (named `file` in errors) against `collective`.
/// Fails with the first problem: malformed plan, an operation or channel
/// the executor would not accept, a channel type that does not match the
/// node layout, a threadblock budget exceeded, a deadlock (naming every
/// blocked threadblock), a read of undefined data, a value reduced twice,
/// or an output chunk that does not hold what the collective requires.
Expected<PlanCheckSummary> checkMscclppPlan(const std::string &file,
                                            const std::string &text,
                                            const Collective &collective,
                                            const PlanCheckOptions &options);

} // namespace ccsynth::msccl
