//===- Tuning.cpp - The tuned compile -------------------------------------===//
#include "Tuning.h"

#include "StepPrediction.h"

#include "ccsynth/Core/Baselines.h"
#include "ccsynth/Core/Rings.h"
#include "ccsynth/Core/Simulator.h"
#include "ccsynth/Target/KernelKnobs.h"
#include "ccsynth/Target/MSCCLXml.h"
#include "ccsynth/Target/StepSimulator.h"
#include "ccsynth/Target/SwitchLowering.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>

namespace ccsynth::cli {

std::vector<double> tuningSizes(long long minBytes, long long maxBytes) {
  double lo = minBytes > 0 ? (double)minBytes : 0;
  double hi = maxBytes > 0 ? (double)maxBytes : 1e300;
  std::vector<double> out;
  for (double b : {1024.0, 1048576.0, 1073741824.0})
    if (b >= lo && b <= hi)
      out.push_back(b);
  if (out.empty()) {
    out.push_back(std::max(lo, 1024.0));
    if (maxBytes > 0 && (double)maxBytes > out.front())
      out.push_back((double)maxBytes);
  }
  return out;
}

std::vector<double> generatedTuningSizes(const Schedule &schedule,
                                         long long minBytes,
                                         long long maxBytes) {
  std::vector<double> out = tuningSizes(minBytes, maxBytes);
  if (!schedule.usesSwitches())
    return out;
  for (double b : tuningGrid(std::max(0LL, minBytes), std::max(0LL, maxBytes)))
    if (b > 1048576.0 && b < 1073741824.0)
      out.push_back(b);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<double> tuningGrid(long long lo, long long hi) {
  std::vector<double> out;
  for (double b = 1024; b <= 1073741824.0; b *= 4)
    if (b >= (double)lo && (hi <= 0 || b <= (double)hi))
      out.push_back(b);
  return out;
}

std::vector<int> tuningInstances(const Schedule &schedule) {
  // Lowering and timing cost grows with transfers x instances; past about
  // 64k lowered transfers per configuration the search would take longer
  // than the compile it tunes.
  constexpr size_t kMaxLowered = 1 << 16;
  std::vector<int> out;
  size_t n = std::max<size_t>(1, schedule.transfers.size());
  for (int k = 1; k <= 32; k *= 2)
    if (k == 1 || n * (size_t)k <= kMaxLowered)
      out.push_back(k);
  return out;
}

Served servedWhereFaster(const TuneCandidate &c, const TuneResult &t,
                         const std::vector<double> &sizes, bool ties) {
  Served best;
  if (t.ncclBestUs.size() != sizes.size())
    return best;
  // Faster: within 0.1%. A tie: within the model's noise, 2% (NCCL's
  // program is tried at more instance counts than the schedule).
  double slack = ties ? 1.02 : 1.001;
  double bestScore = 0;
  size_t n = sizes.size();
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a; b < n; ++b) {
      bool ok = true;
      double logSum = 0;
      for (size_t k = a; k <= b && ok; ++k) {
        // MSCCL selects a program whose loop has an odd factor for none
        // of the power-of-two sizes weighed here, and a long loop for
        // none below it.
        ok = c.selectableAt(sizes[k]) && c.timeUs[k] <= t.ncclBestUs[k] * slack;
        logSum += std::log(t.ncclBestUs[k] / c.timeUs[k]);
      }
      if (!ok)
        continue;
      size_t len = b - a + 1;
      bool better = ties ? !best.any || len > best.count ||
                               (len == best.count && logSum > bestScore)
                         : logSum > bestScore;
      if (!better)
        continue;
      bestScore = logSum;
      best.any = true;
      best.count = len;
      best.minBytes = a == 0 ? 0 : (long long)(sizes[a - 1] * 2);
      best.maxBytes = b + 1 == n ? 0 : (long long)(sizes[b] * 2) - 1;
    }
  best.score = std::exp(bestScore / (double)n);
  return best;
}

Served servedRunsWhereFaster(const TuneCandidate &c, const TuneResult &t,
                             const std::vector<double> &sizes) {
  Served out;
  if (t.ncclBestUs.size() != sizes.size())
    return out;
  size_t n = sizes.size();
  double logSum = 0;
  for (size_t a = 0; a < n;) {
    auto faster = [&](size_t k) {
      return c.selectableAt(sizes[k]) && c.timeUs[k] <= t.ncclBestUs[k] * 1.001;
    };
    if (!faster(a)) {
      ++a;
      continue;
    }
    size_t b = a;
    double gain = 0;
    for (; b < n && faster(b); ++b)
      gain += std::log(t.ncclBestUs[b] / c.timeUs[b]);
    // [a, b): a run, served where it gains in all.
    if (gain > 0) {
      Served::Range r;
      r.minBytes = a == 0 ? 0 : (long long)(sizes[a - 1] * 2);
      r.maxBytes = b == n ? 0 : (long long)(sizes[b - 1] * 2) - 1;
      out.ranges.push_back(r);
      out.count += b - a;
      logSum += gain;
    }
    a = b;
  }
  if (out.ranges.empty())
    return out;
  out.any = true;
  out.minBytes = out.ranges.front().minBytes;
  out.maxBytes = out.ranges.front().maxBytes;
  out.score = std::exp(logSum / (double)n);
  return out;
}

Served splitServedByTile(const Served &served, const std::vector<double> &sizes,
                         const std::vector<double> &tileAt) {
  Served out = served;
  out.ranges.clear();
  size_t n = std::min(sizes.size(), tileAt.size());
  for (const Served::Range &r : served.ranges) {
    // The sizes the range holds: [a, b].
    size_t a = 0;
    while (a < n && sizes[a] < (double)r.minBytes)
      ++a;
    size_t b = a;
    while (b + 1 < n && (r.maxBytes == 0 || sizes[b + 1] <= (double)r.maxBytes))
      ++b;
    if (a >= n) {
      out.ranges.push_back(r);
      continue;
    }
    size_t start = a;
    for (size_t k = a; k <= b; ++k) {
      if (k < b && tileAt[k + 1] == tileAt[start])
        continue;
      Served::Range piece;
      piece.minBytes =
          start == a ? r.minBytes : (long long)(sizes[start - 1] * 2);
      piece.maxBytes = k == b ? r.maxBytes : (long long)(sizes[k] * 2) - 1;
      piece.tileBytes = (unsigned long long)tileAt[start];
      out.ranges.push_back(piece);
      start = k + 1;
    }
  }
  if (!out.ranges.empty()) {
    out.minBytes = out.ranges.front().minBytes;
    out.maxBytes = out.ranges.front().maxBytes;
  }
  return out;
}

const Schedule &candidateSchedule(const TuneResult &t, const TuneCandidate &c,
                                  const Schedule &input) {
  if (c.regridded() && t.regridded)
    return *t.regridded;
  if (!c.fromSchedule())
    return t.ncclPrograms[c.program];
  return input;
}

std::string describeCandidate(const TuneCandidate &c, bool withProtocol) {
  return std::to_string(c.instances) + " instance" +
         (c.instances == 1 ? "" : "s") +
         (withProtocol ? ", " + c.protocol : std::string()) +
         (!c.fuse     ? ", unfused"
          : c.forward ? ""
                      : ", fused without forwarding") +
         (c.pipeline > 1 ? ", " + std::to_string(c.pipeline) + " pipeline parts"
                         : "") +
         (c.localTbs > 1 ? ", " + std::to_string(c.localTbs) +
                               " threadblocks for local steps"
                         : "") +
         (c.splitPhases ? ", reduction and spreading on separate channels"
                        : "") +
         (c.switchLanes > 0 ? ", " + std::to_string(c.switchLanes) +
                                  " switch threadblocks per rank and switch"
                            : "");
}

bool isNcclTree(const Schedule &program) {
  return program.origin == "baseline:tree";
}

namespace {

/// The programs NCCL runs for this collective on a machine of this shape:
/// rings for AllReduce, AllGather, ReduceScatter, Broadcast and Reduce
/// (all of the machine's rings, and where their number is not a power of
/// two also the largest power of two of them, which MSCCL can select for
/// power-of-two sizes), direct sends for AllToAll; none for the others.
/// On several nodes NCCL's tuner also picks its double binary tree for
/// AllReduce: it is a candidate there too. Each program is built only
/// while `mayBuild` allows (a deadline): on hundreds of ranks one ring
/// program is millions of transfers, seconds to build and verify.
std::vector<Schedule> ncclShaped(const Schedule &schedule,
                                 const Topology &topology, bool inPlace,
                                 const std::function<bool()> &mayBuild) {
  std::vector<Schedule> out;
  const Collective &col = schedule.collective;
  if (col.numRanks != topology.numRanks())
    return out;
  BaselineKind kind = BaselineKind::Ring;
  switch (col.kind) {
  case CollectiveKind::AllReduce:
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::Broadcast:
  case CollectiveKind::Reduce:
    break;
  case CollectiveKind::AllToAll:
    kind = BaselineKind::Direct;
    break;
  default:
    return out;
  }
  if (!baselineSupports(kind, col.kind, topology))
    return out;
  BaselineOptions bo;
  bo.inPlace = inPlace;
  bo.root = std::max(0, col.root);
  std::vector<int> limits{0};
  if (kind == BaselineKind::Ring) {
    int rings = (int)findRings(topology).rings.size(), pow2 = 1;
    while (pow2 * 2 <= rings)
      pow2 *= 2;
    if (pow2 != rings)
      limits.push_back(pow2);
  }
  for (int limit : limits) {
    if (!mayBuild())
      return out;
    bo.maxRings = limit;
    auto s = makeBaseline(kind, col.kind, topology, bo);
    if (!s)
      continue;
    out.push_back(s.take());
  }
  if (col.kind == CollectiveKind::AllReduce && topology.numNodes() > 1 &&
      baselineSupports(BaselineKind::Tree, col.kind, topology) && mayBuild()) {
    bo.maxRings = 0;
    if (auto s = makeBaseline(BaselineKind::Tree, col.kind, topology, bo))
      out.push_back(s.take());
  }
  for (Schedule &sched : out) {
    sched.topology = schedule.topology;
    sched.topologyHash = schedule.topologyHash;
    sched.topologyHashVersion = schedule.topologyHashVersion;
  }
  return out;
}

/// What NCCL's in-network algorithms (NVLS, NVLS-tree, CollNet Direct and
/// Chain, NVLS with SHARP) reach at `sizes` for this collective on the machine,
/// timed by the in-network runtime model: the fastest per size, or empty where
/// none applies. No XML holds them, but NCCL runs them where its tuner finds
/// them faster.
std::vector<double> ncclInNetworkUs(const Schedule &schedule,
                                    const Topology &topology,
                                    const std::vector<double> &sizes) {
  std::vector<double> best;
  const Collective &col = schedule.collective;
  if (topology.switches.empty() || col.kind == CollectiveKind::Custom ||
      col.numRanks != topology.numRanks())
    return best;
  BaselineOptions bo;
  bo.inPlace = col.inPlace;
  for (BaselineKind kind : kNcclInNetworkAlgorithms) {
    if (!baselineSupports(kind, col.kind, topology))
      continue;
    auto s = makeBaseline(kind, col.kind, topology, bo);
    if (!s)
      continue;
    auto times = simulateInNetworkRuntime(*s, topology, sizes);
    if (!times)
      continue;
    best.resize(sizes.size(), INFINITY);
    for (size_t k = 0; k < sizes.size(); ++k)
      best[k] = std::min(best[k], (*times)[k].timeUs);
  }
  return best;
}

/// What identifies a lowering for timing: the schedule's content, the
/// target, and every option its program depends on. Not the tile, the
/// kernel knobs or the header comment, which change only generated code's
/// source; LL128 counts as LL, since both take one connection slot per
/// chunk and lower alike (the name is set on the program afterwards).
std::string loweringKey(const Schedule &schedule, const CompileOptions &c) {
  std::string json = scheduleToJson(schedule);
  char buf[320];
  std::snprintf(
      buf, sizeof buf,
      "%zu:%s|%d|%d%d%d%d%d%d%d|%d,%d,%d,%d,%d,%d,%d,%d,%d|%lld,%lld|",
      json.size(), codegen::hashText(json).c_str(), (int)c.target,
      (int)c.verify, (int)c.fuse, (int)c.fuseForward, (int)c.coalesce,
      (int)c.splitPhases, (int)c.shareRanks, (int)c.boundedBuffers, c.localTbs,
      c.instances, c.pipeline, c.maxCount, c.maxTbSteps, c.maxTbsPerChannel,
      c.maxChannels,
      c.switchLanes > 0 ? c.switchLanes : msccl::kDefaultSwitchLanes,
      c.maxThreadblocksPerRank, c.minBytes, c.maxBytes);
  std::string key = buf;
  key += (c.protocol == "LL128" ? std::string("LL") : c.protocol) + "|" +
         c.mscclColl + "|" + c.name;
  for (const codegen::ByteRange &r : c.moreByteRanges)
    key += "|" + std::to_string(r.minBytes) + "-" + std::to_string(r.maxBytes);
  return key;
}

/// The programs lowered for timing in this process, the latest of them up
/// to kStepsKept steps in all. A tuned compile of generated code weighs
/// each configuration at up to seven tiles, and the tile changes only its
/// timing; synth's in-network screening and the timing of the candidates
/// it keeps lower the same configurations; what NCCL reaches is timed at
/// three protocols, two of which lower alike. Safe to use from several
/// threads.
class Lowerings {
public:
  static constexpr size_t kStepsKept = 1 << 22;
  static Lowerings &instance() {
    static Lowerings cache;
    return cache;
  }
  /// The cached lowering (itself nullopt where it did not lower), or
  /// nullopt when `key` is not cached.
  std::optional<std::optional<msccl::Algo>> find(const std::string &key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end())
      return std::nullopt;
    return it->second.algo;
  }
  void add(const std::string &key, const std::optional<msccl::Algo> &algo) {
    size_t steps = 1;
    if (algo)
      for (const msccl::Gpu &g : algo->gpus)
        for (const msccl::Threadblock &tb : g.tbs)
          steps += tb.steps.size();
    if (steps > kStepsKept)
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!entries_.emplace(key, Entry{algo, steps}).second)
      return;
    order_.push_back(key);
    held_ += steps;
    while (held_ > kStepsKept) {
      auto oldest = entries_.find(order_.front());
      held_ -= oldest->second.steps;
      entries_.erase(oldest);
      order_.pop_front();
    }
  }

private:
  struct Entry {
    std::optional<msccl::Algo> algo;
    size_t steps = 0;
  };
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  std::deque<std::string> order_;
  size_t held_ = 0;
};

