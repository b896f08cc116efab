//===- Tuning.h - Configurations chosen by the step model -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What `ccsynth compile` writes by default. A schedule lowers to many MSCCL
// programs (instances, protocol); the step-level model, calibrated against
// NCCL's published figures, times each at a few sizes and the best one is
// written. NCCL's own ring for the same collective on the same machine,
// lowered and tuned the same way, is a candidate too: when it beats every
// lowering of the schedule, compile writes it instead and says so.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Compiler/LoweringConfig.h"
#include "ccsynth/Perf/Predictor.h"
#include "ccsynth/Perf/StepSimulator.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Target/KernelKnobs.h"
#include "ccsynth/Target/MSCCLProgram.h"
#include "ccsynth/Topology/Topology.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace ccsynth::tuning {

struct TuneRequest {
  /// The sizes the choice is weighed at (bytes, nccl-tests' meaning).
  std::vector<double> sizes;
  /// Instance counts and protocols to try (one each when the user chose).
  std::vector<int> instances;
  std::vector<std::string> protocols;
  /// Also try NCCL's ring for the collective on this machine.
  bool fallback = true;
  /// With `fallback`: what NCCL reaches includes its in-network algorithms
  /// (NVLS, NVLS-tree, CollNet, NVLS with SHARP) where the machine's switches
  /// allow them.
  bool inNetwork = true;
  /// No configuration is started that would not end by this (unset: no
  /// deadline): the first is expected to take `firstEstimateSeconds`, each
  /// later one 1.5 times the longest so far.
  std::optional<std::chrono::steady_clock::time_point> until;
  double firstEstimateSeconds = 0;
  /// The first configuration that fits of the schedule's own program, and
  /// of its re-cut on a power-of-two grid where its chunk factor is odd
  /// (what MSCCL selects at power-of-two sizes), is timed even past
  /// `until` (of at most six tried), so that a result never depends on how
  /// loaded the machine is.
  bool firstAlways = false;
  /// Time what generated code runs (compile --target cuda, CUDA plugins)
  /// instead of MSCCL: lowered as for that target (no bounded connection
  /// buffers, up to 64 channels) and timed by the step model's variant for
  /// generated code, with `tileBytes` per pass (puts land in the receiver's
  /// buffer; no protocol but Simple's data path).
  bool generatedCode = false;
  double tileBytes = 1 << 20;
  /// With generatedCode: the kernel knobs (threads, loads in flight) for
  /// the machine's GPU to time each configuration with; the fastest is
  /// kept with it (empty: the model's per-threadblock figures as they are).
  std::vector<codegen::KernelKnob> knobs;
  /// Only the instance counts and protocols: the schedule's other lowering
  /// choices (fusion, local threadblocks, split phases) stay as `base`
  /// has them. For schedules too large to weigh every choice.
  bool narrow = false;
  /// Only NCCL's programs (with `fallback`): the schedule's own
  /// configurations are not timed; TuneResult::ncclBestUs is what counts.
  bool ncclOnly = false;
  /// NCCL's programs are a reference only, never a file to write (synth's
  /// prediction, ncclReachUs): they are timed once, as NCCL's kernel runs
  /// them, not also as MSCCL would run their XML.
  bool ncclReferenceOnly = false;
  /// What times each lowered program (null: the step-level model,
  /// perf::defaultPredictor()). synth's quick screen
  /// (screenGeneratedCodeUs) always uses the step-level model.
  const perf::Predictor *predictor = nullptr;
  const perf::Predictor &timing() const {
    return predictor ? *predictor : perf::defaultPredictor();
  }
};

