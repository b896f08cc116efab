//===- SynthCommand.cpp - `ccsynth synth` ---------------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `ccsynth synth`: runs the synthesizer on a topology and a sketch, writes
// the schedule (and the SMT dump on request), and prints a summary: the
// chunk-level times against the baselines and the lower bound, the
// step-level prediction of the compiled program against NCCL's ring
// (tuning::predictSteps, printed by printStepLevel), by which the
// runners-up are ranked
// again, and with --in-network NCCL's in-network algorithms and the mixes
// (printInNetwork). Progress lines go to stderr on long runs.
// Sections: formatting, step-level predictions, the in-network summary,
// options and progress, runSynth, the command's options.
// See docs/synth.md (its opening, on the summary) and docs/in-network.md
// ("Synthesis (`synth --in-network`)").
//
//===----------------------------------------------------------------------===//
#include "Command.h"
#ifdef CCSYNTH_HAVE_MLIR
#include "ccsynth/Tuning/StepLevel.h"
#include "ccsynth/Tuning/Tuning.h"
#endif

#include "ccsynth/Analysis/LowerBound.h"
#include "ccsynth/Analysis/Plot.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Baselines/InNetworkMix.h"
#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/Support/Json.h"
#include "ccsynth/Synth/Synthesizer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <iostream>
#include <memory>
#include <thread>

namespace ccsynth::cli {

#ifdef CCSYNTH_HAVE_MLIR
using namespace ccsynth::tuning;
#endif

namespace {

/// A speed ratio that never prints a slower result as 1.000x: as many
/// digits as it takes to show the difference (up to 1e-6), then the word.
std::string formatSpeedup(double ratio) {
  char buf[64];
  if (std::abs(ratio - 1) <= 1e-12)
    ratio = 1;
  int digits = 3;
  while (digits < 6) {
    std::snprintf(buf, sizeof buf, "%.*f", digits, ratio);
    double shown = std::atof(buf);
    if ((ratio < 1) == (shown < 1) && (ratio > 1) == (shown > 1))
      break;
    ++digits;
  }
  std::snprintf(buf, sizeof buf, "%.*fx", digits, ratio);
  std::string s = buf;
  if (ratio < 1 - 1e-12)
    s += ", slower than the baseline";
  else if (ratio <= 1 + 1e-12)
    s += ", tied";
  return s;
}

#ifdef CCSYNTH_HAVE_MLIR
void printStepLevel(FILE *out, const StepLevel &p, const Schedule &sched,
                    const std::vector<double> &sizes) {
  if (!p.absent.empty()) {
    std::fprintf(out, "  step level: %s\n", p.absent.c_str());
    return;
  }
  bool nccl = !p.ncclUs.empty();
  std::fprintf(
      out,
      "  step level (what `ccsynth compile` writes, tuned per size%s)%s:\n",
      !nccl        ? ""
      : p.ncclTree ? "; NCCL's ring and tree tuned the same way, the faster"
                   : "; NCCL's ring tuned the same way",
      p.cutShort ? ", the time limit cut the tuning short" : "");
  std::fprintf(out, "  %10s %12s %12s", "size", "time(us)", "busbw(GB/s)");
  if (nccl)
    std::fprintf(out, " %12s %12s %9s", "NCCL(us)", "busbw(GB/s)", "vs NCCL");
  std::fprintf(out, "\n");
  double factor = sched.collective.busBwFactor();
  auto busbw = [&](double bytes, double us) {
    return us > 0 ? bytes / us / 1e3 * factor : 0.0;
  };
  std::string slower;
  std::string unselected;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (!std::isfinite(p.ownUs[k])) {
      std::fprintf(out, "  %10s %12s %12s", formatBytes(sizes[k]).c_str(), "-",
                   "-");
      if (nccl && std::isfinite(p.ncclUs[k]))
        std::fprintf(out, " %12.2f %12.2f %9s", p.ncclUs[k],
                     busbw(sizes[k], p.ncclUs[k]), "-");
      std::fprintf(out, "\n");
      unselected += (unselected.empty() ? "" : ", ") + formatBytes(sizes[k]);
      continue;
    }
    std::fprintf(out, "  %10s %12.2f %12.2f", formatBytes(sizes[k]).c_str(),
                 p.ownUs[k], busbw(sizes[k], p.ownUs[k]));
    if (nccl && std::isfinite(p.ncclUs[k])) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%s%.3fx", p.ncclCutShort ? "<=" : "",
                    p.ncclUs[k] / p.ownUs[k]);
      std::fprintf(out, " %12.2f %12.2f %9s", p.ncclUs[k],
                   busbw(sizes[k], p.ncclUs[k]), ratio);
      if (p.ncclUs[k] < p.ownUs[k])
        slower += (slower.empty() ? "" : ", ") + formatBytes(sizes[k]);
    }
    std::fprintf(out, "\n");
  }
  if (!unselected.empty())
    std::fprintf(out,
                 "  at %s no lowering of the schedule is selected by MSCCL "
                 "(the size is below or not a multiple of its loop of "
                 "chunks): NCCL runs there\n",
                 unselected.c_str());
  if (!slower.empty())
    std::fprintf(out,
                 "  at %s NCCL's %s is faster as it runs: the tuned compile "
                 "lets NCCL's own program serve those sizes\n",
                 slower.c_str(), p.ncclTree ? "ring or tree" : "ring");
  if (nccl && p.ncclCutShort)
    std::fprintf(out, "  <=: the time limit left NCCL's tuning unfinished, so "
                      "NCCL may be faster than shown (`ccsynth compile` "
                      "tunes it in full)\n");
}
#endif

/// How many screened in-network candidates synth compiles (the fastest
/// screened; each compile tunes, which takes seconds to minutes).
constexpr size_t kInNetworkCompiles = 3;

/// The largest schedule whose in-network mixes synth weighs without being
/// asked: as many transfers as it predicts at the step level.
constexpr size_t kMaxDefaultInNetworkTransfers = 20000;
#ifdef CCSYNTH_HAVE_MLIR
static_assert(kMaxDefaultInNetworkTransfers == kMaxFullyTunedTransfers);
#endif

