//===- Json.cpp - Located JSON parsing and typed field access -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements Json.h. Before nlohmann::json parses a document, the text is
// checked for nesting too deep; the document is then built from nlohmann's
// SAX events, refusing a duplicate key (which the library would accept
// silently) as soon as it is read. PointerLocator maps a JSON pointer back to
// the offset of its value in the text, so JsonDocument::locate and
// JsonDocument::error give line:col. JsonReader reads typed fields
// (integer, number, string, boolean, array, object, onlyKeys) and names the
// expected type in its errors. See docs/formats.md.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Support/Json.h"

#include <algorithm>

#include <cctype>
#include <climits>
#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace ccsynth {

namespace {

/// The deepest nesting of objects and arrays the readers accept: real files
/// nest a handful of levels; the cap keeps every walk over the text shallow.
constexpr int kMaxJsonDepth = 256;

/// Skips the string literal starting at s[p] == '"'; returns the offset after
/// its closing quote (or s.size() when unterminated).
size_t skipString(const std::string &s, size_t p) {
  for (++p; p < s.size(); ++p) {
    if (s[p] == '\\')
      ++p;
    else if (s[p] == '"')
      return p + 1;
  }
  return s.size();
}

/// Walks well-formed JSON text (already accepted by nlohmann) to find the
/// byte offset of the value a JSON pointer addresses. What it learns about
/// a container (the offsets of its elements, the offsets of its members by
/// key, in the order of the text) is kept in the document's index and
/// extended only as far as a lookup needs, so that locating every element
/// of an array, or every member of an object, costs one pass over it, not
/// one pass per lookup.
class PointerLocator {
public:
  PointerLocator(const std::string &text, JsonLocateIndex &index)
      : s(text), index(index) {}

  /// Offset of the deepest value on the pointer's path that exists.
  size_t find(const std::vector<std::string> &tokens) {
    size_t pos = skipWs(0);
    for (const std::string &tok : tokens) {
      if (pos >= s.size())
        return pos;
      if (s[pos] == '{') {
        size_t next = findMember(pos, tok);
        if (next == npos)
          return pos;
        pos = next;
      } else if (s[pos] == '[') {
        size_t idx = 0;
        if (tok.empty() || tok.size() > 18)
          return pos;
        for (char c : tok) {
          if (c < '0' || c > '9')
            return pos;
          idx = idx * 10 + size_t(c - '0');
        }
        size_t next = findElement(pos, idx);
        if (next == npos)
          return pos;
        pos = next;
      } else {
        return pos;
      }
    }
    return pos;
  }

  /// The first key of the object at offset `p`, in the order of the text,
  /// for which `pred` holds: the members are read up to it, and not kept.
  std::optional<std::string>
  firstKey(size_t p, const std::function<bool(const std::string &)> &pred) {
    p = skipWs(p + 1);
    while (p < s.size() && s[p] == '"') {
      std::string name;
      p = readString(p, name);
      if (pred(name))
        return name;
      p = skipWs(skipValue(skipWs(skipWs(p) + 1)));
      if (p >= s.size() || s[p] != ',')
        break;
      p = skipWs(p + 1);
    }
    return std::nullopt;
  }

  static constexpr size_t npos = std::string::npos;

private:
  const std::string &s;
  JsonLocateIndex &index;
  using Container = JsonLocateIndex::Container;

