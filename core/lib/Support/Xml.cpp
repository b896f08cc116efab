//===- Xml.cpp - A small located XML reader -------------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A hand-written, non-recursive reader for the machine-written XML ccsynth
// consumes (NCCL topology dumps, MSCCL algorithm files). It keeps elements
// and attributes, skips text, comments, CDATA and processing instructions,
// and reports the first problem with file:line:col and a caret line. It
// never recurses on the input's nesting (an explicit stack plus a depth
// limit), so hostile input cannot exhaust the call stack while parsing or
// while the tree is destroyed.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Support/Xml.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace ccsynth {

/// Calls f(name, value) for each attribute of `text` (XmlElement's
/// attributeText) until it returns true; returns whether one did.
template <typename F> static bool eachAttribute(const std::string &text, F f) {
  size_t p = 0;
  while (p < text.size()) {
    size_t nameEnd = text.find('\0', p);
    size_t valueEnd = text.find('\0', nameEnd + 1);
    if (f(std::string_view(text).substr(p, nameEnd - p),
          std::string_view(text).substr(nameEnd + 1, valueEnd - nameEnd - 1)))
      return true;
    p = valueEnd + 1;
  }
  return false;
}

std::optional<std::string> XmlElement::attr(const std::string &key) const {
  std::optional<std::string> found;
  eachAttribute(attributeText, [&](std::string_view k, std::string_view v) {
    if (k != key)
      return false;
    found = std::string(v);
    return true;
  });
  return found;
}

size_t XmlElement::attributeCount() const {
  size_t n = 0;
  eachAttribute(attributeText, [&](std::string_view, std::string_view) {
    ++n;
    return false;
  });
  return n;
}

std::vector<const XmlElement *>
XmlElement::childrenNamed(const std::string &n) const {
  std::vector<const XmlElement *> out;
  for (const auto &c : children)
    if (c->name == n)
      out.push_back(c.get());
  return out;
}

namespace {

/// Deeper nesting than this is rejected; real inputs use fewer than 10
/// levels, and the limit bounds the recursion of the tree's destructor.
constexpr size_t kMaxDepth = 256;

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool isNameStart(char c) {
  unsigned char u = (unsigned char)c;
  return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u == '_' ||
         u == ':' || u >= 0x80;
}

bool isNameChar(char c) {
  unsigned char u = (unsigned char)c;
  return isNameStart(c) || (u >= '0' && u <= '9') || u == '-' || u == '.';
}

/// Appends `cp` as UTF-8.
void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += (char)cp;
  } else if (cp < 0x800) {
    out += (char)(0xC0 | (cp >> 6));
    out += (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += (char)(0xE0 | (cp >> 12));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  } else {
    out += (char)(0xF0 | (cp >> 18));
    out += (char)(0x80 | ((cp >> 12) & 0x3F));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  }
}

