//===- Tuning.cpp - The tuner ---------------------------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Times configurations of a schedule with the step model and picks the
// best: timeConfiguration / timeCandidate (one configuration), the
// estimates synth ranks candidates with (screenGeneratedCodeUs,
// generatedCodeUs), and tuneCompile, which weighs every configuration of a
// request, NCCL's programs among them, within a deadline. Declared in
// Tuning.h; the policy that turns its result into what compile writes is
// in TunedCompile.cpp. docs/compiler.md ("The tuned compile").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Tuning/Tuning.h"
#include "TuningInternal.h"

#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Baselines/Rings.h"
#include "ccsynth/Perf/StepPrediction.h"
#include "ccsynth/Perf/StepSimulator.h"
#include "ccsynth/Target/KernelKnobs.h"
#include "ccsynth/Target/MSCCLXml.h"
#include "ccsynth/Target/SwitchLowering.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>

namespace ccsynth::tuning {

namespace detail {

/// Whether what `request` times takes any element count (generated code of
/// a built-in collective), so that its loop length does not matter.
bool anyCount(const TuneRequest &request, const Schedule &schedule) {
  return request.generatedCode &&
         schedule.collective.kind != CollectiveKind::Custom;
}

/// Compiles and times the configuration `cand` holds (its instances,
/// protocol, fusion, local threadblocks and pipeline parts) at `sizes`;
/// `hasLocal` says whether the program has peerless threadblocks.
std::optional<TuneCandidate>
timeConfiguration(const Schedule &schedule, const Topology &topology,
                  CompileOptions c, TuneCandidate cand,
                  const TuneRequest &request, bool *hasLocal, bool ncclKernel) {
  cand.applyTo(c);
  std::optional<msccl::Algo> algo =
      lowerForTiming(schedule, topology, c, request.generatedCode);
  if (!algo)
    return std::nullopt;
  // Only NCCL's kernel counts (a reference, never written): one timing.
  const bool kernelOnly =
      ncclKernel && request.ncclReferenceOnly && !request.generatedCode;
  if (hasLocal) {
    *hasLocal = false;
    for (const msccl::Gpu &g : algo->gpus)
      for (const msccl::Threadblock &tb : g.tbs)
        *hasLocal |= tb.send < 0 && tb.recv < 0;
  }
  // Generated code takes any count of a built-in collective (ragged
  // tiles), not only multiples of the loop it is timed through.
  cand.nchunksperloop =
      anyCount(request, schedule) ? 1 : std::max(1, algo->nchunksperloop);
  cand.protocol = algo->proto;
  // Generated code: timed with each knob choice; the fastest (geometric
  // mean over the sizes; the earlier choice, fewer loads in flight, within
  // 0.1%) is kept. The choice changes only the threadblocks' throughput:
  // the program is lowered once.
  std::vector<codegen::KernelKnob> knobs = request.knobs;
  if (!request.generatedCode || knobs.empty())
    knobs = {codegen::KernelKnob{}};
  double bestLog = INFINITY;
  for (const codegen::KernelKnob &knob : knobs) {
    std::vector<msccl::StepSimOptions> perSize;
    for (double bytes : request.sizes) {
      perSize.push_back(perf::stepSimOptions(schedule.collective, bytes,
                                             request.generatedCode,
                                             request.tileBytes));
      perSize.back().interpreter = !kernelOnly;
      if (knob.arch > 0)
        perSize.back().tbScale =
            codegen::kernelKnobScale(knob, topology.stepModel);
    }
    auto timed = request.timing().predict(*algo, topology, perSize);
    if (!timed)
      return std::nullopt;
    std::vector<double> times;
    double logSum = 0;
    for (const msccl::StepSimResult &r : *timed) {
      times.push_back(r.timeUs);
      logSum += std::log(r.timeUs);
    }
    if (logSum < bestLog - 1e-3 * (double)times.size()) {
      bestLog = logSum;
      cand.knob = knob;
      cand.timeUs = std::move(times);
    }
  }
  // NCCL's program as NCCL's kernel runs it: the same hops without
  // MSCCL's interpreter (what NCCL reaches; the MSCCL timing is what the
  // file would take).
  if (kernelOnly) {
    cand.ncclKernelUs = cand.timeUs;
  } else if (ncclKernel && !request.generatedCode) {
    std::vector<msccl::StepSimOptions> perSize;
    for (double bytes : request.sizes)
      perSize.push_back(ncclNativeStepOptions(schedule.collective, bytes));
    if (auto timed = request.timing().predict(*algo, topology, perSize))
      for (const msccl::StepSimResult &r : *timed)
        cand.ncclKernelUs.push_back(r.timeUs);
  }
  return cand;
}

} // namespace detail

std::optional<TuneCandidate> timeCandidate(const Schedule &schedule,
                                           const Topology &topology,
                                           const CompileOptions &base,
                                           const TuneCandidate &config,
                                           const TuneRequest &request) {
  return timeConfiguration(schedule, topology, base, config, request, nullptr);
}

std::optional<double> screenGeneratedCodeUs(const Schedule &schedule,
                                            const Topology &topology,
                                            double bytes) {
  std::optional<double> best;
  for (int instances : tuningInstances(schedule)) {
    if (instances > 4)
      break;
    CompileOptions c;
    c.instances = instances;
    c.protocol = "Simple";
    std::optional<msccl::Algo> algo =
        lowerForTiming(schedule, topology, c, true);
    if (!algo)
      continue;
    for (double tile :
         generatedTileCandidates(schedule, (double)(1 << 20), true)) {
      auto t = msccl::simulateSteps(
          *algo, topology,
          perf::stepSimOptions(schedule.collective, bytes, true, tile));
      if (t && (!best || t->timeUs < *best))
        best = t->timeUs;
    }
  }
  return best;
}

std::optional<double>
generatedCodeUs(const Schedule &schedule, const Topology &topology,
                double bytes,
                std::optional<std::chrono::steady_clock::time_point> until,
                bool *cutShort) {
  if (cutShort)
    *cutShort = false;
  TuneRequest req;
  req.sizes = {bytes};
  req.instances = tuningInstances(schedule);
  req.protocols = {"Simple"};
  req.fallback = false;
  req.inNetwork = false;
  req.generatedCode = true;
  req.narrow = true;
  req.until = until;
  req.firstAlways = true;
  CompileOptions base;
  base.target = CompileTarget::Cuda;
  base.verify = false;
  // Within synth's time limit: NCCL's count of switch threadblocks and the
  // coarse tiles (the compile of what synth writes weighs all of them).
  base.switchLanes = msccl::kDefaultSwitchLanes;
  // As the tuned compile chooses: the tile whose fastest configuration is
  // fastest (a smaller one by more than the model's noise, 2%), there the
  // first configuration in its order whose code fits the budget.
  std::optional<TuneResult> chosen;
  std::optional<double> chosenUs;
  double chosenTile = 0;
  for (double tile :
       generatedTileCandidates(schedule, (double)(1 << 20), true)) {
    req.tileBytes = tile;
    base.tileBytes = (unsigned long long)tile;
    TuneResult t = tuneCompile(schedule, topology, base, req);
    if (cutShort)
      *cutShort |= t.cutShort;
    if (t.best < 0)
      continue;
    double fastest = t.candidates[t.best].timeUs[0];
    if (!chosenUs || fastest < 0.98 * *chosenUs) {
      chosenUs = fastest;
      chosenTile = tile;
      chosen = std::move(t);
    }
  }
  if (!chosen)
    return std::nullopt;
  base.tileBytes = (unsigned long long)chosenTile;
  std::vector<int> order = generatedOrder(*chosen);
  for (size_t j = 0; j < order.size() && j < kGeneratedCodeTries; ++j) {
    const TuneCandidate &c = chosen->candidates[order[j]];
    if (c.timeUs.empty())
      continue;
    CompileOptions o = base;
    c.applyTo(o);
    o.protocol = base.protocol;
    CompileResult r =
        compileSchedule(candidateSchedule(*chosen, c, schedule), o);
    if (r.ok() && r.output->size() <= kGeneratedCodeBudget)
      return c.timeUs[0];
  }
  // None fits: the schedule as written untuned (one instance, 1 MiB tiles,
  // the GPU's default kernel knobs, at most 4 loads in flight where switch
  // operations wait for point-to-point steps).
  TuneCandidate plain;
  TuneRequest one = req;
  one.tileBytes = (double)(1 << 20);
  base.tileBytes = 1 << 20;
  std::vector<codegen::KernelKnob> table = codegen::defaultKernelKnobs();
  if (int entry = codegen::kernelKnobEntry(table, topology.stepModel.smArch);
      entry >= 0) {
    codegen::KernelKnob knob = table[entry];
    if (int cap = switchLoadsCap(schedule))
      knob.loads = std::min(knob.loads, cap);
    one.knobs = {knob};
  }
  auto timed = timeCandidate(schedule, topology, base, plain, one);
  if (!timed || timed->timeUs.empty())
    return std::nullopt;
  return timed->timeUs[0];
}

TuneResult tuneCompile(const Schedule &schedule, const Topology &topology,
                       const CompileOptions &base, const TuneRequest &request) {
  TuneResult result;
  using Clock = std::chrono::steady_clock;
  // The longest configuration timed so far, and the most seconds one took
  // per transfer lowered (the program's transfers times its instances): a
  // configuration of many more (NCCL's ring on hundreds of ranks) takes
  // that much longer.
  double longest = 0, perTransfer = 0;
  auto fits = [&](bool firstOfOwn, size_t transfers = 0) {
    if (!request.until || (request.firstAlways && firstOfOwn))
      return true;
    double need = longest > 0 ? 1.5 * longest : request.firstEstimateSeconds;
    need = std::max(need, 1.5 * perTransfer * (double)transfers);
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(need)) <
           *request.until;
  };
  auto tookSeconds = [&](double seconds, size_t transfers) {
    longest = std::max(longest, seconds);
    perTransfer =
        std::max(perTransfer, seconds / (double)std::max<size_t>(1, transfers));
  };
  auto explore = [&](const Schedule &s, int program) {
    // Past `until` (firstAlways), the schedule's own programs are still
    // timed until one configuration fits, trying at most a few.
    bool own = program < 0; // the schedule's, or its re-cut
    bool timedOne = false;
    int started = 0;
    // NCCL's ring is NCCL's own fused hops; the schedule also unfused and
    // fused without forwarding steps.
    struct Fusion {
      bool fuse, forward;
    };
    std::vector<Fusion> fusions{{base.fuse, base.fuseForward}};
    bool wide = program < 0 && !request.narrow;
    if (wide && base.fuse) {
      fusions.push_back({false, true});
      if (base.fuseForward)
        fusions.push_back({true, false});
    }
    // Local reductions on more threadblocks (reduction chains as trees),
    // alone and with chunks cut in two (more, shorter trees): for the
    // schedule's own programs that have local steps. The user's choice of
    // either stands.
    struct Local {
      int tbs, pipeline;
    };
    std::vector<Local> localChoices{{base.localTbs, base.pipeline}};
    if (wide && base.localTbs == 1 && base.pipeline == 1)
      localChoices = {{1, 1}, {8, 1}, {8, 2}};
    // A reduction that spreads its results over the connections that
    // gathered them: also with the two phases on separate channels
    // (reductionPhases), where the next loop iteration's reduction need
    // not wait for this one's spreading.
    std::vector<bool> splits{base.splitPhases};
    if (wide && !base.splitPhases &&
        !reductionPhases(s.collective, s.transfers).empty())
      splits.push_back(true);
    // Switch threadblocks: NCCL's count, and the few that reach the
    // switch's peak (each operation ends sooner), unless the user chose.
    std::vector<int> laneChoices{base.switchLanes};
    if (own && base.switchLanes == 0 && base.target == CompileTarget::Cuda &&
        s.usesSwitches())
      laneChoices.push_back(msccl::kSwitchTbsForPeak);
    for (int lanes : laneChoices)
      for (bool split : splits)
        for (auto [fuse, forward] : fusions)
          for (const std::string &proto : request.protocols)
            for (auto [localTbs, pipeline] : localChoices) {
              // LL moves small messages, where local reductions are short and
              // loop iterations few.
              if (proto == "LL" &&
                  (localTbs != base.localTbs || split != base.splitPhases))
                continue;
              int prev = -1;
              bool hasLocal = true;
              for (int k : request.instances) {
                if (!fits(own && !timedOne && started < 6,
                          s.transfers.size() * (size_t)k)) {
                  result.cutShort = true;
                  return;
                }
                ++started;
                auto began = Clock::now();
                TuneCandidate config;
                config.instances = k;
                config.protocol = proto;
                config.fuse = fuse;
                config.fuseForward = forward;
                config.localTbs = localTbs;
                config.pipeline = pipeline;
                config.splitPhases = split;
                config.switchLanes = lanes;
                auto cand = timeConfiguration(s, topology, base, config,
                                              request, &hasLocal, program >= 0);
                tookSeconds(
                    std::chrono::duration<double>(Clock::now() - began).count(),
                    s.transfers.size() * (size_t)k);
                // More instances only make a program harder to fit.
                if (!cand)
                  break;
                cand->program = program;
                timedOne = true;
                // Past the instance count that fills the links, more only add
                // threadblocks and latency: stop once no size gains 1%. NCCL's
                // program is what the others are measured against: every count
                // (its time need not fall steadily with instances).
                bool gains = prev < 0 || program >= 0;
                for (size_t i = 0; prev >= 0 && i < cand->timeUs.size(); ++i)
                  gains |= cand->timeUs[i] <
                           result.candidates[prev].timeUs[i] * 0.99;
                // Unfused (or without forwarding steps), a program gains only
                // where fused steps serialize other steps behind them
                // (irregular routes, not rings): when its first count is not
                // 10% faster than the fully fused one at some size, the other
                // counts are not tried either. With local reductions spread
                // over threadblocks, unfused receives feed more of them, which
                // pays only at higher counts: those are always tried.
                bool unfusedHelps = true;
                if ((!fuse || !forward) && prev < 0 && localTbs == 1)
                  for (const TuneCandidate &f : result.candidates)
                    if (f.program == program && f.fuse && f.fuseForward &&
                        f.instances == k && f.protocol == cand->protocol &&
                        f.localTbs == localTbs && f.pipeline == pipeline &&
                        f.splitPhases == split && f.switchLanes == lanes) {
                      unfusedHelps = false;
                      for (size_t i = 0; i < f.timeUs.size(); ++i)
                        unfusedHelps |= cand->timeUs[i] < f.timeUs[i] * 0.9;
                    }
                result.candidates.push_back(std::move(*cand));
                prev = (int)result.candidates.size() - 1;
                if (!gains || !unfusedHelps)
                  break;
              }
              // A program without local steps is the same with more
              // threadblocks for them.
              if (!hasLocal)
                break;
            }
  };
  if (!request.ncclOnly)
    explore(schedule, -1);
  // A chunk factor with an odd factor puts it in nchunksperloop, and MSCCL
  // then selects none of these lowerings for a power-of-two size: the same
  // routes on a power-of-two grid of sub-chunks are candidates too.
  // Generated code needs no such grid (it takes any count): the re-cut
  // would only be a larger program of the same routes.
  int grid = powerOfTwoGrid(schedule.collective.chunkFactor);
  if (grid != schedule.collective.chunkFactor && !result.candidates.empty() &&
      !anyCount(request, schedule)) {
    if (auto g = regridChunks(schedule, grid)) {
      result.regridded = g.take();
      explore(*result.regridded, TuneCandidate::kRegridded);
    }
  }
  size_t own = result.candidates.size();
  // Whether the deadline cuts NCCL's programs short, apart from the
  // schedule's own.
  bool ownCutShort = result.cutShort;
  result.cutShort = false;
  // Whether work on NCCL's programs of `transfers` lowered transfers may
  // start; marks the result cut short where not. Past the deadline NCCL's
  // programs are not even built: they are the reference, not what is
  // written, and on hundreds of ranks each takes seconds.
  auto mayStart = [&](size_t transfers) {
    if (fits(false, transfers))
      return true;
    result.cutShort = true;
    return false;
  };
  auto mayBuild = [&] { return mayStart(0); };
  if (request.fallback)
    result.ncclPrograms =
        ncclShaped(schedule, topology, schedule.collective.inPlace, mayBuild);
  // NCCL runs a collective out of place as fast as in place (its first hop
  // reads the input, its last writes the output), where the ring programs
  // here spend a local copy: what NCCL reaches out of place is the faster
  // of the two. The in-place programs only measure it; an out-of-place
  // call cannot run them.
  std::vector<Schedule> inPlace;
  if (request.fallback && !schedule.collective.inPlace)
    inPlace = ncclShaped(schedule, topology, true, mayBuild);
  // What NCCL's program reaches at each size, whatever MSCCL would select:
  // NCCL runs it natively (rings longer than MSCCL's threadblocks hold on
  // one threadblock each). Such a program's MSCCL lowering (cut over
  // threadblocks that share its links) is timed only as a file to write:
  // not where only NCCL's reach is asked for.
  std::vector<double> nativeBest;
  std::vector<bool> native;
  for (const std::vector<Schedule> *programs : {&result.ncclPrograms, &inPlace})
    for (const Schedule &p : *programs) {
      std::vector<double> us = ncclNativeUs(
          p, topology, request,
          [&](int k) { return mayStart(p.transfers.size() * (size_t)k); },
          [&](int k, double seconds) {
            tookSeconds(seconds, p.transfers.size() * (size_t)k);
          });
      native.push_back(!us.empty());
      if (us.empty())
        continue;
      nativeBest.resize(us.size(), INFINITY);
      for (size_t k = 0; k < us.size(); ++k)
        nativeBest[k] = std::min(nativeBest[k], us[k]);
    }
  size_t program = 0;
  for (size_t p = 0; p < result.ncclPrograms.size(); ++p)
    if (!(request.ncclOnly && native[program++]))
      explore(result.ncclPrograms[p], (int)p);
  size_t written = result.candidates.size();
  for (size_t p = 0; p < inPlace.size(); ++p)
    if (!(request.ncclOnly && native[program++]))
      explore(inPlace[p], (int)(result.ncclPrograms.size() + p));
  if (own < result.candidates.size() || !nativeBest.empty()) {
    result.ncclBestUs.assign(request.sizes.size(), INFINITY);
    for (size_t i = own; i < result.candidates.size(); ++i) {
      const TuneCandidate &c = result.candidates[i];
      const std::vector<double> &us =
          c.ncclKernelUs.size() == request.sizes.size() ? c.ncclKernelUs
                                                        : c.timeUs;
      for (size_t k = 0; k < request.sizes.size(); ++k)
        result.ncclBestUs[k] = std::min(result.ncclBestUs[k], us[k]);
    }
    for (size_t k = 0; k < nativeBest.size(); ++k)
      result.ncclBestUs[k] = std::min(result.ncclBestUs[k], nativeBest[k]);
  }
  result.ncclCutShort = result.cutShort;
  result.cutShort |= ownCutShort;
  if (request.fallback && request.inNetwork) {
    std::vector<double> inNetwork =
        ncclInNetworkUs(schedule, topology, request.sizes);
    if (!inNetwork.empty() && result.ncclBestUs.empty())
      result.ncclBestUs.assign(request.sizes.size(), INFINITY);
    for (size_t k = 0; k < inNetwork.size(); ++k)
      result.ncclBestUs[k] = std::min(result.ncclBestUs[k], inNetwork[k]);
  }
  result.candidates.erase(result.candidates.begin() + (long)written,
                          result.candidates.end());
  if (request.ncclOnly)
    return result;
  // MSCCL selects a program only for sizes that are multiples of its
  // nchunksperloop: a candidate whose loop has an odd factor the schedule's
  // own does not have would serve none of the power-of-two sizes the
  // schedule serves.
  // Of NCCL's programs, those that MSCCL selects for every power-of-two
  // size are preferred when there are any (DGX-1's six rings: four of them).
  int ownOdd = 1;
  for (size_t i = 0; i < own; ++i)
    ownOdd = std::max(ownOdd, result.candidates[i].oddFactor());
  bool evenNccl = false;
  for (size_t i = own; i < result.candidates.size(); ++i)
    evenNccl |= result.candidates[i].oddFactor() == 1;
  int allowedOdd = evenNccl ? 1 : ownOdd;
  result.candidates.erase(std::remove_if(result.candidates.begin() + (long)own,
                                         result.candidates.end(),
                                         [&](const TuneCandidate &c) {
                                           return own > 0 &&
                                                  c.oddFactor() > allowedOdd;
                                         }),
                          result.candidates.end());
  if (result.candidates.empty())
    return result;