  size_t skipWs(size_t p) const {
    while (p < s.size() &&
           (s[p] == ' ' || s[p] == '\n' || s[p] == '\r' || s[p] == '\t'))
      ++p;
    return p;
  }
  /// p at '"'; returns the offset after the closing quote, decoding into out
  /// (escapes other than \" and \\ are kept raw: keys rarely use them).
  size_t readString(size_t p, std::string &out) const {
    ++p;
    while (p < s.size() && s[p] != '"') {
      if (s[p] == '\\' && p + 1 < s.size()) {
        out += s[p + 1];
        p += 2;
      } else {
        out += s[p++];
      }
    }
    return p + 1;
  }
  /// The offset after the value at p, by bracket counting (strings
  /// skipped): no recursion, one pass.
  size_t skipValue(size_t p) const {
    p = skipWs(p);
    if (p >= s.size())
      return p;
    char c = s[p];
    if (c == '"')
      return skipString(s, p);
    if (c == '{' || c == '[') {
      int depth = 0;
      while (p < s.size()) {
        char d = s[p];
        if (d == '"') {
          p = skipString(s, p);
          continue;
        }
        if (d == '{' || d == '[')
          ++depth;
        else if ((d == '}' || d == ']') && --depth == 0)
          return p + 1;
        ++p;
      }
      return p;
    }
    while (p < s.size() && s[p] != ',' && s[p] != '}' && s[p] != ']' &&
           s[p] != ' ' && s[p] != '\n' && s[p] != '\r' && s[p] != '\t')
      ++p;
    return p;
  }
  Container &container(size_t p) {
    auto [it, fresh] = index.containers.try_emplace(p);
    Container &c = it->second;
    if (fresh) {
      c.object = s[p] == '{';
      c.next = skipWs(p + 1);
      c.complete = c.next >= s.size() || s[c.next] == (c.object ? '}' : ']');
    }
    return c;
  }
  /// Reads one more element or member of `c`.
  void extend(Container &c) {
    size_t p = c.next;
    if (c.object) {
      std::string name;
      p = readString(skipWs(p), name);
      p = skipWs(skipWs(p) + 1);    // ':'
      c.byKey.try_emplace(name, p); // the first of duplicate keys
      c.keys.emplace_back(std::move(name), p);
    } else {
      c.elements.push_back(p);
    }
    p = skipWs(skipValue(p));
    if (p < s.size() && s[p] == ',') {
      c.next = skipWs(p + 1);
    } else {
      c.complete = true;
    }
  }
  size_t findMember(size_t p, const std::string &key) {
    Container &c = container(p);
    if (auto it = c.byKey.find(key); it != c.byKey.end())
      return it->second;
    while (!c.complete) {
      extend(c);
      if (c.keys.back().first == key)
        return c.keys.back().second;
    }
    return npos;
  }
  size_t findElement(size_t p, size_t i) {
    Container &c = container(p);
    while (c.elements.size() <= i && !c.complete)
      extend(c);
    return i < c.elements.size() ? c.elements[i] : npos;
  }
};

std::vector<std::string> splitPointer(const std::string &ptr) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < ptr.size()) {
    if (ptr[i] != '/')
      break;
    size_t next = ptr.find('/', i + 1);
    std::string tok = ptr.substr(
        i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
    std::string dec;
    for (size_t k = 0; k < tok.size(); ++k) {
      if (tok[k] == '~' && k + 1 < tok.size()) {
        dec += tok[k + 1] == '1' ? '/' : '~';
        ++k;
      } else {
        dec += tok[k];
      }
    }
    tokens.push_back(dec);
    i = next == std::string::npos ? ptr.size() : next;
  }
  return tokens;
}

/// Before parsing: the offset of the first bracket that nests deeper than
/// kMaxJsonDepth, or npos. Works on any text (strings are skipped).
size_t tooDeep(const std::string &s) {
  int depth = 0;
  for (size_t p = 0; p < s.size();) {
    char c = s[p];
    if (c == '"') {
      p = skipString(s, p);
      continue;
    }
    if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth)
        return p;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
    ++p;
  }
  return std::string::npos;
}

/// When a key repeats one of its object: the offset of the first such key
/// in the text, and of the key it repeats, or npos.
size_t duplicateKey(const std::string &s, std::string &key, size_t &first) {
  struct Frame {
    bool object;
    bool expectKey;
    std::map<std::string, size_t> keys;
  };
  std::vector<Frame> stack;
  for (size_t p = 0; p < s.size();) {
    char c = s[p];
    if (c == '"') {
      size_t end = skipString(s, p);
      if (!stack.empty() && stack.back().object && stack.back().expectKey) {
        std::string raw = s.substr(p, end - p);
        std::string name = raw.substr(1, raw.size() - 2);
        if (raw.find('\\') != std::string::npos) {
          Json decoded = Json::parse(raw, nullptr, false);
          if (decoded.is_string())
            name = decoded.get<std::string>();
        }
        auto [it, fresh] = stack.back().keys.emplace(name, p);
        if (!fresh) {
          key = name;
          first = it->second;
          return p;
        }
        stack.back().expectKey = false;
      }
      p = end;
      continue;
    }
    if (c == '{' || c == '[')
      stack.push_back({c == '{', c == '{', {}});
    else if ((c == '}' || c == ']') && !stack.empty())
      stack.pop_back();
    else if (c == ',' && !stack.empty() && stack.back().object)
      stack.back().expectKey = true;
    ++p;
  }
  return std::string::npos;
}

