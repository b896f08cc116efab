//===- Lexer.cpp - Tokens of .ccl collective programs ---------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/DSL/Lexer.h"

#include "ccsynth/DSL/Diagnostics.h"

#include <cctype>
#include <cstdio>
#include <limits>
#include <optional>

namespace ccsynth::dsl {

namespace {

struct Keyword {
  const char *text;
  TokenKind kind;
};

constexpr Keyword kKeywords[] = {
    {"param", TokenKind::KwParam},
    {"collective", TokenKind::KwCollective},
    {"scratch", TokenKind::KwScratch},
    {"let", TokenKind::KwLet},
    {"for", TokenKind::KwFor},
    {"in", TokenKind::KwIn},
    {"by", TokenKind::KwBy},
    {"if", TokenKind::KwIf},
    {"else", TokenKind::KwElse},
    {"step", TokenKind::KwStep},
    {"assert", TokenKind::KwAssert},
    {"inplace", TokenKind::KwInplace},
    {"protocol", TokenKind::KwProtocol},
    {"instances", TokenKind::KwInstances},
    {"input", TokenKind::KwInput},
    {"output", TokenKind::KwOutput},
    {"true", TokenKind::KwTrue},
    {"false", TokenKind::KwFalse},
    {"pre", TokenKind::KwPre},
    {"post", TokenKind::KwPost},
    {"sum", TokenKind::KwSum},
};

struct Punct {
  const char *text;
  TokenKind kind;
};

// Longest spellings first so that "->" wins over "-" and ".." over ".".
constexpr Punct kPuncts[] = {
    {"->", TokenKind::Arrow},  {"..", TokenKind::DotDot},
    {"<=", TokenKind::LessEq}, {">=", TokenKind::GreaterEq},
    {"==", TokenKind::EqEq},   {"!=", TokenKind::NotEq},
    {"&&", TokenKind::AndAnd}, {"||", TokenKind::OrOr},
    {"(", TokenKind::LParen},  {")", TokenKind::RParen},
    {"{", TokenKind::LBrace},  {"}", TokenKind::RBrace},
    {",", TokenKind::Comma},   {";", TokenKind::Semicolon},
    {":", TokenKind::Colon},   {"=", TokenKind::Assign},
    {"+", TokenKind::Plus},    {"-", TokenKind::Minus},
    {"*", TokenKind::Star},    {"/", TokenKind::Slash},
    {"%", TokenKind::Percent}, {"<", TokenKind::Less},
    {">", TokenKind::Greater}, {"!", TokenKind::Bang},
};

} // namespace

/// Scans a file while tracking line and column.
class Lexer::Scanner {
public:
  Scanner(const std::string &f, const std::string &t) : file(f), text(t) {}

  /// The next token, or the error that stopped the scan (kept, and
  /// returned again on every later call).
  Expected<Token> take();

private:
  const std::string &file;
  const std::string &text;
  size_t pos = 0;
  int line = 1;
  int col = 1;

  bool atEnd() const { return pos >= text.size(); }
  char peek(size_t ahead = 0) const {
    return pos + ahead < text.size() ? text[pos + ahead] : '\0';
  }
  void advance() {
    if (text[pos] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    ++pos;
  }
  SourceLoc here() const { return SourceLoc{file, line, col}; }
  Error error(const SourceLoc &loc, std::string msg) const {
    return errorAt(text, loc, std::move(msg));
  }
  /// Skips blanks and comments; fails on an unterminated block comment.
  Status skipTrivia();
  Expected<Token> next();

  std::optional<Error> failed;
};

Status Lexer::Scanner::skipTrivia() {
  while (!atEnd()) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
        c == '\v') {
      advance();
    } else if (c == '/' && peek(1) == '/') {
      while (!atEnd() && peek() != '\n')
        advance();
    } else if (c == '/' && peek(1) == '*') {
      SourceLoc start = here();
      advance();
      advance();
      while (!atEnd() && !(peek() == '*' && peek(1) == '/'))
        advance();
      if (atEnd())
        return error(start, "unterminated comment (missing '*/')");
      advance();
      advance();
    } else {
      break;
    }
  }
  return Status::success();
}

