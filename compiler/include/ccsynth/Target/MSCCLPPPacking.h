//===- MSCCLPPPacking.h - MSCCL threadblocks packed into MSCCL++ ones -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// MSCCL++'s executor launches all of a rank's threadblocks at once and they
// wait on each other (a `wait` for a peer's signal, a `sem_acquire` for
// another threadblock's release), so every one must be resident: at most
// the GPU's SM count. The lowered program has one MSCCL threadblock per
// connection and direction, which can be more. A plan threadblock may run
// several of them: it drives all their channels and runs their steps
// interleaved. This file decides which ones share a plan threadblock and
// in what order it runs their steps.
//
// Why the interleaving cannot deadlock. Let G be the wait graph of the
// whole program (every rank) with unbounded buffers: one node per step,
// edges for program order within an MSCCL threadblock, `depid`/`deps`
// dependencies and each send to its matching receive. ccl-check-deadlock
// proves G acyclic (MSCCL++ puts land in buffers of their own, so no send
// waits for room). Give every step its level: 0 when it waits for nothing,
// else one more than the largest level of its predecessors; every edge of
// G goes from a lower level to a higher one. Every plan threadblock runs
// its steps in increasing level (ties broken by threadblock and step
// index), which keeps each member's program order. In the plan, the only
// operations that block on another threadblock are `wait` (for the signal
// of the matching send) and `sem_acquire` (for the release after a
// dependency's producer), each the image of an edge of G; puts, signals,
// flushes (the proxy's progress), copies, reductions, releases and nops
// (a barrier within one threadblock) never do. Suppose some threadblocks
// blocked forever; among the steps they are blocked at take one, s, of
// least level. It waits for a step p with an edge p -> s, so level(p) <
// level(s), and p has not run. p's plan threadblock is therefore blocked
// at a step q it runs no later than p: level(q) <= level(p) < level(s),
// against the choice of s. So no run of the plan deadlocks. Dependencies
// between steps that end up in one plan threadblock hold by program order
// (a barrier separates the steps) and need no semaphore.
//
// Each MSCCL threadblock stays whole in one plan threadblock: a memory
// channel's signal and wait state lives with the one threadblock that
// drives each direction, so no connection direction is shared.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Target/MSCCLProgram.h"

#include <functional>
#include <vector>

namespace ccsynth::msccl {

/// One threadblock of an MSCCL++ plan: the MSCCL threadblocks of one rank
/// it runs (ids, ascending) and their steps in the order it runs them.
struct PackedThreadblock {
  std::vector<int> members;
  std::vector<StepRef> steps;
};

/// Per rank (indexed by rank): the plan threadblocks, in plan id order.
struct Packing {
  std::vector<std::vector<PackedThreadblock>> ranks;

  /// Whether some plan threadblock runs more than one MSCCL threadblock.
  bool merges() const;
  /// Plan threadblocks of `rank`.
  int threadblocks(int rank) const { return (int)ranks[rank].size(); }
};

/// Every step's level in the wait graph with unbounded buffers (program
/// order, dependencies, messages): 0 when it waits for nothing, else one
/// more than the largest level of its predecessors.
class StepLevels {
public:
  /// Fails when the graph has a cycle.
  static Expected<StepLevels> compute(const Algo &algo,
                                      const Matching &matching);
  /// The level of an existing step.
  int of(StepRef ref) const;
  /// Orders steps by (level, rank, threadblock, step): a linear extension
  /// of the wait graph.
  bool before(StepRef a, StepRef b) const;

private:
  WaitGraph graph;
  std::vector<int> level;
};

/// One plan threadblock per MSCCL threadblock, steps in program order.
Packing identityPacking(const Algo &algo);

/// Checks a packing against the argument of the file comment: every MSCCL
/// threadblock of a rank runs in exactly one of its plan threadblocks,
/// which runs all its steps (and only its members') in program order, and
/// the wait graph (unbounded buffers) with each plan threadblock's order
/// added has no cycle. Fails naming the first problem.
Status checkPacking(const Algo &algo, const Matching &matching,
                    const Packing &packing);

struct PackOptions {
  /// Most plan threadblocks per rank; ranks within it are not packed.
  int maxThreadblocksPerRank = 0;
  /// Most operations of a plan threadblock.
  int maxOperations = 64;
  /// The operations a candidate plan threadblock of `rank` needs, or more
  /// than maxOperations when its channels or remote buffers do not fit the
  /// executor. Never null.
  std::function<int(int rank, const PackedThreadblock &)> operations;
};

/// Merges the MSCCL threadblocks of every rank that has more than the
/// budget into at most that many plan threadblocks, each run in level
/// order (see the file comment), within `operations`' limit. A rank at most
/// twice over the budget merges pairs one at a time, the best first: most
/// dependencies between them (each such merge saves semaphores and costs
/// little parallelism: those steps wait for each other anyway), then least
/// overlap of their level ranges, then most channels in common. Otherwise,
/// or when no pair fits, threadblocks are list scheduled in level order
/// onto the budget: each joins the plan threadblock it shares most
/// dependencies with, else a new one while the budget allows, else the one
/// whose steps end earliest; if that fails, the same with groups first
/// joined along dependencies (up to a quarter, half, three quarters and
/// all of the operations). Ranks within the budget keep one plan
/// threadblock per MSCCL threadblock. Fails, naming the rank (also stored
/// in `failedRank` when given), when no packing is found.
Expected<Packing> packThreadblocks(const Algo &algo, const Matching &matching,
                                   const PackOptions &options,
                                   int *failedRank = nullptr);

} // namespace ccsynth::msccl