/// An in-network candidate and what its generated code takes at the
/// target size (step level; infinite when it does not lower).
struct CompiledCandidate {
  const InNetworkCandidate *candidate = nullptr;
  double us = INFINITY;
};

/// The in-network part of the summary: NCCL's in-network algorithms alone,
/// the fastest mix, what they compile to, and what was written (null: the
/// point-to-point schedule), against the point-to-point schedule (`p2pUs`,
/// at the level `p2pLevel` names: its compiled MSCCL program ("steps"), its
/// generated code ("generated code"; `p2pCut`: the time limit cut its
/// tuning short) or its transfers ("chunks")) and NCCL's ring (`ncclRingUs`,
/// step level; infinite when not timed).
void printInNetwork(FILE *out, const InNetworkSearch &s,
                    const std::vector<CompiledCandidate> &compiled,
                    int screened, bool compileCut, const Schedule *written,
                    double p2pUs, const std::string &p2pLevel, bool p2pCut,
                    double bytes, double factor, double ncclRingUs) {
  auto busbw = [&](double us) { return bytes / us / 1e3 * factor; };
  std::fprintf(out,
               "  in-network at %s (runtime model of NCCL's NVLS/CollNet "
               "kernels; %d mixes verified and timed%s):\n",
               formatBytes(bytes).c_str(), s.mixesTried,
               s.cutShort ? ", the time limit cut the search short" : "");
  double ncclBest = ncclRingUs;
  for (const InNetworkCandidate &c : s.alone) {
    std::fprintf(out, "  %31s %12.2f us %9.2f GB/s\n",
                 ("NCCL " + c.name).c_str(), c.timeUs, busbw(c.timeUs));
    ncclBest = std::min(ncclBest, c.timeUs);
  }
  if (std::isfinite(ncclRingUs))
    std::fprintf(out, "  %31s %12.2f us %9.2f GB/s\n", "NCCL ring (steps)",
                 ncclRingUs, busbw(ncclRingUs));
  else
    std::fprintf(out, "  (NCCL's ring is not timed here: the step level was "
                      "off or cut by the time limit. Where it beats NCCL's "
                      "in-network algorithms, as across nodes whose network "
                      "does not reduce, NCCL runs it, and the ratios below "
                      "overstate; `ccsynth compile --target cuda` of the "
                      "written schedule compares with it)\n");
  for (const InNetworkCandidate &c : s.own)
    std::fprintf(out, "  %31s %12.2f us %9.2f GB/s  %.3fx NCCL's best above\n",
                 ("ccsynth " + c.name).c_str(), c.timeUs, busbw(c.timeUs),
                 ncclBest / c.timeUs);
  std::fprintf(out, "  %31s %12.2f us %9.2f GB/s%s\n",
               ("point-to-point (" + p2pLevel + ")").c_str(), p2pUs,
               busbw(p2pUs),
               p2pCut ? "  (the time limit cut its tuning short: the best "
                        "configuration tried; compile tunes it in full)"
                      : "");
  if (s.best)
    std::fprintf(out, "  %31s %12.2f us %9.2f GB/s  %.3fx NCCL's best above\n",
                 ("best: " + s.best->name).c_str(), s.best->timeUs,
                 busbw(s.best->timeUs), ncclBest / s.best->timeUs);
  if (!compiled.empty()) {
    std::fprintf(out,
                 "  as generated code (compile --target cuda, step level; what "
                 "runs; %d of %zu candidates without IB SHARP screened by a "
                 "quick timing, the fastest compiled):\n",
                 screened, s.runnable.size());
    for (const CompiledCandidate &c : compiled) {
      if (!std::isfinite(c.us)) {
        std::fprintf(out, "  %31s  does not lower to generated code\n",
                     c.candidate->name.c_str());
        continue;
      }
      std::fprintf(
          out, "  %31s %12.2f us %9.2f GB/s  %.3fx NCCL's best above\n",
          c.candidate->name.c_str(), c.us, busbw(c.us), ncclBest / c.us);
    }
    if (compileCut)
      std::fprintf(out, "  (the time limit left the other candidates "
                        "uncompiled)\n");
  }
  std::string name;
  for (const CompiledCandidate &c : compiled)
    if (written && &c.candidate->schedule == written)
      name = c.candidate->name;
  if (written)
    std::fprintf(out,
                 "  the in-network schedule %s was written: its generated "
                 "code is the fastest of these and beats the point-to-point "
                 "schedule's program (MSCCL XML and MSCCL++ plans have no "
                 "switch operations)\n",
                 name.c_str());
  else
    std::fprintf(out, "  the point-to-point schedule was written: no "
                      "in-network schedule runs faster as compiled\n");
}

/// The longest --time-limit: a week.
constexpr double kMaxTimeLimitSeconds = 7 * 86400.0;

struct SynthCliOptions {
  TopoProfileArgs profile;
  std::string topo;
  std::string sketch;
  std::string collective;
  std::string output;
  std::string dumpSmt;
  std::string size = "1G";
  int chunks = 0;
  double timeLimit = 60;
  unsigned seed = 0;
  int root = 0;
  bool inPlace = false;
  bool exactChunkup = false;
  double stopAt = 90;
  bool quiet = false;
  bool noStepLevel = false;
  bool inNetwork = false;
  bool noInNetwork = false;
};

/// Progress lines go to stderr, but only once the run has lasted a second:
/// quick runs stay quiet, long ones show what they are doing. With `eager`
/// (the debug listing of candidates) every line goes at once.
class Progress {
public:
  Progress(bool quiet, bool eager) : quiet(quiet), eager(eager) {}
  void operator()(const std::string &line) {
    if (quiet)
      return;
    double t = std::chrono::duration<double>(Clock::now() - start).count();
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, "[%6.1fs] ", t);
    std::string text = std::string("synth: ") + stamp + line + "\n";
    if (t < 1.0 && !eager) {
      held += text;
      return;
    }
    std::cerr << held << text;
    held.clear();
  }

