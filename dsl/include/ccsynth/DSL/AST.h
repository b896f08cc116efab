//===- AST.h - Syntax tree of .ccl collective programs --------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The parser builds this tree; Sema checks names, types and statement
// contexts on it; Lowering evaluates it into a chunk-level Schedule. Every
// node carries the SourceLoc of its first token so that each later stage can
// point at the offending text.
//
// Nodes use a kind tag and `isa`/`cast`/`dynCast` helpers in the LLVM style
// (no RTTI needed), and own their children through std::unique_ptr. Their
// memory comes from the program's NodeArena: one large block after another,
// with no allocation header or size rounding per node (a program may hold
// millions of them), released with the program. The parser bounds the
// tree's height, so recursive walks cannot overflow the stack.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Schedule/Schedule.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ccsynth::dsl {

/// Ends a node's life without freeing its memory (its arena does that).
struct NodeDelete {
  template <typename T> void operator()(T *node) const { node->~T(); }
};

template <typename T> using NodePtr = std::unique_ptr<T, NodeDelete>;

/// The memory of one program's nodes, handed out in order from blocks of
/// kBlockBytes and freed all at once when the arena goes. The owners of the
/// nodes (NodePtr) must be gone first: a Program declares its arena before
/// the statements that hold them.
class NodeArena {
public:
  static constexpr size_t kBlockBytes = 64 * 1024;

  NodeArena() = default;
  NodeArena(NodeArena &&o) noexcept
      : blocks(std::move(o.blocks)), next(std::exchange(o.next, nullptr)),
        left(std::exchange(o.left, 0)) {}
  NodeArena &operator=(NodeArena &&o) noexcept {
    blocks = std::move(o.blocks);
    next = std::exchange(o.next, nullptr);
    left = std::exchange(o.left, 0);
    return *this;
  }

  template <typename T, typename... Args> NodePtr<T> make(Args &&...args) {
    void *at = allocate(sizeof(T), alignof(T));
    return NodePtr<T>(new (at) T(std::forward<Args>(args)...));
  }

private:
  void *allocate(size_t size, size_t align) {
    size_t pad = (align - reinterpret_cast<uintptr_t>(next) % align) % align;
    if (pad + size > left) {
      size_t bytes = std::max(kBlockBytes, size + align);
      blocks.emplace_back(new std::byte[bytes]);
      next = blocks.back().get();
      left = bytes;
      pad = (align - reinterpret_cast<uintptr_t>(next) % align) % align;
    }
    std::byte *at = next + pad;
    next = at + size;
    left -= pad + size;
    return at;
  }

  std::vector<std::unique_ptr<std::byte[]>> blocks;
  std::byte *next = nullptr;
  size_t left = 0;
};

