//===- Lowering.cpp - Evaluate a .ccl program into a chunk-level schedule -===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements lowerProgram (Lowering.h). The Evaluator runs a checked
// program with concrete parameters: it evaluates expressions with overflow
// and range checks (chunk references, input values, sums), executes
// statements (loops, branches, assertions, `step` blocks), builds the
// built-in or custom collective from its pre and post blocks, and turns
// each copy or reduce into a Transfer with its step, after checking what
// the chunk slots hold (execTransfer, commitStep).
// Sections: values and slots, expressions, statements, the collective,
// transfers and steps, run. See docs/DSL.md ("Steps", "Custom
// collectives", "Diagnostics").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/DSL/Lowering.h"

#include "ccsynth/DSL/Diagnostics.h"
#include "ccsynth/DSL/Sema.h"

#include "Concat.h"
#include "ScopedNames.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <variant>

namespace ccsynth::dsl {

namespace {

/// A chunk reference after evaluation; already checked against the buffers.
struct ChunkVal {
  int rank = 0;
  BufferKind buffer = BufferKind::Input;
  int index = 0;
  int count = 1;
};

/// A postcondition term: the sorted ids of the input values it combines
/// (shared: a Val stays 24 bytes, and a name's value is not copied per use).
struct ValueSet {
  std::shared_ptr<const std::vector<int>> set;
  explicit ValueSet(std::vector<int> ids)
      : set(std::make_shared<const std::vector<int>>(std::move(ids))) {}
  const std::vector<int> &ids() const { return *set; }
};

using Val = std::variant<long long, bool, ChunkVal, BufferKind, ValueSet>;
static_assert(sizeof(Val) <= 24, "a binding's value stays small");

/// Per chunk slot (after in-place aliasing): does it hold data, and which
/// steps last wrote and read it.
struct SlotState {
  bool defined = false;
  int lastWrite = -1;
  int lastRead = -1;
};

/// A transfer of the current `step` block, not yet given its step.
struct Pending {
  Transfer transfer;
  SourceLoc loc;
  std::vector<size_t> srcSlots, dstSlots;
  /// The loop iteration that emitted it ("r = 1"), for notes.
  std::string iteration;
};

constexpr int kMaxRanks = 65536;
constexpr long long kMaxChunkFactor = 1 << 20;
constexpr long long kMaxInstances = 1024;

std::string bufferName(BufferKind b) { return toString(b); }

std::string showChunk(int rank, BufferKind b, int index) {
  return "chunk(" + std::to_string(rank) + ", " + bufferName(b) + ", " +
         std::to_string(index) + ")";
}

class Evaluator {
public:
  Evaluator(const Program &p, const LoweringOptions &o) : prog(p), opts(o) {}
  Expected<LoweredProgram> run();

private:
  const Program &prog;
  const LoweringOptions &opts;
  LoweredProgram result;
  Schedule &sched = result.schedule;
  bool haveCollective = false;

  /// The names bound in each scope and their values.
  ScopedNames<Val> env;

  /// The value of every `param` so far, in declaration order.
  std::vector<long long> paramValues;

  long long iterations = 0;

  // Custom collective under construction.
  std::vector<std::vector<int>> preIds;
  std::vector<std::vector<std::optional<std::vector<int>>>> post;
  std::vector<std::vector<SourceLoc>> postLocs;
  long long postEntries = 0;
  /// The input chunk holding value `v` of the custom collective under
  /// construction (its conditions are built only after the postcondition).
  ChunkLoc inputOf(int v) const {
    for (size_t r = 0; r < preIds.size(); ++r)
      for (size_t i = 0; i < preIds[r].size(); ++i)
        if (preIds[r][i] == v)
          return {(int)r, BufferKind::Input, (int)i};
    return {-1, BufferKind::Input, -1};
  }

  // Buffers and the dependency state used to derive steps.
  std::vector<size_t> bufferBase; ///< [rank * 3 + buffer]
  std::vector<SlotState> slots;
  bool slotsReady = false;

  // The current step block.
  bool inStep = false;
  std::vector<Pending> pending;
  std::unordered_map<size_t, size_t> blockWrites, blockReads;
  /// Chunks moved by all transfers so far.
  long long chunkMoves = 0;
  /// Step of the last non-empty step block (-1 before the first).
  int lastBlockStep = -1;

  // Values of the enclosing loop variables, outermost first, so errors can
  // say in which iteration they happened.
  std::vector<std::pair<std::string_view, long long>> loopVars;

  std::string iteration() const {
    std::string s;
    for (const auto &[name, value] : loopVars)
      s += (s.empty() ? "" : ", ") + std::string(name) + " = " +
           std::to_string(value);
    return s;
  }
  Error withIteration(Error e) const {
    std::string it = iteration();
    if (!it.empty())
      e.notes += "\nnote: in the iteration with " + it;
    return e;
  }
  Error error(const SourceLoc &loc, std::string msg) const {
    return withIteration(errorAt(prog.text, loc, std::move(msg)));
  }
  /// An error with a note at a second location (and the iteration).
  Error error2(const SourceLoc &loc, std::string msg, const SourceLoc &other,
               const std::string &note) const {
    Error e = error(loc, std::move(msg));
    addNote(e, prog.text, other, note);
    return e;
  }

