//===- Sema.cpp - Static checks of .ccl programs --------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements checkProgram (Sema.h): the names and types of the built-in
// functions, and the Checker, which walks every statement with a scope of
// declared symbols (checkStmt, checkCollective, checkTransfer) and types
// every expression (typeOf, typeOfBinary, typeOfCall). An unknown name,
// function or keyword gets a suggestion when one is close in edit distance.
// See docs/DSL.md ("Programs", "Diagnostics").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/DSL/Sema.h"

#include "ccsynth/DSL/Diagnostics.h"

#include "Concat.h"
#include "ScopedNames.h"

#include <algorithm>
#include <string_view>

namespace ccsynth::dsl {

const char *describe(Type type) {
  switch (type) {
  case Type::Int:
    return "an int";
  case Type::Bool:
    return "a bool";
  case Type::Chunk:
    return "a chunk";
  case Type::Buffer:
    return "a buffer";
  case Type::Value:
    return "a value";
  }
  return "?";
}

const std::vector<BuiltinFunction> &builtinFunctions() {
  static const std::vector<BuiltinFunction> table = {
      {"chunk", 3, 4, "chunk(rank, buffer, index[, count])"},
      {"min", 2, 2, "min(a, b)"},
      {"max", 2, 2, "max(a, b)"},
      {"mod", 2, 2, "mod(a, b)"},
      {"pow", 2, 2, "pow(base, exponent)"},
      {"xor", 2, 2, "xor(a, b)"},
      {"log2", 1, 1, "log2(a)"},
      {"clog2", 1, 1, "clog2(a)"},
  };
  return table;
}

namespace {

/// Levenshtein distance, for "did you mean" hints.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min(
          {row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// Names longer than this get no suggestion: the distance costs the product
/// of two names' lengths, for each name in scope (a program of 20,000
/// thousand-character names took a minute to refuse one more).
constexpr size_t kMaxSuggestedName = 128;

/// " (did you mean 'x'?)" when some candidate is close to `name`.
std::string suggest(std::string_view name,
                    const std::vector<std::string_view> &candidates) {
  if (name.size() > kMaxSuggestedName)
    return "";
  std::string best;
  // Accept only edits of at most half the name, so unrelated names are not
  // suggested.
  size_t bestDist = name.size() / 2 + 1;
  for (std::string_view c : candidates) {
    // The lengths' difference is a lower bound of the distance.
    size_t gap = c.size() > name.size() ? c.size() - name.size()
                                        : name.size() - c.size();
    if (gap >= bestDist)
      continue;
    size_t d = editDistance(name, c);
    if (d < bestDist) {
      best = c;
      bestDist = d;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

/// Where a statement is being checked.
enum class Section { Schedule, Pre, Post };

struct Symbol {
  Type type;
  /// Where the name is declared (in the syntax tree).
  const SourceLoc *loc;
};

class Checker {
public:
  explicit Checker(const Program &p) : prog(p) {}
  Status run();

private:
  const Program &prog;
  ScopedNames<Symbol> scopes;
  Section section = Section::Schedule;
  int depth = 0; ///< 0 = top level
  bool inStep = false;
  const CollectiveStmt *collective = nullptr;
  const ScratchStmt *scratch = nullptr;
  /// First chunk() seen at the top level (scratch must come before it).
  std::optional<SourceLoc> firstChunk;

  Error error(const SourceLoc &loc, std::string msg) const {
    return errorAt(prog.text, loc, std::move(msg));
  }

  const Symbol *lookup(std::string_view name) const {
    return scopes.find(name);
  }
  /// Every name in scope, outermost scope first, each scope's in
  /// alphabetical order (the order of suggestions among equals).
  std::vector<std::string_view> visibleNames() const {
    std::vector<std::string_view> names;
    for (size_t k = 0; k < scopes.scopes(); ++k) {
      size_t first = names.size();
      scopes.forEachIn(k, [&](std::string_view name, const Symbol &) {
        names.push_back(name);
      });
      std::sort(names.begin() + first, names.end());
    }
    return names;
  }

  Status declare(std::string_view name, const SourceLoc &loc, Type type);

  Status checkBlock(const Block &block);
  Status checkStmt(const Stmt &stmt);
  Status checkCollective(const CollectiveStmt &c);
  Status checkTransfer(const TransferStmt &t);
  Status checkRange(const Range &r);
  Status expectType(const Expr &e, Type want, const std::string &what);
  Expected<Type> typeOf(const Expr &e);
  Expected<Type> typeOfCall(const CallExpr &call);
  Expected<Type> typeOfBinary(const BinaryExpr &b);
};

#define CCSYNTH_CHECK(expr)                                                    \
  do {                                                                         \
    if (Status s_ = (expr); !s_)                                               \
      return s_.error();                                                       \
  } while (false)

Status Checker::declare(std::string_view name, const SourceLoc &loc,
                        Type type) {
  for (const BuiltinFunction &f : builtinFunctions())
    if (name == f.name)
      return error(loc, "'" + name +
                            "' is a built-in function and cannot be "
                            "redefined");
  if (const Symbol *first = scopes.findInScope(name))
    return errorAt(prog.text, loc, "redefinition of '" + name + "'",
                   *first->loc, "'" + name + "' was first defined here");
  scopes.bind(name, Symbol{type, &loc});
  return Status::success();
}

Status Checker::run() {
  // The top level declares a name per parameter and let: room for all of
  // them at once, rather than a table that doubles as it fills.
  scopes.reserve(topLevelNames(prog) + 16);
  scopes.enter();
  for (const StmtPtr &item : prog.items)
    CCSYNTH_CHECK(checkStmt(*item));
  if (!collective) {
    SourceLoc loc{prog.file, 1, 1};
    return error(loc, "the program declares no collective (add e.g. "
                      "'collective allreduce(ranks = 8);')");
  }
  return Status::success();
}

Status Checker::checkBlock(const Block &block) {
  scopes.enter();
  ++depth;
  for (const StmtPtr &stmt : block)
    CCSYNTH_CHECK(checkStmt(*stmt));
  --depth;
  scopes.leave();
  return Status::success();
}

Status Checker::checkRange(const Range &r) {
  CCSYNTH_CHECK(expectType(*r.lo, Type::Int, "the start of a range"));
  CCSYNTH_CHECK(expectType(*r.hi, Type::Int, "the end of a range"));
  if (r.by)
    CCSYNTH_CHECK(expectType(*r.by, Type::Int, "the step of a range ('by')"));
  return Status::success();
}

Status Checker::checkStmt(const Stmt &stmt) {
  switch (stmt.getKind()) {
  case Stmt::Kind::Param: {
    const auto &p = *cast<ParamStmt>(&stmt);
    if (depth > 0 || section != Section::Schedule)
      return error(p.loc, "'param' is only allowed at the top level");
    CCSYNTH_CHECK(expectType(*p.init, Type::Int, "a parameter's default"));
    return declare(p.name, p.nameLoc, Type::Int);
  }
  case Stmt::Kind::Collective:
    return checkCollective(*cast<CollectiveStmt>(&stmt));
  case Stmt::Kind::Scratch: {
    const auto &s = *cast<ScratchStmt>(&stmt);
    if (depth > 0 || section != Section::Schedule)
      return error(s.loc, "'scratch' is only allowed at the top level");
    if (scratch)
      return errorAt(prog.text, s.loc, "the scratch size is declared twice",
                     scratch->loc, "first declared here");
    if (!collective)
      return error(s.loc, "'scratch' must come after the collective "
                          "declaration");
    if (firstChunk)
      return errorAt(prog.text, s.loc,
                     "'scratch' must come before the first chunk reference",
                     *firstChunk, "the first chunk reference");
    scratch = &s;
    return expectType(*s.chunks, Type::Int, "the scratch size");
  }
  case Stmt::Kind::Let: {
    const auto &l = *cast<LetStmt>(&stmt);
    auto type = typeOf(*l.init);
    if (!type)
      return type.error();
    return declare(l.name, l.nameLoc, *type);
  }
  case Stmt::Kind::For: {
    const auto &f = *cast<ForStmt>(&stmt);
    CCSYNTH_CHECK(checkRange(f.range));
    scopes.enter();
    CCSYNTH_CHECK(declare(f.var, f.varLoc, Type::Int));
    CCSYNTH_CHECK(checkBlock(f.body));
    scopes.leave();
    return Status::success();
  }
  case Stmt::Kind::If: {
    const auto &i = *cast<IfStmt>(&stmt);
    CCSYNTH_CHECK(expectType(*i.cond, Type::Bool, "an 'if' condition"));
    CCSYNTH_CHECK(checkBlock(i.thenBody));
    return checkBlock(i.elseBody);
  }
  case Stmt::Kind::Step: {
    const auto &s = *cast<StepStmt>(&stmt);
    if (section != Section::Schedule)
      return error(s.loc, "'step' blocks belong to the schedule, not to a "
                          "collective's conditions");
    if (inStep)
      return error(s.loc, "'step' blocks cannot be nested");
    inStep = true;
    CCSYNTH_CHECK(checkBlock(s.body));
    inStep = false;
    return Status::success();
  }
  case Stmt::Kind::Assert: {
    const auto &a = *cast<AssertStmt>(&stmt);
    return expectType(*a.cond, Type::Bool, "an assertion");
  }
  case Stmt::Kind::Transfer:
    return checkTransfer(*cast<TransferStmt>(&stmt));
  case Stmt::Kind::PreInput: {
    const auto &p = *cast<PreInputStmt>(&stmt);
    if (section != Section::Pre)
      return error(p.loc, "'input(rank, index);' declares a precondition and "
                          "is only allowed in a custom collective's 'pre' "
                          "block");
    CCSYNTH_CHECK(expectType(*p.rank, Type::Int, "the rank of input(...)"));
    return expectType(*p.index, Type::Int, "the index of input(...)");
  }
  case Stmt::Kind::PostOutput: {
    const auto &p = *cast<PostOutputStmt>(&stmt);
    if (section != Section::Post)
      return error(p.loc, "'output(rank, index) = ...;' declares a "
                          "postcondition and is only allowed in a custom "
                          "collective's 'post' block");
    CCSYNTH_CHECK(expectType(*p.rank, Type::Int, "the rank of output(...)"));
    CCSYNTH_CHECK(expectType(*p.index, Type::Int, "the index of output(...)"));
    return expectType(*p.value, Type::Value,
                      "a postcondition (e.g. 'input(j, 0)' or 'sum(j in "
                      "0..ranks : input(j, 0))')");
  }
  }
  return Status::success();
}

Status Checker::checkCollective(const CollectiveStmt &c) {
  if (depth > 0 || section != Section::Schedule)
    return error(c.loc, "'collective' is only allowed at the top level");
  if (collective)
    return errorAt(prog.text, c.loc,
                   "the program declares a second "
                   "collective",
                   collective->loc, "the first one is declared here");
  auto kind = parseCollectiveKind(std::string(c.name));
  std::vector<std::string> allowed = {"ranks"};
  if (c.custom) {
    if (kind)
      return error(c.nameLoc,
                   "'" + c.name +
                       "' is a built-in collective; give a custom "
                       "collective another name (or drop the '{ ... }' body)");
  } else {
    if (!kind)
      return error(c.nameLoc,
                   "unknown collective '" + c.name +
                       "' (built-in: " + collectiveKindNames() +
                       "; a custom collective needs a '{ ... }' body with "
                       "its pre/postconditions)");
    allowed.push_back("chunks");
    if (*kind == CollectiveKind::Broadcast || *kind == CollectiveKind::Reduce ||
        *kind == CollectiveKind::Gather || *kind == CollectiveKind::Scatter)
      allowed.push_back("root");
  }
  bool hasRanks = false;
  for (const NamedArg &a : c.args) {
    if (std::find(allowed.begin(), allowed.end(), a.name) == allowed.end()) {
      std::string list;
      for (const std::string &s : allowed)
        list += (list.empty() ? "" : ", ") + s;
      std::string hint;
      if (a.name == "root")
        hint = "; only broadcast, reduce, gather and scatter have a root";
      else if (a.name == "chunks" && c.custom)
        hint = "; a custom collective sets 'input chunks' and 'output "
               "chunks' in its body";
      return error(a.loc, "unknown argument '" + a.name + "' of '" + c.name +
                              "' (expected " + list + hint + ")");
    }
    hasRanks |= a.name == "ranks";
    CCSYNTH_CHECK(
        expectType(*a.value, Type::Int, "the collective's '" + a.name + "'"));
  }
  if (!hasRanks)
    return error(c.nameLoc, "the collective needs 'ranks = ...' (e.g. "
                            "'collective " +
                                c.name + "(ranks = 8)')");
  if (!c.protocol.empty() && c.protocol != "Simple" && c.protocol != "LL" &&
      c.protocol != "LL128")
    return error(c.protocolLoc,
                 "unknown protocol '" + c.protocol +
                     "' (expected Simple, LL or LL128)" +
                     suggest(c.protocol, {"Simple", "LL", "LL128"}));
  if (c.instances)
    CCSYNTH_CHECK(expectType(*c.instances, Type::Int, "'instances'"));
  if (c.custom) {
    if (!c.inputChunks.value)
      return error(c.nameLoc, "custom collective '" + c.name +
                                  "' needs 'input chunks = ...;' in its body");
    if (!c.outputChunks.value)
      return error(c.nameLoc, "custom collective '" + c.name +
                                  "' needs 'output chunks = ...;' in its "
                                  "body");
    if (!c.hasPost)
      return error(c.nameLoc, "custom collective '" + c.name +
                                  "' needs a 'post { ... }' block saying "
                                  "what each output chunk must hold");
    CCSYNTH_CHECK(
        expectType(*c.inputChunks.value, Type::Int, "'input chunks'"));
    CCSYNTH_CHECK(
        expectType(*c.outputChunks.value, Type::Int, "'output chunks'"));
    if (c.hasPre) {
      section = Section::Pre;
      CCSYNTH_CHECK(checkBlock(c.pre));
    }
    section = Section::Post;
    CCSYNTH_CHECK(checkBlock(c.post));
    section = Section::Schedule;
  }
  collective = &c;
  return Status::success();
}

Status Checker::checkTransfer(const TransferStmt &t) {
  const std::string op = transferKeyword(t.op);
  if (section != Section::Schedule)
    return error(t.loc, std::string("'") + op +
                            "' is a schedule statement; a collective's "
                            "conditions cannot move data");
  if (!collective)
    return error(t.loc, std::string("'") + op +
                            "' before the collective declaration (declare "
                            "e.g. 'collective allreduce(ranks = 8);' first)");
  CCSYNTH_CHECK(expectType(*t.src, Type::Chunk,
                           std::string("the source of '") + op + "'"));
  CCSYNTH_CHECK(expectType(*t.dst, Type::Chunk,
                           std::string("the destination of '") + op + "'"));
  bool throughSwitch = isSwitchOp(t.op), namesSwitch = false;
  for (const TransferHint &h : t.hints) {
    if (h.name != "tb" && h.name != "ch" && h.name != "switch")
      return error(h.loc, "unknown hint '" + h.name +
                              "' (expected tb = threadblock, ch = channel" +
                              (throughSwitch ? " or switch = the switch" : "") +
                              ")" + suggest(h.name, {"tb", "ch", "switch"}));
    if (h.name == "switch" && !throughSwitch)
      return error(h.loc, std::string("'") + op +
                              "' goes point to point: 'switch' names the "
                              "switch of a switch_reduce or multicast");
    namesSwitch |= h.name == "switch";
    CCSYNTH_CHECK(expectType(*h.value, Type::Int, "the hint '" + h.name + "'"));
  }
  if (throughSwitch && !namesSwitch)
    return error(t.loc, std::string("'") + op +
                            "' needs the switch it goes through: add "
                            "', switch = N' (N indexes the topology's "
                            "switches, as `ccsynth topo show` lists them)");
  return Status::success();
}

Status Checker::expectType(const Expr &e, Type want, const std::string &what) {
  auto type = typeOf(e);
  if (!type)
    return type.error();
  if (*type == want)
    return Status::success();
  std::string msg = "type error: " + what + " must be " + describe(want) +
                    ", but this is " + describe(*type);
  if (*type == Type::Chunk && want == Type::Int)
    msg += " (a chunk is not a number)";
  if (*type == Type::Int && want == Type::Bool)
    msg += " (compare it, e.g. 'x != 0')";
  if (want == Type::Value && *type == Type::Chunk)
    msg += " (a postcondition names input values, e.g. 'input(j, 0)', not "
           "chunks)";
  return error(beginLoc(e), msg);
}

Expected<Type> Checker::typeOf(const Expr &e) {
  switch (e.getKind()) {
  case Expr::Kind::IntLiteral:
    return Type::Int;
  case Expr::Kind::BoolLiteral:
    return Type::Bool;
  case Expr::Kind::Name: {
    const auto &n = *cast<NameExpr>(&e);
    if (const Symbol *s = lookup(n.name))
      return s->type;
    for (const BuiltinFunction &f : builtinFunctions())
      if (n.name == f.name)
        return error(n.loc, "'" + n.name + "' is a function; call it as " +
                                f.signature);
    return error(n.loc, "unknown name '" + n.name + "'" +
                            suggest(n.name, visibleNames()));
  }
  case Expr::Kind::Unary: {
    const auto &u = *cast<UnaryExpr>(&e);
    Type want = u.op == UnaryOp::Neg ? Type::Int : Type::Bool;
    CCSYNTH_CHECK(
        expectType(*u.operand, want,
                   std::string("the operand of '") + spelling(u.op) + "'"));
    return want;
  }
  case Expr::Kind::Binary:
    return typeOfBinary(*cast<BinaryExpr>(&e));
  case Expr::Kind::Call:
    return typeOfCall(*cast<CallExpr>(&e));
  case Expr::Kind::BufferName:
    return Type::Buffer;
  case Expr::Kind::InputValue: {
    const auto &v = *cast<InputValueExpr>(&e);
    if (section != Section::Post)
      return error(v.loc, "'input(rank, index)' names a value of the "
                          "precondition and is only allowed in a 'post' "
                          "block; to name a chunk write 'chunk(r, input, i)'");
    CCSYNTH_CHECK(expectType(*v.rank, Type::Int, "the rank of input(...)"));
    CCSYNTH_CHECK(expectType(*v.index, Type::Int, "the index of input(...)"));
    return Type::Value;
  }
  case Expr::Kind::Sum: {
    const auto &s = *cast<SumExpr>(&e);
    if (section != Section::Post)
      return error(s.loc, "'sum(...)' is only allowed in a 'post' block");
    CCSYNTH_CHECK(checkRange(s.range));
    scopes.enter();
    CCSYNTH_CHECK(declare(s.var, s.varLoc, Type::Int));
    CCSYNTH_CHECK(expectType(*s.body, Type::Value, "the body of 'sum'"));
    scopes.leave();
    return Type::Value;
  }
  }
  return Type::Int;
}

Expected<Type> Checker::typeOfBinary(const BinaryExpr &b) {
  auto lt = typeOf(*b.lhs);
  if (!lt)
    return lt.error();
  auto rt = typeOf(*b.rhs);
  if (!rt)
    return rt.error();
  std::string op = std::string("'") + spelling(b.op) + "'";
  auto mismatch = [&](const std::string &needs) -> Error {
    return error(b.loc, "type error: " + op + " needs " + needs + ", but got " +
                            describe(*lt) + " and " + describe(*rt));
  };
  switch (b.op) {
  case BinaryOp::Add:
    if (*lt == Type::Int && *rt == Type::Int)
      return Type::Int;
    if (*lt == Type::Value && *rt == Type::Value)
      return Type::Value;
    return mismatch(section == Section::Post ? "two ints or two values"
                                             : "two ints");
  case BinaryOp::Sub:
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Mod:
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
    if (*lt != Type::Int || *rt != Type::Int)
      return mismatch("two ints");
    return b.op == BinaryOp::Sub || b.op == BinaryOp::Mul ||
                   b.op == BinaryOp::Div || b.op == BinaryOp::Mod
               ? Type::Int
               : Type::Bool;
  case BinaryOp::Eq:
  case BinaryOp::Ne:
    if (*lt != *rt || (*lt != Type::Int && *lt != Type::Bool))
      return mismatch("two ints or two bools");
    return Type::Bool;
  case BinaryOp::And:
  case BinaryOp::Or:
    if (*lt != Type::Bool || *rt != Type::Bool)
      return mismatch("two bools");
    return Type::Bool;
  }
  return Type::Int;
}

Expected<Type> Checker::typeOfCall(const CallExpr &call) {
  const BuiltinFunction *fn = nullptr;
  std::vector<std::string_view> names;
  for (const BuiltinFunction &f : builtinFunctions()) {
    names.push_back(f.name);
    if (call.callee == f.name)
      fn = &f;
  }
  if (!fn) {
    std::string hint;
    if (call.callee == "copy" || call.callee == "reduce")
      hint = " ('" + call.callee + "' is a statement, not a value)";
    else if (lookup(call.callee))
      hint = " ('" + call.callee + "' is a variable, not a function)";
    else
      hint = suggest(call.callee, names);
    return error(call.loc, "unknown function '" + call.callee + "'" + hint);
  }
  int n = (int)call.args.size();
  if (n < fn->minArgs || n > fn->maxArgs)
    return error(
        call.loc,
        "wrong number of arguments: " + std::string(fn->signature) + " takes " +
            (fn->minArgs == fn->maxArgs ? std::to_string(fn->minArgs)
                                        : std::to_string(fn->minArgs) + " or " +
                                              std::to_string(fn->maxArgs)) +
            (fn->maxArgs == 1 ? " argument" : " arguments") + ", but " +
            std::to_string(n) + (n == 1 ? " was" : " were") + " given");
  if (call.callee == "chunk") {
    if (section != Section::Schedule)
      return error(call.loc,
                   "chunk references are not allowed in a collective's "
                   "conditions (use 'input(rank, index)' for a value)");
    if (!collective)
      return error(call.loc, "chunk reference before the collective "
                             "declaration");
    if (!firstChunk)
      firstChunk = call.loc;
    CCSYNTH_CHECK(expectType(*call.args[0], Type::Int,
                             "argument 1 (the rank) of chunk(...)"));
    if (!isa<BufferNameExpr>(call.args[1].get())) {
      auto t = typeOf(*call.args[1]);
      if (!t)
        return t.error();
      if (*t != Type::Buffer)
        return error(beginLoc(*call.args[1]),
                     "type error: argument 2 of chunk(...) must be a buffer "
                     "(input, output or scratch), but this is " +
                         std::string(describe(*t)));
    }
    CCSYNTH_CHECK(expectType(*call.args[2], Type::Int,
                             "argument 3 (the index) of chunk(...)"));
    if (n == 4)
      CCSYNTH_CHECK(expectType(*call.args[3], Type::Int,
                               "argument 4 (the count) of chunk(...)"));
    return Type::Chunk;
  }
  for (int i = 0; i < n; ++i)
    CCSYNTH_CHECK(expectType(*call.args[i], Type::Int,
                             "argument " + std::to_string(i + 1) + " of " +
                                 call.callee + "(...)"));
  return Type::Int;
}

} // namespace

Status checkProgram(const Program &prog) { return Checker(prog).run(); }

} // namespace ccsynth::dsl