private:
  using Clock = std::chrono::steady_clock;
  bool quiet, eager;
  Clock::time_point start = Clock::now();
  std::string held;
};

int runSynth(const SynthCliOptions &o) {
  auto sizes = parseSizes(o.size);
  if (!sizes)
    return usage(sizes.error());
  if (sizes->size() != 1)
    return usage(Error("--size takes one buffer size (e.g. 1G)"));
  // A week bounds any search worth waiting for, and keeps the deadline
  // arithmetic (microseconds in 64 bits, solver milliseconds) exact.
  if (!(o.timeLimit >= 0 && o.timeLimit <= kMaxTimeLimitSeconds))
    return usage(Error("--time-limit " + formatFigure(o.timeLimit) +
                       ": expected seconds from 0 to 604800 (a week)"));
  if (o.chunks < 0 || o.chunks > 1024)
    return usage(Error("--chunks must be between 1 and 1024 (0 = search)"));
  if (!(o.stopAt > 0 && o.stopAt <= 100))
    return usage(Error("--stop-at must be a percentage in (0, 100]"));
  // The schedule and the SMT dump are written together or not at all;
  // check both paths before a long search.
  {
    auto kind = parseCollectiveKind(o.collective);
    bool collectiveFile = !kind || *kind == CollectiveKind::Custom;
    if (Status s = checkOutputsApart(
            {topologyPathArg("-t", o.topo),
             {"--topo-profile", o.profile.file},
             {"-k", o.sketch},
             {"-c", collectiveFile ? o.collective : std::string()}},
            {{"-o", o.output}, {"--dump-smt", o.dumpSmt}});
        !s)
      return usage(s.error());
  }
  if (Status s = checkOutputs({o.output, o.dumpSmt}); !s)
    return fail(s.error());
  // The time limit counts from here: loading a large machine takes seconds.
  auto t0 = std::chrono::steady_clock::now();
  auto seconds = [](double s) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(s));
  };
  auto topo = loadTopologyArg(o.topo, o.profile);
  if (!topo)
    return fail(topo.error());
  // The schedule records the topology's hash: on another core while the
  // search runs (it takes seconds on 16.7M links). The synthesizer only
  // reads the topology.
  // A failing run stops it rather than wait for it.
  std::atomic<bool> stopHash{false};
  std::future<std::string> hash =
      std::async(std::launch::async, [t = &*topo, &stopHash] {
        return topologyHash(*t, &stopHash);
      });
  struct StopOnExit {
    std::atomic<bool> &stop;
    ~StopOnExit() { stop = true; }
  } stopOnExit{stopHash};
  synth::Sketch sketch;
  if (o.sketch.empty()) {
    sketch = synth::defaultSketch(topo->numNodes());
  } else {
    // Reading counts against the time limit like the rest (a hostile file
    // is refused by its size first).
    auto readEnd = t0 + seconds(o.timeLimit);
    auto sk = synth::loadSketch(
        o.sketch,
        JsonStop{
            [readEnd] { return std::chrono::steady_clock::now() > readEnd; },
            "the time limit (" + formatFigure(o.timeLimit) +
                " s) ran out while the sketch was read; allow more "
                "time"});
    if (!sk)
      return fail(sk.error());
    sketch = sk.take();
  }
  synth::SynthOptions so;
  if (auto kind = parseCollectiveKind(o.collective);
      kind && *kind != CollectiveKind::Custom) {
    so.kind = *kind;
  } else {
    // A schedule file whose collective is used (e.g. a custom one).
    auto doc = loadScheduleJson(o.collective);
    if (!doc)
      return fail(
          kind ? Error("a custom collective is given as a schedule "
                       "JSON file whose 'collective' holds its "
                       "pre/postconditions")
               : Error("unknown collective '" + o.collective +
                           "' (expected one of: " + collectiveKindNames() +
                           ", or a schedule JSON file naming a custom "
                           "collective)",
                       {}, "reading it as a file: " + doc.error().format()));
    if (doc->collective.kind == CollectiveKind::Custom) {
      so.kind = CollectiveKind::Custom;
      so.custom = doc->collective;
    } else {
      so.kind = doc->collective.kind;
      so.root = doc->collective.root;
      so.inPlace = doc->collective.inPlace;
    }
  }
  if (so.kind != CollectiveKind::Custom) {
    so.root = o.root;
    so.inPlace = o.inPlace;
    if (o.root < 0 || o.root >= topo->numRanks())
      return usage(Error("--root " + std::to_string(o.root) +
                         " is not a rank of '" + topo->name + "' (0.." +
                         std::to_string(topo->numRanks() - 1) + ")"));
  }
  // The in-network algorithms are weighed wherever one applies (the fast
  // choice: a switch that reduces halves what crosses the links), unless
  // --no-in-network leaves them out; --in-network asks for them and is an
  // error where none applies. A sketch's `in_network` weighs only its
  // switch kinds ([] allows none).
  if (o.inNetwork && o.noInNetwork)
    return usage(Error("--in-network and --no-in-network: give one or the "
                       "other"));
  bool asked = o.inNetwork;
  bool inNetworkOn = !o.noInNetwork;
  std::vector<SwitchKind> allowedSwitches;
  if (sketch.inNetwork) {
    if (sketch.inNetwork->empty() && o.inNetwork)
      return usage(Error("--in-network: the sketch allows no in-network "
                         "switch (\"in_network\": []); leave out one or the "
                         "other",
                         sketch.inNetworkLoc));
    if (!sketch.inNetwork->empty() && o.noInNetwork)
      return usage(Error("--no-in-network: the sketch's in_network lists "
                         "switches to weigh; leave out one or the other",
                         sketch.inNetworkLoc));
    if (sketch.inNetwork->empty()) {
      inNetworkOn = false;
    } else {
      asked = true;
      allowedSwitches = *sketch.inNetwork;
    }
  }
  // Where none applies, weighing by default is simply off; asked for, it is
  // an error.
  if (inNetworkOn && !inNetworkApplies(so.kind, *topo, allowedSwitches)) {
    if (!asked) {
      inNetworkOn = false;
    } else if (!allowedSwitches.empty()) {
      std::string kinds;
      for (SwitchKind k : allowedSwitches)
        kinds += std::string(kinds.empty() ? "" : ", ") + toString(k);
      return usage(
          Error("the sketch's in_network allows " + kinds +
                    " switches, and no in-network algorithm applies to " +
                    std::string(toString(so.kind)) + " on '" + topo->name +
                    "' with only those (NVLS and NVLS-tree use NVLS switches, "
                    "CollNet SHARP switches, NVLS with SHARP both; nvls on "
                    "dgx-h100, dgx-b200 and gb200-nvl72, sharp on several of "
                    "their nodes)",
                sketch.inNetworkLoc));
    } else {
      return usage(Error(
          "--in-network: no in-network algorithm applies to " +
          std::string(toString(so.kind)) + " on '" + topo->name +
          "' (NVLS needs an NVLS switch joining the ranks of every node, as "
          "on dgx-h100, dgx-b200 and gb200-nvl72, for allreduce, and on one "
          "node for reducescatter and allgather; CollNet a SHARP switch "
          "joining several nodes, for allreduce)"));
    }
  }
  so.chunkup = o.chunks;
  if (o.exactChunkup) {
    // TACCL's meaning: input_chunkup is the split, not a first guess.
    int k = sketch.inputChunkup;
    if (o.chunks > 0 && o.chunks != k)
      return fail(Error("--chunks " + std::to_string(o.chunks) +
                        " contradicts --exact-chunkup (the sketch's "
                        "input_chunkup is " +
                        std::to_string(k) + ")"),
                  kExitUsage);
    so.chunkup = k;
  }
  so.targetBytes = sizes->front();
  so.timeLimitSec = o.timeLimit;
  so.seed = o.seed;
  so.goodEnough = o.stopAt / 100.0;
  so.keepSmt = !o.dumpSmt.empty();
  // The tool is the edge that reads the environment.
  const bool debugCandidates =
      std::getenv("CCSYNTH_DEBUG_CANDIDATES") != nullptr;
  auto progress = std::make_shared<Progress>(o.quiet, debugCandidates);
  so.progress = [progress](const std::string &line) { (*progress)(line); };
  so.startedAt = t0;
  so.debugCandidates = debugCandidates;

  auto result = synth::synthesize(*topo, sketch, so);
  double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (!result)
    return fail(result.error());
  if (!result->feasible) {
    fail(result->infeasibility);
    std::cerr << "ccsynth: no schedule exists under this sketch; relax the "
                 "sketch where the message points\n";
    return kExitInfeasible;
  }
  Schedule &sched = result->schedule;
  // Times are on the machine as the sketch's switches model it.
  const Topology &model =
      result->modelTopology ? *result->modelTopology : *topo;
  // The topology fields let `ccsynth verify/simulate` find the machine and
  // notice when it changed.
  std::string hashText = hash.get();
  recordTopology(sched, o.topo, hashText, o.output);
  // What is left of the time limit (and of its grace, 10% or 2 s) for the
  // summary: each further simulation costs about what the synthesizer's
  // last verification and simulation of this schedule took.
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
        .count();
  };
  double budget = o.timeLimit + std::max(2.0, o.timeLimit * 0.1) * 0.9;
  auto affordable = [&](double seconds) {
    return elapsed() + seconds * 1.5 < budget;
  };
  // The synthesizer verified this very schedule; a second check in case of
  // a bug costs one more verification, done while the time limit itself
  // (not its grace) allows: on 4,096 ranks it takes half a second.
  if (elapsed() + result->measureSeconds * 1.5 < o.timeLimit) {
    VerifyOptions vo;
    vo.topology = &model;
    VerifyResult vr = verifySchedule(sched, vo);
    if (!vr.ok())
      return fail(Error("internal error: the synthesized schedule does not "
                        "verify: " +
                        vr.issues.front().message),
                  kExitVerifyFailed);
  }
  // The sizes the summary shows: 1K, 1M, 1G and the target.
  std::vector<double> sizesShown{1024.0, 1024.0 * 1024, 1024.0 * 1024 * 1024};
  if (std::find(sizesShown.begin(), sizesShown.end(), so.targetBytes) ==
      sizesShown.end())
    sizesShown.push_back(so.targetBytes);
  std::sort(sizesShown.begin(), sizesShown.end());
  const size_t targetAt =
      std::find(sizesShown.begin(), sizesShown.end(), so.targetBytes) -
      sizesShown.begin();
  // What runs ranks the schedule against the baseline the chunk level put
  // at or below it: the faster compiled program at the target size is
  // written (by more than 2%, the model's noise, for the baseline to win).
  // Configurations that would end past the time limit are not started.
  std::string rankedNote;
