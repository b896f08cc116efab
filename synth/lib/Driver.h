//===- Driver.h - The synthesizer's search, as one object -----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Synthesizer-private: a candidate schedule, and the Driver that runs one
// synthesize() call (its deadlines, measured rates, best schedule so far,
// runners-up and baselines). Its members are defined by concern:
//   Budget.cpp         deadlines, cost estimates, the lower bound
//   Evaluate.cpp       lowering, list scheduling, merging, verifying and
//                      simulating one plan; keeping the best
//   ChunkupSearch.cpp  the search for one chunk split
//   BaselineRace.cpp   the baselines raced against the search
//   Synthesizer.cpp    the orchestration over splits (run)
// See docs/synth.md, "Method".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Budget.h"
#include "SearchSpace.h"

#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Synth/ListScheduler.h"
#include "ccsynth/Synth/Lowering.h"
#include "ccsynth/Synth/Search.h"
#include "ccsynth/Synth/Synthesizer.h"

#include <chrono>
#include <cstddef>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace ccsynth::synth::detail {

struct Candidate {
  Schedule schedule;
  double timeUs = std::numeric_limits<double>::infinity();
  double busbwGBps = 0;
  /// Seconds its verification and simulation took.
  double measureSeconds = 0;
  std::string method;
  int chunkup = 1;
  bool proven = false;
  std::string smt;
};

class Driver {
public:
  Driver(const Topology &t, const Sketch &s, const SynthOptions &o)
      : topo(t), sketch(s), opts(o), start(o.startedAt.value_or(Clock::now())) {
  }

  Expected<SynthResult> run();

private:
  const Topology &topo;
  const Sketch &sketch;
  const SynthOptions &opts;
  Clock::time_point start;
  /// The time limit, and how far past it a first schedule may still be
  /// completed (10% of the limit, at least 2 s less what finishing it
  /// takes).
  Clock::time_point deadline, hardDeadline;
  /// The limit's grace: 10% of it, at least 2 s.
  std::chrono::microseconds grace{0};
  /// Verification plus simulation seconds per transfer, as measured so far
  /// (to skip candidates that cannot be measured before the deadline).
  double measureSecPerTransfer = 0;
  /// The same for baselines, building them included.
  double baselineSecPerTransfer = 0;
  /// Lowering and list-scheduling seconds per task, as measured so far
  /// (to skip plans whose candidates cannot be built before the deadline).
  double lowerSecPerTask = 0, listSecPerTask = 0;
  void noteLowered(Clock::time_point t0, size_t tasks);
  void noteListed(double seconds, size_t tasks);
  /// Seconds lowering and list-scheduling `tasks` tasks take: until
  /// measured, 1 µs and 2 µs per task (a 1.5M-task AllReduce on 512 ranks
  /// took 0.7 µs and 1.5 µs on a loaded machine).
  double buildSeconds(double tasks, int replays) const;
  Stages stages;
  SynthResult result;
  Candidate best;
  double bound = 0, boundBandwidthUs = 0, boundLatencyUs = 0;
  std::string lastSmt;
  /// The note that the symmetry ties admitted no plan was given.
  bool tiesNoted = false;