/// One configuration the tuner timed: the lowering's knobs (the
/// LoweringConfig base), the kernel knobs, and its times.
struct TuneCandidate : LoweringConfig {
  /// For NCCL's programs: the index in TuneResult::ncclPrograms; -1 for the
  /// schedule's own configurations, kRegridded for those of
  /// TuneResult::regridded (the schedule on a power-of-two chunk grid).
  int program = -1;
  static constexpr int kRegridded = -2;
  bool fromSchedule() const { return program < 0; }
  bool regridded() const { return program == kRegridded; }
  /// Generated code: the kernel knobs this configuration was timed with
  /// (the fastest of TuneRequest::knobs; arch 0 when none were given).
  codegen::KernelKnob knob;
  /// Step-level time at each size of the request, in µs.
  std::vector<double> timeUs;
  /// For one of NCCL's programs timed as MSCCL XML: the same program as
  /// NCCL's own kernel runs it (no interpreter costs), what NCCL reaches
  /// with it; empty otherwise.
  std::vector<double> ncclKernelUs;
  /// Geometric mean over the sizes of time / the best time at that size.
  double score = 0;
  long long nchunksperloop = 1;
  /// nchunksperloop without its factors of two (1: every power-of-two
  /// size that is a multiple of the loop runs it).
  int oddFactor() const { return (int)oddPart(nchunksperloop); }
  /// Whether MSCCL selects the program for a call of `bytes` in 4-byte
  /// elements (nccl-tests' float): the element count must be a multiple of
  /// nchunksperloop (smaller types only make that easier).
  bool selectableAt(double bytes) const {
    return bytes >= 4.0 * (double)nchunksperloop &&
           std::fmod(bytes, 4.0 * (double)nchunksperloop) == 0;
  }
  /// Sets the configuration this candidate was timed with (instances,
  /// protocol, fusion, ...: the LoweringConfig) in `c`.
  void applyTo(CompileOptions &c) const { c.lowering() = lowering(); }
};

struct TuneResult {
  /// Every configuration that compiled and was timed.
  std::vector<TuneCandidate> candidates;
  /// Index of the choice in `candidates`.
  int best = -1;
  /// Set when the choice is NCCL's ring: the schedule to compile instead.
  std::optional<Schedule> replacement;
  /// The schedule re-cut on a power-of-two chunk grid (regridChunks), when
  /// its own chunk factor has an odd factor and the re-cut exists: MSCCL
  /// selects none of its own lowerings for power-of-two sizes.
  std::optional<Schedule> regridded;
  /// NCCL's programs for the collective that were candidates (its ring
  /// over all of the machine's rings, and over a power of two of them).
  std::vector<Schedule> ncclPrograms;
  /// Per size of the request: the fastest of NCCL's program's
  /// configurations (what NCCL itself reaches there; for an out-of-place
  /// schedule its in-place program's too, which NCCL matches out of
  /// place), and of its in-network algorithms (NVLS, NVLS-tree, CollNet, NVLS
  /// with SHARP) where the machine's switches allow them, which no XML holds
  /// but NCCL runs; empty when none of them was a candidate.
  std::vector<double> ncclBestUs;
  /// Best configuration of the input schedule alone (-1: none compiled).
  int bestOwn = -1;
  /// The request's deadline stopped the search before every configuration
  /// it would have tried.
  bool cutShort = false;
  /// ... of NCCL's programs in particular: ncclBestUs holds what those
  /// timed reached, which NCCL may beat.
  bool ncclCutShort = false;
};

/// The schedule a candidate of `t` compiles: `input` itself, its re-cut
/// or one of NCCL's programs.
const Schedule &candidateSchedule(const TuneResult &t, const TuneCandidate &c,
                                  const Schedule &input);

/// Every configuration is a compile of its own: schedules of more transfers
/// are tuned narrowly (TuneRequest::narrow), and beyond kMaxTunedTransfers
/// not at all (the search would cost many times the compile it tunes).
inline constexpr size_t kMaxFullyTunedTransfers = 20000;
inline constexpr size_t kMaxTunedTransfers = 65536;

/// 1K, 4K, 16K, ..., 1G within [lo, hi] (hi <= 0: unbounded): the sizes at
/// which a tuned compile decides what serves each size.
std::vector<double> tuningGrid(long long lo, long long hi);

/// The sizes a tuned compile weighs for buffers in [minBytes, maxBytes]
/// (maxBytes <= 0: unbounded): 1K, 1M and 1G where they lie in the range,
/// else the range's ends.
std::vector<double> tuningSizes(long long minBytes, long long maxBytes);

/// The sizes the tuned compile of generated code weighs: tuningSizes, and
/// for a schedule with switch operations also 4M, 16M, 64M and 256M within
/// the range. There the tile decides how switch threadblocks overlap the
/// steps they wait for, which shows between 1M and 1G (on 4 H100 nodes
/// NVLS with rail exchanges ran 1.27 x faster at 16M with 16 KiB tiles than
/// with 64 KiB, which were within 2% at 1K, 1M and 1G).
std::vector<double> generatedTuningSizes(const Schedule &schedule,
                                         long long minBytes,
                                         long long maxBytes);