/// Builds the document from nlohmann's SAX events as its own DOM parser
/// does, with two differences: a key that repeats one of the same object is
/// refused as soon as it is read (nlohmann would keep the last silently), so
/// no set of the keys is kept beside the document; and reading stops when
/// `stop` says so (it is asked every few thousand values).
class DomBuilder {
public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  DomBuilder(Json &root, const JsonStop &stop) : root(root), stop(stop) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(number_integer_t v) { return put(v); }
  bool number_unsigned(number_unsigned_t v) { return put(v); }
  bool number_float(number_float_t v, const string_t &) { return put(v); }
  bool string(string_t &v) { return put(std::move(v)); }
  bool binary(binary_t &v) { return put(Json::binary(std::move(v))); }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() {
    stack.pop_back();
    return true;
  }
  bool end_array() {
    stack.pop_back();
    return true;
  }
  bool key(string_t &name) {
    auto &members = stack.back()->get_ref<Json::object_t &>();
    auto [it, fresh] = members.try_emplace(std::move(name));
    if (!fresh) {
      duplicate = true;
      return false;
    }
    slot = &it->second;
    return true;
  }
  bool parse_error(std::size_t position, const std::string &token,
                   const nlohmann::detail::exception &e) {
    failed = true;
    failPosition = position;
    failToken = token;
    failId = e.id;
    failWhat = e.what();
    return false;
  }

  bool duplicate = false;
  bool stopped = false;
  bool failed = false;
  std::size_t failPosition = 0;
  std::string failToken;
  int failId = 0;
  std::string failWhat;

private:
  Json &root;
  const JsonStop &stop;
  std::vector<Json *> stack;
  Json *slot = nullptr; ///< where the value after a key goes
  std::size_t values = 0;

  /// Places a value where the text has it; returns where it went.
  template <typename V> Json *place(V &&v) {
    if (stack.empty()) {
      root = Json(std::forward<V>(v));
      return &root;
    }
    Json &top = *stack.back();
    if (top.is_array()) {
      top.get_ref<Json::array_t &>().emplace_back(std::forward<V>(v));
      return &top.get_ref<Json::array_t &>().back();
    }
    *slot = Json(std::forward<V>(v));
    return slot;
  }
  bool keepGoing() {
    if (stop.stopped && ++values % 4096 == 0 && stop.stopped()) {
      stopped = true;
      return false;
    }
    return true;
  }
  template <typename V> bool put(V &&v) {
    place(std::forward<V>(v));
    return keepGoing();
  }
  bool open(Json empty) {
    stack.push_back(place(std::move(empty)));
    return keepGoing();
  }
};

std::string typeName(const Json &v) {
  if (v.is_null())
    return "null";
  if (v.is_boolean())
    return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned())
    return "an integer";
  if (v.is_number())
    return "a number";
  if (v.is_string())
    return "a string";
  if (v.is_array())
    return "an array";
  return "an object";
}

std::string fieldName(const std::string &ptr) {
  return ptr.empty() ? std::string("document") : "'" + ptr + "'";
}

} // namespace

