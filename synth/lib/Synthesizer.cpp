//===- Synthesizer.cpp - Sketch-guided synthesis of collective schedules --===//
#include "ccsynth/Synth/Synthesizer.h"
#include "ccsynth/Synth/SwitchModel.h"

#include "ccsynth/Core/Baselines.h"
#include "ccsynth/Core/LowerBound.h"
#include "ccsynth/Core/Schedule.h"
#include "ccsynth/Core/Simulator.h"
#include "ccsynth/Core/Verifier.h"
#include "ccsynth/Synth/ListScheduler.h"
#include "ccsynth/Synth/Lowering.h"
#include "ccsynth/Synth/Search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>

namespace ccsynth::synth {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string fmt(double x, int prec = 2) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(prec);
  os << x;
  return os.str();
}

/// Seconds spent per stage, in first-use order.
class Stages {
public:
  void add(const std::string &name, double s) {
    for (StageTime &st : list)
      if (st.name == name) {
        st.seconds += s;
        return;
      }
    list.push_back({name, s});
  }
  std::vector<StageTime> list;
};

/// One way to build the collective: which copy collective's routes are
/// searched, and how a route plan becomes the target's transfers.
struct Setup {
  enum class Lowering {
    Copy,
    Inverse,
    AllReduce,
    GatherReduce,
    AllReduceGather
  };
  Collective route; ///< routed copy collective
  /// What the schedule implements (shared by a split's families: an
  /// AllReduce's conditions take hundreds of MB on 512 ranks).
  std::shared_ptr<const Collective> target;
  Lowering lowering = Lowering::Copy;
  std::string label; ///< for reports ("" for the main family)
};

/// The families of routes for `o.kind` with chunk split k: the main one
/// first (its feasibility decides the sketch's).
Expected<std::vector<Setup>> makeSetups(const SynthOptions &o, int n, int k) {
  std::vector<Setup> out;
  if (o.kind == CollectiveKind::Custom) {
    out.push_back({*o.custom, std::make_shared<const Collective>(*o.custom),
                   Setup::Lowering::Copy, ""});
    return out;
  }
  auto target = Collective::builtin(
      o.kind, n, o.kind == CollectiveKind::AllReduce ? n * k : k, o.inPlace,
      o.root);
  if (!target)
    return target.error();
  auto shared = std::make_shared<const Collective>(target.take());
  auto add = [&](CollectiveKind rk, Setup::Lowering how,
                 const std::string &label) -> Status {
    bool copy = how == Setup::Lowering::Copy;
    auto route = Collective::builtin(rk, n, k, copy && o.inPlace, o.root);
    if (!route)
      return route.error();
    out.push_back({route.take(), shared, how, label});
    return Status::success();
  };
  Status st;
  switch (o.kind) {
  case CollectiveKind::ReduceScatter:
    st = add(CollectiveKind::AllGather, Setup::Lowering::Inverse, "");
    if (st)
      st = add(CollectiveKind::AllToAll, Setup::Lowering::GatherReduce,
               "reduce at owners");
    break;
  case CollectiveKind::Reduce:
    st = add(CollectiveKind::Broadcast, Setup::Lowering::Inverse, "");
    if (st)
      st = add(CollectiveKind::Gather, Setup::Lowering::GatherReduce,
               "reduce at root");
    break;
  case CollectiveKind::AllReduce:
    st = add(CollectiveKind::AllGather, Setup::Lowering::AllReduce, "");
    if (st)
      st = add(CollectiveKind::AllToAll, Setup::Lowering::AllReduceGather,
               "reduce at owners");
    break;
  default:
    st = add(o.kind, Setup::Lowering::Copy, "");
    break;
  }
  if (!st)
    return st.error();
  return out;
}

/// Chunk splits to try: the sketch's input_chunkup first, then finer
/// splits (ascending), then coarser ones (descending). Each list is cut
/// short by the driver once splitting further stops helping.
std::vector<std::vector<int>> chunkups(const Topology &topo, const Sketch &sk,
                                       const SynthOptions &o,
                                       const Collective &route1) {
  if (o.kind == CollectiveKind::Custom)
    return {{1}};
  if (o.chunkup > 0)
    return {{o.chunkup}};
  if (!sk.chunkupCandidates.empty())
    return {sk.chunkupCandidates};
  // How many latencies one unsplit chunk's streaming is worth: splitting
  // finer than that only adds latency.
  double bw = 0, alpha = std::numeric_limits<double>::infinity();
  for (int l = 0; l < (int)topo.links.size(); ++l) {
    bw = std::max(bw, topo.effectiveBandwidth(l));
    alpha = std::min(alpha, topo.links[l].alphaUs);
  }
  double chunk = o.targetBytes / route1.sizeDivisor();
  double ratio = alpha > 0 ? chunk / (bw * 1e3) / alpha : 1e9;
  int kMax = std::max(1, (int)std::floor(ratio));
  int values = std::max(1, route1.numValues());
  std::set<int> pool{1,  2,  3,  4,  6,   8,   12,  16,  24,
                     32, 48, 64, 96, 128, 192, 256, 384, 512};
  int c = sk.inputChunkup;
  for (int m : {1, 2, 4})
    pool.insert(c * m);
  for (int d = 1; d <= c; ++d)
    if (c % d == 0)
      pool.insert(d);
  auto ok = [&](int k) {
    return k == 1 || (k <= kMax && (long long)values * k <= 8192);
  };
  int first = ok(c) ? c : 1;
  // Bandwidth-bound sizes need enough values to keep every link busy
  // while pipelining (a broadcast has one value per split): start at the
  // first split giving two values per rank, when that is finer.
  if (ratio > 4)
    for (int k : pool)
      if (k > first && ok(k) &&
          (long long)values * first < 2LL * route1.numRanks) {
        first = k;
        if ((long long)values * k >= 2LL * route1.numRanks)
          break;
      }
  std::vector<int> up{first}, down;
  for (int k : pool)
    if (k > first && ok(k))
      up.push_back(k);
  for (auto it = pool.rbegin(); it != pool.rend(); ++it)
    if (*it < first && ok(*it))
      down.push_back(*it);
  // At a power-of-two size, a split with an odd factor (3, 6, 12, ...)
  // gives the program a loop of chunks MSCCL selects for no such size
  // (it runs NCCL there) and that generated code cannot cut evenly: those
  // splits come after the others in each direction, tried only when the
  // power-of-two splits keep helping and the time allows.
  if (isPowerOfTwoSize(o.targetBytes)) {
    auto even = [](int k) { return oddPart(k) == 1; };
    std::stable_partition(up.begin() + 1, up.end(), even);
    std::stable_partition(down.begin(), down.end(), even);
  }
  return down.empty() ? std::vector<std::vector<int>>{up}
                      : std::vector<std::vector<int>>{up, down};
}

