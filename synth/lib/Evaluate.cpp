//===- Evaluate.cpp - Evaluating one route plan ---------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The Driver's evaluation of one route plan: lowering it (lower), keeping
// the best schedule and the runners-up (keepRunnerUp, retireBest),
// verifying and simulating a candidate (measure), the accumulator variants
// of a reduction (evaluate), the list scheduler's options and the mirrored
// priorities of a reduction tree (scheduleOptions, forwardEnds), and the
// replays and merges of one task list (evaluateList). See docs/synth.md,
// "Method" (lowering, ordering and contiguity, selection).
//
//===----------------------------------------------------------------------===//
#include "Driver.h"

#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Schedule/Verifier.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace ccsynth::synth::detail {

namespace {

/// Priorities that dispatch a reduction tree's transfers in the reverse
/// order of their forward sends' ends (`ends`, per plan send).
void mirrorPriorities(TaskList &list, const std::vector<double> &ends,
                      const Plan &plan) {
  double last = 0;
  int maxSlot = 0;
  for (double e : ends)
    last = std::max(last, e);
  for (const PlanSend &s : plan.sends)
    maxSlot = std::max(maxSlot, s.slot);
  if (last <= 0)
    return;
  for (Task &t : list.tasks)
    if (t.reversed && t.planSend >= 0)
      t.prio = maxSlot * (1 - ends[t.planSend] / last);
}

} // namespace

Expected<TaskList> Driver::lower(const RoutingProblem &problem,
                                 const Setup &setup, const Plan &plan,
                                 AccumulatorInit init) {
  switch (setup.lowering) {
  case Setup::Lowering::Inverse:
    return lowerInverse(problem, plan, *setup.target, init);
  case Setup::Lowering::AllReduce:
    return lowerAllReduce(problem, plan, *setup.target, init);
  case Setup::Lowering::GatherReduce:
    return lowerGatherReduce(problem, plan, *setup.target);
  case Setup::Lowering::AllReduceGather:
    return lowerAllReduceGather(problem, plan, *setup.target);
  case Setup::Lowering::Copy:
    break;
  }
  return lowerCopy(problem, plan);
}

void Driver::keepRunnerUp(RunnerUp r) {
  if (r.schedule.transfers.size() > kMaxAlternativeTransfers ||
      !std::isfinite(r.timeUs))
    return;
  auto &list = result.runnersUp;
  // One per chunk split (the fastest), and one per method for the split of
  // the schedule chosen so far.
  auto same = [&](const RunnerUp &x) {
    return x.chunkup == r.chunkup &&
           (r.chunkup != best.chunkup || x.method == r.method);
  };
  // Methods of one split that tie to the simulator's precision built the
  // same program (the hierarchical routes name several): one is enough,
  // leaving the places to other splits.
  if (std::any_of(list.begin(), list.end(), [&](const RunnerUp &x) {
        return x.chunkup == r.chunkup &&
               std::abs(x.timeUs - r.timeUs) <= 1e-9 * r.timeUs;
      }))
    return;
  auto it = std::find_if(list.begin(), list.end(), same);
  if (it != list.end()) {
    if (it->timeUs <= r.timeUs)
      return;
    list.erase(it);
  }
  auto at = std::find_if(list.begin(), list.end(), [&](const RunnerUp &x) {
    return x.timeUs > r.timeUs;
  });
  if ((size_t)(at - list.begin()) >= kMaxRunnersUp)
    return;
  list.insert(at, std::move(r));
  if (list.size() > kMaxRunnersUp)
    list.pop_back();
}

void Driver::retireBest() {
  if (std::isfinite(best.timeUs))
    keepRunnerUp({std::move(best.schedule), best.method, best.chunkup,
                  best.timeUs, best.busbwGBps, best.measureSeconds});
}