Expected<JsonDocument> JsonDocument::parse(std::string file, std::string text,
                                           const JsonStop &stop) {
  JsonDocument d;
  d.fileName = std::move(file);
  d.source = std::move(text);
  if (size_t deep = tooDeep(d.source); deep != std::string::npos) {
    SourceLoc loc = locationOf(d.fileName, d.source, deep);
    return Error("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                     " levels",
                 loc, caretLine(d.source, loc));
  }
  DomBuilder builder(d.doc, stop);
  if (Json::sax_parse(d.source, &builder,
                      nlohmann::detail::input_format_t::json,
                      /*strict=*/true, /*ignore_comments=*/false))
    return d;
  d.doc = Json(); // what was read is not needed to say what went wrong
  if (builder.stopped)
    return Error(stop.why, SourceLoc{d.fileName});
  if (builder.duplicate) {
    std::string key;
    size_t first = 0;
    if (size_t dup = duplicateKey(d.source, key, first);
        dup != std::string::npos) {
      SourceLoc loc = locationOf(d.fileName, d.source, dup);
      SourceLoc was = locationOf(d.fileName, d.source, first);
      return Error("duplicate key '" + key + "' (first given at line " +
                       std::to_string(was.line) + ", column " +
                       std::to_string(was.col) + ")",
                   loc, caretLine(d.source, loc));
    }
    return Error("duplicate key", SourceLoc{d.fileName});
  }
  if (!builder.failed)
    return Error("malformed JSON", SourceLoc{d.fileName});
  const std::string &what = builder.failWhat;
  if (builder.failId == 406) {
    // "number overflow parsing '1e999'": the number ends where reading
    // stopped.
    size_t colon = what.find("] ");
    std::string detail =
        colon == std::string::npos ? what : what.substr(colon + 2);
    const std::string &token = builder.failToken;
    size_t at = builder.failPosition >= token.size()
                    ? builder.failPosition - token.size()
                    : std::string::npos;
    if (at == std::string::npos || d.source.compare(at, token.size(), token))
      at = token.empty() ? std::string::npos : d.source.find(token);
    if (at == std::string::npos)
      return Error("malformed JSON: " + detail, SourceLoc{d.fileName});
    SourceLoc loc = locationOf(d.fileName, d.source, at);
    return Error("malformed JSON: " + detail, loc, caretLine(d.source, loc));
  }
  // nlohmann reports the last character it read; point at the start of the
  // offending token instead.
  size_t byte = builder.failPosition > 0 ? builder.failPosition - 1 : 0;
  if (byte < d.source.size() && d.source[byte] == '"') {
    size_t open = byte;
    while (open > 0) {
      --open;
      if (d.source[open] == '"' && (open == 0 || d.source[open - 1] != '\\'))
        break;
    }
    byte = open;
  } else {
    auto word = [](char c) {
      return std::isalnum((unsigned char)c) || c == '.' || c == '-' || c == '+';
    };
    while (byte > 0 && byte < d.source.size() && word(d.source[byte]) &&
           word(d.source[byte - 1]))
      --byte;
  }
  // nlohmann's text: "[json.exception.parse_error.101] parse error at line
  // 3, column 5: syntax error while parsing ... - <detail>"
  size_t colon = what.find(": ", what.find("parse error"));
  std::string detail =
      colon == std::string::npos ? what : what.substr(colon + 2);
  SourceLoc loc = locationOf(d.fileName, d.source, byte);
  return Error("malformed JSON: " + detail, loc, caretLine(d.source, loc));
}

Expected<JsonDocument> JsonDocument::load(const std::string &path) {
  auto text = readFile(path);
  if (!text)
    return text.error();
  return parse(path, text.take());
}

JsonDocument JsonDocument::forLocating(std::string file, std::string text) {
  JsonDocument d;
  d.fileName = std::move(file);
  d.source = std::move(text);
  return d;
}

std::optional<JsonDocument>
JsonDocument::loadForLocating(const std::string &path, size_t maxBytes) {
  auto text = readFile(path, maxBytes);
  if (!text)
    return std::nullopt;
  dropByteOrderMark(*text);
  size_t first = text->find_first_not_of(" \t\r\n");
  if (first == std::string::npos || (*text)[first] != '{')
    return std::nullopt;
  return forLocating(path, text.take());
}

SourceLoc JsonDocument::locate(const std::string &pointer) const {
  std::lock_guard<std::mutex> lock(index->mutex);
  PointerLocator locator(source, *index);
  return locationAt(locator.find(splitPointer(pointer)));
}

SourceLoc JsonDocument::locationAt(size_t offset) const {
  // Line starts are found once; a location is then a binary search.
  std::vector<size_t> &starts = index->lineStarts;
  if (starts.empty()) {
    starts.push_back(0);
    for (size_t i = 0; i < source.size(); ++i)
      if (source[i] == '\n')
        starts.push_back(i + 1);
  }
  if (offset > source.size())
    offset = source.size();
  size_t line = size_t(std::upper_bound(starts.begin(), starts.end(), offset) -
                       starts.begin());
  return SourceLoc{fileName, int(line), int(offset - starts[line - 1] + 1)};
}

