//===- Z3Solver.cpp - The Z3 backend of IncrementalSolver -----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The only file that sees Z3. It is compiled with exceptions (z3++.h reports
// errors by throwing; under -fno-exceptions they would silently become
// no-ops) and catches every z3::exception at the API boundary. Pure Boolean
// and pseudo-Boolean models go to Z3's QF_FD solver, which runs its SAT
// engine with native cardinality/PB reasoning and supports assumptions.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Synth/Solver.h"

#include <z3++.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace ccsynth::synth {

const char *toString(SolveStatus s) {
  switch (s) {
  case SolveStatus::Sat:
    return "sat";
  case SolveStatus::Unsat:
    return "unsat";
  case SolveStatus::Unknown:
    return "unknown";
  }
  return "?";
}

struct IncrementalSolver::Impl {
  z3::context ctx;
  z3::solver solver;
  std::vector<z3::expr> vars; ///< index = variable id (0 unused)
  size_t sent = 0;
  unsigned seed = 0;
  bool satEngine = true;
  std::vector<std::pair<std::string, std::string>> extra;
  std::vector<bool> model;
  std::string error;

  explicit Impl(const SolverOptions &o)
      : solver(o.logic.empty() ? z3::solver(ctx)
                               : z3::solver(ctx, o.logic.c_str())),
        seed(o.seed), satEngine(o.logic == "QF_FD"), extra(o.params) {}

  z3::expr lit(int l) {
    int v = std::abs(l);
    while ((int)vars.size() <= v)
      vars.push_back(
          ctx.bool_const(("b" + std::to_string(vars.size())).c_str()));
    return l > 0 ? vars[v] : !vars[v];
  }
};

IncrementalSolver::IncrementalSolver(const SolverOptions &options) {
  try {
    impl = std::make_unique<Impl>(options);
  } catch (const z3::exception &e) {
    impl.reset();
  }
}

IncrementalSolver::~IncrementalSolver() = default;

Status IncrementalSolver::sync(const BoolModel &model) {
  if (!impl)
    return Error("could not create a Z3 context");
  try {
    const auto &cons = model.constraints();
    for (; impl->sent < cons.size(); ++impl->sent) {
      const BoolModel::Constraint &c = cons[impl->sent];
      z3::expr_vector es(impl->ctx);
      for (int l : c.lits)
        es.push_back(impl->lit(l));
      std::optional<z3::expr> e;
      switch (c.kind) {
      case BoolModel::Kind::Clause:
        e = es.empty() ? impl->ctx.bool_val(false) : z3::mk_or(es);
        break;
      case BoolModel::Kind::AtMost:
        if (c.bound < 0)
          e = impl->ctx.bool_val(false);
        else if (c.bound < (int)es.size())
          e = z3::atmost(es, (unsigned)c.bound);
        break;
      case BoolModel::Kind::AtLeast:
        if (c.bound > (int)es.size())
          e = impl->ctx.bool_val(false);
        else if (c.bound > 0)
          e = z3::atleast(es, (unsigned)c.bound);
        break;
      case BoolModel::Kind::PbLe:
        e = z3::pble(es, c.coefs.data(), c.bound);
        break;
      }
      if (!e)
        continue;
      impl->solver.add(*e);
    }
    // Make sure every variable exists so that value() can evaluate it.
    impl->lit(std::max(1, model.numVars()));
  } catch (const z3::exception &e) {
    return Error(std::string("Z3 rejected a constraint: ") + e.msg());
  }
  return Status::success();
}

SolveOutcome IncrementalSolver::solve(const std::vector<int> &assumptions,
                                      double timeLimitSec, unsigned conflicts) {
  SolveOutcome out;
  if (!impl) {
    out.reason = "no Z3 context";
    return out;
  }
  auto t0 = std::chrono::steady_clock::now();
  try {
    z3::params p(impl->ctx);
    p.set("random_seed", impl->seed);
    if (impl->satEngine) {
      p.set("sat.random_seed", impl->seed);
      // Keep cardinality constraints native instead of bit-blasting them
      // into sorting networks (much faster on the load bounds).
      p.set("sat.cardinality.solver", true);
    }
    for (auto &[k, v] : impl->extra) {
      if (v == "true" || v == "false")
        p.set(k.c_str(), v == "true");
      else if (!v.empty() &&
               v.find_first_not_of("0123456789") == std::string::npos)
        p.set(k.c_str(), (unsigned)std::stoul(v));
      else
        p.set(k.c_str(), v.c_str());
    }
    double ms = std::max(1.0, std::min(timeLimitSec * 1000.0, 4.0e9));
    p.set("timeout", (unsigned)ms);
    if (impl->satEngine && conflicts > 0)
      p.set("sat.max_conflicts", conflicts);
    impl->solver.set(p);
    z3::expr_vector as(impl->ctx);
    for (int l : assumptions)
      as.push_back(impl->lit(l));
    // Z3's own timeout is not checked in every phase (its preprocessing of
    // large cardinality constraints can overrun it by minutes), so a
    // watchdog interrupts the context when the time is up.
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
    std::thread watchdog([&] {
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_for(lock, std::chrono::duration<double>(timeLimitSec),
                       [&] { return finished; }))
        impl->ctx.interrupt();
    });
    z3::check_result r = z3::unknown;
    try {
      r = impl->solver.check(as);
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mu);
        finished = true;
      }
      cv.notify_all();
      watchdog.join();
      throw;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      finished = true;
    }
    cv.notify_all();
    watchdog.join();
    impl->model.clear();
    if (r == z3::sat) {
      out.status = SolveStatus::Sat;
      z3::model m = impl->solver.get_model();
      impl->model.assign(impl->vars.size(), false);
      for (size_t v = 1; v < impl->vars.size(); ++v) {
        z3::expr val = m.eval(impl->vars[v], false);
        impl->model[v] = val.is_true();
      }
    } else if (r == z3::unsat) {
      out.status = SolveStatus::Unsat;
    } else {
      out.status = SolveStatus::Unknown;
      out.reason = impl->solver.reason_unknown();
    }
  } catch (const z3::exception &e) {
    out.status = SolveStatus::Unknown;
    out.reason = std::string("Z3 error: ") + e.msg();
  }
  out.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return out;
}

bool IncrementalSolver::value(int var) const {
  if (!impl || var <= 0 || var >= (int)impl->model.size())
    return false;
  return impl->model[var];
}

std::string IncrementalSolver::toSmtLib2() const {
  if (!impl)
    return "";
  try {
    return impl->solver.to_smt2();
  } catch (const z3::exception &e) {
    return std::string("; Z3 error: ") + e.msg() + "\n";
  }
}

} // namespace ccsynth::synth
