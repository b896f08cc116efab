//===- MSCCLXml.cpp - MSCCL XML writer and runtime-faithful reader --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The reader mirrors msccl_parser.cc: whitespace between tags is only
// space, '\n' and '\r'; a tag ends at '>' or "/>"; attributes are separated
// by one space and quoted with '"'; comments are skipped; the first element
// must be <algo>. Where the runtime would silently misread a file (a value
// without quotes, a line break inside a tag, more than 16 attributes) the
// reader reports an error instead.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Target/MSCCLXml.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <string_view>

namespace ccsynth::msccl {

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

std::string printXml(const Algo &algo) {
  std::string out;
  out.reserve(1 << 16);
  auto attr = [&](const char *key, const std::string &value) {
    out += ' ';
    out += key;
    out += "=\"";
    out += value;
    out += '"';
  };
  auto num = [](long long v) { return std::to_string(v); };
  out += "<algo";
  attr("name", algo.name);
  attr("proto", algo.proto);
  attr("nchannels", num(algo.nchannels));
  attr("nchunksperloop", num(algo.nchunksperloop));
  attr("ngpus", num(algo.ngpus));
  attr("coll", algo.coll);
  attr("inplace", num(algo.inplace));
  attr("outofplace", num(algo.outofplace));
  attr("minBytes", num(algo.minBytes));
  attr("maxBytes", num(algo.maxBytes));
  out += ">\n";
  for (const Gpu &g : algo.gpus) {
    out += "  <gpu";
    attr("id", num(g.id));
    attr("i_chunks", num(g.iChunks));
    attr("o_chunks", num(g.oChunks));
    attr("s_chunks", num(g.sChunks));
    out += ">\n";
    for (const Threadblock &tb : g.tbs) {
      out += "    <tb";
      attr("id", num(tb.id));
      attr("send", num(tb.send));
      attr("recv", num(tb.recv));
      attr("chan", num(tb.chan));
      out += ">\n";
      for (const Step &st : tb.steps) {
        out += "      <step";
        attr("s", num(st.s));
        attr("type", toString(st.type));
        attr("srcbuf", bufferCode(st.srcBuf));
        attr("srcoff", num(st.srcOff));
        attr("dstbuf", bufferCode(st.dstBuf));
        attr("dstoff", num(st.dstOff));
        attr("cnt", num(st.cnt));
        attr("depid", num(st.depid));
        attr("deps", num(st.deps));
        attr("hasdep", num(st.hasdep));
        out += "/>\n";
      }
      out += "    </tb>\n";
    }
    out += "  </gpu>\n";
  }
  out += "</algo>\n";
  return out;
}

//===----------------------------------------------------------------------===//
// Reader: tokens and elements
//===----------------------------------------------------------------------===//

namespace {

constexpr int kMaxAttrCount = 16; // MAX_ATTR_COUNT

struct Element {
  std::string name;
  /// Names and values as they stand in the text (which outlives the
  /// elements): a step's ten attributes cost a third of its text.
  std::vector<std::pair<std::string_view, std::string_view>> attrs;
  std::vector<std::unique_ptr<Element>> children;
  size_t offset = 0;
};

class Reader {
public:
  Reader(const std::string &file, const std::string &text)
      : file(file), text(text) {
    lineStarts.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n')
        lineStarts.push_back(i + 1);
  }

  Expected<std::unique_ptr<Element>> parseDocument();
  /// line:col of a byte offset, from the line index (every element keeps
  /// one: scanning from the start each time made reading quadratic).
  SourceLoc loc(size_t offset) const {
    offset = std::min(offset, text.size());
    size_t line =
        std::upper_bound(lineStarts.begin(), lineStarts.end(), offset) -
        lineStarts.begin();
    return SourceLoc{file, (int)line, (int)(offset - lineStarts[line - 1]) + 1};
  }

private:
  enum class NodeType { None, Open, Close, Single };
  struct Node {
    NodeType type = NodeType::None;
    std::unique_ptr<Element> elem;
    std::string closeName;
    size_t offset = 0;
  };

  const std::string &file;
  const std::string &text;
  std::vector<size_t> lineStarts;
  size_t pos = 0;

