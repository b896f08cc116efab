//===- Verifier.h - Symbolic proof that a schedule implements a collective ===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The verifier executes a schedule on symbolic values: each input chunk holds
// a distinct value, a copy moves a set of values, a reduce forms the union
// and rejects any value counted twice. Steps execute in order; within a step
// every transfer reads the state left by the previous steps, so two writes
// to one slot, or a read of a slot another transfer of the same step writes,
// are races. At the end every constrained output chunk must hold exactly the
// values the collective's postcondition names.
//
// Switch transfers act as groups (TransferOp): a switch reduction writes
// the disjoint union of its members' sources into its destination, a
// multicast copies its source to each member's destination. Their members
// must move the same number of chunks; with a topology, each end must have
// a port on the switch, and NVLS (which reduces and multicasts one address
// of every member's memory) needs the same buffer and index on every rank
// a group reads (a reduction's sources) or writes (a multicast's
// destinations).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Schedule.h"

#include <string>
#include <vector>

namespace ccsynth {

class Topology;

enum class VerifyErrorKind {
  OutOfRange,          ///< rank, buffer index or count outside the buffers
  NoLink,              ///< no topology link between the two ranks
  BadLink,             ///< the named link does not join the two ranks
  BadSwitch,           ///< a switch transfer the switch cannot carry out
  UninitializedRead,   ///< reads a slot that holds no data yet
  ReduceIntoUndefined, ///< reduces into a slot that holds no data yet
  WriteConflict,       ///< two transfers write one slot in the same step
  ReadWriteRace,       ///< a slot is read and written in the same step
  DuplicateReduction,  ///< a value would be counted twice in a reduction
  MissingOutput,       ///< an output chunk was never written
  WrongOutput,         ///< an output chunk holds the wrong set of values
};
const char *toString(VerifyErrorKind kind);

struct VerifyIssue {
  VerifyErrorKind kind;
  /// Index of the offending transfer, or -1 for end-state errors.
  int transfer = -1;
  int step = -1;
  /// The slot that is wrong (rank, buffer, chunk).
  ChunkLoc loc;
  /// Human-readable explanation naming expected and found values.
  std::string message;
};

struct VerifyOptions {
  /// When set, each transfer between two ranks must use an existing link.
  const Topology *topology = nullptr;
  /// Stop after this many issues.
  int maxIssues = 8;
};

struct VerifyResult {
  std::vector<VerifyIssue> issues;
  int steps = 0;
  int transfers = 0;
  bool ok() const { return issues.empty(); }
};

/// Proves (or refutes) that `schedule` implements `schedule.collective`.
VerifyResult verifySchedule(const Schedule &schedule,
                            const VerifyOptions &options = {});

} // namespace ccsynth