/// Instance counts worth trying for a schedule: powers of two up to
/// MSCCL's 32 channels (they keep nchunksperloop's odd factors as they are),
/// fewer for large schedules, whose lowering cost grows with instances.
std::vector<int> tuningInstances(const Schedule &schedule);

/// The tiles (bytes per chunk per pass) the tuned compile weighs for the
/// generated code of a schedule with switch operations, largest first:
/// switch threadblocks and the steps they wait for (NVLS-tree's network
/// chain) overlap only across passes, so where they wait for each other
/// smaller tiles pipeline them: 1M, 256K, 64K, 32K, 16K, 12K and 8K, or
/// with `coarse` (synth's estimates within its time limit) 1M, 256K, 64K
/// and 16K. Other schedules: `tile` alone.
std::vector<double> generatedTileCandidates(const Schedule &schedule,
                                            double tile, bool coarse = false);

/// The most loads in flight a generated kernel of `schedule` may keep (0:
/// no cap). Where switch operations wait for point-to-point steps
/// (NVLS-tree), the straight-line kernel keeps more live across them: at
/// 8 loads it spilled on sm_90 (80 and 108 bytes in the virtual-ranks and
/// NCCL kernels of NCCL's dgx-h100x2 NVLS-tree, nvcc 13.0), at 4 it does
/// not.
int switchLoadsCap(const Schedule &schedule);

/// Generated code is straight-line per threadblock: more instances make
/// it longer and its nvcc build slower (about a minute per architecture
/// for 200 KiB; several times longer per KiB past that). The tuned compile
/// writes the first configuration of generatedOrder whose code fits this
/// many bytes (of at most kGeneratedCodeTries tried), else the schedule
/// untuned at one instance.
constexpr size_t kGeneratedCodeBudget = 256 << 10;
constexpr size_t kGeneratedCodeTries = 8;

/// The order in which the tuned compile of generated code tries the
/// schedule's own configurations of `t`: within the model's noise, 2%, of
/// the fastest (t.best), the fewest instances first; then the others,
/// fastest first. Only configurations whose loop has no larger odd factor
/// than the fastest's.
std::vector<int> generatedOrder(const TuneResult &t);

/// What a schedule runs as generated code (compile --target cuda): its
/// instance counts and tiles (generatedTileCandidates from 1 MiB, coarse;
/// NCCL's count of switch threadblocks) weighed as the tuned compile
/// weighs them, the configuration it would write
/// (generatedOrder, within kGeneratedCodeBudget; one instance when none
/// fits) timed by the step model's generated-code variant at `bytes`;
/// nullopt when it does not lower or no configuration compiled.
/// Configurations start only before `until` (the first one whatever the
/// time); `cutShort`, when given, says whether the deadline left some
/// untried (the time is then of the best of those tried).
std::optional<double>
generatedCodeUs(const Schedule &schedule, const Topology &topology,
                double bytes,
                std::optional<std::chrono::steady_clock::time_point> until,
                bool *cutShort = nullptr);

/// A quick estimate of what a schedule runs as generated code at `bytes`,
/// to rank candidates before their tuned compile (generatedCodeUs): the
/// fastest of its programs at 1, 2 and 4 instances (those tuningInstances
/// allows), each lowered once and timed by the step model's generated-code
/// variant with every coarse tile generatedTileCandidates weighs, default
/// kernel knobs. nullopt when it lowers at none.
std::optional<double> screenGeneratedCodeUs(const Schedule &schedule,
                                            const Topology &topology,
                                            double bytes);

/// What NCCL itself reaches at `sizes` (µs per size, nccl-tests' bytes) for
/// `schedule`'s collective on `topology`: the fastest of its ring (and, for
/// AllReduce on several nodes, double binary tree) programs as MSCCL lowers
/// them (a ring longer than MSCCL's 64 steps per threadblock on one
/// threadblock per channel, as NCCL's kernel runs it), at every instance
/// count and protocol, in place and out of place,
/// and of its in-network algorithms (NVLS, NVLS-tree, CollNet, NVLS with SHARP)
/// where the machine's switches allow them. Empty when NCCL runs none of them
/// here (another collective, or the schedule's rank count is not the
/// machine's).
std::vector<double> ncclReachUs(const Schedule &schedule,
                                const Topology &topology,
                                const std::vector<double> &sizes);