#ifdef CCSYNTH_HAVE_MLIR
  std::optional<StepLevel> steps;
  if (!o.noStepLevel) {
    // Weighed by default, the in-network algorithms come after this within
    // the same limit: a quarter of it is left to them.
    double stepShare = inNetworkOn && !asked ? 0.75 : 1.0;
    auto until = t0 + seconds(stepShare * o.timeLimit);
    const size_t at = targetAt;
    // The chunk level's runners-up (other chunk splits) and the baseline
    // it ranked at or below the schedule are ranked again by what runs:
    // the fastest compiled program at the target size is written, when it
    // beats the chunk level's choice by more than 2% (the model's noise).
    // At a power-of-two target size a program MSCCL can select for it
    // (no odd factor in its loop) goes first: MSCCL runs NCCL instead of
    // the others there. The alternatives are tuned at the target size only
    // (where the choice is made; one that wins is timed at the summary's
    // sizes afterwards), the schedule and they side by side on the
    // machine's cores: each lowers and times its own configurations.
    // --exact-chunkup: the split is the user's; only schedules of that
    // split compete.
    std::vector<std::pair<const Schedule *, int>> alternatives;
    for (size_t i = 0; i < result->runnersUp.size(); ++i)
      if (!o.exactChunkup || result->runnersUp[i].chunkup == result->chunkup)
        alternatives.push_back({&result->runnersUp[i].schedule, (int)i});
    int baselineIndex = (int)result->runnersUp.size();
    if (result->allowedBaseline && !o.exactChunkup)
      alternatives.push_back({&*result->allowedBaseline, baselineIndex});
    const std::vector<double> targetOnly{so.targetBytes};
    std::vector<StepLevel> alternativeSteps(alternatives.size());
    {
      // Task 0 is the schedule (its summary, with NCCL's programs); task
      // k > 0 the alternative k - 1.
      std::atomic<size_t> next{0};
      auto work = [&] {
        for (size_t k; (k = next.fetch_add(1)) <= alternatives.size();) {
          if (k == 0)
            steps = predictSteps(sched, model, sizesShown, true, true, until,
                                 result->measureSeconds);
          else
            alternativeSteps[k - 1] =
                predictSteps(*alternatives[k - 1].first, model, targetOnly,
                             false, false, until, result->measureSeconds);
        }
      };
      unsigned cores = std::max(1u, std::thread::hardware_concurrency());
      std::vector<std::thread> helpers;
      for (unsigned i = 1; i < cores && i <= alternatives.size(); ++i)
        helpers.emplace_back(work);
      work();
      for (std::thread &t : helpers)
        t.join();
    }
    if (steps->absent.empty()) {
      double target = so.targetBytes;
      bool pow2 = isPowerOfTwoSize(target);
      auto unusable = [&](const StepLevel &p) {
        return pow2 && p.oddFactor > 1;
      };
      int pick = -1; // index into runnersUp; runnersUp.size(): the baseline
      size_t pickedAlternative = 0;
      // An alternative's time at the target (its only size), and the
      // schedule's (at `at` of the summary's sizes).
      auto targetUs = [&](const StepLevel &p) {
        return p.ownUs.size() == 1 ? p.ownUs[0] : p.ownUs[at];
      };
      auto beats = [&](const StepLevel &p, const StepLevel &than,
                       double margin) {
        if (unusable(p) != unusable(than))
          return unusable(than);
        return targetUs(p) * margin < targetUs(than);
      };
      for (size_t k = 0; k < alternatives.size(); ++k) {
        const StepLevel &p = alternativeSteps[k];
        steps->cutShort |= p.cutShort;
        if (!p.absent.empty() || !beats(p, *steps, 1.02) ||
            (pick >= 0 && !beats(p, alternativeSteps[pickedAlternative], 1.0)))
          continue;
        pick = alternatives[k].second;
        pickedAlternative = k;
      }
      if (pick >= 0) {
        // The winner at the summary's sizes (its lowerings at the target
        // are cached); its target time is the one it won with. It is the
        // schedule written: one configuration is timed at every size
        // whatever the time left, or a size the limit cut would read as
        // one MSCCL does not select.
        StepLevel picked = predictSteps(*alternatives[pickedAlternative].first,
                                        model, sizesShown, false, true, until,
                                        result->measureSeconds);
        const StepLevel &won = alternativeSteps[pickedAlternative];
        if (picked.ownUs.size() != sizesShown.size())
          picked.ownUs.assign(sizesShown.size(), INFINITY);
        picked.ownUs[at] = std::min(picked.ownUs[at], won.ownUs[0]);
        picked.oddFactor = won.oddFactor;
        picked.absent.clear();
        char buf[768];
        // How it compares with the chunk level's choice ("the synthesized
        // schedule", "the chunk level's choice (chunk split 3)") at the
        // target size, where MSCCL may select no lowering of that choice.
        double mainUs = steps->ownUs[at], pickedUs = picked.ownUs[at];
        auto compared = [&, mainUs, pickedUs](const std::string &what) {
          char c[320];
          if (std::isfinite(mainUs))
            std::snprintf(c, sizeof c,
                          "it is %.3fx as fast as %s at %s (step level)",
                          mainUs / pickedUs, what.c_str(),
                          formatBytes(so.targetBytes).c_str());
          else
            std::snprintf(c, sizeof c,
                          "MSCCL selects it at %s, where it selects no "
                          "lowering of %s",
                          formatBytes(so.targetBytes).c_str(), what.c_str());
          return std::string(c);
        };
        // Why: the chosen program is faster, or the chunk level's choice is
        // one MSCCL never selects for this size.
        std::string why;
        if (unusable(*steps) && !unusable(picked)) {
          char w[256];
          std::snprintf(w, sizeof w,
                        " (the chunk level's choice has nchunksperloop with "
                        "the odd factor %d: MSCCL selects it for no "
                        "power-of-two size and runs NCCL at %s)",
                        steps->oddFactor, formatBytes(target).c_str());
          why = w;
        }
        picked.ncclUs = steps->ncclUs;
        picked.cutShort |= steps->cutShort;
        *steps = std::move(picked);
        if (pick == baselineIndex) {
          std::snprintf(buf, sizeof buf,
                        "the %s baseline was written: compiled, %s, which was "
                        "%.3fx as fast as the baseline at the chunk level%s",
                        result->baselineName.c_str(),
                        compared("the synthesized schedule").c_str(),
                        result->baselineUs / result->timeUs, why.c_str());
          result->schedule = std::move(*result->allowedBaseline);
          result->method = "the " + result->baselineName +
                           " baseline (its compiled program is faster than "
                           "the synthesized schedule's)";
          result->chunkup = 1;
          result->timeUs = result->baselineUs;
          result->busbwGBps = so.targetBytes / result->baselineUs / 1e3 *
                              sched.collective.busBwFactor();
          result->isBaseline = true;
        } else {
          synth::RunnerUp &r = result->runnersUp[pick];
          std::snprintf(
              buf, sizeof buf,
              "the chunk level's runner-up was written (chunk split %d, "
              "%s): compiled, %s; at the chunk level that choice was %.3fx "
              "as fast as it%s",
              r.chunkup, r.method.c_str(),
              compared("the chunk level's choice (chunk split " +
                       std::to_string(result->chunkup) + ")")
                  .c_str(),
              r.timeUs / result->timeUs, why.c_str());
          result->schedule = std::move(r.schedule);
          result->method = r.method + " (its compiled program ranks first "
                                      "at the step level)";
          result->chunkup = r.chunkup;
          result->timeUs = r.timeUs;
          result->busbwGBps = r.busbwGBps;
          result->measureSeconds = r.measureSeconds;
          result->isBaseline = false;
        }
        rankedNote = buf;
        result->allowedBaseline.reset();
        result->runnersUp.clear();
        result->provenOptimal = false;
        result->smt.clear();
        recordTopology(sched, o.topo, hashText, o.output);
      }
    }
  }
