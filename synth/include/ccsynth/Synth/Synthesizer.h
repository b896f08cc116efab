//===- Synthesizer.h - Sketch-guided synthesis of collective schedules ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// synthesize() searches, within a time limit, for the schedule of a
// collective that the simulator predicts fastest at a target buffer size:
// for each candidate chunk split it builds the sketch's routing problem,
// finds route plans (heuristic, Z3 routing, Z3 exact slot model), lowers
// them (reductions as exact inverses of their copy counterparts), orders
// and times them with the list scheduler, merges contiguous transfers
// where that pays, verifies every candidate and simulates it. The result is
// the best verified schedule, with what was proven about it.
//
// Deterministic for a fixed seed as long as no solver call is cut short by
// the time limit.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Synth/Sketch.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ccsynth::synth {

struct SynthOptions {
  CollectiveKind kind = CollectiveKind::AllGather;
  int root = 0;
  bool inPlace = false;
  /// The collective when kind is Custom (copy collectives only; its chunking
  /// is used as is).
  std::optional<Collective> custom;
  /// How many pieces each input chunk is split into; 0 = try candidates
  /// (the sketch's chunkup_candidates, else divisors and multiples of
  /// input_chunkup and small powers of two).
  int chunkup = 0;
  /// Buffer size (nccl-tests' meaning) the schedule is chosen for.
  double targetBytes = 1024.0 * 1024 * 1024;
  /// Wall-clock budget for the whole search, counted from `startedAt`.
  double timeLimitSec = 60;
  /// When the time limit started (the tool passes its own start, so that
  /// loading the topology counts); unset = when synthesize() is called.
  std::optional<std::chrono::steady_clock::time_point> startedAt;
  /// Stop trying further chunk splits once a schedule reaches this fraction
  /// of the lower bound (1 = use the whole time limit unless the bound is
  /// reached).
  double goodEnough = 0.90;
  unsigned seed = 0;
  /// Keep the SMT-LIB text of the encoding behind the result.
  bool keepSmt = false;
  /// Receives progress lines (the tool prints them on stderr).
  std::function<void(const std::string &)> progress;
  /// Also report every evaluated candidate with its simulated time.
  bool debugCandidates = false;
};

struct StageTime {
  std::string name;
  double seconds = 0;
};

/// One evaluated candidate, for the report.
struct CandidateReport {
  std::string method;
  int chunkup = 1;
  int steps = 0;
  double timeUs = 0;
};

/// Largest baseline (or runner-up) a result carries besides its schedule.
inline constexpr size_t kMaxAlternativeTransfers = 20000;

/// How many runners-up a result carries at most.
inline constexpr size_t kMaxRunnersUp = 3;

/// A verified schedule the chunk level ranks below the chosen one.
struct RunnerUp {
  Schedule schedule;
  std::string method;
  int chunkup = 1;
  /// Simulated time and bus bandwidth at the target size (chunk level).
  double timeUs = 0;
  double busbwGBps = 0;
  /// Seconds its verification and simulation took.
  double measureSeconds = 0;
};

struct SynthResult {
  /// False when the sketch makes the collective impossible; `infeasibility`
  /// then says which rank can never receive what, and why.
  bool feasible = true;
  Error infeasibility;

  Schedule schedule;
  std::string method;
  int chunkup = 1;
  /// Simulated time, bus bandwidth and lower bound at the target size, µs.
  double timeUs = 0;
  double busbwGBps = 0;
  double lowerBoundUs = 0;
  /// Its two terms: bandwidth (in proportion to the size) and latency
  /// (the same at every size).
  double lowerBoundBandwidthUs = 0, lowerBoundLatencyUs = 0;
  /// The fastest baseline (ring, tree, direct, hierarchical) at the target
  /// size, which the search treats as a floor to beat; +inf when none
  /// applies (custom collectives).
  double baselineUs = 0;
  std::string baselineName;
  /// The schedule is that baseline itself: no synthesized schedule found
  /// in time was faster (or none was found in time).
  bool isBaseline = false;
  /// The baseline is faster than the schedule but uses links the sketch
  /// forbids, so it was not written in its place.
  bool sketchForbidsBaseline = false;
  /// That baseline (verified) when the sketch allows its links and the
  /// schedule is not it, up to kMaxAlternativeTransfers transfers: the
  /// chunk level ranks it at or below the schedule, but what runs is the
  /// lowered program, so the tool ranks the two again at the step level.
  std::optional<Schedule> allowedBaseline;
  /// The fastest verified schedule of each other chunk split (or method,
  /// where the split is the chosen one's), fastest first, up to
  /// kMaxRunnersUp of up to kMaxAlternativeTransfers transfers each: a
  /// coarser split may lower to a faster program, so the tool ranks them
  /// again at the step level.
  std::vector<RunnerUp> runnersUp;
  /// Seconds one verification and simulation of the chosen schedule took
  /// (what each further size in a summary costs).
  double measureSeconds = 0;
  /// The solver proved the optimum of the model behind the chosen schedule
  /// (every solver call of its search finished) and the search finished
  /// before the time limit.
  bool provenOptimal = false;
  /// The time limit stopped the search early: the schedule is the best
  /// verified one found so far.
  bool timeLimitHit = false;
  std::vector<StageTime> stages;
  std::vector<CandidateReport> candidates;
  std::vector<std::string> notes;
  std::string smt;
  /// The machine as the sketch's switches model it, when that differs from
  /// the topology given (see SwitchModel.h): the times above are on it.
  std::optional<Topology> modelTopology;
};

/// Synthesizes a schedule. Errors are bad input (sketch vs topology,
/// unsupported collective); an infeasible sketch is a result with
/// feasible == false.
Expected<SynthResult> synthesize(const Topology &topo, const Sketch &sketch,
                                 const SynthOptions &options);

} // namespace ccsynth::synth