/// LLVM-style checked casts over nodes with a static `classof`.
template <typename To, typename From> bool isa(const From *node) {
  return node && To::classof(node);
}
template <typename To, typename From> To *cast(From *node) {
  assert(isa<To>(node) && "cast to the wrong node kind");
  return static_cast<To *>(node);
}
template <typename To, typename From> const To *cast(const From *node) {
  assert(isa<To>(node) && "cast to the wrong node kind");
  return static_cast<const To *>(node);
}
template <typename To, typename From> To *dynCast(From *node) {
  return isa<To>(node) ? static_cast<To *>(node) : nullptr;
}
template <typename To, typename From> const To *dynCast(const From *node) {
  return isa<To>(node) ? static_cast<const To *>(node) : nullptr;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class Expr {
public:
  enum class Kind {
    IntLiteral,
    BoolLiteral,
    Name,
    Unary,
    Binary,
    Call,
    BufferName,
    InputValue,
    Sum,
  };

  virtual ~Expr() = default;
  Kind getKind() const { return kind; }
  /// Location of the expression's first token (for a binary expression:
  /// its operator, which is where a type or arithmetic error belongs).
  SourceLoc loc;
  /// Height of the subtree (a leaf is 1); the parser rejects tall trees.
  int height = 1;

protected:
  Expr(Kind k, SourceLoc l) : loc(std::move(l)), kind(k) {}

private:
  Kind kind;
};

using ExprPtr = NodePtr<Expr>;

/// `42`
class IntLiteral : public Expr {
public:
  IntLiteral(SourceLoc l, long long v) : Expr(Kind::IntLiteral, l), value(v) {}
  long long value;
  static bool classof(const Expr *e) {
    return e->getKind() == Kind::IntLiteral;
  }
};

/// `true` / `false`
class BoolLiteral : public Expr {
public:
  BoolLiteral(SourceLoc l, bool v) : Expr(Kind::BoolLiteral, l), value(v) {}
  bool value;
  static bool classof(const Expr *e) {
    return e->getKind() == Kind::BoolLiteral;
  }
};

/// A reference to a parameter, `let` binding or loop variable.
class NameExpr : public Expr {
public:
  NameExpr(SourceLoc l, std::string_view n) : Expr(Kind::Name, l), name(n) {}
  std::string_view name;
  static bool classof(const Expr *e) { return e->getKind() == Kind::Name; }
};

enum class UnaryOp { Neg, Not };
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or
};
const char *spelling(UnaryOp op);
const char *spelling(BinaryOp op);

class UnaryExpr : public Expr {
public:
  UnaryExpr(SourceLoc l, UnaryOp o, ExprPtr e)
      : Expr(Kind::Unary, l), op(o), operand(std::move(e)) {
    height = operand->height + 1;
  }
  UnaryOp op;
  ExprPtr operand;
  static bool classof(const Expr *e) { return e->getKind() == Kind::Unary; }
};

class BinaryExpr : public Expr {
public:
  BinaryExpr(SourceLoc opLoc, BinaryOp o, ExprPtr l, ExprPtr r)
      : Expr(Kind::Binary, opLoc), op(o), lhs(std::move(l)), rhs(std::move(r)) {
    height = std::max(lhs->height, rhs->height) + 1;
  }
  BinaryOp op;
  ExprPtr lhs, rhs;
  static bool classof(const Expr *e) { return e->getKind() == Kind::Binary; }
};

/// A call of a built-in function: `chunk(r, input, i)`, `min(a, b)`, ...
class CallExpr : public Expr {
public:
  CallExpr(SourceLoc l, std::string_view c, std::vector<ExprPtr> a)
      : Expr(Kind::Call, l), callee(c), args(std::move(a)) {
    for (const ExprPtr &arg : args)
      height = std::max(height, arg->height + 1);
  }
  std::string_view callee;
  std::vector<ExprPtr> args;
  static bool classof(const Expr *e) { return e->getKind() == Kind::Call; }
};

/// `input`, `output` or `scratch` used as chunk()'s buffer argument.
class BufferNameExpr : public Expr {
public:
  BufferNameExpr(SourceLoc l, BufferKind b)
      : Expr(Kind::BufferName, l), buffer(b) {}
  BufferKind buffer;
  static bool classof(const Expr *e) {
    return e->getKind() == Kind::BufferName;
  }
};

/// `input(rank, index)` in a postcondition: the value that input chunk
/// `index` of `rank` held before the collective ran.
class InputValueExpr : public Expr {
public:
  InputValueExpr(SourceLoc l, ExprPtr r, ExprPtr i)
      : Expr(Kind::InputValue, l), rank(std::move(r)), index(std::move(i)) {
    height = std::max(rank->height, index->height) + 1;
  }
  ExprPtr rank, index;
  static bool classof(const Expr *e) {
    return e->getKind() == Kind::InputValue;
  }
};

/// `lo..hi [by step]`: the half-open integer range lo, lo+step, ... < hi.
struct Range {
  SourceLoc loc;
  ExprPtr lo, hi;
  /// Null when no `by` clause (step 1).
  ExprPtr by;
  int height() const {
    int h = std::max(lo->height, hi->height);
    return by ? std::max(h, by->height) : h;
  }
};