  Error error(size_t offset, const std::string &msg) const {
    return Error(msg, loc(offset));
  }
  static bool isTerminator(char c) {
    return c == ' ' || c == '>' || c == '/' || c == '\n' || c == '\r';
  }
  Expected<Node> nextNode();
  Status loadChildren(Element *head, int depth);
};

Expected<Reader::Node> Reader::nextNode() {
  while (pos < text.size() &&
         (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\r'))
    ++pos;
  Node node;
  node.offset = pos;
  if (pos >= text.size())
    return node;
  if (text[pos] != '<')
    return error(pos, std::string("expected '<' but found '") + text[pos] +
                          "' (the MSCCL parser allows only spaces and line "
                          "breaks between tags)");
  size_t start = pos;
  if (text.compare(pos, 4, "<!--") == 0) {
    size_t end = text.find("-->", pos + 4);
    if (end == std::string::npos)
      return error(start, "unterminated comment");
    pos = end + 3;
    return nextNode();
  }
  if (text.compare(pos, 2, "<?") == 0)
    return error(start, "an XML declaration (<?...?>) makes the MSCCL "
                        "runtime fail to load the file; remove it");
  ++pos;
  // Closing tag.
  if (pos < text.size() && text[pos] == '/') {
    ++pos;
    size_t nameStart = pos;
    while (pos < text.size() && !isTerminator(text[pos]) && text[pos] != '=')
      ++pos;
    if (pos >= text.size() || text[pos] != '>')
      return error(start, "malformed closing tag");
    node.type = NodeType::Close;
    node.closeName = text.substr(nameStart, pos - nameStart);
    ++pos;
    return node;
  }
  auto elem = std::make_unique<Element>();
  elem->offset = start;
  size_t nameStart = pos;
  while (pos < text.size() && !isTerminator(text[pos])) {
    if (text[pos] == '=')
      return error(start, "malformed tag name");
    ++pos;
  }
  if (pos >= text.size())
    return error(start, "unexpected end of file inside a tag");
  elem->name = text.substr(nameStart, pos - nameStart);
  if (elem->name.empty() || elem->name.size() > kMaxAttrLength)
    return error(start, "bad element name");
  // Attributes: each starts after exactly one space.
  while (pos < text.size() && text[pos] == ' ') {
    ++pos;
    size_t keyStart = pos;
    while (pos < text.size() && !isTerminator(text[pos]) && text[pos] != '=')
      ++pos;
    if (pos >= text.size())
      return error(start, "unexpected end of file inside <" + elem->name + ">");
    std::string_view key =
        std::string_view(text).substr(keyStart, pos - keyStart);
    if (text[pos] != '=') {
      if (!key.empty())
        return error(keyStart, "attribute '" + std::string(key) + "' of <" +
                                   elem->name + "> has no value");
      continue; // stray space: the runtime records an empty attribute
    }
    ++pos;
    if (pos >= text.size() || text[pos] != '"')
      return error(pos, "the value of '" + std::string(key) +
                            "' must be in double "
                            "quotes (the MSCCL parser reads nothing else)");
    size_t valueStart = ++pos;
    size_t end = text.find('"', valueStart);
    if (end == std::string::npos)
      return error(valueStart,
                   "unterminated value of '" + std::string(key) + "'");
    std::string_view value =
        std::string_view(text).substr(valueStart, end - valueStart);
    if (key.size() > kMaxAttrLength || value.size() > kMaxAttrLength)
      return error(keyStart, "attribute '" + std::string(key.substr(0, 32)) +
                                 "' is longer than the runtime's 255 "
                                 "characters");
    if (value.find_first_of("\n\r") != std::string::npos)
      return error(valueStart, "a value must not contain line breaks");
    elem->attrs.emplace_back(key, value);
    pos = end + 1;
  }
  if ((int)elem->attrs.size() > kMaxAttrCount)
    return error(start, "<" + elem->name +
                            "> has more than 16 attributes; "
                            "the runtime ignores the rest");
  if (pos >= text.size())
    return error(start, "unexpected end of file inside <" + elem->name + ">");
  if (text[pos] == '/') {
    ++pos;
    if (pos >= text.size() || text[pos] != '>')
      return error(start, "expected '/>' to close <" + elem->name + ">");
    ++pos;
    node.type = NodeType::Single;
    node.elem = std::move(elem);
    return node;
  }
  if (text[pos] != '>')
    return error(pos, std::string("expected '>' in <") + elem->name +
                          "> (a tag must stay on one line with attributes "
                          "separated by single spaces)");
  ++pos;
  node.type = NodeType::Open;
  node.elem = std::move(elem);
  return node;
}

Status Reader::loadChildren(Element *head, int depth) {
  // MSCCL XML nests four levels deep; refuse absurd nesting before it can
  // exhaust the stack.
  if (depth > 16)
    return error(head->offset, "elements are nested too deeply");
  while (true) {
    auto node = nextNode();
    if (!node)
      return node.error();
    switch (node->type) {
    case NodeType::None:
      return error(head->offset, "<" + head->name + "> is never closed");
    case NodeType::Close:
      if (node->closeName != head->name)
        return error(node->offset, "</" + node->closeName +
                                       "> does not close <" + head->name + ">");
      return Status::success();
    case NodeType::Open: {
      Element *child = node->elem.get();
      head->children.push_back(std::move(node->elem));
      if (Status s = loadChildren(child, depth + 1); !s)
        return s;
      break;
    }
    case NodeType::Single:
      head->children.push_back(std::move(node->elem));
      break;
    }
  }
}

Expected<std::unique_ptr<Element>> Reader::parseDocument() {
  auto node = nextNode();
  if (!node)
    return node.error();
  if (node->type == NodeType::None)
    return error(0, "empty file: expected <algo ...>");
  if (node->type == NodeType::Close || node->elem->name != "algo")
    return error(node->offset, "the first element must be <algo> (the "
                               "runtime reads its attributes from the first "
                               "tag)");
  std::unique_ptr<Element> root = std::move(node->elem);
  if (node->type == NodeType::Open)
    if (Status s = loadChildren(root.get(), 1); !s)
      return s.error();
  auto rest = nextNode();
  if (!rest)
    return rest.error();
  if (rest->type != NodeType::None)
    return error(rest->offset, "unexpected content after </algo>");
  return root;
}

//===----------------------------------------------------------------------===//
// Reader: elements to the model
//===----------------------------------------------------------------------===//

class Builder {
public:
  Builder(const Reader &reader, const XmlReadOptions &options,
          std::vector<Error> *notes)
      : reader(reader), options(options), notes(notes) {}

  bool has(const Element &e, const char *key) const {
    for (const auto &[k, v] : e.attrs)
      if (k == key)
        return true;
    return false;
  }
  /// An `<algo>` attribute older msccl-tools did not write: `fallback`,
  /// with a note, when the options allow it.
  Expected<long long> legacy(const Element &e, const char *key,
                             long long fallback, const char *meaning) const {
    if (has(e, key) || !options.legacyAttributes)
      return integer(e, key);
    if (notes)
      notes->push_back(
          Error("<" + e.name + "> has no '" + key +
                    "' attribute (older msccl-tools output); taking " + key +
                    "=\"" + std::to_string(fallback) + "\" (" + meaning +
                    "); the current MSCCL runtime refuses to load a file "
                    "without it",
                reader.loc(e.offset)));
    return fallback;
  }

  Expected<std::string> str(const Element &e, const char *key) const {
    for (const auto &[k, v] : e.attrs)
      if (k == key)
        return std::string(v);
    return Error("<" + e.name + "> has no '" + key +
                     "' attribute (the MSCCL runtime requires it)",
                 reader.loc(e.offset));
  }
  Expected<long long> integer(const Element &e, const char *key) const {
    auto s = str(e, key);
    if (!s)
      return s.error();
    long long v = 0;
    const char *b = s->data(), *end = s->data() + s->size();
    auto [p, ec] = std::from_chars(b, end, v);
    if (s->empty() || ec != std::errc() || p != end ||
        (s->size() > 1 && ((*s)[0] == '0' || (s->compare(0, 2, "-0") == 0))))
      return Error(std::string("'") + key + "' of <" + e.name + "> is '" + *s +
                       "', not a decimal integer",
                   reader.loc(e.offset));
    return v;
  }
  Expected<int> small(const Element &e, const char *key) const {
    auto v = integer(e, key);
    if (!v)
      return v.error();
    if (*v < -(1LL << 30) || *v > (1LL << 30))
      return Error(std::string("'") + key + "' of <" + e.name +
                       "> is out of range",
                   reader.loc(e.offset));
    return (int)*v;
  }
  Expected<BufferKind> buffer(const Element &e, const char *key) const {
    auto s = str(e, key);
    if (!s)
      return s.error();
    if (*s == "i")
      return BufferKind::Input;
    if (*s == "o")
      return BufferKind::Output;
    if (*s == "s")
      return BufferKind::Scratch;
    return Error(std::string("'") + key + "' of <" + e.name + "> is '" + *s +
                     "' (expected i, o or s)",
                 reader.loc(e.offset));
  }
  Error unexpected(const Element &e, const char *parent) const {
    return Error("unexpected <" + e.name + "> in <" + parent + ">",
                 reader.loc(e.offset));
  }

  Expected<Algo> build(const Element &root) const;

private:
  const Reader &reader;
  const XmlReadOptions &options;
  std::vector<Error> *notes;
};

#define CCSYNTH_TRY(var, expr)                                                 \
  auto var = (expr);                                                           \
  if (!var)                                                                    \
    return var.error();

Expected<Algo> Builder::build(const Element &root) const {
  Algo algo;
  algo.loc = reader.loc(root.offset);
  CCSYNTH_TRY(name, str(root, "name"));
  CCSYNTH_TRY(proto, str(root, "proto"));
  CCSYNTH_TRY(nchannels, small(root, "nchannels"));
  CCSYNTH_TRY(nchunks, small(root, "nchunksperloop"));
  CCSYNTH_TRY(ngpus, small(root, "ngpus"));
  CCSYNTH_TRY(coll, str(root, "coll"));
  CCSYNTH_TRY(inplace, small(root, "inplace"));
  CCSYNTH_TRY(outofplace, legacy(root, "outofplace", *inplace == 1 ? 0 : 1,
                                 "the variant that inplace does not name"));
  if (*outofplace < -(1LL << 30) || *outofplace > (1LL << 30))
    return Error("'outofplace' of <algo> is out of range",
                 reader.loc(root.offset));
  CCSYNTH_TRY(minBytes, legacy(root, "minBytes", 0, "from any size"));
  CCSYNTH_TRY(maxBytes, legacy(root, "maxBytes", 0, "no upper bound"));
  algo.name = *name;
  algo.proto = *proto;
  algo.nchannels = *nchannels;
  algo.nchunksperloop = *nchunks;
  algo.ngpus = *ngpus;
  algo.coll = *coll;
  algo.inplace = *inplace;
  algo.outofplace = (int)*outofplace;
  algo.minBytes = *minBytes;
  algo.maxBytes = *maxBytes;
  for (const auto &ge : root.children) {
    if (ge->name != "gpu")
      return unexpected(*ge, "algo");
    Gpu g;
    g.loc = reader.loc(ge->offset);
    CCSYNTH_TRY(id, small(*ge, "id"));
    CCSYNTH_TRY(ic, small(*ge, "i_chunks"));
    CCSYNTH_TRY(oc, small(*ge, "o_chunks"));
    CCSYNTH_TRY(sc, small(*ge, "s_chunks"));
    g.id = *id;
    g.iChunks = *ic;
    g.oChunks = *oc;
    g.sChunks = *sc;
    for (const auto &te : ge->children) {
      if (te->name != "tb")
        return unexpected(*te, "gpu");
      Threadblock tb;
      tb.loc = reader.loc(te->offset);
      CCSYNTH_TRY(tid, small(*te, "id"));
      CCSYNTH_TRY(send, small(*te, "send"));
      CCSYNTH_TRY(recv, small(*te, "recv"));
      CCSYNTH_TRY(chan, small(*te, "chan"));
      tb.id = *tid;
      tb.send = *send;
      tb.recv = *recv;
      tb.chan = *chan;
      for (const auto &se : te->children) {
        if (se->name != "step")
          return unexpected(*se, "tb");
        Step st;
        st.loc = reader.loc(se->offset);
        CCSYNTH_TRY(s, small(*se, "s"));
        CCSYNTH_TRY(type, str(*se, "type"));
        CCSYNTH_TRY(srcbuf, buffer(*se, "srcbuf"));
        CCSYNTH_TRY(srcoff, small(*se, "srcoff"));
        CCSYNTH_TRY(dstbuf, buffer(*se, "dstbuf"));
        CCSYNTH_TRY(dstoff, small(*se, "dstoff"));
        CCSYNTH_TRY(cnt, small(*se, "cnt"));
        CCSYNTH_TRY(depid, small(*se, "depid"));
        CCSYNTH_TRY(deps, small(*se, "deps"));
        CCSYNTH_TRY(hasdep, small(*se, "hasdep"));
        auto t = parseStepType(*type);
        if (!t)
          return Error("unknown step type '" + *type +
                           "' (expected s, r, rcs, rrs, rrc, rrcs, cpy, re "
                           "or nop)",
                       st.loc);
        st.s = *s;
        st.type = *t;
        st.srcBuf = *srcbuf;
        st.srcOff = *srcoff;
        st.dstBuf = *dstbuf;
        st.dstOff = *dstoff;
        st.cnt = *cnt;
        st.depid = *depid;
        st.deps = *deps;
        st.hasdep = *hasdep;
        if (!se->children.empty())
          return unexpected(*se->children.front(), "step");
        tb.steps.push_back(st);
      }
      g.tbs.push_back(std::move(tb));
    }
    algo.gpus.push_back(std::move(g));
  }
  return algo;
}

#undef CCSYNTH_TRY

} // namespace

Expected<Algo> parseXml(const std::string &file, const std::string &text,
                        const XmlReadOptions &options,
                        std::vector<Error> *notes) {
  Reader reader(file, text);
  auto root = reader.parseDocument();
  if (!root)
    return root.error();
  return Builder(reader, options, notes).build(**root);
}

std::vector<ProgramIssue> validateXml(const std::string &file,
                                      const std::string &text) {
  auto algo = parseXml(file, text);
  if (!algo)
    return {{algo.error().message, {}, algo.error().loc}};
  return validateAlgo(*algo);
}

} // namespace ccsynth::msccl