/// Lowers `schedule` with `c` (a configuration applied) to the program the
/// step model times: MSCCL's, or with `generatedCode` the one generated
/// code runs, as `simulate --level steps --target cuda` lowers it
/// (StepPrediction.cpp). nullopt when it does not lower or not all of a
/// rank's threadblocks are resident. Each configuration is lowered once
/// per process (Lowerings).
std::optional<msccl::Algo> lowerForTiming(const Schedule &schedule,
                                          const Topology &topology,
                                          CompileOptions c,
                                          bool generatedCode) {
  c.target = CompileTarget::MscclXml;
  // The input was proven once; candidates are only timed.
  c.verify = false;
  c.checkLinks = false;
  c.checkRoundTrip = false;
  // Coalescing is the last resort of a program that fits no other way,
  // not a configuration to weigh.
  c.coalesce = false;
  // Generated code is timed on the program its source comes from, not an
  // XML form of it: switch threadblocks have none, and MSCCL's limits (32
  // channels, a dependency's threadblock id in an int8_t, 4096 elements
  // per rank) do not bind it.
  if (generatedCode) {
    // (Its lowering has no bounded buffers and up to 64 channels.)
    c.target = CompileTarget::Cuda;
    // The step program alone: its source is generated only for the
    // configurations written (or measured against the code budget).
    c.programOnly = true;
  }
  std::string key = loweringKey(schedule, c);
  std::optional<msccl::Algo> algo;
  if (auto hit = Lowerings::instance().find(key)) {
    algo = std::move(*hit);
  } else {
    CompileResult r = compileSchedule(schedule, c);
    if (r.ok()) {
      auto parsed = generatedCode ? Expected<msccl::Algo>(std::move(*r.program))
                                  : msccl::parseXml("<tuned>", *r.output);
      if (parsed)
        algo = parsed.take();
    }
    Lowerings::instance().add(key, algo);
  }
  if (!algo)
    return std::nullopt;
  if (!c.protocol.empty())
    algo->proto = c.protocol;
  // MSCCL launches a rank's threadblocks at once and they wait on each
  // other: all must be resident, one per SM (residentThreadblocks).
  int resident = residentThreadblocks(topology.name, nullptr);
  if (resident > 0 && algo->threadblocksPerRank() > resident)
    return std::nullopt;
  return algo;
}