/// Whether some threadblock of `algo` holds more steps than MSCCL's
/// interpreter can: a program of NCCL's lowered as generated code is (no
/// step table to fit in) that only NCCL's own kernel runs as lowered;
/// elsewhere its MSCCL timing is NCCL's.
bool passesMscclSteps(const msccl::Algo &algo);

/// The step model's options for NCCL's own kernel at `bytes`: MSCCL's
/// protocols, slices and bounded buffers, without the runtime rules
/// (steps and dependency ids per threadblock) and the costs that are
/// MSCCL's interpreter's (StepSimOptions::interpreter).
msccl::StepSimOptions ncclNativeStepOptions(const Collective &collective,
                                            double bytes);

/// Times one configuration of `schedule` (its instances, protocol, fusion,
/// local threadblocks, pipeline parts and phases as `config` holds them)
/// as `request` asks: at its sizes, as MSCCL or as generated code (with
/// its tile and each of its knobs, keeping the fastest). nullopt when it
/// does not compile or fit.
std::optional<TuneCandidate> timeCandidate(const Schedule &schedule,
                                           const Topology &topology,
                                           const CompileOptions &base,
                                           const TuneCandidate &config,
                                           const TuneRequest &request);

/// Times every configuration of `request` for `schedule` (and NCCL's ring
/// when asked) with the step-level model on `topology`, and picks the one
/// with the best score. `base` carries the user's other options.
TuneResult tuneCompile(const Schedule &schedule, const Topology &topology,
                       const CompileOptions &base, const TuneRequest &request);

/// The sizes a program should serve so that MSCCL runs it only where it is
/// at least as fast as NCCL's program (NCCL runs the others): the run of
/// consecutive sizes of the request, each no slower than `ncclBestUs`,
/// with the largest gain over NCCL (geometric mean over all sizes, sizes
/// outside counting as equal); byte bounds at the power of two between a
/// served size and the next (0: unbounded). None for a program whose
/// nchunksperloop has an odd factor: MSCCL selects it for no power of two.
/// With `ties`, a run where the program only matches NCCL (within 2%, the
/// model's noise) counts too, and among runs the longest wins (then the larger
/// gain): what a program that is nowhere faster than NCCL should serve, so that
/// MSCCL leaves every size where it is slower to NCCL.
struct Served {
  bool any = false;
  long long minBytes = 0, maxBytes = 0;
  /// How many sizes of the request the run holds.
  size_t count = 0;
  /// Geometric mean over every size of NCCL's time / the program's, 1
  /// outside the served run.
  double score = 1;
  /// servedRunsWhereFaster: every run served, ascending and disjoint (the
  /// first is minBytes..maxBytes); servedWhereFaster leaves it empty.
  struct Range {
    long long minBytes = 0, maxBytes = 0;
    /// Generated code: the tile the range runs with (0: the program's).
    unsigned long long tileBytes = 0;
  };
  std::vector<Range> ranges;
};
Served servedWhereFaster(const TuneCandidate &c, const TuneResult &t,
                         const std::vector<double> &sizes, bool ties = false);

/// Where generated code serves: as servedWhereFaster, but every maximal run
/// of consecutive sizes where the program is no slower than `ncclBestUs`
/// and gains over it in all (a plugin holds one descriptor per run, so the
/// interposer runs the program at each), not only the best run. `count` is
/// the sizes of all runs, `score` the geometric mean over every size.
Served servedRunsWhereFaster(const TuneCandidate &c, const TuneResult &t,
                             const std::vector<double> &sizes);

/// `served` with each range cut where the tile that runs its sizes changes
/// (`tileAt`: per size of `sizes`, the tile generated code runs it with;
/// the cuts at the same byte bounds as between runs), each piece with its
/// tile: one plugin descriptor each, the same code.
Served splitServedByTile(const Served &served, const std::vector<double> &sizes,
                         const std::vector<double> &tileAt);

/// "4 instances, Simple, fused without forwarding, ..." (without the
/// protocol for generated code, which has none to choose).
std::string describeCandidate(const TuneCandidate &c, bool withProtocol = true);

/// Whether `program`, one of TuneResult::ncclPrograms, is NCCL's double
/// binary tree (AllReduce on several nodes) rather than its ring or direct
/// sends.
bool isNcclTree(const Schedule &program);

} // namespace ccsynth::tuning
