//===- TunedCompile.cpp - The three tuned compiles, as plans --------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements TunedCompile.h: the policy that turns the tuner's timings
// (Tuning.cpp) into what compile writes. Sections, in order:
//   - shared helpers: byte ranges, the size limit, the request;
//   - one MSCCL XML (tuneForMscclXml): the best configuration, NCCL's
//     program where it beats them all, the sizes it serves;
//   - an MSCCL algorithm directory tuned per size (tuneForMscclDir);
//   - generated code (tuneForGeneratedCode): tiles, kernel knobs, the code
//     budget and the guard against NCCL's reach.
// Each writes its notes to a stream that becomes the plan's `messages`.
// The design is in docs/compiler.md ("The tuned compile").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Tuning/TunedCompile.h"

#include "ccsynth/Analysis/Plot.h"
#include "ccsynth/Target/KernelKnobs.h"
#include "ccsynth/Target/MSCCLXml.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace ccsynth::tuning {

std::string byteRange(long long minBytes, long long maxBytes) {
  return "[" + formatBytes((double)minBytes) + ", " +
         (maxBytes > 0 ? formatBytes((double)maxBytes + 1)
                       : std::string("no bound")) +
         ")";
}

bool tooLargeToTune(const Schedule &sched, const char *byHand,
                    std::ostream &log) {
  if (sched.transfers.size() <= kMaxTunedTransfers)
    return false;
  log << "ccsynth: note: not tuned: " << sched.transfers.size()
      << " transfers (tuning compiles every configuration; it stops "
         "at "
      << kMaxTunedTransfers << "); " << byHand << " by hand\n";
  return true;
}

TuneRequest tuningRequest(const UserChoices &user, const CompileOptions &c,
                          const Schedule &sched) {
  TuneRequest req;
  req.instances =
      user.instances ? std::vector<int>{c.instances} : tuningInstances(sched);
  req.protocols = user.protocol
                      ? std::vector<std::string>{c.protocol}
                      : std::vector<std::string>{"Simple", "LL128", "LL"};
  req.narrow = sched.transfers.size() > kMaxFullyTunedTransfers;
  return req;
}