#endif
  // NCCL's in-network algorithms, alone and mixed with point-to-point
  // schedules on shares of the buffer, against what the point-to-point
  // schedule runs as (its compiled program, else its transfers).
  std::optional<InNetworkSearch> inNetwork;
  std::vector<CompiledCandidate> inNetworkCompiled;
  bool inNetworkCompileCut = false;
  int inNetworkScreened = 0;
  double p2pUs = result->timeUs, ncclRingUs = INFINITY;
  std::string p2pLevel = "chunks";
  bool p2pCut = false; ///< the time limit cut its generated code's tuning
#ifdef CCSYNTH_HAVE_MLIR
  if (steps && steps->absent.empty() && std::isfinite(steps->ownUs[targetAt])) {
    p2pUs = steps->ownUs[targetAt];
    p2pLevel = "steps";
  }
  if (steps && !steps->ncclUs.empty())
    ncclRingUs = steps->ncclUs[targetAt];
#endif
  const Schedule *written = &sched;
  // Weighed by default (not asked for), the in-network algorithms get what
  // is left of the time limit and no more: none when the search spent it.
  auto limitEnd = t0 + seconds(budget);
  if (inNetworkOn && !asked && std::chrono::steady_clock::now() >= limitEnd) {
    inNetworkOn = false;
    progress->operator()("in-network: not weighed (the time limit was spent; "
                         "--in-network weighs them past it)");
  }
  // Nor for a schedule larger than synth predicts at the step level: its
  // mixes and their generated code take longer than a time limit allows,
  // and no step of them stops in the middle (131,072 transfers: 20 s past
  // a 5 s limit).
  if (inNetworkOn && !asked &&
      sched.transfers.size() > kMaxDefaultInNetworkTransfers) {
    inNetworkOn = false;
    progress->operator()(
        "in-network: not weighed (" + std::to_string(sched.transfers.size()) +
        " transfers, more than the " +
        std::to_string(kMaxDefaultInNetworkTransfers) +
        " synth weighs them for within its time limit; --in-network weighs "
        "them)");
  }
  if (inNetworkOn) {
    progress->operator()("in-network: NVLS/CollNet alone and mixed with "
                         "point-to-point schedules");
    InNetworkOptions io;
    io.bytes = so.targetBytes;
    io.inPlace = sched.collective.inPlace;
    io.allowedSwitches = allowedSwitches;
    if (!sched.usesSwitches() && !result->isBaseline)
      io.pointToPoint.push_back({"synthesized", &sched});
    // Mixes start within the time limit, and within a quarter of it (at
    // least 2 s) from now when the search has spent it.
    io.until = asked ? std::max(limitEnd,
                                std::chrono::steady_clock::now() +
                                    seconds(std::max(2.0, 0.25 * o.timeLimit)))
                     : limitEnd;
    auto found = searchInNetwork(so.kind, *topo, io);
    if (!found)
      return fail(found.error());
    inNetwork = found.take();
    InNetworkCandidate *chosen = nullptr;
    double chosenUs = INFINITY;
#ifdef CCSYNTH_HAVE_MLIR
    // What the candidates run as. Each that a kernel can run (no IB SHARP)
    // is first screened: a quick timing of its generated code (a few
    // configurations) ranks them, since the runtime model ranks what
    // NCCL's kernels would run and generated code runs the point-to-point
    // share of a mix with fewer threadblocks. Screening and compiling go
    // within the deadline, the first of each whatever the time. The
    // candidates are then compiled to generated code (the only target that
    // lowers switch operations), the screened fastest first, then those
    // the deadline left unscreened in the search's order, and timed at the
    // step level; the fastest is written when it beats what the
    // point-to-point schedule runs as. The fastest mix goes last where it
    // goes through IB SHARP (it fails to lower at once, and the summary
    // says so).
    progress->operator()("in-network: screening the candidates as "
                         "generated code");
    std::vector<std::pair<double, InNetworkCandidate *>> screened;
    std::vector<InNetworkCandidate *> unscreened;
    // Weighed by default, within the limit: screening leaves two fifths of
    // what is left to compiling the fastest.
    auto screenUntil = *io.until;
    if (!asked) {
      auto now = std::chrono::steady_clock::now();
      if (screenUntil > now)
        screenUntil = now + (screenUntil - now) * 3 / 5;
    }
    for (InNetworkCandidate &c : inNetwork->runnable) {
      if ((asked ? !screened.empty() : true) &&
          std::chrono::steady_clock::now() > screenUntil) {
        unscreened.push_back(&c);
        continue;
      }
      std::optional<double> us =
          screenGeneratedCodeUs(c.schedule, *topo, so.targetBytes);
      screened.push_back({us ? *us : INFINITY, &c});
      ++inNetworkScreened;
      if (so.debugCandidates) {
        char line[96];
        if (us)
          std::snprintf(line, sizeof line, "%.2f us", *us);
        else
          std::snprintf(line, sizeof line, "does not lower");
        progress->operator()("in-network: screened " + c.name +
                             " as generated code: " + line);
      }
    }
    std::stable_sort(
        screened.begin(), screened.end(),
        [](const auto &a, const auto &b) { return a.first < b.first; });
    progress->operator()("in-network: compiling the candidates to "
                         "generated code");
    // Those the screen cannot tell apart (within the model's noise, 2%, of
    // the fastest) are all compiled whatever the time.
    std::vector<InNetworkCandidate *> toCompile;
    size_t tied = 0;
    for (const auto &[us, c] : screened)
      if (std::isfinite(us) && toCompile.size() < kInNetworkCompiles) {
        toCompile.push_back(c);
        if (us <= 1.02 * screened.front().first)
          ++tied;
      }
    for (InNetworkCandidate *c : unscreened)
      toCompile.push_back(c);
    if (inNetwork->best &&
        std::none_of(inNetwork->runnable.begin(), inNetwork->runnable.end(),
                     [&](const InNetworkCandidate &d) {
                       return d.name == inNetwork->best->name;
                     }))
      toCompile.push_back(&*inNetwork->best);
    for (size_t i = 0; i < toCompile.size(); ++i) {
      InNetworkCandidate *c = toCompile[i];
      // Asked for, the first (and those tied with it) go whatever the
      // time; weighed by default, nothing goes past the limit.
      bool first = asked && (chosen == nullptr || i < tied);
      if (!first && std::chrono::steady_clock::now() > *io.until) {
        inNetworkCompileCut = true;
        break;
      }
      std::optional<double> us =
          generatedCodeUs(c->schedule, *topo, so.targetBytes,
                          first ? std::nullopt : std::optional(*io.until));
      inNetworkCompiled.push_back({c, us ? *us : INFINITY});
      if (us && *us < chosenUs) {
        chosenUs = *us;
        chosen = c;
      }
    }
    // Without the step level the point-to-point schedule is weighed as
    // generated code too (what it runs as beside them), not by its
    // transfers.
    if (p2pLevel == "chunks" && !sched.usesSwitches())
      if (std::optional<double> us = generatedCodeUs(
              sched, *topo, so.targetBytes, *io.until, &p2pCut)) {
        p2pUs = *us;
        p2pLevel = "generated code";
      }
#endif
    if (chosen && chosenUs < p2pUs) {
      recordTopology(chosen->schedule, o.topo, hashText, o.output);
      written = &chosen->schedule;
    }
  }
  std::vector<OutputFile> outputs{{o.output, scheduleToJson(*written)}};
  if (!o.dumpSmt.empty())
    outputs.push_back(
        {o.dumpSmt, written != &sched
                        ? "; no solver encoding produced this schedule (NCCL's "
                          "in-network algorithm, alone or mixed, was best)\n"
                    : result->smt.empty()
                        ? "; no solver encoding produced this schedule "
                          "(the heuristic route was best)\n"
                        : result->smt});
  if (Status s = writeOutputs(outputs); !s)
    return fail(s.error());

  // The summary goes to stdout unless the schedule itself does.
  FILE *out = o.output == "-" ? stderr : stdout;
  std::fprintf(out, "synth: %s on %s: %zu transfers in %d steps\n",
               sched.collective.describe().c_str(), topo->name.c_str(),
               sched.transfers.size(), sched.numSteps());
  std::fprintf(out, "  method: %s (chunk split %d), chosen for %s\n",
               result->method.c_str(), result->chunkup,
               formatBytes(so.targetBytes).c_str());
  std::fprintf(out, "  %s\n",
               result->provenOptimal
                   ? "proven optimal by Z3 in the model that produced it"
               : result->timeLimitHit
                   ? "NOT proven optimal: the time limit cut the "
                     "search short (best verified schedule so far)"
                   : "not proven optimal (heuristic or unfinished "
                     "bisection); see %bound");
  std::fprintf(out, "  %10s %12s %12s %12s %8s\n", "size", "time(us)",
               "busbw(GB/s)", "bound(us)", "%bound");
  if (!topo->switches.empty())
    std::fprintf(out, "  (the bound is that of point-to-point schedules: "
                      "synthesis does not use the machine's switches)\n");
  for (double bytes : sizesShown) {
    double timeUs = result->timeUs, busbw = result->busbwGBps;
    bool isTarget = bytes == so.targetBytes;
    if (!isTarget) {
      if (!affordable(result->measureSeconds)) {
        std::fprintf(out, "  %10s %12s (not simulated: the time limit)\n",
                     formatBytes(bytes).c_str(), "-");
        continue;
      }
      SimOptions sim;
      sim.bytes = bytes;
      // Loading checked the machine; the synthesizer checked its model.
      sim.topologyValidated = true;
      auto r = simulate(sched, model, sim);
      if (!r)
        return fail(r.error());
      timeUs = r->timeUs;
      busbw = r->busbwGBps;
    }
    // The bound at the target size, scaled: its bandwidth term grows in
    // proportion to the size, its latency term does not (computing it
    // again takes seconds on 1,024 ranks).
    double lb = result->lowerBoundUs;
    if (!isTarget)
      lb =
          so.targetBytes > 0
              ? std::max(result->lowerBoundBandwidthUs * bytes / so.targetBytes,
                         result->lowerBoundLatencyUs)
              : lowerBound(sched.collective, model, bytes, {},
                           BoundScope::PointToPoint)
                    .timeUs();
    std::fprintf(out, "  %10s %12.2f %12.2f %12.2f %7.1f%%\n",
                 formatBytes(bytes).c_str(), timeUs, busbw, lb,
                 timeUs > 0 ? 100 * lb / timeUs : 100.0);
  }
  if (std::isfinite(result->baselineUs) && result->baselineUs > 0) {
    double ratio = result->baselineUs / result->timeUs;
    std::fprintf(
        out, "  best baseline at %s: %s, %.2f us (written: %.2f us, %s)\n",
        formatBytes(so.targetBytes).c_str(), result->baselineName.c_str(),
        result->baselineUs, result->timeUs, formatSpeedup(ratio).c_str());
    if (result->sketchForbidsBaseline)
      std::fprintf(out,
                   "  the %s baseline is faster, but it uses links the sketch "
                   "forbids, so the slower schedule allowed by the sketch was "
                   "written\n",
                   result->baselineName.c_str());
  }