/// Collectives in which every rank receives something from every other
/// one: each of their schedules has at least n(n-1) transfers.
bool everyPairCollective(CollectiveKind c) {
  return c == CollectiveKind::AllGather || c == CollectiveKind::ReduceScatter ||
         c == CollectiveKind::AllReduce || c == CollectiveKind::AllToAll;
}

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
  void noteLowered(Clock::time_point t0, size_t tasks) {
    lowerSecPerTask =
        std::max(lowerSecPerTask, since(t0) / std::max<size_t>(1, tasks));
  }
  void noteListed(double seconds, size_t tasks) {
    listSecPerTask =
        std::max(listSecPerTask, seconds / std::max<size_t>(1, tasks));
  }
  /// Seconds lowering and list-scheduling `tasks` tasks take: until
  /// measured, 1 µs and 2 µs per task (a 1.5M-task AllReduce on 512 ranks
  /// took 0.7 µs and 1.5 µs on a loaded machine).
  double buildSeconds(double tasks, int replays) const {
    return tasks * ((lowerSecPerTask > 0 ? lowerSecPerTask : 1e-6) +
                    replays * (listSecPerTask > 0 ? listSecPerTask : 2e-6));
  }
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
  Clock::time_point searchEnd() const {
    size_t n = std::isfinite(best.timeUs) ? best.schedule.transfers.size() : 0;
    return deadline - std::chrono::microseconds((long long)(n * 3));
  }
  bool timeUp() const { return Clock::now() >= searchEnd(); }
  /// Seconds building the collectives of split 1 took (a split k costs
  /// about k times as much: seconds on 4,096 ranks).
  double setupSecondsPerSplit = 0;
  /// Records what setting up split k took (its collectives, routing
  /// problem and bound).
  void noteSetUp(Clock::time_point t0, int k) {
    setupSecondsPerSplit = std::max(setupSecondsPerSplit, since(t0) / k);
  }
  /// The lower bound, computed once: it does not depend on the split (a
  /// split multiplies the demands and divides the chunk alike).
  bool boundKnown = false;
  void boundOnce(const Collective &target) {
    if (boundKnown)
      return;
    auto t0 = Clock::now();
    // The latency search grows with ranks times links (half a minute on
    // 1,024 ranks): an eighth of the time left, then a weaker bound.
    // Synthesized schedules are point-to-point: their bound ignores the
    // machine's in-network switches.
    LowerBound lb =
        lowerBound(target, topo, opts.targetBytes, t0 + (deadline - t0) / 8,
                   BoundScope::PointToPoint);
    bound = std::max(bound, lb.timeUs());
    boundBandwidthUs = lb.bandwidthUs;
    boundLatencyUs = lb.latencyUs;
    if (lb.latencyCutShort)
      result.notes.push_back(
          "the time limit cut the latency bound's shortest-path search "
          "short; a weaker latency bound is used");
    if (lb.cutsCutShort)
      result.notes.push_back(
          "the time limit cut the bandwidth bound's enumeration of cuts "
          "short; a weaker bandwidth bound is used");
    stages.add("bound", since(t0));
    boundKnown = true;
  }
  /// Every schedule of an every-pair collective split k ways has at least
  /// k n(n-1) transfers, each built, verified, simulated and written: 2 µs
  /// at the very least (a 1M-transfer AllGather took 3 µs per transfer
  /// to build, verify and simulate, and 1 µs to write).
  double leastSecondsToWrite(int k) const {
    double n = topo.numRanks();
    return everyPairCollective(opts.kind) ? 2e-6 * k * n * (n - 1) : 0;
  }
  /// Seconds building split k's routing problem takes at the least: about
  /// 14 µs per value routed (an AllToAll on 1,024 ranks routes n^2 = 1M
  /// values and took 14 s; the others route n per split).
  double routingProblemSeconds(int k) const {
    double n = topo.numRanks();
    double values = opts.kind == CollectiveKind::AllToAll ? n * n : n;
    return 14e-6 * values * k;
  }
  /// Split k's collectives and routing problem can be set up, and a
  /// schedule of it written, in the time left.
  bool canSetUp(int k) const {
    auto end =
        Clock::now() +
        std::chrono::microseconds(
            (long long)((setupSecondsPerSplit * k + leastSecondsToWrite(k) +
                         routingProblemSeconds(k)) *
                        1e6));
    return end < (haveSchedule() ? searchEnd() : hardDeadline);
  }
  /// A synthesized schedule or a baseline could be written.
  bool haveSchedule() const {
    return std::isfinite(best.timeUs) || std::isfinite(baselineUs);
  }
  /// Nothing more may start: past the limit with a schedule to write, or
  /// past the grace without one.
  bool stopNow() const {
    return Clock::now() >= (haveSchedule() ? searchEnd() : hardDeadline);
  }
  /// A schedule of `transfers` transfers can still be verified and
  /// simulated (after `before` more seconds of other work) before the
  /// deadline (always, while there is none yet and the grace past the
  /// limit remains).
  bool canMeasure(size_t transfers, double before = 0) const {
    // Until something was measured, 6 µs per transfer (a 524k-transfer
    // AllGather on 512 ranks took 3.4 s).
    double perTransfer =
        measureSecPerTransfer > 0 ? measureSecPerTransfer : 6e-6;
    auto end = Clock::now() +
               std::chrono::microseconds(
                   (long long)((before + perTransfer * transfers) * 1e6));
    return std::isfinite(best.timeUs) ? end < searchEnd() : end < hardDeadline;
  }
  /// Nothing left to gain: within 0.2% of the lower bound and no slower
  /// than any baseline, or tied with a baseline that is itself at the
  /// bound (a faster baseline away from it means the search is not done).
  bool atBound() const {
    if (bound <= 0)
      return false;
    // A baseline at the bound too is written instead when it is faster.
    return best.timeUs <= bound * 1.002 &&
           (beatsBaselines() || baselineUs <= bound * 1.002);
  }
  bool beatsBaselines() const {
    return best.timeUs <= baselineUs * (1 + 1e-12);
  }
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
  bool bandwidthBound(const Setup &setup) const {
    return opts.targetBytes / setup.route.sizeDivisor() >
           4 * 1e3 * minAlphaUs * maxLinkGBps;
  }
  void measureBaselines();
  /// Whether the search may end with what it has (a verified schedule or
  /// baseline) when setting up split k fails, noting why it stopped: not
  /// before a first routing problem has shown that the sketch fits.
  bool sketchFits = false;
  bool keepOnError(int k, const Error &e) {
    if (!sketchFits || !haveSchedule())
      return false;
    result.notes.push_back("chunk split " + std::to_string(k) +
                           " and finer were not tried: " + e.message);
    return true;
  }
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

