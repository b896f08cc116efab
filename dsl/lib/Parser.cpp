//===- Parser.cpp - Recursive-descent parser of .ccl programs -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements parseProgram (Parser.h): a recursive-descent Parser over the
// Lexer's tokens, one function per rule of docs/DSL.md's grammar. The
// statements come first (parameters, the collective and its custom pre
// and post body, scratch, let, for, if, step, assert, transfers), then
// the expressions by precedence, from parseOr down to parsePrimary. Nesting
// and expression height are bounded (kMaxNesting, kMaxExprHeight).
// See docs/DSL.md ("Grammar").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/DSL/Parser.h"

#include "ccsynth/DSL/Diagnostics.h"
#include "ccsynth/DSL/Lexer.h"

#include "Concat.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <optional>

namespace ccsynth::dsl {

const char *spelling(UnaryOp op) { return op == UnaryOp::Neg ? "-" : "!"; }

const char *spelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::Mod:
    return "%";
  case BinaryOp::Lt:
    return "<";
  case BinaryOp::Le:
    return "<=";
  case BinaryOp::Gt:
    return ">";
  case BinaryOp::Ge:
    return ">=";
  case BinaryOp::Eq:
    return "==";
  case BinaryOp::Ne:
    return "!=";
  case BinaryOp::And:
    return "&&";
  case BinaryOp::Or:
    return "||";
  }
  return "?";
}

namespace {

class Parser {
public:
  Parser(const Program &p, NodeArena &a)
      : prog(p), arena(a), lexer(p.file, p.text) {}

  Expected<Block> parseTopLevel();
  /// The error that stopped the lexer, if it did: it comes first in the
  /// text, before any syntax error it caused.
  const std::optional<Error> &lexError() const { return lexFailure; }

private:
  const Program &prog;
  NodeArena &arena;
  /// Tokens are read from the lexer as the parser looks at them; the few
  /// behind the current one stay (for one step back), older ones go.
  Lexer lexer;
  std::deque<Token> tokens;
  bool lexedEnd = false;
  std::optional<Error> lexFailure;
  size_t pos = 0;
  int nesting = 0;

  /// Reads tokens until index i of the window exists (or the file ended:
  /// its Eof, or the lexer's error shown as an Eof there, then repeats).
  const Token &tokenAt(size_t i) {
    while (tokens.size() <= i && !lexedEnd) {
      auto tok = lexer.next();
      if (!tok) {
        lexFailure = tok.error();
        Token end;
        end.loc = tok.error().loc;
        tokens.push_back(std::move(end));
        lexedEnd = true;
      } else {
        lexedEnd = tok->kind == TokenKind::Eof;
        tokens.push_back(tok.take());
      }
    }
    return tokens[std::min(i, tokens.size() - 1)];
  }
  const Token &cur() { return tokenAt(pos); }
  const Token &peekTok(size_t ahead = 1) { return tokenAt(pos + ahead); }
  /// The current token (a copy: the window moves on), then the next.
  Token take() {
    Token t = cur();
    if (pos + 1 < tokens.size() || !lexedEnd)
      ++pos;
    constexpr size_t kBehind = 4;
    while (pos > kBehind) {
      tokens.pop_front();
      --pos;
    }
    return t;
  }
  bool at(TokenKind k) { return cur().kind == k; }
  bool atIdent(const char *text) {
    return at(TokenKind::Identifier) && cur().text == text;
  }
  bool accept(TokenKind k) {
    if (!at(k))
      return false;
    take();
    return true;
  }