#ifdef CCSYNTH_HAVE_MLIR
  if (steps)
    printStepLevel(out, *steps, sched, sizesShown);
#else
  if (!o.noStepLevel)
    std::fprintf(out, "  step level: not in this build (it has no compiler)\n");
#endif
  std::string stages;
  for (const synth::StageTime &st : result->stages) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s %.2fs", stages.empty() ? "" : ", ",
                  st.name.c_str(), st.seconds);
    stages += buf;
  }
  std::fprintf(out, "  solve time: %.2fs (%s)\n", total, stages.c_str());
  for (const std::string &note : result->notes)
    std::fprintf(out, "  note: %s\n", note.c_str());
  if (!rankedNote.empty())
    std::fprintf(out, "  note: %s\n", rankedNote.c_str());
  if (inNetwork)
    printInNetwork(out, *inNetwork, inNetworkCompiled, inNetworkScreened,
                   inNetworkCompileCut, written != &sched ? written : nullptr,
                   p2pUs, p2pLevel, p2pCut, so.targetBytes,
                   sched.collective.busBwFactor(), ncclRingUs);
  if (o.output != "-")
    std::fprintf(out, "  wrote %s (verified)%s\n", o.output.c_str(),
                 written != &sched
                     ? ": the in-network schedule above, which compiles to "
                       "generated code (`compile --target cuda` or --target "
                       "plugin; MSCCL++ plans take NVLS's reductions and "
                       "multicasts of one node, MSCCL XML none)"
                     : "");
  return kExitOk;
}

} // namespace