double Driver::measure(Schedule &s, const std::string &method, int k,
                       bool proven, const std::string &smt) {
  if (!canMeasure(s.transfers.size()))
    return std::numeric_limits<double>::infinity();
  auto t0 = Clock::now();
  s.name = std::string(toString(opts.kind)) + "-" + topo.name + "-synth";
  s.topology = topo.name;
  s.origin = "synth";
  VerifyOptions vo;
  vo.topology = &topo;
  VerifyResult vr = verifySchedule(s, vo);
  if (!vr.ok()) {
    // A bug in a lowering must not reach the user; record and skip.
    result.notes.push_back("internal: a " + method +
                           " candidate failed verification and was dropped: " +
                           vr.issues.front().message);
    stages.add("verify+simulate", since(t0));
    return std::numeric_limits<double>::infinity();
  }
  SimOptions so;
  so.bytes = opts.targetBytes;
  so.until = haveSchedule() ? searchEnd() : hardDeadline;
  so.topologyValidated = true;
  auto sim = simulate(s, topo, so);
  stages.add("verify+simulate", since(t0));
  if (!sim) {
    if (Clock::now() >= *so.until)
      result.timeLimitHit = true;
    else
      result.notes.push_back("internal: simulating a " + method +
                             " candidate failed: " + sim.error().message);
    return std::numeric_limits<double>::infinity();
  }
  double t = sim->timeUs;
  double took = since(t0);
  measureSecPerTransfer = std::max(
      measureSecPerTransfer, took / std::max<size_t>(1, s.transfers.size()));
  if (opts.debugCandidates)
    say("candidate " + method + ": " + fmt(t, 2) + " us");
  result.candidates.push_back({method, k, s.numSteps(), t});
  bool better = t < best.timeUs * (1 - 1e-9) ||
                (proven && !best.proven && t <= best.timeUs * (1 + 1e-9));
  if (!better) {
    keepRunnerUp({std::move(s), method, k, t, sim->busbwGBps, took});
  } else {
    retireBest();
    // The caller is done with it: a move, not a copy of a schedule whose
    // collective alone can take hundreds of MB.
    best.schedule = std::move(s);
    best.timeUs = t;
    best.busbwGBps = sim->busbwGBps;
    best.measureSeconds = took;
    best.method = method;
    best.chunkup = k;
    best.proven = proven;
    best.smt = smt;
  }
  return t;
}

double Driver::evaluate(const RoutingProblem &problem, const Setup &setup,
                        const Plan &plan, int k) {
  bool reduction = setup.lowering == Setup::Lowering::Inverse ||
                   setup.lowering == Setup::Lowering::AllReduce;
  double bestHere = std::numeric_limits<double>::infinity();
  // Past the time limit, one verified schedule is enough; past the grace,
  // lowering another candidate only overruns the limit.
  if (stopNow() || (timeUp() && std::isfinite(best.timeUs)))
    return bestHere;
  // A reduction tree replayed as the mirror image in time of the copy
  // tree's schedule: on symmetric links that is a schedule of the same
  // length.
  // A plan whose first candidate cannot be lowered, replayed (twice with
  // the forward replay of a mirrored reduction) and measured before the
  // deadline is not started: on 512 ranks that takes longer than a short
  // limit.
  double tasks = (double)plan.sends.size() *
                 (setup.lowering == Setup::Lowering::Copy ? 1 : 3);
  if (!canMeasure((size_t)tasks, buildSeconds(tasks, reduction ? 2 : 1))) {
    say("skipped a " + plan.method + " plan: about " +
        std::to_string((long long)tasks) +
        " transfers cannot be scheduled and verified in the time left");
    result.timeLimitHit = true;
    return bestHere;
  }
  replayCut = false;
  std::vector<double> ends;
  if (reduction)
    ends = forwardEnds(problem, plan);
  for (AccumulatorInit init :
       {AccumulatorInit::AfterFirstArrival,
        AccumulatorInit::AfterFirstArrivalReduceOnArrival,
        AccumulatorInit::Early}) {
    if (!reduction && init != AccumulatorInit::AfterFirstArrival)
      break;
    if (stopNow() || (timeUp() && std::isfinite(best.timeUs)))
      break;
    // Early copies of every accumulator cost local bandwidth that only
    // pays off when latency dominates.
    if (init == AccumulatorInit::Early && bandwidthBound(setup))
      break;
    auto tl = Clock::now();
    auto list = lower(problem, setup, plan, init);
    if (list)
      noteLowered(tl, list->tasks.size());
    if (!list) {
      result.notes.push_back("internal: lowering a " + plan.method +
                             " plan failed: " + list.error().message);
      return bestHere;
    }
    std::string tag =
        (setup.label.empty() ? "" : ", " + setup.label) +
        (init == AccumulatorInit::Early ? ", accumulators initialized early"
         : init == AccumulatorInit::EarlyReduceOnArrival
             ? ", accumulators initialized early, reducing on arrival"
         : init == AccumulatorInit::AfterFirstArrivalReduceOnArrival
             ? ", reducing on arrival"
             : "");
    if (!ends.empty()) {
      mirrorPriorities(*list, ends, plan);
      tag += ", mirrored";
    }
    bestHere = std::min(bestHere, evaluateList(list.take(), plan, tag, k));
    // The other accumulator variants replay the same plan at about the
    // same cost: when its replay ran out of time, so would theirs (15 s
    // each on 1,024 ranks).
    if (replayCut)
      break;
  }
  return bestHere;
}

ListScheduleOptions Driver::scheduleOptions() const {
  ListScheduleOptions lo;
  lo.bytes = opts.targetBytes;
  // One replay may take at most a twentieth of the time limit (at least
  // two seconds): very concurrent candidates are not worth more.
  // Past the time limit only the first schedule may still be completed.
  lo.deadline =
      std::isfinite(best.timeUs)
          ? std::min(searchEnd(),
                     Clock::now() +
                         std::chrono::microseconds(
                             (long long)(std::max(2.0, opts.timeLimitSec / 20) *
                                         1e6)))
          : hardDeadline;
  return lo;
}

