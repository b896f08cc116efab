//===- Lexer.h - Tokens of .ccl collective programs -----------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The lexer hands out a file's tokens one at a time, ending in Eof (the
// parser reads a few ahead, so its memory does not grow with the file); lex
// collects them all, for tests. Comments are `// ...` to the end of the
// line and `/* ... */`. Integers are decimal
// and must fit in 64 bits; strings are double-quoted on one line with `\"`
// and `\\` escapes. Anything else is a located error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ccsynth::dsl {

enum class TokenKind {
  Eof,
  Identifier,
  Integer,
  String,
  // Keywords.
  KwParam,
  KwCollective,
  KwScratch,
  KwLet,
  KwFor,
  KwIn,
  KwBy,
  KwIf,
  KwElse,
  KwStep,
  KwAssert,
  KwInplace,
  KwProtocol,
  KwInstances,
  KwInput,
  KwOutput,
  KwTrue,
  KwFalse,
  KwPre,
  KwPost,
  KwSum,
  // Punctuation and operators.
  LParen,
  RParen,
  LBrace,
  RBrace,
  Comma,
  Semicolon,
  Colon,
  Assign, // =
  Arrow,  // ->
  DotDot, // ..
  Plus,
  Minus,
  Star,
  Slash,
  Percent,
  Less,
  LessEq,
  Greater,
  GreaterEq,
  EqEq,
  NotEq,
  AndAnd,
  OrOr,
  Bang,
};

/// How a token kind is written, for messages ("';'", "'collective'",
/// "an identifier").
std::string describe(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::Eof;
  /// The token's text (for strings: the unescaped contents).
  std::string text;
  /// For identifiers and keywords: the same text, as a view of the text
  /// being lexed (the syntax tree's names are such views).
  std::string_view spelling;
  long long intValue = 0;
  SourceLoc loc;
};

/// The tokens of `text` (the contents of `file`, which must outlive it), one
/// per call to next(): after Eof, Eof again; after an error, that error
/// again.
class Lexer {
public:
  Lexer(const std::string &file, const std::string &text);
  ~Lexer();
  Lexer(const Lexer &) = delete;
  Lexer &operator=(const Lexer &) = delete;
  Expected<Token> next();

private:
  class Scanner;
  std::unique_ptr<Scanner> scanner;
};

/// Splits `text` (the contents of `file`) into tokens; the last one is Eof.
Expected<std::vector<Token>> lex(const std::string &file,
                                 const std::string &text);

} // namespace ccsynth::dsl
