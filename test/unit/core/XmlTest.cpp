// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the located XML reader: well-formed documents, located
// errors for malformed ones, and a seeded mutation sweep.
#include "ccsynth/Support/Xml.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

using namespace ccsynth;

namespace {

/// A document that uses every construct the reader supports.
const char *kSample = R"(<?xml version="1.0" encoding="UTF-8"?>
<!-- an MSCCL-style algorithm -->
<algo name='ring &amp; tree' proto="Simple" ngpus="2">
  <gpu id="0" i_chunks="2">
    <tb id="0" send="1" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="i" cnt="1"/>
    </tb>
    text is skipped <![CDATA[ <not> & markup ]]>
  </gpu>
  <gpu id="1" note="a&lt;b&gt;c &quot;q&quot; &apos;x&apos; &#65;&#x42;&#x20AC;"/>
  <!-- trailing comment inside -->
</algo>
<!-- after the root -->
)";

Error parseError(const std::string &text) {
  auto r = parseXml("t.xml", text);
  REQUIRE_FALSE(r.ok());
  return r.error();
}

} // namespace

TEST_CASE("xml reader reads elements, attributes and nesting", "[xml]") {
  auto doc = parseXml("s.xml", kSample);
  REQUIRE(doc.ok());
  const XmlElement &algo = **doc;
  CHECK(algo.name == "algo");
  CHECK(algo.attr("name") == "ring & tree");
  CHECK(algo.attr("proto") == "Simple");
  CHECK_FALSE(algo.attr("missing").has_value());
  CHECK(algo.loc.file == "s.xml");
  CHECK(algo.loc.line == 3);
  CHECK(algo.loc.col == 1);
  REQUIRE(algo.children.size() == 2);
  auto gpus = algo.childrenNamed("gpu");
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[0]->attr("i_chunks") == "2");
  CHECK(gpus[0]->loc.line == 4);
  CHECK(gpus[0]->loc.col == 3);
  auto tbs = gpus[0]->childrenNamed("tb");
  REQUIRE(tbs.size() == 1);
  REQUIRE(tbs[0]->children.size() == 1);
  const XmlElement &step = *tbs[0]->children[0];
  CHECK(step.name == "step");
  CHECK(step.children.empty());
  CHECK(step.attributeCount() == 4);
  // In the order of the text: the second is "type".
  size_t second =
      step.attributeText.find('\0', step.attributeText.find('\0') + 1);
  CHECK(step.attributeText.compare(second + 1, 5, std::string("type\0", 5)) ==
        0);
  CHECK(step.loc.line == 6);
  // Entities and character references, including a 3-byte UTF-8 one.
  CHECK(gpus[1]->attr("note") == "a<b>c \"q\" 'x' AB\xE2\x82\xAC");
  CHECK(gpus[1]->children.empty());
  CHECK(algo.childrenNamed("tb").empty());
}

TEST_CASE("xml reader accepts minimal and unusual but valid documents",
          "[xml]") {
  auto one = parseXml("a.xml", "<a/>");
  REQUIRE(one.ok());
  CHECK((*one)->name == "a");
  auto spaced = parseXml(
      "b.xml", "\xEF\xBB\xBF  <x:y-z.w  k = 'v'\n\tk2=\"\"  ></x:y-z.w >\n");
  REQUIRE(spaced.ok());
  CHECK((*spaced)->name == "x:y-z.w");
  CHECK((*spaced)->attr("k") == "v");
  CHECK((*spaced)->attr("k2") == "");
  // Literal whitespace in a value is normalized; a reference keeps it.
  auto ws = parseXml("c.xml", "<a v=\"x\ty\nz&#10;\"/>");
  REQUIRE(ws.ok());
  CHECK((*ws)->attr("v") == "x y z\n");
}