void Driver::searchChunkup(int k, const Setup &setup,
                           const RoutingProblem &problem,
                           Clock::time_point until) {
  auto report = [&](const std::string &what, double t) {
    if (!std::isfinite(t))
      return;
    std::string pct =
        bound > 0 ? " (" + fmt(100.0 * bound / t, 1) + "% of bound)" : "";
    say("chunkup " + std::to_string(k) + ": " + what + ": " +
        fmt(t, t < 100 ? 4 : 2) + " us" + pct);
  };
  double chunk = std::ceil(opts.targetBytes / setup.route.sizeDivisor());
  CostModel cost = makeCostModel(topo, chunk);
  SearchContext ctx;
  // With nothing to write yet, the grace past the limit is for finding a
  // first schedule.
  ctx.deadline = haveSchedule() ? std::min(until, deadline) : hardDeadline;
  ctx.seed = opts.seed;
  ctx.progress = [&](const std::string &m) {
    say("chunkup " + std::to_string(k) + ": " + m);
  };
  ctx.keepSmt = opts.keepSmt;
  // No single solver call may eat the budget. The cap counts SAT
  // conflicts (deterministic), derived from the time limit alone, so that
  // runs with one seed agree.
  ctx.callConflicts =
      (unsigned)std::clamp(opts.timeLimitSec * 100, 1000.0, 20000.0);

  // Hierarchical routes first on multi-node machines: linear in the
  // schedule's size, and within a few percent of the bound at
  // bandwidth-bound sizes on rail-balanced machines.
  if (topo.numNodes() > 1 && hierarchicalDone.insert(k).second) {
    // A ring per rail streams through each NIC in order (bandwidth); the
    // origin sending to every node itself has the fewest hops (latency).
    // Rings first when a NIC streams its share for longer than four ring
    // latencies.
    double nicAlpha = std::numeric_limits<double>::infinity(), nicGBps = 0;
    for (int l : problem.usableLinks)
      if (!topo.sameNode(topo.links[l].src, topo.links[l].dst)) {
        nicAlpha = std::min(nicAlpha, topo.links[l].alphaUs);
        nicGBps = std::max(nicGBps, topo.effectiveBandwidth(l));
      }
    int nodes = topo.numNodes();
    double perRank = (double)setup.route.numValues() / topo.numRanks();
    double streamUs =
        nicGBps > 0 ? perRank * (nodes - 1) * chunk / (nicGBps * 1e3) : 0;
    // Two rings per rail halve the ring's latency for the same streams:
    // on dgx-h100x64 at 1G they reach 98.5% of the ReduceScatter bound
    // where one ring reaches 91.5% (and direct sends 69.6%), so they come
    // first; on the largest machines only the first plan may fit in time.
    std::vector<RailRoutes> order{RailRoutes::BidirectionalRing,
                                  RailRoutes::Ring, RailRoutes::Direct};
    if (!(streamUs > 4 * nodes * nicAlpha))
      order = {RailRoutes::Direct, RailRoutes::BidirectionalRing,
               RailRoutes::Ring};
    for (RailRoutes rails : order) {
      auto t0 = Clock::now();
      auto hp = hierarchicalPlan(problem, cost, ctx.deadline, rails);
      stages.add("heuristic routes", since(t0));
      if (hp)
        report(hp->method, evaluate(problem, setup, *hp, k));
      if (atBound() || timeUp() || stopNow())
        return;
    }
  }
  // Heuristic plans are evaluated once per split (the quick pass may have
  // done it already); each gives up at the deadline.
  auto t0 = Clock::now();
  // Growing a tree per destination costs a shortest-path search over the
  // usable links each (about 1e8 relaxations a second): not started when
  // that cannot end in the time left.
  double work = 0;
  for (int rep : problem.reps)
    work += (double)problem.values[rep].dests.size() *
            (double)problem.usableLinks.size();
  std::optional<Plan> h;
  if (work / 1e8 < std::chrono::duration<double>(ctx.deadline - t0).count())
    h = heuristicPlan(problem, cost, ctx.deadline);
  stages.add("heuristic routes", since(t0));
  if (!h) {
    say("chunkup " + std::to_string(k) +
        ": no time left to grow shortest-path trees");
    result.timeLimitHit |= timeUp();
    return;
  }
  if (!heuristicsOnly) {
    if (plainHeuristicsDone.insert(k).second)
      report("heuristic", evaluate(problem, setup, *h, k));
    if (atBound())
      return;
    auto t2 = Clock::now();
    auto direct = minHopPlan(problem, cost, ctx.deadline);
    stages.add("heuristic routes", since(t2));
    if (direct)
      report("minimum-hop routes", evaluate(problem, setup, *direct, k));
    if (atBound())
      return;
  }

  // Bandwidth-bound sizes favour concentrating binding resources on few
  // long FIFO streams.
  double bw = 0, alpha = std::numeric_limits<double>::infinity();
  for (int l : problem.usableLinks) {
    bw = std::max(bw, topo.effectiveBandwidth(l));
    alpha = std::min(alpha, topo.links[l].alphaUs);
  }
  bool bandwidthBound = chunk / (bw * 1e3) > 4 * alpha;
  // Rail-only inter-node links (GPU i talks to GPU i of other nodes), with
  // room for forwarding across nodes: rings per NIC rail pipeline well.
  bool railsTried = false;
  auto railRouting = [&] {
    if (!atBound() && Clock::now() < ctx.deadline && topo.numNodes() > 1 &&
        sketch.connKind != InternodeConnKind::DirectMap) {
      bool rails = true, others = false;
      for (int a = 0; a < problem.gpusPerNode; ++a)
        for (int b = 0; b < problem.gpusPerNode; ++b) {
          if (a == b)
            rails &= (bool)problem.interConn[a][b];
          else
            others |= (bool)problem.interConn[a][b];
        }
      if (rails && others) {
        Sketch railSketch = sketch;
        railSketch.connKind = InternodeConnKind::DirectMap;
        railSketch.conn.clear();
        auto rail = buildRoutingProblem(topo, railSketch, setup.route);
        if (rail) {
          auto th = Clock::now();
          auto railPlan = heuristicPlan(*rail, cost, ctx.deadline);
          stages.add("heuristic routes", since(th));
          if (!railPlan)
            return;
          Plan &railHeuristic = *railPlan;
          railHeuristic.method += " on rails";
          if (railHeuristicsDone.insert(k).second)
            report(railHeuristic.method,
                   evaluate(*rail, setup, railHeuristic, k));
          railsTried = true;
          if (heuristicsOnly)
            return;
          double railHint = busyTime(*rail, railHeuristic, cost);
          // Bandwidth-bound: one or two links per NIC (rings, bidirectional
          // rings or chains per rail); otherwise shallow rail routes.
          std::vector<RoutingSearchOptions> variants;
          bool any = railSketch.hops == InternodeHops::Any;
          int nodes = topo.numNodes();
          if (bandwidthBound && any) {
            RoutingSearchOptions one, two;
            one.nicLinks = 1;
            one.enterNodesOnce = two.enterNodesOnce = true;
            one.slack = nodes;
            one.concentrate = true;
            two.nicLinks = 2;
            two.slack = nodes / 2 + 1;
            two.concentrate = true;
            variants = {one, two};
          } else {
            RoutingSearchOptions plain;
            plain.concentrate = bandwidthBound;
            plain.depthFirst = !bandwidthBound;
            plain.enterNodesOnce = bandwidthBound;
            variants = {plain};
          }
          for (RoutingSearchOptions &ro : variants) {
            if (atBound() || Clock::now() >= ctx.deadline)
              break;
            ro.hintBound = railHint;
            auto t1 = Clock::now();
            ctx.maxVars = 150000;
            std::string tag = ro.nicLinks
                                  ? "rails, " + std::to_string(ro.nicLinks) +
                                        " link(s) per NIC"
                                  : "rails only";
            ctx.progress = [&](const std::string &m) {
              say("chunkup " + std::to_string(k) + ": " + tag + ": " + m);
            };
            auto plans = routingPlans(*rail, cost, ro, ctx);
            stages.add("routing (Z3)", since(t1));
            for (Plan &p : plans) {
              // The first plan is always evaluated (cheap next to solving).
              if (&p != &plans.front() && timeUp() &&
                  std::isfinite(best.timeUs))
                break;
              p.method += " on " + tag;
              report(p.method, evaluate(*rail, setup, p, k));
            }
          }
          ctx.progress = [&](const std::string &m) {
            say("chunkup " + std::to_string(k) + ": " + m);
          };
        }
      }
    }
  };
  // Multi-node bandwidth-bound sizes: try rails first, they are likely to
  // win and the full sketch's encoding is the larger one.
  if (bandwidthBound || heuristicsOnly)
    railRouting();
  if (heuristicsOnly) {
    // Without rails, the quick pass tries the plain heuristic trees, and
    // the later pass the rest.
    if (!railsTried && plainHeuristicsDone.insert(k).second)
      report("heuristic", evaluate(problem, setup, *h, k));
    return;
  }
  if (Clock::now() < ctx.deadline) {
    auto t1 = Clock::now();
    ctx.maxVars = 150000;
    RoutingSearchOptions ro;
    ro.concentrate = bandwidthBound;
    ro.depthFirst = !bandwidthBound;
    ro.enterNodesOnce = bandwidthBound;
    ro.hintBound = busyTime(problem, *h, cost);
    auto plans = routingPlans(problem, cost, ro, ctx);
    stages.add("routing (Z3)", since(t1));
    for (const Plan &p : plans) {
      if (&p != &plans.front() && timeUp() && std::isfinite(best.timeUs))
        break;
      report(p.method, evaluate(problem, setup, p, k));
    }
  }
  if (!bandwidthBound)
    railRouting();
  // The exact slot model is the most precise and the most expensive: only
  // when routing left a gap to the bound.
  if (!atBound() && Clock::now() < ctx.deadline &&
      setup.lowering != Setup::Lowering::GatherReduce &&
      setup.lowering != Setup::Lowering::AllReduceGather) {
    auto t1 = Clock::now();
    ctx.maxVars = 40000;
    auto exact = exactPlan(problem, cost, ctx);
    stages.add("exact slot model (Z3)", since(t1));
    if (exact)
      report(exact->method, evaluate(problem, setup, *exact, k));
  }
  // Only the overall deadline (not a call's work budget) counts as the
  // time limit; the latter shows in the plans' own proofs.
  result.timeLimitHit |= ctx.deadlineHit && timeUp();
  if (ctx.tiesUnsatisfiable && !tiesNoted) {
    tiesNoted = true;
    std::string names;
    for (const SymmetryTie &t : problem.ties)
      names += (names.empty() ? "[" : ", [") + std::to_string(t.offset) + ", " +
               std::to_string(t.blockSize) + "]";
    // (The rail variant's problem may be the one with ties.)
    std::string which =
        names.empty() ? "the sketch's partial symmetries"
                      : "symmetry_offsets " +
                            std::string(problem.ties.size() == 1 ? "entry "
                                                                 : "entries ") +
                            names;
    result.notes.push_back("no plan within the solver's depth or horizon "
                           "satisfies the ties of " +
                           which + "; the solver searched without them");
  }
}

