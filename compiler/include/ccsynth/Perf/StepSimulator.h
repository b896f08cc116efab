//===- StepSimulator.h - Timing of the lowered per-threadblock program ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The chunk-level simulator times transfers; this one times what MSCCL
// runs: every threadblock of every rank executing its step list in order,
// once per loop iteration over tiles of the buffer. What it sees that the
// chunk level cannot:
//  - the protocol: LL carries 8 data bytes per 16-byte line (half the
//    link), LL128 120 of 128, Simple all of it; each has its own launch
//    cost, per-step synchronization cost and tile size;
//  - threadblocks and channels: a step streams no faster than one
//    threadblock copies or reduces; threadblocks sending over the same
//    link or shared resource (several channels to one peer, an NVSwitch
//    port) divide it evenly;
//  - MSCCL's bounded connection buffers: the k-th send of a connection
//    waits for the receive that frees room for it (NCCL_STEPS slots,
//    BufferModel's arithmetic);
//  - dependencies (depid/deps, nops) and program order within a
//    threadblock.
//
// Timing of a step: it starts when its threadblock finished the previous
// step, its dependency finished, the first slice of the message it
// receives has arrived and, for a send, its connection has room. A step
// moving b bytes streams at the rate of its threadblock (copy or reduce)
// and, when it sends, of its share of the link; it ends no earlier than
// the message it receives has fully arrived. A message arrives
// max(link alpha, the protocol's step cost) after it is sent, and its
// first slice (half a Simple call; LL and LL128 are line-granular) that
// much plus the slice's streaming time after the send started. The whole
// call pays the protocol's launch cost once. Units: µs, GB/s = 1e9 B/s.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Target/MSCCLPPPacking.h"
#include "ccsynth/Target/MSCCLProgram.h"
#include "ccsynth/Topology/Topology.h"

