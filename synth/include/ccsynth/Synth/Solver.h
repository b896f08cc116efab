//===- Solver.h - Boolean/pseudo-Boolean models and the Z3 backend --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Encodings are built as plain data (BoolModel: variables, clauses,
// cardinality and pseudo-Boolean constraints) without any Z3 type, then
// handed to an IncrementalSolver whose only implementation is Z3
// (Z3Solver.cpp, the one file that includes z3++.h, compiled with
// exceptions). The solver API never throws: Z3 errors become Unknown
// outcomes with a reason. Z3 parameters (seed, time limit) are set per
// context, never globally.
//
// Literals follow the DIMACS convention: variable v >= 1 is the literal v,
// its negation is -v.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"

#include <memory>
#include <string>
#include <vector>

namespace ccsynth::synth {

class BoolModel {
public:
  enum class Kind { Clause, AtMost, AtLeast, PbLe };
  struct Constraint {
    Kind kind;
    std::vector<int> lits;
    std::vector<int> coefs; ///< PbLe only
    int bound = 0;
  };

  /// A fresh variable (returned as its positive literal).
  int newVar() { return ++vars; }
  int numVars() const { return vars; }

  void addClause(std::vector<int> lits) {
    cons.push_back({Kind::Clause, std::move(lits), {}, 0});
  }
  /// a -> b.
  void addImplies(int a, int b) { addClause({-a, b}); }
  /// sum(lits) <= k.
  void addAtMost(std::vector<int> lits, int k) {
    cons.push_back({Kind::AtMost, std::move(lits), {}, k});
  }
  /// sum(lits) >= k.
  void addAtLeast(std::vector<int> lits, int k) {
    cons.push_back({Kind::AtLeast, std::move(lits), {}, k});
  }
  /// sum(coefs[i] * lits[i]) <= k, coefficients positive.
  void addPbLe(std::vector<int> lits, std::vector<int> coefs, int k) {
    cons.push_back({Kind::PbLe, std::move(lits), std::move(coefs), k});
  }

  const std::vector<Constraint> &constraints() const { return cons; }
  size_t size() const { return cons.size(); }

private:
  int vars = 0;
  std::vector<Constraint> cons;
};

struct SolverOptions {
  unsigned seed = 0;
  /// Z3 logic: QF_FD (SAT engine with native cardinality/PB) or "" (the
  /// general SMT engine).
  std::string logic = "QF_FD";
  /// Extra Z3 parameters ("name", "value"), for experiments.
  std::vector<std::pair<std::string, std::string>> params;
};

enum class SolveStatus { Sat, Unsat, Unknown };
const char *toString(SolveStatus s);

struct SolveOutcome {
  SolveStatus status = SolveStatus::Unknown;
  /// Why the answer is Unknown (time limit, solver error).
  std::string reason;
  double seconds = 0;
};

/// An incremental solver over a growing BoolModel.
class IncrementalSolver {
public:
  explicit IncrementalSolver(const SolverOptions &options);
  ~IncrementalSolver();
  IncrementalSolver(const IncrementalSolver &) = delete;
  IncrementalSolver &operator=(const IncrementalSolver &) = delete;

  /// Adds the constraints of `model` not sent yet (the model only grows).
  Status sync(const BoolModel &model);
  /// Checks satisfiability under the assumption literals, for at most
  /// `timeLimitSec` seconds of wall time and, when non-zero, `conflicts`
  /// conflicts of the SAT search: a call stopped by the latter gives the
  /// same answer on every run.
  SolveOutcome solve(const std::vector<int> &assumptions, double timeLimitSec,
                     unsigned conflicts = 0);
  /// Value of a variable in the last satisfying assignment (false when the
  /// last answer was not Sat or the variable is unconstrained).
  bool value(int var) const;
  /// The constraints sent so far, as an SMT-LIB 2 script.
  std::string toSmtLib2() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace ccsynth::synth