namespace {

//===----------------------------------------------------------------------===//
// One MSCCL XML
//===----------------------------------------------------------------------===//

Status mscclXml(const Schedule &sched, const Topology &topo,
                const CompileOptions &c, const UserChoices &user,
                MscclXmlPlan &plan, std::ostream &log) {
  TuneRequest req = tuningRequest(user, c, sched);
  req.fallback =
      user.fallback && c.mscclColl.empty() && !user.instances && !user.protocol;
  // Without a size range of the user's, the XML serves only the sizes at
  // which it beats NCCL's own program (MSCCL leaves the others to NCCL):
  // that needs the sizes in between too.
  bool narrow = c.minBytes < 0 && c.maxBytes < 0 && req.fallback;
  req.sizes = narrow ? tuningGrid(0, 0) : tuningSizes(c.minBytes, c.maxBytes);
  TuneResult t = tuneCompile(sched, topo, c, req);
  if (t.best < 0) {
    log << "ccsynth: note: not tuned: no configuration besides the "
           "one written fits the runtime\n";
    return Status::success();
  }
  // The schedule's configuration that gains most over NCCL where it is
  // faster, restricted to those sizes.
  std::optional<Served> served;
  if (narrow && !t.ncclBestUs.empty()) {
    for (int i = 0; i < (int)t.candidates.size(); ++i) {
      if (!t.candidates[i].fromSchedule())
        continue;
      Served sv = servedWhereFaster(t.candidates[i], t, req.sizes);
      if (sv.any && sv.score > 1.001 && (!served || sv.score > served->score)) {
        served = sv;
        t.best = i;
      }
    }
    if (served) {
      t.replacement.reset();
    } else {
      // Nowhere faster than NCCL: what is written serves only the longest
      // run of sizes where it is as fast as NCCL's program tuned per size
      // (the schedule's own configurations first, then NCCL's program), so
      // that MSCCL leaves every size where it would be slower to NCCL.
      for (int pass = 0; pass < 2 && !served; ++pass)
        for (int i = 0; i < (int)t.candidates.size(); ++i) {
          if (t.candidates[i].fromSchedule() != (pass == 0))
            continue;
          Served sv = servedWhereFaster(t.candidates[i], t, req.sizes,
                                        /*ties=*/true);
          if (sv.any &&
              (!served || sv.count > served->count ||
               (sv.count == served->count && sv.score > served->score))) {
            served = sv;
            t.best = i;
          }
        }
      if (served) {
        const TuneCandidate &cand = t.candidates[t.best];
        if (cand.fromSchedule())
          t.replacement.reset();
        else
          t.replacement = t.ncclPrograms[cand.program];
      } else {
        // Nothing an XML can hold is as fast as what NCCL runs (its
        // in-network algorithms, where no ring of its fits MSCCL) at any
        // size: MSCCL would select it for every call, each slower.
        return Error(
            "at no size is any lowering of this schedule (or NCCL's program "
            "in its place) as fast as what NCCL runs for the collective on " +
                topo.name +
                " at the step level (its NVLS or CollNet where the machine's "
                "switches allow them), so MSCCL would select a slower program "
                "for every call: nothing written",
            {},
            "--min-bytes/--max-bytes write it for a range of your choosing, "
            "--no-fallback for every size");
      }
    }
  }
  const TuneCandidate &best = t.candidates[t.best];
  std::string sizes;
  for (double b : req.sizes)
    sizes += (sizes.empty() ? "" : ", ") + formatBytes(b);
  CompileOptions chosen = c;
  best.applyTo(chosen);
  if (served) {
    chosen.minBytes = served->minBytes;
    chosen.maxBytes = served->maxBytes;
  }
  const Schedule &source =
      t.replacement ? *t.replacement : candidateSchedule(t, best, sched);
  CompileResult r = compileSchedule(source, chosen);
  if (!r.ok()) {
    log << "ccsynth: note: not tuned: the chosen configuration ("
        << describeCandidate(best) << ") failed: " << r.failure.error.message
        << "\n";
    return Status::success();
  }
  plan.output = std::move(*r.output);
  log << "ccsynth: note: tuned on " << topo.name << " by the "
      << "step-level model at " << sizes << ": " << describeCandidate(best)
      << " (best of " << t.candidates.size() << " configurations that fit; "
      << "--instances and --protocol choose by hand, --no-tune "
         "writes one instance)\n";
  if (!t.replacement && best.regridded() && t.regridded) {
    int c = sched.collective.chunkFactor,
        g = t.regridded->collective.chunkFactor;
    log << "ccsynth: note: the schedule's chunk factor " << c
        << " has the odd factor " << oddPart(c)
        << ", so MSCCL would select none of its own lowerings for a "
           "power-of-two size: written with each chunk cut into "
        << g / c << (g % c ? " or " + std::to_string(g / c + 1) : "") << " of "
        << g
        << " sub-chunks per split (the same routes and steps; the "
           "chunk level below is the re-cut schedule's)\n";
    plan.schedule = *t.regridded;
  }
  if (t.replacement) {
    char ratio[32];
    // The schedule's best against NCCL's program tuned per size where that
    // is known, else against the configuration written.
    double slower = 0;
    if (t.bestOwn >= 0 && t.ncclBestUs.size() == req.sizes.size()) {
      double logSum = 0;
      for (size_t k = 0; k < req.sizes.size(); ++k)
        logSum += std::log(t.candidates[t.bestOwn].timeUs[k] / t.ncclBestUs[k]);
      slower = std::exp(logSum / (double)req.sizes.size());
    } else if (t.bestOwn >= 0) {
      slower = t.candidates[t.bestOwn].score / best.score;
    }
    std::snprintf(ratio, sizeof ratio, "%.2f", slower);
    const char *what = sched.collective.kind == CollectiveKind::AllToAll
                           ? "direct sends"
                       : isNcclTree(*t.replacement) ? "double binary tree"
                                                    : "ring";
    // Faster, but at sizes MSCCL never selects it for.
    if (t.bestOwn >= 0 && slower < 1 &&
        t.candidates[t.bestOwn].oddFactor() > 1) {
      log << "ccsynth: note: MSCCL selects no lowering of this "
             "schedule for power-of-two sizes (its nchunksperloop has "
             "the odd factor "
          << t.candidates[t.bestOwn].oddFactor() << "; the best, "
          << describeCandidate(t.candidates[t.bestOwn]) << ", takes " << ratio
          << "x the time of NCCL's program at the step level, "
             "geometric mean over those sizes): writing NCCL's "
          << what << " for this collective on " << topo.name
          << " instead (--no-fallback keeps the schedule)\n";
    } else {
      log << "ccsynth: note: NCCL's " << what << " for this collective on "
          << topo.name
          << " runs faster than every lowering of this schedule at the "
             "step level";
      if (t.bestOwn >= 0)
        log << " (the schedule's best, "
            << describeCandidate(t.candidates[t.bestOwn]) << ", takes " << ratio
            << "x its time, geometric mean over those sizes)";
      else
        log << " (no lowering of the schedule fits)";
      log << ": writing it instead (--no-fallback keeps the "
             "schedule)\n";
    }
    plan.schedule = *t.replacement;
  }
  if (served) {
    char gain[32];
    std::snprintf(gain, sizeof gain, "%.2f", served->score);
    log << "ccsynth: note: it serves "
        << (served->minBytes == 0 && served->maxBytes == 0
                ? std::string("every size")
                : byteRange(served->minBytes, served->maxBytes))
        << ": where the step-level model has it at least as fast as "
           "NCCL's own program for the collective, tuned per size ("
        << gain
        << "x NCCL's speed, geometric mean over 1K, 4K, .., 1G with "
           "NCCL's own at the other sizes); MSCCL leaves the other "
           "sizes to NCCL (--min-bytes/--max-bytes set the range by "
           "hand)\n";
    // One file holds one configuration (one protocol) for one run of sizes:
    // where the schedule's other configurations beat NCCL at other sizes,
    // an MSCCL_ALGO_DIR of one file per range serves those too.
    double logSum = 0;
    for (size_t k = 0; k < req.sizes.size() && k < t.ncclBestUs.size(); ++k) {
      double ownUs = INFINITY;
      for (const TuneCandidate &cand : t.candidates)
        if (cand.fromSchedule() && cand.selectableAt(req.sizes[k]))
          ownUs = std::min(ownUs, cand.timeUs[k]);
      if (ownUs < t.ncclBestUs[k])
        logSum += std::log(t.ncclBestUs[k] / ownUs);
    }
    double perRange = std::exp(logSum / (double)req.sizes.size());
    if (perRange > served->score * 1.02) {
      char dir[32];
      std::snprintf(dir, sizeof dir, "%.2f", perRange);
      log << "ccsynth: note: with a file per size range "
             "(`--target msccl-dir`, tuned per size) the schedule "
             "would reach about "
          << dir << "x NCCL's speed on the same measure, against " << gain
          << "x for this one file\n";
    }
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// An MSCCL algorithm directory, tuned per size
//===----------------------------------------------------------------------===//

void fail(MscclDirPlan &plan, Error error) { plan.error = std::move(error); }

void mscclDir(const Schedule &sched, const Topology &topo,
              const CompileOptions &c, long long lo, long long hi,
              const UserChoices &user, const std::string &input,
              MscclDirPlan &plan, std::ostream &log) {
  TuneRequest req = tuningRequest(user, c, sched);
  req.sizes = tuningGrid(lo, hi);
  if (req.sizes.empty())
    return;
  req.fallback = user.fallback && c.mscclColl.empty() && !user.instances;
  TuneResult t = tuneCompile(sched, topo, c, req);
  if (t.candidates.empty())
    return;
  // The fastest configuration at each size; the schedule's own unless
  // NCCL's program is more than 2% faster there. Where NCCL's program wins
  // and the schedule serves some other size, no file serves it: MSCCL
  // leaves it to NCCL, which runs its program natively, tuned per size
  // (also with the rings an MSCCL file could not be selected for).
  std::vector<int> bestAt, ncclAt;
  bool ncclKnown = t.ncclBestUs.size() == req.sizes.size();
  for (size_t k = 0; k < req.sizes.size(); ++k) {
    int own = -1, any = -1, nccl = -1;
    for (int i = 0; i < (int)t.candidates.size(); ++i) {
      const TuneCandidate &cand = t.candidates[i];
      // A file MSCCL would not select at this size serves nothing there.
      if (!cand.selectableAt(req.sizes[k]))
        continue;
      if (any < 0 || cand.timeUs[k] < t.candidates[any].timeUs[k])
        any = i;
      int &slot = cand.fromSchedule() ? own : nccl;
      if (slot < 0 || cand.timeUs[k] < t.candidates[slot].timeUs[k])
        slot = i;
    }
    double rival = any >= 0 ? t.candidates[any].timeUs[k] : INFINITY;
    if (ncclKnown)
      rival = std::min(rival, t.ncclBestUs[k]);
    bool ownWins = own >= 0 && rival * 1.02 >= t.candidates[own].timeUs[k];
    // -1: NCCL's program is faster; -2: MSCCL would select none of the
    // schedule's programs at this size.
    bestAt.push_back(ownWins ? own : own < 0 ? -2 : ncclKnown ? -1 : any);
    ncclAt.push_back(nccl >= 0 ? nccl : any < 0 ? -2 : any);
  }
  // Where the schedule serves no size at all, NCCL's program is written
  // for every size (what compile writes instead of a schedule it beats).
  if (std::all_of(bestAt.begin(), bestAt.end(), [](int i) { return i < 0; }))
    bestAt = ncclAt;
  struct Piece {
    long long min, max;
    int cand;
  };
  std::vector<Piece> pieces;
  for (size_t k = 0; k < req.sizes.size(); ++k) {
    if (!pieces.empty() && pieces.back().cand == bestAt[k])
      continue;
    long long start = k == 0 ? lo : (long long)(req.sizes[k - 1] * 2);
    if (!pieces.empty())
      pieces.back().max = start - 1;
    pieces.push_back({start, hi, bestAt[k]});
  }
  // A file whose loop is too long for the first sizes of its range would
  // leave them to NCCL; the file before it, which serves smaller sizes,
  // serves them instead (MSCCL selects a file from 4 x its nchunksperloop
  // bytes up).
  for (size_t j = 1; j < pieces.size(); ++j) {
    if (pieces[j].cand < 0 || pieces[j - 1].cand < 0)
      continue;
    long long first = 4 * t.candidates[pieces[j].cand].nchunksperloop;
    if (pieces[j].min < first &&
        (pieces[j].max <= 0 || first <= pieces[j].max)) {
      pieces[j].min = first;
      pieces[j - 1].max = first - 1;
    }
  }
  size_t written = 0;
  for (size_t j = 0; j < pieces.size(); ++j) {
    if (pieces[j].cand < 0) {
      log << "ccsynth: note: " << byteRange(pieces[j].min, pieces[j].max)
          << ": no file; "
          << (pieces[j].cand == -1
                  ? "NCCL's own program for the collective is faster "
                    "there at the step level"
                  : "MSCCL would select none of the schedule's "
                    "lowerings there (a call's element count must be "
                    "a multiple of the program's nchunksperloop)")
          << ", and MSCCL leaves these sizes to NCCL\n";
      continue;
    }
    const TuneCandidate &cand = t.candidates[pieces[j].cand];
    CompileOptions cj = c;
    cj.minBytes = pieces[j].min;
    cj.maxBytes = pieces[j].max;
    cand.applyTo(cj);
    cj.origin = input;
    bool nccl = !cand.fromSchedule();
    CompileResult r = compileSchedule(candidateSchedule(t, cand, sched), cj);
    if (!r.ok())
      return fail(plan, r.failure.error);
    auto algo = msccl::parseXml(input, *r.output);
    if (!algo)
      return fail(plan, Error("internal error: the XML written for this input "
                              "does not read back: " +
                                  algo.error().message,
                              SourceLoc{input}));
    log << "ccsynth: note: " << byteRange(pieces[j].min, pieces[j].max) << ": "
        << (nccl               ? "NCCL's program for this collective"
            : cand.regridded() ? "the schedule on a power-of-two chunk "
                                 "grid"
                               : "the schedule")
        << ", " << describeCandidate(cand) << "\n";
    msccl::DirEntry e;
    e.file = msccl::dirFileName((int)written++, *algo);
    e.source = nccl ? input + " (NCCL's program for its collective)" : input;
    e.algo = algo.take();
    e.text = std::move(*r.output);
    plan.entries.push_back(std::move(e));
  }
  log << "ccsynth: note: tuned per size on " << topo.name
      << " by the step-level model: " << written << " range"
      << (written == 1 ? "" : "s") << " written";
  if (written < pieces.size())
    log << ", " << pieces.size() - written << " left to NCCL";
  log << " (--split and --protocol choose by hand, --no-tune writes "
         "one file)\n";
  plan.tuned = true;
  return;
}

//===----------------------------------------------------------------------===//
// Generated code
//===----------------------------------------------------------------------===//

/// generatedCode's outcomes: the plan holds what to write, or nothing is.
constexpr int kKept = 0;
constexpr int kNothingWritten = 1;

int generatedCode(const Schedule &sched, const Topology &topo,
                  const CompileOptions &c, int loadsCap,
                  const UserChoices &user, GeneratedCodePlan &plan,
                  std::ostream &log) {
  TuneRequest req = tuningRequest(user, c, sched);
  req.protocols = {"Simple"};
  req.fallback = false;
  req.generatedCode = true;
  // Switch operations are timed on the generated-code path's step program
  // (no XML in between), each configuration a lowering down to it: only
  // the instance counts are weighed.
  if (sched.usesSwitches())
    req.narrow = true;
  req.tileBytes = (double)c.tileBytes;
  req.sizes = generatedTuningSizes(sched, c.minBytes, c.maxBytes);
  // The knob entry that runs on the machine's GPU: each configuration is
  // timed with every choice the kernels compile to (within the user's
  // --cuda-threads/--cuda-loads).
  int knobEntry =
      codegen::kernelKnobEntry(c.kernelKnobs, topo.stepModel.smArch);
  if (knobEntry >= 0) {
    int arch = c.kernelKnobs[knobEntry].arch;
    for (codegen::KernelKnob k : codegen::kernelKnobCandidates(arch))
      if ((!user.cudaThreads || k.threads == user.cudaThreads) &&
          (!user.cudaLoads || k.loads == user.cudaLoads) &&
          (!loadsCap || k.loads <= loadsCap))
        req.knobs.push_back(k);
    if (req.knobs.empty())
      req.knobs.push_back(c.kernelKnobs[knobEntry]);
  }
  // Where the program serves: the sizes of the grid (1K, 4K, ..., 1G within
  // the user's range) where it is faster than what NCCL reaches on the
  // machine (timed once, when first needed). nullopt: it serves every size
  // (--no-fallback, or NCCL runs nothing comparable here).
  std::vector<double> grid =
      tuningGrid(std::max(0LL, c.minBytes), std::max(0LL, c.maxBytes));
  std::optional<std::vector<double>> ncclUs;
  // The tiles a size may run with, where the user left the tile open: the
  // code does not depend on the tile, so each served range is a plugin
  // descriptor that runs it with the tile fastest for its sizes.
  std::vector<double> tileChoices =
      user.tileOpen ? generatedTileCandidates(sched, (double)c.tileBytes)
                    : std::vector<double>{};
  struct Guard {
    Served served;
    std::vector<double> us;    ///< the program's times on `grid`
    std::vector<double> tiles; ///< and the tile of each
  };
  auto guard = [&](const Schedule &program, const TuneCandidate &config,
                   const CompileOptions &timing) -> std::optional<Guard> {
    if (!user.fallback || grid.empty())
      return std::nullopt;
    if (!ncclUs)
      ncclUs = ncclReachUs(sched, topo, grid);
    if (ncclUs->empty())
      return std::nullopt;
    TuneRequest g = req;
    g.sizes = grid;
    g.knobs.clear();
    if (config.knob.arch > 0)
      g.knobs.push_back(config.knob);
    g.tileBytes = (double)timing.tileBytes;
    // A program the model cannot time (more threadblocks than the GPU
    // holds at once) is left as it is.
    auto timed = timeCandidate(program, topo, timing, config, g);
    if (!timed)
      return std::nullopt;
    Guard out;
    // Each size with the fastest tile: another than the program's where it
    // is faster by more than the model's noise (2%).
    std::vector<double> own = timed->timeUs;
    out.tiles.assign(grid.size(), (double)timing.tileBytes);
    for (double tile : tileChoices) {
      if (tile == (double)timing.tileBytes)
        continue;
      TuneRequest gt = g;
      gt.tileBytes = tile;
      CompileOptions tt = timing;
      tt.tileBytes = (unsigned long long)tile;
      auto other = timeCandidate(program, topo, tt, config, gt);
      if (!other || other->timeUs.size() != grid.size())
        continue;
      for (size_t k = 0; k < grid.size(); ++k)
        if (other->timeUs[k] * 1.02 < own[k] &&
            other->timeUs[k] < timed->timeUs[k]) {
          timed->timeUs[k] = other->timeUs[k];
          out.tiles[k] = tile;
        }
    }
    TuneResult ref;
    ref.ncclBestUs = *ncclUs;
    out.served = splitServedByTile(servedRunsWhereFaster(*timed, ref, grid),
                                   grid, out.tiles);
    out.us = std::move(timed->timeUs);
    return out;
  };
  auto slowerNote = [&](const TuneCandidate &config, const Guard &g) {
    char buf[192];
    std::snprintf(buf, sizeof buf, "%s: at %s %.2f us against NCCL's %.2f us",
                  describeCandidate(config, false).c_str(),
                  formatBytes(grid.back()).c_str(), g.us.back(),
                  ncclUs->back());
    return std::string(buf);
  };
  auto nothingFaster = [&](const std::string &slower) {
    log << "ccsynth: error: the generated code is slower than what "
           "NCCL reaches on "
        << topo.name << " (its ring or tree, or its in-network "
        << "algorithms where the switches allow them) at every size "
        << "from " << formatBytes(grid.front()) << " to "
        << formatBytes(grid.back()) << " (step-level model; " << slower
        << "): nothing written, since the interposer would send every "
           "call to NCCL; --no-fallback writes it anyway\n";
    return kNothingWritten;
  };
  // A program that serves part of the sizes, or all with another tile, is
  // compiled again with those byte ranges (one plugin descriptor each, with
  // its tile).
  auto partly = [](const Served &sv) {
    return sv.ranges.size() > 1 || sv.minBytes > 0 || sv.maxBytes > 0;
  };
  auto rewrite = [&](const Served &sv, unsigned long long tile) {
    return partly(sv) ||
           (!sv.ranges.empty() && sv.ranges.front().tileBytes != 0 &&
            sv.ranges.front().tileBytes != tile);
  };
  auto restrictTo = [&](const Served &sv, const Schedule &program,
                        CompileOptions opts) -> std::optional<std::string> {
    if (sv.minBytes > 0)
      opts.minBytes = sv.minBytes;
    if (sv.maxBytes > 0)
      opts.maxBytes = sv.maxBytes;
    if (!sv.ranges.empty() && sv.ranges.front().tileBytes != 0)
      opts.tileBytes = sv.ranges.front().tileBytes;
    for (size_t i = 1; i < sv.ranges.size(); ++i)
      opts.moreByteRanges.push_back({(std::uint64_t)sv.ranges[i].minBytes,
                                     (std::uint64_t)sv.ranges[i].maxBytes,
                                     sv.ranges[i].tileBytes});
    CompileResult r = compileSchedule(program, opts);
    if (!r.ok())
      return std::nullopt;
    return std::move(*r.output);
  };
  auto servedNote = [&](const Guard &g) {
    std::string ratios;
    for (size_t k = 0; k < grid.size(); ++k) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%s %.2fx", k ? ", " : "",
                    formatBytes(grid[k]).c_str(), (*ncclUs)[k] / g.us[k]);
      ratios += buf;
    }
    // The runs of sizes served (ranges that meet, cut only where the tile
    // changes, are one run).
    std::vector<Served::Range> runs;
    std::set<unsigned long long> tiles;
    for (const Served::Range &r : g.served.ranges) {
      tiles.insert(r.tileBytes);
      if (!runs.empty() && runs.back().maxBytes != 0 &&
          runs.back().maxBytes + 1 == r.minBytes)
        runs.back().maxBytes = r.maxBytes;
      else
        runs.push_back(r);
    }
    bool everywhere = runs.size() == 1 && runs.front().minBytes == 0 &&
                      runs.front().maxBytes == 0;
    std::string where;
    for (size_t i = 0; i < runs.size(); ++i)
      where += (i == 0                 ? ""
                : i + 1 == runs.size() ? " and "
                                       : ", ") +
               byteRange(runs[i].minBytes, runs[i].maxBytes);
    log << "ccsynth: note: serves "
        << (everywhere ? std::string("every size") : "only " + where)
        << ": against what NCCL reaches on " << topo.name
        << " (step-level model, NCCL's time / the generated code's): " << ratios
        << (everywhere ? ""
                       : "; the interposer sends other sizes to "
                         "NCCL (--no-fallback serves them all)")
        << "\n";
    if (tiles.size() > 1) {
      std::string each;
      for (const Served::Range &r : g.served.ranges)
        each += (each.empty() ? "" : ", ") + byteRange(r.minBytes, r.maxBytes) +
                " " + formatBytes((double)r.tileBytes);
      log << "ccsynth: note: tiles per size range (a plugin descriptor "
             "each, the same code): "
          << each << "\n";
    }
  };
  // The program written as it is (untuned) serves only where it is faster
  // too.
  auto plainGuard = [&]() -> int {
    TuneCandidate plainConfig;
    plainConfig.instances = std::max(1, c.instances);
    plainConfig.fuse = c.fuse;
    plainConfig.fuseForward = c.fuseForward;
    plainConfig.localTbs = c.localTbs;
    plainConfig.pipeline = c.pipeline;
    plainConfig.splitPhases = c.splitPhases;
    if (knobEntry >= 0)
      plainConfig.knob = c.kernelKnobs[knobEntry];
    std::optional<Guard> g = guard(sched, plainConfig, c);
    if (g && !g->served.any)
      return nothingFaster(slowerNote(plainConfig, *g));
    if (g && rewrite(g->served, c.tileBytes)) {
      auto restricted = restrictTo(g->served, sched, c);
      if (!restricted)
        return kKept;
      plan.output = std::move(*restricted);
    }
    if (g)
      servedNote(*g);
    return kKept;
  };
  // Too large to tune, the program is still weighed against NCCL.
  if (tooLargeToTune(sched, "--instances chooses", log))
    return plainGuard();
  // Where switch threadblocks wait for point-to-point steps the tile
  // decides how they overlap: each tile the user left open is weighed, and
  // a smaller one wins only by more than the model's noise (2%).
  TuneResult t;
  double tile = (double)c.tileBytes, tileScore = 0;
  for (double candidate : user.tileOpen ? generatedTileCandidates(sched, tile)
                                        : std::vector<double>{tile}) {
    req.tileBytes = candidate;
    TuneResult r = tuneCompile(sched, topo, c, req);
    if (r.best < 0)
      continue;
    double score = 0;
    for (double us : r.candidates[r.best].timeUs)
      score += std::log(us);
    if (t.best < 0 || score < tileScore + std::log(0.98)) {
      t = std::move(r);
      tile = candidate;
      tileScore = score;
    }
  }
  req.tileBytes = tile;
  if (t.best < 0) {
    log << "ccsynth: note: not tuned: no configuration besides the "
           "one written fits the GPU\n";
    return plainGuard();
  }
  // Generated code is straight-line per threadblock: the first
  // configuration of generatedOrder (the fewest instances within 2% of the
  // fastest first) whose code fits kGeneratedCodeBudget is written.
  std::vector<int> order = generatedOrder(t);
  // A configuration with at least as many instances, local threadblocks
  // and pipeline parts as one over the budget is over it too: not tried.
  std::vector<const TuneCandidate *> tooLong;
  auto dominated = [&](const TuneCandidate &cand) {
    return std::any_of(
        tooLong.begin(), tooLong.end(), [&](const TuneCandidate *l) {
          return cand.instances >= l->instances &&
                 cand.localTbs >= l->localTbs && cand.pipeline >= l->pipeline;
        });
  };
  std::optional<std::string> written;
  std::string over;   // the faster programs left out for their size
  std::string slower; // the fastest program that is nowhere faster than NCCL
  std::optional<Guard> served; // where the written program serves
  size_t tries = 0;
  for (size_t j = 0;
       j < order.size() && tries < kGeneratedCodeTries && !written; ++j) {
    const TuneCandidate &cand = t.candidates[order[j]];
    if (dominated(cand))
      continue;
    ++tries;
    CompileOptions chosen = c;
    cand.applyTo(chosen);
    chosen.protocol = c.protocol;
    chosen.tileBytes = (unsigned long long)tile;
    if (knobEntry >= 0 && cand.knob.arch > 0)
      chosen.kernelKnobs[knobEntry] = cand.knob;
    CompileResult r =
        compileSchedule(candidateSchedule(t, cand, sched), chosen);
    if (!r.ok())
      continue;
    if (r.output->size() > kGeneratedCodeBudget) {
      tooLong.push_back(&cand);
      if (over.empty())
        over = describeCandidate(cand, false) + ", " +
               std::to_string(r.output->size() >> 10) + " KiB";
      continue;
    }
    std::optional<Guard> g =
        guard(candidateSchedule(t, cand, sched), cand, chosen);
    if (g && !g->served.any) {
      if (slower.empty())
        slower = slowerNote(cand, *g);
      continue;
    }
    if (g && rewrite(g->served, chosen.tileBytes)) {
      r.output =
          restrictTo(g->served, candidateSchedule(t, cand, sched), chosen);
      if (!r.output)
        continue;
    }
    t.best = order[j];
    written = std::move(*r.output);
    served = std::move(g);
  }
  if (!written && !slower.empty())
    return nothingFaster(slower);
  if (!written) {
    log << "ccsynth: note: not tuned: no configuration tried (" << tries
        << ", fastest first) compiled to code within "
        << (kGeneratedCodeBudget >> 10) << " KiB"
        << (over.empty() ? "" : " (the fastest: " + over + ")")
        << "; --instances chooses by hand\n";
    return plainGuard();
  }
  plan.output = std::move(*written);
  const TuneCandidate &best = t.candidates[t.best];
  // The program as lowered without tuning, for comparison.
  const TuneCandidate *plain = nullptr;
  for (const TuneCandidate &cand : t.candidates)
    if (cand.program == -1 && cand.instances == 1 && cand.fuse == c.fuse &&
        cand.fuseForward == c.fuseForward && cand.localTbs == c.localTbs &&
        cand.pipeline == c.pipeline && cand.splitPhases == c.splitPhases)
      plain = &cand;
  std::string times;
  for (size_t k = 0; k < req.sizes.size(); ++k) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s %.2f us", k ? ", " : "",
                  formatBytes(req.sizes[k]).c_str(), best.timeUs[k]);
    times += buf;
    if (plain && &best != plain) {
      std::snprintf(buf, sizeof buf, " (%.2fx as fast as without tuning)",
                    plain->timeUs[k] / best.timeUs[k]);
      times += buf;
    }
  }
  log << "ccsynth: note: tuned for generated code on " << topo.name
      << " by the step-level model: " << describeCandidate(best, false)
      << " (best of " << t.candidates.size()
      << " configurations that fit one threadblock per SM; --instances "
         "chooses by hand, --no-tune writes one instance); predicted "
         "with "
      << formatBytes(req.tileBytes) << " tiles: " << times << "\n";
  if (best.knob.arch > 0) {
    // The other knob choices of the same program, for comparison.
    std::string others;
    for (const codegen::KernelKnob &k : req.knobs)
      if (k != best.knob) {
        double scale = codegen::kernelKnobScale(k, topo.stepModel);
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%d loads: %.0f%%",
                      others.empty() ? "" : ", ", k.loads, 100 * scale);
        others += buf;
      }
    log << "ccsynth: note: CUDA kernels for " << topo.name
        << "'s GPUs: " << codegen::describeKernelKnob(best.knob)
        << " in flight per thread ("
        << (int)(16 * best.knob.threads * best.knob.loads) << " B per "
        << "threadblock; the model's per-threadblock throughput needs "
        << (int)topo.stepModel.tbInFlightBytes << " B"
        << (others.empty() ? "" : "; with " + others + " of it") << ")"
        << "; --cuda-threads/--cuda-loads choose by hand\n";
  }
  if (!over.empty())
    log << "ccsynth: note: a faster configuration (" << over
        << " of code) exceeds the " << (kGeneratedCodeBudget >> 10)
        << " KiB that nvcc builds in minutes; --instances and the "
           "other lowering flags write it by hand\n";
  if (served)
    servedNote(*served);
  if (best.regridded() && t.regridded) {
    log << "ccsynth: note: the schedule's chunk factor "
        << sched.collective.chunkFactor << " has the odd factor "
        << oddPart(sched.collective.chunkFactor) << ": written on a grid of "
        << t.regridded->collective.chunkFactor
        << " sub-chunks per split, so that power-of-two counts are "
           "multiples of the program's loop\n";
    plan.schedule = *t.regridded;
  }
  return kKept;
}

} // namespace

MscclXmlPlan tuneForMscclXml(const Schedule &sched, const Topology &topo,
                             const CompileOptions &c, const UserChoices &user) {
  MscclXmlPlan plan;
  std::ostringstream log;
  if (Status s = mscclXml(sched, topo, c, user, plan, log); !s)
    plan.error = s.error();
  plan.messages = log.str();
  return plan;
}

MscclDirPlan tuneForMscclDir(const Schedule &sched, const Topology &topo,
                             const CompileOptions &c, long long lo,
                             long long hi, const UserChoices &user,
                             const std::string &input) {
  MscclDirPlan plan;
  std::ostringstream log;
  mscclDir(sched, topo, c, lo, hi, user, input, plan, log);
  plan.messages = log.str();
  return plan;
}

GeneratedCodePlan tuneForGeneratedCode(const Schedule &sched,
                                       const Topology &topo,
                                       const CompileOptions &c, int loadsCap,
                                       const UserChoices &user) {
  GeneratedCodePlan plan;
  std::ostringstream log;
  plan.nothingWritten =
      generatedCode(sched, topo, c, loadsCap, user, plan, log) != kKept;
  plan.messages = log.str();
  return plan;
}

} // namespace ccsynth::tuning