/// What NCCL's own kernel reaches at `request`'s sizes with `program`, one
/// of its ring or tree programs (ncclShaped), where MSCCL's interpreter
/// cannot run it as NCCL does: a threadblock of MSCCL holds at most 64
/// steps, so a longer ring (an AllGather over more than 64 ranks, an
/// AllReduce over more than 32) is cut over several threadblocks that
/// share its links, while NCCL's kernel loops over a ring of any length on
/// one threadblock per channel. Timed as MSCCL's interpreter runs the same
/// fused hops (protocols, slices, bounded buffers) on one threadblock per
/// ring and channel, at every protocol of `request` and every instance
/// count up to 32 channels, as the MSCCL timing (NCCL's rings on these
/// machines use at most 32). Empty where the program fits MSCCL's
/// threadblocks: its MSCCL timing is NCCL's. A configuration of k
/// instances starts only when `mayStart(k)` allows (the request's
/// deadline); `took(k, seconds)` hears how long each one took.
std::vector<double> ncclNativeUs(const Schedule &program,
                                 const Topology &topology,
                                 const TuneRequest &request,
                                 const std::function<bool(int)> &mayStart,
                                 const std::function<void(int, double)> &took) {
  // Steps per threadblock are at most a rank's sends and receives on one
  // channel: within MSCCL's limit, the MSCCL timing stands.
  std::map<std::pair<int, int>, int> perChannel;
  std::set<int> channels;
  for (const Transfer &t : program.transfers) {
    if (t.src.rank == t.dst.rank)
      continue;
    ++perChannel[{t.src.rank, t.channel}];
    ++perChannel[{t.dst.rank, t.channel}];
    channels.insert(t.channel);
  }
  int most = 0;
  for (const auto &[at, n] : perChannel)
    most = std::max(most, n);
  if (most <= msccl::kMaxSteps)
    return {};
  std::vector<double> best;
  bool longer = false;
  if (request.protocols.empty())
    return best;
  std::vector<msccl::StepSimOptions> perSize;
  for (double bytes : request.sizes)
    perSize.push_back(ncclNativeStepOptions(program.collective, bytes));
  for (int k = 1;
       k * (int)std::max<size_t>(1, channels.size()) <= msccl::kMaxChannels;
       k *= 2) {
    if (!mayStart(k))
      return best;
    auto began = std::chrono::steady_clock::now();
    CompileOptions c;
    c.instances = k;
    c.protocol = request.protocols.front();
    // The lowering of generated code: no step table to fit in, and the
    // same program whatever the protocol it is timed with.
    std::optional<msccl::Algo> lowered =
        lowerForTiming(program, topology, c, true);
    if (!lowered)
      continue;
    msccl::Algo &algo = *lowered;
    longer |= passesMscclSteps(algo);
    if (!longer)
      return {};
    for (const std::string &proto : request.protocols) {
      algo.proto = proto;
      std::vector<double> times;
      if (auto t = msccl::simulateStepsAt(algo, topology, perSize))
        for (const msccl::StepSimResult &r : *t)
          times.push_back(r.timeUs);
      if (times.size() != request.sizes.size())
        continue;
      best.resize(times.size(), INFINITY);
      for (size_t i = 0; i < times.size(); ++i)
        best[i] = std::min(best[i], times[i]);
    }
    took(k,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
             .count());
  }
  return best;
}

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
                  const TuneRequest &request, bool *hasLocal) {
  cand.applyTo(c);
  std::optional<msccl::Algo> algo =
      lowerForTiming(schedule, topology, c, request.generatedCode);
  if (!algo)
    return std::nullopt;
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
      perSize.push_back(stepSimOptions(schedule.collective, bytes,
                                       request.generatedCode,
                                       request.tileBytes));
      if (knob.arch > 0)
        perSize.back().tbScale =
            codegen::kernelKnobScale(knob, topology.stepModel);
    }
    auto timed = msccl::simulateStepsAt(*algo, topology, perSize);
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
  return cand;
}

} // namespace