  size_t n = request.sizes.size();
  std::vector<double> best(n, INFINITY);
  for (const TuneCandidate &c : result.candidates)
    for (size_t k = 0; k < n; ++k)
      best[k] = std::min(best[k], c.timeUs[k]);
  for (TuneCandidate &c : result.candidates) {
    double logSum = 0;
    for (size_t k = 0; k < n; ++k)
      logSum += std::log(c.timeUs[k] / best[k]);
    c.score = std::exp(logSum / (double)n);
  }
  // The schedule's own configurations come first, fewer instances first,
  // so ties keep the schedule and the smaller program. A program MSCCL
  // selects for power-of-two sizes (no odd factor in its loop) goes before
  // one it does not, whatever their times.
  auto pick = [&](size_t from, size_t to) {
    bool even = false;
    for (size_t i = from; i < to; ++i)
      even |= result.candidates[i].oddFactor() == 1;
    int b = -1;
    for (size_t i = from; i < to; ++i)
      if ((!even || result.candidates[i].oddFactor() == 1) &&
          (b < 0 || result.candidates[i].score <
                        result.candidates[b].score * (1 - 1e-9)))
        b = (int)i;
    return b;
  };
  result.bestOwn = pick(0, own);
  result.best = pick(0, result.candidates.size());
  if (result.best >= (int)own) {
    // Only when NCCL's program is really faster, not within the model's
    // noise.
    if (result.bestOwn >= 0 && result.candidates[result.best].score * 1.02 >=
                                   result.candidates[result.bestOwn].score)
      result.best = result.bestOwn;
    else
      result.replacement =
          result.ncclPrograms[result.candidates[result.best].program];
  }
  return result;
}

} // namespace ccsynth::tuning