  Error error(const SourceLoc &loc, std::string msg) const {
    return errorAt(prog.text, loc, std::move(msg));
  }
  /// "found 'x'" / "found the end of the file", for messages.
  std::string found() {
    const Token &t = cur();
    switch (t.kind) {
    case TokenKind::Eof:
      return "the end of the file";
    case TokenKind::Identifier:
      return "'" + t.text + "'";
    case TokenKind::Integer:
      return "the number " + t.text;
    case TokenKind::String:
      return "a string";
    default:
      return describe(t.kind);
    }
  }
  Status expect(TokenKind k, const std::string &context) {
    if (accept(k))
      return Status::success();
    return error(cur().loc, "expected " + describe(k) + " " + context +
                                ", found " + found());
  }
  Expected<Token> expectIdent(const std::string &what) {
    if (!at(TokenKind::Identifier)) {
      std::string extra;
      if (cur().kind != TokenKind::Eof && cur().kind != TokenKind::Integer &&
          std::isalpha(
              (unsigned char)(cur().text.empty() ? ' ' : cur().text[0])))
        extra = " ('" + cur().text + "' is a keyword)";
      return error(cur().loc,
                   "expected " + what + ", found " + found() + extra);
    }
    return take();
  }

  /// Counts one level of nesting; fails past kMaxNesting.
  Status enter(const SourceLoc &loc) {
    if (++nesting > kMaxNesting)
      return error(loc, "nesting is too deep (more than " +
                            std::to_string(kMaxNesting) +
                            " levels of blocks or parentheses)");
    return Status::success();
  }
  Status checkHeight(const Expr &e) const {
    if (e.height > kMaxExprHeight)
      return error(e.loc, "expression is too deeply nested (more than " +
                              std::to_string(kMaxExprHeight) + " levels)");
    return Status::success();
  }

  Expected<StmtPtr> parseStatement();
  Expected<Block> parseBlock(const std::string &context);
  Expected<StmtPtr> parseParam();
  Expected<StmtPtr> parseCollective();
  Status parseCustomBody(CollectiveStmt &c);
  Expected<StmtPtr> parseScratch();
  Expected<StmtPtr> parseLet();
  Expected<StmtPtr> parseFor();
  Expected<StmtPtr> parseIf();
  Expected<StmtPtr> parseStep();
  Expected<StmtPtr> parseAssert();
  Expected<StmtPtr> parseTransfer();
  Expected<StmtPtr> parsePreInput();
  Expected<StmtPtr> parsePostOutput();
  Expected<Range> parseRange();