std::vector<double> Driver::forwardEnds(const RoutingProblem &problem,
                                        const Plan &plan) {
  auto t0 = Clock::now();
  std::vector<double> ends;
  auto fwd = lowerCopy(problem, plan);
  if (fwd) {
    noteLowered(t0, fwd->tasks.size());
    auto t1 = Clock::now();
    auto timed = listSchedule(*fwd, topo, scheduleOptions());
    if (timed)
      noteListed(since(t1), fwd->tasks.size());
    if (timed) {
      ends.assign(plan.sends.size(), 0);
      for (size_t i = 0; i < fwd->tasks.size(); ++i)
        if (fwd->tasks[i].planSend >= 0)
          ends[fwd->tasks[i].planSend] = timed->end[i];
    }
  }
  stages.add("schedule", since(t0));
  return ends;
}

double Driver::evaluateList(TaskList taskList, const Plan &plan,
                            const std::string &tag, int k) {
  auto list = &taskList;
  if (sketch.enforceOrdering) {
    // A sender's own chunks go over the network before those it relays.
    for (Task &t : list->tasks) {
      const Transfer &tr = t.tr;
      if (tr.src.rank != tr.dst.rank &&
          !topo.sameNode(tr.src.rank, tr.dst.rank) &&
          tr.src.buffer == BufferKind::Input)
        t.prio -= 1e6;
    }
  }
  double bestHere = std::numeric_limits<double>::infinity();
  // Two dispatch rules: the plan's slot order, and critical path first
  // (which only changes priorities: the plan's are kept to restore them).
  std::optional<TimedTasks> timed;
  double listSeconds = 0;
  std::vector<double> planPrios;
  for (int rule = 0; rule < 2; ++rule) {
    // Past the time limit, one verified schedule is enough; another
    // replay is not started when it cannot be measured in time.
    if (rule > 0 && std::isfinite(best.timeUs) &&
        (timeUp() || !canMeasure(list->tasks.size(), listSeconds)))
      break;
    // Each replay gets its own share of the time.
    ListScheduleOptions lo = scheduleOptions();
    auto t1 = Clock::now();
    if (rule == 1) {
      for (const Task &t : list->tasks)
        planPrios.push_back(t.prio);
      prioritizeCriticalPath(*list, topo, lo);
    }
    auto tt = listSchedule(*list, topo, lo);
    listSeconds = since(t1);
    stages.add("schedule", since(t1));
    if (since(t1) > 1.0)
      say("list scheduling " + std::to_string(list->tasks.size()) +
          " transfers took " + fmt(since(t1)) + " s");
    auto restore = [&] {
      for (size_t i = 0; i < planPrios.size(); ++i)
        list->tasks[i].prio = planPrios[i];
    };
    if (!tt) {
      say("skipped a " + plan.method + " candidate: " + tt.error().message);
      if (rule == 0) {
        replayCut = true;
        return bestHere;
      }
      restore();
      break;
    }
    noteListed(listSeconds, list->tasks.size());
    Schedule s = toSchedule(*list, *tt);
    double t =
        measure(s, plan.method + tag + (rule ? ", critical path first" : ""), k,
                plan.provenOptimal, plan.smt);
    if (t < bestHere) {
      bestHere = t;
      timed = std::move(*tt);
    } else if (rule == 1) {
      restore();
    }
  }
  if (!timed)
    return bestHere;
  // Fewer latencies: merge contiguous transfers where that is cheap, then
  // wherever possible.
  size_t lastSize = list->tasks.size();
  for (double ratio : {1.0, 1e18}) {
    if (timeUp() && best.timeUs < std::numeric_limits<double>::infinity())
      break;
    auto t1 = Clock::now();
    TaskList merged =
        mergeContiguous(*list, *timed, topo, opts.targetBytes, ratio);
    if (merged.tasks.size() == list->tasks.size() ||
        merged.tasks.size() == lastSize) {
      stages.add("schedule", since(t1));
      continue;
    }
    lastSize = merged.tasks.size();
    if (std::isfinite(best.timeUs) &&
        !canMeasure(merged.tasks.size(), listSeconds)) {
      stages.add("schedule", since(t1));
      break;
    }
    auto mt = listSchedule(merged, topo, scheduleOptions());
    stages.add("schedule", since(t1));
    if (since(t1) > 1.0)
      say("list scheduling " + std::to_string(merged.tasks.size()) +
          " merged transfers took " + fmt(since(t1)) + " s");
    if (!mt)
      continue;
    Schedule ms = toSchedule(merged, *mt);
    bestHere = std::min(bestHere, measure(ms, plan.method + tag + ", merged", k,
                                          plan.provenOptimal, plan.smt));
  }
  if (!plan.smt.empty())
    lastSmt = plan.smt;
  return bestHere;
}

} // namespace ccsynth::synth::detail
