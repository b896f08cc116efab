// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the .ccl lexer and parser: tokens and their locations,
// operator precedence, locations on every AST node, nesting limits.
#include "DslTestUtil.h"

#include "ccsynth/DSL/Lexer.h"
#include "ccsynth/DSL/Parser.h"

#include <catch2/catch.hpp>

using namespace ccsynth;
using namespace ccsynth::dsl;
using namespace ccsynth::dsl::test;

TEST_CASE("lexer splits tokens and tracks line and column", "[dsl][lexer]") {
  auto toks = lex("f.ccl", "param n = 8; // comment\n"
                           "for r in 0..n-1 { copy(a -> b); }\n"
                           "/* block\n comment */ x <= 3 && !y");
  REQUIRE(toks.ok());
  std::vector<TokenKind> kinds;
  for (const Token &t : *toks)
    kinds.push_back(t.kind);
  std::vector<TokenKind> want = {
      TokenKind::KwParam,    TokenKind::Identifier, TokenKind::Assign,
      TokenKind::Integer,    TokenKind::Semicolon,  TokenKind::KwFor,
      TokenKind::Identifier, TokenKind::KwIn,       TokenKind::Integer,
      TokenKind::DotDot,     TokenKind::Identifier, TokenKind::Minus,
      TokenKind::Integer,    TokenKind::LBrace,     TokenKind::Identifier,
      TokenKind::LParen,     TokenKind::Identifier, TokenKind::Arrow,
      TokenKind::Identifier, TokenKind::RParen,     TokenKind::Semicolon,
      TokenKind::RBrace,     TokenKind::Identifier, TokenKind::LessEq,
      TokenKind::Integer,    TokenKind::AndAnd,     TokenKind::Bang,
      TokenKind::Identifier, TokenKind::Eof};
  CHECK(kinds == want);
  const Token &forTok = (*toks)[5];
  CHECK(forTok.loc.file == "f.ccl");
  CHECK(forTok.loc.line == 2);
  CHECK(forTok.loc.col == 1);
  const Token &dots = (*toks)[9];
  CHECK(dots.loc.line == 2);
  CHECK(dots.loc.col == 11);
  const Token &x = (*toks)[22];
  CHECK(x.text == "x");
  CHECK(x.loc.line == 4);
  CHECK(x.loc.col == 13);
  CHECK((*toks)[3].intValue == 8);
}

TEST_CASE("lexer errors are located with a caret", "[dsl][lexer]") {
  auto bad = lex("f.ccl", "let x = 1;\nlet y = 2 @ 3;\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().loc.line == 2);
  CHECK(bad.error().loc.col == 11);
  CHECK(bad.error().format() == "f.ccl:2:11: error: unexpected character '@'\n"
                                "let y = 2 @ 3;\n"
                                "          ^");
  auto big = lex("f.ccl", "9223372036854775807 9223372036854775808");
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().loc.col == 21);
  auto byte = lex("f.ccl", "x \x01");
  REQUIRE_FALSE(byte.ok());
  CHECK(byte.error().message.find("byte 0x01") != std::string::npos);
  auto str = lex("f.ccl", "\"a\\\"b\\\\\" \"x\\n\"");
  REQUIRE_FALSE(str.ok());
  CHECK(str.error().message.find("unknown escape") != std::string::npos);
  auto ok = lex("f.ccl", "\"a\\\"b\\\\\"");
  REQUIRE(ok.ok());
  CHECK((*ok)[0].text == "a\"b\\");
}

namespace {

/// Depth-first walk over every expression and statement, checking that each
/// node carries a location in `file`.
struct LocationChecker {
  std::string file;
  int nodes = 0;
  std::vector<std::string> problems;