/// Most condition entries (chunk slots and pooled values) the collectives
/// of one chunk split may hold: a few GB with the routing problem.
constexpr double kMaxConditionEntries = 3e8;

/// Baselines larger than this are not simulated during a search (memory:
/// the hierarchical AllReduce on 1,024 ranks, 3M transfers, takes 0.8 GB
/// to simulate); smaller ones are when the time left allows.
constexpr size_t kMaxBaselineTransfers = 4000000;

/// The sum over ranks of the fewest hops from `src` to them (`toSrc`: from
/// them to `src`): the transfers of sending one chunk from `src` to every
/// rank, relayed where there is no link (n - 1 where `src` is linked to
/// all; about n^2/4 on a ring). Unreachable ranks count n hops.
double hopSum(const Topology &topo, int src, bool toSrc) {
  int n = topo.numRanks();
  // Most machines link `src` to every rank: one pass over the links says
  // so, without building the adjacency (a tenth of a second on 1M links).
  {
    std::vector<char> linked(n, 0);
    int neighbours = 0;
    for (const Link &l : topo.links) {
      int other = toSrc ? (l.dst == src ? l.src : -1)
                        : (l.src == src ? l.dst : -1);
      if (other >= 0 && !linked[other]) {
        linked[other] = 1;
        ++neighbours;
      }
    }
    if (neighbours == n - 1)
      return n - 1;
  }
  // Adjacency as compressed rows: one pass to count, one to fill.
  std::vector<int> start(n + 1, 0), next(topo.links.size());
  for (const Link &l : topo.links)
    ++start[(toSrc ? l.dst : l.src) + 1];
  for (int r = 0; r < n; ++r)
    start[r + 1] += start[r];
  std::vector<int> fill(start.begin(), start.end() - 1);
  for (const Link &l : topo.links)
    next[fill[toSrc ? l.dst : l.src]++] = toSrc ? l.src : l.dst;
  std::vector<int> hops(n, -1), queue{src};
  hops[src] = 0;
  double sum = 0;
  for (size_t head = 0; head < queue.size(); ++head) {
    int u = queue[head];
    sum += hops[u];
    for (int k = start[u]; k < start[u + 1]; ++k)
      if (hops[next[k]] < 0) {
        hops[next[k]] = hops[u] + 1;
        queue.push_back(next[k]);
      }
  }
  return sum + (double)(n - (int)queue.size()) * n;
}