bool passesMscclSteps(const msccl::Algo &algo) {
  for (const msccl::Gpu &g : algo.gpus)
    for (const msccl::Threadblock &tb : g.tbs)
      if ((int)tb.steps.size() > msccl::kMaxSteps)
        return true;
  return false;
}

msccl::StepSimOptions ncclNativeStepOptions(const Collective &collective,
                                            double bytes) {
  msccl::StepSimOptions o = stepSimOptions(collective, bytes, false, 0);
  o.runtimeRules = false;
  return o;
}

std::optional<TuneCandidate> timeCandidate(const Schedule &schedule,
                                           const Topology &topology,
                                           const CompileOptions &base,
                                           const TuneCandidate &config,
                                           const TuneRequest &request) {
  return timeConfiguration(schedule, topology, base, config, request, nullptr);
}

std::vector<double> ncclReachUs(const Schedule &schedule,
                                const Topology &topology,
                                const std::vector<double> &sizes) {
  TuneRequest req;
  req.sizes = sizes;
  // Every count is tried for NCCL's programs (tuneCompile's explore).
  req.instances = {1, 2, 4, 8, 16, 32};
  req.protocols = {"Simple", "LL128", "LL"};
  req.fallback = true;
  req.inNetwork = true;
  req.ncclOnly = true;
  CompileOptions base;
  base.target = CompileTarget::MscclXml;
  base.verify = false;
  return tuneCompile(schedule, topology, base, req).ncclBestUs;
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
          stepSimOptions(schedule.collective, bytes, true, tile));
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

