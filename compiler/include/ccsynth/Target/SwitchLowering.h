//===- SwitchLowering.h - Switch operations as generated code's steps -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A schedule's switch transfers (switch_reduce, multicast) become the steps
// of switch threadblocks, one per rank and switch, which generated code
// runs next to the point-to-point program lowered through the ccl dialect.
// An operation (the members of one switch group) is issued by one rank:
// a reduction by its destination (multimem.ld_reduce over the group, the
// result stored locally), a multicast by its source (multimem.st to every
// rank of the group). See docs/runtime.md, "Switch threadblocks".
//
// What lowers (anything else is refused at the transfer):
//  - every operation through one switch spans the same ranks, its issuer
//    included, at one address on all of them (NVLS's multicast memory);
//  - a chunk that switch operations read or write on every rank of the
//    group is the issuing rank's alone: no other rank's operation touches
//    it, so one threadblock's program order is all the order they need;
//  - where a point-to-point transfer and a switch operation touch the same
//    chunk of one rank, one of them writing it, that rank is the
//    operation's issuer and the two are at different schedule steps: the
//    issuer's threadblocks wait for each other in schedule order (a
//    reduction whose result crosses the network, a multicast of what
//    arrived from it, as NVLS-tree runs). The other ranks of the group
//    are not ordered with the point-to-point program.
//
// Plain C++ (no MLIR).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Target/MSCCLProgram.h"

#include <map>
#include <tuple>
#include <vector>

namespace ccsynth::msccl {

struct SwitchLowering {
  /// The schedule's point-to-point transfers (and its other fields).
  Schedule pointToPoint;
  /// Per rank: its switch threadblocks (ids unset), one per switch.
  std::vector<std::vector<Threadblock>> threadblocks;
  /// Per rank, switch threadblock and step: the schedule step at which the
  /// step is ordered with the point-to-point program on its rank, or -1
  /// where it shares no chunk with it.
  std::vector<std::vector<std::vector<int>>> orderedAt;
  /// Switch operations and their steps.
  int operations = 0;
  /// Operations ordered with point-to-point transfers.
  int orderedOperations = 0;
};

/// Threadblocks that reach a rank's full share of the switch: NCCL's NVLS
/// (and NVLS-tree) kernels reach peak bandwidth with 4 SMs where the
/// buffers are registered, as the multimem window's are (NVIDIA/nccl
/// issue #1649, a maintainer's answer, 2025-03-20; 16 SMs unregistered,
/// where they also copy into NCCL's buffers). The step model caps one
/// switch threadblock at that fraction of its rank's share.
inline constexpr int kSwitchTbsForPeak = 4;

/// Threadblocks per rank and switch by default: NCCL runs NVLS on 16
/// channels on Hopper (NCCL_NVLS_NCHANNELS), one SM each. The tuned
/// compile also weighs kSwitchTbsForPeak: fewer lanes each carry a larger
/// share, so each operation ends sooner, and where the network waits for a
/// reduction and a multicast for the network (NVLS-tree, NVLS with rail
/// exchanges) the pipeline fills and drains sooner; where a lane's
/// operations wait behind each other (a mix's many chains), more lanes
/// are faster.
inline constexpr int kDefaultSwitchLanes = 16;

/// Lowers the switch transfers of `schedule`, or fails at the first one
/// that does not lower, saying why. A rank's operations on one switch are
/// cut into chains that share chunks (a reduction and the multicast of its
/// result), and the chains spread over at most `lanes` threadblocks, in
/// runs of consecutive chains; consecutive operations on consecutive
/// chunks join into one step.
Expected<SwitchLowering> lowerSwitchTransfers(const Schedule &schedule,
                                              int lanes = kDefaultSwitchLanes);

/// Where a program's steps come from: (rank, threadblock id, step) ->
/// schedule step.
using ScheduleStepMap = std::map<std::tuple<int, int, int>, int>;

/// Appends the switch threadblocks of `lowering` to `algo`'s ranks, after
/// their own threadblocks. `refine`: the program's chunks are the
/// schedule's cut into that many (ccl-instances: chunk x is x*refine ..
/// x*refine + refine - 1), and each switch step covers the same bytes.
///
/// Where switch steps are ordered with the point-to-point program, each
/// waits for the last earlier step of each threadblock of its rank that
/// writes what it reads or touches what it writes, and such later steps
/// wait for it (schedule steps from `steps`, which also receives the
/// switch steps' and follows the steps' new places). A step that waits
/// for several threadblocks gets nops before it, one per extra wait, as
/// MSCCL's programs do. Fails when `steps` lacks a step it needs, or the
/// waits close a cycle.
Status attachSwitchThreadblocks(Algo &algo, const SwitchLowering &lowering,
                                int refine = 1,
                                ScheduleStepMap *steps = nullptr);

/// A switch threadblock step as an MSCCL++ plan runs it (the executor's
/// execution_kernel.hpp): `glres` reads the sum of every group rank's copy
/// of src and stores it at dst on every rank of the group (a reduction
/// together with the multicast of its result back to that address);
/// `gstore` stores the local src at dst on every rank of the group.
struct PlanSwitchOp {
  bool glres = false;
  BufferKind srcBuf = BufferKind::Input; ///< glres: every rank's; else local
  int srcOff = 0;
  BufferKind dstBuf = BufferKind::Output; ///< every rank's
  int dstOff = 0;
  int cnt = 1;
};

/// Per rank and switch threadblock of `lowering`: its steps as MSCCL++
/// plan operations, or the error at the first that has none: a reduction
/// whose result is not multicast back to its place by the same threadblock
/// (MSCCL++ has no reduction into one rank alone), and any operation
/// ordered with point-to-point transfers (plans do not order them yet).
Expected<std::vector<std::vector<std::vector<PlanSwitchOp>>>>
planSwitchOps(const SwitchLowering &lowering);

/// Whether `algo` has switch threadblocks.
bool hasSwitchThreadblocks(const Algo &algo);

} // namespace ccsynth::msccl