namespace ccsynth::msccl {

/// Payload bytes one MSCCL call moves per chunk per loop iteration, per
/// protocol (NCCL's default buffers, src/init.cc): Simple 4 MiB / NCCL_STEPS
/// x MSCCL_CHUNKSTEPS (4) = 2 MiB; LL 512 KiB / 8 steps, half of it data =
/// 32 KiB; LL128 4,915,200 B / 8 steps x 120/128 = 576,000 B.
double tileBytes(const std::string &protocol);

struct StepSimOptions {
  /// Buffer size with nccl-tests' meaning; a chunk is bytes / nchunksperloop.
  double bytes = 1 << 20;
  /// nccl-tests' busbw factor of the collective (1 when unknown).
  double busBwFactor = 1;
  /// Loop iterations simulated one by one; beyond them the last
  /// iteration's increment is extrapolated (iterations are identical).
  int maxIterations = 48;
  /// Model MSCCL's bounded connection buffers. Off only to study what
  /// unbounded buffers would give (as CompileOptions::boundedBuffers), and
  /// for programs written as MSCCL++ plans, whose puts land in buffers of
  /// their own.
  bool boundedBuffers = true;
  /// Run the program once over whole chunks instead of tile by tile: an
  /// MSCCL++ plan without pipeline operations moves each chunk in one
  /// operation.
  bool wholeChunks = false;
  /// Check the MSCCL runtime's rules first. Off for programs written as
  /// MSCCL++ plans, which MSCCL's limits (channels, threadblocks per
  /// channel) do not bind.
  bool runtimeRules = true;
  /// Threadblocks that run merged, as in an MSCCL++ plan (null: each on its
  /// own): each plan threadblock runs its steps one at a time in its order,
  /// every loop iteration after the previous one, and counts once among
  /// the senders sharing a link.
  const Packing *packing = nullptr;
  /// Time the program as ccsynth's generated code runs it (runtime.md)
  /// instead of MSCCL's interpreter: each chunk moves in passes of
  /// `tileBytes`; a send puts its data straight into the receiver's memory
  /// and sets a flag once the whole put has landed (no slices, no FIFO); a
  /// receive waits for that flag, and then costs nothing more when the
  /// data landed in its destination (a plain receive into output) or a
  /// local copy or reduction out of its landing slot otherwise; a put into
  /// a landing slot waits for the receiver's credit from the previous pass.
  /// No bounded buffers and no MSCCL runtime rules. Costs as for Simple.
  bool generatedCode = false;
  /// With generatedCode: bytes per chunk per pass (the compile's
  /// --tile-bytes; 1 MiB for CUDA).
  double tileBytes = 1 << 20;
  /// With generatedCode: the fraction of the model's per-threadblock copy
  /// and reduce throughput the kernel reaches with its threads and loads in
  /// flight (codegen::kernelKnobScale); 1 for NCCL's and MSCCL's kernels.
  double tbScale = 1;
  /// Charge MSCCL's interpreter its own costs (StepModel::interpreterStepUs
  /// per step, StepModel::dependencyUs per wait for another threadblock).
  /// Off for NCCL's own kernel, which runs the same hops without an
  /// interpreter; never charged to generated code.
  bool interpreter = true;
  /// Record the critical path (StepSimResult::criticalPath).
  bool criticalPath = false;
};

/// One step of a program's critical path: the chain of step ends, from the
/// last to finish back to the first, each of which the next waited for.
struct CriticalStep {
  /// What this step waited for last before it started.
  enum class After {
    Nothing,    ///< the first step of the path
    Order,      ///< the previous step of its threadblock (or pass)
    Dependency, ///< a step of another threadblock of its rank
    Arrival,    ///< the message it receives (its sender's end + latency)
    Room,       ///< room at the receiver: the read of an earlier message
                ///< (MSCCL's buffers, or a landing slot's credit)
    Slices,     ///< the first slices of the message it receives (MSCCL)
  };
  int rank = 0;
  int tb = 0;
  long long pass = 0;
  int step = 0;
  StepType type = StepType::Nop;
  int count = 1;
  double startUs = 0; ///< from the kernel's start (after its launch)
  double endUs = 0;
  /// The threadblock's share of what it sends over (GB/s; 0 for local).
  double rateGBps = 0;
  After after = After::Nothing;
};

struct StepSimResult {
  double timeUs = 0;
  double algbwGBps = 0;
  double busbwGBps = 0;
  /// What the prediction assumed.
  std::string protocol;
  int channels = 0;
  /// Most threadblocks on one rank.
  int threadblocksPerRank = 0;
  /// Loop iterations over tiles, and bytes per chunk in each.
  long long iterations = 1;
  double chunkBytesPerIteration = 0;
  double launchUs = 0;
  /// With StepSimOptions::criticalPath: the last step to end, then the
  /// one it waited for, and so on back to a step that waited for none,
  /// over the iterations simulated one by one (`simulated` of
  /// `iterations`; the rest are extrapolated from the last).
  std::vector<CriticalStep> criticalPath;
  long long simulated = 0;
};

const char *toString(CriticalStep::After after);

/// Times `algo` on `topology`. Fails with the reason when the program
/// breaks a runtime rule, deadlocks on bounded buffers, sends between
/// ranks with no link, or names an unknown protocol.
Expected<StepSimResult> simulateSteps(const Algo &algo,
                                      const Topology &topology,
                                      const StepSimOptions &options);

/// Times `algo` once per entry of `perSize` (the same program at several
/// buffer sizes), checking the runtime's rules and deadlock freedom once:
/// those checks read the program and the entries' runtimeRules,
/// generatedCode, boundedBuffers and packing, which must be the same in
/// every entry (an error otherwise).
Expected<std::vector<StepSimResult>>
simulateStepsAt(const Algo &algo, const Topology &topology,
                const std::vector<StepSimOptions> &perSize);

} // namespace ccsynth::msccl