std::optional<std::string> JsonDocument::firstKeyInTextOrder(
    const std::string &pointer,
    const std::function<bool(const std::string &)> &pred) const {
  std::lock_guard<std::mutex> lock(index->mutex);
  PointerLocator locator(source, *index);
  size_t off = locator.find(splitPointer(pointer));
  if (off >= source.size() || source[off] != '{')
    return std::nullopt;
  return locator.firstKey(off, pred);
}

Error JsonDocument::error(const std::string &pointer,
                          const std::string &message) const {
  SourceLoc loc = locate(pointer);
  return Error(message, loc, caretLine(source, loc));
}

const Json &JsonReader::at(const std::string &ptr) const {
  return doc.root().at(Json::json_pointer(ptr));
}

bool JsonReader::has(const std::string &objPtr, const std::string &key) const {
  const Json &o = at(objPtr);
  return o.is_object() && o.contains(key);
}

Expected<long long> JsonReader::integer(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  const Json &v = doc.root().at(jp);
  // Range-check before narrowing: every integer field is an int.
  if (v.is_number_unsigned()) {
    if (v.get<unsigned long long>() > (unsigned long long)INT_MAX)
      return error(ptr, fieldName(ptr) + " is out of range (" +
                            std::to_string(v.get<unsigned long long>()) +
                            "; at most " + std::to_string(INT_MAX) + ")");
    return v.get<long long>();
  }
  if (v.is_number_integer()) {
    long long x = v.get<long long>();
    if (x < INT_MIN || x > INT_MAX)
      return error(ptr, fieldName(ptr) + " is out of range (" +
                            std::to_string(x) + "; must be within " +
                            std::to_string(INT_MIN) + ".." +
                            std::to_string(INT_MAX) + ")");
    return x;
  }
  return error(ptr,
               fieldName(ptr) + " must be an integer, found " + typeName(v));
}

Expected<double> JsonReader::number(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  const Json &v = doc.root().at(jp);
  if (v.is_number())
    return v.get<double>();
  return error(ptr, fieldName(ptr) + " must be a number, found " + typeName(v));
}

Expected<std::string> JsonReader::string(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  const Json &v = doc.root().at(jp);
  if (v.is_string())
    return v.get<std::string>();
  return error(ptr, fieldName(ptr) + " must be a string, found " + typeName(v));
}

Expected<bool> JsonReader::boolean(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  const Json &v = doc.root().at(jp);
  if (v.is_boolean())
    return v.get<bool>();
  return error(ptr,
               fieldName(ptr) + " must be a boolean, found " + typeName(v));
}

Status JsonReader::array(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  if (!doc.root().at(jp).is_array())
    return error(ptr, fieldName(ptr) + " must be an array, found " +
                          typeName(doc.root().at(jp)));
  return Status::success();
}

Status JsonReader::object(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  if (!doc.root().at(jp).is_object())
    return error(ptr, fieldName(ptr) + " must be an object, found " +
                          typeName(doc.root().at(jp)));
  return Status::success();
}

Status JsonReader::onlyKeys(const std::string &ptr,
                            std::initializer_list<const char *> allowed) const {
  const Json &o = at(ptr);
  if (!o.is_object())
    return Status::success();
  auto known = [&](const std::string &key) {
    for (const char *a : allowed)
      if (key == a)
        return true;
    return false;
  };
  bool anyUnknown = false;
  for (auto it = o.begin(); it != o.end() && !anyUnknown; ++it)
    anyUnknown = !known(it.key());
  if (!anyUnknown)
    return Status::success();
  // nlohmann orders keys alphabetically; report the first unknown key in
  // the file instead, read from the object's text up to that key.
  std::string unknown =
      doc.firstKeyInTextOrder(
             ptr, [&](const std::string &key) { return !known(key); })
          .value_or(std::string());
  std::string valid;
  for (const char *a : allowed)
    valid += std::string(valid.empty() ? "" : ", ") + a;
  return error(jsonPath(ptr, unknown), "unknown field '" + unknown +
                                           "' (expected one of: " + valid +
                                           ")");
}

std::string jsonPath(const std::string &parent, const std::string &key) {
  std::string esc;
  for (char c : key) {
    if (c == '~')
      esc += "~0";
    else if (c == '/')
      esc += "~1";
    else
      esc += c;
  }
  return parent + "/" + esc;
}

std::string jsonPath(const std::string &parent, size_t index) {
  return parent + "/" + std::to_string(index);
}

} // namespace ccsynth