int switchLoadsCap(const Schedule &schedule) {
  if (!schedule.usesSwitches())
    return 0;
  auto lowering = msccl::lowerSwitchTransfers(schedule);
  return lowering && lowering->orderedOperations > 0 ? 4 : 0;
}

std::vector<int> generatedOrder(const TuneResult &t) {
  std::vector<int> order;
  if (t.best < 0)
    return order;
  const TuneCandidate &fastest = t.candidates[t.best];
  for (int i = 0; i < (int)t.candidates.size(); ++i)
    if (t.candidates[i].fromSchedule() &&
        t.candidates[i].oddFactor() <= fastest.oddFactor())
      order.push_back(i);
  auto near = [&](int i) {
    return t.candidates[i].score <= fastest.score * 1.02;
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const TuneCandidate &x = t.candidates[a], &y = t.candidates[b];
    if (near(a) != near(b))
      return near(a);
    if (near(a) && x.instances != y.instances)
      return x.instances < y.instances;
    return x.score < y.score;
  });
  return order;
}

std::vector<double> generatedTileCandidates(const Schedule &schedule,
                                            double tile, bool coarse) {
  if (!schedule.usesSwitches())
    return {tile};
  if (coarse)
    return {1 << 20, 256 << 10, 64 << 10, 16 << 10};
  return {1 << 20, 256 << 10, 64 << 10, 32 << 10, 16 << 10, 12 << 10, 8 << 10};
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
                config.forward = forward;
                config.localTbs = localTbs;
                config.pipeline = pipeline;
                config.splitPhases = split;
                config.switchLanes = lanes;
                auto cand = timeConfiguration(s, topology, base, config,
                                              request, &hasLocal);
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
                    if (f.program == program && f.fuse && f.forward &&
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
    for (size_t i = own; i < result.candidates.size(); ++i)
      for (size_t k = 0; k < request.sizes.size(); ++k)
        result.ncclBestUs[k] =
            std::min(result.ncclBestUs[k], result.candidates[i].timeUs[k]);
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
    if (result.bestOwn >= 0 &&
        result.candidates[result.best].score * 1.02 >=
            result.candidates[result.bestOwn].score)
      result.best = result.bestOwn;
    else
      result.replacement =
          result.ncclPrograms[result.candidates[result.best].program];
  }
  return result;
}

} // namespace ccsynth::cli