  void say(const std::string &m) const {
    if (opts.progress)
      opts.progress(m);
  }
  /// The limit less what writing the best schedule so far takes (its JSON,
  /// a few µs per transfer: a second for 500k transfers).
  Clock::time_point searchEnd() const;
  bool timeUp() const;
  /// Seconds building the collectives of split 1 took (a split k costs
  /// about k times as much: seconds on 4,096 ranks).
  double setupSecondsPerSplit = 0;
  /// Records what setting up split k took (its collectives, routing
  /// problem and bound).
  void noteSetUp(Clock::time_point t0, int k);
  /// The lower bound, computed once: it does not depend on the split (a
  /// split multiplies the demands and divides the chunk alike).
  bool boundKnown = false;
  void boundOnce(const Collective &target);
  /// Every schedule of an every-pair collective split k ways has at least
  /// k n(n-1) transfers, each built, verified, simulated and written: 2 µs
  /// at the very least (a 1M-transfer AllGather took 3 µs per transfer
  /// to build, verify and simulate, and 1 µs to write).
  double leastSecondsToWrite(int k) const;
  /// Seconds building split k's routing problem takes at the least: about
  /// 14 µs per value routed (an AllToAll on 1,024 ranks routes n^2 = 1M
  /// values and took 14 s; the others route n per split).
  double routingProblemSeconds(int k) const;
  /// Split k's collectives and routing problem can be set up, and a
  /// schedule of it written, in the time left.
  bool canSetUp(int k) const;
  /// A synthesized schedule or a baseline could be written.
  bool haveSchedule() const;
  /// Nothing more may start: past the limit with a schedule to write, or
  /// past the grace without one.
  bool stopNow() const;
  /// A schedule of `transfers` transfers can still be verified and
  /// simulated (after `before` more seconds of other work) before the
  /// deadline (always, while there is none yet and the grace past the
  /// limit remains).
  bool canMeasure(size_t transfers, double before = 0) const;
  /// Nothing left to gain: within 0.2% of the lower bound and no slower
  /// than any baseline, or tied with a baseline that is itself at the
  /// bound (a faster baseline away from it means the search is not done).
  bool atBound() const;
  bool beatsBaselines() const;
  double baselineUs = std::numeric_limits<double>::infinity();
  std::string baselineName;
  Schedule baselineSchedule;
  double baselineBusbw = 0, baselineMeasureSeconds = 0;
  /// Per link: some value may use it under the sketch (from the first
  /// routing problem).
  std::vector<char> sketchLinks;
  double minAlphaUs = 0, maxLinkGBps = 0;
  /// A chunk of the setup's route streams for longer than four of the
  /// fastest latencies on the fastest link.
  bool bandwidthBound(const Setup &setup) const;
  void measureBaselines();
  /// Whether the search may end with what it has (a verified schedule or
  /// baseline) when setting up split k fails, noting why it stopped: not
  /// before a first routing problem has shown that the sketch fits.
  bool sketchFits = false;
  bool keepOnError(int k, const Error &e);
  /// Writes the best baseline instead of a slower (or missing) schedule,
  /// where the sketch allows its links.
  void preferBaseline();

  /// Lowers, orders, merges, verifies and simulates one plan; returns the
  /// best simulated time among its variants.
  double evaluate(const RoutingProblem &problem, const Setup &setup,
                  const Plan &plan, int k);
  Expected<TaskList> lower(const RoutingProblem &problem, const Setup &setup,
                           const Plan &plan, AccumulatorInit init);
  double evaluateList(TaskList list, const Plan &plan, const std::string &tag,
                      int k);
  ListScheduleOptions scheduleOptions() const;
  /// When each plan send ends in the list schedule of the plan's copy
  /// collective (empty when that fails).
  std::vector<double> forwardEnds(const RoutingProblem &problem,
                                  const Plan &plan);
  /// Verifies and simulates; +inf when the candidate fails verification.
  double measure(Schedule &s, const std::string &method, int k, bool proven,
                 const std::string &smt);
  /// Adds a verified schedule the chunk level ranks below the best to the
  /// result's runners-up (see SynthResult::runnersUp).
  void keepRunnerUp(RunnerUp r);
  /// Moves the best schedule so far (if any) to the runners-up, before
  /// another takes its place.
  void retireBest();
  /// In a quick first pass only the heuristic plans are evaluated; the
  /// splits it covered skip them later.
  bool heuristicsOnly = false;
  /// The first replay of the last candidate did not finish in time.
  bool replayCut = false;
  std::set<int> plainHeuristicsDone, railHeuristicsDone, hierarchicalDone,
      quickSplits;
  void searchChunkup(int k, const Setup &setup, const RoutingProblem &problem,
                     Clock::time_point until);
};

} // namespace ccsynth::synth::detail