  void pushScope() { env.enter(); }
  void popScope() { env.leave(); }
  /// Binds a name of the syntax tree (which outlives the binding).
  void bind(std::string_view name, Val v) { env.bind(name, std::move(v)); }
  const Val *lookup(std::string_view name) const { return env.find(name); }
  Status countIteration(const SourceLoc &loc) {
    if (++iterations > opts.maxIterations)
      return error(loc, "the program runs more than " +
                            std::to_string(opts.maxIterations) +
                            " loop iterations in total; make the ranges "
                            "smaller");
    return Status::success();
  }

  Status checkDefines();
  Status execBlock(const Block &block);
  Status execStmt(const Stmt &stmt);
  Status execCollective(const CollectiveStmt &c);
  Status execCustom(const CollectiveStmt &c, int ranks, bool inPlace);
  Status execTransfer(const TransferStmt &t);
  Status commitStep(const SourceLoc &loc);
  Status execPreInput(const PreInputStmt &p);
  Status execPostOutput(const PostOutputStmt &p);
  void initSlots();
  size_t slotOf(int rank, BufferKind b, int index) const {
    ChunkLoc c = sched.collective.canonical({rank, b, index});
    return bufferBase[c.rank * 3 + (int)c.buffer] + c.index;
  }
  int bufferSize(BufferKind b) const { return sched.bufferChunks(b); }

  /// Iterates a range, calling `body(value)`; counts iterations.
  template <typename Fn>
  Status forRange(const Range &r, const SourceLoc &loopLoc, Fn &&body);

