//===- PredictorTest.cpp - The tuner asks its predictor -------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The tuner times every configuration through TuneRequest::predictor
// (compiler/include/ccsynth/Perf/Predictor.h): a predictor of its own (as
// one fed by GPU measurements would be) decides what it picks, and the
// default is the step-level model.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Perf/Predictor.h"
#include "ccsynth/Tuning/Tuning.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>

using namespace ccsynth;
using namespace ccsynth::tuning;

namespace {
/// Times every program by its channel count alone.
class ByChannels final : public perf::Predictor {
public:
  explicit ByChannels(std::function<double(int)> us) : us(std::move(us)) {}
  Expected<std::vector<msccl::StepSimResult>>
  predict(const msccl::Algo &program, const Topology &,
          const std::vector<msccl::StepSimOptions> &perSize) const override {
    ++calls;
    std::vector<msccl::StepSimResult> out(perSize.size());
    for (msccl::StepSimResult &r : out)
      r.timeUs = us(program.nchannels);
    return out;
  }
  const char *describe() const override { return "by channels"; }
  std::function<double(int)> us;
  mutable int calls = 0;
};

struct Fixture {
  Topology topo;
  Schedule ring;
  TuneRequest req;
  Fixture() {
    auto t = makeBuiltinTopology("dgx-a100");
    REQUIRE(t);
    topo = t.take();
    auto s = makeBaseline(BaselineKind::Ring, CollectiveKind::AllGather, topo);
    REQUIRE(s);
    ring = s.take();
    req.sizes = {1048576.0};
    req.instances = {1, 2, 4};
    req.protocols = {"Simple"};
    req.fallback = false;
    req.narrow = true;
  }
};
} // namespace

TEST_CASE("the tuner picks what its predictor says is fastest",
          "[tuning][predictor]") {
  Fixture f;
  CompileOptions base;
  base.verify = false;

  ByChannels moreIsFaster([](int ch) { return 100.0 / ch; });
  f.req.predictor = &moreIsFaster;
  TuneResult a = tuneCompile(f.ring, f.topo, base, f.req);
  REQUIRE(a.best >= 0);
  CHECK(a.candidates[a.best].instances == 4);
  CHECK(moreIsFaster.calls >= 3);

  ByChannels fewerIsFaster([](int ch) { return 10.0 * ch; });
  f.req.predictor = &fewerIsFaster;
  TuneResult b = tuneCompile(f.ring, f.topo, base, f.req);
  REQUIRE(b.best >= 0);
  CHECK(b.candidates[b.best].instances == 1);
  // Its times are the predictor's, not the step model's: each
  // configuration 10 us per channel instead of 100 us / channels (the
  // tuner stops adding instances once they stop paying, so b tried fewer).
  REQUIRE(b.candidates.size() >= 2);
  for (const TuneCandidate &cb : b.candidates) {
    auto same = std::find_if(
        a.candidates.begin(), a.candidates.end(),
        [&](const TuneCandidate &ca) { return ca.instances == cb.instances; });
    REQUIRE(same != a.candidates.end());
    CHECK(cb.timeUs.front() == Approx(1000.0 / same->timeUs.front()));
  }
}

TEST_CASE("without a predictor the tuner times with the step-level model",
          "[tuning][predictor]") {
  Fixture f;
  CompileOptions base;
  base.verify = false;
  CHECK(std::string(perf::defaultPredictor().describe()) == "step-level model");
  TuneResult t = tuneCompile(f.ring, f.topo, base, f.req);
  REQUIRE(t.best >= 0);
  TuneCandidate one;
  one.instances = t.candidates[t.best].instances;
  one.protocol = "Simple";
  auto again = timeCandidate(f.ring, f.topo, base, one, f.req);
  REQUIRE(again);
  CHECK(again->timeUs == t.candidates[t.best].timeUs);
}