void addSynthCommand(CLI::App &app, CommandContext &ctx) {
  auto opts = std::make_shared<SynthCliOptions>();
  CLI::App *cmd = app.add_subcommand(
      "synth",
      "Synthesize a schedule for a collective on a topology, guided by a "
      "TACCL-style communication sketch, with Z3. The schedule is chosen for "
      "one buffer size (--size) and verified before it is written; the "
      "summary gives its predicted time and % of the lower bound at 1K, 1M "
      "and 1G (chunk level: the schedule's transfers), the time of what "
      "`ccsynth compile` writes for it next to NCCL's ring (step level: the "
      "lowered, tuned program, which is what runs) and the solve time per "
      "stage.");
  cmd->footer(
      "Exit codes: 0 written, 1 bad input, 2 usage, 4 the sketch makes the "
      "collective impossible (the message names a rank that can never "
      "receive a chunk, and what in the sketch prevents it). Progress goes "
      "to stderr once a run lasts more than a second. With a time limit the "
      "best verified schedule found so far is written and the summary says "
      "it is not proven optimal. Results are deterministic for a fixed "
      "--seed unless the time limit cuts a solver call short.");
  cmd->add_option("-t,--topo", opts->topo,
                  "Topology: a built-in name (ccsynth topo list) or a file")
      ->required();
  addTopoProfileOptions(cmd, opts->profile);
  cmd->add_option("-k,--sketch", opts->sketch,
                  "Communication sketch JSON (default: every link usable, no "
                  "symmetry)");
  cmd->add_option("-c,--collective", opts->collective,
                  "allgather, reducescatter, allreduce, broadcast, reduce, "
                  "gather, scatter, alltoall, or a schedule JSON file whose "
                  "collective (e.g. a custom one) is used")
      ->required();
  cmd->add_option("-o,--output", opts->output,
                  "Output schedule JSON ('-' = stdout)")
      ->required();
  cmd->add_option("--chunks", opts->chunks,
                  "Split every input chunk into this many pieces (default: "
                  "search the sketch's candidates)");
  cmd->add_flag("--exact-chunkup", opts->exactChunkup,
                "Split every input chunk into exactly the sketch's "
                "input_chunkup pieces, as TACCL does (default: try it first, "
                "then finer and coarser splits)");
  cmd->add_option("--size", opts->size,
                  "Buffer size the schedule is chosen for (default 1G)");
  cmd->add_option("--time-limit", opts->timeLimit,
                  "Seconds for the whole search (default 60)");
  cmd->add_option("--seed", opts->seed, "Z3 random seed (default 0)");
  cmd->add_option("--root", opts->root,
                  "Root rank of broadcast/reduce/gather/scatter (default 0)");
  cmd->add_flag("--inplace", opts->inPlace,
                "In-place collective (NCCL layout)");
  cmd->add_option("--stop-at", opts->stopAt,
                  "Stop trying further chunk splits once a schedule reaches "
                  "this % of the lower bound (default 90)");
  cmd->add_option("--dump-smt", opts->dumpSmt,
                  "Write the SMT-LIB 2 encoding behind the result");
  cmd->add_flag("--no-step-level", opts->noStepLevel,
                "Leave out the step-level prediction of what `ccsynth "
                "compile` writes for the schedule (the tuned MSCCL program, "
                "next to NCCL's ring tuned the same way)");
  cmd->add_flag(
      "--in-network", opts->inNetwork,
      "Weigh NCCL's in-network algorithms (the default wherever one applies: "
      "a switch that reduces, NVLS on dgx-h100, dgx-b200 and gb200-nvl72, "
      "SHARP across their nodes; with this flag, an error where none "
      "applies): NVLS, NVLS-tree, CollNet, NVLS with SHARP, "
      "alone and mixed with point-to-point schedules (the ring baseline, the "
      "synthesized schedule) on shares of the buffer, timed by the runtime "
      "model of NCCL's NVLS and CollNet kernels; those a kernel can run (no "
      "IB SHARP: each algorithm alone, ccsynth's NVLS with rails, the "
      "fastest mixes) are screened as generated code, the fastest screened "
      "compiled to generated code and timed at the step level, and the "
      "fastest of them is written when it beats the point-to-point "
      "schedule's compiled program. Such a schedule compiles "
      "to generated code (`compile --target cuda`, plugins); MSCCL++ plans "
      "take switch reductions that are multicast back and multicasts "
      "(glres, gstore), MSCCL XML no switch operation. A sketch's "
      "\"in_network\": [\"nvls\", \"sharp\"] does the same with only the "
      "switches it lists");
  cmd->add_flag("--no-in-network", opts->noInNetwork,
                "Leave NCCL's in-network algorithms out: the schedule is "
                "point-to-point, which every target takes (MSCCL XML "
                "included)");
  cmd->add_flag("-q,--quiet", opts->quiet, "No progress on stderr");
  cmd->callback([opts, &ctx] { ctx.exitCode = runSynth(*opts); });
}

} // namespace ccsynth::cli
