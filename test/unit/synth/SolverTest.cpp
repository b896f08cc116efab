// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the solver backend and the list scheduler's merging.
#include "ccsynth/Synth/Solver.h"
#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/Synth/ListScheduler.h"
#include "ccsynth/Synth/Search.h"

#include <catch2/catch.hpp>

using namespace ccsynth;
using namespace ccsynth::synth;

TEST_CASE("the Z3 backend decides clauses and cardinality constraints",
          "[solver]") {
  BoolModel m;
  int a = m.newVar(), b = m.newVar(), c = m.newVar();
  m.addClause({a, b});
  m.addAtMost({a, b, c}, 1);
  m.addImplies(b, c);
  IncrementalSolver s(SolverOptions{1});
  REQUIRE(s.sync(m).ok());
  SolveOutcome o = s.solve({}, 10);
  REQUIRE(o.status == SolveStatus::Sat);
  // b would force c and break the at-most-one: only a is true.
  CHECK(s.value(a));
  CHECK_FALSE(s.value(b));
  CHECK_FALSE(s.value(c));
  CHECK_THAT(s.toSmtLib2(), Catch::Contains("declare-fun"));
  // Under the assumption not-a it is unsatisfiable.
  CHECK(s.solve({-a}, 10).status == SolveStatus::Unsat);
  // Weighted: 2a + 3b <= 2 forbids b.
  BoolModel w;
  int x = w.newVar(), y = w.newVar();
  w.addPbLe({x, y}, {2, 3}, 2);
  w.addAtLeast({x, y}, 1);
  IncrementalSolver s2(SolverOptions{});
  REQUIRE(s2.sync(w).ok());
  REQUIRE(s2.solve({}, 10).status == SolveStatus::Sat);
  CHECK(s2.value(x));
  CHECK_FALSE(s2.value(y));
}

TEST_CASE("the exact slot model proves dgx1's two-step AllGather optimal",
          "[solver]") {
  auto t = makeBuiltinTopology("dgx1");
  REQUIRE(t.ok());
  auto col = Collective::builtin(CollectiveKind::AllGather, 8, 1);
  REQUIRE(col.ok());
  auto p = buildRoutingProblem(*t, defaultSketch(1), *col);
  REQUIRE(p.ok());
  SearchContext ctx;
  ctx.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto plan = exactPlan(*p, makeCostModel(*t, 128), ctx);
  REQUIRE(plan.has_value());
  CHECK(plan->provenOptimal);
  int depth = 0;
  for (const PlanSend &s : plan->sends)
    depth = std::max(depth, s.slot);
  CHECK(depth == 2);
  // 8 values, each to 7 ranks.
  CHECK(plan->sends.size() == 56);
}

TEST_CASE("merging contiguous transfers keeps the schedule correct",
          "[listscheduler]") {
  auto t = makeBuiltinTopology("fc:4");
  REQUIRE(t.ok());
  auto col = Collective::builtin(CollectiveKind::AllGather, 4, 4);
  REQUIRE(col.ok());
  auto p = buildRoutingProblem(*t, defaultSketch(1), *col);
  REQUIRE(p.ok());
  auto plan = heuristicPlan(*p, makeCostModel(*t, 256));
  REQUIRE(plan);
  auto list = lowerCopy(*p, *plan);
  REQUIRE(list.ok());
  ListScheduleOptions lo;
  lo.bytes = 1024;
  auto timed = listSchedule(*list, *t, lo);
  REQUIRE(timed.ok());
  TaskList merged = mergeContiguous(*list, *timed, *t, lo.bytes, 1e18);
  // The four pieces of a rank's chunk travel together at 1 KB.
  CHECK(merged.tasks.size() < list->tasks.size());
  auto mt = listSchedule(merged, *t, lo);
  REQUIRE(mt.ok());
  CHECK(mt->makespan <= timed->makespan);
  Schedule s = toSchedule(merged, *mt);
  VerifyOptions vo;
  vo.topology = &*t;
  CHECK(verifySchedule(s, vo).ok());
}
