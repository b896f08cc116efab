//===- LoweringConfig.h - The tunable knobs of a lowering -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// One configuration of the lowering from a schedule to a program: the
// choices the tuned compile weighs (Tuning/Tuning.h) and that the pipeline
// and code generation read (Compile.h). CompileOptions and the tuner's
// candidates both are a LoweringConfig, so a chosen candidate is handed to
// the compile as one value.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace ccsynth {

struct LoweringConfig {
  /// MSCCL instances (copies of the program on channels of their own).
  int instances = 1;
  /// The protocol (Simple, LL128, LL; empty: the algorithm's own).
  std::string protocol;
  /// Fuse receive/send pairs (rcs, rrcs, ...). A fused step ties its send
  /// and receive peers to one threadblock, which then also runs every
  /// other step with either peer one after another: irregular schedules
  /// often run faster unfused.
  bool fuse = true;
  /// With `fuse`: also fuse a receive with the send that forwards it (rcs,
  /// rrs, rrcs); off, only receive-and-reduce steps (rrc) are made, which
  /// tie no send peer to a receive peer.
  bool fuseForward = true;
  /// Most peerless threadblocks per instance for local copies and
  /// reductions: those writing different chunks run side by side
  /// (ccl-assign-threadblocks local-tbs); above 1, reduction chains are
  /// turned into trees.
  int localTbs = 1;
  /// Chunk-pipelining parts.
  int pipeline = 1;
  /// A reduction's spreading transfers (AllReduce's second half) on
  /// channels of their own (ccl-split-phases).
  bool splitPhases = false;
  /// Generated code and MSCCL++ plans: the most switch threadblocks per
  /// rank and switch (msccl::lowerSwitchTransfers' lanes; 0: its default).
  int switchLanes = 0;

  LoweringConfig &lowering() { return *this; }
  const LoweringConfig &lowering() const { return *this; }
};

} // namespace ccsynth
