//===- SwitchLowering.h - Switch operations as generated code's steps -----===//
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
//  - the point-to-point transfers touch no chunk a switch operation reads
//    or writes (the two programs share no data, so they need no order
//    between them);
//  - a chunk that switch operations read or write on every rank of the
//    group is the issuing rank's alone: no other rank's operation touches
//    it, so one threadblock's program order is all the order they need.
//
// Plain C++ (no MLIR).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Core/Diagnostic.h"
#include "ccsynth/Core/Schedule.h"
#include "ccsynth/Target/MSCCLProgram.h"

#include <vector>

namespace ccsynth::msccl {

struct SwitchLowering {
  /// The schedule's point-to-point transfers (and its other fields).
  Schedule pointToPoint;
  /// Per rank: its switch threadblocks (ids unset), one per switch.
  std::vector<std::vector<Threadblock>> threadblocks;
  /// Switch operations and their steps.
  int operations = 0;
};

/// Threadblocks per rank and switch by default: NCCL runs NVLS on 16
/// channels on Hopper (NCCL_NVLS_NCHANNELS), one SM each.
inline constexpr int kDefaultSwitchLanes = 16;

/// Lowers the switch transfers of `schedule`, or fails at the first one
/// that does not lower, saying why. A rank's operations on one switch are
/// cut into chains that share chunks (a reduction and the multicast of its
/// result), and the chains spread over at most `lanes` threadblocks, in
/// runs of consecutive chains; consecutive operations on consecutive
/// chunks join into one step.
Expected<SwitchLowering> lowerSwitchTransfers(const Schedule &schedule,
                                              int lanes = kDefaultSwitchLanes);

/// Appends the switch threadblocks of `lowering` to `algo`'s ranks, after
/// their own threadblocks. `refine`: the program's chunks are the
/// schedule's cut into that many (ccl-instances: chunk x is x*refine ..
/// x*refine + refine - 1), and each switch step covers the same bytes.
void attachSwitchThreadblocks(Algo &algo, const SwitchLowering &lowering,
                              int refine = 1);

/// Whether `algo` has switch threadblocks.
bool hasSwitchThreadblocks(const Algo &algo);

} // namespace ccsynth::msccl