  Expected<ExprPtr> parseExpr();
  Expected<ExprPtr> parseOr();
  Expected<ExprPtr> parseAnd();
  Expected<ExprPtr> parseCompare();
  Expected<ExprPtr> parseAdd();
  Expected<ExprPtr> parseMul();
  Expected<ExprPtr> parseUnary();
  Expected<ExprPtr> parsePrimary();
  Expected<ExprPtr> binary(ExprPtr lhs, const Token &op, BinaryOp kind,
                           ExprPtr rhs);
};

#define CCSYNTH_TRY(var, expr)                                                 \
  auto var##OrErr = (expr);                                                    \
  if (!var##OrErr)                                                             \
    return var##OrErr.error();                                                 \
  auto var = var##OrErr.take();

#define CCSYNTH_CHECK(expr)                                                    \
  do {                                                                         \
    if (Status s_ = (expr); !s_)                                               \
      return s_.error();                                                       \
  } while (false)

Expected<Block> Parser::parseTopLevel() {
  Block items;
  while (!at(TokenKind::Eof)) {
    if (at(TokenKind::RBrace))
      return error(cur().loc, "unmatched '}'");
    CCSYNTH_TRY(stmt, parseStatement());
    items.push_back(std::move(stmt));
  }
  return items;
}

Expected<Block> Parser::parseBlock(const std::string &context) {
  SourceLoc open = cur().loc;
  CCSYNTH_CHECK(expect(TokenKind::LBrace, context));
  CCSYNTH_CHECK(enter(open));
  Block body;
  while (!at(TokenKind::RBrace)) {
    if (at(TokenKind::Eof))
      return errorAt(prog.text, cur().loc,
                     "expected '}' before the end of the file", open,
                     "the block opened here");
    CCSYNTH_TRY(stmt, parseStatement());
    body.push_back(std::move(stmt));
  }
  take();
  --nesting;
  return body;
}

Expected<StmtPtr> Parser::parseStatement() {
  switch (cur().kind) {
  case TokenKind::KwParam:
    return parseParam();
  case TokenKind::KwCollective:
    return parseCollective();
  case TokenKind::KwScratch:
    return parseScratch();
  case TokenKind::KwLet:
    return parseLet();
  case TokenKind::KwFor:
    return parseFor();
  case TokenKind::KwIf:
    return parseIf();
  case TokenKind::KwStep:
    return parseStep();
  case TokenKind::KwAssert:
    return parseAssert();
  case TokenKind::KwInput:
    return parsePreInput();
  case TokenKind::KwOutput:
    return parsePostOutput();
  case TokenKind::Identifier:
    if ((cur().text == "copy" || cur().text == "reduce" ||
         cur().text == "switch_reduce" || cur().text == "multicast") &&
        peekTok().kind == TokenKind::LParen)
      return parseTransfer();
    if (peekTok().kind == TokenKind::Assign)
      return error(cur().loc, "cannot assign to '" + cur().text +
                                  "': names are immutable (introduce a new "
                                  "one with 'let')");
    return error(cur().loc,
                 "unknown statement '" + cur().text +
                     "' (expected copy, reduce, switch_reduce, multicast, "
                     "let, for, if, step, assert, "
                     "param, collective or scratch)");
  case TokenKind::Semicolon:
    return error(cur().loc, "empty statement (stray ';')");
  default:
    return error(cur().loc, "expected a statement, found " + found());
  }
}

Expected<StmtPtr> Parser::parseParam() {
  auto stmt = arena.make<ParamStmt>(take().loc);
  CCSYNTH_TRY(name, expectIdent("a parameter name after 'param'"));
  stmt->name = name.spelling;
  stmt->nameLoc = name.loc;
  CCSYNTH_CHECK(
      expect(TokenKind::Assign, "after the parameter name (a parameter needs a "
                                "default: 'param " +
                                    name.text + " = 8;')"));
  CCSYNTH_TRY(init, parseExpr());
  stmt->init = std::move(init);
  CCSYNTH_CHECK(expect(TokenKind::Semicolon, "after the parameter"));
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parseCollective() {
  auto stmt = arena.make<CollectiveStmt>(take().loc);
  CCSYNTH_TRY(name, expectIdent("the collective's name after 'collective'"));
  stmt->name = name.spelling;
  stmt->nameLoc = name.loc;
  CCSYNTH_CHECK(expect(TokenKind::LParen,
                       "after the collective's name (e.g. 'collective "
                       "allreduce(ranks = 8);')"));
  while (!at(TokenKind::RParen)) {
    CCSYNTH_TRY(argName, expectIdent("an argument name (ranks, chunks, root)"));
    for (const NamedArg &a : stmt->args)
      if (a.name == argName.text)
        return errorAt(prog.text, argName.loc,
                       "duplicate argument '" + argName.text + "'", a.loc,
                       "first given here");
    CCSYNTH_CHECK(expect(TokenKind::Assign, "after '" + argName.text + "'"));
    CCSYNTH_TRY(value, parseExpr());
    stmt->args.push_back({argName.spelling, argName.loc, std::move(value)});
    if (!accept(TokenKind::Comma)) {
      CCSYNTH_CHECK(expect(TokenKind::RParen, "after the arguments"));
      --pos; // Let the loop condition see ')'.
    }
  }
  take();
  while (true) {
    if (at(TokenKind::KwInplace)) {
      if (stmt->inPlace)
        return errorAt(prog.text, cur().loc, "duplicate 'inplace'",
                       stmt->inPlaceLoc, "first given here");
      stmt->inPlace = true;
      stmt->inPlaceLoc = take().loc;
    } else if (at(TokenKind::KwProtocol)) {
      SourceLoc kw = take().loc;
      if (!stmt->protocol.empty())
        return errorAt(prog.text, kw, "duplicate 'protocol'", stmt->protocolLoc,
                       "first given here");
      CCSYNTH_TRY(p, expectIdent("a protocol name (Simple, LL or LL128)"));
      stmt->protocol = p.text;
      stmt->protocolLoc = p.loc;
    } else if (at(TokenKind::KwInstances)) {
      SourceLoc kw = take().loc;
      if (stmt->instances)
        return errorAt(prog.text, kw, "duplicate 'instances'",
                       stmt->instances->loc, "first given here");
      CCSYNTH_TRY(n, parseExpr());
      stmt->instances = std::move(n);
    } else {
      break;
    }
  }
  if (accept(TokenKind::Semicolon))
    return StmtPtr(std::move(stmt));
  if (!at(TokenKind::LBrace))
    return error(cur().loc,
                 "expected ';' (a built-in collective) or '{' (a custom "
                 "collective's conditions) after the collective header, "
                 "found " +
                     found());
  stmt->custom = true;
  CCSYNTH_CHECK(parseCustomBody(*stmt));
  return StmtPtr(std::move(stmt));
}

Status Parser::parseCustomBody(CollectiveStmt &c) {
  SourceLoc open = take().loc;
  CCSYNTH_CHECK(enter(open));
  while (!accept(TokenKind::RBrace)) {
    if (at(TokenKind::KwInput) || at(TokenKind::KwOutput)) {
      bool isInput = at(TokenKind::KwInput);
      SourceLoc kw = take().loc;
      if (!atIdent("chunks"))
        return error(cur().loc, std::string("expected 'chunks' after '") +
                                    (isInput ? "input" : "output") +
                                    "' (e.g. '" +
                                    (isInput ? "input" : "output") +
                                    " chunks = 1;'), found " + found());
      take();
      ChunkCountDecl &d = isInput ? c.inputChunks : c.outputChunks;
      if (d.value)
        return errorAt(prog.text, kw,
                       std::string("duplicate '") +
                           (isInput ? "input" : "output") + " chunks'",
                       d.loc, "first given here");
      CCSYNTH_CHECK(expect(TokenKind::Assign, "after 'chunks'"));
      CCSYNTH_TRY(value, parseExpr());
      d.loc = kw;
      d.value = std::move(value);
      CCSYNTH_CHECK(expect(TokenKind::Semicolon, "after the chunk count"));
    } else if (at(TokenKind::KwPre) || at(TokenKind::KwPost)) {
      bool isPre = at(TokenKind::KwPre);
      SourceLoc kw = take().loc;
      bool &has = isPre ? c.hasPre : c.hasPost;
      SourceLoc &where = isPre ? c.preLoc : c.postLoc;
      if (has)
        return errorAt(prog.text, kw,
                       std::string("duplicate '") + (isPre ? "pre" : "post") +
                           "' block",
                       where, "first given here");
      CCSYNTH_TRY(body, parseBlock(std::string("after '") +
                                   (isPre ? "pre" : "post") + "'"));
      has = true;
      where = kw;
      (isPre ? c.pre : c.post) = std::move(body);
    } else if (at(TokenKind::Eof)) {
      return errorAt(prog.text, cur().loc,
                     "expected '}' before the end of the file", open,
                     "the collective's body opened here");
    } else {
      return error(cur().loc,
                   "expected 'input chunks = ...;', 'output chunks = ...;', "
                   "'pre { ... }' or 'post { ... }' in a custom collective, "
                   "found " +
                       found());
    }
  }
  --nesting;
  return Status::success();
}

Expected<StmtPtr> Parser::parseScratch() {
  auto stmt = arena.make<ScratchStmt>(take().loc);
  if (!atIdent("chunks"))
    return error(cur().loc,
                 "expected 'chunks' after 'scratch' (e.g. 'scratch chunks = "
                 "ranks;'), found " +
                     found());
  take();
  CCSYNTH_CHECK(expect(TokenKind::Assign, "after 'scratch chunks'"));
  CCSYNTH_TRY(value, parseExpr());
  stmt->chunks = std::move(value);
  CCSYNTH_CHECK(expect(TokenKind::Semicolon, "after the scratch size"));
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parseLet() {
  auto stmt = arena.make<LetStmt>(take().loc);
  CCSYNTH_TRY(name, expectIdent("a name after 'let'"));
  stmt->name = name.spelling;
  stmt->nameLoc = name.loc;
  CCSYNTH_CHECK(expect(TokenKind::Assign, "after the name in 'let'"));
  CCSYNTH_TRY(init, parseExpr());
  stmt->init = std::move(init);
  CCSYNTH_CHECK(expect(TokenKind::Semicolon, "after the 'let' binding"));
  return StmtPtr(std::move(stmt));
}

Expected<Range> Parser::parseRange() {
  Range r;
  r.loc = cur().loc;
  CCSYNTH_TRY(lo, parseExpr());
  r.lo = std::move(lo);
  CCSYNTH_CHECK(
      expect(TokenKind::DotDot, "in the range (ranges are written 'lo..hi')"));
  CCSYNTH_TRY(hi, parseExpr());
  r.hi = std::move(hi);
  if (accept(TokenKind::KwBy)) {
    CCSYNTH_TRY(by, parseExpr());
    r.by = std::move(by);
  }
  return r;
}

Expected<StmtPtr> Parser::parseFor() {
  auto stmt = arena.make<ForStmt>(take().loc);
  CCSYNTH_TRY(var, expectIdent("a loop variable after 'for'"));
  stmt->var = var.spelling;
  stmt->varLoc = var.loc;
  CCSYNTH_CHECK(expect(TokenKind::KwIn, "after the loop variable"));
  CCSYNTH_TRY(range, parseRange());
  stmt->range = std::move(range);
  CCSYNTH_TRY(body, parseBlock("before the loop body"));
  stmt->body = std::move(body);
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parseIf() {
  auto stmt = arena.make<IfStmt>(take().loc);
  CCSYNTH_TRY(cond, parseExpr());
  stmt->cond = std::move(cond);
  CCSYNTH_TRY(thenBody, parseBlock("after the 'if' condition"));
  stmt->thenBody = std::move(thenBody);
  if (accept(TokenKind::KwElse)) {
    if (at(TokenKind::KwIf)) {
      SourceLoc loc = cur().loc;
      CCSYNTH_CHECK(enter(loc));
      CCSYNTH_TRY(nested, parseIf());
      --nesting;
      stmt->elseBody.push_back(std::move(nested));
    } else {
      CCSYNTH_TRY(elseBody, parseBlock("or 'if' after 'else'"));
      stmt->elseBody = std::move(elseBody);
    }
  }
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parseStep() {
  auto stmt = arena.make<StepStmt>(take().loc);
  CCSYNTH_TRY(body, parseBlock("after 'step'"));
  stmt->body = std::move(body);
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parseAssert() {
  auto stmt = arena.make<AssertStmt>(take().loc);
  CCSYNTH_CHECK(expect(TokenKind::LParen, "after 'assert'"));
  CCSYNTH_TRY(cond, parseExpr());
  stmt->cond = std::move(cond);
  if (accept(TokenKind::Comma)) {
    if (!at(TokenKind::String))
      return error(cur().loc,
                   "expected a message string after ',' in assert, found " +
                       found());
    stmt->message = take().text;
  }
  CCSYNTH_CHECK(expect(TokenKind::RParen, "after the assertion"));
  CCSYNTH_CHECK(expect(TokenKind::Semicolon, "after the assertion"));
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parseTransfer() {
  const Token &kw = take();
  auto stmt = arena.make<TransferStmt>(kw.loc);
  stmt->op = kw.text == "copy"            ? TransferOp::Copy
             : kw.text == "reduce"        ? TransferOp::Reduce
             : kw.text == "switch_reduce" ? TransferOp::SwitchReduce
                                          : TransferOp::Multicast;
  std::string op = kw.text;
  take(); // '('
  CCSYNTH_TRY(src, parseExpr());
  stmt->src = std::move(src);
  if (!at(TokenKind::Arrow))
    return error(cur().loc, "expected '->' between the source and the "
                            "destination of '" +
                                op + "', found " + found());
  take();
  CCSYNTH_TRY(dst, parseExpr());
  stmt->dst = std::move(dst);
  while (accept(TokenKind::Comma)) {
    CCSYNTH_TRY(hint, expectIdent("a hint name (tb, ch or switch) after ','"));
    for (const TransferHint &h : stmt->hints)
      if (h.name == hint.text)
        return errorAt(prog.text, hint.loc,
                       "duplicate hint '" + hint.text + "'", h.loc,
                       "first given here");
    CCSYNTH_CHECK(expect(TokenKind::Assign, "after the hint name"));
    CCSYNTH_TRY(value, parseExpr());
    stmt->hints.push_back({hint.spelling, hint.loc, std::move(value)});
  }
  CCSYNTH_CHECK(expect(TokenKind::RParen, "to close '" + op + "('"));
  CCSYNTH_CHECK(expect(TokenKind::Semicolon, "after '" + op + "(...)'"));
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parsePreInput() {
  auto stmt = arena.make<PreInputStmt>(take().loc);
  CCSYNTH_CHECK(expect(TokenKind::LParen,
                       "after 'input' (a precondition reads 'input(rank, "
                       "index);')"));
  CCSYNTH_TRY(rank, parseExpr());
  stmt->rank = std::move(rank);
  CCSYNTH_CHECK(expect(TokenKind::Comma, "after the rank in 'input(rank, "
                                         "index)'"));
  CCSYNTH_TRY(index, parseExpr());
  stmt->index = std::move(index);
  CCSYNTH_CHECK(expect(TokenKind::RParen, "after 'input(rank, index'"));
  CCSYNTH_CHECK(expect(TokenKind::Semicolon, "after 'input(rank, index)'"));
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parsePostOutput() {
  auto stmt = arena.make<PostOutputStmt>(take().loc);
  CCSYNTH_CHECK(expect(TokenKind::LParen,
                       "after 'output' (a postcondition reads "
                       "'output(rank, index) = value;')"));
  CCSYNTH_TRY(rank, parseExpr());
  stmt->rank = std::move(rank);
  CCSYNTH_CHECK(expect(TokenKind::Comma, "after the rank in 'output(rank, "
                                         "index)'"));
  CCSYNTH_TRY(index, parseExpr());
  stmt->index = std::move(index);
  CCSYNTH_CHECK(expect(TokenKind::RParen, "after 'output(rank, index'"));
  CCSYNTH_CHECK(expect(TokenKind::Assign,
                       "after 'output(rank, index)' in a postcondition"));
  CCSYNTH_TRY(value, parseExpr());
  stmt->value = std::move(value);
  CCSYNTH_CHECK(expect(TokenKind::Semicolon, "after the postcondition"));
  return StmtPtr(std::move(stmt));
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Expected<ExprPtr> Parser::binary(ExprPtr lhs, const Token &op, BinaryOp kind,
                                 ExprPtr rhs) {
  ExprPtr e =
      arena.make<BinaryExpr>(op.loc, kind, std::move(lhs), std::move(rhs));
  CCSYNTH_CHECK(checkHeight(*e));
  return e;
}

Expected<ExprPtr> Parser::parseExpr() { return parseOr(); }

Expected<ExprPtr> Parser::parseOr() {
  CCSYNTH_TRY(lhs, parseAnd());
  while (at(TokenKind::OrOr)) {
    Token op = take();
    CCSYNTH_TRY(rhs, parseAnd());
    CCSYNTH_TRY(e, binary(std::move(lhs), op, BinaryOp::Or, std::move(rhs)));
    lhs = std::move(e);
  }
  return lhs;
}

Expected<ExprPtr> Parser::parseAnd() {
  CCSYNTH_TRY(lhs, parseCompare());
  while (at(TokenKind::AndAnd)) {
    Token op = take();
    CCSYNTH_TRY(rhs, parseCompare());
    CCSYNTH_TRY(e, binary(std::move(lhs), op, BinaryOp::And, std::move(rhs)));
    lhs = std::move(e);
  }
  return lhs;
}

Expected<ExprPtr> Parser::parseCompare() {
  CCSYNTH_TRY(lhs, parseAdd());
  while (true) {
    BinaryOp kind;
    switch (cur().kind) {
    case TokenKind::Less:
      kind = BinaryOp::Lt;
      break;
    case TokenKind::LessEq:
      kind = BinaryOp::Le;
      break;
    case TokenKind::Greater:
      kind = BinaryOp::Gt;
      break;
    case TokenKind::GreaterEq:
      kind = BinaryOp::Ge;
      break;
    case TokenKind::EqEq:
      kind = BinaryOp::Eq;
      break;
    case TokenKind::NotEq:
      kind = BinaryOp::Ne;
      break;
    case TokenKind::Assign:
      return error(cur().loc, "unexpected '=' in an expression (did you mean "
                              "'=='?)");
    default:
      return lhs;
    }
    Token op = take();
    CCSYNTH_TRY(rhs, parseAdd());
    CCSYNTH_TRY(e, binary(std::move(lhs), op, kind, std::move(rhs)));
    lhs = std::move(e);
  }
}

Expected<ExprPtr> Parser::parseAdd() {
  CCSYNTH_TRY(lhs, parseMul());
  while (at(TokenKind::Plus) || at(TokenKind::Minus)) {
    Token op = take();
    BinaryOp kind = op.kind == TokenKind::Plus ? BinaryOp::Add : BinaryOp::Sub;
    CCSYNTH_TRY(rhs, parseMul());
    CCSYNTH_TRY(e, binary(std::move(lhs), op, kind, std::move(rhs)));
    lhs = std::move(e);
  }
  return lhs;
}

Expected<ExprPtr> Parser::parseMul() {
  CCSYNTH_TRY(lhs, parseUnary());
  while (at(TokenKind::Star) || at(TokenKind::Slash) ||
         at(TokenKind::Percent)) {
    Token op = take();
    BinaryOp kind = op.kind == TokenKind::Star    ? BinaryOp::Mul
                    : op.kind == TokenKind::Slash ? BinaryOp::Div
                                                  : BinaryOp::Mod;
    CCSYNTH_TRY(rhs, parseUnary());
    CCSYNTH_TRY(e, binary(std::move(lhs), op, kind, std::move(rhs)));
    lhs = std::move(e);
  }
  return lhs;
}

Expected<ExprPtr> Parser::parseUnary() {
  if (at(TokenKind::Minus) || at(TokenKind::Bang)) {
    Token op = take();
    CCSYNTH_CHECK(enter(op.loc));
    CCSYNTH_TRY(operand, parseUnary());
    --nesting;
    ExprPtr e = arena.make<UnaryExpr>(
        op.loc, op.kind == TokenKind::Minus ? UnaryOp::Neg : UnaryOp::Not,
        std::move(operand));
    CCSYNTH_CHECK(checkHeight(*e));
    return e;
  }
  return parsePrimary();
}

Expected<ExprPtr> Parser::parsePrimary() {
  const Token &t = cur();
  switch (t.kind) {
  case TokenKind::Integer: {
    const Token &tok = take();
    return ExprPtr(arena.make<IntLiteral>(tok.loc, tok.intValue));
  }
  case TokenKind::KwTrue:
  case TokenKind::KwFalse: {
    const Token &tok = take();
    return ExprPtr(
        arena.make<BoolLiteral>(tok.loc, tok.kind == TokenKind::KwTrue));
  }
  case TokenKind::Identifier: {
    const Token &name = take();
    if (!at(TokenKind::LParen))
      return ExprPtr(arena.make<NameExpr>(name.loc, name.spelling));
    SourceLoc open = take().loc;
    CCSYNTH_CHECK(enter(open));
    std::vector<ExprPtr> args;
    while (!at(TokenKind::RParen)) {
      CCSYNTH_TRY(arg, parseExpr());
      args.push_back(std::move(arg));
      if (!accept(TokenKind::Comma)) {
        CCSYNTH_CHECK(expect(TokenKind::RParen,
                             "after the arguments of '" + name.text + "'"));
        --pos;
      }
    }
    take();
    --nesting;
    ExprPtr e = arena.make<CallExpr>(name.loc, name.spelling, std::move(args));
    CCSYNTH_CHECK(checkHeight(*e));
    return e;
  }
  case TokenKind::KwInput:
    if (peekTok().kind == TokenKind::LParen) {
      SourceLoc loc = take().loc;
      SourceLoc open = take().loc;
      CCSYNTH_CHECK(enter(open));
      CCSYNTH_TRY(rank, parseExpr());
      CCSYNTH_CHECK(
          expect(TokenKind::Comma, "after the rank in 'input(rank, index)'"));
      CCSYNTH_TRY(index, parseExpr());
      CCSYNTH_CHECK(expect(TokenKind::RParen, "after 'input(rank, index'"));
      --nesting;
      ExprPtr e =
          arena.make<InputValueExpr>(loc, std::move(rank), std::move(index));
      CCSYNTH_CHECK(checkHeight(*e));
      return e;
    }
    return ExprPtr(arena.make<BufferNameExpr>(take().loc, BufferKind::Input));
  case TokenKind::KwOutput:
    if (peekTok().kind == TokenKind::LParen)
      return error(t.loc, "'output(rank, index)' can only be the target of a "
                          "postcondition ('output(r, i) = value;'); to name "
                          "a chunk write 'chunk(r, output, i)'");
    return ExprPtr(arena.make<BufferNameExpr>(take().loc, BufferKind::Output));
  case TokenKind::KwScratch:
    return ExprPtr(arena.make<BufferNameExpr>(take().loc, BufferKind::Scratch));
  case TokenKind::KwSum: {
    SourceLoc loc = take().loc;
    SourceLoc open = cur().loc;
    CCSYNTH_CHECK(expect(TokenKind::LParen,
                         "after 'sum' (e.g. 'sum(j in 0..ranks : input(j, "
                         "0))')"));
    CCSYNTH_CHECK(enter(open));
    CCSYNTH_TRY(var, expectIdent("a variable after 'sum('"));
    CCSYNTH_CHECK(expect(TokenKind::KwIn, "after the variable of 'sum'"));
    CCSYNTH_TRY(range, parseRange());
    CCSYNTH_CHECK(expect(TokenKind::Colon, "after the range of 'sum'"));
    CCSYNTH_TRY(body, parseExpr());
    CCSYNTH_CHECK(expect(TokenKind::RParen, "to close 'sum('"));
    --nesting;
    ExprPtr e = arena.make<SumExpr>(loc, var.spelling, var.loc,
                                    std::move(range), std::move(body));
    CCSYNTH_CHECK(checkHeight(*e));
    return e;
  }
  case TokenKind::LParen: {
    SourceLoc open = take().loc;
    CCSYNTH_CHECK(enter(open));
    CCSYNTH_TRY(inner, parseExpr());
    if (!at(TokenKind::RParen))
      return errorAt(prog.text, cur().loc,
                     "expected ')' to close the parenthesis, found " + found(),
                     open, "the parenthesis opened here");
    take();
    --nesting;
    return inner;
  }
  default:
    return error(t.loc, "expected an expression, found " + found());
  }
}

} // namespace

Expected<Program> parseProgram(std::string file, std::string text) {
  Program prog;
  prog.file = std::move(file);
  prog.text = std::move(text);
  // On the heap however short (a string that fits in itself would move its
  // characters when the Program moves, and the names are views of them).
  prog.text.reserve(std::max<size_t>(prog.text.size(), 32));
  Parser parser(prog, prog.arena);
  auto items = parser.parseTopLevel();
  if (parser.lexError())
    return *parser.lexError();
  if (!items)
    return items.error();
  prog.items = items.take();
  // The top-level list grew by doubling; the checks and the evaluation that
  // follow add to the program's memory, so it gives back what it did not use.
  prog.items.shrink_to_fit();
  return prog;
}

} // namespace ccsynth::dsl