/// Transfers a baseline of `kind` has, roughly (for ordering and for
/// skipping what cannot be measured in time), in units of n^2 as counted
/// on dgx-h100x4: the direct and hierarchical AllGather and AllToAll move
/// each chunk once (the hierarchical AllToAll twice), a ReduceScatter also
/// folds each arrival in (about 2 n^2) and an AllReduce adds the AllGather
/// (3 n^2); the multi-ring baseline of a multi-node machine has one ring
/// per GPU of a node, and its AllToAll relays each chunk half way round
/// on average; trees pipeline a few chunks down and up (23 n).
double baselineTransfersEstimate(BaselineKind kind, CollectiveKind c,
                                 const Topology &topo, int root) {
  double n = topo.numRanks();
  // Rooted: a tree pipelines 8 chunks (8n transfers); a direct one sends
  // each rank its chunk over the fewest hops (n where the root is linked
  // to every rank, n^2/4 on ring:n), plus n local reduces for a reduce; a
  // ring pipelines 4n chunks round all ranks, times half the GPUs of a
  // node on several nodes (1M transfers for a broadcast on ring:512, 4.2M
  // on dgx-h100x64).
  if (!everyPairCollective(c)) {
    double perNode =
        topo.numNodes() > 1 ? (double)topo.ranksOfNode(0).size() / 2 : 1.0;
    if (kind == BaselineKind::Direct) {
      bool toRoot = c == CollectiveKind::Gather || c == CollectiveKind::Reduce;
      return hopSum(topo, root, toRoot) + n * (c == CollectiveKind::Reduce);
    }
    return kind == BaselineKind::Ring ? 4.0 * std::max(1.0, perNode) * n * n
                                      : 8.0 * n;
  }
  if (kind == BaselineKind::Tree)
    return 32.0 * n;
  double folds = c == CollectiveKind::AllReduce       ? 3
                 : c == CollectiveKind::ReduceScatter ? 2
                                                      : 1;
  switch (kind) {
  case BaselineKind::Direct: {
    // Every rank sends to every other rank over the fewest hops (rank 0's
    // distances standing for everyone's: 3.1M transfers for an AllGather
    // on torus2d:16x32, not 262K) and copies its own chunk; reductions add
    // n local reduces per rank. With a link between every pair that is
    // n^2, as for the hierarchical baseline, which then comes first.
    double sends = n * (hopSum(topo, 0, false) + 1);
    return c == CollectiveKind::AllReduce       ? 2 * sends + n * n
           : c == CollectiveKind::ReduceScatter ? sends + n * n
                                                : sends;
  }
  case BaselineKind::Hierarchical:
    return (c == CollectiveKind::AllToAll ? 2 : folds) * n * n;
  case BaselineKind::Ring: {
    double rings =
        topo.numNodes() > 1 ? (double)topo.ranksOfNode(0).size() : 1.0;
    return (c == CollectiveKind::AllToAll ? n / 2 : folds) * rings * n * n;
  }
  case BaselineKind::Tree:
    break;
  case BaselineKind::Nvls:
  case BaselineKind::Collnet:
  case BaselineKind::NvlsSharp:
  case BaselineKind::CollnetChain:
    // Not among the synthesizer's fallbacks: its switch transfers do not
    // lower to the step programs yet.
    return 2.0 * n * n;
  }
  return 32.0 * n;
}