Expected<Token> Lexer::Scanner::next() {
  Token tok;
  tok.loc = here();
  if (atEnd()) {
    tok.kind = TokenKind::Eof;
    return tok;
  }
  unsigned char c = (unsigned char)peek();
  if (std::isalpha(c) || c == '_') {
    size_t start = pos;
    while (!atEnd() && (std::isalnum((unsigned char)peek()) || peek() == '_'))
      advance();
    tok.text = text.substr(start, pos - start);
    tok.spelling = std::string_view(text).substr(start, pos - start);
    tok.kind = TokenKind::Identifier;
    for (const Keyword &k : kKeywords)
      if (tok.text == k.text)
        tok.kind = k.kind;
    return tok;
  }
  if (std::isdigit(c)) {
    size_t start = pos;
    long long value = 0;
    bool overflow = false;
    while (!atEnd() && std::isdigit((unsigned char)peek())) {
      int d = peek() - '0';
      if (value > (std::numeric_limits<long long>::max() - d) / 10)
        overflow = true;
      else
        value = value * 10 + d;
      advance();
    }
    tok.text = text.substr(start, pos - start);
    if (overflow)
      return error(tok.loc, "integer literal '" + tok.text +
                                "' does not fit in 64 bits");
    if (std::isalpha((unsigned char)peek()) || peek() == '_')
      return error(here(), "unexpected character '" + std::string(1, peek()) +
                               "' after the number '" + tok.text + "'");
    tok.kind = TokenKind::Integer;
    tok.intValue = value;
    return tok;
  }
  if (c == '"') {
    advance();
    std::string value;
    while (true) {
      if (atEnd() || peek() == '\n')
        return error(tok.loc, "unterminated string (missing '\"')");
      char ch = peek();
      if (ch == '"') {
        advance();
        break;
      }
      if (ch == '\\') {
        SourceLoc escLoc = here();
        advance();
        if (atEnd() || (peek() != '"' && peek() != '\\'))
          return error(escLoc, "unknown escape in string (only \\\" and \\\\ "
                               "are allowed)");
      }
      value += peek();
      advance();
    }
    tok.kind = TokenKind::String;
    tok.text = std::move(value);
    return tok;
  }
  for (const Punct &p : kPuncts) {
    size_t len = std::char_traits<char>::length(p.text);
    if (text.compare(pos, len, p.text) == 0) {
      for (size_t i = 0; i < len; ++i)
        advance();
      tok.kind = p.kind;
      tok.text = p.text;
      return tok;
    }
  }
  std::string shown;
  if (std::isprint(c)) {
    shown = "'" + std::string(1, (char)c) + "'";
  } else {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", c);
    shown = std::string("byte ") + buf;
  }
  if (c == '.')
    return error(tok.loc, "unexpected '.' (ranges are written 'lo..hi')");
  if (c == '&' || c == '|')
    return error(tok.loc, "unexpected " + shown +
                              " (logical operators are "
                              "'&&' and '||')");
  return error(tok.loc, "unexpected character " + shown);
}

Expected<Token> Lexer::Scanner::take() {
  if (failed)
    return *failed;
  Status trivia = skipTrivia();
  Expected<Token> tok = trivia ? next() : Expected<Token>(trivia.error());
  if (!tok)
    failed = tok.error();
  return tok;
}

Lexer::Lexer(const std::string &file, const std::string &text)
    : scanner(std::make_unique<Scanner>(file, text)) {}

Lexer::~Lexer() = default;

Expected<Token> Lexer::next() { return scanner->take(); }

std::string describe(TokenKind kind) {
  switch (kind) {
  case TokenKind::Eof:
    return "the end of the file";
  case TokenKind::Identifier:
    return "an identifier";
  case TokenKind::Integer:
    return "an integer";
  case TokenKind::String:
    return "a string";
  default:
    break;
  }
  for (const Keyword &k : kKeywords)
    if (k.kind == kind)
      return std::string("'") + k.text + "'";
  for (const Punct &p : kPuncts)
    if (p.kind == kind)
      return std::string("'") + p.text + "'";
  return "?";
}

Expected<std::vector<Token>> lex(const std::string &file,
                                 const std::string &text) {
  Lexer lexer(file, text);
  std::vector<Token> tokens;
  while (true) {
    auto tok = lexer.next();
    if (!tok)
      return tok.error();
    bool end = tok->kind == TokenKind::Eof;
    tokens.push_back(tok.take());
    if (end)
      return tokens;
  }
}

} // namespace ccsynth::dsl