  void check(const SourceLoc &loc, const char *what) {
    ++nodes;
    if (!loc.known() || loc.col < 1 || loc.file != file)
      problems.push_back(std::string(what) + " without a location");
  }
  void expr(const Expr *e) {
    if (!e)
      return;
    check(e->loc, "expression");
    if (auto *u = dynCast<UnaryExpr>(e))
      expr(u->operand.get());
    if (auto *b = dynCast<BinaryExpr>(e)) {
      expr(b->lhs.get());
      expr(b->rhs.get());
    }
    if (auto *c = dynCast<CallExpr>(e))
      for (const ExprPtr &a : c->args)
        expr(a.get());
    if (auto *v = dynCast<InputValueExpr>(e)) {
      expr(v->rank.get());
      expr(v->index.get());
    }
    if (auto *s = dynCast<SumExpr>(e)) {
      check(s->varLoc, "sum variable");
      range(s->range);
      expr(s->body.get());
    }
  }
  void range(const Range &r) {
    check(r.loc, "range");
    expr(r.lo.get());
    expr(r.hi.get());
    expr(r.by.get());
  }
  void block(const Block &b) {
    for (const StmtPtr &s : b)
      stmt(s.get());
  }
  void stmt(const Stmt *s) {
    check(s->loc, "statement");
    if (auto *p = dynCast<ParamStmt>(s)) {
      check(p->nameLoc, "param name");
      expr(p->init.get());
    } else if (auto *c = dynCast<CollectiveStmt>(s)) {
      check(c->nameLoc, "collective name");
      for (const NamedArg &a : c->args) {
        check(a.loc, "argument");
        expr(a.value.get());
      }
      expr(c->instances.get());
      expr(c->inputChunks.value.get());
      expr(c->outputChunks.value.get());
      block(c->pre);
      block(c->post);
    } else if (auto *sc = dynCast<ScratchStmt>(s)) {
      expr(sc->chunks.get());
    } else if (auto *l = dynCast<LetStmt>(s)) {
      check(l->nameLoc, "let name");
      expr(l->init.get());
    } else if (auto *f = dynCast<ForStmt>(s)) {
      check(f->varLoc, "loop variable");
      range(f->range);
      block(f->body);
    } else if (auto *i = dynCast<IfStmt>(s)) {
      expr(i->cond.get());
      block(i->thenBody);
      block(i->elseBody);
    } else if (auto *st = dynCast<StepStmt>(s)) {
      block(st->body);
    } else if (auto *a = dynCast<AssertStmt>(s)) {
      expr(a->cond.get());
    } else if (auto *t = dynCast<TransferStmt>(s)) {
      expr(t->src.get());
      expr(t->dst.get());
      for (const TransferHint &h : t->hints) {
        check(h.loc, "hint");
        expr(h.value.get());
      }
    } else if (auto *pi = dynCast<PreInputStmt>(s)) {
      expr(pi->rank.get());
      expr(pi->index.get());
    } else if (auto *po = dynCast<PostOutputStmt>(s)) {
      expr(po->rank.get());
      expr(po->index.get());
      expr(po->value.get());
    }
  }
};

} // namespace

TEST_CASE("the parser reports the first error without reading on",
          "[dsl][parser]") {
  // Tokens are read as the parser needs them: a chain too deep is refused
  // at its 257th operator, before the bad byte after it is ever read (a
  // lexer that read the whole file first would report that byte).
  std::string chain = "let c = 1";
  for (int i = 0; i < 300; ++i)
    chain += " + 0";
  auto deep = parseProgram("f.ccl", chain + ";\nlet d = 2 @ 3;\n");
  REQUIRE_FALSE(deep);
  CHECK(deep.error().message.find("too deeply nested") != std::string::npos);
  CHECK(deep.error().loc.line == 1);
  // A lexical error right after a statement still comes first when the
  // parser reaches it.
  auto bad = parseProgram("f.ccl", "param n = 8;\nlet y = 2 @ 3;\n");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().format() == "f.ccl:2:11: error: unexpected character '@'\n"
                                "let y = 2 @ 3;\n"
                                "          ^");
  // And a syntax error before a lexical one is the one reported.
  auto syntax = parseProgram("f.ccl", "param = 8;\nlet y = 2 @ 3;\n");
  REQUIRE_FALSE(syntax);
  CHECK(syntax.error().loc.line == 1);
}