void Driver::measureBaselines() {
  if (opts.kind == CollectiveKind::Custom)
    return;
  auto t0 = Clock::now();
  BaselineOptions bo;
  bo.inPlace = opts.inPlace;
  bo.root = opts.root;
  bo.topologyValidated = true;
  // The cheapest first: on large machines the time limit may allow only
  // one, and any verified baseline is a schedule to write. Equal times
  // keep the first of this order (direct, hierarchical, tree, ring).
  // On several nodes the hierarchical baseline comes before the direct
  // one of the same size: it is the faster of the two there. A broadcast
  // or reduce tries the tree first: the direct one, cheaper to build,
  // pushes every rank's copy through the root's links (on 4,096 ranks the
  // time limit leaves room for one of them).
  const BaselineKind order[] = {BaselineKind::Direct,
                                BaselineKind::Hierarchical, BaselineKind::Tree,
                                BaselineKind::Ring};
  bool treeFirst = opts.kind == CollectiveKind::Broadcast ||
                   opts.kind == CollectiveKind::Reduce;
  auto preference = [&](BaselineKind k) {
    return topo.numNodes() > 1 && k == BaselineKind::Hierarchical ? -1 : 0;
  };
  struct Option {
    BaselineKind kind;
    int rank;
    double transfers;
  };
  std::vector<Option> options;
  for (int i = 0; i < 4; ++i)
    if (baselineSupports(order[i], opts.kind, topo))
      options.push_back(
          {order[i], i, baselineTransfersEstimate(order[i], opts.kind, topo,
                                                  opts.root)});
  auto sortKey = [&](const Option &o) {
    if (treeFirst)
      return std::tuple(o.kind != BaselineKind::Tree, o.transfers, 0);
    return std::tuple(false, o.transfers, preference(o.kind));
  };
  std::stable_sort(options.begin(), options.end(),
                   [&](const Option &a, const Option &b) {
                     return sortKey(a) < sortKey(b);
                   });
  int bestRank = 4;
  for (const Option &o : options) {
    BaselineKind kind = o.kind;
    // Once one is verified, baselines get at most a quarter of the time
    // limit: they are the floor to beat, not the search. Until then one
    // may take the whole limit and its grace, less writing it (2 µs per
    // transfer; 1 µs measured): without it there is nothing to write.
    // While the best one is under half the lower bound, they may take
    // half the limit (a pipelined ring broadcast after a tree).
    auto until =
        std::isfinite(baselineUs)
            ? start + (deadline - start) / (baselineUs * 0.5 > bound ? 2 : 4)
            : deadline + grace -
                  std::chrono::microseconds((long long)(2 * o.transfers));
    // Building, verifying and simulating: until one is measured, 3.5 µs
    // per transfer (the 1M-transfer hierarchical AllGather on 1,024 ranks
    // took 3.1 µs on an idle machine, a 2M-transfer ring AllGather on a
    // 1,024-rank torus 1.2 µs).
    double perTransfer =
        baselineSecPerTransfer > 0 ? baselineSecPerTransfer : 3.5e-6;
    if (o.transfers > kMaxBaselineTransfers ||
        Clock::now() + std::chrono::microseconds(
                           (long long)(perTransfer * o.transfers * 1e6)) >
            until) {
      say(std::string("not simulating the ") + toString(kind) +
          " baseline (no time left: about " + fmt(o.transfers / 1e6, 2) +
          "M transfers)");
      continue;
    }
    auto tb = Clock::now();
    bo.until = until;
    auto b = makeBaseline(kind, opts.kind, topo, bo);
    if (!b) {
      if (Clock::now() > until)
        say(std::string("not simulating the ") + toString(kind) +
            " baseline (no time left: " + b.error().message + ")");
      continue;
    }
    // Its transfers must still be written (2 µs each) within the grace: a
    // relayed baseline can be far larger than estimated.
    if (Clock::now() + std::chrono::microseconds(
                           (long long)(2 * b->transfers.size())) >
        deadline + grace) {
      say(std::string("not simulating the ") + toString(kind) +
          " baseline (no time left to write its " +
          fmt(b->transfers.size() / 1e6, 2) + "M transfers)");
      continue;
    }
    // A ring all-to-all on 64 ranks has a million transfers and takes
    // longer to simulate than most searches.
    if (b->transfers.size() > kMaxBaselineTransfers) {
      say(std::string("not simulating the ") + toString(kind) + " baseline (" +
          std::to_string(b->transfers.size()) + " transfers)");
      continue;
    }
    if (measureSecPerTransfer > 0 &&
        Clock::now() + std::chrono::microseconds(
                           (long long)(measureSecPerTransfer *
                                       b->transfers.size() * 1e6)) >
            until) {
      say(std::string("not simulating the ") + toString(kind) +
          " baseline (no time left)");
      continue;
    }
    SimOptions so;
    so.bytes = opts.targetBytes;
    so.topologyValidated = true;
    auto ts = Clock::now();
    // Verified now, so that writing it instead of a slower schedule at the
    // deadline costs nothing more.
    VerifyOptions vo;
    vo.topology = &topo;
    if (!verifySchedule(*b, vo).ok()) {
      result.notes.push_back(std::string("internal: the ") + toString(kind) +
                             " baseline does not verify");
      continue;
    }
    // Stopped where it would overrun what it may use (simulating a million
    // transfers in flight at once, as a direct AllToAll on 1,024 ranks,
    // takes 14 us per transfer, not the 3.5 estimated).
    so.until = until;
    auto sim = simulate(*b, topo, so);
    if (!sim) {
      say(std::string("not simulating the ") + toString(kind) +
          " baseline (no time left)");
      continue;
    }
    // Small baselines measure fixed costs, not a rate per transfer (a
    // direct broadcast on 1,024 ranks, 1,024 transfers of 1 GB sharing
    // the root's links, takes a second to simulate).
    size_t count = b->transfers.size();
    if (count >= 100000) {
      measureSecPerTransfer =
          std::max(measureSecPerTransfer, since(ts) / count);
      baselineSecPerTransfer =
          std::max(baselineSecPerTransfer, since(tb) / count);
    }
    if (sim->timeUs < baselineUs ||
        (sim->timeUs == baselineUs && o.rank < bestRank)) {
      baselineUs = sim->timeUs;
      baselineBusbw = sim->busbwGBps;
      baselineMeasureSeconds = since(ts) / 2;
      baselineName = toString(kind);
      baselineSchedule = b.take();
      bestRank = o.rank;
    }
  }
  stages.add("baselines", since(t0));
  if (std::isfinite(baselineUs))
    say("best baseline at this size: " + baselineName + ", " + fmt(baselineUs) +
        " us (the search goes on while it is faster)");
}