/// Code points XML 1.0 allows in a document (production [2] Char).
bool isXmlChar(uint32_t cp) {
  return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
         (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

std::string describeByte(char c) {
  unsigned char u = (unsigned char)c;
  if (u >= 0x21 && u < 0x7F)
    return std::string("'") + c + "'";
  static const char *hex = "0123456789abcdef";
  return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

class Parser {
public:
  Parser(const std::string &file, const std::string &text)
      : file(file), text(text) {
    lineStarts.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n')
        lineStarts.push_back(i + 1);
  }

  Expected<std::unique_ptr<XmlElement>> run();

private:
  const std::string &file;
  const std::string &text;
  size_t pos = 0;
  /// Byte offset of the start of every line, for O(log n) locations.
  std::vector<size_t> lineStarts;

  SourceLoc locAt(size_t offset) const {
    offset = std::min(offset, text.size());
    size_t line =
        std::upper_bound(lineStarts.begin(), lineStarts.end(), offset) -
        lineStarts.begin();
    return SourceLoc{file, (int)line, (int)(offset - lineStarts[line - 1]) + 1};
  }
  Error errorAt(size_t offset, const std::string &msg) const {
    SourceLoc loc = locAt(offset);
    return Error(msg, loc, caretLine(text, loc));
  }

  bool atEnd() const { return pos >= text.size(); }
  bool lookingAt(const char *s) const {
    return text.compare(pos, std::char_traits<char>::length(s), s) == 0;
  }
  void skipSpace() {
    while (!atEnd() && isSpace(text[pos]))
      ++pos;
  }

  Status skipComment();
  Status skipProcessingInstruction();
  Status skipCData();
  Status skipMisc();
  Expected<std::string> parseName(const char *what);
  Status parseAttributeValue(std::string &out);
  Expected<bool> parseStartTag(XmlElement &el);
  Status parseEndTag(const XmlElement &open, size_t openOffset);
};

Status Parser::skipComment() {
  size_t start = pos;
  size_t end = text.find("-->", pos + 4);
  if (end == std::string::npos)
    return errorAt(start, "unterminated comment (missing '-->')");
  pos = end + 3;
  return Status::success();
}

Status Parser::skipProcessingInstruction() {
  size_t start = pos;
  size_t end = text.find("?>", pos + 2);
  if (end == std::string::npos)
    return errorAt(start, "unterminated processing instruction (missing '?>')");
  pos = end + 2;
  return Status::success();
}

Status Parser::skipCData() {
  size_t start = pos;
  size_t end = text.find("]]>", pos + 9);
  if (end == std::string::npos)
    return errorAt(start, "unterminated CDATA section (missing ']]>')");
  pos = end + 3;
  return Status::success();
}

/// Whitespace, comments and processing instructions (the prolog included),
/// allowed before and after the root element.
Status Parser::skipMisc() {
  for (;;) {
    skipSpace();
    if (lookingAt("<!--")) {
      if (Status s = skipComment(); !s)
        return s;
    } else if (lookingAt("<?")) {
      if (Status s = skipProcessingInstruction(); !s)
        return s;
    } else {
      return Status::success();
    }
  }
}

Expected<std::string> Parser::parseName(const char *what) {
  if (atEnd())
    return errorAt(pos, std::string("expected ") + what +
                            ", found the end of the input");
  if (!isNameStart(text[pos]))
    return errorAt(pos, std::string("expected ") + what + ", found " +
                            describeByte(text[pos]));
  size_t start = pos;
  while (!atEnd() && isNameChar(text[pos]))
    ++pos;
  return text.substr(start, pos - start);
}

/// Reads a quoted value at `pos`, decoding the five predefined entities and
/// numeric character references, and normalizing literal whitespace to
/// spaces as XML 1.0 §3.3.3 requires.
Status Parser::parseAttributeValue(std::string &out) {
  if (atEnd())
    return errorAt(pos, "expected a quoted attribute value, found the end of "
                        "the input");
  char quote = text[pos];
  if (quote != '"' && quote != '\'')
    return errorAt(pos, "attribute values must be quoted with \" or ', found " +
                            describeByte(quote));
  size_t open = pos++;
  for (;;) {
    if (atEnd())
      return errorAt(open, "unterminated attribute value (missing closing " +
                               std::string(1, quote) + ")");
    char c = text[pos];
    if (c == quote) {
      ++pos;
      return Status::success();
    }
    if (c == '<')
      return errorAt(pos, "'<' is not allowed in an attribute value (write "
                          "&lt;)");
    if (c == '&') {
      size_t amp = pos;
      size_t semi = text.find(';', pos);
      // Valid references are short ("&#x10FFFF;"); a far-away ';' belongs
      // to something else.
      if (semi == std::string::npos || semi - amp > 32)
        return errorAt(amp, "'&' must start an entity reference such as "
                            "&amp; (missing ';')");
      std::string ref = text.substr(amp + 1, semi - amp - 1);
      if (ref == "lt")
        out += '<';
      else if (ref == "gt")
        out += '>';
      else if (ref == "amp")
        out += '&';
      else if (ref == "quot")
        out += '"';
      else if (ref == "apos")
        out += '\'';
      else if (ref.size() >= 2 && ref[0] == '#') {
        bool hex = ref[1] == 'x';
        std::string digits = ref.substr(hex ? 2 : 1);
        uint32_t cp = 0;
        bool ok = !digits.empty();
        for (char d : digits) {
          int v = -1;
          if (d >= '0' && d <= '9')
            v = d - '0';
          else if (hex && d >= 'a' && d <= 'f')
            v = d - 'a' + 10;
          else if (hex && d >= 'A' && d <= 'F')
            v = d - 'A' + 10;
          if (v < 0) {
            ok = false;
            break;
          }
          cp = cp * (hex ? 16 : 10) + (uint32_t)v;
          if (cp > 0x10FFFF) {
            ok = false;
            break;
          }
        }
        if (!ok)
          return errorAt(amp, "malformed character reference '&" + ref + ";'");
        if (!isXmlChar(cp))
          return errorAt(amp, "character reference '&" + ref +
                                  ";' names a character XML does not allow");
        appendUtf8(out, cp);
      } else {
        return errorAt(amp, "unknown entity '&" + ref +
                                ";' (only &lt; &gt; &amp; &quot; &apos; and "
                                "numeric references are supported)");
      }
      pos = semi + 1;
      continue;
    }
    unsigned char u = (unsigned char)c;
    if (u < 0x20 && !isSpace(c))
      return errorAt(pos, "invalid character " + describeByte(c) +
                              " in attribute value");
    out += isSpace(c) ? ' ' : c;
    ++pos;
  }
}

/// Parses `<name attr="v" ...>` or `.../>` at `pos` (which is at '<').
/// Returns true when the element is self-closing.
Expected<bool> Parser::parseStartTag(XmlElement &el) {
  size_t open = pos;
  el.loc = locAt(open);
  ++pos;
  size_t attributes = 0;
  auto name = parseName("an element name after '<'");
  if (!name)
    return name.error();
  el.name = name.take();
  for (;;) {
    size_t before = pos;
    skipSpace();
    if (atEnd())
      return errorAt(open,
                     "unterminated start tag <" + el.name + "> (missing '>')");
    if (lookingAt("/>")) {
      pos += 2;
      return true;
    }
    if (text[pos] == '>') {
      ++pos;
      return false;
    }
    size_t attrStart = pos;
    if (!isNameStart(text[pos]))
      return errorAt(pos, "expected an attribute name, '>' or '/>' in <" +
                              el.name + ">, found " + describeByte(text[pos]));
    if (pos == before)
      return errorAt(pos, "expected whitespace before attribute in <" +
                              el.name + ">");
    auto key = parseName("an attribute name");
    if (!key)
      return key.error();
    if (eachAttribute(
            el.attributeText,
            [&](std::string_view k, std::string_view) { return k == *key; }))
      return errorAt(attrStart,
                     "duplicate attribute '" + *key + "' in <" + el.name + ">");
    if (++attributes > kMaxXmlAttributes)
      return errorAt(attrStart, "<" + el.name + "> has more than " +
                                    std::to_string(kMaxXmlAttributes) +
                                    " attributes (NCCL reads no more)");
    skipSpace();
    if (atEnd() || text[pos] != '=')
      return errorAt(pos, "expected '=' after attribute name '" + *key + "'");
    ++pos;
    skipSpace();
    std::string value;
    if (Status s = parseAttributeValue(value); !s)
      return s.error();
    el.attributeText += *key;
    el.attributeText += '\0';
    el.attributeText += value;
    el.attributeText += '\0';
  }
}

Status Parser::parseEndTag(const XmlElement &open, size_t openOffset) {
  size_t start = pos;
  pos += 2;
  auto name = parseName("an element name after '</'");
  if (!name)
    return name.error();
  skipSpace();
  if (atEnd() || text[pos] != '>')
    return errorAt(pos, "expected '>' to end the closing tag </" + *name + ">");
  ++pos;
  if (*name != open.name) {
    SourceLoc o = locAt(openOffset);
    return errorAt(start, "mismatched closing tag </" + *name +
                              ">: expected </" + open.name + "> for the <" +
                              open.name + "> opened at line " +
                              std::to_string(o.line) + ", column " +
                              std::to_string(o.col));
  }
  return Status::success();
}

Expected<std::unique_ptr<XmlElement>> Parser::run() {
  if (lookingAt("\xEF\xBB\xBF")) // UTF-8 byte-order mark
    pos = 3;
  if (Status s = skipMisc(); !s)
    return s.error();
  if (atEnd())
    return errorAt(pos, "empty document: expected a root element");
  if (lookingAt("<!DOCTYPE"))
    return errorAt(pos, "document type declarations are not supported");
  if (text[pos] != '<' || pos + 1 >= text.size() || !isNameStart(text[pos + 1]))
    return errorAt(pos, "expected the root element ('<name'), found " +
                            describeByte(text[pos]));

  auto root = std::make_unique<XmlElement>();
  size_t rootStart = pos;
  auto selfClosing = parseStartTag(*root);
  if (!selfClosing)
    return selfClosing.error();
  // Open elements and the offsets of their start tags.
  std::vector<std::pair<XmlElement *, size_t>> open;
  size_t elements = 1; // the root
  if (!*selfClosing)
    open.push_back({root.get(), rootStart});

  while (!open.empty()) {
    size_t lt = text.find('<', pos);
    if (lt == std::string::npos) {
      const auto &[el, off] = open.back();
      return errorAt(off, "element <" + el->name +
                              "> is never closed (reached the end of the "
                              "input)");
    }
    pos = lt; // text content is not kept
    if (lookingAt("<!--")) {
      if (Status s = skipComment(); !s)
        return s.error();
    } else if (lookingAt("<![CDATA[")) {
      if (Status s = skipCData(); !s)
        return s.error();
    } else if (lookingAt("<?")) {
      if (Status s = skipProcessingInstruction(); !s)
        return s.error();
    } else if (lookingAt("</")) {
      if (Status s = parseEndTag(*open.back().first, open.back().second); !s)
        return s.error();
      open.pop_back();
    } else if (lookingAt("<!")) {
      return errorAt(pos, "unsupported markup '<!' (only comments and CDATA "
                          "are allowed inside elements)");
    } else {
      if (open.size() >= kMaxDepth)
        return errorAt(pos, "elements are nested more than " +
                                std::to_string(kMaxDepth) + " levels deep");
      size_t start = pos;
      if (++elements > kMaxXmlElements)
        return errorAt(pos, "more than " + std::to_string(kMaxXmlElements) +
                                " elements (NCCL reads at most 256 in a "
                                "topology dump)");
      auto child = std::make_unique<XmlElement>();
      auto closes = parseStartTag(*child);
      if (!closes)
        return closes.error();
      XmlElement *raw = child.get();
      open.back().first->children.push_back(std::move(child));
      if (!*closes)
        open.push_back({raw, start});
    }
  }

  if (Status s = skipMisc(); !s)
    return s.error();
  if (!atEnd())
    return errorAt(pos, "unexpected content after the root element <" +
                            root->name + "> (a document has one root)");
  return root;
}

} // namespace

Expected<std::unique_ptr<XmlElement>> parseXml(const std::string &file,
                                               const std::string &text) {
  Parser p(file, text);
  return p.run();
}

} // namespace ccsynth
