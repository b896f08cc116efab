//===- MSCCLToSchedule.h - Recover a chunk-level schedule from MSCCL XML --===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Runs an MSCCL program symbolically and records every data movement as a
// chunk-level transfer, so the core verifier can prove that an exported XML
// file (or any MSCCL algorithm) implements its collective. A send captures
// its data when it runs and the matching receive stores it when it runs;
// when the sender overwrites the range in between, the importer first
// copies it to a fresh scratch chunk, exactly as the runtime's FIFO would
// hold it. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Target/MSCCLProgram.h"

namespace ccsynth {

/// The built-in collective an MSCCL algorithm claims to implement, from its
/// coll, ngpus and inplace (rooted collectives use `root`). The chunk
/// factor comes from nchunksperloop, which the runtime cuts count x
/// sizeMultiplier elements into (sizeMultiplier is ngpus for allgather,
/// reducescatter and alltoall, else 1); gather and scatter, and files whose
/// nchunksperloop does not divide, fall back to gpu 0's buffer sizes.
Expected<Collective> inferMscclCollective(const msccl::Algo &algo,
                                          int root = 0);

/// Converts a program to a schedule of `collective` (one transfer per
/// step, in an order the program allows). Fails with a message naming
/// ranks, threadblocks and steps when the program breaks a runtime rule,
/// mismatches sends and receives, deadlocks, or has two threadblocks of one
/// rank touch a chunk without a dependency ordering them (a data race).
Expected<Schedule> mscclToSchedule(const msccl::Algo &algo,
                                   const Collective &collective);

/// An MSCCL XML file as a schedule: read as MSCCLang and older msccl-tools
/// write it (legacy `<algo>` attributes accepted, the aliased buffer of an
/// in-place algorithm declared with 0 chunks), collective inferred, program
/// run symbolically. `notes` receives what was assumed (defaults of
/// missing attributes, the root of a rooted collective).
Expected<Schedule> importMscclXml(const std::string &file,
                                  const std::string &text,
                                  std::vector<Error> *notes = nullptr);

} // namespace ccsynth