TEST_CASE("names are views of the program's text wherever it moves",
          "[dsl][parser]") {
  // A text short enough to live inside its string object would move its
  // characters with it; the parser keeps it on the heap, so the tree's
  // names (views of the text) stay valid in a moved program.
  auto parsed = parseProgram("f.ccl", "param n = 8;");
  REQUIRE(parsed);
  Program moved = parsed.take();
  Program again = std::move(moved);
  REQUIRE(again.items.size() == 1);
  const auto *param = dynCast<ParamStmt>(again.items[0].get());
  REQUIRE(param);
  CHECK(param->name == "n");
  const char *text = again.text.data();
  CHECK(param->name.data() >= text);
  CHECK(param->name.data() < text + again.text.size());
}

TEST_CASE("every AST node of the shipped programs has a location",
          "[dsl][parser]") {
  auto files = filesIn("sketches/dsl", ".ccl");
  REQUIRE(files.size() >= 9);
  for (const std::string &path : files) {
    INFO(path);
    auto prog = parseProgram(path, slurp(path));
    REQUIRE(prog.ok());
    LocationChecker lc{path};
    lc.block(prog->items);
    CHECK(lc.nodes > 20);
    CHECK(lc.problems.empty());
  }
}

TEST_CASE("parser builds expressions with C precedence", "[dsl][parser]") {
  auto prog = parseProgram("p.ccl", "let x = 1 + 2 * 3 - 4 % 5;\n"
                                    "let y = a < b && c != d || !e;\n"
                                    "let z = -(n - 1) / 2;\n");
  REQUIRE(prog.ok());
  REQUIRE(prog->items.size() == 3);
  // x = (1 + (2 * 3)) - (4 % 5)
  auto *x = cast<LetStmt>(prog->items[0].get());
  auto *sub = dynCast<BinaryExpr>(x->init.get());
  REQUIRE(sub);
  CHECK(sub->op == BinaryOp::Sub);
  CHECK(sub->loc.col == 19); // the operator
  CHECK(beginLoc(*sub).col == 9);
  auto *add = dynCast<BinaryExpr>(sub->lhs.get());
  REQUIRE(add);
  CHECK(add->op == BinaryOp::Add);
  CHECK(cast<BinaryExpr>(add->rhs.get())->op == BinaryOp::Mul);
  CHECK(cast<BinaryExpr>(sub->rhs.get())->op == BinaryOp::Mod);
  // y = ((a < b) && (c != d)) || (!e)
  auto *y = cast<LetStmt>(prog->items[1].get());
  auto *orE = cast<BinaryExpr>(y->init.get());
  CHECK(orE->op == BinaryOp::Or);
  auto *andE = cast<BinaryExpr>(orE->lhs.get());
  CHECK(andE->op == BinaryOp::And);
  CHECK(cast<BinaryExpr>(andE->lhs.get())->op == BinaryOp::Lt);
  CHECK(cast<BinaryExpr>(andE->rhs.get())->op == BinaryOp::Ne);
  CHECK(cast<UnaryExpr>(orE->rhs.get())->op == UnaryOp::Not);
  auto *z = cast<LetStmt>(prog->items[2].get());
  auto *div = cast<BinaryExpr>(z->init.get());
  CHECK(div->op == BinaryOp::Div);
  CHECK(cast<UnaryExpr>(div->lhs.get())->op == UnaryOp::Neg);
}

TEST_CASE("parser reads collectives, transfers, ranges and conditions",
          "[dsl][parser]") {
  auto prog = parseProgram(
      "p.ccl",
      "collective broadcast(ranks = 4, root = 1) inplace protocol LL "
      "instances 2;\n"
      "for r in 0..8 by 2 { reduce(chunk(r, input, 0, 2) -> chunk(0, output, "
      "0, 2), tb = 1, ch = 0); }\n"
      "collective c(ranks = 2) { input chunks = 1; output chunks = 2;\n"
      "  pre { input(0, 0); } post { output(1, 1) = sum(j in 0..2 : "
      "input(j, 0)); } }\n");
  REQUIRE(prog.ok());
  auto *c = cast<CollectiveStmt>(prog->items[0].get());
  CHECK(c->name == "broadcast");
  CHECK(c->args.size() == 2);
  CHECK(c->inPlace);
  CHECK(c->protocol == "LL");
  REQUIRE(c->instances);
  CHECK_FALSE(c->custom);
  auto *f = cast<ForStmt>(prog->items[1].get());
  REQUIRE(f->range.by);
  auto *t = cast<TransferStmt>(f->body[0].get());
  CHECK(t->op == TransferOp::Reduce);
  CHECK(t->hints.size() == 2);
  CHECK(cast<CallExpr>(t->src.get())->args.size() == 4);
  auto *custom = cast<CollectiveStmt>(prog->items[2].get());
  CHECK(custom->custom);
  CHECK(custom->hasPre);
  CHECK(custom->hasPost);
  REQUIRE(custom->post.size() == 1);
  auto *po = cast<PostOutputStmt>(custom->post[0].get());
  CHECK(isa<SumExpr>(po->value.get()));
}

