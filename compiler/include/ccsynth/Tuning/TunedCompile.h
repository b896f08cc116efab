//===- TunedCompile.h - The three tuned compiles, as plans ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What `ccsynth compile` writes by default, for each kind of output: one
// MSCCL XML, an MSCCL algorithm directory tuned per size, or generated
// code. Each call takes the schedule, the machine it is timed on, the
// user's compile options and what the user fixed by hand, runs the tuner
// (Tuning.h) and returns a plan: what to write, the schedule it came from,
// and the notes that say why. The calls never print and never write
// files; the CLI prints `messages` as they are and writes the output.
// The design is in docs/compiler.md ("The tuned compile").
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Target/MSCCLDir.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Tuning/Tuning.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace ccsynth::tuning {

/// What the user fixed by hand, which the tuned compiles leave as given.
struct UserChoices {
  /// --instances / --protocol were given (they fix that choice).
  bool instances = false;
  bool protocol = false;
  /// Without --no-fallback: NCCL's programs are candidates and the output
  /// serves only the sizes where it is at least as fast as NCCL.
  bool fallback = true;
  /// No --tile-bytes: generated code weighs the tiles of
  /// generatedTileCandidates.
  bool tileOpen = true;
  /// --cuda-threads / --cuda-loads (0: open).
  int cudaThreads = 0;
  int cudaLoads = 0;
};

/// "[1K, 2M)" for the sizes minBytes..maxBytes (maxBytes 0: "no bound").
std::string byteRange(long long minBytes, long long maxBytes);

/// Whether `sched` has too many transfers to tune; if so, a note ending
/// "`byHand` by hand" goes to `log`.
bool tooLargeToTune(const Schedule &sched, const char *byHand,
                    std::ostream &log);

/// The configurations a tuned compile tries: every instance count and
/// protocol, except those the user fixed (then `c`'s).
TuneRequest tuningRequest(const UserChoices &user, const CompileOptions &c,
                          const Schedule &sched);

/// The tuned compile of one MSCCL XML: when the user left instances or
/// protocol open, every configuration is timed by the step-level model
/// and the best one (or NCCL's program, when that beats them all) is
/// written, serving only the sizes where it is at least as fast as NCCL
/// unless the user gave a range or --no-fallback.
struct MscclXmlPlan {
  /// The XML to write instead of the untuned compile's (none: keep it).
  std::optional<std::string> output;
  /// The schedule the output came from, where it is not the input (NCCL's
  /// program, or the input re-cut on a power-of-two chunk grid).
  std::optional<Schedule> schedule;
  /// Nothing is to be written, and why.
  std::optional<Error> error;
  /// What the tuner says, line by line, as ccsynth prints it.
  std::string messages;
};
MscclXmlPlan tuneForMscclXml(const Schedule &sched, const Topology &topo,
                             const CompileOptions &c, const UserChoices &user);

/// `--target msccl-dir` of one schedule without --split or --protocol: the
/// tuned compile per size. Every configuration (and NCCL's program for the
/// collective) is timed at 1K, 4K, ..., 1G within [lo, hi]; consecutive
/// sizes with the same fastest configuration form one range (boundaries at
/// the power of two between them) and each range gets that configuration's
/// XML.
struct MscclDirPlan {
  /// Whether the entries are the plan (else the untuned path runs).
  bool tuned = false;
  /// One XML per size range, in order (`input` names their source).
  std::vector<msccl::DirEntry> entries;
  std::optional<Error> error;
  std::string messages;
};
MscclDirPlan tuneForMscclDir(const Schedule &sched, const Topology &topo,
                             const CompileOptions &c, long long lo,
                             long long hi, const UserChoices &user,
                             const std::string &input);

/// The tuned compile of generated code (--target cuda, and plugins for the
/// CUDA backend): every configuration (instances, fusion, local
/// threadblocks, pipeline parts, phases on separate channels, tiles and
/// kernel knobs the user left open) is timed by the step model's variant
/// for generated code, and the fastest whose code fits
/// kGeneratedCodeBudget is written. Generated code moves data one way (no
/// LL protocols) and is not replaced by NCCL's program: a call it does not
/// serve goes to NCCL through the interposer anyway. With `fallback`, the
/// program serves only the sizes where it is faster than what NCCL itself
/// reaches on the machine (its ring or tree, or NVLS, NVLS-tree, CollNet
/// or NVLS with SHARP where the switches allow them; ncclReachUs): its
/// byte ranges say so, and the interposer sends every other call to NCCL.
/// Faster nowhere, nothing is written. `loadsCap` bounds the loads in
/// flight it weighs (0: none).
struct GeneratedCodePlan {
  /// Nothing is to be written (`messages` ends with the error that says
  /// why).
  bool nothingWritten = false;
  /// The code to write instead of the untuned compile's (none: keep it).
  std::optional<std::string> output;
  /// The schedule the output came from, where it is not the input.
  std::optional<Schedule> schedule;
  std::string messages;
};
GeneratedCodePlan tuneForGeneratedCode(const Schedule &sched,
                                       const Topology &topo,
                                       const CompileOptions &c, int loadsCap,
                                       const UserChoices &user);

} // namespace ccsynth::tuning