/// `sum(j in lo..hi : term)`: the reduction of the terms over the range.
class SumExpr : public Expr {
public:
  SumExpr(SourceLoc l, std::string_view v, SourceLoc vl, Range r, ExprPtr b)
      : Expr(Kind::Sum, l), var(v), varLoc(std::move(vl)), range(std::move(r)),
        body(std::move(b)) {
    height = std::max(range.height(), body->height) + 1;
  }
  std::string_view var;
  SourceLoc varLoc;
  Range range;
  ExprPtr body;
  static bool classof(const Expr *e) { return e->getKind() == Kind::Sum; }
};

/// Where the text of `e` starts: its leftmost token (a binary expression's
/// own location is its operator). Errors about an expression's value point
/// here; errors about an operator point at the operator.
inline const SourceLoc &beginLoc(const Expr &e) {
  const Expr *cur = &e;
  while (const auto *b = dynCast<BinaryExpr>(cur))
    cur = b->lhs.get();
  return cur->loc;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

class Stmt {
public:
  enum class Kind {
    Param,
    Collective,
    Scratch,
    Let,
    For,
    If,
    Step,
    Assert,
    Transfer,
    PreInput,
    PostOutput,
  };

  virtual ~Stmt() = default;
  Kind getKind() const { return kind; }
  /// Location of the statement's first token (its keyword).
  SourceLoc loc;

protected:
  Stmt(Kind k, SourceLoc l) : loc(std::move(l)), kind(k) {}

private:
  Kind kind;
};

using StmtPtr = NodePtr<Stmt>;
using Block = std::vector<StmtPtr>;

/// `param name = default;` — an integer the command line may override.
class ParamStmt : public Stmt {
public:
  ParamStmt(SourceLoc l) : Stmt(Kind::Param, l) {}
  std::string_view name;
  SourceLoc nameLoc;
  ExprPtr init;
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Param; }
};

/// `name = expr` inside a collective header.
struct NamedArg {
  std::string_view name;
  SourceLoc loc;
  ExprPtr value;
};

/// `input chunks = E;` / `output chunks = E;` inside a custom collective.
struct ChunkCountDecl {
  SourceLoc loc;
  ExprPtr value;
};

/// `collective kind(args) [inplace] [protocol P] [instances E] (; | {...})`.
class CollectiveStmt : public Stmt {
public:
  CollectiveStmt(SourceLoc l) : Stmt(Kind::Collective, l) {}
  std::string_view name;
  SourceLoc nameLoc;
  std::vector<NamedArg> args;
  bool inPlace = false;
  SourceLoc inPlaceLoc;
  std::string protocol; ///< empty = not given
  SourceLoc protocolLoc;
  ExprPtr instances; ///< null = not given
  /// True when a `{ ... }` body makes this a custom collective.
  bool custom = false;
  ChunkCountDecl inputChunks;  ///< value null = not given
  ChunkCountDecl outputChunks; ///< value null = not given
  bool hasPre = false;
  SourceLoc preLoc;
  Block pre;
  bool hasPost = false;
  SourceLoc postLoc;
  Block post;
  static bool classof(const Stmt *s) {
    return s->getKind() == Kind::Collective;
  }
};

/// `scratch chunks = E;`
class ScratchStmt : public Stmt {
public:
  ScratchStmt(SourceLoc l) : Stmt(Kind::Scratch, l) {}
  ExprPtr chunks;
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Scratch; }
};

/// `let name = expr;`
class LetStmt : public Stmt {
public:
  LetStmt(SourceLoc l) : Stmt(Kind::Let, l) {}
  std::string_view name;
  SourceLoc nameLoc;
  ExprPtr init;
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Let; }
};