TEST_CASE("syntax errors name what was expected", "[dsl][parser]") {
  struct Case {
    const char *text;
    int line, col;
    const char *message;
  };
  Case cases[] = {
      {"param x 3;", 1, 9, "expected '=' after the parameter name"},
      {"for r in 0 { }", 1, 12, "expected '..' in the range"},
      {"let = 3;", 1, 5, "expected a name after 'let', found '='"},
      {"let for = 3;", 1, 5, "'for' is a keyword"},
      {"if x == 1 { } else for", 1, 20, "expected '{' or 'if' after 'else'"},
      {"let x = (1 + 2;", 1, 15, "expected ')' to close the parenthesis"},
      {"let x = 1 +;", 1, 12, "expected an expression, found ';'"},
      {"}", 1, 1, "unmatched '}'"},
      {";", 1, 1, "empty statement"},
      {"if x = 1 { }", 1, 6, "did you mean '=='?"},
      {"collective a(ranks = 2, ranks = 3);", 1, 25, "duplicate argument"},
      {"collective a(ranks = 2) inplace inplace;", 1, 33,
       "duplicate 'inplace'"},
      {"collective a(ranks = 2) x;", 1, 25, "expected ';' (a built-in"},
      {"collective c(ranks = 2) { input chunks = 1; input chunks = 2; }", 1, 45,
       "duplicate 'input chunks'"},
      {"collective c(ranks = 2) { foo }", 1, 27, "in a custom collective"},
      {"copy(a -> b, tb = 1, tb = 2);", 1, 22, "duplicate hint 'tb'"},
      {"let v = output(0, 0);", 1, 9, "can only be the target"},
      {"assert(x, 3);", 1, 11, "expected a message string"},
  };
  for (const Case &c : cases) {
    INFO(c.text);
    auto prog = parseProgram("p.ccl", c.text);
    REQUIRE_FALSE(prog.ok());
    CHECK(prog.error().loc.line == c.line);
    CHECK(prog.error().loc.col == c.col);
    CHECK(prog.error().message.find(c.message) != std::string::npos);
    // The caret sits under the reported column.
    std::string caret = lineOf(prog.error().notes, 1);
    CHECK(caret == std::string(c.col - 1, ' ') + "^");
  }
}

TEST_CASE("parser bounds nesting and expression height", "[dsl][parser]") {
  std::string deep =
      "let x = " + std::string(5000, '(') + "1" + std::string(5000, ')') + ";";
  auto p1 = parseProgram("p.ccl", deep);
  REQUIRE_FALSE(p1.ok());
  CHECK(p1.error().message.find("nesting is too deep") != std::string::npos);

  std::string blocks;
  for (int i = 0; i < 5000; ++i)
    blocks += "if true { ";
  auto p2 = parseProgram("p.ccl", blocks);
  REQUIRE_FALSE(p2.ok());
  CHECK(p2.error().message.find("nesting is too deep") != std::string::npos);

  std::string unary = "let x = " + std::string(5000, '-') + "1;";
  auto p3 = parseProgram("p.ccl", unary);
  REQUIRE_FALSE(p3.ok());

  // A long flat chain has no parentheses but a tall tree.
  std::string chain = "let x = 1";
  for (int i = 0; i < 100000; ++i)
    chain += " + 1";
  auto p4 = parseProgram("p.ccl", chain + ";");
  REQUIRE_FALSE(p4.ok());
  CHECK(p4.error().message.find("too deeply nested") != std::string::npos);

  std::string fine = "let x = 1";
  for (int i = 0; i < kMaxExprHeight - 1; ++i)
    fine += " + 1";
  CHECK(parseProgram("p.ccl", fine + ";").ok());
}