  Expected<Val> eval(const Expr &e);
  Expected<long long> evalInt(const Expr &e);
  Expected<bool> evalBool(const Expr &e);
  /// An int that must lie in [lo, hi]; `what` names it in the error.
  Expected<int> evalIntIn(const Expr &e, long long lo, long long hi,
                          const std::string &what);
  Expected<Val> evalBinary(const BinaryExpr &b);
  Expected<Val> evalCall(const CallExpr &c);
  Expected<Val> evalChunk(const CallExpr &c);
  Expected<Val> evalInputValue(const InputValueExpr &v);
  Expected<Val> evalSum(const SumExpr &s);
};

#define CCSYNTH_CHECK(expr)                                                    \
  do {                                                                         \
    if (Status s_ = (expr); !s_)                                               \
      return s_.error();                                                       \
  } while (false)

#define CCSYNTH_TRY(var, expr)                                                 \
  auto var##OrErr = (expr);                                                    \
  if (!var##OrErr)                                                             \
    return var##OrErr.error();                                                 \
  auto var = var##OrErr.take();

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Expected<long long> Evaluator::evalInt(const Expr &e) {
  CCSYNTH_TRY(v, eval(e));
  if (auto *i = std::get_if<long long>(&v))
    return *i;
  return error(e.loc, "internal error: expected an int here");
}

Expected<bool> Evaluator::evalBool(const Expr &e) {
  CCSYNTH_TRY(v, eval(e));
  if (auto *b = std::get_if<bool>(&v))
    return *b;
  return error(e.loc, "internal error: expected a bool here");
}

Expected<int> Evaluator::evalIntIn(const Expr &e, long long lo, long long hi,
                                   const std::string &what) {
  // The result is an int: never accept more than fits.
  hi = std::min<long long>(hi, std::numeric_limits<int>::max());
  CCSYNTH_TRY(v, evalInt(e));
  if (v < lo || v > hi)
    return error(beginLoc(e), what + " must be between " + std::to_string(lo) +
                                  " and " + std::to_string(hi) +
                                  ", but it is " + std::to_string(v));
  return (int)v;
}

Expected<Val> Evaluator::eval(const Expr &e) {
  switch (e.getKind()) {
  case Expr::Kind::IntLiteral:
    return Val(cast<IntLiteral>(&e)->value);
  case Expr::Kind::BoolLiteral:
    return Val(cast<BoolLiteral>(&e)->value);
  case Expr::Kind::Name: {
    const auto &n = *cast<NameExpr>(&e);
    if (const Val *v = lookup(n.name))
      return *v;
    return error(n.loc, "internal error: unbound name '" + n.name + "'");
  }
  case Expr::Kind::Unary: {
    const auto &u = *cast<UnaryExpr>(&e);
    if (u.op == UnaryOp::Not) {
      CCSYNTH_TRY(b, evalBool(*u.operand));
      return Val(!b);
    }
    CCSYNTH_TRY(i, evalInt(*u.operand));
    if (i == std::numeric_limits<long long>::min())
      return error(u.loc, "integer overflow in '-'");
    return Val(-i);
  }
  case Expr::Kind::Binary:
    return evalBinary(*cast<BinaryExpr>(&e));
  case Expr::Kind::Call:
    return evalCall(*cast<CallExpr>(&e));
  case Expr::Kind::BufferName:
    return Val(cast<BufferNameExpr>(&e)->buffer);
  case Expr::Kind::InputValue:
    return evalInputValue(*cast<InputValueExpr>(&e));
  case Expr::Kind::Sum:
    return evalSum(*cast<SumExpr>(&e));
  }
  return error(e.loc, "internal error: unknown expression");
}

Expected<Val> Evaluator::evalBinary(const BinaryExpr &b) {
  // Short-circuit, so that `d != 0 && n / d > 1` is safe.
  if (b.op == BinaryOp::And || b.op == BinaryOp::Or) {
    CCSYNTH_TRY(l, evalBool(*b.lhs));
    if (b.op == BinaryOp::And && !l)
      return Val(false);
    if (b.op == BinaryOp::Or && l)
      return Val(true);
    CCSYNTH_TRY(r, evalBool(*b.rhs));
    return Val(r);
  }
  CCSYNTH_TRY(lv, eval(*b.lhs));
  CCSYNTH_TRY(rv, eval(*b.rhs));
  if (b.op == BinaryOp::Add && std::holds_alternative<ValueSet>(lv) &&
      std::holds_alternative<ValueSet>(rv)) {
    auto &l = std::get<ValueSet>(lv).ids();
    auto &r = std::get<ValueSet>(rv).ids();
    std::vector<int> ids;
    ids.reserve(l.size() + r.size());
    std::merge(l.begin(), l.end(), r.begin(), r.end(), std::back_inserter(ids));
    auto dup = std::adjacent_find(ids.begin(), ids.end());
    if (dup != ids.end()) {
      ChunkLoc o = inputOf(*dup);
      return error(b.loc, "this sum counts input(" + std::to_string(o.rank) +
                              ", " + std::to_string(o.index) +
                              ") twice (each input value may appear once)");
    }
    return Val(ValueSet(std::move(ids)));
  }
  if ((b.op == BinaryOp::Eq || b.op == BinaryOp::Ne) &&
      std::holds_alternative<bool>(lv) && std::holds_alternative<bool>(rv)) {
    bool eq = std::get<bool>(lv) == std::get<bool>(rv);
    return Val(b.op == BinaryOp::Eq ? eq : !eq);
  }
  if (!std::holds_alternative<long long>(lv) ||
      !std::holds_alternative<long long>(rv))
    return error(b.loc, "internal error: operands of '" +
                            std::string(spelling(b.op)) + "'");
  long long l = std::get<long long>(lv), r = std::get<long long>(rv), out = 0;
  auto overflow = [&] {
    return error(b.loc, "integer overflow in '" + std::to_string(l) + " " +
                            spelling(b.op) + " " + std::to_string(r) + "'");
  };
  switch (b.op) {
  case BinaryOp::Add:
    if (__builtin_add_overflow(l, r, &out))
      return overflow();
    return Val(out);
  case BinaryOp::Sub:
    if (__builtin_sub_overflow(l, r, &out))
      return overflow();
    return Val(out);
  case BinaryOp::Mul:
    if (__builtin_mul_overflow(l, r, &out))
      return overflow();
    return Val(out);
  case BinaryOp::Div:
  case BinaryOp::Mod:
    if (r == 0)
      return error(b.loc,
                   std::string(b.op == BinaryOp::Div ? "division" : "modulo") +
                       " by zero ('" + std::to_string(l) + " " +
                       spelling(b.op) + " 0')");
    if (l == std::numeric_limits<long long>::min() && r == -1) {
      if (b.op == BinaryOp::Mod)
        return Val(0LL);
      return overflow();
    }
    return Val(b.op == BinaryOp::Div ? l / r : l % r);
  case BinaryOp::Lt:
    return Val(l < r);
  case BinaryOp::Le:
    return Val(l <= r);
  case BinaryOp::Gt:
    return Val(l > r);
  case BinaryOp::Ge:
    return Val(l >= r);
  case BinaryOp::Eq:
    return Val(l == r);
  case BinaryOp::Ne:
    return Val(l != r);
  default:
    break;
  }
  return error(b.loc, "internal error: unknown operator");
}

Expected<Val> Evaluator::evalCall(const CallExpr &c) {
  if (c.callee == "chunk")
    return evalChunk(c);
  std::vector<long long> a;
  for (const ExprPtr &arg : c.args) {
    CCSYNTH_TRY(v, evalInt(*arg));
    a.push_back(v);
  }
  auto need = [&](size_t n) { return a.size() == n; };
  if (c.callee == "min" && need(2))
    return Val(std::min(a[0], a[1]));
  if (c.callee == "max" && need(2))
    return Val(std::max(a[0], a[1]));
  if (c.callee == "xor" && need(2))
    return Val(a[0] ^ a[1]);
  if (c.callee == "mod" && need(2)) {
    if (a[1] <= 0)
      return error(beginLoc(*c.args[1]),
                   "mod(a, b) needs b > 0, but b is " + std::to_string(a[1]));
    long long m = a[0] % a[1];
    return Val(m < 0 ? m + a[1] : m);
  }
  if (c.callee == "pow" && need(2)) {
    if (a[1] < 0)
      return error(beginLoc(*c.args[1]),
                   "pow(base, exponent) needs a non-negative "
                   "exponent, but it is " +
                       std::to_string(a[1]));
    if (a[0] == 0 || a[0] == 1)
      return Val(a[1] == 0 ? 1LL : a[0]);
    if (a[0] == -1)
      return Val(a[1] % 2 ? -1LL : 1LL);
    long long out = 1;
    // |base| >= 2, so this overflows within 63 rounds.
    for (long long i = 0; i < a[1]; ++i)
      if (__builtin_mul_overflow(out, a[0], &out))
        return error(c.loc, "integer overflow in pow(" + std::to_string(a[0]) +
                                ", " + std::to_string(a[1]) + ")");
    return Val(out);
  }
  if ((c.callee == "log2" || c.callee == "clog2") && need(1)) {
    if (a[0] <= 0)
      return error(beginLoc(*c.args[0]), c.callee +
                                             "(a) needs a > 0, but a is " +
                                             std::to_string(a[0]));
    long long x = c.callee == "log2" ? a[0] : a[0] - 1;
    long long lg = 0;
    while (x > 1) {
      x >>= 1;
      ++lg;
    }
    if (c.callee == "clog2" && a[0] > 1)
      ++lg;
    return Val(lg);
  }
  return error(c.loc, "internal error: unknown function '" + c.callee + "'");
}

Expected<Val> Evaluator::evalChunk(const CallExpr &c) {
  if (!haveCollective)
    return error(c.loc, "internal error: chunk before the collective");
  int n = sched.collective.numRanks;
  CCSYNTH_TRY(rank, evalInt(*c.args[0]));
  if (rank < 0 || rank >= n)
    return error(beginLoc(*c.args[0]), "rank " + std::to_string(rank) +
                                           " is out of range (the "
                                           "collective has ranks 0.." +
                                           std::to_string(n - 1) + ")");
  CCSYNTH_TRY(bufVal, eval(*c.args[1]));
  if (!std::holds_alternative<BufferKind>(bufVal))
    return error(beginLoc(*c.args[1]), "internal error: expected a buffer");
  BufferKind buf = std::get<BufferKind>(bufVal);
  CCSYNTH_TRY(index, evalInt(*c.args[2]));
  long long count = 1;
  if (c.args.size() == 4) {
    CCSYNTH_TRY(cnt, evalInt(*c.args[3]));
    if (cnt < 1)
      return error(beginLoc(*c.args[3]),
                   "a chunk count must be at least 1, but it "
                   "is " +
                       std::to_string(cnt));
    count = cnt;
  }
  int size = bufferSize(buf);
  if (size == 0)
    return error(beginLoc(*c.args[1]),
                 "the " + bufferName(buf) + " buffer has no chunks" +
                     (buf == BufferKind::Scratch
                          ? " (declare its size with 'scratch chunks = N;' "
                            "after the collective)"
                          : ""));
  if (index < 0 || index >= size)
    return error(beginLoc(*c.args[2]),
                 "chunk index " + std::to_string(index) +
                     " is out of range (the " + bufferName(buf) +
                     " buffer has chunks 0.." + std::to_string(size - 1) + ")");
  if (index + count > size)
    return error(c.args.size() == 4 ? beginLoc(*c.args[3])
                                    : beginLoc(*c.args[2]),
                 "chunks " + std::to_string(index) + ".." +
                     std::to_string(index + count - 1) +
                     " run past the end of the " + bufferName(buf) +
                     " buffer (chunks 0.." + std::to_string(size - 1) + ")");
  return Val(ChunkVal{(int)rank, buf, (int)index, (int)count});
}

Expected<Val> Evaluator::evalInputValue(const InputValueExpr &v) {
  const Collective &col = sched.collective;
  CCSYNTH_TRY(rank, evalInt(*v.rank));
  if (rank < 0 || rank >= col.numRanks)
    return error(beginLoc(*v.rank), "rank " + std::to_string(rank) +
                                        " is out of range (the collective has "
                                        "ranks 0.." +
                                        std::to_string(col.numRanks - 1) + ")");
  CCSYNTH_TRY(index, evalInt(*v.index));
  if (index < 0 || index >= col.inputChunks)
    return error(beginLoc(*v.index),
                 "input index " + std::to_string(index) + " is out of range (" +
                     (col.inputChunks == 0
                          ? std::string("the input has no chunks")
                          : "the input has chunks 0.." +
                                std::to_string(col.inputChunks - 1)) +
                     ")");
  int id = preIds[rank][index];
  if (id < 0)
    return error(v.loc, "input(" + std::to_string(rank) + ", " +
                            std::to_string(index) +
                            ") holds no value: the precondition leaves that "
                            "input chunk empty");
  return Val(ValueSet({id}));
}

Expected<Val> Evaluator::evalSum(const SumExpr &s) {
  std::vector<int> ids;
  Status st = forRange(s.range, s.loc, [&](long long v) -> Status {
    pushScope();
    bind(s.var, Val(v));
    auto term = eval(*s.body);
    popScope();
    if (!term)
      return term.error();
    const auto *set = std::get_if<ValueSet>(&*term);
    if (!set)
      return error(s.body->loc, "internal error: expected a value");
    const auto &t = set->ids();
    ids.insert(ids.end(), t.begin(), t.end());
    if ((long long)ids.size() > opts.maxSlots)
      return error(s.loc, "this sum has more than " +
                              std::to_string(opts.maxSlots) + " terms");
    return Status::success();
  });
  if (!st)
    return st.error();
  std::sort(ids.begin(), ids.end());
  auto dup = std::adjacent_find(ids.begin(), ids.end());
  if (dup != ids.end()) {
    ChunkLoc o = inputOf(*dup);
    return error(s.loc, "this sum counts input(" + std::to_string(o.rank) +
                            ", " + std::to_string(o.index) +
                            ") twice (each input value may appear once)");
  }
  return Val(ValueSet(std::move(ids)));
}

template <typename Fn>
Status Evaluator::forRange(const Range &r, const SourceLoc &loopLoc,
                           Fn &&body) {
  CCSYNTH_TRY(lo, evalInt(*r.lo));
  CCSYNTH_TRY(hi, evalInt(*r.hi));
  long long by = 1;
  if (r.by) {
    CCSYNTH_TRY(step, evalInt(*r.by));
    if (step <= 0)
      return error(beginLoc(*r.by),
                   "the step of a range ('by') must be positive, "
                   "but it is " +
                       std::to_string(step));
    by = step;
  }
  for (long long v = lo; v < hi;) {
    CCSYNTH_CHECK(countIteration(loopLoc));
    CCSYNTH_CHECK(body(v));
    if (__builtin_add_overflow(v, by, &v))
      break;
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

Status Evaluator::execBlock(const Block &block) {
  pushScope();
  for (const StmtPtr &stmt : block)
    if (Status s = execStmt(*stmt); !s) {
      popScope();
      return s;
    }
  popScope();
  return Status::success();
}

Status Evaluator::execStmt(const Stmt &stmt) {
  switch (stmt.getKind()) {
  case Stmt::Kind::Param: {
    const auto &p = *cast<ParamStmt>(&stmt);
    long long value;
    auto it = opts.defines.find(std::string(p.name));
    if (it != opts.defines.end()) {
      value = it->second;
    } else {
      CCSYNTH_TRY(v, evalInt(*p.init));
      value = v;
    }
    bind(p.name, Val(value));
    paramValues.push_back(value);
    return Status::success();
  }
  case Stmt::Kind::Collective:
    return execCollective(*cast<CollectiveStmt>(&stmt));
  case Stmt::Kind::Scratch: {
    const auto &s = *cast<ScratchStmt>(&stmt);
    const Collective &col = sched.collective;
    long long perRank = (long long)col.inputChunks + col.outputChunks;
    long long room = opts.maxSlots / col.numRanks - perRank;
    CCSYNTH_TRY(n,
                evalIntIn(*s.chunks, 0, std::max(0LL, room),
                          "the scratch size (limited by the total of " +
                              std::to_string(opts.maxSlots) + " chunk slots)"));
    sched.scratchChunks = n;
    return Status::success();
  }
  case Stmt::Kind::Let: {
    const auto &l = *cast<LetStmt>(&stmt);
    CCSYNTH_TRY(v, eval(*l.init));
    bind(l.name, std::move(v));
    return Status::success();
  }
  case Stmt::Kind::For: {
    const auto &f = *cast<ForStmt>(&stmt);
    return forRange(f.range, f.loc, [&](long long v) -> Status {
      loopVars.emplace_back(f.var, v);
      pushScope();
      bind(f.var, Val(v));
      Status s = execBlock(f.body);
      popScope();
      loopVars.pop_back();
      return s;
    });
  }
  case Stmt::Kind::If: {
    const auto &i = *cast<IfStmt>(&stmt);
    CCSYNTH_TRY(cond, evalBool(*i.cond));
    return execBlock(cond ? i.thenBody : i.elseBody);
  }
  case Stmt::Kind::Step: {
    const auto &s = *cast<StepStmt>(&stmt);
    inStep = true;
    pending.clear();
    blockWrites.clear();
    blockReads.clear();
    Status body = execBlock(s.body);
    inStep = false;
    if (!body)
      return body;
    return commitStep(s.loc);
  }
  case Stmt::Kind::Assert: {
    const auto &a = *cast<AssertStmt>(&stmt);
    CCSYNTH_TRY(ok, evalBool(*a.cond));
    if (!ok)
      return error(a.loc,
                   "assertion failed" +
                       (a.message.empty() ? std::string() : ": " + a.message));
    return Status::success();
  }
  case Stmt::Kind::Transfer:
    return execTransfer(*cast<TransferStmt>(&stmt));
  case Stmt::Kind::PreInput:
    return execPreInput(*cast<PreInputStmt>(&stmt));
  case Stmt::Kind::PostOutput:
    return execPostOutput(*cast<PostOutputStmt>(&stmt));
  }
  return Status::success();
}

Status Evaluator::execCollective(const CollectiveStmt &c) {
  const NamedArg *ranksArg = nullptr, *chunksArg = nullptr, *rootArg = nullptr;
  for (const NamedArg &a : c.args) {
    if (a.name == "ranks")
      ranksArg = &a;
    else if (a.name == "chunks")
      chunksArg = &a;
    else if (a.name == "root")
      rootArg = &a;
  }
  if (!ranksArg)
    return error(c.nameLoc, "internal error: no ranks");
  CCSYNTH_TRY(ranks, evalIntIn(*ranksArg->value, 1, kMaxRanks, "'ranks'"));
  int chunks = 1, root = 0;
  if (chunksArg) {
    CCSYNTH_TRY(v,
                evalIntIn(*chunksArg->value, 1, kMaxChunkFactor, "'chunks'"));
    chunks = v;
  }
  if (rootArg) {
    CCSYNTH_TRY(v, evalIntIn(*rootArg->value, 0, ranks - 1, "'root' (a rank)"));
    root = v;
  }
  if (!c.protocol.empty())
    sched.protocol = c.protocol;
  if (c.instances) {
    CCSYNTH_TRY(v, evalIntIn(*c.instances, 1, kMaxInstances, "'instances'"));
    sched.instances = v;
  }
  if (c.custom) {
    CCSYNTH_CHECK(execCustom(c, ranks, c.inPlace));
  } else {
    CollectiveKind kind = *parseCollectiveKind(std::string(c.name));
    long long in = chunks, out = chunks;
    if (kind == CollectiveKind::AllGather || kind == CollectiveKind::Gather ||
        kind == CollectiveKind::AllToAll)
      out = (long long)ranks * chunks;
    if (kind == CollectiveKind::ReduceScatter ||
        kind == CollectiveKind::Scatter || kind == CollectiveKind::AllToAll)
      in = (long long)ranks * chunks;
    bool reduction = kind == CollectiveKind::AllReduce ||
                     kind == CollectiveKind::ReduceScatter ||
                     kind == CollectiveKind::Reduce;
    long long slotCount = ranks * (in + out);
    long long postSize = ranks * out * (reduction ? ranks : 1);
    if (slotCount > opts.maxSlots || postSize > opts.maxSlots)
      return error(c.nameLoc, c.name + " with " + std::to_string(ranks) +
                                  " ranks and " + std::to_string(chunks) +
                                  " chunks is too large (more than " +
                                  std::to_string(opts.maxSlots) +
                                  " chunk slots or postcondition entries)");
    auto col = Collective::builtin(kind, ranks, chunks, c.inPlace, root);
    if (!col)
      return error(c.nameLoc, col.error().message);
    sched.collective = col.take();
  }
  haveCollective = true;
  result.collectiveLoc = c.loc;
  return Status::success();
}

Status Evaluator::execCustom(const CollectiveStmt &c, int ranks, bool inPlace) {
  long long limit = opts.maxSlots / ranks;
  CCSYNTH_TRY(in,
              evalIntIn(*c.inputChunks.value, 0, limit,
                        "'input chunks' (limited by the total of " +
                            std::to_string(opts.maxSlots) + " chunk slots)"));
  CCSYNTH_TRY(out,
              evalIntIn(*c.outputChunks.value, 0, limit - in,
                        "'output chunks' (limited by the total of " +
                            std::to_string(opts.maxSlots) + " chunk slots)"));
  if (inPlace && in != out)
    return error(c.inPlaceLoc, "an in-place collective needs as many input "
                               "as output chunks (" +
                                   std::to_string(in) + " vs " +
                                   std::to_string(out) + ")");
  // Evaluation of input(...) and output(...) reads these.
  Collective &col = sched.collective;
  col.kind = CollectiveKind::Custom;
  col.name = c.name;
  col.numRanks = ranks;
  col.inputChunks = in;
  col.outputChunks = out;
  col.inPlace = inPlace;
  preIds.assign(ranks, std::vector<int>(in, c.hasPre ? -1 : 0));
  if (c.hasPre) {
    CCSYNTH_CHECK(execBlock(c.pre));
  }
  int next = 0;
  for (auto &row : preIds)
    for (int &id : row)
      if (id >= 0)
        id = next++;
  post.assign(ranks, std::vector<std::optional<std::vector<int>>>(out));
  postLocs.assign(ranks, std::vector<SourceLoc>(out));
  CCSYNTH_CHECK(execBlock(c.post));
  result.postLocs = postLocs;
  auto built = Collective::custom(std::string(c.name), ranks, in, out, preIds,
                                  std::move(post), inPlace);
  if (!built)
    return error(c.nameLoc, built.error().message);
  sched.collective = built.take();
  return Status::success();
}

Status Evaluator::execPreInput(const PreInputStmt &p) {
  const Collective &col = sched.collective;
  CCSYNTH_TRY(rank, evalIntIn(*p.rank, 0, col.numRanks - 1, "the rank"));
  if (col.inputChunks == 0)
    return error(beginLoc(*p.index),
                 "the input has no chunks ('input chunks = 0')");
  CCSYNTH_TRY(index, evalIntIn(*p.index, 0, col.inputChunks - 1,
                               "the input chunk index"));
  if (preIds[rank][index] >= 0)
    return error(p.loc, "input(" + std::to_string(rank) + ", " +
                            std::to_string(index) +
                            ") is listed twice in the precondition");
  preIds[rank][index] = 0;
  return Status::success();
}

Status Evaluator::execPostOutput(const PostOutputStmt &p) {
  const Collective &col = sched.collective;
  CCSYNTH_TRY(rank, evalIntIn(*p.rank, 0, col.numRanks - 1, "the rank"));
  if (col.outputChunks == 0)
    return error(beginLoc(*p.index),
                 "the output has no chunks ('output chunks = 0')");
  CCSYNTH_TRY(index, evalIntIn(*p.index, 0, col.outputChunks - 1,
                               "the output chunk index"));
  if (post[rank][index])
    return error2(p.loc,
                  "the postcondition of output(" + std::to_string(rank) + ", " +
                      std::to_string(index) + ") is given twice",
                  postLocs[rank][index], "first given here");
  CCSYNTH_TRY(value, eval(*p.value));
  auto *set = std::get_if<ValueSet>(&value);
  if (!set)
    return error(beginLoc(*p.value), "internal error: expected a value");
  auto &ids = set->ids();
  if (ids.empty())
    return error(beginLoc(*p.value),
                 "the postcondition of output(" + std::to_string(rank) + ", " +
                     std::to_string(index) +
                     ") is empty (the sum ranges over nothing)");
  postEntries += (long long)ids.size();
  if (postEntries > opts.maxSlots)
    return error(p.loc, "the postcondition has more than " +
                            std::to_string(opts.maxSlots) + " entries");
  post[rank][index] = std::move(ids);
  postLocs[rank][index] = p.loc;
  return Status::success();
}

void Evaluator::initSlots() {
  const Collective &col = sched.collective;
  int n = col.numRanks;
  bufferBase.assign((size_t)n * 3, 0);
  size_t total = 0;
  for (int r = 0; r < n; ++r)
    for (int b = 0; b < 3; ++b) {
      bufferBase[(size_t)r * 3 + b] = total;
      total += sched.bufferChunks((BufferKind)b);
    }
  slots.assign(total, SlotState{});
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < col.inputChunks; ++i)
      if (col.preAt(r, i) >= 0)
        slots[slotOf(r, BufferKind::Input, i)].defined = true;
  slotsReady = true;
}

Status Evaluator::execTransfer(const TransferStmt &t) {
  if (!slotsReady)
    initSlots();
  const std::string op = transferKeyword(t.op);
  if (isSwitchOp(t.op) && !inStep)
    return error(t.loc, std::string("'") + op +
                            "' outside a 'step { }' block: the members of "
                            "one switch operation share its step (write "
                            "them, e.g. a 'for' over the ranks, inside one "
                            "block)");
  CCSYNTH_TRY(srcVal, eval(*t.src));
  CCSYNTH_TRY(dstVal, eval(*t.dst));
  auto *src = std::get_if<ChunkVal>(&srcVal);
  auto *dst = std::get_if<ChunkVal>(&dstVal);
  if (!src || !dst)
    return error(t.loc, "internal error: transfer operands");
  if (src->count != dst->count)
    return error(beginLoc(*t.dst),
                 std::string("the source of '") + op + "' has " +
                     std::to_string(src->count) +
                     (src->count == 1 ? " chunk" : " chunks") +
                     " but the destination has " + std::to_string(dst->count) +
                     " (give both the same count)");
  Transfer tr;
  tr.op = t.op;
  tr.src = {src->rank, src->buffer, src->index};
  tr.dst = {dst->rank, dst->buffer, dst->index};
  tr.count = src->count;
  for (const TransferHint &h : t.hints) {
    CCSYNTH_TRY(v, evalIntIn(*h.value, 0, std::numeric_limits<int>::max(),
                             "the hint '" + h.name + "'"));
    (h.name == "tb" ? tr.threadblock : h.name == "ch" ? tr.channel : tr.sw) = v;
  }
  // Bound the work (slot lists, dependency updates, verification).
  chunkMoves += tr.count;
  if (chunkMoves > opts.maxChunkMoves)
    return error(t.loc, "the program's transfers move more than " +
                            std::to_string(opts.maxChunkMoves) +
                            " chunks in total");
  std::vector<size_t> srcSlots, dstSlots;
  for (int k = 0; k < tr.count; ++k) {
    srcSlots.push_back(slotOf(src->rank, src->buffer, src->index + k));
    dstSlots.push_back(slotOf(dst->rank, dst->buffer, dst->index + k));
  }
  {
    std::vector<size_t> a = srcSlots, b = dstSlots;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::vector<size_t> common;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(),
                          std::back_inserter(common));
    // A switch reduction's destination may be one of its own sources.
    bool ownContribution = t.op == TransferOp::SwitchReduce && a == b;
    if (!common.empty() && !ownContribution)
      return error(t.loc, std::string("the source and the destination of '") +
                              op + "' overlap" +
                              (tr.src.rank == tr.dst.rank &&
                                       tr.src.buffer != tr.dst.buffer
                                   ? " (the collective is in-place, so these "
                                     "buffers alias)"
                                   : ""));
  }
  const char *when = inStep ? " before this step" : " yet";
  for (int k = 0; k < tr.count; ++k) {
    if (!slots[srcSlots[k]].defined)
      return error(beginLoc(*t.src),
                   std::string("'") + op + "' reads " +
                       showChunk(src->rank, src->buffer, src->index + k) +
                       ", which holds no data" + when +
                       " (no earlier transfer writes it" +
                       (src->buffer == BufferKind::Input
                            ? " and the precondition leaves it empty)"
                            : ")"));
    if (t.op == TransferOp::Reduce && !slots[dstSlots[k]].defined)
      return error(beginLoc(*t.dst),
                   "'reduce' accumulates into " +
                       showChunk(dst->rank, dst->buffer, dst->index + k) +
                       ", which holds no data" + when +
                       " (copy a value there first)");
  }
  if ((long long)sched.transfers.size() + (long long)pending.size() >=
      opts.maxTransfers)
    return error(t.loc, "the program emits more than " +
                            std::to_string(opts.maxTransfers) + " transfers");
  if (inStep) {
    auto where = [](const Pending &p) {
      return p.iteration.empty()
                 ? std::string()
                 : " (in the iteration with " + p.iteration + ")";
    };
    size_t self = pending.size();
    // The members of one switch reduction write one destination, which a
    // member may also read (its own contribution): one operation, no race.
    auto sameReduction = [&](size_t other) {
      const Transfer &o = pending[other].transfer;
      return tr.op == TransferOp::SwitchReduce &&
             o.op == TransferOp::SwitchReduce && o.sw == tr.sw &&
             o.dst == tr.dst && o.count == tr.count;
    };
    for (int k = 0; k < tr.count; ++k) {
      auto w = blockWrites.find(dstSlots[k]);
      if (w != blockWrites.end() && !sameReduction(w->second))
        return error2(beginLoc(*t.dst),
                      "overlapping writes in one step: " +
                          showChunk(dst->rank, dst->buffer, dst->index + k) +
                          " is also written by another transfer of this "
                          "step",
                      pending[w->second].loc,
                      "the other write is here" + where(pending[w->second]));
      auto r = blockReads.find(dstSlots[k]);
      if (r != blockReads.end() && !sameReduction(r->second))
        return error2(beginLoc(*t.dst),
                      "race in one step: this writes " +
                          showChunk(dst->rank, dst->buffer, dst->index + k) +
                          ", which another transfer of this step reads",
                      pending[r->second].loc,
                      "the read is here" + where(pending[r->second]));
    }
    for (int k = 0; k < tr.count; ++k) {
      auto w = blockWrites.find(srcSlots[k]);
      if (w != blockWrites.end() && !sameReduction(w->second))
        return error2(beginLoc(*t.src),
                      "race in one step: this reads " +
                          showChunk(src->rank, src->buffer, src->index + k) +
                          ", which another transfer of this step writes "
                          "(a step sees the buffers as they were before it)",
                      pending[w->second].loc,
                      "the write is here" + where(pending[w->second]));
    }
    for (size_t s : srcSlots)
      blockReads.emplace(s, self);
    for (size_t s : dstSlots)
      blockWrites.emplace(s, self);
    pending.push_back(
        {tr, t.loc, std::move(srcSlots), std::move(dstSlots), iteration()});
    return Status::success();
  }
  int step = 0;
  for (size_t s : srcSlots)
    step = std::max(step, slots[s].lastWrite + 1);
  for (size_t s : dstSlots)
    step = std::max({step, slots[s].lastWrite + 1, slots[s].lastRead + 1});
  for (size_t s : srcSlots)
    slots[s].lastRead = std::max(slots[s].lastRead, step);
  for (size_t s : dstSlots) {
    slots[s].lastWrite = step;
    slots[s].defined = true;
  }
  tr.step = step;
  sched.transfers.push_back(tr);
  sched.transferLocs.push_back(t.loc);
  return Status::success();
}

Status Evaluator::commitStep(const SourceLoc &) {
  if (pending.empty())
    return Status::success();
  // Explicit steps run in program order: after the previous step block.
  int step = lastBlockStep + 1;
  for (const Pending &p : pending) {
    for (size_t s : p.srcSlots)
      step = std::max(step, slots[s].lastWrite + 1);
    for (size_t s : p.dstSlots)
      step = std::max({step, slots[s].lastWrite + 1, slots[s].lastRead + 1});
  }
  for (Pending &p : pending) {
    for (size_t s : p.srcSlots)
      slots[s].lastRead = std::max(slots[s].lastRead, step);
    for (size_t s : p.dstSlots) {
      slots[s].lastWrite = step;
      slots[s].defined = true;
    }
    p.transfer.step = step;
    sched.transfers.push_back(p.transfer);
    sched.transferLocs.push_back(p.loc);
  }
  lastBlockStep = step;
  pending.clear();
  blockWrites.clear();
  blockReads.clear();
  return Status::success();
}

Status Evaluator::checkDefines() {
  std::vector<const ParamStmt *> params;
  for (const StmtPtr &item : prog.items)
    if (auto *p = dynCast<ParamStmt>(item.get()))
      params.push_back(p);
  for (const auto &[name, value] : opts.defines) {
    bool found =
        std::any_of(params.begin(), params.end(),
                    [&](const ParamStmt *p) { return p->name == name; });
    if (found)
      continue;
    std::string list;
    for (const ParamStmt *p : params)
      list += (list.empty() ? "" : ", ") + p->name;
    std::string msg = "undefined parameter '" + name + "' in -D " + name + "=" +
                      std::to_string(value) + " (";
    msg += params.empty() ? "this program declares no parameters; add e.g. "
                            "'param " +
                                name + " = " + std::to_string(value) + ";')"
                          : "this program's parameters: " + list + ")";
    SourceLoc where =
        params.empty() ? SourceLoc{prog.file, 1, 1} : params.front()->loc;
    return error(where, msg);
  }
  return Status::success();
}

Expected<LoweredProgram> Evaluator::run() {
  CCSYNTH_CHECK(checkProgram(prog));
  CCSYNTH_CHECK(checkDefines());
  sched.origin = "dsl:" + prog.file;
  if (opts.name.empty()) {
    std::string stem = prog.file;
    size_t slash = stem.find_last_of('/');
    if (slash != std::string::npos)
      stem = stem.substr(slash + 1);
    if (stem.size() > 4 && stem.ends_with(".ccl"))
      stem.resize(stem.size() - 4);
    sched.name = stem;
  } else {
    sched.name = opts.name;
  }
  // The top level binds a name per parameter and let: room for all of
  // them at once, rather than a vector that doubles as it fills.
  env.reserve(topLevelNames(prog) + 16);
  size_t params = std::count_if(
      prog.items.begin(), prog.items.end(),
      [](const StmtPtr &item) { return isa<ParamStmt>(item.get()); });
  paramValues.reserve(params);
  pushScope();
  for (const StmtPtr &item : prog.items)
    CCSYNTH_CHECK(execStmt(*item));
  popScope();
  // The parameters' names and values, once the bindings are gone.
  env = {};
  size_t nameBytes = 0;
  for (const StmtPtr &item : prog.items)
    if (const auto *p = dynCast<ParamStmt>(item.get()))
      nameBytes += p->name.size();
  result.params.reserve(params, nameBytes);
  size_t k = 0;
  for (const StmtPtr &item : prog.items)
    if (const auto *p = dynCast<ParamStmt>(item.get()))
      result.params.add(p->name, paramValues[k++]);
  if (!haveCollective)
    return error(SourceLoc{prog.file, 1, 1},
                 "internal error: no collective was declared");
  return std::move(result);
}

} // namespace

SourceLoc LoweredProgram::postconditionLoc(int rank, int index) const {
  if (rank >= 0 && rank < (int)postLocs.size() && index >= 0 &&
      index < (int)postLocs[rank].size() && postLocs[rank][index].known())
    return postLocs[rank][index];
  return collectiveLoc;
}

Expected<LoweredProgram> lowerProgram(const Program &prog,
                                      const LoweringOptions &options) {
  Evaluator ev(prog, options);
  return ev.run();
}

} // namespace ccsynth::dsl