void Driver::preferBaseline() {
  if (!std::isfinite(baselineUs))
    return;
  bool faster = best.timeUs <= baselineUs * (1 + 1e-12);
  // A schedule at least as fast keeps its place; the baseline goes along
  // when it is small and the sketch allows it (ranked again by the tool at
  // the step level).
  if (faster && baselineSchedule.transfers.size() > kMaxAlternativeTransfers)
    return;
  // Links of the baseline the sketch forbids (transfers without a link use
  // the topology's best link).
  bool allowed = true;
  // No routing problem was built (the time ran out first): only a sketch
  // that constrains no link is known to allow the baseline's.
  if (sketchLinks.empty())
    allowed = sketch.intra == IntraStrategy::None && sketch.switches.empty() &&
              sketch.conn.empty() &&
              sketch.connKind == InternodeConnKind::FullyConnected;
  for (size_t i = 0;
       allowed && !sketchLinks.empty() && i < baselineSchedule.transfers.size();
       ++i) {
    const Transfer &tr = baselineSchedule.transfers[i];
    if (tr.src.rank == tr.dst.rank)
      continue;
    int l = tr.link;
    if (l < 0)
      l = topo.bestLink(tr.src.rank, tr.dst.rank).value_or(-1);
    if (l < 0 || l >= (int)sketchLinks.size() || !sketchLinks[l]) {
      allowed = false;
      break;
    }
  }
  if (!allowed) {
    if (!faster)
      result.sketchForbidsBaseline = true;
    return;
  }
  if (faster) {
    result.allowedBaseline = baselineSchedule;
    return;
  }
  // The synthesized schedule the baseline replaces may still lower to the
  // faster program.
  retireBest();
  best.schedule = baselineSchedule;
  best.timeUs = baselineUs;
  best.busbwGBps = baselineBusbw;
  best.measureSeconds = baselineMeasureSeconds;
  best.method = "the " + baselineName +
                " baseline (no synthesized schedule found in time was faster)";
  best.chunkup = 1;
  best.proven = false;
  best.smt.clear();
  result.isBaseline = true;
}

