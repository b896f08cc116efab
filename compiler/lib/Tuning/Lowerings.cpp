//===- Lowerings.cpp - Programs lowered for timing, cached ------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The lowering cache: each configuration of a schedule is lowered to the
// program the step model times once per process (loweringKey, Lowerings),
// and lowerForTiming is the one way the tuner lowers.
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
  }
  // The step program alone: the XML or source is written only for the
  // configurations chosen (or measured against the code budget), and those
  // are compiled again with MLIR's verifier after each pass.
  c.programOnly = true;
  c.verifyPasses = false;
  std::string key = loweringKey(schedule, c);
  std::optional<msccl::Algo> algo;
  if (auto hit = Lowerings::instance().find(key)) {
    algo = std::move(*hit);
  } else {
    CompileResult r = compileSchedule(schedule, c);
    if (r.ok() && r.program)
      algo = std::move(*r.program);
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

} // namespace detail

} // namespace ccsynth::tuning