/// `for var in lo..hi [by s] { body }`
class ForStmt : public Stmt {
public:
  ForStmt(SourceLoc l) : Stmt(Kind::For, l) {}
  std::string_view var;
  SourceLoc varLoc;
  Range range;
  Block body;
  static bool classof(const Stmt *s) { return s->getKind() == Kind::For; }
};

/// `if cond { then } [else { otherwise } | else if ...]`
class IfStmt : public Stmt {
public:
  IfStmt(SourceLoc l) : Stmt(Kind::If, l) {}
  ExprPtr cond;
  Block thenBody;
  /// `else if` is an else body holding one IfStmt.
  Block elseBody;
  static bool classof(const Stmt *s) { return s->getKind() == Kind::If; }
};

/// `step { body }`: every transfer of the body runs in one step and sees the
/// buffers as they were before the step.
class StepStmt : public Stmt {
public:
  StepStmt(SourceLoc l) : Stmt(Kind::Step, l) {}
  Block body;
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Step; }
};

/// `assert(cond[, "message"]);`
class AssertStmt : public Stmt {
public:
  AssertStmt(SourceLoc l) : Stmt(Kind::Assert, l) {}
  ExprPtr cond;
  std::string message; ///< empty = none given
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Assert; }
};

/// A `tb = N` / `ch = N` lowering hint of a transfer, or the `switch = N`
/// a switch_reduce or multicast goes through.
struct TransferHint {
  std::string_view name;
  SourceLoc loc;
  ExprPtr value;
};

/// `copy(src -> dst[, hints]);`, `reduce(...)`, or one member of a switch
/// operation: `switch_reduce(src -> dst, switch = N)` (one contribution),
/// `multicast(src -> dst, switch = N)` (one destination).
/// The statement's keyword for `op`: copy, reduce, switch_reduce or
/// multicast (the schedule's names, with '_' for '-').
inline std::string transferKeyword(TransferOp op) {
  std::string k = toString(op);
  std::replace(k.begin(), k.end(), '-', '_');
  return k;
}

class TransferStmt : public Stmt {
public:
  TransferStmt(SourceLoc l) : Stmt(Kind::Transfer, l) {}
  TransferOp op = TransferOp::Copy;
  ExprPtr src, dst;
  std::vector<TransferHint> hints;
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Transfer; }
};

/// `input(rank, index);` in a `pre` block: that input chunk holds data.
class PreInputStmt : public Stmt {
public:
  PreInputStmt(SourceLoc l) : Stmt(Kind::PreInput, l) {}
  ExprPtr rank, index;
  static bool classof(const Stmt *s) { return s->getKind() == Kind::PreInput; }
};

/// `output(rank, index) = value;` in a `post` block.
class PostOutputStmt : public Stmt {
public:
  PostOutputStmt(SourceLoc l) : Stmt(Kind::PostOutput, l) {}
  ExprPtr rank, index, value;
  static bool classof(const Stmt *s) {
    return s->getKind() == Kind::PostOutput;
  }
};

/// A parsed .ccl file: its top-level statements, the memory of their nodes,
/// and its text (kept so that later stages can print caret lines). The
/// tree's names are views of the text, which parseProgram keeps on the heap
/// so that moving a Program moves the text without moving its characters;
/// a Program is not copied.
struct Program {
  Program() = default;
  Program(Program &&) = default;
  Program &operator=(Program &&) = default;
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;

  std::string file;
  std::string text;
  /// Declared before `items`, so that the nodes end before their memory.
  NodeArena arena;
  Block items;
};

/// The names the top level of `prog` binds: one per `param` and `let` (the
/// checker and the evaluator make room for them at once).
inline size_t topLevelNames(const Program &prog) {
  size_t n = 0;
  for (const StmtPtr &item : prog.items)
    n += isa<ParamStmt>(item.get()) || isa<LetStmt>(item.get());
  return n;
}

} // namespace ccsynth::dsl