TEST_CASE("xml reader locates malformed input", "[xml]") {
  struct Case {
    const char *text;
    int line, col;
    const char *message;
  };
  const Case cases[] = {
      {"", 1, 1, "empty document"},
      {"  \n <!-- only a comment -->\n", 3, 1, "empty document"},
      {"<a>\n  <b>\n</a>", 3, 1, "mismatched closing tag </a>: expected </b>"},
      {"<a>\n  <b>\n", 2, 3, "element <b> is never closed"},
      {"<a x=1/>", 1, 6, "attribute values must be quoted"},
      {"<a x='1' x=\"2\"/>", 1, 10, "duplicate attribute 'x'"},
      {"<a x='1'y='2'/>", 1, 9, "expected whitespace before attribute"},
      {"<a x '1'/>", 1, 6, "expected '=' after attribute name 'x'"},
      {"<a x='1/>", 1, 6, "unterminated attribute value"},
      {"<a x='<'/>", 1, 7, "'<' is not allowed"},
      {"<a x='&bogus;'/>", 1, 7, "unknown entity '&bogus;'"},
      {"<a x='a & b'/>", 1, 9, "'&' must start an entity reference"},
      {"<a x='&#xZZ;'/>", 1, 7, "malformed character reference"},
      {"<a x='&#0;'/>", 1, 7, "names a character XML does not allow"},
      {"<a x='&#x110000;'/>", 1, 7, "malformed character reference"},
      {"<a/>\n<b/>", 2, 1, "unexpected content after the root element <a>"},
      {"<a/> trailing", 1, 6, "unexpected content after the root element"},
      {"<a></b>", 1, 4, "mismatched closing tag"},
      {"<a><!-- never ends", 1, 4, "unterminated comment"},
      {"<?xml version='1.0'", 1, 1, "unterminated processing instruction"},
      {"<a><![CDATA[ x", 1, 4, "unterminated CDATA"},
      {"<!DOCTYPE a><a/>", 1, 1, "document type declarations"},
      {"hello", 1, 1, "expected the root element"},
      {"<1a/>", 1, 1, "expected the root element"},
      {"<a><1/></a>", 1, 5, "expected an element name"},
      {"<a", 1, 1, "unterminated start tag <a>"},
      {"<a b='c'", 1, 1, "unterminated start tag <a>"},
      {"<a></a", 1, 7, "expected '>' to end the closing tag"},
      {"<a x='\x01'/>", 1, 7, "invalid character byte 0x01"},
      {"<a><!ELEMENT a></a>", 1, 4, "unsupported markup"},
  };
  for (const Case &c : cases) {
    INFO("input: " << c.text);
    Error e = parseError(c.text);
    CHECK(e.message.find(c.message) != std::string::npos);
    CHECK(e.loc.file == "t.xml");
    CHECK(e.loc.line == c.line);
    CHECK(e.loc.col == c.col);
    // The caret line points under the reported column.
    CHECK(e.notes.find('^') != std::string::npos);
    CHECK(e.format().rfind("t.xml:" + std::to_string(c.line) + ":" +
                               std::to_string(c.col) + ": error: ",
                           0) == 0);
  }
}

TEST_CASE("xml reader bounds nesting depth", "[xml]") {
  std::string ok, deep;
  for (int i = 0; i < 200; ++i)
    ok += "<e>";
  for (int i = 0; i < 200; ++i)
    ok += "</e>";
  REQUIRE(parseXml("ok.xml", ok).ok());
  for (int i = 0; i < 100000; ++i)
    deep += "<e>";
  Error e = parseError(deep);
  CHECK(e.message.find("nested more than") != std::string::npos);
  CHECK(e.loc.line == 1);
}

TEST_CASE("xml reader bounds attributes and elements as NCCL does", "[xml]") {
  std::string attrs = "<gpu";
  for (int i = 0; i < 17; ++i)
    attrs += " a" + std::to_string(i) + "=\"1\"";
  auto wide = parseXml("t.xml", attrs + "/>");
  REQUIRE_FALSE(wide);
  CHECK(wide.error().message == "<gpu> has more than 16 attributes (NCCL "
                                "reads no more)");
  CHECK(wide.error().loc.col == 124); // at the 17th, a16
  std::string many = "<system>";
  for (size_t i = 0; i < kMaxXmlElements; ++i)
    many += "<c/>";
  auto fits = parseXml("t.xml", many + "</system>");
  REQUIRE_FALSE(fits);
  CHECK(fits.error().message.find("more than 65536 elements") !=
        std::string::npos);
  many.resize(many.size() - 4);
  CHECK(parseXml("t.xml", many + "</system>"));
}

TEST_CASE("xml reader survives seeded random mutations", "[xml][mutation]") {
  const std::string base = kSample;
  std::string interesting = "<>/=\"'&;#!?-[]x \n\t";
  interesting += '\0';
  std::mt19937 rng(20240611);
  auto pick = [&](size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  };
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string text = base;
    int edits = 1 + (int)pick(4);
    for (int k = 0; k < edits; ++k) {
      char byte =
          pick(2) ? interesting[pick(interesting.size())] : (char)pick(256);
      switch (pick(5)) {
      case 0: // overwrite a byte
        if (!text.empty())
          text[pick(text.size())] = byte;
        break;
      case 1: // insert a byte
        text.insert(text.begin() + pick(text.size() + 1), byte);
        break;
      case 2: { // delete a short range
        size_t at = pick(text.size() + 1);
        text.erase(at, std::min<size_t>(1 + pick(8), text.size() - at));
        break;
      }
      case 3: // truncate
        text.resize(pick(text.size() + 1));
        break;
      default: { // duplicate a slice somewhere else
        size_t at = pick(text.size() + 1);
        std::string slice = text.substr(at, 1 + pick(40));
        text.insert(pick(text.size() + 1), slice);
        break;
      }
      }
    }
    auto r = parseXml("mut.xml", text);
    if (r.ok()) {
      ++accepted;
      CHECK_FALSE((*r)->name.empty());
      continue;
    }
    ++rejected;
    const Error &e = r.error();
    int lines = 1 + (int)std::count(text.begin(), text.end(), '\n');
    INFO("mutation " << iter << ": " << e.format());
    CHECK_FALSE(e.message.empty());
    CHECK(e.loc.file == "mut.xml");
    CHECK(e.loc.line >= 1);
    CHECK(e.loc.line <= lines);
    CHECK(e.loc.col >= 1);
    CHECK(e.notes.find('^') != std::string::npos);
  }
  // Both outcomes must occur, or the sweep exercises nothing.
  CHECK(accepted > 100);
  CHECK(rejected > 1000);
}