Expected<SynthResult> Driver::run() {
  auto limit = std::chrono::microseconds(
      (long long)(std::max(0.0, opts.timeLimitSec) * 1e6));
  deadline = start + limit;
  grace =
      std::max<std::chrono::microseconds>(limit / 10, std::chrono::seconds(2));
  hardDeadline = deadline + grace / 2;
  int n = topo.numRanks();
  if (opts.kind == CollectiveKind::Custom) {
    if (!opts.custom)
      return Error("a custom collective needs its conditions");
    if (opts.custom->isReduction())
      return Error("synthesis of custom collectives with reductions is not "
                   "supported (only copy collectives; reductions are "
                   "synthesized for the built-in reducescatter, reduce and "
                   "allreduce)");
    if (opts.custom->numRanks != n)
      return Error(
          "the custom collective has " + std::to_string(opts.custom->numRanks) +
          " ranks but topology '" + topo.name + "' has " + std::to_string(n));
  }
  // The collectives' conditions take a few ints per chunk slot: n^2 per
  // chunk split (AllReduce: its n chunks per rank on n ranks, plus one
  // pooled set of n values per chunk, shared by all ranks). Refuse what
  // cannot fit in memory rather than exhaust it.
  // The rooted collectives hold a few slots per rank (a broadcast: the
  // root's chunk and one output chunk per rank).
  bool everyPair = everyPairCollective(opts.kind);
  double entries = everyPair || opts.kind == CollectiveKind::Custom
                       ? (double)n * n
                       : 4.0 * n;
  if (opts.kind == CollectiveKind::AllReduce)
    entries *= 3;
  if (entries > kMaxConditionEntries)
    return Error(std::string(toString(opts.kind)) + " on " + std::to_string(n) +
                 " ranks needs about " + fmt(entries / 1e6, 0) +
                 " million condition entries per chunk split, more than "
                 "the synthesizer holds (" +
                 fmt(kMaxConditionEntries / 1e6, 0) + " million)");
  // Building them (the routed collective and the target) took up to 0.1 µs
  // per entry on a loaded machine.
  if (Clock::now() + std::chrono::microseconds((long long)(entries * 0.1)) >
      hardDeadline)
    return Error("the time limit (" + fmt(opts.timeLimitSec, 1) +
                 " s) is shorter than building the collective's conditions "
                 "on " +
                 std::to_string(n) + " ranks takes; allow more time");
  // Every schedule of these has at least n(n-1) transfers (every rank
  // receives something from every other one), each built, verified,
  // simulated and written. When even that cannot end within the limit's
  // grace, say so now rather than search in vain.
  if (everyPair) {
    double least = leastSecondsToWrite(1);
    if (Clock::now() + std::chrono::microseconds((long long)(least * 1e6)) >
        hardDeadline)
      return Error("every " + std::string(toString(opts.kind)) + " on " +
                   std::to_string(n) + " ranks has at least " +
                   fmt((double)n * (n - 1) / 1e6, 1) +
                   " million transfers; building, verifying and writing "
                   "them takes more than the time limit (" +
                   fmt(opts.timeLimitSec, 1) +
                   " s) allows; allow more time (about " +
                   fmt(std::ceil(least * 4), 0) + " s)");
  }
  auto t0 = Clock::now();
  auto bases = makeSetups(opts, n, 1);
  if (!bases)
    return bases.error();
  // The bound on the coarsest split costs least (it is the same for all).
  boundOnce(*bases->front().target);
  setupSecondsPerSplit = since(t0);
  const Setup *base = &bases->front();
  std::vector<std::vector<int>> phases =
      chunkups(topo, sketch, opts, base->route);
  size_t remainingKs = 0;
  for (auto &ph : phases)
    remainingKs += ph.size();
  say("synthesizing " + base->target->describe() + " on " + topo.name +
      " for " + fmt(opts.targetBytes / 1024.0, 0) +
      " KiB; chunk splits to "
      "try: " +
      [&] {
        std::string s;
        for (auto &ph : phases)
          for (int k : ph)
            s += (s.empty() ? "" : ", ") + std::to_string(k);
        return s;
      }());
  measureBaselines();
  minAlphaUs = std::numeric_limits<double>::infinity();
  for (int l = 0; l < (int)topo.links.size(); ++l) {
    minAlphaUs = std::min(minAlphaUs, topo.links[l].alphaUs);
    maxLinkGBps = std::max(maxLinkGBps, topo.effectiveBandwidth(l));
  }
  bool first = true, done = false;
  // Builds the routing problem of one split; the first one also decides
  // feasibility.
  auto prepare = [&](const Setup &setup) -> Expected<RoutingProblem> {
    auto t0 = Clock::now();
    auto problem = buildRoutingProblem(topo, sketch, setup.route);
    stages.add("problem", since(t0));
    if (problem && first) {
      first = false;
      sketchFits = true;
      sketchLinks = problem->linkUsable;
      // Not proven by the time limit: the search goes on as if feasible.
      if (auto why = explainInfeasible(*problem, sketch, deadline)) {
        result.feasible = false;
        result.infeasibility = *why;
      }
      for (const std::string &note : problem->notes)
        result.notes.push_back(note);
    }
    return problem;
  };
  // Large machines at bandwidth-bound sizes: Z3 routing of one split can
  // take most of the time limit, while the heuristic trees of the next
  // splits are cheap and often better. A quick pass evaluates those first
  // (at most a third of the time).
  if (n >= 32 && bandwidthBound(*base) && !phases.empty()) {
    heuristicsOnly = true;
    auto until = Clock::now() + (deadline - Clock::now()) / 3;
    for (size_t i = 0; i < phases.front().size() && i < 3; ++i) {
      if (stopNow() || (Clock::now() >= until && haveSchedule()))
        break;
      int k = phases.front()[i];
      if (!canSetUp(k)) {
        result.timeLimitHit = true;
        break;
      }
      auto ts = Clock::now();
      auto setups = makeSetups(opts, n, k);
      if (!setups) {
        if (!keepOnError(k, setups.error()))
          return setups.error();
        break;
      }
      const Setup &setup = setups->front();
      auto problem = prepare(setup);
      if (!problem) {
        if (!keepOnError(k, problem.error()))
          return problem.error();
        break;
      }
      if (!result.feasible) {
        result.stages = stages.list;
        return std::move(result);
      }
      boundOnce(*setup.target);
      noteSetUp(ts, k);
      say("chunkup " + std::to_string(k) + ": quick pass (heuristic trees)");
      quickSplits.insert(k);
      searchChunkup(k, setup, *problem, until);
      if (atBound())
        break;
    }
    heuristicsOnly = false;
    done = atBound();
  }
  for (const std::vector<int> &ks : phases) {
    int misses = 0;
    double bestBefore = best.timeUs;
    for (size_t i = 0; i < ks.size() && !done; ++i, --remainingKs) {
      int k = ks[i];
      if (stopNow()) {
        result.timeLimitHit = true;
        done = true;
        break;
      }
      // A coarser split may still fit where this one does not (a
      // broadcast on 1,024 ranks starts at 512 chunks).
      if (!canSetUp(k)) {
        result.timeLimitHit = true;
        continue;
      }
      auto ts = Clock::now();
      auto setups = makeSetups(opts, n, k);
      if (!setups) {
        if (!keepOnError(k, setups.error()))
          return setups.error();
        done = true;
        break;
      }
      // Earlier splits get more of the remaining time.
      double left =
          std::chrono::duration<double>(deadline - Clock::now()).count();
      int rest = (int)std::min<size_t>(remainingKs, 2);
      auto until =
          Clock::now() + std::chrono::microseconds(
                             (long long)(std::max(0.0, left) / rest * 1e6));
      for (size_t f = 0; f < setups->size(); ++f) {
        const Setup &setup = (*setups)[f];
        // Other families only while this split has time (building their
        // problem can take seconds on large machines).
        if (f > 0 &&
            (atBound() || Clock::now() >= until || bandwidthBound(setup)))
          break;
        auto problem = prepare(setup);
        if (!problem) {
          if (!keepOnError(k, problem.error()))
            return problem.error();
          done = true;
          break;
        }
        if (!result.feasible) {
          result.stages = stages.list;
          return std::move(result);
        }
        boundOnce(*setup.target);
        if (f == 0)
          noteSetUp(ts, k);
        // Moving contributions unreduced to their owner only pays when
        // latency dominates (checked above: at bandwidth-bound sizes it
        // multiplies the traffic into the owners).
        if (f > 0 && explainInfeasible(*problem, sketch, deadline))
          break;
        // The main family gets most of this split's time.
        auto familyUntil = f + 1 < setups->size()
                               ? Clock::now() + (until - Clock::now()) * 2 / 3
                               : until;
        searchChunkup(k, setup, *problem, familyUntil);
      }
      if (atBound() ||
          (best.timeUs * opts.goodEnough <= bound && beatsBaselines())) {
        done = true;
        break;
      }
      // Stop going this way once two splits in a row did not help (the
      // quick pass's splits, whose best trees came first, do not count).
      if (!quickSplits.count(k))
        misses = best.timeUs < bestBefore * 0.99 ? 0 : misses + 1;
      bestBefore = std::min(bestBefore, best.timeUs);
      if (misses >= 2)
        break;
    }
    if (done)
      break;
  }
  result.timeLimitHit |= timeUp();
  preferBaseline();
  if (!std::isfinite(best.timeUs))
    return Error(result.timeLimitHit
                     ? "the time limit (" + fmt(opts.timeLimitSec, 1) +
                           " s) ran out before any schedule, synthesized "
                           "or baseline, was verified on " +
                           topo.name + "; allow more time"
                     : "no verified schedule was found (see the notes above)");
  result.schedule = best.schedule;
  result.method = best.method;
  result.chunkup = best.chunkup;
  result.timeUs = best.timeUs;
  result.busbwGBps = best.busbwGBps;
  result.measureSeconds = best.measureSeconds;
  result.lowerBoundUs = bound;
  result.lowerBoundBandwidthUs = boundBandwidthUs;
  result.lowerBoundLatencyUs = boundLatencyUs;
  result.baselineUs = baselineUs;
  result.baselineName = baselineName;
  result.provenOptimal = best.proven && !result.timeLimitHit;
  result.smt = best.smt.empty() ? lastSmt : best.smt;
  result.stages = stages.list;
  return std::move(result);
}

} // namespace

Expected<SynthResult> synthesize(const Topology &topo, const Sketch &sketch,
                                 const SynthOptions &options) {
  if (Status s = topo.validate(); !s)
    return s.error();
  // A "switch" sketch models the machine (TACCL's meaning, SwitchModel.h):
  // the search, its simulations and the bound all use that model. Other
  // sketches use the machine itself (no copy of a 1,024-rank topology).
  if (sketch.intra != IntraStrategy::Switch) {
    Driver d(topo, sketch, options);
    return d.run();
  }
  auto model = applySketchSwitches(topo, sketch);
  if (!model)
    return model.error();
  // The Driver relies on a checked topology (SimOptions, BaselineOptions).
  if (Status s = model->topo.validate(); !s)
    return s.error();
  Driver d(model->topo, sketch, options);
  auto result = d.run();
  if (result && model->changed)
    result->modelTopology = model->topo;
  if (result)
    result->notes.insert(result->notes.begin(), model->notes.begin(),
                         model->notes.end());
  return result;
}

} // namespace ccsynth::synth
