//===- FairShareTest.cpp - Max-min fair rates by progressive filling ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The solver the chunk-level simulator and synth's list scheduler share
// (core/include/ccsynth/Support/FairShare.h): fair shares, caps, the
// incremental solve of the component that changed, and on random
// instances the defining property of max-min fairness.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Support/FairShare.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <span>

using namespace ccsynth;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Flows over constraints, as a caller of the solver keeps them; also the
/// solver's view of them (flowsOn, constraintsOf, capacity, ...).
struct Net {
  std::vector<double> capacities;
  std::vector<std::vector<int>> on; ///< streaming flows per constraint
  std::vector<std::vector<int>> of; ///< constraints per flow
  std::vector<double> caps;
  std::vector<char> live;
  std::vector<double> rate;
  std::vector<int> frozenOrder;
  FairShare solver;

  explicit Net(std::vector<double> perConstraint)
      : capacities(std::move(perConstraint)) {
    on.resize(capacities.size());
  }
  int flow(std::vector<int> constraints, double cap = kInf) {
    of.push_back(std::move(constraints));
    caps.push_back(cap);
    live.push_back(0);
    rate.push_back(0);
    return (int)of.size() - 1;
  }
  void begin() { solver.reset((int)capacities.size(), (int)of.size()); }
  void start(int f) {
    live[f] = 1;
    for (int c : of[f]) {
      on[c].push_back(f);
      solver.touchConstraint(c);
    }
    solver.touchFlow(f);
  }
  void stop(int f) {
    live[f] = 0;
    rate[f] = 0;
    for (int c : of[f]) {
      std::erase(on[c], f);
      solver.touchConstraint(c);
    }
  }
  void solve() {
    frozenOrder.clear();
    solver.solve(*this, [&](int f, double r) {
      rate[f] = r;
      frozenOrder.push_back(f);
    });
  }
  // The solver's view.
  const std::vector<int> &flowsOn(int c) const { return on[c]; }
  std::span<const int> constraintsOf(int f) const { return of[f]; }
  double capacity(int c) const { return capacities[c]; }
  bool streaming(int f) const { return live[f] != 0; }
  double cap(int f) const { return caps[f]; }
  bool capBinds(int f) const { return std::isfinite(caps[f]); }
};
} // namespace

TEST_CASE("flows on one constraint share it evenly", "[fairshare]") {
  Net n({10});
  int a = n.flow({0}), b = n.flow({0});
  n.begin();
  n.start(a);
  n.start(b);
  n.solve();
  CHECK(n.rate[a] == 5);
  CHECK(n.rate[b] == 5);
  CHECK_FALSE(n.solver.pending());
}

TEST_CASE("a flow bound elsewhere leaves the rest to the others",
          "[fairshare]") {
  // a crosses both constraints; c1 binds it at 4, b takes the other 6.
  Net n({10, 4});
  int a = n.flow({0, 1}), b = n.flow({0});
  n.begin();
  n.start(a);
  n.start(b);
  n.solve();
  CHECK(n.rate[a] == 4);
  CHECK(n.rate[b] == 6);
  // The tighter constraint saturates first.
  CHECK(n.frozenOrder.front() == a);
}

TEST_CASE("a flow's own cap binds below its fair share", "[fairshare]") {
  Net n({10});
  int a = n.flow({0}, 2), b = n.flow({0});
  int c = n.flow({}, 3); // crosses nothing: its cap
  n.begin();
  n.start(a);
  n.start(b);
  n.start(c);
  n.solve();
  CHECK(n.rate[a] == 2);
  CHECK(n.rate[b] == 8);
  CHECK(n.rate[c] == 3);
  // A cap equal to the fair share ties in the cap's favour.
  Net t({10});
  int x = t.flow({0}, 5), y = t.flow({0});
  t.begin();
  t.start(x);
  t.start(y);
  t.solve();
  CHECK(t.frozenOrder == std::vector<int>{x, y});
  CHECK(t.rate[y] == 5);
}

TEST_CASE("only the component that changed is solved again", "[fairshare]") {
  Net n({10, 6});
  int a = n.flow({0}), b = n.flow({0}), c = n.flow({1});
  n.begin();
  n.start(a);
  n.start(b);
  n.start(c);
  n.solve();
  CHECK(n.rate[c] == 6);
  n.stop(b);
  n.solve();
  CHECK(n.rate[a] == 10);
  // c shares nothing with what changed: not frozen again.
  CHECK(n.frozenOrder == std::vector<int>{a});
  n.solve(); // nothing pending: nothing happens
  CHECK(n.frozenOrder.empty());
}

TEST_CASE("random instances are max-min fair", "[fairshare]") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 200; ++round) {
    int nc = 1 + (int)(rng() % 6), nf = 1 + (int)(rng() % 12);
    std::vector<double> caps(nc);
    for (double &c : caps)
      c = 1 + (double)(rng() % 100);
    Net n(caps);
    for (int f = 0; f < nf; ++f) {
      std::vector<int> cs;
      for (int c = 0; c < nc; ++c)
        if (rng() % 3 == 0)
          cs.push_back(c);
      if (cs.empty())
        cs.push_back((int)(rng() % nc));
      n.flow(cs, rng() % 4 == 0 ? 1 + (double)(rng() % 50) : kInf);
    }
    n.begin();
    for (int f = 0; f < nf; ++f)
      n.start(f);
    n.solve();
    REQUIRE((int)n.frozenOrder.size() == nf);
    // Feasible: no constraint carries more than its capacity.
    for (int c = 0; c < nc; ++c) {
      double sum = 0;
      for (int f : n.on[c])
        sum += n.rate[f];
      CHECK(sum <= caps[c] * (1 + 1e-9));
    }
    // Max-min: every flow is at its cap, or crosses a saturated constraint
    // on which no flow is faster than it.
    for (int f = 0; f < nf; ++f) {
      CHECK(n.rate[f] <= n.caps[f] * (1 + 1e-9));
      bool bottleneck = n.rate[f] >= n.caps[f] * (1 - 1e-9);
      for (int c : n.of[f]) {
        double sum = 0, fastest = 0;
        for (int g : n.on[c]) {
          sum += n.rate[g];
          fastest = std::max(fastest, n.rate[g]);
        }
        bottleneck |=
            sum >= caps[c] * (1 - 1e-9) && n.rate[f] >= fastest * (1 - 1e-9);
      }
      CHECK(bottleneck);
    }
  }
}
